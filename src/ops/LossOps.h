// Internal: dispatcher table of the loss ops with their own kernels (_ctc_loss and its
// backward), so that wrapping layers (autograd) can fill their slots and backends can register
// kernels. CPU and Meta slots: the front ends of src/ops/LossOps.cpp (Note [Front ends and
// backend kernels]), whose CPU kernels are in kernels/cpu/LossKernels.cpp.
#pragma once

#include <tuple>

#include "kernels/Loss.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// _ctc_loss: (log_probs (T, N, C), targets (N, S) or 1-d concatenated, input_lengths,
/// target_lengths, blank, zero_infinity) -> (neg_log_likelihood (N), log_alpha (N, T, 2 S + 1)).
using CtcLossFn = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, int64_t, bool);
/// _ctc_loss_backward: (grad (N), log_probs, targets, input_lengths, target_lengths,
/// neg_log_likelihood, log_alpha, blank, zero_infinity) -> the gradient of log_probs.
using CtcLossBwdFn = Tensor(const Tensor&, const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, const Tensor&,
                            const Tensor&, int64_t, bool);

/// A backend's kernels (called after the front end's checks; never on meta tensors). targets is
/// contiguous int64; the outputs are allocated (contiguous) by the front end. What each fills:
/// kernels/Loss.h.
struct LossKernels {
  void (*ctc_loss)(const Tensor& log_probs, const Tensor& targets, const kernels::CtcArgs& a,
                   const Tensor& neg_log_likelihood, const Tensor& log_alpha) = nullptr;
  void (*ctc_loss_backward)(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                            const kernels::CtcArgs& a, const Tensor& neg_log_likelihood, const Tensor& log_alpha,
                            const Tensor& grad_input) = nullptr;
};

struct LossOpDefs {
  dispatch::OpDef<CtcLossFn> ctc_loss;
  dispatch::OpDef<CtcLossBwdFn> ctc_loss_backward;
};

/// The one table of the loss ops with kernels.
LossOpDefs& loss_ops();

/// CPU fast paths of losses that nn composes from public ops (Note [Fused CPU losses] in
/// kernels/cpu/LossKernels.h): the loss in one kernel call where nothing records a gradient
/// and the inputs are CPU float32/float64; an undefined Tensor where they do not apply (the
/// caller then runs its composite). reduction: tensor::Reduction (None 0, Mean 1, Sum 2).
/// fused_huber_loss with smooth_l1 is smooth_l1_loss with beta = delta (> 0).
Tensor fused_nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                      int64_t ignore_index);
/// fused_cross_entropy is cross_entropy with class-index targets and no label smoothing.
Tensor fused_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                           int64_t ignore_index);
Tensor fused_huber_loss(const Tensor& input, const Tensor& target, int64_t reduction, double delta,
                        bool smooth_l1 = false);
Tensor fused_multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p, double margin,
                               const Tensor& weight, int64_t reduction);
/// fused_bce_with_logits is binary_cross_entropy_with_logits; weight and pos_weight (either may
/// be undefined) must have the input's shape (other broadcasts take the composite).
Tensor fused_bce_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                             const Tensor& pos_weight, int64_t reduction);

/// The gradients of fused_nll_loss and fused_multi_margin_loss with respect to their [N, C]
/// input, in one pass (cpu::nll_loss_backward, cpu::multi_margin_loss_backward) for the nn
/// Functions' backward: where the CPU kernels apply (CPU float32/float64, grad of the loss's
/// shape and dtype, targets checked by the forward), else an undefined Tensor (the caller then
/// runs its formula in public ops). The nll gradient takes the input's class count C and is of
/// grad's dtype (the input's); the targets are the forward's int64 [N].
Tensor fused_nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& weight, int64_t reduction,
                               int64_t ignore_index, int64_t n_classes);
Tensor fused_multi_margin_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, int64_t p,
                                        double margin, const Tensor& weight, int64_t reduction);

/// Registers a backend's (CUDA's) kernels of the loss ops.
void register_kernel(DispatchKey backend, const LossKernels& kernels);

}  // namespace tensor::ops
