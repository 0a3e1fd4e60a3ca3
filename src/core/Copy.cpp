// copy_, to(), contiguous, clone, fill_, zero_: the data movement every other op relies on.
#include <cstring>

#include "kernels/cpu/Elementwise.h"
#include "src/core/AutogradHooks.h"
#include "src/core/Check.h"
#include "src/cuda/CUDAHooks.h"
#include "tensor/ops.h"

namespace tensor {

namespace {

// Note [Blocked transpose copy]
// A copy whose source walks memory with a large stride in the inner loop (t().contiguous())
// misses cache on every element, and power-of-two row pitches map every line of a naive tile
// to the same L1 set. So the copy moves blocks of one cache line by one cache line (16x16
// floats): it reads each source line whole into a small L1-resident buffer, transposes there,
// and writes each destination line whole. Every line is touched once, set conflicts stop
// mattering, and blocks are independent, so threads split them.
template <class T>
void transpose_tiles(char* dst, const char* src, int64_t rows, int64_t cols, int64_t d_row, int64_t d_col,
                     int64_t s_row, int64_t s_col) {
  constexpr int64_t B = 64 / sizeof(T);
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  int64_t tiles_r = (rows + B - 1) / B, tiles_c = (cols + B - 1) / B;
#pragma omp parallel for collapse(2) if (rows * cols >= 65536)
  for (int64_t tr = 0; tr < tiles_r; ++tr)
    for (int64_t tc = 0; tc < tiles_c; ++tc) {
      const int64_t r0 = tr * B, c0 = tc * B;
      const int64_t nr = std::min(B, rows - r0), nc = std::min(B, cols - c0);
      alignas(64) T buf[B][B];
      // Source line c holds dst column c (contiguous along r since s_row == 1).
      for (int64_t c = 0; c < nc; ++c) {
        const T* line = s + r0 * s_row + (c0 + c) * s_col;
        for (int64_t r = 0; r < nr; ++r) buf[r][c] = line[r];
      }
      for (int64_t r = 0; r < nr; ++r) {
        T* out = d + (r0 + r) * d_row + c0 * d_col;
        for (int64_t c = 0; c < nc; ++c) out[c] = buf[r][c];
      }
    }
}

// Same dtype, 2-D, destination contiguous, source with unit stride on the other dim.
bool try_transpose_copy(Tensor& dst, const Tensor& src) {
  if (dst.dim() != 2 || src.sizes() != dst.sizes() || src.dtype() != dst.dtype() || !dst.is_contiguous() || src.is_conj())
    return false;
  if (src.stride(0) != 1 || src.stride(1) == 1 || dst.size(0) < 32 || dst.size(1) < 32) return false;
  char* d = static_cast<char*>(dst.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  int64_t rows = dst.size(0), cols = dst.size(1);
  switch (dst.element_size()) {
    case 1: transpose_tiles<uint8_t>(d, s, rows, cols, cols, 1, src.stride(0), src.stride(1)); return true;
    case 2: transpose_tiles<uint16_t>(d, s, rows, cols, cols, 1, src.stride(0), src.stride(1)); return true;
    case 4:
      cpu::transpose32(reinterpret_cast<uint32_t*>(d), reinterpret_cast<const uint32_t*>(s), rows, cols, cols,
                       src.stride(1));
      return true;
    case 8: transpose_tiles<uint64_t>(d, s, rows, cols, cols, 1, src.stride(0), src.stride(1)); return true;
    default: return false;
  }
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  TENSOR_CHECK(defined() && src.defined(), "copy_: both tensors must be defined");
  if ((requires_grad() || src.requires_grad()) && autograd_hooks::copy_needs_recording(*this, src))
    return autograd_hooks::record_copy_(*this, src, non_blocking);
  Device dd = device(), sd = src.device();
  if (dd.is_meta() || sd.is_meta()) {
    TENSOR_CHECK(dd.is_meta(), "copy_: cannot copy from a meta tensor (it has no data) into a {} tensor", dd.str());
    TENSOR_CHECK(broadcast_shapes(src.sizes(), sizes()) == sizes().vec(),
                 "copy_: source of shape {} cannot be broadcast to destination shape {}", detail::shape_str(src.sizes()),
                 detail::shape_str(sizes()));
    return *this;
  }
  if (numel() == 0) return *this;
  check_no_internal_overlap(*this, "copy_");
  if (dd == sd) check_no_partial_overlap(*this, src, "copy_");
  if (dd.is_cuda() || sd.is_cuda()) {
    // Cross-device: stage through a contiguous tensor of the destination's dtype.
    Tensor s = src;
    if (s.sizes() != sizes()) s = s.expand(sizes());
    if (!dd.is_cuda()) s = s.contiguous();  // device -> host: make device side contiguous first
    if (s.dtype() != dtype() || !s.is_contiguous() || s.is_conj()) s = s.to(dtype()).contiguous();
    if (is_contiguous()) {
      cuda_detail::copy_bytes(data_ptr(), dd, s.data_ptr(), s.device(), static_cast<size_t>(nbytes()), non_blocking);
    } else {
      Tensor tmp = empty(sizes(), options());
      cuda_detail::copy_bytes(tmp.data_ptr(), dd, s.data_ptr(), s.device(), static_cast<size_t>(nbytes()), false);
      copy_(tmp);
    }
    impl()->bump_version();
    return *this;
  }
  // Fast paths: identical layout memcpy, and blocked transposes.
  if (src.dtype() == dtype() && src.sizes() == sizes() && src.is_contiguous() && is_contiguous() && !src.is_conj() && !is_conj()) {
    if (data_ptr() != src.data_ptr()) std::memcpy(data_ptr(), src.data_ptr(), static_cast<size_t>(nbytes()));
    impl()->bump_version();
    return *this;
  }
  if (!is_conj() && try_transpose_copy(*this, src)) {
    impl()->bump_version();
    return *this;
  }
  TensorIterator it;
  it.name("copy_").add_output(*this).add_input(src).resize_outputs(false).no_input_cast(1);
  it.common_dtype(dtype());
  it.build();
  cpu::copy_kernel(it);
  it.finish();
  impl()->bump_version();
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value) {
  if (is_meta() || numel() == 0) return *this;
  if (is_cuda()) {
    Tensor one = scalar_tensor(value, TensorOptions(dtype()));
    TENSOR_CHECK(is_contiguous(), "fill_: non-contiguous CUDA tensors are not supported yet");
    cuda_detail::fill_bytes(data_ptr(), device(), one.data_ptr(), static_cast<size_t>(element_size()), static_cast<size_t>(numel()));
    impl()->bump_version();
    return *this;
  }
  TensorIterator it;
  it.name("fill_").add_output(*this).resize_outputs(false);
  it.common_dtype(dtype());
  it.build();
  cpu::fill_kernel(it, value);
  impl()->bump_version();
  return *this;
}

Tensor& Tensor::fill_(const Tensor& value) {
  TENSOR_CHECK(value.dim() == 0, "fill_: only a 0-dim value tensor is supported, got shape {}", detail::shape_str(value.sizes()));
  return fill_(value.item());
}

Tensor& Tensor::zero_() { return fill_(0); }

Tensor Tensor::to(const TensorOptions& o, bool non_blocking, bool copy) const {
  ScalarType t = o.has_dtype() ? o.dtype() : dtype();
  Device d = o.has_device() ? o.device() : device();
  if (!copy && t == dtype() && d == device()) return *this;
  Tensor out = empty(sizes(), TensorOptions().dtype(t).device(d));
  out.copy_(*this, non_blocking);
  if (requires_grad()) autograd_hooks::record_view(out, *this, autograd_hooks::ViewKind::ToCopy, {});
  return out;
}
Tensor Tensor::to(ScalarType t, bool nb, bool copy) const { return to(TensorOptions().dtype(t), nb, copy); }
Tensor Tensor::to(Device d, bool nb, bool copy) const { return to(TensorOptions().device(d), nb, copy); }
Tensor Tensor::to(Device d, ScalarType t, bool nb, bool copy) const { return to(TensorOptions().device(d).dtype(t), nb, copy); }

Tensor Tensor::contiguous() const {
  if (is_contiguous() && !is_conj()) return *this;
  Tensor out = empty(sizes(), options());
  out.copy_(*this);
  if (requires_grad()) autograd_hooks::record_view(out, *this, autograd_hooks::ViewKind::Clone, {});
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(sizes(), options());
  out.copy_(*this);
  if (requires_grad()) autograd_hooks::record_view(out, *this, autograd_hooks::ViewKind::Clone, {});
  return out;
}

Tensor Tensor::resolve_conj() const {
  if (!is_conj()) return *this;
  Tensor self = *this;
  // A conj view reads as the conjugate: materialize through the Conj kernel on the plain data.
  Tensor plain(make_intrusive<TensorImpl>(impl()->storage(), dtype(), device()));
  plain.unsafeGetTensorImpl()->set_sizes_and_strides(sizes(), strides(), storage_offset());
  Tensor out = empty(sizes(), options());
  TensorIterator it;
  it.name("resolve_conj").add_output(out).add_input(plain);
  it.build();
  if (!it.is_meta()) cpu::unary_kernel(it, cpu::UnaryOp::Conj, "resolve_conj");
  return out;
}

}  // namespace tensor
