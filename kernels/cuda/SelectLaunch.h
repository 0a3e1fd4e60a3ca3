// The launchers of where, clamp and threshold_backward on the elementwise engine
// (kernels/cuda/SelectKernels.cu), called by src/cuda/CUDAElementwise.cpp and, for masked_fill,
// src/cuda/CUDAIndex.cpp. Plain data only (kernels/cuda/ElementwiseLaunch.h).
#pragma once

#include "kernels/cuda/ElementwiseLaunch.h"

namespace tensor::cuda_kernels {

/// out = cond ? a : b over a 4-operand launch (out, cond, a, b): cond bool, `dtype` the dtype of
/// out, a and b (any real dtype). Any input may be a CPU scalar.
LaunchStatus launch_where(const ElementwiseLaunch& l);
/// out = clamp(a, lo, hi) (out, a of `dtype`: integers and floating types); a bound is used only
/// when has_lo / has_hi, its value already in range for dtype (checked on the host).
LaunchStatus launch_clamp(const ElementwiseLaunch& l, ScalarArg lo, bool has_lo, ScalarArg hi, bool has_hi);
/// out = self <= threshold ? 0 : grad (out, grad, self of one floating `dtype`).
LaunchStatus launch_threshold_backward(const ElementwiseLaunch& l, ScalarArg threshold);

}  // namespace tensor::cuda_kernels
