// nn::Upsample and nn::functional::interpolate, as libtorch's: modes kNearest, kNearestExact,
// kLinear (3-d input), kBilinear (4-d), kTrilinear (5-d) with align_corners, and kArea (3-d
// or 4-d). Each resized dim is an index_select of the source positions (and, for the linear
// modes, a weighted sum of two of them), applied dim by dim, so autograd supplies the gradient.
// kBicubic is not implemented (raises tensor::Error).
#pragma once

#include <optional>
#include <ostream>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// nn::Upsample: give either size (the output's spatial sizes) or scale_factor (one per
/// spatial dim, or one for all).
struct UpsampleOptions {
  TENSOR_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  TENSOR_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  TENSOR_ARG(InterpolateMode, mode) = kNearest;
  /// Linear modes only: map the corner pixels' centers onto each other.
  TENSOR_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

namespace functional {

struct InterpolateFuncOptions {
  TENSOR_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  TENSOR_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  TENSOR_ARG(InterpolateMode, mode) = kNearest;
  TENSOR_ARG(std::optional<bool>, align_corners) = std::nullopt;
  /// Compute the source positions from the output size rather than from scale_factor.
  TENSOR_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  /// Not supported (raises tensor::Error when true).
  TENSOR_ARG(bool, antialias) = false;
};

/// Resizes the spatial dims (all after N, C) of a 3-d, 4-d or 5-d input, as PyTorch's
/// F.interpolate: output size from options.size() or floor(size * scale_factor).
TENSOR_API Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options = {});

}  // namespace functional

/// Resizes its input's spatial dims with F::interpolate.
class TENSOR_API UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options_ = {});
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  UpsampleOptions options;
};
TENSOR_MODULE(Upsample);

}  // namespace tensor::nn
