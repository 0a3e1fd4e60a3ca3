// Internal: dispatcher tables of the indexing and joining ops (so that autograd, profiler and
// CUDA can fill their slots), and the signatures of their backend kernels (Note [Front ends and
// backend kernels], src/ops/ElementwiseOps.cpp). Their CPU loops are in
// kernels/cpu/IndexKernels.cpp, over the strided offset loop of kernels/cpu/IndexLoops.h.
#pragma once

#include <vector>

#include <cstdint>

#include "src/core/Check.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

// ---- kernel signatures, one OpDef each ----
using IndexSelectFn = Tensor(const Tensor&, int64_t, const Tensor&);
using GatherFn = Tensor(const Tensor&, int64_t, const Tensor&);
using ScatterFn = Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&);
using ScatterInplaceFn = Tensor&(Tensor&, int64_t, const Tensor&, const Tensor&);
using IndexAddFn = Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&);
using IndexAddInplaceFn = Tensor&(Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&);
using MaskedFillFn = Tensor(const Tensor&, const Tensor&, const Scalar&);
using MaskedFillInplaceFn = Tensor&(Tensor&, const Tensor&, const Scalar&);
using MaskedSelectFn = Tensor(const Tensor&, const Tensor&);
using NonzeroFn = Tensor(const Tensor&);
using CatFn = Tensor(TensorList, int64_t);
using StackFn = Tensor(TensorList, int64_t);

// ---- backend kernels of the indexing ops ----
// The front ends (src/ops/IndexOps.cpp) check every argument and every index and allocate the
// outputs; a kernel only moves or adds elements. None is handed an empty output.

/// out = self.index_select(dim, index): self at least 1-D, self not lazily conjugated.
using IndexSelectKernel = void (*)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out);
/// out = self.gather(dim, index): all three at least 1-D, out of index's shape.
using GatherKernel = void (*)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out);
/// self.scatter_(dim, index, src), or scatter_add_ when `add`; all at least 1-D, no two sharing memory.
using ScatterKernel = void (*)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, bool add,
                               const char* op);
/// self.index_add_(dim, index, source, alpha); self at least 1-D, no two sharing memory.
using IndexAddKernel = void (*)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                                const Scalar& alpha, const char* op);
/// self = where(mask, value, src): mask and src broadcast to self's shape (src may be self); the
/// value is checked against self's dtype here (its range error names `op`).
using MaskedFillKernel = void (*)(const Tensor& self, const Tensor& mask, const Scalar& value, const Tensor& src,
                                  const char* op);
/// masked_select and nonzero size their output from the data, so each has two kernels: the
/// count, which the front end allocates from (count + 1 elements or rows, the spare one
/// scratch), then the fill. self and mask have one (broadcast) shape.
using MaskedSelectCountKernel = int64_t (*)(const Tensor& self, const Tensor& mask);
using MaskedSelectFillKernel = void (*)(const Tensor& self, const Tensor& mask, const Tensor& out);
using NonzeroCountKernel = int64_t (*)(const Tensor& a, const char* op);
using NonzeroFillKernel = void (*)(const Tensor& a, const Tensor& out, const char* op);

/// One backend's indexing kernels; a null member leaves its ops without that backend's kernel
/// (masked_select and nonzero need both of theirs).
struct IndexKernels {
  IndexSelectKernel index_select = nullptr;
  GatherKernel gather = nullptr;
  ScatterKernel scatter = nullptr;  // scatter, scatter_add and their in-place forms
  IndexAddKernel index_add = nullptr;  // index_add, index_add_
  MaskedFillKernel masked_fill = nullptr;  // masked_fill, masked_fill_
  MaskedSelectCountKernel masked_select_count = nullptr;
  MaskedSelectFillKernel masked_select_fill = nullptr;
  NonzeroCountKernel nonzero_count = nullptr;
  NonzeroFillKernel nonzero_fill = nullptr;
};
/// Registers a backend's (CUDA's) indexing kernels: each non-null one, and its ops' slots.
TENSOR_API void register_kernel(DispatchKey backend, const IndexKernels& kernels);

// Defined in IndexOps.cpp.
dispatch::OpDef<IndexSelectFn>& index_select_op();
dispatch::OpDef<GatherFn>& gather_op();
dispatch::OpDef<ScatterFn>& scatter_op();
dispatch::OpDef<ScatterInplaceFn>& scatter_inplace_op();
dispatch::OpDef<ScatterFn>& scatter_add_op();
dispatch::OpDef<ScatterInplaceFn>& scatter_add_inplace_op();
dispatch::OpDef<IndexAddFn>& index_add_op();
dispatch::OpDef<IndexAddInplaceFn>& index_add_inplace_op();
dispatch::OpDef<MaskedFillFn>& masked_fill_op();
dispatch::OpDef<MaskedFillInplaceFn>& masked_fill_inplace_op();
/// masked_select's CPU slot also holds its differentiable composite (index_select of the
/// selected positions), taken while recording; nonzero is not differentiable.
dispatch::OpDef<MaskedSelectFn>& masked_select_op();
dispatch::OpDef<NonzeroFn>& nonzero_op();
// Defined in JoinOps.cpp: front ends (checks, promotion, the output's allocation) over the
// backend's slab copy; stack is cat of the unsqueezed inputs, in the same front end.
dispatch::OpDef<CatFn>& cat_op();
dispatch::OpDef<StackFn>& stack_op();
using SplitFn = std::vector<Tensor>(const Tensor&, int64_t, int64_t);
using SplitWithSizesFn = std::vector<Tensor>(const Tensor&, IntArrayRef, int64_t);
using UnbindFn = std::vector<Tensor>(const Tensor&, int64_t);
/// split, split(sizes), chunk, unbind: composites of views (JoinOps.cpp), in every backend slot
/// (chunk and unbind exported for tests).
dispatch::OpDef<SplitFn>& split_op();
dispatch::OpDef<SplitWithSizesFn>& split_with_sizes_op();
TENSOR_API dispatch::OpDef<SplitFn>& chunk_op();
TENSOR_API dispatch::OpDef<UnbindFn>& unbind_op();
/// Backend kernel of cat and stack: copies `src` into the [offset, offset + src.size(dim)) slab
/// of the contiguous `out` along dim, converting to out's dtype and resolving a lazy conjugation.
using CatSlabKernel = void (*)(const Tensor& out, const Tensor& src, int64_t dim, int64_t offset);
/// Registers a backend's (CUDA's) kernel of cat and stack.
TENSOR_API void register_kernel(DispatchKey backend, CatSlabKernel kernel);

namespace index_detail {

/// Checks that `t` is defined and lives on the CPU or is a meta tensor (the only backends these kernels serve).
inline void check_cpu_or_meta(const Tensor& t, const char* op, const char* what) {
  TENSOR_CHECK(t.defined(), "{}: {} is an undefined tensor", op, what);
  TENSOR_CHECK(t.is_cpu() || t.is_meta(), "{}: {} is on {}, but only CPU (and meta) tensors are supported for now", op,
               what, t.device().str());
}

/// check_cpu_or_meta in the front end's instance for backend K: the CPU and Meta instances take
/// CPU and meta tensors, the CUDA instance CUDA ones (a meta argument dispatches to Meta).
template <DispatchKey K>
inline void check_backend_device(const Tensor& t, const char* op, const char* what) {
  if constexpr (K == DispatchKey::CUDA) {
    TENSOR_CHECK(t.defined(), "{}: {} is an undefined tensor", op, what);
    TENSOR_CHECK(t.is_cuda(), "{}: {} is on {}, but the other arguments are CUDA tensors", op, what, t.device().str());
  } else {
    check_cpu_or_meta(t, op, what);
  }
}

}  // namespace index_detail
}  // namespace tensor::ops
