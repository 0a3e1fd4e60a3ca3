// Batch, layer and group normalization, spelled as libtorch's free functions. Weight and bias
// are optional (an undefined Tensor or std::nullopt means none).
#pragma once

#include <optional>

#include "tensor/core/Tensor.h"

namespace tensor {

/// Normalizes each channel (dim 1) of an (N, C), (N, C, L), (N, C, H, W) or (N, C, D, H, W)
/// input, then scales by weight[c] and shifts by bias[c]. training: uses the batch statistics
/// (biased variance) and, when given, updates running_mean and running_var in place:
/// running = (1 - momentum) * running + momentum * batch, with the unbiased variance.
/// Otherwise uses the running statistics, which must be given. `cudnn_enabled` is accepted
/// for libtorch compatibility and ignored. Running statistics get no gradient.
TENSOR_API Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                             const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                             const std::optional<Tensor>& running_var, bool training, double momentum, double eps,
                             bool cudnn_enabled = true);
/// Normalizes over the trailing dims given by normalized_shape (which must match them), then
/// applies the elementwise weight and bias of shape normalized_shape.
TENSOR_API Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                             const std::optional<Tensor>& weight = std::nullopt,
                             const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5,
                             bool cudnn_enable = true);
/// Splits the C channels of an (N, C, *) input into num_groups groups, normalizes each group of
/// each sample, then applies the per-channel weight and bias (size C).
TENSOR_API Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight = std::nullopt,
                             const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5,
                             bool cudnn_enabled = true);

}  // namespace tensor
