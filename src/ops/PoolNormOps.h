// Internal: dispatcher tables of pooling and normalization. Their kernels: src/cpu/PoolNorm.h
// (oneDNN) and kernels/cpu/PoolNormKernels.h (plain loops, and the pooling geometry Pool2d the
// front ends compute once).
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
