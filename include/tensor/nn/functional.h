// nn::functional: stateless layers and losses, as libtorch's torch::nn::functional
// (`namespace F = tensor::nn::functional;`). Everything is composed of public differentiable
// ops, so gradients (and second derivatives) come from autograd.
#pragma once

#include "tensor/core/Tensor.h"
#include "tensor/nn/options.h"

namespace tensor::nn::functional {

// ---- layers ----
/// input [..., in] x weight [out, in] (+ bias [out]) -> [..., out].
TENSOR_API Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());
/// Rows of `weight` picked by integer `input` [*] -> [*, embedding_dim]; the padding_idx row
/// gets no gradient.
TENSOR_API Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options = {});
/// In training, zeroes elements with probability p and scales the rest by 1 / (1 - p).
TENSOR_API Tensor dropout(Tensor input, const DropoutFuncOptions& options = {});
/// Pads (or, with negative amounts in kConstant mode, crops) the last pad().size() / 2 dims.
TENSOR_API Tensor pad(const Tensor& input, const PadFuncOptions& options);
/// int64 class indices [*] -> int64 [*, num_classes] with a 1 at each index; num_classes -1
/// means max(tensor) + 1.
TENSOR_API Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);

// ---- activations ----
TENSOR_API Tensor relu(Tensor input, const ReLUFuncOptions& options = {});
/// Exact GELU (approximate "none") or its tanh approximation ("tanh").
TENSOR_API Tensor gelu(const Tensor& input, const GELUFuncOptions& options = {});
TENSOR_API Tensor silu(const Tensor& input);
TENSOR_API Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options);
TENSOR_API Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options);

// ---- losses ----
/// Cross entropy of logits `input` ([C], [N, C] or [N, C, d1, ...]) against class indices
/// (int64, the input's shape without C) or class probabilities (the input's shape). The mean
/// divides by the summed weights of the non-ignored targets, as libtorch; label smoothing mixes
/// in the uniform distribution.
TENSOR_API Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});
/// Negative log-likelihood of log-probabilities `input` at class indices `target`.
TENSOR_API Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
/// (input - target)^2, reduced.
TENSOR_API Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
/// |input - target|, reduced.
TENSOR_API Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
/// Binary cross entropy on logits in the numerically stable form (no overflow for large |x|).
TENSOR_API Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                                   const BinaryCrossEntropyWithLogitsFuncOptions& options = {});

}  // namespace tensor::nn::functional
