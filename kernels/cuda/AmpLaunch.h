// The contract between src/cuda/CUDAAmp.cpp and kernels/cuda/AmpKernels.cu (GradScaler's ops).
#pragma once

#include <cstdint>

#include "kernels/cuda/ElementwiseLaunch.h"
#include "tensor/core/ScalarType.h"

namespace tensor::cuda_kernels {

/// Unscales n contiguous elements at `grad` (float32, float64, float16 or bfloat16) by the
/// float32 at `inv_scale` in place, and stores 1.0f at `found_inf` if any was inf or NaN. Both
/// scalars are device memory: nothing waits for the host.
LaunchStatus launch_amp_unscale(ScalarType dtype, void* grad, int64_t n, float* found_inf, const float* inv_scale,
                                void* stream);
/// One _amp_update_scale_ step on device-resident scale, growth tracker and found_inf.
LaunchStatus launch_amp_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf,
                                     double growth_factor, double backoff_factor, int64_t growth_interval, void* stream);

}  // namespace tensor::cuda_kernels
