// libtorch's torch:: free functions of nn: losses, activations, dropout, distances, pixel
// shuffle, bilinear and the recurrent cells, with ATen's signatures (`reduction` is an int64,
// `tensor::Reduction::Mean`; weights are optional tensors). nn::functional holds the same
// operations with libtorch's options structs (`F::mse_loss(x, y, F::MSELossFuncOptions(kSum))`).
// Everything is composed of public differentiable ops, so autograd supplies the gradients (and
// second derivatives). Bad arguments raise tensor::Error naming the op, shapes and dtypes.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "tensor/core/Tensor.h"
#include "tensor/nn/enum.h"

namespace tensor {

// ---- activations ----
/// x if x > 0 else negative_slope * x.
TENSOR_API Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01);
TENSOR_API Tensor& leaky_relu_(Tensor& self, const Scalar& negative_slope = 0.01);
/// scale * (x if x > 0 else alpha * (exp(input_scale * x) - 1)).
TENSOR_API Tensor elu(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1,
                      const Scalar& input_scale = 1);
TENSOR_API Tensor& elu_(Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1);
/// elu with alpha = 1.6732632423543772, scale = 1.0507009873554805 (self-normalizing).
TENSOR_API Tensor selu(const Tensor& self);
TENSOR_API Tensor& selu_(Tensor& self);
/// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
TENSOR_API Tensor celu(const Tensor& self, const Scalar& alpha = 1.0);
TENSOR_API Tensor& celu_(Tensor& self, const Scalar& alpha = 1.0);
/// log(1 + exp(beta * x)) / beta, and x where beta * x > threshold.
TENSOR_API Tensor softplus(const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20);
/// Clamps to [min_val, max_val]; the gradient passes strictly inside.
TENSOR_API Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
TENSOR_API Tensor& hardtanh_(Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
/// min(max(x, 0), 6).
TENSOR_API Tensor relu6(const Tensor& self);
TENSOR_API Tensor& relu6_(Tensor& self);
/// log(sigmoid(x)), computed without overflow.
TENSOR_API Tensor log_sigmoid(const Tensor& self);
/// relu6(x + 3) / 6.
TENSOR_API Tensor hardsigmoid(const Tensor& self);
/// x * relu6(x + 3) / 6.
TENSOR_API Tensor hardswish(const Tensor& self);
/// x * tanh(softplus(x)).
TENSOR_API Tensor mish(const Tensor& self);
/// Splits `dim` in halves a, b and returns a * sigmoid(b) (the dim's size must be even).
TENSOR_API Tensor glu(const Tensor& self, int64_t dim = -1);
/// x if x > threshold else value.
TENSOR_API Tensor threshold(const Tensor& self, const Scalar& threshold, const Scalar& value);
TENSOR_API Tensor& threshold_(Tensor& self, const Scalar& threshold, const Scalar& value);
/// x if x > 0 else weight * x, weight of 1 element or one per channel (dim 1; dim 0 for a 1-d input).
TENSOR_API Tensor prelu(const Tensor& self, const Tensor& weight);
/// x - lambd if x > lambd, x + lambd if x < -lambd, else 0.
TENSOR_API Tensor softshrink(const Tensor& self, const Scalar& lambd = 0.5);
/// x where |x| > lambd, else 0.
TENSOR_API Tensor hardshrink(const Tensor& self, const Scalar& lambd = 0.5);
/// Randomized leaky ReLU: in training the negative slope of each element is drawn from
/// U(lower, upper); otherwise it is (lower + upper) / 2.
TENSOR_API Tensor rrelu(const Tensor& self, const Scalar& lower = 1.0 / 8.0, const Scalar& upper = 1.0 / 3.0,
                        bool training = false);

// ---- dropout ----
/// In training (`train`), zeroes each element with probability p and scales the rest by 1 / (1 - p).
TENSOR_API Tensor dropout(const Tensor& input, double p, bool train);
TENSOR_API Tensor& dropout_(Tensor& self, double p, bool train);
/// Dropout of whole channels: one draw per (N, C) for an (N, C, *) input (Dropout2d / Dropout3d).
TENSOR_API Tensor feature_dropout(const Tensor& input, double p, bool train);
/// Dropout that keeps a SELU network's mean and variance: dropped elements become
/// -1.7580993408473766 before an affine correction.
TENSOR_API Tensor alpha_dropout(const Tensor& input, double p, bool train);
/// alpha_dropout with one draw per (N, C) channel.
TENSOR_API Tensor feature_alpha_dropout(const Tensor& input, double p, bool train);

// ---- losses (reduction: tensor::Reduction::None, Mean or Sum) ----
/// Negative log-likelihood of log-probabilities `self` ([C], [N, C] or [N, C, d1, ...]) at the
/// int64 class indices `target`; the mean divides by the summed weights of non-ignored targets.
TENSOR_API Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                           int64_t reduction = Reduction::Mean, int64_t ignore_index = -100);
/// nll_loss for [N, C, H, W] inputs (the same function: nll_loss takes any trailing dims).
TENSOR_API Tensor nll_loss2d(const Tensor& self, const Tensor& target,
                             const std::optional<Tensor>& weight = std::nullopt, int64_t reduction = Reduction::Mean,
                             int64_t ignore_index = -100);
/// log_softmax over the class dim then nll_loss, or soft targets (class probabilities); as F::cross_entropy.
TENSOR_API Tensor cross_entropy_loss(const Tensor& self, const Tensor& target,
                                     const std::optional<Tensor>& weight = std::nullopt,
                                     int64_t reduction = Reduction::Mean, int64_t ignore_index = -100,
                                     double label_smoothing = 0.0);
/// -w * (t * log(x) + (1 - t) * log(1 - x)) for probabilities x in [0, 1]; each log is clamped
/// at -100 so that x = 0 or 1 gives a finite loss, as libtorch.
TENSOR_API Tensor binary_cross_entropy(const Tensor& self, const Tensor& target,
                                       const std::optional<Tensor>& weight = std::nullopt,
                                       int64_t reduction = Reduction::Mean);
/// Binary cross entropy on logits, in the form that does not overflow.
TENSOR_API Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                                   const std::optional<Tensor>& weight = std::nullopt,
                                                   const std::optional<Tensor>& pos_weight = std::nullopt,
                                                   int64_t reduction = Reduction::Mean);
/// (x - y)^2.
TENSOR_API Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean);
/// |x - y|.
TENSOR_API Tensor l1_loss(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean);
/// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = x - y; beta = 0 is l1_loss).
TENSOR_API Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean,
                                 double beta = 1.0);
/// 0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta).
TENSOR_API Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean,
                             double delta = 1.0);
/// target * (log(target) - self) for log-probabilities `self` (target in log space with
/// log_target). Reduction::Mean averages over every element (F::kl_div has kBatchMean).
TENSOR_API Tensor kl_div(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean,
                         bool log_target = false);
/// log(1 + exp(-y * x)) for targets y in {1, -1}.
TENSOR_API Tensor soft_margin_loss(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean);
/// max(0, -y * (x1 - x2) + margin).
TENSOR_API Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                                      double margin = 0.0, int64_t reduction = Reduction::Mean);
/// x where y == 1, max(0, margin - x) where y == -1.
TENSOR_API Tensor hinge_embedding_loss(const Tensor& self, const Tensor& target, double margin = 1.0,
                                       int64_t reduction = Reduction::Mean);
/// 1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1 (cosine over the last dim).
TENSOR_API Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                                        double margin = 0.0, int64_t reduction = Reduction::Mean);
/// exp(x) - y * x with log_input, else x - y * log(x + eps); `full` adds Stirling's
/// approximation y log y - y + 0.5 log(2 pi y) where y > 1.
TENSOR_API Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                                   int64_t reduction);
/// max(0, margin + d(a, p) - d(a, n)) with d the p-norm pairwise_distance (swap: d(a, n)
/// becomes min(d(a, n), d(p, n))).
TENSOR_API Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                      double margin = 1.0, double p = 2, double eps = 1e-6, bool swap = false,
                                      int64_t reduction = Reduction::Mean);
/// Multi-class hinge loss: sum over i != y of max(0, margin - x[y] + x[i])^p * w[y], divided by C.
TENSOR_API Tensor multi_margin_loss(const Tensor& self, const Tensor& target, const Scalar& p = 1,
                                    const Scalar& margin = 1, const std::optional<Tensor>& weight = std::nullopt,
                                    int64_t reduction = Reduction::Mean);
/// Multi-label hinge loss; `target` holds class indices per row, ended by the first -1.
TENSOR_API Tensor multilabel_margin_loss(const Tensor& self, const Tensor& target,
                                         int64_t reduction = Reduction::Mean);
/// CTC loss of log_probs (T, N, C) or (T, C) against targets (N, S) padded or 1-d
/// concatenated (int64 or int32), with each sample's input and target lengths; Reduction::Mean
/// divides each loss by its target length (at least 1) before averaging.
TENSOR_API Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                           IntArrayRef target_lengths, int64_t blank = 0, int64_t reduction = Reduction::Mean,
                           bool zero_infinity = false);
/// ctc_loss with the lengths as integer tensors (1-d, or 0-d for an unbatched input).
TENSOR_API Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                           const Tensor& target_lengths, int64_t blank = 0, int64_t reduction = Reduction::Mean,
                           bool zero_infinity = false);
/// The CTC op on batched (T, N, C) log_probs: (neg_log_likelihood (N), log_alpha (N, T, 2 * max
/// target length + 1)). Differentiable in log_probs.
TENSOR_API std::tuple<Tensor, Tensor> _ctc_loss(const Tensor& log_probs, const Tensor& targets,
                                                IntArrayRef input_lengths, IntArrayRef target_lengths,
                                                int64_t blank = 0, bool zero_infinity = false);
/// _ctc_loss with the lengths as integer tensors.
TENSOR_API std::tuple<Tensor, Tensor> _ctc_loss(const Tensor& log_probs, const Tensor& targets,
                                                const Tensor& input_lengths, const Tensor& target_lengths,
                                                int64_t blank = 0, bool zero_infinity = false);
/// The gradient of _ctc_loss's neg_log_likelihood with respect to log_probs, given its outputs.
TENSOR_API Tensor _ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                                     IntArrayRef input_lengths, IntArrayRef target_lengths,
                                     const Tensor& neg_log_likelihood, const Tensor& log_alpha, int64_t blank,
                                     bool zero_infinity = false);

// ---- distances ----
/// Cosine of the angle between x1 and x2 along dim (broadcast), each norm clamped at eps.
TENSOR_API Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
/// ||x1 - x2 + eps||_p over the last dim.
TENSOR_API Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2, double eps = 1e-6,
                                    bool keepdim = false);

// ---- layers ----
/// [*, C * r^2, H, W] -> [*, C, H * r, W * r].
TENSOR_API Tensor pixel_shuffle(const Tensor& self, int64_t upscale_factor);
/// [*, C, H * r, W * r] -> [*, C * r^2, H, W], the inverse of pixel_shuffle.
TENSOR_API Tensor pixel_unshuffle(const Tensor& self, int64_t downscale_factor);
/// y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o]; input1 [*, in1], input2 [*, in2],
/// weight [out, in1, in2], bias [out].
TENSOR_API Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                           const std::optional<Tensor>& bias = std::nullopt);

// ---- recurrent cells (gate order as libtorch: LSTM i, f, g, o; GRU r, z, n) ----
/// One LSTM step: input [N, I] (or [I]), hx = {h [N, H], c [N, H]}, w_ih [4H, I], w_hh [4H, H];
/// returns (h', c').
TENSOR_API std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, TensorList hx, const Tensor& w_ih,
                                                const Tensor& w_hh, const std::optional<Tensor>& b_ih = std::nullopt,
                                                const std::optional<Tensor>& b_hh = std::nullopt);
/// One GRU step: w_ih [3H, I], w_hh [3H, H]; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
TENSOR_API Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                           const std::optional<Tensor>& b_ih = std::nullopt,
                           const std::optional<Tensor>& b_hh = std::nullopt);
/// tanh(W_ih x + b_ih + W_hh h + b_hh).
TENSOR_API Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                                const std::optional<Tensor>& b_ih = std::nullopt,
                                const std::optional<Tensor>& b_hh = std::nullopt);
/// relu(W_ih x + b_ih + W_hh h + b_hh).
TENSOR_API Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                                const std::optional<Tensor>& b_ih = std::nullopt,
                                const std::optional<Tensor>& b_hh = std::nullopt);

}  // namespace tensor
