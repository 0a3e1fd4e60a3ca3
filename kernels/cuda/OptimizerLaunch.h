// The contract between src/cuda/CUDAOptimizer.cpp and the fused optimizer kernels of
// kernels/cuda/OptimizerKernels.cu: plain pointers and the backend-neutral scalars.
#pragma once

#include <cstdint>

#include "kernels/Optimizer.h"
#include "kernels/cuda/ElementwiseLaunch.h"
#include "tensor/core/ScalarType.h"

namespace tensor::cuda_kernels {

/// The tensors of one fused step: n contiguous elements each, all of dtype `dtype` (float32,
/// float64, float16 or bfloat16; the half types compute in float). Unused state is null.
struct FusedOptimLaunch {
  ScalarType dtype = ScalarType::Float;
  int64_t n = 0;
  void* param = nullptr;
  const void* grad = nullptr;
  void* state[3] = {};  // SGD: momentum_buffer; Adam: exp_avg, exp_avg_sq, max_exp_avg_sq
  void* stream = nullptr;  // cudaStream_t
};

/// One SGD step over `l` (state[0] is the momentum buffer when momentum != 0).
LaunchStatus launch_fused_sgd(const FusedOptimLaunch& l, const kernels::SGDScalars& s);
/// One Adam(W) step over `l` (state: exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad).
LaunchStatus launch_fused_adam(const FusedOptimLaunch& l, const kernels::AdamScalars& s);

}  // namespace tensor::cuda_kernels
