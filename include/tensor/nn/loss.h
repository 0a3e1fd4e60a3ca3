// Loss modules, options and nn::functional forms beyond those of options.h / modules.h
// (CrossEntropy, NLL, MSE, L1, BCEWithLogits), as libtorch's torch/nn/*/loss.h: KLDiv, BCE,
// HingeEmbedding, MultiMargin, CosineEmbedding, SmoothL1, Huber, MultiLabelMargin, SoftMargin,
// MultiLabelSoftMargin, TripletMargin, PoissonNLL, MarginRanking. The math is in
// tensor/nn/functions.h (the torch:: spellings, with an integer reduction).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

// ---- options ----

/// Constructors from each reduction tag, as libtorch's TORCH_OPTIONS_CTOR_VARIANT_ARG3:
/// `nn::SmoothL1LossOptions(kSum)`.
#define TENSOR_REDUCTION_CTORS(Options)                                    \
  /* implicit */ Options(LossReduction reduction = kMean) : reduction_(reduction) {} \
  Options(enumtype::kNone r) : reduction_(r) {}                            \
  Options(enumtype::kMean r) : reduction_(r) {}                            \
  Options(enumtype::kSum r) : reduction_(r) {}

/// nn::KLDivLoss / F::kl_div on log-probabilities; kBatchMean divides the sum by the batch
/// size (the mathematically correct KL), kMean by the element count (libtorch's default).
struct KLDivLossOptions {
  /* implicit */ KLDivLossOptions(KLDivReduction reduction = kMean) : reduction_(reduction) {}
  KLDivLossOptions(enumtype::kNone r) : reduction_(r) {}
  KLDivLossOptions(enumtype::kBatchMean r) : reduction_(r) {}
  KLDivLossOptions(enumtype::kSum r) : reduction_(r) {}
  KLDivLossOptions(enumtype::kMean r) : reduction_(r) {}
  TENSOR_ARG(KLDivReduction, reduction);
  /// The target is given as log-probabilities too.
  TENSOR_ARG(bool, log_target) = false;
};

/// nn::BCELoss / F::binary_cross_entropy on probabilities.
struct BCELossOptions {
  /// Rescales each element's loss (broadcast against the input).
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

struct HingeEmbeddingLossOptions {
  TENSOR_ARG(double, margin) = 1.0;
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

struct MultiMarginLossOptions {
  /// 1 or 2.
  TENSOR_ARG(int64_t, p) = 1;
  TENSOR_ARG(double, margin) = 1.0;
  /// Per-class weight [C].
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

struct CosineEmbeddingLossOptions {
  TENSOR_ARG(double, margin) = 0.0;
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

struct MultiLabelMarginLossOptions {
  TENSOR_REDUCTION_CTORS(MultiLabelMarginLossOptions)
  TENSOR_ARG(LossReduction, reduction);
};

struct SoftMarginLossOptions {
  TENSOR_REDUCTION_CTORS(SoftMarginLossOptions)
  TENSOR_ARG(LossReduction, reduction);
};

struct MultiLabelSoftMarginLossOptions {
  /// Per-class weight [C].
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

struct TripletMarginLossOptions {
  TENSOR_ARG(double, margin) = 1.0;
  /// The norm degree of the pairwise distance.
  TENSOR_ARG(double, p) = 2.0;
  TENSOR_ARG(double, eps) = 1e-6;
  /// Use min(d(a, n), d(p, n)) as the negative distance.
  TENSOR_ARG(bool, swap) = false;
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

/// nn::TripletMarginWithDistanceLoss: distance_function defaults to pairwise_distance.
struct TripletMarginWithDistanceLossOptions {
  using distance_function_t = std::function<Tensor(const Tensor&, const Tensor&)>;
  TENSOR_ARG(std::optional<distance_function_t>, distance_function) = std::nullopt;
  TENSOR_ARG(double, margin) = 1.0;
  TENSOR_ARG(bool, swap) = false;
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

/// nn::SmoothL1Loss: beta nullopt means 1.0.
struct SmoothL1LossOptions {
  TENSOR_REDUCTION_CTORS(SmoothL1LossOptions)
  TENSOR_ARG(LossReduction, reduction);
  TENSOR_ARG(std::optional<double>, beta) = std::nullopt;
};

struct HuberLossOptions {
  TENSOR_REDUCTION_CTORS(HuberLossOptions)
  TENSOR_ARG(LossReduction, reduction);
  TENSOR_ARG(double, delta) = 1.0;
};

struct PoissonNLLLossOptions {
  /// The input is log(rate) (exp(x) - y x); otherwise the rate (x - y log(x + eps)).
  TENSOR_ARG(bool, log_input) = true;
  /// Add Stirling's approximation of log(y!).
  TENSOR_ARG(bool, full) = false;
  TENSOR_ARG(double, eps) = 1e-8;
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

struct MarginRankingLossOptions {
  TENSOR_ARG(double, margin) = 0;
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

/// nn::CTCLoss(CTCLossOptions().blank(0).reduction(kMean).zero_infinity(false)).
struct CTCLossOptions {
  /// The blank label's index in [0, C).
  TENSOR_ARG(int64_t, blank) = 0;
  /// kMean divides each sample's loss by its target length (at least 1), then averages.
  TENSOR_ARG(LossReduction, reduction) = kMean;
  /// Infinite losses (inputs too short to align their targets) and their gradients become zero.
  TENSOR_ARG(bool, zero_infinity) = false;
};

#undef TENSOR_REDUCTION_CTORS

namespace functional {

using KLDivFuncOptions = KLDivLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;
using MultiMarginLossFuncOptions = MultiMarginLossOptions;
using CosineEmbeddingLossFuncOptions = CosineEmbeddingLossOptions;
using MultilabelMarginLossFuncOptions = MultiLabelMarginLossOptions;
using SoftMarginLossFuncOptions = SoftMarginLossOptions;
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;
using TripletMarginLossFuncOptions = TripletMarginLossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using TripletMarginWithDistanceLossFuncOptions = TripletMarginWithDistanceLossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;
using MarginRankingLossFuncOptions = MarginRankingLossOptions;
using CTCLossFuncOptions = CTCLossOptions;

/// KL divergence target * (log(target) - input) of log-probabilities `input`.
TENSOR_API Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {});
/// Binary cross entropy of probabilities `input` in [0, 1] (logs clamped at -100).
TENSOR_API Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                                       const BinaryCrossEntropyFuncOptions& options = {});
TENSOR_API Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target,
                                       const HingeEmbeddingLossFuncOptions& options = {});
TENSOR_API Tensor multi_margin_loss(const Tensor& input, const Tensor& target,
                                    const MultiMarginLossFuncOptions& options = {});
TENSOR_API Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                                        const CosineEmbeddingLossFuncOptions& options = {});
TENSOR_API Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                                         const MultilabelMarginLossFuncOptions& options = {});
TENSOR_API Tensor soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const SoftMarginLossFuncOptions& options = {});
/// -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted per class, averaged over classes.
TENSOR_API Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                              const MultilabelSoftMarginLossFuncOptions& options = {});
TENSOR_API Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                      const TripletMarginLossFuncOptions& options = {});
/// max(0, margin + d(a, p) - d(a, n)) with a user distance d (pairwise_distance by default).
TENSOR_API Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive,
                                                   const Tensor& negative,
                                                   const TripletMarginWithDistanceLossFuncOptions& options = {});
TENSOR_API Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                                 const SmoothL1LossFuncOptions& options = {});
TENSOR_API Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options = {});
TENSOR_API Tensor poisson_nll_loss(const Tensor& input, const Tensor& target,
                                   const PoissonNLLLossFuncOptions& options = {});
TENSOR_API Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                                      const MarginRankingLossFuncOptions& options = {});
/// Connectionist temporal classification loss of log-probabilities (T, N, C) (or unbatched
/// (T, C)) against padded (N, S) or concatenated 1-d targets; lengths are int64 tensors.
TENSOR_API Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                           const Tensor& target_lengths, const CTCLossFuncOptions& options = {});

}  // namespace functional

// ---- modules ----

/// Declares a loss module XImpl(options) with forward(input, target) and its holder X.
#define TENSOR_LOSS_MODULE(Name)                                                     \
  class TENSOR_API Name##Impl : public Module {                                      \
   public:                                                                           \
    explicit Name##Impl(const Name##Options& options_ = {});                         \
    void reset() {}                                                                  \
    Tensor forward(const Tensor& input, const Tensor& target);                       \
    void pretty_print(std::ostream& stream) const override;                          \
    Name##Options options;                                                           \
  };                                                                                 \
  TENSOR_MODULE(Name)

TENSOR_LOSS_MODULE(KLDivLoss);
TENSOR_LOSS_MODULE(HingeEmbeddingLoss);
TENSOR_LOSS_MODULE(MultiLabelMarginLoss);
TENSOR_LOSS_MODULE(SoftMarginLoss);
TENSOR_LOSS_MODULE(SmoothL1Loss);
TENSOR_LOSS_MODULE(HuberLoss);
TENSOR_LOSS_MODULE(PoissonNLLLoss);
#undef TENSOR_LOSS_MODULE

/// Binary cross entropy of probabilities; the weight is a buffer.
class TENSOR_API BCELossImpl : public Module {
 public:
  explicit BCELossImpl(const BCELossOptions& options_ = {});
  void reset();
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  BCELossOptions options;
  Tensor weight;
};
TENSOR_MODULE(BCELoss);

class TENSOR_API MultiMarginLossImpl : public Module {
 public:
  explicit MultiMarginLossImpl(const MultiMarginLossOptions& options_ = {});
  void reset();
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  MultiMarginLossOptions options;
  Tensor weight;
};
TENSOR_MODULE(MultiMarginLoss);

class TENSOR_API MultiLabelSoftMarginLossImpl : public Module {
 public:
  explicit MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& options_ = {});
  void reset();
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  MultiLabelSoftMarginLossOptions options;
  Tensor weight;
};
TENSOR_MODULE(MultiLabelSoftMarginLoss);

class TENSOR_API CosineEmbeddingLossImpl : public Module {
 public:
  explicit CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& options_ = {});
  void reset() {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  CosineEmbeddingLossOptions options;
};
TENSOR_MODULE(CosineEmbeddingLoss);

class TENSOR_API MarginRankingLossImpl : public Module {
 public:
  explicit MarginRankingLossImpl(const MarginRankingLossOptions& options_ = {});
  void reset() {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  MarginRankingLossOptions options;
};
TENSOR_MODULE(MarginRankingLoss);

class TENSOR_API TripletMarginLossImpl : public Module {
 public:
  explicit TripletMarginLossImpl(const TripletMarginLossOptions& options_ = {});
  void reset() {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  void pretty_print(std::ostream& stream) const override;
  TripletMarginLossOptions options;
};
TENSOR_MODULE(TripletMarginLoss);

class TENSOR_API TripletMarginWithDistanceLossImpl : public Module {
 public:
  explicit TripletMarginWithDistanceLossImpl(TripletMarginWithDistanceLossOptions options_ = {});
  void reset() {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  void pretty_print(std::ostream& stream) const override;
  TripletMarginWithDistanceLossOptions options;
};
TENSOR_MODULE(TripletMarginWithDistanceLoss);

/// The CTC loss; forward(log_probs, targets, input_lengths, target_lengths) is F::ctc_loss.
class TENSOR_API CTCLossImpl : public Module {
 public:
  explicit CTCLossImpl(const CTCLossOptions& options_ = {});
  void reset() {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);
  void pretty_print(std::ostream& stream) const override;
  CTCLossOptions options;
};
TENSOR_MODULE(CTCLoss);

}  // namespace tensor::nn
