// copy_, fill_/zero_, clone, to() (_to_copy), contiguous and resolve_conj: the data movement
// every other op relies on, and their dispatcher tables (src/ops/CopyOps.h).
//
// Note [Copy through the dispatcher]
// These are dispatcher ops like any other, so the Profiler and Autocast keys see them and a
// backend adds kernels without editing the core:
//   copy_, fill_     front ends (checks, meta handling, version bump) over per-backend kernels:
//                    CPU's in kernels/cpu/CopyKernels.cpp, CUDA's in src/cuda/CUDACopy.cpp. A
//                    copy between CPU and CUDA carries both keys, and CUDA's kernel (the higher
//                    key) moves the bytes either way. Their Autograd kernels are hand-written
//                    (src/autograd/nodes/InPlace.cpp): they write in place.
//   clone, _to_copy, resolve_conj
//                    composites, the same function in every backend slot (each piece
//                    dispatches): empty() and copy_, or for resolve_conj conj_physical; their Autograd kernels are rows of the derivatives
//                    table (CloneBackward0, ToCopyBackward0, ResolveConjBackward0).
//   to(), contiguous()
//                    not ops of their own, as in libtorch: they return self when nothing changes
//                    (the common case, and free) and otherwise call _to_copy or clone
//                    (src/ops/MemoryFormat.cpp, with their memory-format forms).
// Kernels below autograd call copy_ freely: with the Autograd key excluded it never records.
#include "src/ops/CopyOps.h"

#include <complex>
#include <vector>

#include "kernels/cpu/CopyKernels.h"
#include "src/core/Check.h"
#include "src/core/TensorIterator.h"
#include "src/core/CUDAHooks.h"
#include "src/dispatch/BackendKernels.h"
#include "src/ops/ElementwiseOps.h"
#include "src/ops/MemoryFormat.h"
#include "src/ops/QuantizedOps.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {
using detail::shape_str;
using dispatch::BackendKernels;

// The per-backend kernels, both built in: CUDA's go through the CUDA hooks (Note [CUDA hooks]),
// which raise a clear error where the CUDA backend is absent.
BackendKernels<CopyKernel> g_copy_kernels{{&cpu::copy, &cuda_detail::hooked_copy_kernel}};
BackendKernels<FillKernel> g_fill_kernels{{&cpu::fill, &cuda_detail::hooked_fill_kernel}};

template <DispatchKey K>
Tensor& copy_fn(Tensor& self, const Tensor& src, bool non_blocking) {
  TENSOR_CHECK(self.defined() && src.defined(), "copy_: both tensors must be defined");
  const CopyKernel kernel = g_copy_kernels.get<K>("copy_");
  if constexpr (K == DispatchKey::Meta) {
    TENSOR_CHECK(self.is_meta(), "copy_: cannot copy from a meta tensor (it has no data) into a {} tensor",
                 self.device().str());
    TENSOR_CHECK(broadcast_shapes(src.sizes(), self.sizes()) == self.sizes().vec(),
                 "copy_: source of shape {} cannot be broadcast to destination shape {}", shape_str(src.sizes()),
                 shape_str(self.sizes()));
    return self;
  } else {
    if (self.numel() == 0) return self;
    check_no_internal_overlap(self, "copy_");
    if (self.device() == src.device()) check_no_partial_overlap(self, src, "copy_");
    if (K == DispatchKey::CPU && self.is_conj()) {
      // Note [Writing through a conj view]: a lazily conjugated tensor's memory holds the
      // conjugates of its values, so the write goes to the plain alias, of src's conjugates
      // (the CPU kernels write no conj view; CUDA's handle one themselves).
      kernel(self.conj(), src.conj(), non_blocking);
    } else {
      kernel(self, src, non_blocking);
    }
    self.unsafeGetTensorImpl()->bump_version();
    return self;
  }
}

template <DispatchKey K>
Tensor& fill_fn(Tensor& self, const Scalar& value) {
  TENSOR_CHECK(self.defined(), "fill_: tensor is undefined");
  const FillKernel kernel = g_fill_kernels.get<K>("fill_");
  if constexpr (K != DispatchKey::Meta) {
    if (self.numel() == 0) return self;
    // Note [Fill through aliases]
    // fill_ writes one value everywhere, so the aliased elements of an expanded tensor agree
    // (libtorch's fill skips the overlap check that other writes make): the kernel fills each
    // memory location once, through the tensor with its stride-0 dims shrunk to one element.
    std::vector<int64_t> once;
    for (int64_t d = 0; d < self.dim(); ++d)
      if (self.stride(d) == 0 && self.size(d) > 1) {
        if (once.empty()) once = self.sizes().vec();
        once[d] = 1;
      }
    // A conj view on the CPU: its plain alias takes the conjugate (Note [Writing through a conj view]).
    const bool through_conj = K == DispatchKey::CPU && self.is_conj();
    const Tensor target = through_conj ? self.conj() : self;
    const Scalar v = through_conj && value.is_complex() ? Scalar(std::conj(value.to<std::complex<double>>())) : value;
    if (once.empty()) kernel(target, v);
    else kernel(target.as_strided(once, target.strides(), target.storage_offset()), v);
    self.unsafeGetTensorImpl()->bump_version();
  }
  return self;
}

Tensor clone_composite(const Tensor& self) {
  TENSOR_CHECK(self.defined(), "clone: tensor is undefined");
  Tensor out = empty(self.sizes(), self.options());
  out.copy_(self);
  return out;
}

// libtorch's _to_copy with memory_format Preserve (Note [Memory formats]): a dense source keeps
// its strides, any other takes the layout suggest_memory_format() names.
Tensor to_copy_composite(const Tensor& self, ScalarType dtype, Device device, bool non_blocking) {
  TENSOR_CHECK(self.defined(), "to: tensor is undefined");
  const TensorOptions o = TensorOptions().dtype(dtype).device(device);
  Tensor out = layout::non_overlapping_and_dense(self.sizes(), self.strides())
                   ? empty_strided(self.sizes(), self.strides(), o)
                   : empty(self.sizes(), o, self.suggest_memory_format());
  out.copy_(self, non_blocking);
  return out;
}

Tensor resolve_conj_composite(const Tensor& self) {
  TENSOR_CHECK(self.defined(), "resolve_conj: tensor is undefined");
  if (!self.is_conj()) return self;
  // The conjugate of the plain data (an alias without the conj bit), by the elementwise
  // conj_physical: copy_ cannot serve, since TensorIterator resolves conj inputs through here.
  Tensor plain(make_intrusive<TensorImpl>(self.unsafeGetTensorImpl()->storage(), self.dtype(), self.device()));
  plain.unsafeGetTensorImpl()->set_sizes_and_strides(self.sizes(), self.strides(), self.storage_offset());
  return unary_op(UnaryOp::Conj).functional(plain);
}

// Constant-initialized; CUDA's kernels are built in, so its front-end slots are filled here too.
template <class Fn>
constexpr dispatch::OpDef<Fn> all_backends(const char* name, Fn* cpu, Fn* cuda, Fn* meta) {
  dispatch::OpDef<Fn> d = dispatch::front_end_def<Fn>(name, cpu, meta);
  d.kernels[static_cast<int>(DispatchKey::CUDA)] = cuda;
  return d;
}

// Quantized slots (Note [Quantized key]): copy_, clone and _to_copy have kernels of their own
// (src/ops/QuantizedOps.cpp); resolve_conj of a real tensor is the tensor itself; fill_ has none.
CopyOpDefs g_copy = {
    dispatch::with_quantized(all_backends<CopyFn>("copy_", &copy_fn<DispatchKey::CPU>, &copy_fn<DispatchKey::CUDA>,
                                                  &copy_fn<DispatchKey::Meta>),
                             &quantized_copy_),
    all_backends<FillFn>("fill_", &fill_fn<DispatchKey::CPU>, &fill_fn<DispatchKey::CUDA>,
                         &fill_fn<DispatchKey::Meta>),
    dispatch::with_quantized(dispatch::composite_def<CloneFn>("clone", &clone_composite), &quantized_clone),
    dispatch::with_quantized(dispatch::composite_def<ToCopyFn>("_to_copy", &to_copy_composite), &quantized_to_copy),
    dispatch::view_composite_def<ResolveConjFn>("resolve_conj", &resolve_conj_composite),
};

}  // namespace

CopyOpDefs& copy_ops() { return g_copy; }

void register_kernel(DispatchKey backend, CopyKernel kernel) {
  dispatch::check_kernel_backend(backend, "copy_");
  g_copy_kernels.set(backend, kernel);
}
void register_kernel(DispatchKey backend, FillKernel kernel) {
  dispatch::check_kernel_backend(backend, "fill_");
  g_fill_kernels.set(backend, kernel);
}

}  // namespace ops

// ---- public API ----
using ops::copy_ops;

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) const { return copy_ops().copy_(const_cast<Tensor&>(*this), src, non_blocking); }
Tensor& Tensor::fill_(const Scalar& value) const { return copy_ops().fill_(const_cast<Tensor&>(*this), value); }
Tensor& Tensor::fill_(const Tensor& value) const {
  TENSOR_CHECK(value.dim() == 0, "fill_: only a 0-dim value tensor is supported, got shape {}",
               detail::shape_str(value.sizes()));
  return fill_(value.item());
}
Tensor& Tensor::zero_() const { return fill_(0); }

// to(), contiguous() and the memory-format forms: src/ops/MemoryFormat.cpp.
Tensor Tensor::clone() const { return copy_ops().clone(*this); }
Tensor Tensor::resolve_conj() const { return is_conj() ? copy_ops().resolve_conj(*this) : *this; }

}  // namespace tensor
