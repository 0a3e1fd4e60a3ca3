// rand, randn and randint on CUDA: one thread per Philox counter (a pair of rand/randn
// elements, one randint element), grid-stride over 64-bit indices, with the bodies of
// kernels/cuda/RandomBody.h that the CPU kernels run too, so a seed gives the same bits on
// both devices (Note [Random factory streams]).
#include <cuda_runtime.h>

#include "kernels/cuda/FactoryLaunch.h"
#include "kernels/cuda/Loops.cuh"
#include "kernels/cuda/RandomBody.h"

namespace tensor::cuda_kernels {

namespace {

constexpr int kFactoryThreads = 256;

unsigned factory_blocks(int64_t work) {
  // Grid-stride: enough blocks to fill any current GPU several times over.
  const int64_t want = (work + kFactoryThreads - 1) / kFactoryThreads;
  return static_cast<unsigned>(want < 65536 ? want : 65536);
}

template <class T>
__global__ void __launch_bounds__(kFactoryThreads)
    random_kernel(T* out, int64_t n, uint64_t seed, uint64_t base, bool normal) {
  const int64_t pairs = (n + 1) / 2, stride = static_cast<int64_t>(gridDim.x) * kFactoryThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kFactoryThreads + threadIdx.x; i < pairs; i += stride)
    random_pair_body(out, n, i, seed, base, normal);
}

template <class T>
__global__ void __launch_bounds__(kFactoryThreads)
    randint_kernel(T* out, int64_t n, uint64_t seed, uint64_t base, int64_t low, uint64_t range) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kFactoryThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kFactoryThreads + threadIdx.x; i < n; i += stride)
    randint_body(out, i, seed, base, low, range);
}

constexpr unsigned kFloatingGroups = 4u | 8u;        // dispatch_real: float32/float64, float16/bfloat16
constexpr unsigned kRealGroups = 1u | 2u | 4u | 8u;  // and bool, the integer types

}  // namespace

LaunchStatus launch_random(const FactoryLaunch& l, uint64_t seed, uint64_t base, bool normal) {
  return dispatch_real<kFloatingGroups>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    if (l.n == 0) return 0;
    random_kernel<T><<<factory_blocks((l.n + 1) / 2), kFactoryThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(
        static_cast<T*>(l.out), l.n, seed, base, normal);
    return static_cast<LaunchStatus>(cudaGetLastError());
  });
}

LaunchStatus launch_randint(const FactoryLaunch& l, uint64_t seed, uint64_t base, int64_t low, uint64_t range) {
  return dispatch_real<kRealGroups>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    if (l.n == 0) return 0;
    randint_kernel<T><<<factory_blocks(l.n), kFactoryThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(
        static_cast<T*>(l.out), l.n, seed, base, low, range);
    return static_cast<LaunchStatus>(cudaGetLastError());
  });
}

}  // namespace tensor::cuda_kernels
