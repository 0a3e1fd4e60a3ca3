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

}  // namespace tensor::cpu
