// GradScaler's two ops on CUDA, with the per-element steps of kernels/AmpMath.h that the CPU
// kernels run too. found_inf is written (with 1.0f) only by threads that saw a non-finite
// value, so concurrent writes all store the same value and need no atomics.
#include <cuda_runtime.h>

#include "kernels/AmpMath.h"
#include "kernels/cuda/AmpLaunch.h"
#include "kernels/cuda/Loops.cuh"

namespace tensor::cuda_kernels {

namespace {

constexpr int kAmpThreads = 256;

template <class T>
__global__ void __launch_bounds__(kAmpThreads)
    amp_unscale_kernel(T* g, int64_t n, float* found_inf, const float* inv_scale_p) {
  using C = math::opmath_t<T>;
  const C inv_scale = static_cast<C>(*inv_scale_p);
  bool bad = false;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kAmpThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kAmpThreads + threadIdx.x; i < n; i += stride) {
    const C v = static_cast<C>(g[i]);
    bad = bad || amp_math::non_finite(v);
    g[i] = static_cast<T>(amp_math::unscale(v, inv_scale));
  }
  if (bad) *found_inf = 1.0f;
}

__global__ void amp_update_scale_kernel(float* scale, int32_t* growth_tracker, const float* found_inf,
                                        double growth_factor, double backoff_factor, int64_t growth_interval) {
  amp_math::update_scale(*scale, *growth_tracker, *found_inf, growth_factor, backoff_factor, growth_interval);
}

}  // namespace

LaunchStatus launch_amp_unscale(ScalarType dtype, void* grad, int64_t n, float* found_inf, const float* inv_scale,
                                void* stream) {
  if (n == 0) return 0;
  return dispatch_real<4u | 8u>(dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    const int64_t want = (n + kAmpThreads - 1) / kAmpThreads;
    const unsigned blocks = static_cast<unsigned>(want < 65536 ? want : 65536);
    amp_unscale_kernel<T><<<blocks, kAmpThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<T*>(grad), n,
                                                                                       found_inf, inv_scale);
    return static_cast<LaunchStatus>(cudaGetLastError());
  });
}

LaunchStatus launch_amp_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf,
                                     double growth_factor, double backoff_factor, int64_t growth_interval,
                                     void* stream) {
  amp_update_scale_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(scale, growth_tracker, found_inf,
                                                                          growth_factor, backoff_factor,
                                                                          growth_interval);
  return static_cast<LaunchStatus>(cudaGetLastError());
}

}  // namespace tensor::cuda_kernels
