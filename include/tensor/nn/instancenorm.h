// Instance normalization as libtorch's torch::nn::InstanceNorm{1,2,3}d and
// F::instance_norm: each (sample, channel) is normalized over its spatial positions, with an
// optional per-channel affine and optional running statistics.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

struct InstanceNormOptions {
  /* implicit */ InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  TENSOR_ARG(int64_t, num_features);
  TENSOR_ARG(double, eps) = 1e-5;
  TENSOR_ARG(double, momentum) = 0.1;
  /// Learnable per-channel weight (ones) and bias (zeros).
  TENSOR_ARG(bool, affine) = false;
  /// Keep running_mean / running_var (used in eval mode).
  TENSOR_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

namespace functional {

struct InstanceNormFuncOptions {
  TENSOR_ARG(Tensor, running_mean) = Tensor();
  TENSOR_ARG(Tensor, running_var) = Tensor();
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(Tensor, bias) = Tensor();
  /// Normalize with this input's statistics (and update the running ones when given);
  /// false uses the running statistics.
  TENSOR_ARG(bool, use_input_stats) = true;
  TENSOR_ARG(double, momentum) = 0.1;
  TENSOR_ARG(double, eps) = 1e-5;
};

/// (x - mean) / sqrt(var + eps) over the spatial dims of (N, C, *) input, per sample and
/// channel (biased variance), then weight * . + bias per channel. Running statistics, when
/// given and use_input_stats, move towards the batch average of the per-instance mean and
/// unbiased variance by momentum.
TENSOR_API Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options = {});

}  // namespace functional

/// Shared by InstanceNorm1d/2d/3d: weight and bias [C] when affine; running_mean,
/// running_var and num_batches_tracked buffers when track_running_stats (then eval mode uses
/// them). Accepts batched (N, C, *) or unbatched (C, *) input of the right rank.
class TENSOR_API InstanceNormImplBase : public Module {
 public:
  InstanceNormImplBase(const InstanceNormOptions& options, std::string name, int64_t spatial_dims);
  void reset();
  void reset_running_stats();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  InstanceNormOptions options;
  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;

 private:
  int64_t spatial_dims_;
};

class TENSOR_API InstanceNorm1dImpl : public InstanceNormImplBase {
 public:
  /* implicit */ InstanceNorm1dImpl(const InstanceNormOptions& options_)
      : InstanceNormImplBase(options_, "tensor::nn::InstanceNorm1d", 1) {}
};
TENSOR_MODULE(InstanceNorm1d);

class TENSOR_API InstanceNorm2dImpl : public InstanceNormImplBase {
 public:
  /* implicit */ InstanceNorm2dImpl(const InstanceNormOptions& options_)
      : InstanceNormImplBase(options_, "tensor::nn::InstanceNorm2d", 2) {}
};
TENSOR_MODULE(InstanceNorm2d);

class TENSOR_API InstanceNorm3dImpl : public InstanceNormImplBase {
 public:
  /* implicit */ InstanceNorm3dImpl(const InstanceNormOptions& options_)
      : InstanceNormImplBase(options_, "tensor::nn::InstanceNorm3d", 3) {}
};
TENSOR_MODULE(InstanceNorm3d);

}  // namespace tensor::nn
