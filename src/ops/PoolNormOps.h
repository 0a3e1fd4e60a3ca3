// Internal: dispatcher tables of pooling and normalization, the pooling geometry the front ends
// compute once, and the oneDNN kernels behind them (src/cpu/Pooling.cpp and
// src/cpu/Normalization.cpp); the plain loops are declared in kernels/cpu/PoolNormKernels.h.
#pragma once

#include <optional>
#include <tuple>

#include "kernels/cpu/PoolNormKernels.h"
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
