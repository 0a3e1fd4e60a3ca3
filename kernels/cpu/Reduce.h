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

/// out[r] = entry t[r] of the log_softmax of the contiguous row x[r n, (r + 1) n) for r < rows
/// (0 <= t[r] < n), the value softmax_kernel's log_softmax writes there, without writing the
/// rows (the fused cross_entropy of Note [Fused CPU losses] in kernels/cpu/LossKernels.h).
void log_softmax_at(const float* x, int64_t rows, int64_t n, const int64_t* t, float* out);
void log_softmax_at(const double* x, int64_t rows, int64_t n, const int64_t* t, double* out);

/// One float32 layer_norm row of n values (n >= 1): mean and biased var of x, then
/// y = (x - mean) / sqrt(var + eps) * w + b, w and b optional (null). Vectorized for the CPU's
/// widest ISA (the plain loops of kernels/cpu/PoolNormKernels.cpp are built for the baseline).
void layer_norm_row(const float* x, float* y, int64_t n, const float* w, const float* b, double eps, double& mean,
                    double& var);

/// float32 row loops of the normalization and pooling loops (kernels/cpu/PoolNormKernels.cpp,
/// built for the baseline ISA), vectorized for the CPU's widest: sums accumulate in float
/// vectors over blocks of 1024 elements, added into double (Note [Cascade summation]).
namespace rows {
/// The sum of x[0, n).
double sum_f32(const float* x, int64_t n);
/// The sums of d and d * d, d = x - m.
void sum_dev_f32(const float* x, int64_t n, float m, double& sd, double& sq);
/// The sums of g * x and of g.
void sum_gx_f32(const float* g, const float* x, int64_t n, double& sgx, double& sg);
/// y = x * scale + shift.
void affine_f32(const float* x, float* y, int64_t n, float scale, float shift);
/// y = a * g + b * x + e.
void axpbypc_f32(const float* g, const float* x, float* y, int64_t n, float a, float b, float e);
/// out[r] = the mean of row r of the contiguous [rows, n] block x (n >= 1), for short rows
/// (global pooling's planes) without a call per row.
void row_means_f32(const float* x, int64_t rows, int64_t n, float* out);
/// y = log(1 + e^-x) = max(-x, 0) + log1p(e^-|x|) (never overflowing; NaN stays NaN), float32
/// or float64: the fused binary_cross_entropy_with_logits of kernels/cpu/LossKernels.h.
void softplus_neg(const float* x, float* y, int64_t n);
void softplus_neg(const double* x, double* y, int64_t n);
}  // namespace rows

}  // namespace tensor::cpu
