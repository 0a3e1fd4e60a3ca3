// nn::EmbeddingBag and F::embedding_bag, as libtorch: sums, means or maxes of bags of embedding
// rows without materializing the rows per index.
// `nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3).mode(kSum))`, `bag(input, offsets)`,
// `F::embedding_bag(input, weight, F::EmbeddingBagFuncOptions().offsets(offsets).mode(kMax))`.
#pragma once

#include <optional>

#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// How EmbeddingBag reduces a bag: kSum, kMean or kMax (libtorch's EmbeddingBagMode).
class EmbeddingBagMode {
 public:
  enum Kind : int8_t { Sum, Mean, Max };
  constexpr EmbeddingBagMode(enumtype::kSum) : kind_(Sum) {}
  constexpr EmbeddingBagMode(enumtype::kMean) : kind_(Mean) {}
  constexpr EmbeddingBagMode(enumtype::kMax) : kind_(Max) {}
  constexpr Kind kind() const { return kind_; }
  /// "sum", "mean", "max".
  constexpr const char* name() const { return kind_ == Sum ? "sum" : kind_ == Mean ? "mean" : "max"; }
  friend constexpr bool operator==(EmbeddingBagMode a, EmbeddingBagMode b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(EmbeddingBagMode a, EmbeddingBagMode b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// nn::EmbeddingBag: num_embeddings rows of size embedding_dim, reduced per bag.
struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  TENSOR_ARG(int64_t, num_embeddings);
  TENSOR_ARG(int64_t, embedding_dim);
  /// Rows looked up are renormalized in place to this norm_type-norm when larger (as libtorch).
  TENSOR_ARG(std::optional<double>, max_norm) = std::nullopt;
  TENSOR_ARG(double, norm_type) = 2.;
  /// Scales each row's gradient by the inverse of its frequency in the mini-batch (kSum, kMean).
  TENSOR_ARG(bool, scale_grad_by_freq) = false;
  TENSOR_ARG(EmbeddingBagMode, mode) = kMean;
  /// Sparse gradients are not supported (true raises tensor::Error).
  TENSOR_ARG(bool, sparse) = false;
  /// Initial weight [num_embeddings, embedding_dim] to use instead of N(0, 1).
  TENSOR_ARG(Tensor, _weight) = Tensor();
  /// offsets has one more entry than there are bags: its last entry is the input's size.
  TENSOR_ARG(bool, include_last_offset) = false;
  /// Entries equal to this index are left out of their bag (negative counts from the end).
  TENSOR_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

/// EmbeddingBag::from_pretrained's options.
struct EmbeddingBagFromPretrainedOptions {
  /// The weight does not train (requires_grad false).
  TENSOR_ARG(bool, freeze) = true;
  TENSOR_ARG(std::optional<double>, max_norm) = std::nullopt;
  TENSOR_ARG(double, norm_type) = 2.;
  TENSOR_ARG(bool, scale_grad_by_freq) = false;
  TENSOR_ARG(EmbeddingBagMode, mode) = kMean;
  TENSOR_ARG(bool, sparse) = false;
  TENSOR_ARG(bool, include_last_offset) = false;
  TENSOR_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

/// Bags of embeddings: a 2-D input (B, n) is B bags of n indices; a 1-D input with offsets
/// (B) holds bag b at input[offsets[b] : offsets[b + 1]]. Output (B, embedding_dim).
/// per_sample_weights (the input's shape) scale each row, kSum only. Empty bags give zeros.
class TENSOR_API EmbeddingBagImpl : public Module {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(EmbeddingBagOptions options);
  /// Re-creates (or re-adopts _weight) and re-initializes the weight.
  void reset();
  /// weight ~ N(0, 1), the padding_idx row zeroed.
  void reset_parameters();
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});
  void pretty_print(std::ostream& stream) const override;

  EmbeddingBagOptions options;
  Tensor weight;
};

/// The holder of EmbeddingBagImpl, with libtorch's from_pretrained.
class TENSOR_API EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder<EmbeddingBagImpl>::ModuleHolder;
  using Impl = EmbeddingBagImpl;
  /// An EmbeddingBag whose weight is `embeddings` [num_embeddings, embedding_dim] (shared, not
  /// copied), frozen (requires_grad false) unless options.freeze(false).
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options = {});
};

namespace functional {

/// Options of F::embedding_bag (libtorch's EmbeddingBagFuncOptions).
struct EmbeddingBagFuncOptions {
  TENSOR_ARG(Tensor, offsets) = Tensor();
  TENSOR_ARG(std::optional<double>, max_norm) = std::nullopt;
  TENSOR_ARG(double, norm_type) = 2.;
  TENSOR_ARG(bool, scale_grad_by_freq) = false;
  TENSOR_ARG(EmbeddingBagMode, mode) = kMean;
  TENSOR_ARG(bool, sparse) = false;
  TENSOR_ARG(Tensor, per_sample_weights) = Tensor();
  TENSOR_ARG(bool, include_last_offset) = false;
  TENSOR_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

/// Bags of rows of weight [num_embeddings, embedding_dim] (see EmbeddingBagImpl).
TENSOR_API Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options = {});

}  // namespace functional
}  // namespace tensor::nn
