// nn::AdaptiveLogSoftmaxWithLoss, as libtorch's torch/nn/modules/adaptive.h (Grave et al.,
// "Efficient softmax approximation for GPUs"): a head over the shortlist and one cluster token
// per tail cluster, each tail a projection then a linear layer (`tail.i.0`, `tail.i.1`).
#pragma once

#include <cstdint>
#include <ostream>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// AdaptiveLogSoftmaxWithLossOptions(in_features, n_classes, cutoffs).div_value(4.).head_bias(false).
struct AdaptiveLogSoftmaxWithLossOptions {
  AdaptiveLogSoftmaxWithLossOptions(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : in_features_(in_features), n_classes_(n_classes), cutoffs_(std::move(cutoffs)) {}
  /// The number of features of the input.
  TENSOR_ARG(int64_t, in_features);
  /// The number of classes.
  TENSOR_ARG(int64_t, n_classes);
  /// Increasing cluster boundaries in (0, n_classes).
  TENSOR_ARG(std::vector<int64_t>, cutoffs);
  /// Each cluster's projection size is in_features / div_value^(cluster index + 1), floored.
  TENSOR_ARG(double, div_value) = 4.;
  /// Whether the head has a bias.
  TENSOR_ARG(bool, head_bias) = false;
};

/// forward's result: the target's log-probability per sample, and the mean negative of it
/// (a double, as libtorch's: train on (-output).mean()).
struct TENSOR_API ASMoutput {
  ASMoutput(Tensor output_, double loss_);
  Tensor output;
  double loss;
};

/// Adaptive softmax with its loss.
class TENSOR_API AdaptiveLogSoftmaxWithLossImpl : public Module {
 public:
  AdaptiveLogSoftmaxWithLossImpl(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions(in_features, n_classes, std::move(cutoffs))) {}
  explicit AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options_);
  /// input (N, in_features) or (in_features), target (N) or 0-d int64 -> (log-probability of
  /// each target, the mean loss).
  ASMoutput forward(const Tensor& input, const Tensor& target);
  /// Builds the head and tail layers anew.
  void reset();
  /// Re-initializes every layer's parameters.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  /// The full (N, n_classes) log-probabilities from the head's output.
  Tensor _get_full_log_prob(const Tensor& input, const Tensor& head_output);
  /// Log-probabilities of every class: (N, n_classes), or (n_classes) for an unbatched input.
  Tensor log_prob(const Tensor& input);
  /// The most likely class of each sample (argmax of log_prob, computed cheaply when the head decides).
  Tensor predict(const Tensor& input);

  AdaptiveLogSoftmaxWithLossOptions options;
  /// The cutoffs with n_classes appended.
  std::vector<int64_t> cutoffs;
  int64_t shortlist_size = 0;
  int64_t n_clusters = 0;
  int64_t head_size = 0;
  Linear head = nullptr;
  ModuleList tail;
};
TENSOR_MODULE(AdaptiveLogSoftmaxWithLoss);

}  // namespace tensor::nn
