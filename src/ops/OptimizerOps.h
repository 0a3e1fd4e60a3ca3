// Internal: dispatcher tables of the fused optimizer steps (src/ops/OptimizerOps.cpp), so that a
// backend (CUDA) can register its fused kernel in their slots.
#pragma once

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// _fused_sgd_: (param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov,
/// maximize, is_first_step).
using FusedSgdFn = void(const Tensor&, const Tensor&, const Tensor&, double, double, double, double, bool, bool, bool);
/// _fused_adam_: (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps,
/// weight_decay, step_size, bias_correction2_sqrt, amsgrad, maximize, decoupled).
using FusedAdamFn = void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, double,
                         double, double, double, double, double, bool, bool, bool);

dispatch::OpDef<FusedSgdFn>& fused_sgd_op();
dispatch::OpDef<FusedAdamFn>& fused_adam_op();

}  // namespace tensor::ops
