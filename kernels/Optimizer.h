// Internal: the backend-neutral contract of the fused optimizer steps (Note [Fused optimizer
// steps] in kernels/cpu/OptimizerKernels.h): the scalars every backend's kernel takes. The
// per-element formulas are kernels/math/Optim.h's; the CPU kernels are in kernels/cpu, the
// CUDA ones in kernels/cuda/OptimizerKernels.cu.
#pragma once

namespace tensor::kernels {

/// torch.optim.SGD's hyperparameters for one step.
struct SGDScalars {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize, first_step;
};

/// torch.optim.Adam(W)'s hyperparameters for one step (step_size and bias_correction2_sqrt
/// already folded from the step count, as torch.optim.adam's single-tensor form does).
struct AdamScalars {
  double lr, beta1, beta2, eps, weight_decay, step_size, bias_correction2_sqrt;
  bool amsgrad, maximize, decoupled;
};

}  // namespace tensor::kernels
