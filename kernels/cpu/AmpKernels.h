// Internal: CPU kernels of GradScaler's ops (kernels/cpu/AmpKernels.cpp); the front ends and
// argument checks are in src/amp/AmpOps.cpp, the per-element steps in kernels/AmpMath.h.
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// Multiplies every element of each (CPU, floating, contiguous) tensor of `grads` by inv_scale in place
/// and sets *found_inf to 1 when any element was inf or NaN before.
void amp_non_finite_check_and_unscale(TensorList grads, float* found_inf, float inv_scale);

}  // namespace tensor::cpu
