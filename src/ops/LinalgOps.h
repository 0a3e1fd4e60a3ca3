// Internal: dispatcher tables of the matrix products, so that wrapping layers (autograd,
// profiler, CUDA) can fill their slots. matmul, dot, outer and einsum are composites of these
// and of public ops, so they need no table (their autograd comes from the pieces).
#pragma once

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// mm, bmm: (a, b).
using MmFn = Tensor(const Tensor&, const Tensor&);
/// addmm: (self, a, b, beta, alpha).
using AddmmFn = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);
/// linear: (x, weight, bias (may be undefined)).
using LinearFn = Tensor(const Tensor&, const Tensor&, const Tensor&);

struct LinalgOpDefs {
  dispatch::OpDef<MmFn> mm, bmm;
  dispatch::OpDef<AddmmFn> addmm;
  dispatch::OpDef<LinearFn> linear;
};

/// The one table of matrix-product ops.
LinalgOpDefs& linalg_ops();

}  // namespace tensor::ops
