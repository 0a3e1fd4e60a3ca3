// Options structs of the nn modules and functionals, as libtorch's torch/nn/options/*.h:
// `nn::LinearOptions(784, 128).bias(false)`, `F::CrossEntropyFuncOptions().ignore_index(0)`.
// Modules that are not here yet (Conv, Pool, Norm, attention) get their options in their own
// header next to this one (nn/options_conv.h, ...), using TENSOR_ARG.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"

namespace tensor::nn {

// ---- layers ----

/// nn::Linear: y = x W^T + b with W [out_features, in_features].
struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  TENSOR_ARG(int64_t, in_features);
  TENSOR_ARG(int64_t, out_features);
  /// Whether the layer has an additive bias.
  TENSOR_ARG(bool, bias) = true;
};

/// nn::Embedding: a lookup table of num_embeddings rows of size embedding_dim.
struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  TENSOR_ARG(int64_t, num_embeddings);
  TENSOR_ARG(int64_t, embedding_dim);
  /// This row is initialized to zeros and receives no gradient (negative counts from the end).
  TENSOR_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  /// Not supported yet (forward raises tensor::Error when set).
  TENSOR_ARG(std::optional<double>, max_norm) = std::nullopt;
  TENSOR_ARG(double, norm_type) = 2.;
  /// Not supported yet (forward raises tensor::Error when true).
  TENSOR_ARG(bool, scale_grad_by_freq) = false;
  /// Not supported yet (dense gradients only; raises tensor::Error when true).
  TENSOR_ARG(bool, sparse) = false;
  /// Initial weight [num_embeddings, embedding_dim] to use instead of N(0, 1).
  TENSOR_ARG(Tensor, _weight) = Tensor();
};

/// nn::Dropout: zeroes elements with probability p in training, scaling the rest by 1/(1-p).
struct DropoutOptions {
  /* implicit */ DropoutOptions(double p = 0.5) : p_(p) {}
  TENSOR_ARG(double, p);
  TENSOR_ARG(bool, inplace) = false;
};

/// nn::Flatten: flattens dims start_dim..end_dim (by default all but the batch dim).
struct FlattenOptions {
  TENSOR_ARG(int64_t, start_dim) = 1;
  TENSOR_ARG(int64_t, end_dim) = -1;
};

// ---- activations ----

struct ReLUOptions {
  /* implicit */ ReLUOptions(bool inplace = false) : inplace_(inplace) {}
  TENSOR_ARG(bool, inplace);
};

struct SiLUOptions {};

/// approximate: "none" (exact, with erf) or "tanh".
struct GELUOptions {
  TENSOR_ARG(std::string, approximate) = "none";
};

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}
  TENSOR_ARG(int64_t, dim);
};

struct LogSoftmaxOptions {
  LogSoftmaxOptions(int64_t dim) : dim_(dim) {}
  TENSOR_ARG(int64_t, dim);
};

// ---- losses ----

/// nn::CrossEntropyLoss / F::cross_entropy: targets are class indices (int64) or class
/// probabilities (the input's shape and dtype).
struct CrossEntropyLossOptions {
  /// Per-class weight [C].
  TENSOR_ARG(Tensor, weight) = Tensor();
  /// Targets equal to this index add nothing to the loss nor to the mean's denominator.
  TENSOR_ARG(int64_t, ignore_index) = -100;
  TENSOR_ARG(LossReduction, reduction) = kMean;
  /// In [0, 1]: the target becomes (1 - s) * one_hot + s / C.
  TENSOR_ARG(double, label_smoothing) = 0.0;
};

/// nn::NLLLoss / F::nll_loss on log-probabilities.
struct NLLLossOptions {
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(int64_t, ignore_index) = -100;
  TENSOR_ARG(LossReduction, reduction) = kMean;
};

struct MSELossOptions {
  /* implicit */ MSELossOptions(LossReduction reduction = kMean) : reduction_(reduction) {}
  MSELossOptions(enumtype::kNone r) : reduction_(r) {}
  MSELossOptions(enumtype::kMean r) : reduction_(r) {}
  MSELossOptions(enumtype::kSum r) : reduction_(r) {}
  TENSOR_ARG(LossReduction, reduction);
};

struct L1LossOptions {
  /* implicit */ L1LossOptions(LossReduction reduction = kMean) : reduction_(reduction) {}
  L1LossOptions(enumtype::kNone r) : reduction_(r) {}
  L1LossOptions(enumtype::kMean r) : reduction_(r) {}
  L1LossOptions(enumtype::kSum r) : reduction_(r) {}
  TENSOR_ARG(LossReduction, reduction);
};

/// nn::BCEWithLogitsLoss / F::binary_cross_entropy_with_logits.
struct BCEWithLogitsLossOptions {
  /// Rescales each element's loss (broadcast against the input).
  TENSOR_ARG(Tensor, weight) = Tensor();
  TENSOR_ARG(LossReduction, reduction) = kMean;
  /// Weight of the positive term, per class (broadcast against the last dim).
  TENSOR_ARG(Tensor, pos_weight) = Tensor();
};

/// Embedding::from_pretrained: the weight is a copy-free parameter over `embeddings`.
struct EmbeddingFromPretrainedOptions {
  /// The weight does not train (requires_grad false).
  TENSOR_ARG(bool, freeze) = true;
  TENSOR_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TENSOR_ARG(std::optional<double>, max_norm) = std::nullopt;
  TENSOR_ARG(double, norm_type) = 2.;
  TENSOR_ARG(bool, scale_grad_by_freq) = false;
  TENSOR_ARG(bool, sparse) = false;
};

namespace functional {

using ReLUFuncOptions = ReLUOptions;
using GELUFuncOptions = GELUOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using MSELossFuncOptions = MSELossOptions;
using L1LossFuncOptions = L1LossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;

struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  TENSOR_ARG(int64_t, dim);
  /// Cast the input to this dtype first.
  TENSOR_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};

struct LogSoftmaxFuncOptions {
  LogSoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  TENSOR_ARG(int64_t, dim);
  TENSOR_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};

struct DropoutFuncOptions {
  TENSOR_ARG(double, p) = 0.5;
  TENSOR_ARG(bool, training) = true;
  TENSOR_ARG(bool, inplace) = false;
};

/// Options of F::pad: `pad` lists (left, right) amounts from the last dim backwards, e.g.
/// {1, 1, 2, 0} pads the last dim by 1 on each side and the one before by 2 in front.
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  TENSOR_ARG(std::vector<int64_t>, pad);
  TENSOR_ARG(PadMode, mode) = kConstant;
  /// The fill value of kConstant.
  TENSOR_ARG(double, value) = 0;
};

struct EmbeddingFuncOptions {
  TENSOR_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TENSOR_ARG(std::optional<double>, max_norm) = std::nullopt;
  TENSOR_ARG(double, norm_type) = 2.;
  TENSOR_ARG(bool, scale_grad_by_freq) = false;
  TENSOR_ARG(bool, sparse) = false;
};

}  // namespace functional
}  // namespace tensor::nn
