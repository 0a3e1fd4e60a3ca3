// Small layers as libtorch's torch::nn: the dropout family (Dropout2d, Dropout3d, AlphaDropout,
// FeatureAlphaDropout), distances (CosineSimilarity, PairwiseDistance), Identity, Unflatten,
// Bilinear, PixelShuffle and PixelUnshuffle, with their options and nn::functional forms
// (plus F::normalize).
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/module.h"
#include "tensor/nn/options.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

// ---- options ----

using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;

/// Cosine similarity along dim, each norm clamped at eps.
struct CosineSimilarityOptions {
  TENSOR_ARG(int64_t, dim) = 1;
  TENSOR_ARG(double, eps) = 1e-8;
};

/// ||x1 - x2 + eps||_p over the last dim.
struct PairwiseDistanceOptions {
  TENSOR_ARG(double, p) = 2.0;
  TENSOR_ARG(double, eps) = 1e-6;
  TENSOR_ARG(bool, keepdim) = false;
};

/// nn::Unflatten: dim becomes `sizes` (their product must equal the dim's size).
struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  TENSOR_ARG(int64_t, dim);
  TENSOR_ARG(std::vector<int64_t>, sizes);
};

/// nn::Bilinear: y = x1^T A x2 + b with A [out_features, in1_features, in2_features].
struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  TENSOR_ARG(int64_t, in1_features);
  TENSOR_ARG(int64_t, in2_features);
  TENSOR_ARG(int64_t, out_features);
  TENSOR_ARG(bool, bias) = true;
};

struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}
  TENSOR_ARG(int64_t, upscale_factor);
};

struct PixelUnshuffleOptions {
  /* implicit */ PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}
  TENSOR_ARG(int64_t, downscale_factor);
};

namespace functional {

using Dropout2dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;

/// F::alpha_dropout: training defaults to false, as libtorch.
struct AlphaDropoutFuncOptions {
  TENSOR_ARG(double, p) = 0.5;
  TENSOR_ARG(bool, training) = false;
  TENSOR_ARG(bool, inplace) = false;
};

struct FeatureAlphaDropoutFuncOptions {
  TENSOR_ARG(double, p) = 0.5;
  TENSOR_ARG(bool, training) = false;
  TENSOR_ARG(bool, inplace) = false;
};

using CosineSimilarityFuncOptions = CosineSimilarityOptions;
using PairwiseDistanceFuncOptions = PairwiseDistanceOptions;
using PixelShuffleFuncOptions = PixelShuffleOptions;
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;

/// F::normalize: x / max(||x||_p, eps) along dim.
struct NormalizeFuncOptions {
  TENSOR_ARG(double, p) = 2.0;
  TENSOR_ARG(int64_t, dim) = 1;
  TENSOR_ARG(double, eps) = 1e-12;
};

/// Zeroes whole channels of an (N, C, H, W) or unbatched (C, H, W) input with probability p in
/// training, scaling the rest by 1 / (1 - p).
TENSOR_API Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options = {});
/// The same for (N, C, D, H, W) or (C, D, H, W) inputs.
TENSOR_API Tensor dropout3d(Tensor input, const Dropout3dFuncOptions& options = {});
/// tensor::alpha_dropout with the options.
TENSOR_API Tensor alpha_dropout(Tensor input, const AlphaDropoutFuncOptions& options = {});
/// tensor::feature_alpha_dropout with the options.
TENSOR_API Tensor feature_alpha_dropout(Tensor input, const FeatureAlphaDropoutFuncOptions& options = {});
TENSOR_API Tensor cosine_similarity(const Tensor& x1, const Tensor& x2,
                                    const CosineSimilarityFuncOptions& options = {});
TENSOR_API Tensor pairwise_distance(const Tensor& x1, const Tensor& x2,
                                    const PairwiseDistanceFuncOptions& options = {});
TENSOR_API Tensor normalize(const Tensor& input, NormalizeFuncOptions options = {});
TENSOR_API Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                           const Tensor& bias = Tensor());
TENSOR_API Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options);
TENSOR_API Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options);

}  // namespace functional

// ---- modules ----

/// Declares a dropout-family module with DropoutOptions and forward(Tensor).
#define TENSOR_DROPOUT_MODULE(Name)                                        \
  class TENSOR_API Name##Impl : public Module {                            \
   public:                                                                 \
    explicit Name##Impl(double p) : Name##Impl(DropoutOptions(p)) {}       \
    explicit Name##Impl(const DropoutOptions& options_ = {});              \
    void reset();                                                          \
    Tensor forward(Tensor input);                                          \
    void pretty_print(std::ostream& stream) const override;                \
    DropoutOptions options;                                                \
  };                                                                       \
  TENSOR_MODULE(Name)

/// Channel dropout of (N, C, H, W) or (C, H, W) inputs; the identity in eval mode.
TENSOR_DROPOUT_MODULE(Dropout2d);
/// Channel dropout of (N, C, D, H, W) or (C, D, H, W) inputs.
TENSOR_DROPOUT_MODULE(Dropout3d);
/// Dropout that keeps self-normalizing activations' mean and variance (for SELU networks).
TENSOR_DROPOUT_MODULE(AlphaDropout);
/// AlphaDropout of whole channels.
TENSOR_DROPOUT_MODULE(FeatureAlphaDropout);
#undef TENSOR_DROPOUT_MODULE

class TENSOR_API CosineSimilarityImpl : public Module {
 public:
  explicit CosineSimilarityImpl(const CosineSimilarityOptions& options_ = {});
  void reset() {}
  Tensor forward(const Tensor& input1, const Tensor& input2);
  void pretty_print(std::ostream& stream) const override;
  CosineSimilarityOptions options;
};
TENSOR_MODULE(CosineSimilarity);

class TENSOR_API PairwiseDistanceImpl : public Module {
 public:
  explicit PairwiseDistanceImpl(const PairwiseDistanceOptions& options_ = {});
  void reset() {}
  Tensor forward(const Tensor& input1, const Tensor& input2);
  void pretty_print(std::ostream& stream) const override;
  PairwiseDistanceOptions options;
};
TENSOR_MODULE(PairwiseDistance);

/// Returns its input unchanged (a placeholder, e.g. for a removed classifier head).
class TENSOR_API IdentityImpl : public Module {
 public:
  IdentityImpl();
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
TENSOR_MODULE(Identity);

/// Splits dim into options.sizes().
class TENSOR_API UnflattenImpl : public Module {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(UnflattenOptions options_);
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  UnflattenOptions options;
};
TENSOR_MODULE(Unflatten);

/// y = x1^T A x2 + b: weight [out, in1, in2] and bias [out] ~ U(-1/sqrt(in1), 1/sqrt(in1)), as
/// libtorch. input1 [*, in1], input2 [*, in2] -> [*, out].
class TENSOR_API BilinearImpl : public Module {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : BilinearImpl(BilinearOptions(in1_features, in2_features, out_features)) {}
  explicit BilinearImpl(const BilinearOptions& options_);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input1, const Tensor& input2);
  void pretty_print(std::ostream& stream) const override;
  BilinearOptions options;
  Tensor weight;
  /// Undefined without bias.
  Tensor bias;
};
TENSOR_MODULE(Bilinear);

/// [*, C * r^2, H, W] -> [*, C, H * r, W * r].
class TENSOR_API PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(const PixelShuffleOptions& options_);
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  PixelShuffleOptions options;
};
TENSOR_MODULE(PixelShuffle);

/// [*, C, H * r, W * r] -> [*, C * r^2, H, W].
class TENSOR_API PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options_);
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  PixelUnshuffleOptions options;
};
TENSOR_MODULE(PixelUnshuffle);

}  // namespace tensor::nn
