// Internal: dispatcher tables of pooling and normalization, the pooling geometry the front ends
// compute once, and the CPU kernels behind them (oneDNN in src/cpu/Pooling.cpp and
// src/cpu/Normalization.cpp, plain loops in src/cpu/PoolNormRef.cpp).
#pragma once

#include <optional>
#include <tuple>

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

// ---- signatures (undefined Tensor = absent weight, bias or statistic) ----
/// max_pool2d: (input, kernel, stride, padding, dilation, ceil_mode).
using MaxPoolFn = Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool);
using MaxPoolIdxFn = std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef,
                                                bool);
/// avg_pool2d: (input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override).
using AvgPoolFn = Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool, std::optional<int64_t>);
/// avg_pool2d_backward: (grad_output, input sizes, the forward's arguments). Linear in grad_output.
using AvgPoolBwdFn = Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool,
                            std::optional<int64_t>);
/// adaptive_avg_pool2d: (input, output_size); its backward: (grad_output, input sizes).
using AdaptivePoolFn = Tensor(const Tensor&, IntArrayRef);
using AdaptivePoolBwdFn = Tensor(const Tensor&, IntArrayRef);
/// max_pool2d backward: (grad_output, input sizes, indices): the gradient scattered to the indices.
using MaxPoolBwdFn = Tensor(const Tensor&, IntArrayRef, const Tensor&);

/// Normalizations return (output, mean, var): the statistics used (biased variance), float32
/// for float32/bfloat16/float16 inputs and float64 for float64, for the backward.
using NormResult = std::tuple<Tensor, Tensor, Tensor>;
/// batch_norm: (input, weight, bias, running_mean, running_var, training, momentum, eps).
using BatchNormFn = NormResult(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double,
                               double);
/// batch_norm backward: (grad, input, weight, mean, var, training, eps) -> (grad input, weight, bias).
using BatchNormBwdFn = NormResult(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double);
/// layer_norm: (input, normalized_shape, weight, bias, eps).
using LayerNormFn = NormResult(const Tensor&, IntArrayRef, const Tensor&, const Tensor&, double);
/// layer_norm backward: (grad, input, normalized_shape, weight, mean, var, eps).
using LayerNormBwdFn = NormResult(const Tensor&, const Tensor&, IntArrayRef, const Tensor&, const Tensor&, const Tensor&,
                                  double);
/// group_norm: (input, num_groups, weight, bias, eps).
using GroupNormFn = NormResult(const Tensor&, int64_t, const Tensor&, const Tensor&, double);
/// group_norm backward: (grad, input, num_groups, weight, mean, var, eps).
using GroupNormBwdFn = NormResult(const Tensor&, const Tensor&, int64_t, const Tensor&, const Tensor&, const Tensor&,
                                  double);

struct PoolNormOpDefs {
  dispatch::OpDef<MaxPoolFn> max_pool2d;
  dispatch::OpDef<MaxPoolIdxFn> max_pool2d_with_indices;
  dispatch::OpDef<MaxPoolBwdFn> max_pool2d_backward;
  dispatch::OpDef<AvgPoolFn> avg_pool2d;
  dispatch::OpDef<AvgPoolBwdFn> avg_pool2d_backward;
  dispatch::OpDef<AdaptivePoolFn> adaptive_avg_pool2d;
  dispatch::OpDef<AdaptivePoolBwdFn> adaptive_avg_pool2d_backward;
  dispatch::OpDef<BatchNormFn> batch_norm;
  dispatch::OpDef<BatchNormBwdFn> batch_norm_backward;
  dispatch::OpDef<LayerNormFn> layer_norm;
  dispatch::OpDef<LayerNormBwdFn> layer_norm_backward;
  dispatch::OpDef<GroupNormFn> group_norm;
  dispatch::OpDef<GroupNormBwdFn> group_norm_backward;
};

/// The one table of pooling and normalization ops.
PoolNormOpDefs& pool_norm_ops();

}  // namespace tensor::ops

namespace tensor::cpu {

/// One 2-d pooling problem over `planes` = N * C planes, after the front end's checks.
struct Pool2d {
  int64_t n = 1, c = 1, ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false, count_include_pad = true;
  int64_t divisor = 0;  // divisor_override; 0 = none
  int64_t planes() const { return n * c; }
};

// ---- plain loops (src/cpu/PoolNormRef.cpp): any floating dtype, inputs made contiguous ----
// They are the float64 path, the fallback where oneDNN lacks a dtype or a mode, and the
// reference the tests compare against. Accumulation is in double for float64, float otherwise.
namespace ref {
/// x: (N, C, H, W) -> values and indices (either may be undefined: not wanted).
void max_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out, const Tensor& indices);
/// grad_input (zeroed here) += grad_output at the indices.
void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Pool2d& p, const Tensor& grad_in);
void avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out);
void avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in);
/// Adaptive: p holds the sizes only (ih, iw, oh, ow).
void adaptive_avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out);
void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in);

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
}  // namespace ref

// ---- oneDNN (float32, bfloat16) ----
namespace onednn {
/// Can oneDNN pool this tensor in place as it lies (dtype, contiguous or channels-last)?
bool pool_layout_ok(const Tensor& x);
/// Max pooling without indices (forward_inference); out in x's layout.
void max_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out);
/// Average pooling with oneDNN's include/exclude padding (callers check that the divisor
/// matches libtorch's, Note [Average pooling divisors]).
void avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out);
void avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in);

/// batch_norm forward: training computes mean/var into the given float32 tensors, otherwise
/// reads them. w, b: float32 or undefined.
void batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& mean, const Tensor& var,
                bool training, double eps, const Tensor& out);
/// Training-mode backward (batch statistics).
void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& var,
                         double eps, const Tensor& gx, const Tensor& gw, const Tensor& gb);
/// x: contiguous, viewed as (rows, cols).
void layer_norm(const Tensor& x, int64_t rows, int64_t cols, const Tensor& w, const Tensor& b, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& var);
void layer_norm_backward(const Tensor& g, const Tensor& x, int64_t rows, int64_t cols, const Tensor& w,
                         const Tensor& mean, const Tensor& var, double eps, const Tensor& gx, const Tensor& gw,
                         const Tensor& gb);
}  // namespace onednn

}  // namespace tensor::cpu
