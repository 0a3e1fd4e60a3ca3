// Tensor metadata accessors, item(), whole-tensor comparisons, threads.
#include <omp.h>

#include "src/core/Check.h"
#include "src/core/DtypeVisit.h"
#include "tensor/ops.h"

namespace tensor {

void Tensor::throw_undefined() {
  TENSOR_ERROR("this Tensor is undefined (default-constructed, reset, or an unset .grad()); check defined() first");
}

int64_t Tensor::size(int64_t d) const { return sizes()[detail::wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[detail::wrap_dim(d, dim(), "stride")]; }

void* Tensor::data_ptr() const {
  TENSOR_CHECK(defined(), "data_ptr: tensor is undefined");
  TENSOR_CHECK(!is_meta(), "data_ptr: meta tensor of shape {} has no data (meta tensors only carry shapes and dtypes)",
               detail::shape_str(sizes()));
  void* p = impl_->data();
  TENSOR_CHECK(p != nullptr || numel() == 0, "data_ptr: the storage of this tensor (shape {}) has been freed",
               detail::shape_str(sizes()));
  return p;
}

template <class T>
T* Tensor::data_ptr() const {
  TENSOR_CHECK(defined(), "data_ptr: tensor is undefined");
  TENSOR_CHECK(CppTypeToScalarType<T>::value == dtype(), "data_ptr<{}>: expected a tensor of dtype {} but got {} (shape {})",
               to_string(CppTypeToScalarType<T>::value), to_string(CppTypeToScalarType<T>::value), dtype(),
               detail::shape_str(sizes()));
  return static_cast<T*>(data_ptr());
}
#define TENSOR_INSTANTIATE(T) template TENSOR_API T* Tensor::data_ptr<T>() const;
TENSOR_INSTANTIATE(bool)
TENSOR_INSTANTIATE(uint8_t)
TENSOR_INSTANTIATE(int8_t)
TENSOR_INSTANTIATE(int16_t)
TENSOR_INSTANTIATE(int32_t)
TENSOR_INSTANTIATE(int64_t)
TENSOR_INSTANTIATE(Half)
TENSOR_INSTANTIATE(BFloat16)
TENSOR_INSTANTIATE(float)
TENSOR_INSTANTIATE(double)
TENSOR_INSTANTIATE(complex64)
TENSOR_INSTANTIATE(complex128)
#undef TENSOR_INSTANTIATE

Scalar Tensor::item() const {
  TENSOR_CHECK(defined(), "item: tensor is undefined");
  TENSOR_CHECK(numel() == 1, "item: a Tensor with {} elements (shape {}) cannot be converted to a Scalar", numel(),
               detail::shape_str(sizes()));
  Tensor t = is_cpu() ? resolve_conj() : cpu();
  t = t.resolve_conj();
  Scalar out;
  visit_dtype(t.dtype(), "item", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = *static_cast<const T*>(t.data_ptr());
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) out = Scalar(static_cast<float>(v));
    else out = Scalar(v);
  });
  return out;
}

bool Tensor::is_nonzero() const {
  TENSOR_CHECK(defined(), "is_nonzero: tensor is undefined");
  // Zero or several elements have no single truth value; libtorch refuses the same way.
  TENSOR_CHECK(numel() != 0, "is_nonzero: Boolean value of Tensor with no values is ambiguous (shape {}, {})",
               detail::shape_str(sizes()), dtype());
  TENSOR_CHECK(numel() == 1,
               "is_nonzero: Boolean value of Tensor with more than one value is ambiguous (shape {}, {}); use any() "
               "or all()",
               detail::shape_str(sizes()), dtype());
  return item().to_bool();
}

template <class T>
T Tensor::item() const {
  Scalar s = item();
  return s.to<T>();
}
#define TENSOR_INSTANTIATE(T) template TENSOR_API T Tensor::item<T>() const;
TENSOR_INSTANTIATE(bool)
TENSOR_INSTANTIATE(uint8_t)
TENSOR_INSTANTIATE(int8_t)
TENSOR_INSTANTIATE(int16_t)
TENSOR_INSTANTIATE(int32_t)
TENSOR_INSTANTIATE(int64_t)
TENSOR_INSTANTIATE(float)
TENSOR_INSTANTIATE(double)
TENSOR_INSTANTIATE(complex64)
TENSOR_INSTANTIATE(complex128)
#undef TENSOR_INSTANTIATE
template <> TENSOR_API Half Tensor::item<Half>() const { return Half(item<float>()); }
template <> TENSOR_API BFloat16 Tensor::item<BFloat16>() const { return BFloat16(item<float>()); }

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  return fmt::format("{} {}{}", detail::shape_str(sizes()), to_string(dtype()), is_cpu() ? "" : " on " + device().str());
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  // libtorch refuses mixed dtypes here rather than promoting: a float32 result compared with a
  // float64 reference would otherwise pass or fail on the promotion, not on the values.
  TENSOR_CHECK(a.dtype() == b.dtype(), "allclose: {} did not match {} (comparing {} with {}); convert one with .to()",
               a.dtype(), b.dtype(), a.describe(), b.describe());
  ScalarType ct = is_complex(a.dtype()) || is_complex(b.dtype()) ? kComplex128 : kFloat64;
  Tensor x = a.to(ct), y = b.to(ct);
  Tensor diff = (x - y).abs();
  Tensor tol = y.abs() * rtol + atol;
  Tensor close = diff.le(tol);
  Tensor both_nan = x.isnan().logical_and(y.isnan());
  if (equal_nan) close = close.logical_or(both_nan);
  // Equal infinities are close.
  close = close.logical_or(x.eq(y));
  return close.all().item<bool>();
}
bool Tensor::allclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return tensor::allclose(*this, o, rtol, atol, equal_nan);
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  return a.eq(b).all().item<bool>();
}
bool Tensor::equal(const Tensor& o) const { return tensor::equal(*this, o); }

void set_num_threads(int n) {
  TENSOR_CHECK(n > 0, "set_num_threads: expected a positive number of threads, got {}", n);
  omp_set_num_threads(n);
}
int get_num_threads() { return omp_get_max_threads(); }

}  // namespace tensor
