// Internal: the plain-loop pooling and normalization kernels (kernels/cpu/PoolNormKernels.cpp):
// any floating dtype, inputs made contiguous. They are the production path for float64, the
// fallback where oneDNN lacks a dtype or a mode (group_norm always), and the reference the tests
// compare against. Accumulation is in double for float64, float otherwise.
#pragma once

#include <cstdint>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// One 2-d pooling problem over `planes` = N * C planes, after the front end's checks.
struct Pool2d {
  int64_t n = 1, c = 1, ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false, count_include_pad = true;
  int64_t divisor = 0;  // divisor_override; 0 = none
  int64_t planes() const { return n * c; }
};

/// One 3-d pooling problem over `planes` = N * C planes of D * H * W. Adaptive pooling uses
/// the sizes only; 2-d adaptive max pooling is the 3-d one with id = od = 1.
struct Pool3d {
  int64_t n = 1, c = 1, id = 0, ih = 0, iw = 0, od = 0, oh = 0, ow = 0;
  int64_t kd = 1, kh = 1, kw = 1, sd = 1, sh = 1, sw = 1, pd = 0, ph = 0, pw = 0, dd = 1, dh = 1, dw = 1;
  int64_t planes() const { return n * c; }
  int64_t in_plane() const { return id * ih * iw; }
  int64_t out_plane() const { return od * oh * ow; }
};

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
