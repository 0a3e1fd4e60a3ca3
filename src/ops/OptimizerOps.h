// Internal: dispatcher tables of the fused optimizer steps (src/ops/OptimizerOps.cpp), so that a
// backend (CUDA) can register its fused kernel in their slots.
#pragma once

#include "kernels/Optimizer.h"
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

/// A backend's fused SGD step: p and buf (null when momentum is 0) updated in place. Called
/// by the front end after its checks, only when every tensor is contiguous, of p's shape,
/// dtype (floating) and device, and not lazily conjugated; other layouts take the tensor-op form.
using FusedSgdKernel = void (*)(const Tensor& p, const Tensor& grad, const Tensor& buf, const kernels::SGDScalars& s);
/// A backend's fused Adam(W) step: p, m, v (and vmax with amsgrad; else undefined) in place,
/// under the same conditions as FusedSgdKernel.
using FusedAdamKernel = void (*)(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v,
                                 const Tensor& vmax, const kernels::AdamScalars& s);
/// Registers a backend's (CUDA's) fused kernel: that backend's slot of _fused_sgd_ /
/// _fused_adam_ then runs the checks and this kernel (the tensor-op form for other layouts).
TENSOR_API void register_kernel(DispatchKey backend, FusedSgdKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, FusedAdamKernel kernel);

}  // namespace tensor::ops
