// The losses of include/tensor/nn/loss.h: functional forms over the torch:: spellings of
// include/tensor/nn/functions.h, and their modules.
#include "tensor/nn/loss.h"

#include <ostream>

#include "src/core/Check.h"
#include "tensor/nn/functions.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace {
int64_t red(LossReduction r) {
  switch (r.kind()) {
    case LossReduction::None: return tensor::Reduction::None;
    case LossReduction::Sum: return tensor::Reduction::Sum;
    case LossReduction::Mean: return tensor::Reduction::Mean;
  }
  return tensor::Reduction::Mean;
}
std::optional<Tensor> opt(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }
}  // namespace

namespace functional {

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options) {
  const KLDivReduction r = options.reduction();
  if (r.kind() != KLDivReduction::BatchMean) {
    const int64_t ri = r.kind() == KLDivReduction::None  ? tensor::Reduction::None
                       : r.kind() == KLDivReduction::Sum ? tensor::Reduction::Sum
                                                         : tensor::Reduction::Mean;
    return tensor::kl_div(input, target, ri, options.log_target());
  }
  Tensor sum = tensor::kl_div(input, target, tensor::Reduction::Sum, options.log_target());
  return input.dim() != 0 ? sum / static_cast<double>(input.size(0)) : sum;
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  return tensor::binary_cross_entropy(input, target, opt(options.weight()), red(options.reduction()));
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& options) {
  return tensor::hinge_embedding_loss(input, target, options.margin(), red(options.reduction()));
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& options) {
  return tensor::multi_margin_loss(input, target, options.p(), options.margin(), opt(options.weight()),
                                   red(options.reduction()));
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options) {
  return tensor::cosine_embedding_loss(input1, input2, target, options.margin(), red(options.reduction()));
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options) {
  return tensor::multilabel_margin_loss(input, target, red(options.reduction()));
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& options) {
  return tensor::soft_margin_loss(input, target, red(options.reduction()));
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options) {
  const char* op = "multilabel_soft_margin_loss";
  TENSOR_CHECK(input.defined() && input.is_floating_point() && input.dim() >= 1,
               "{}: input must be a floating point tensor [N, C] or [C], got {}", op,
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  TENSOR_CHECK(target.defined() && target.sizes() == input.sizes(), "{}: target {} must have the input's shape {}", op,
               target.defined() ? target.describe() : std::string("undefined"), input.describe());
  Tensor t = target.is_floating_point() ? target : target.to(input.dtype());
  Tensor loss = -(t * tensor::log_sigmoid(input) + (1 - t) * tensor::log_sigmoid(-input));
  if (options.weight().defined()) loss = loss * options.weight();
  const int64_t c = input.size(-1);
  loss = loss.sum({-1}) / static_cast<double>(c);
  switch (options.reduction().kind()) {
    case LossReduction::None: return loss;
    case LossReduction::Sum: return loss.sum();
    case LossReduction::Mean: return loss.mean();
  }
  return loss;
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options) {
  return tensor::triplet_margin_loss(anchor, positive, negative, options.margin(), options.p(), options.eps(),
                                     options.swap(), red(options.reduction()));
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& options) {
  const char* op = "triplet_margin_with_distance_loss";
  TENSOR_CHECK(anchor.defined() && positive.defined() && negative.defined(), "{}: inputs must be defined", op);
  TENSOR_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
               "{}: all inputs should have the same number of dimensions, got anchor {}, positive {}, negative {}", op,
               anchor.describe(), positive.describe(), negative.describe());
  auto dist = [&](const Tensor& a, const Tensor& b) {
    return options.distance_function().has_value() ? (*options.distance_function())(a, b)
                                                   : tensor::pairwise_distance(a, b);
  };
  Tensor d_pos = dist(anchor, positive);
  Tensor d_neg = dist(anchor, negative);
  if (options.swap()) d_neg = tensor::minimum(d_neg, dist(positive, negative));
  Tensor loss = (d_pos - d_neg + options.margin()).clamp_min(0);
  switch (options.reduction().kind()) {
    case LossReduction::None: return loss;
    case LossReduction::Sum: return loss.sum();
    case LossReduction::Mean: return loss.mean();
  }
  return loss;
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options) {
  return tensor::smooth_l1_loss(input, target, red(options.reduction()), options.beta().value_or(1.0));
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
  return tensor::huber_loss(input, target, red(options.reduction()), options.delta());
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& options) {
  return tensor::poisson_nll_loss(input, target, options.log_input(), options.full(), options.eps(),
                                  red(options.reduction()));
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options) {
  return tensor::margin_ranking_loss(input1, input2, target, options.margin(), red(options.reduction()));
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options) {
  return tensor::ctc_loss(log_probs, targets, input_lengths, target_lengths, options.blank(),
                          red(options.reduction()), options.zero_infinity());
}

}  // namespace functional

namespace F = functional;

namespace {
void print_reduction(std::ostream& s, const char* name, const char* reduction) {
  s << "tensor::nn::" << name << "(reduction=" << reduction << ")";
}
}  // namespace

#define TENSOR_LOSS_MODULE_DEF(Name, call)                                                           \
  Name##Impl::Name##Impl(const Name##Options& options_) : Module("tensor::nn::" #Name), options(options_) {} \
  Tensor Name##Impl::forward(const Tensor& input, const Tensor& target) { return call(input, target, options); } \
  void Name##Impl::pretty_print(std::ostream& s) const { print_reduction(s, #Name, options.reduction().name()); }

TENSOR_LOSS_MODULE_DEF(KLDivLoss, F::kl_div)
TENSOR_LOSS_MODULE_DEF(HingeEmbeddingLoss, F::hinge_embedding_loss)
TENSOR_LOSS_MODULE_DEF(MultiLabelMarginLoss, F::multilabel_margin_loss)
TENSOR_LOSS_MODULE_DEF(SoftMarginLoss, F::soft_margin_loss)
TENSOR_LOSS_MODULE_DEF(SmoothL1Loss, F::smooth_l1_loss)
TENSOR_LOSS_MODULE_DEF(HuberLoss, F::huber_loss)
TENSOR_LOSS_MODULE_DEF(PoissonNLLLoss, F::poisson_nll_loss)
#undef TENSOR_LOSS_MODULE_DEF

BCELossImpl::BCELossImpl(const BCELossOptions& options_) : Module("tensor::nn::BCELoss"), options(options_) {
  reset();
}
void BCELossImpl::reset() { weight = register_buffer("weight", options.weight()); }
Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy(input, target, BCELossOptions(options).weight(weight));
}
void BCELossImpl::pretty_print(std::ostream& s) const { print_reduction(s, "BCELoss", options.reduction().name()); }

MultiMarginLossImpl::MultiMarginLossImpl(const MultiMarginLossOptions& options_)
    : Module("tensor::nn::MultiMarginLoss"), options(options_) {
  TENSOR_CHECK(options.p() == 1 || options.p() == 2, "MultiMarginLoss: only p == 1 and p == 2 supported, got {}",
               options.p());
  reset();
}
void MultiMarginLossImpl::reset() { weight = register_buffer("weight", options.weight()); }
Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multi_margin_loss(input, target, MultiMarginLossOptions(options).weight(weight));
}
void MultiMarginLossImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::MultiMarginLoss(p=" << options.p() << ", margin=" << options.margin()
    << ", reduction=" << options.reduction().name() << ")";
}

MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& options_)
    : Module("tensor::nn::MultiLabelSoftMarginLoss"), options(options_) {
  reset();
}
void MultiLabelSoftMarginLossImpl::reset() { weight = register_buffer("weight", options.weight()); }
Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multilabel_soft_margin_loss(input, target, MultiLabelSoftMarginLossOptions(options).weight(weight));
}
void MultiLabelSoftMarginLossImpl::pretty_print(std::ostream& s) const {
  print_reduction(s, "MultiLabelSoftMarginLoss", options.reduction().name());
}

CosineEmbeddingLossImpl::CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& options_)
    : Module("tensor::nn::CosineEmbeddingLoss"), options(options_) {}
Tensor CosineEmbeddingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return F::cosine_embedding_loss(input1, input2, target, options);
}
void CosineEmbeddingLossImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::CosineEmbeddingLoss(margin=" << options.margin() << ", reduction=" << options.reduction().name()
    << ")";
}

MarginRankingLossImpl::MarginRankingLossImpl(const MarginRankingLossOptions& options_)
    : Module("tensor::nn::MarginRankingLoss"), options(options_) {}
Tensor MarginRankingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return F::margin_ranking_loss(input1, input2, target, options);
}
void MarginRankingLossImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::MarginRankingLoss(margin=" << options.margin() << ", reduction=" << options.reduction().name()
    << ")";
}

TripletMarginLossImpl::TripletMarginLossImpl(const TripletMarginLossOptions& options_)
    : Module("tensor::nn::TripletMarginLoss"), options(options_) {}
Tensor TripletMarginLossImpl::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
  return F::triplet_margin_loss(anchor, positive, negative, options);
}
void TripletMarginLossImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::TripletMarginLoss(margin=" << options.margin() << ", p=" << options.p()
    << ", eps=" << options.eps() << ", swap=" << (options.swap() ? "true" : "false") << ")";
}

TripletMarginWithDistanceLossImpl::TripletMarginWithDistanceLossImpl(TripletMarginWithDistanceLossOptions options_)
    : Module("tensor::nn::TripletMarginWithDistanceLoss"), options(std::move(options_)) {}
Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& anchor, const Tensor& positive,
                                                  const Tensor& negative) {
  return F::triplet_margin_with_distance_loss(anchor, positive, negative, options);
}
void TripletMarginWithDistanceLossImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::TripletMarginWithDistanceLoss(margin=" << options.margin()
    << ", swap=" << (options.swap() ? "true" : "false") << ")";
}

CTCLossImpl::CTCLossImpl(const CTCLossOptions& options_) : Module("tensor::nn::CTCLoss"), options(options_) {}
Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths) {
  return F::ctc_loss(log_probs, targets, input_lengths, target_lengths, options);
}
void CTCLossImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::CTCLoss()"; }

}  // namespace tensor::nn
