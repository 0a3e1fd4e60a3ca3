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

namespace tensor::cpu {
/// out[b] = alpha * (a[b] @ w[b]) + beta * out[b] + bias, for 3-D a [B or 1, n, k], w [B or 1,
/// k, m] (any strides; a batch stride of 0 broadcasts) and a contiguous out [B, n, m]; bias is
/// [m] or undefined. 2-D a, w and out are a batch of one (no unsqueezed views per call). With beta == 0 the old contents of out are ignored (NaN included).
/// float32 and bfloat16 run on oneDNN, float16 in float32, other dtypes on the reference loops.
void matmul(const char* op, const Tensor& a, const Tensor& w, const Tensor& bias, const Tensor& out,
            const Scalar& alpha, const Scalar& beta);
/// The plain-loop reference of the same contract, for any dtype but bool (tests use it too).
void matmul_reference(const char* op, const Tensor& a, const Tensor& w, const Tensor& bias, const Tensor& out,
                      const Scalar& alpha, const Scalar& beta);
}  // namespace tensor::cpu
