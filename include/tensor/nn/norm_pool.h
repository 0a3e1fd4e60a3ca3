// Pooling and normalization modules and their nn::functional forms, as libtorch's
// torch::nn::{MaxPool2d/3d, AvgPool2d/3d, AdaptiveAvgPool2d/3d, AdaptiveMaxPool2d/3d,
// LPPool2d/3d, BatchNorm1d/2d/3d, LayerNorm, GroupNorm} and their F:: functions. They run on the ops of tensor/pooling.h and tensor/normalization.h.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <tuple>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/expanding_array.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

// ---- options ----

/// nn::MaxPool2d / F::max_pool2d. stride defaults to kernel_size.
struct MaxPool2dOptions {
  MaxPool2dOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<2>, kernel_size);
  TENSOR_ARG(ExpandingArray<2>, stride);
  TENSOR_ARG(ExpandingArray<2>, padding) = 0;
  TENSOR_ARG(ExpandingArray<2>, dilation) = 1;
  TENSOR_ARG(bool, ceil_mode) = false;
};

/// nn::AvgPool2d / F::avg_pool2d. stride defaults to kernel_size.
struct AvgPool2dOptions {
  AvgPool2dOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<2>, kernel_size);
  TENSOR_ARG(ExpandingArray<2>, stride);
  TENSOR_ARG(ExpandingArray<2>, padding) = 0;
  TENSOR_ARG(bool, ceil_mode) = false;
  /// Count padded zeros in the divisor.
  TENSOR_ARG(bool, count_include_pad) = true;
  /// Divide by this instead of the window size.
  TENSOR_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

/// nn::AdaptiveAvgPool2d / F::adaptive_avg_pool2d: the output's {H, W}.
struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(ExpandingArray<2> output_size) : output_size_(output_size) {}
  TENSOR_ARG(ExpandingArray<2>, output_size);
};

/// nn::MaxPool3d / F::max_pool3d. stride defaults to kernel_size.
struct MaxPool3dOptions {
  MaxPool3dOptions(ExpandingArray<3> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<3>, kernel_size);
  TENSOR_ARG(ExpandingArray<3>, stride);
  TENSOR_ARG(ExpandingArray<3>, padding) = 0;
  TENSOR_ARG(ExpandingArray<3>, dilation) = 1;
  TENSOR_ARG(bool, ceil_mode) = false;
};

/// nn::AvgPool3d / F::avg_pool3d. stride defaults to kernel_size.
struct AvgPool3dOptions {
  AvgPool3dOptions(ExpandingArray<3> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<3>, kernel_size);
  TENSOR_ARG(ExpandingArray<3>, stride);
  TENSOR_ARG(ExpandingArray<3>, padding) = 0;
  TENSOR_ARG(bool, ceil_mode) = false;
  /// Count padded zeros in the divisor.
  TENSOR_ARG(bool, count_include_pad) = true;
  /// Divide by this instead of the window size.
  TENSOR_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

/// nn::AdaptiveAvgPool3d / F::adaptive_avg_pool3d: the output's {D, H, W}.
struct AdaptiveAvgPool3dOptions {
  AdaptiveAvgPool3dOptions(ExpandingArray<3> output_size) : output_size_(output_size) {}
  TENSOR_ARG(ExpandingArray<3>, output_size);
};

/// nn::AdaptiveMaxPool2d / F::adaptive_max_pool2d: the output's {H, W}.
struct AdaptiveMaxPool2dOptions {
  AdaptiveMaxPool2dOptions(ExpandingArray<2> output_size) : output_size_(output_size) {}
  TENSOR_ARG(ExpandingArray<2>, output_size);
};

/// nn::AdaptiveMaxPool3d / F::adaptive_max_pool3d: the output's {D, H, W}.
struct AdaptiveMaxPool3dOptions {
  AdaptiveMaxPool3dOptions(ExpandingArray<3> output_size) : output_size_(output_size) {}
  TENSOR_ARG(ExpandingArray<3>, output_size);
};

/// nn::LPPool2d / F::lp_pool2d: power-average pooling of order norm_type. stride defaults to
/// kernel_size; no padding.
struct LPPool2dOptions {
  LPPool2dOptions(double norm_type, ExpandingArray<2> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(double, norm_type);
  TENSOR_ARG(ExpandingArray<2>, kernel_size);
  TENSOR_ARG(ExpandingArray<2>, stride);
  TENSOR_ARG(bool, ceil_mode) = false;
};

/// nn::LPPool3d / F::lp_pool3d, as LPPool2dOptions over {d, h, w}.
struct LPPool3dOptions {
  LPPool3dOptions(double norm_type, ExpandingArray<3> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(double, norm_type);
  TENSOR_ARG(ExpandingArray<3>, kernel_size);
  TENSOR_ARG(ExpandingArray<3>, stride);
  TENSOR_ARG(bool, ceil_mode) = false;
};

/// nn::BatchNorm1d / nn::BatchNorm2d / nn::BatchNorm3d.
struct BatchNormOptions {
  /* implicit */ BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  TENSOR_ARG(int64_t, num_features);
  TENSOR_ARG(double, eps) = 1e-5;
  /// Weight of the batch in the running statistics; nullopt = cumulative average over batches.
  TENSOR_ARG(std::optional<double>, momentum) = 0.1;
  /// Learnable per-channel weight (ones) and bias (zeros).
  TENSOR_ARG(bool, affine) = true;
  /// Keep running_mean / running_var buffers (used in eval); without them eval uses batch stats.
  TENSOR_ARG(bool, track_running_stats) = true;
};

/// nn::LayerNorm: normalizes over the trailing dims normalized_shape.
struct LayerNormOptions {
  /* implicit */ LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  TENSOR_ARG(std::vector<int64_t>, normalized_shape);
  TENSOR_ARG(double, eps) = 1e-5;
  /// Learnable elementwise weight (ones) and bias (zeros) of shape normalized_shape.
  TENSOR_ARG(bool, elementwise_affine) = true;
};

/// nn::GroupNorm: num_groups groups over num_channels channels.
struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  TENSOR_ARG(int64_t, num_groups);
  TENSOR_ARG(int64_t, num_channels);
  TENSOR_ARG(double, eps) = 1e-5;
  TENSOR_ARG(bool, affine) = true;
};

namespace functional {

using MaxPool2dFuncOptions = MaxPool2dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;
using MaxPool3dFuncOptions = MaxPool3dOptions;
using AvgPool3dFuncOptions = AvgPool3dOptions;
using AdaptiveAvgPool3dFuncOptions = AdaptiveAvgPool3dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;
using AdaptiveMaxPool3dFuncOptions = AdaptiveMaxPool3dOptions;
using LPPool2dFuncOptions = LPPool2dOptions;
using LPPool3dFuncOptions = LPPool3dOptions;

struct BatchNormFuncOptions {
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(Tensor, bias) = Tensor();
  /// Use the batch statistics (and update the running ones when given).
  TENSOR_ARG(bool, training) = false;
  TENSOR_ARG(std::optional<double>, momentum) = 0.1;
  TENSOR_ARG(double, eps) = 1e-5;
};

struct LayerNormFuncOptions {
  /* implicit */ LayerNormFuncOptions(std::vector<int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  TENSOR_ARG(std::vector<int64_t>, normalized_shape);
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(Tensor, bias) = Tensor();
  TENSOR_ARG(double, eps) = 1e-5;
};

struct GroupNormFuncOptions {
  /* implicit */ GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  TENSOR_ARG(int64_t, num_groups);
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(Tensor, bias) = Tensor();
  TENSOR_ARG(double, eps) = 1e-5;
};

/// tensor::max_pool2d with the options' kernel, stride, padding, dilation and ceil_mode.
TENSOR_API Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
/// tensor::avg_pool2d with the options.
TENSOR_API Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
/// tensor::adaptive_avg_pool2d to options.output_size().
TENSOR_API Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options);
/// tensor::max_pool3d with the options' kernel, stride, padding, dilation and ceil_mode.
TENSOR_API Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& options);
/// tensor::max_pool3d_with_indices: (values, indices flat over each plane's D * H * W).
TENSOR_API std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& options);
/// tensor::avg_pool3d with the options.
TENSOR_API Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& options);
/// tensor::adaptive_avg_pool3d to options.output_size().
TENSOR_API Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& options);
/// The values of tensor::adaptive_max_pool2d.
TENSOR_API Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options);
/// tensor::adaptive_max_pool2d: (values, indices flat over each plane's H * W).
TENSOR_API std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                                       const AdaptiveMaxPool2dFuncOptions& options);
/// The values of tensor::adaptive_max_pool3d.
TENSOR_API Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options);
/// tensor::adaptive_max_pool3d: (values, indices flat over each plane's D * H * W).
TENSOR_API std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                                       const AdaptiveMaxPool3dFuncOptions& options);
/// libtorch's lp_pool2d: out = avg_pool2d(input^p) (no padding, count_include_pad), then
/// (sign(out) * relu(|out|) * kh * kw)^(1 / p).
TENSOR_API Tensor lp_pool2d(const Tensor& input, const LPPool2dFuncOptions& options);
/// lp_pool2d over {d, h, w}: the factor is kd * kh * kw.
TENSOR_API Tensor lp_pool3d(const Tensor& input, const LPPool3dFuncOptions& options);
/// tensor::batch_norm; running_mean / running_var may be undefined when training.
TENSOR_API Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                             const BatchNormFuncOptions& options = {});
/// tensor::layer_norm over options.normalized_shape().
TENSOR_API Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);
/// tensor::group_norm with options.num_groups().
TENSOR_API Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options);

}  // namespace functional

// ---- pooling modules ----

/// Max over kernel windows of an (N, C, H, W) or (C, H, W) input.
class TENSOR_API MaxPool2dImpl : public Module {
 public:
  MaxPool2dImpl(ExpandingArray<2> kernel_size) : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
  explicit MaxPool2dImpl(const MaxPool2dOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  MaxPool2dOptions options;
};
TENSOR_MODULE(MaxPool2d);

/// Mean over kernel windows of an (N, C, H, W) or (C, H, W) input.
class TENSOR_API AvgPool2dImpl : public Module {
 public:
  AvgPool2dImpl(ExpandingArray<2> kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  explicit AvgPool2dImpl(const AvgPool2dOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AvgPool2dOptions options;
};
TENSOR_MODULE(AvgPool2d);

/// Mean over windows that tile the input into output_size cells.
class TENSOR_API AdaptiveAvgPool2dImpl : public Module {
 public:
  AdaptiveAvgPool2dImpl(ExpandingArray<2> output_size) : AdaptiveAvgPool2dImpl(AdaptiveAvgPool2dOptions(output_size)) {}
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptiveAvgPool2dOptions options;
};
TENSOR_MODULE(AdaptiveAvgPool2d);

/// Max over kernel windows of an (N, C, D, H, W) or (C, D, H, W) input.
class TENSOR_API MaxPool3dImpl : public Module {
 public:
  MaxPool3dImpl(ExpandingArray<3> kernel_size) : MaxPool3dImpl(MaxPool3dOptions(kernel_size)) {}
  explicit MaxPool3dImpl(const MaxPool3dOptions& options);
  Tensor forward(const Tensor& input);
  /// The pooled values and each maximum's index flat over its plane's D * H * W.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  MaxPool3dOptions options;
};
TENSOR_MODULE(MaxPool3d);

/// Mean over kernel windows of an (N, C, D, H, W) or (C, D, H, W) input.
class TENSOR_API AvgPool3dImpl : public Module {
 public:
  AvgPool3dImpl(ExpandingArray<3> kernel_size) : AvgPool3dImpl(AvgPool3dOptions(kernel_size)) {}
  explicit AvgPool3dImpl(const AvgPool3dOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AvgPool3dOptions options;
};
TENSOR_MODULE(AvgPool3d);

/// Mean over windows that tile a 5-d (or unbatched 4-d) input into output_size cells.
class TENSOR_API AdaptiveAvgPool3dImpl : public Module {
 public:
  AdaptiveAvgPool3dImpl(ExpandingArray<3> output_size) : AdaptiveAvgPool3dImpl(AdaptiveAvgPool3dOptions(output_size)) {}
  explicit AdaptiveAvgPool3dImpl(const AdaptiveAvgPool3dOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptiveAvgPool3dOptions options;
};
TENSOR_MODULE(AdaptiveAvgPool3d);

/// Max over windows that tile an (N, C, H, W) or (C, H, W) input into output_size cells.
class TENSOR_API AdaptiveMaxPool2dImpl : public Module {
 public:
  AdaptiveMaxPool2dImpl(ExpandingArray<2> output_size) : AdaptiveMaxPool2dImpl(AdaptiveMaxPool2dOptions(output_size)) {}
  explicit AdaptiveMaxPool2dImpl(const AdaptiveMaxPool2dOptions& options);
  Tensor forward(const Tensor& input);
  /// The pooled values and each maximum's index flat over its plane's H * W.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptiveMaxPool2dOptions options;
};
TENSOR_MODULE(AdaptiveMaxPool2d);

/// Max over windows that tile an (N, C, D, H, W) or (C, D, H, W) input into output_size cells.
class TENSOR_API AdaptiveMaxPool3dImpl : public Module {
 public:
  AdaptiveMaxPool3dImpl(ExpandingArray<3> output_size) : AdaptiveMaxPool3dImpl(AdaptiveMaxPool3dOptions(output_size)) {}
  explicit AdaptiveMaxPool3dImpl(const AdaptiveMaxPool3dOptions& options);
  Tensor forward(const Tensor& input);
  /// The pooled values and each maximum's index flat over its plane's D * H * W.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptiveMaxPool3dOptions options;
};
TENSOR_MODULE(AdaptiveMaxPool3d);

/// Power-average pooling (F::lp_pool2d) of an (N, C, H, W) or (C, H, W) input.
class TENSOR_API LPPool2dImpl : public Module {
 public:
  LPPool2dImpl(double norm_type, ExpandingArray<2> kernel_size) : LPPool2dImpl(LPPool2dOptions(norm_type, kernel_size)) {}
  explicit LPPool2dImpl(const LPPool2dOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LPPool2dOptions options;
};
TENSOR_MODULE(LPPool2d);

/// Power-average pooling (F::lp_pool3d) of an (N, C, D, H, W) or (C, D, H, W) input.
class TENSOR_API LPPool3dImpl : public Module {
 public:
  LPPool3dImpl(double norm_type, ExpandingArray<3> kernel_size) : LPPool3dImpl(LPPool3dOptions(norm_type, kernel_size)) {}
  explicit LPPool3dImpl(const LPPool3dOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LPPool3dOptions options;
};
TENSOR_MODULE(LPPool3d);

// ---- normalization modules ----

/// Shared by BatchNorm1d and BatchNorm2d (libtorch's BatchNormImplBase). Parameters weight
/// (ones) and bias (zeros) when affine; buffers running_mean (zeros), running_var (ones) and
/// num_batches_tracked (int64 0-dim) when track_running_stats. Training normalizes with the
/// batch statistics and updates the running ones; eval uses the running ones.
class TENSOR_API BatchNormImplBase : public Module {
 public:
  BatchNormImplBase(const BatchNormOptions& options, std::string name, int64_t min_dim, int64_t max_dim);
  void reset();
  /// Running statistics back to zeros / ones / 0.
  void reset_running_stats();
  /// Weight to ones, bias to zeros, and reset_running_stats().
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  BatchNormOptions options;
  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;

 private:
  int64_t min_dim_, max_dim_;
};

/// Batch norm over the C of (N, C) or (N, C, L) inputs.
class TENSOR_API BatchNorm1dImpl : public BatchNormImplBase {
 public:
  /* implicit */ BatchNorm1dImpl(const BatchNormOptions& options);
};
TENSOR_MODULE(BatchNorm1d);

/// Batch norm over the C of (N, C, H, W) inputs.
class TENSOR_API BatchNorm2dImpl : public BatchNormImplBase {
 public:
  /* implicit */ BatchNorm2dImpl(const BatchNormOptions& options);
};
TENSOR_MODULE(BatchNorm2d);

/// Batch norm over the C of (N, C, D, H, W) inputs.
class TENSOR_API BatchNorm3dImpl : public BatchNormImplBase {
 public:
  /* implicit */ BatchNorm3dImpl(const BatchNormOptions& options);
};
TENSOR_MODULE(BatchNorm3d);

/// Normalizes over the trailing normalized_shape dims; weight (ones) and bias (zeros) of that
/// shape when elementwise_affine.
class TENSOR_API LayerNormImpl : public Module {
 public:
  LayerNormImpl(std::vector<int64_t> normalized_shape) : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(LayerNormOptions options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LayerNormOptions options;
  Tensor weight, bias;
};
TENSOR_MODULE(LayerNorm);

/// Normalizes each group of channels of an (N, C, *) input; per-channel weight (ones) and bias
/// (zeros) when affine.
class TENSOR_API GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  GroupNormOptions options;
  Tensor weight, bias;
};
TENSOR_MODULE(GroupNorm);

}  // namespace tensor::nn
