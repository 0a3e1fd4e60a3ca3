// The fused SGD and Adam(W) steps on CUDA: one pass over each parameter-sized tensor, with the
// per-element formulas of kernels/math/Optim.h (the CPU's fused loops run the same ones). The
// flags stay run-time arguments: they are uniform across a launch, so each dtype needs one
// kernel, not one per flag combination.
#include <cuda_runtime.h>

#include "kernels/cuda/Loops.cuh"
#include "kernels/cuda/OptimizerBody.h"
#include "kernels/cuda/OptimizerLaunch.h"

namespace tensor::cuda_kernels {

namespace {

constexpr int kOptimThreads = 256;

unsigned optim_blocks(int64_t n) {
  // Grid-stride: enough blocks to fill any current GPU several times over.
  const int64_t want = (n + kOptimThreads - 1) / kOptimThreads;
  return static_cast<unsigned>(want < 65536 ? want : 65536);
}

template <class T>
__global__ void __launch_bounds__(kOptimThreads)
    fused_sgd_kernel(T* p, const T* g, T* buf, int64_t n, math::optim::SgdCoeffs<math::opmath_t<T>> c) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kOptimThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kOptimThreads + threadIdx.x; i < n; i += stride)
    fused_sgd_body(p, g, buf, i, c);
}

template <class T>
__global__ void __launch_bounds__(kOptimThreads)
    fused_adam_kernel(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, math::optim::AdamCoeffs<math::opmath_t<T>> c) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kOptimThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kOptimThreads + threadIdx.x; i < n; i += stride)
    fused_adam_body(p, g, m, v, vmax, i, c);
}

constexpr unsigned kFloatingGroups = 4u | 8u;  // dispatch_real: float32/float64, float16/bfloat16

}  // namespace

LaunchStatus launch_fused_sgd(const FusedOptimLaunch& l, const kernels::SGDScalars& s) {
  if (l.n == 0) return 0;
  return dispatch_real<kFloatingGroups>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    const math::optim::SgdCoeffs<math::opmath_t<T>> c(s.lr, s.momentum, s.dampening, s.weight_decay, s.nesterov,
                                                      s.maximize, s.first_step);
    fused_sgd_kernel<T><<<optim_blocks(l.n), kOptimThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(
        static_cast<T*>(l.param), static_cast<const T*>(l.grad), static_cast<T*>(l.state[0]), l.n, c);
    return static_cast<LaunchStatus>(cudaGetLastError());
  });
}

LaunchStatus launch_fused_adam(const FusedOptimLaunch& l, const kernels::AdamScalars& s) {
  if (l.n == 0) return 0;
  return dispatch_real<kFloatingGroups>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    const math::optim::AdamCoeffs<math::opmath_t<T>> c(s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, s.step_size,
                                                       s.bias_correction2_sqrt, s.amsgrad, s.maximize, s.decoupled);
    fused_adam_kernel<T><<<optim_blocks(l.n), kOptimThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(
        static_cast<T*>(l.param), static_cast<const T*>(l.grad), static_cast<T*>(l.state[0]),
        static_cast<T*>(l.state[1]), static_cast<T*>(l.state[2]), l.n, c);
    return static_cast<LaunchStatus>(cudaGetLastError());
  });
}

}  // namespace tensor::cuda_kernels
