// Internal: the backend-neutral contract of the CTC loss kernels (_ctc_loss and its backward):
// the geometry the front end (src/ops/LossOps.cpp) hands every backend, and what each kernel
// of ops::LossKernels (src/ops/LossOps.h) must do. The CPU kernels are declared in
// kernels/cpu/LossKernels.h. Standard headers only, so any backend's code can include it.
//
// ctc_loss(log_probs, targets, a, neg_log_likelihood, log_alpha): fills neg_log_likelihood (N)
//   and log_alpha (N, T, 2 * max_target_length + 1), both contiguous, from log_probs (T, N, C),
//   float32 or float64, any strides. Throws naming _ctc_loss when a target value is outside
//   [0, C).
// ctc_loss_backward(grad, log_probs, targets, a, neg_log_likelihood, log_alpha, grad_input):
//   fills grad_input (T, N, C), contiguous, with grad[b] times the derivative of sample b's
//   negative log-likelihood with respect to log_probs (Note [CTC gradient] in
//   kernels/cpu/LossKernels.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace tensor::kernels {

/// The geometry of one _ctc_loss call, checked by the front end (src/ops/LossOps.cpp): sample b
/// aligns input_lengths[b] <= T steps to target_lengths[b] labels read from the contiguous
/// int64 targets at tg_offsets[b] + i * tg_stride.
struct CtcArgs {
  int64_t T = 0, N = 0, C = 0;
  int64_t max_target_length = 0;
  std::vector<int64_t> input_lengths, target_lengths, tg_offsets;
  int64_t tg_stride = 1;
  int64_t blank = 0;
  bool zero_infinity = false;
};

}  // namespace tensor::kernels
