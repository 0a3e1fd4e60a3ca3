// arange and linspace on CUDA: one element per thread, grid-stride over 64-bit indices, with
// the bodies of kernels/cuda/RandomBody.h that the CPU kernels run too, so both devices give the
// same values in every dtype.
#include <cuda_runtime.h>

#include "kernels/cuda/FactoryLaunch.h"
#include "kernels/cuda/Loops.cuh"
#include "kernels/cuda/RandomBody.h"

namespace tensor::cuda_kernels {

namespace {

constexpr int kRangeThreads = 256;

unsigned range_blocks(int64_t n) {
  const int64_t want = (n + kRangeThreads - 1) / kRangeThreads;
  return static_cast<unsigned>(want < 65536 ? want : 65536);
}

template <class T>
__global__ void __launch_bounds__(kRangeThreads) arange_kernel(T* out, int64_t n, kernels::ArangeParams p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRangeThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kRangeThreads + threadIdx.x; i < n; i += stride)
    arange_body(out, i, p);
}

template <class T>
__global__ void __launch_bounds__(kRangeThreads) linspace_kernel(T* out, int64_t n, kernels::LinspaceParams p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRangeThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kRangeThreads + threadIdx.x; i < n; i += stride)
    linspace_body(out, i, p);
}

constexpr unsigned kRealGroups = 1u | 2u | 4u | 8u;  // dispatch_real: bool, integers, floating

}  // namespace

LaunchStatus launch_arange(const FactoryLaunch& l, const kernels::ArangeParams& p) {
  return dispatch_real<kRealGroups>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    if (l.n == 0) return 0;
    arange_kernel<T>
        <<<range_blocks(l.n), kRangeThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(static_cast<T*>(l.out), l.n, p);
    return static_cast<LaunchStatus>(cudaGetLastError());
  });
}

LaunchStatus launch_linspace(const FactoryLaunch& l, const kernels::LinspaceParams& p) {
  return dispatch_real<kRealGroups>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    if (l.n == 0) return 0;
    linspace_kernel<T>
        <<<range_blocks(l.n), kRangeThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(static_cast<T*>(l.out), l.n, p);
    return static_cast<LaunchStatus>(cudaGetLastError());
  });
}

}  // namespace tensor::cuda_kernels
