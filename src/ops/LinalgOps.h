// Internal: dispatcher tables of the matrix products, so that wrapping layers (autograd,
// profiler, CUDA) can fill their slots and backends can register kernels (Note [Front ends and
// backend kernels]). matmul, dot, outer and einsum are composites of these
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

/// Backend kernel of mm, bmm, addmm and linear (the contract of cpu::matmul, src/cpu/Matmul.h):
/// out[b] = alpha * (a[b] @ w[b]) + beta * out[b] + bias, for 2-D or 3-D a and w (any strides; a
/// batch stride of 0 broadcasts), a contiguous out allocated by the front end and a bias of [m]
/// or undefined. `op` names the op in errors.
using MatmulKernel = void (*)(const char* op, const Tensor& a, const Tensor& w, const Tensor& bias, const Tensor& out,
                              const Scalar& alpha, const Scalar& beta);

struct LinalgOpDefs {
  dispatch::OpDef<MmFn> mm, bmm;
  dispatch::OpDef<AddmmFn> addmm;
  dispatch::OpDef<LinearFn> linear;
};

/// The one table of matrix-product ops.
LinalgOpDefs& linalg_ops();

/// Registers a backend's (CUDA's) matmul kernel: mm, bmm, addmm and linear share it.
TENSOR_API void register_kernel(DispatchKey backend, MatmulKernel kernel);

}  // namespace tensor::ops
