// nn::Upsample and nn::functional::interpolate, as libtorch's: modes kNearest, kNearestExact,
// kLinear (3-d input), kBilinear (4-d), kBicubic (4-d), kTrilinear (5-d) with align_corners,
// and kArea (3-d or 4-d). Each resized dim of the nearest and linear modes is an index_select
// of the source positions (and, for the linear modes, a weighted sum of two of them), applied
// dim by dim, so autograd supplies the gradient; kBicubic is the op upsample_bicubic2d.
#pragma once

#include <optional>
#include <ostream>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor {

/// Bicubic resize of a 4-d input [N, C, H, W] to output_size {OH, OW}, as libtorch's
/// upsample_bicubic2d: cubic convolution (A = -0.75) over the 4x4 neighbours, clamped at the
/// borders; without align_corners the source step is 1 / scales_h (scales_w) when given,
/// else H / OH (W / OW).
TENSOR_API Tensor upsample_bicubic2d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                                     std::optional<double> scales_h = std::nullopt,
                                     std::optional<double> scales_w = std::nullopt);
/// The gradient of upsample_bicubic2d: grad_output [N, C, OH, OW] -> the gradient of the input
/// of sizes input_size [N, C, H, W]. Linear in grad_output.
TENSOR_API Tensor upsample_bicubic2d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                              IntArrayRef input_size, bool align_corners,
                                              std::optional<double> scales_h = std::nullopt,
                                              std::optional<double> scales_w = std::nullopt);

}  // namespace tensor

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
