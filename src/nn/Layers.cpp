// The small layers of include/tensor/nn/layers.h: the dropout family, distances, Identity,
// Unflatten, Bilinear and pixel (un)shuffle, over the torch:: spellings of
// include/tensor/nn/functions.h.
#include "tensor/nn/layers.h"

#include <cmath>
#include <ostream>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/functions.h"
#include "tensor/nn/init.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace functional {

namespace {
// libtorch's _dropoutNd_helper: batched (N, C, *) or unbatched (C, *) channel dropout.
Tensor dropout_nd(const char* op, Tensor input, const DropoutFuncOptions& options, int64_t unbatched_dim,
                  int64_t batched_dim) {
  TENSOR_CHECK(input.defined(), "{}: input must be defined", op);
  TENSOR_CHECK(options.p() >= 0 && options.p() <= 1, "{}: dropout probability has to be between 0 and 1, but got {}",
               op, options.p());
  TENSOR_CHECK(input.dim() == unbatched_dim || input.dim() == batched_dim,
               "{}: expected an unbatched {}-d or batched {}-d input, got {}", op, unbatched_dim, batched_dim,
               input.describe());
  const bool unbatched = input.dim() == unbatched_dim;
  Tensor x = unbatched ? input.unsqueeze(0) : input;
  Tensor out = tensor::feature_dropout(x, options.p(), options.training());
  if (unbatched) out = out.squeeze(0);
  if (options.inplace() && options.training() && options.p() > 0) {
    input.copy_(out);
    return input;
  }
  return out;
}

Tensor maybe_inplace(Tensor input, const Tensor& out, bool inplace) {
  if (!inplace || out.unsafeGetTensorImpl() == input.unsafeGetTensorImpl()) return out;
  input.copy_(out);
  return input;
}
}  // namespace

Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options) {
  return dropout_nd("dropout2d", std::move(input), options, 3, 4);
}

Tensor dropout3d(Tensor input, const Dropout3dFuncOptions& options) {
  return dropout_nd("dropout3d", std::move(input), options, 4, 5);
}

Tensor alpha_dropout(Tensor input, const AlphaDropoutFuncOptions& options) {
  Tensor out = tensor::alpha_dropout(input, options.p(), options.training());
  return maybe_inplace(std::move(input), out, options.inplace());
}

Tensor feature_alpha_dropout(Tensor input, const FeatureAlphaDropoutFuncOptions& options) {
  Tensor out = tensor::feature_alpha_dropout(input, options.p(), options.training());
  return maybe_inplace(std::move(input), out, options.inplace());
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options) {
  return tensor::cosine_similarity(x1, x2, options.dim(), options.eps());
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& options) {
  return tensor::pairwise_distance(x1, x2, options.p(), options.eps(), options.keepdim());
}

Tensor normalize(const Tensor& input, NormalizeFuncOptions options) {
  TENSOR_CHECK(input.defined() && input.is_floating_point(), "normalize: input must be floating point, got {}",
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  const int64_t d = ::tensor::detail::wrap_dim(options.dim(), input.dim(), "normalize");
  Tensor n = input.norm(options.p(), {d}, /*keepdim=*/true).clamp_min(options.eps());
  return input / n;
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias) {
  return tensor::bilinear(input1, input2, weight,
                          bias.defined() ? std::optional<Tensor>(bias) : std::optional<Tensor>());
}

Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options) {
  return tensor::pixel_shuffle(input, options.upscale_factor());
}

Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options) {
  return tensor::pixel_unshuffle(input, options.downscale_factor());
}

}  // namespace functional

namespace F = functional;

// ---- dropout family ----

#define TENSOR_DROPOUT_MODULE_DEF(Name, call)                                                          \
  Name##Impl::Name##Impl(const DropoutOptions& options_) : Module("tensor::nn::" #Name), options(options_) { \
    reset();                                                                                           \
  }                                                                                                    \
  void Name##Impl::reset() {                                                                           \
    TENSOR_CHECK(options.p() >= 0 && options.p() <= 1,                                                \
                 #Name ": dropout probability has to be between 0 and 1, but got {}", options.p());    \
  }                                                                                                    \
  Tensor Name##Impl::forward(Tensor input) { return call; }                                            \
  void Name##Impl::pretty_print(std::ostream& s) const {                                               \
    s << "tensor::nn::" #Name "(p=" << options.p() << ", inplace=" << (options.inplace() ? "true" : "false") << ")"; \
  }

TENSOR_DROPOUT_MODULE_DEF(Dropout2d, F::dropout2d(std::move(input), F::Dropout2dFuncOptions()
                                                                        .p(options.p())
                                                                        .inplace(options.inplace())
                                                                        .training(is_training())))
TENSOR_DROPOUT_MODULE_DEF(Dropout3d, F::dropout3d(std::move(input), F::Dropout3dFuncOptions()
                                                                        .p(options.p())
                                                                        .inplace(options.inplace())
                                                                        .training(is_training())))
TENSOR_DROPOUT_MODULE_DEF(AlphaDropout, F::alpha_dropout(std::move(input), F::AlphaDropoutFuncOptions()
                                                                               .p(options.p())
                                                                               .inplace(options.inplace())
                                                                               .training(is_training())))
TENSOR_DROPOUT_MODULE_DEF(FeatureAlphaDropout,
                          F::feature_alpha_dropout(std::move(input), F::FeatureAlphaDropoutFuncOptions()
                                                                         .p(options.p())
                                                                         .inplace(options.inplace())
                                                                         .training(is_training())))
#undef TENSOR_DROPOUT_MODULE_DEF

// ---- distances ----

CosineSimilarityImpl::CosineSimilarityImpl(const CosineSimilarityOptions& options_)
    : Module("tensor::nn::CosineSimilarity"), options(options_) {}
Tensor CosineSimilarityImpl::forward(const Tensor& input1, const Tensor& input2) {
  return F::cosine_similarity(input1, input2, options);
}
void CosineSimilarityImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::CosineSimilarity(dim=" << options.dim() << ", eps=" << options.eps() << ")";
}

PairwiseDistanceImpl::PairwiseDistanceImpl(const PairwiseDistanceOptions& options_)
    : Module("tensor::nn::PairwiseDistance"), options(options_) {}
Tensor PairwiseDistanceImpl::forward(const Tensor& input1, const Tensor& input2) {
  return F::pairwise_distance(input1, input2, options);
}
void PairwiseDistanceImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::PairwiseDistance(p=" << options.p() << ", eps=" << options.eps()
    << ", keepdim=" << (options.keepdim() ? "true" : "false") << ")";
}

// ---- Identity, Unflatten ----

IdentityImpl::IdentityImpl() : Module("tensor::nn::Identity") {}
Tensor IdentityImpl::forward(const Tensor& input) { return input; }
void IdentityImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::Identity()"; }

UnflattenImpl::UnflattenImpl(UnflattenOptions options_) : Module("tensor::nn::Unflatten"), options(std::move(options_)) {}
Tensor UnflattenImpl::forward(const Tensor& input) { return input.unflatten(options.dim(), options.sizes()); }
void UnflattenImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Unflatten(dim=" << options.dim() << ", unflattened_size={";
  for (size_t i = 0; i < options.sizes().size(); ++i) s << (i ? ", " : "") << options.sizes()[i];
  s << "})";
}

// ---- Bilinear ----

BilinearImpl::BilinearImpl(const BilinearOptions& options_) : Module("tensor::nn::Bilinear"), options(options_) {
  TENSOR_CHECK(options.in1_features() > 0 && options.in2_features() > 0 && options.out_features() >= 0,
               "Bilinear: in1_features ({}) and in2_features ({}) must be positive and out_features ({}) "
               "non-negative",
               options.in1_features(), options.in2_features(), options.out_features());
  reset();
}

void BilinearImpl::reset() {
  if (parameters_.contains("weight")) parameters_.erase("weight");
  if (parameters_.contains("bias")) parameters_.erase("bias");
  weight = register_parameter(
      "weight", tensor::empty({options.out_features(), options.in1_features(), options.in2_features()}));
  bias = options.bias() ? register_parameter("bias", tensor::empty({options.out_features()}))
                        : register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight.size(1)));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2) {
  return F::bilinear(input1, input2, weight, bias);
}

void BilinearImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Bilinear(in1_features=" << options.in1_features() << ", in2_features=" << options.in2_features()
    << ", out_features=" << options.out_features() << ", bias=" << (options.bias() ? "true" : "false") << ")";
}

// ---- pixel shuffle ----

PixelShuffleImpl::PixelShuffleImpl(const PixelShuffleOptions& options_)
    : Module("tensor::nn::PixelShuffle"), options(options_) {}
Tensor PixelShuffleImpl::forward(const Tensor& input) { return F::pixel_shuffle(input, options); }
void PixelShuffleImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::PixelShuffle(upscale_factor=" << options.upscale_factor() << ")";
}

PixelUnshuffleImpl::PixelUnshuffleImpl(const PixelUnshuffleOptions& options_)
    : Module("tensor::nn::PixelUnshuffle"), options(options_) {}
Tensor PixelUnshuffleImpl::forward(const Tensor& input) { return F::pixel_unshuffle(input, options); }
void PixelUnshuffleImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::PixelUnshuffle(downscale_factor=" << options.downscale_factor() << ")";
}

}  // namespace tensor::nn
