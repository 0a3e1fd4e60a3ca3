// Internal: the plain-loop pooling and normalization kernels (kernels/cpu/PoolNormKernels.cpp):
// any floating dtype, inputs made contiguous. They are the production path for float64, the
// fallback where oneDNN lacks a dtype or a mode (group_norm always), and the reference the tests
// compare against. Accumulation is in double for float64, float otherwise.
#pragma once

#include <cstdint>

#include "kernels/PoolNorm.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

// The contract's pooling geometry (kernels/PoolNorm.h), under the names the CPU code uses.
using kernels::Pool2d;
using kernels::Pool3d;

namespace loops {
/// x: (N, C, H, W) -> values and indices (either may be undefined: not wanted).
void max_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out, const Tensor& indices);
/// grad_input (zeroed here) += grad_output at the indices.
void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Pool2d& p, const Tensor& grad_in);
void avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out);
void avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in);
/// Adaptive: p holds the sizes only (ih, iw, oh, ow).
void adaptive_avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out);
void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in);
/// x: (N, C, D, H, W) -> values and int64 indices flat over D * H * W (both defined).
void max_pool3d(const Tensor& x, const Pool3d& p, const Tensor& out, const Tensor& indices);
/// x: (N, C, D, H, W) -> the max of each adaptive window and its flat index (both defined).
void adaptive_max_pool3d(const Tensor& x, const Pool3d& p, const Tensor& out, const Tensor& indices);

/// Normalization of x viewed as (outer, groups, inner) with per-channel affine parameters:
/// statistics over `axes`. One layout covers the three ops:
///   batch_norm: stats per channel over (N, spatial); layer_norm: per row over the trailing
///   block; group_norm: per (n, group) over (C / G, spatial).
/// x: contiguous input. mean/var: the statistics (computed when `compute_stats`, else read).
void batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& mean, const Tensor& var,
                bool compute_stats, double eps, const Tensor& out);
void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& var,
                         bool training, double eps, const Tensor& gx, const Tensor& gw, const Tensor& gb);
/// x viewed as (rows, cols): normalize each row; w, b have cols elements.
void layer_norm(const Tensor& x, int64_t rows, int64_t cols, const Tensor& w, const Tensor& b, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& var);
void layer_norm_backward(const Tensor& g, const Tensor& x, int64_t rows, int64_t cols, const Tensor& w,
                         const Tensor& mean, const Tensor& var, double eps, const Tensor& gx, const Tensor& gw,
                         const Tensor& gb);
/// x: (N, C, S) with C divisible by groups.
void group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps, const Tensor& out,
                const Tensor& mean, const Tensor& var);
void group_norm_backward(const Tensor& g, const Tensor& x, int64_t groups, const Tensor& w, const Tensor& mean,
                         const Tensor& var, double eps, const Tensor& gx, const Tensor& gw, const Tensor& gb);
}  // namespace loops

}  // namespace tensor::cpu
