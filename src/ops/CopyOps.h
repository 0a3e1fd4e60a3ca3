// Internal: dispatcher tables of the data-movement ops every other op relies on (copy_, fill_,
// clone, _to_copy, resolve_conj), so that wrapping layers (autograd, profiler, autocast) fill
// their slots and a backend registers its kernels (Note [Copy through the dispatcher]).
#pragma once

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

using CopyFn = Tensor&(Tensor&, const Tensor&, bool);
using FillFn = Tensor&(Tensor&, const Scalar&);
using CloneFn = Tensor(const Tensor&);
/// _to_copy: (self, dtype, device, non_blocking) -> a new tensor of that dtype on that device.
using ToCopyFn = Tensor(const Tensor&, ScalarType, Device, bool);
using ResolveConjFn = Tensor(const Tensor&);

/// Backend kernel of copy_: dst = src, converted to dst's dtype and broadcast to dst's shape
/// (the front end checked shapes and overlap; dst has elements; a lazily conjugated src reads
/// as its conjugate). CUDA's also serves copies between CPU and CUDA.
using CopyKernel = void (*)(const Tensor& dst, const Tensor& src, bool non_blocking);
/// Backend kernel of fill_: every element of self (which has elements) = value.
using FillKernel = void (*)(const Tensor& self, const Scalar& value);

struct CopyOpDefs {
  // Front ends over the backend kernels above.
  dispatch::OpDef<CopyFn> copy_;
  dispatch::OpDef<FillFn> fill_;
  // Composites of empty() and copy_ (every backend slot); their Autograd slots are rows of the
  // derivatives table.
  dispatch::OpDef<CloneFn> clone;
  dispatch::OpDef<ToCopyFn> to_copy;
  dispatch::OpDef<ResolveConjFn> resolve_conj;
};

/// The one table of the data-movement ops. Exported (the library hides its internal symbols)
/// so that tests can install a wrapping kernel, as the profiler will, and see every call.
TENSOR_API CopyOpDefs& copy_ops();

/// Registers a backend's copy_ and fill_ kernels (CPU's are built in; CUDA's too, through
/// src/core/CUDAHooks.h, since cross-device copies are part of the core).
void register_kernel(DispatchKey backend, CopyKernel kernel);
void register_kernel(DispatchKey backend, FillKernel kernel);

}  // namespace tensor::ops
