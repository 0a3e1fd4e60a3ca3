// Internal: the CPU loops of the CTC loss (kernels/cpu/LossKernels.cpp). Each does what its
// backend-neutral contract in kernels/Loss.h says.
#pragma once

#include "kernels/Loss.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

// The contract's geometry, under the name the CPU code uses.
using kernels::CtcArgs;

/// CPU's ctc_loss kernel: neg_log_likelihood and log_alpha from log_probs.
void ctc_loss(const Tensor& log_probs, const Tensor& targets, const CtcArgs& a, const Tensor& neg_log_likelihood,
              const Tensor& log_alpha);

/// CPU's ctc_loss_backward kernel: grad_input from grad and the forward's results (Note [CTC
/// gradient]).
void ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets, const CtcArgs& a,
                       const Tensor& neg_log_likelihood, const Tensor& log_alpha, const Tensor& grad_input);

// Note [Fused CPU losses]
// nll_loss, cross_entropy, huber_loss (and smooth_l1_loss), multi_margin_loss and
// binary_cross_entropy_with_logits are composites of public ops in nn (so that their gradients
// come from the ops' own). Without autograd recording, on CPU float32/float64 inputs, each runs
// instead as one pass below: the composites ran 9 to 16 dispatched ops, each with its own
// output (nll_loss on 64 rows took 4 us, torch 2.15's one kernel 0.7 us; cross_entropy on
// [64, 64] 9 us, torch 2.15's log_softmax and nll_loss 3.6 us; huber and multi_margin on 16M
// elements wrote half a dozen 64 MB temporaries; binary_cross_entropy_with_logits ran about
// twelve elementwise ops and a mean, 1.6x torch 2.15's time on 4K elements). The per-element
// formulas are the composites' own (binary_cross_entropy_with_logits' in its log1p form, below),
// in the input's dtype; sums accumulate in float blocks added into double (as the reductions
// do), so the results agree with the composites to the rounding of the sum. The front ends
// (src/ops/LossOps.cpp) fall back to the composites for anything else, and for invalid targets,
// whose error messages the composites give.

/// nll_loss of a contiguous [N, C] input and contiguous int64 [N] target: row n contributes
/// -w_n input[n, t_n], w_n = weight[t_n] (1 without a weight; 0 where t_n == ignore_index).
/// reduction 0: out [N] holds each row's loss; 1 (mean): out = sum / sum w_n; 2: the sum.
/// Returns false, out untouched, when a target other than ignore_index lies outside [0, C).
bool nll_loss_forward(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                      int64_t ignore_index, const Tensor& out);

/// cross_entropy of a contiguous [N, C] input (logits) and contiguous int64 [N] target without
/// label smoothing: nll_loss_forward of log_softmax(input, 1), each row's log_softmax entry at
/// its target computed as softmax_kernel computes it, without writing the [N, C] log_softmax.
/// Returns false, out untouched, when a target other than ignore_index lies outside [0, C).
bool cross_entropy_forward(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                           int64_t ignore_index, const Tensor& out);

/// huber_loss of contiguous input and target of one shape: d = |x - t|, d < delta ? d^2 / 2 :
/// (d - delta / 2) delta; reduction as for nll_loss (mean divides by the element count). With
/// smooth_l1, smooth_l1_loss with beta = delta: d < beta ? d^2 (0.5 / beta) : d - beta / 2 (the
/// Huber loss over beta, in the composite's own formula).
void huber_loss_forward(const Tensor& input, const Tensor& target, double delta, int64_t reduction,
                        const Tensor& out, bool smooth_l1 = false);

/// binary_cross_entropy_with_logits of contiguous input x, target t and optional weight w and
/// pos_weight p, all of one shape: (1 - t) x + l_p sp(x), times w, where sp(x) = log(1 + e^-x)
/// = max(-x, 0) + log1p(e^-|x|) (the composite's overflow-free m + log(e^-m + e^(-x-m)) in
/// libtorch's log_sigmoid form: equal to rounding, and exact where e^-|x| is below the
/// rounding of 1; Highway's Exp and Log1p, rows::softplus_neg) and l_p = (p - 1) t + 1 (1
/// without pos_weight); reduction as for huber_loss.
void bce_with_logits_forward(const Tensor& input, const Tensor& target, const Tensor& weight,
                             const Tensor& pos_weight, int64_t reduction, const Tensor& out);

/// multi_margin_loss of a contiguous [N, C] input and int64 [N] target: row n's loss is
/// sum over c != y of max(0, margin - x[n, y] + x[n, c])^p * w[y] / C (p 1 or 2; w 1 without a
/// weight). Returns false, out untouched, when a target lies outside [0, C).
bool multi_margin_loss_forward(const Tensor& input, const Tensor& target, int64_t p, double margin,
                               const Tensor& weight, int64_t reduction, const Tensor& out);

/// nll_loss_forward's gradient with respect to its input, into the contiguous [N, C] grad_input
/// of the input's dtype: zero except grad_input[n, t_n] = -w_n g_n, where g_n is grad[n] for
/// reduction 0, else grad[0] (over sum w_n for the mean). Ignored rows stay zero (libtorch's
/// kernel; so a mean over only ignored targets has a zero gradient, not NaN). The targets were
/// checked by the forward; grad is contiguous, of the input's dtype.
void nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& weight, int64_t reduction,
                       int64_t ignore_index, const Tensor& grad_input);

/// multi_margin_loss_forward's gradient with respect to its input, into the contiguous [N, C]
/// grad_input, one pass over each row: with s = g_n w[y] / C (g_n as for nll_loss_backward, the
/// mean dividing by N) and m_c = margin - x[n, y] + x[n, c], class c != y gets s (p 1) or
/// 2 m_c s (p 2) where m_c > 0, else 0, and class y minus their sum.
void multi_margin_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, int64_t p,
                                double margin, const Tensor& weight, int64_t reduction, const Tensor& grad_input);

}  // namespace tensor::cpu
