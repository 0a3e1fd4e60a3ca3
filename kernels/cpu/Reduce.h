// Internal: CPU reduction, scan and softmax kernels (Note [Reduction kernels]). Each does what
// its backend-neutral contract says (Note [Reduction kernel contracts] in kernels/Reduce.h):
// the front ends in src/ops/ReduceOps.cpp check arguments, pick dtypes and allocate outputs;
// these only loop.
#pragma once

#include <cstdint>

#include "kernels/Reduce.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

// The contract's enum, under the name the CPU code uses.
using kernels::ReduceOp;

/// CPU's ReduceKernel: out = op over the dims of `in` whose bit is set in `mask`.
void reduce_kernel(ReduceOp op, const Tensor& in, uint64_t mask, const Tensor& out);

/// out = sqrt(sum of in^2) over the dims of `in` whose bit is set in `mask`, in one pass
/// (Note [Fused 2-norm]): float32 or float64, `out` of in's dtype, shaped as for reduce_kernel.
/// A CPU fast path of norm's front end, not a backend kernel of the dispatcher.
void norm2_kernel(const Tensor& in, uint64_t mask, const Tensor& out);

/// CPU's ArgReduceKernel: the max (is_max) or min of `in` along `dim`, and its first position.
void arg_reduce_kernel(bool is_max, const Tensor& in, int64_t dim, const Tensor& values, const Tensor& indices);

/// CPU's CumulativeKernel: inclusive running sum or product along `dim`.
void cumulative_kernel(bool is_prod, const Tensor& in, int64_t dim, const Tensor& out);

/// CPU's SoftmaxKernel: softmax (or log_softmax) along `dim`.
void softmax_kernel(const Tensor& in, int64_t dim, bool log, const Tensor& out);

}  // namespace tensor::cpu
