// Pooling and normalization modules and their nn::functional forms, as libtorch's
// torch::nn::{MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, BatchNorm1d, BatchNorm2d, LayerNorm,
// GroupNorm} and F::{max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm, layer_norm,
// group_norm}. They run on the ops of tensor/pooling.h and tensor/normalization.h.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
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

/// nn::BatchNorm1d / nn::BatchNorm2d.
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
