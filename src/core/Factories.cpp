// Factories, tensor literals and from_blob.
#include <cmath>

#include "src/core/Check.h"
#include "src/core/Sizes.h"
#include "src/core/CUDAHooks.h"
#include "src/core/FactoryImpls.h"
#include "src/core/FactoryOptions.h"
#include "tensor/cuda/cuda.h"
#include "tensor/ops.h"

namespace tensor {

namespace {
void check_sizes(IntArrayRef sizes, const char* op) {
  for (int64_t s : sizes)
    TENSOR_CHECK(s >= 0, "{}: negative dimension {} in size {}", op, s, detail::shape_str(sizes));
}
Tensor finish_options(Tensor t, const TensorOptions& o) { return detail::apply_factory_options(std::move(t), o); }
// "cuda" means the current device: pin the index so storages always name a real device.
Device resolve_device(Device d) {
  if (d.is_cuda() && !d.has_index()) return Device(kCUDA, static_cast<int8_t>(cuda::current_device()));
  return d;
}
// A quantized dtype needs a scale and zero point, which a factory has no way to take
// (Note [Quantized tensors] in src/core/Quantizer.h).
void check_not_quantized(ScalarType dt, const char* op) {
  TENSOR_CHECK(!is_qint_type(dt), "{}: cannot make a {} tensor without quantization parameters; make one with "
               "quantize_per_tensor, quantize_per_channel or _make_per_tensor_quantized_tensor", op, dt);
}
}  // namespace

Tensor detail::empty_strided_impl(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o) {
  check_sizes(sizes, "empty_strided");
  TENSOR_CHECK(sizes.size() == strides.size(), "empty_strided: got {} sizes but {} strides", sizes.size(), strides.size());
  ScalarType dt = o.dtype();
  check_not_quantized(dt, "empty_strided");
  Device dev = resolve_device(o.device());
  int64_t span = 1;  // elements needed: 1 + sum((size-1)*stride)
  bool empty_t = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) empty_t = true;
    span += (sizes[i] - 1) * strides[i];
  }
  size_t nbytes = empty_t ? 0 : static_cast<size_t>(span * element_size(dt));
  auto storage = make_intrusive<StorageImpl>(nbytes, dev, get_allocator(dev.type()));
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dt, dev);
  impl->set_sizes_and_strides(sizes, strides, 0);
  return finish_options(Tensor(std::move(impl)), o);
}

// Note [Sizes that fit]: a contiguous tensor's strides are the products of the sizes after
// each dim, a size 0 counting as 1, so even a tensor with no elements needs the product of its
// sizes (0s as 1s) to fit in int64: [0, 2^40, 2^40] has a stride of 2^80. That product also
// bounds the element count; the byte count must fit as well. Readers of files (safetensors,
// IDX) check the same before calling empty(), to name the file in their message.
Tensor detail::empty_impl(IntArrayRef sizes, const TensorOptions& o) {
  check_sizes(sizes, "empty");
  ScalarType dt = o.dtype();
  check_not_quantized(dt, "empty");
  TENSOR_CHECK(detail::contiguous_strides_fit(sizes), "empty: size {} is too large: its strides overflow int64",
               detail::shape_str(sizes));
  int64_t n = 1, nbytes = 0;
  for (int64_t s : sizes) n *= s;  // fits: at most the product checked above
  TENSOR_CHECK(!__builtin_mul_overflow(n, element_size(dt), &nbytes),
               "empty: size {} of {} needs more than 2^63 bytes", detail::shape_str(sizes), dt);
  Device dev = resolve_device(o.device());
  auto storage = make_intrusive<StorageImpl>(static_cast<size_t>(nbytes), dev, get_allocator(dev.type()));
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dt, dev);
  impl->set_sizes_contiguous(sizes);
  return finish_options(Tensor(std::move(impl)), o);
}

Tensor detail::full_impl(IntArrayRef sizes, const Scalar& value, const TensorOptions& o) {
  TensorOptions opts = o;
  if (!o.has_dtype()) {
    ScalarType t = value.type();
    opts = opts.dtype(t == kFloat64 ? get_default_dtype() : t == kComplex128 ? to_complex_type(get_default_dtype()) : t);
  }
  Tensor t = empty(sizes, opts.requires_grad(false));
  t.fill_(value);
  return finish_options(t, o);
}
Tensor zeros(IntArrayRef sizes, const TensorOptions& o) { return full(sizes, 0, o.dtype(o.dtype())); }
Tensor ones(IntArrayRef sizes, const TensorOptions& o) { return full(sizes, 1, o.dtype(o.dtype())); }

Tensor detail::scalar_tensor_impl(const Scalar& s, const TensorOptions& o) {
  TensorOptions opts = o.has_dtype() ? o : o.dtype(s.type());
  if (!o.has_device()) opts = opts.device(Device(kCPU));
  Tensor t = empty({}, opts);
  t.fill_(s);
  return t;
}

static TensorOptions like(const Tensor& t, const TensorOptions& o) {
  TensorOptions r = o;
  if (!o.has_dtype()) r = r.dtype(t.dtype());
  if (!o.has_device()) r = r.device(t.device());
  return r;
}
// empty_like (memory formats): src/ops/MemoryFormat.cpp.
Tensor zeros_like(const Tensor& t, const TensorOptions& o) { return zeros(t.sizes(), like(t, o)); }
Tensor ones_like(const Tensor& t, const TensorOptions& o) { return ones(t.sizes(), like(t, o)); }
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& o) { return full(t.sizes(), v, like(t, o)); }
Tensor rand_like(const Tensor& t, const TensorOptions& o) { return rand(t.sizes(), like(t, o)); }
Tensor randn_like(const Tensor& t, const TensorOptions& o) { return randn(t.sizes(), like(t, o)); }

Tensor arange(const Scalar& end, const TensorOptions& o) { return arange(0, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o) { return arange(start, end, 1, o); }
Tensor eye(int64_t n, const TensorOptions& o) { return eye(n, n, o); }
Tensor detail::eye_impl(int64_t n, int64_t m, const TensorOptions& o) {
  TENSOR_CHECK(n >= 0 && m >= 0, "eye: sizes must be non-negative, got n={}, m={}", n, m);
  Tensor t = zeros({n, m}, o.requires_grad(false));
  if (n > 0 && m > 0) t.diagonal().fill_(1);
  return finish_options(t, o);
}

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& o) {
  DimVector strides(sizes.size(), 1);
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * std::max<int64_t>(sizes[i + 1], 1);
  return from_blob(data, sizes, strides, o);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o) {
  check_sizes(sizes, "from_blob");
  check_not_quantized(o.dtype(), "from_blob");
  TENSOR_CHECK(sizes.size() == strides.size(), "from_blob: got {} sizes but {} strides", sizes.size(), strides.size());
  int64_t span = 1;
  for (size_t i = 0; i < sizes.size(); ++i) span += (sizes[i] - 1) * strides[i];
  Device dev = o.device();
  auto storage = make_intrusive<StorageImpl>(DataPtr{data, nullptr, nullptr}, static_cast<size_t>(span * element_size(o.dtype())), dev);
  auto impl = make_intrusive<TensorImpl>(std::move(storage), o.dtype(), dev);
  impl->set_sizes_and_strides(sizes, strides, 0);
  return finish_options(Tensor(std::move(impl)), o);
}

// ---- literals ----

Tensor TensorLiteral::to_tensor(const TensorOptions& o) const {
  if (is_scalar_) {
    ScalarType t = scalar_.type();
    if (t == kFloat64) t = get_default_dtype();
    if (t == kComplex128) t = to_complex_type(get_default_dtype());
    TensorOptions opts = o.has_dtype() ? o : o.dtype(t);
    Tensor r = scalar_tensor(scalar_, opts.requires_grad(false));
    return finish_options(o.has_device() ? r.to(o.device()) : r, o);
  }
  // Flatten: infer the shape from the first element at each depth, check rectangularity.
  std::vector<int64_t> shape;
  std::vector<Scalar> flat;
  ScalarType widest = kBool;
  bool any = false;
  struct Walker {
    std::vector<int64_t>& shape;
    std::vector<Scalar>& flat;
    ScalarType& widest;
    bool& any;
    void walk(const TensorLiteral& l, size_t depth) {
      if (l.is_scalar_) {
        TENSOR_CHECK(depth == shape.size(), "tensor: nested lists are not rectangular (a number sits at depth {} but "
                     "the shape has {} dims)", depth, shape.size());
        flat.push_back(l.scalar_);
        widest = any ? promote_types(widest, l.scalar_.type()) : l.scalar_.type();
        any = true;
        return;
      }
      if (depth == shape.size()) shape.push_back(static_cast<int64_t>(l.list_.size()));
      TENSOR_CHECK(static_cast<int64_t>(l.list_.size()) == shape[depth],
                   "tensor: nested lists are not rectangular (expected {} elements at depth {}, got {})", shape[depth],
                   depth, l.list_.size());
      for (const auto& c : l.list_) walk(c, depth + 1);
    }
  } w{shape, flat, widest, any};
  w.walk(*this, 0);
  ScalarType t = any ? widest : get_default_dtype();
  if (t == kFloat64) t = get_default_dtype();
  if (t == kComplex128) t = to_complex_type(get_default_dtype());
  TensorOptions opts = o.has_dtype() ? o : o.dtype(t);
  Tensor r = empty(shape, opts.requires_grad(false).device(Device(kCPU)));
  Tensor cell = r.view({-1});
  for (size_t i = 0; i < flat.size(); ++i) cell.select(0, static_cast<int64_t>(i)).fill_(flat[i]);
  return finish_options(o.has_device() ? r.to(o.device()) : r, o);
}

Tensor tensor(const TensorLiteral& values, const TensorOptions& o) { return values.to_tensor(o); }
Tensor tensor(std::initializer_list<TensorLiteral> values, const TensorOptions& o) { return TensorLiteral(values).to_tensor(o); }
template <class T>
static Tensor from_vector(const std::vector<T>& v, ScalarType t, const TensorOptions& o) {
  Tensor r = empty({static_cast<int64_t>(v.size())}, TensorOptions(t));
  if (!v.empty()) std::memcpy(r.data_ptr<T>(), v.data(), v.size() * sizeof(T));
  TensorOptions opts = o.has_dtype() ? o : o.dtype(t);
  return finish_options(r.to(opts.device(), opts.dtype()), o);
}
Tensor tensor(const std::vector<double>& v, const TensorOptions& o) { return from_vector(v, kFloat64, o.has_dtype() ? o : o.dtype(get_default_dtype())); }
Tensor tensor(const std::vector<float>& v, const TensorOptions& o) { return from_vector(v, kFloat32, o); }
Tensor tensor(const std::vector<int64_t>& v, const TensorOptions& o) { return from_vector(v, kInt64, o); }

}  // namespace tensor
