// Internal: dispatcher tables of pooling and normalization, and their backend kernels (Note
// [Front ends and backend kernels]). CPU's kernels: src/cpu/PoolNorm.h (the entries, which pick
// oneDNN or the plain loops of kernels/cpu/PoolNormKernels.h). The pooling geometry the front
// ends compute once, Pool2d and Pool3d, is the backend-neutral kernels/PoolNorm.h.
#pragma once

#include <optional>
#include <tuple>

#include "kernels/PoolNorm.h"
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
/// adaptive_max_pool3d: (input, output_size) -> (values, int64 indices flat over D * H * W).
using AdaptiveMaxPoolFn = std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef);
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
  /// (input, kernel, stride, padding, dilation, ceil_mode) on (N, C, D, H, W) or (C, D, H, W).
  dispatch::OpDef<MaxPoolIdxFn> max_pool3d_with_indices;
  dispatch::OpDef<AdaptiveMaxPoolFn> adaptive_max_pool3d;
};

/// The one table of pooling and normalization ops.
PoolNormOpDefs& pool_norm_ops();

// Composites of the ops above (Note [3-d pooling by composition] in PoolNormOps.cpp): the same
// function in every backend slot, no Autograd kernel (their pieces record).
dispatch::OpDef<MaxPoolFn>& max_pool3d_op();
dispatch::OpDef<AvgPoolFn>& avg_pool3d_op();
dispatch::OpDef<AdaptivePoolFn>& adaptive_avg_pool3d_op();
dispatch::OpDef<AdaptiveMaxPoolFn>& adaptive_max_pool2d_op();

// ---- backend kernels (called after the front end's checks; never on meta tensors) ----
/// A backend's kernels, one per op (undefined Tensor = absent weight or bias). Pooling kernels
/// get a non-empty input (3-d unbatched or 4-d) and the front end's geometry; those returning a
/// Tensor allocate their result, whose layout may follow the backend's choice of kernel.
struct PoolNormKernels {
  /// -> the pooled values, x's dim.
  Tensor (*max_pool2d)(const Tensor& x, const kernels::Pool2d& g) = nullptr;
  /// -> (values, int64 flat H * W indices), x's dim.
  std::tuple<Tensor, Tensor> (*max_pool2d_with_indices)(const Tensor& x, const kernels::Pool2d& g) = nullptr;
  /// grad_input (non-empty, the input's sizes, contiguous) = grad scattered to the indices.
  void (*max_pool2d_backward)(const Tensor& grad, const Tensor& indices, const kernels::Pool2d& g,
                              const Tensor& grad_input) = nullptr;
  Tensor (*avg_pool2d)(const Tensor& x, const kernels::Pool2d& g) = nullptr;
  /// grad non-empty -> the gradient of the input's sizes.
  Tensor (*avg_pool2d_backward)(const Tensor& grad, IntArrayRef in_sizes, const kernels::Pool2d& g) = nullptr;
  /// Non-empty output (g: sizes only).
  Tensor (*adaptive_avg_pool2d)(const Tensor& x, const kernels::Pool2d& g) = nullptr;
  /// Fills grad_input (non-empty, contiguous); grad may be empty.
  void (*adaptive_avg_pool2d_backward)(const Tensor& grad, const kernels::Pool2d& g,
                                       const Tensor& grad_input) = nullptr;
  /// -> out; fills mean/var (allocated by the front end: the statistics used) and updates the
  /// running statistics in training. x may be empty.
  Tensor (*batch_norm)(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& running_mean,
                       const Tensor& running_var, bool training, double momentum, double eps, const Tensor& mean,
                       const Tensor& var) = nullptr;
  /// -> grad_input; fills grad_weight (may be undefined) and grad_bias. x may be empty.
  Tensor (*batch_norm_backward)(const Tensor& grad, const Tensor& x, const Tensor& w, const Tensor& mean,
                                const Tensor& var, bool training, double eps, const Tensor& grad_weight,
                                const Tensor& grad_bias) = nullptr;
  /// x (non-empty) viewed as (rows, cols): fills out, mean and var.
  void (*layer_norm)(const Tensor& x, int64_t rows, int64_t cols, const Tensor& w, const Tensor& b, double eps,
                     const Tensor& out, const Tensor& mean, const Tensor& var) = nullptr;
  /// Fills grad_input, grad_weight (may be undefined) and grad_bias ([cols]); x may be empty.
  void (*layer_norm_backward)(const Tensor& grad, const Tensor& x, int64_t rows, int64_t cols, const Tensor& w,
                              const Tensor& mean, const Tensor& var, double eps, const Tensor& grad_input,
                              const Tensor& grad_weight, const Tensor& grad_bias) = nullptr;
  /// x (non-empty, (N, C, *)): fills out, mean and var ([N * groups]).
  void (*group_norm)(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps,
                     const Tensor& out, const Tensor& mean, const Tensor& var) = nullptr;
  /// Fills grad_input, grad_weight (may be undefined) and grad_bias; x may be empty.
  void (*group_norm_backward)(const Tensor& grad, const Tensor& x, int64_t groups, const Tensor& w,
                              const Tensor& mean, const Tensor& var, double eps, const Tensor& grad_input,
                              const Tensor& grad_weight, const Tensor& grad_bias) = nullptr;
  /// -> (values, int64 flat D * H * W indices), x's dim (4 or 5), x non-empty.
  std::tuple<Tensor, Tensor> (*max_pool3d_with_indices)(const Tensor& x, const kernels::Pool3d& g) = nullptr;
  /// -> (values, int64 flat D * H * W indices), x's dim; x and the output non-empty.
  std::tuple<Tensor, Tensor> (*adaptive_max_pool3d)(const Tensor& x, const kernels::Pool3d& g) = nullptr;
};
using MaxPoolKernel = decltype(PoolNormKernels::max_pool2d);
using MaxPoolIdxKernel = decltype(PoolNormKernels::max_pool2d_with_indices);
using MaxPoolBwdKernel = decltype(PoolNormKernels::max_pool2d_backward);
using AvgPoolKernel = decltype(PoolNormKernels::avg_pool2d);
using AvgPoolBwdKernel = decltype(PoolNormKernels::avg_pool2d_backward);
using AdaptivePoolKernel = decltype(PoolNormKernels::adaptive_avg_pool2d);
using AdaptivePoolBwdKernel = decltype(PoolNormKernels::adaptive_avg_pool2d_backward);
using BatchNormKernel = decltype(PoolNormKernels::batch_norm);
using BatchNormBwdKernel = decltype(PoolNormKernels::batch_norm_backward);
using LayerNormKernel = decltype(PoolNormKernels::layer_norm);
using LayerNormBwdKernel = decltype(PoolNormKernels::layer_norm_backward);
using GroupNormKernel = decltype(PoolNormKernels::group_norm);
using GroupNormBwdKernel = decltype(PoolNormKernels::group_norm_backward);
using MaxPool3dIdxKernel = decltype(PoolNormKernels::max_pool3d_with_indices);
using AdaptiveMaxPoolKernel = decltype(PoolNormKernels::adaptive_max_pool3d);

/// Registers a backend's (CUDA's) kernels: each op whose kernel is given routes to it; the
/// others keep an empty slot (the dispatcher's "no kernel" error).
void register_kernels(DispatchKey backend, const PoolNormKernels& kernels);

}  // namespace tensor::ops
