// Internal: dispatcher tables of the indexing and joining ops (so that autograd, profiler and
// CUDA can fill their slots). Their CPU loops are in kernels/cpu/IndexKernels.cpp, over the
// strided offset loop of kernels/cpu/IndexLoops.h.
#pragma once

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
// Defined in JoinOps.cpp.
dispatch::OpDef<CatFn>& cat_op();
dispatch::OpDef<StackFn>& stack_op();

namespace index_detail {

/// Checks that `t` is defined and lives on the CPU or is a meta tensor (the only backends these kernels serve).
inline void check_cpu_or_meta(const Tensor& t, const char* op, const char* what) {
  TENSOR_CHECK(t.defined(), "{}: {} is an undefined tensor", op, what);
  TENSOR_CHECK(t.is_cpu() || t.is_meta(), "{}: {} is on {}, but only CPU (and meta) tensors are supported for now", op,
               what, t.device().str());
}

}  // namespace index_detail
}  // namespace tensor::ops
