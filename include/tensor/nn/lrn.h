// Local response normalization, as libtorch's torch/nn/modules/normalization.h:
// nn::LocalResponseNorm / F::local_response_norm (any input of 3 or more dims) and
// nn::CrossMapLRN2d (4-d input, the Lua-torch recurrence, with libtorch's hand-written
// backward, which is not the derivative of its forward: src/nn/LRN.cpp).
#pragma once

#include <cstdint>
#include <ostream>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// nn::LocalResponseNorm(LocalResponseNormOptions(size).alpha(1e-4).beta(0.75).k(1.)).
struct LocalResponseNormOptions {
  /* implicit */ LocalResponseNormOptions(int64_t size) : size_(size) {}
  /// The number of neighbouring channels summed over.
  TENSOR_ARG(int64_t, size);
  /// The multiplicative factor.
  TENSOR_ARG(double, alpha) = 1e-4;
  /// The exponent.
  TENSOR_ARG(double, beta) = 0.75;
  /// The additive factor.
  TENSOR_ARG(double, k) = 1.;
};

/// nn::CrossMapLRN2d(CrossMapLRN2dOptions(size).alpha(1e-4).beta(0.75).k(1)); k is an integer, as libtorch's.
struct CrossMapLRN2dOptions {
  CrossMapLRN2dOptions(int64_t size) : size_(size) {}  // NOLINT(google-explicit-constructor)
  TENSOR_ARG(int64_t, size);
  TENSOR_ARG(double, alpha) = 1e-4;
  TENSOR_ARG(double, beta) = 0.75;
  TENSOR_ARG(int64_t, k) = 1;
};

namespace functional {
using LocalResponseNormFuncOptions = LocalResponseNormOptions;
/// x / (k + alpha / size * sum of x^2 over the `size` channels around each one)^beta, over dim 1
/// of an input of 3 or more dims (channels beyond the edges count as zeros).
TENSOR_API Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options);
}  // namespace functional

/// Local response normalization across channels (dim 1).
class TENSOR_API LocalResponseNormImpl : public Module {
 public:
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options_);
  void reset() {}
  /// F::local_response_norm(input, options).
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LocalResponseNormOptions options;
};
TENSOR_MODULE(LocalResponseNorm);

/// Lua torch's SpatialCrossMapLRN on a 4-d (N, C, H, W) input.
class TENSOR_API CrossMapLRN2dImpl : public Module {
 public:
  explicit CrossMapLRN2dImpl(const CrossMapLRN2dOptions& options_);
  CrossMapLRN2dImpl(int64_t size) : CrossMapLRN2dImpl(CrossMapLRN2dOptions(size)) {}  // NOLINT
  void reset() {}
  /// x * (k + alpha / size * (sum of x^2 over the channel window))^-beta.
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  CrossMapLRN2dOptions options;
};
TENSOR_MODULE(CrossMapLRN2d);

}  // namespace tensor::nn
