// randperm's sort on CUDA: CUB's radix sort of (key, index) pairs, stable like the CPU's
// std::stable_sort, so both give the same permutation for the same keys (Note [randperm by
// sorted keys] in src/ops/FactoryOps.cpp). Kept apart from RandomKernels.cu: CUB's device sort
// is the heaviest header the backend compiles.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/FactoryLaunch.h"

namespace tensor::cuda_kernels {

namespace {

constexpr int kIotaThreads = 256;
constexpr int kKeyBits = 62;  // the keys are drawn in [0, 2^62): the top two bits need no pass
constexpr size_t kAlign = 256;

__global__ void __launch_bounds__(kIotaThreads) iota_kernel(int64_t* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kIotaThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kIotaThreads + threadIdx.x; i < n; i += stride) out[i] = i;
}

size_t align_up(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

// CUB's own storage for n pairs; a size query only, nothing runs.
size_t cub_bytes(int64_t n) {
  size_t bytes = 0;
  uint64_t* k = nullptr;
  int64_t* v = nullptr;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, k, v, v, n, 0, kKeyBits);
  return bytes;
}

}  // namespace

size_t randperm_scratch_bytes(int64_t n) {
  const size_t column = align_up(static_cast<size_t>(n) * sizeof(int64_t));
  return align_up(cub_bytes(n)) + 2 * column;
}

LaunchStatus launch_randperm(const int64_t* keys, int64_t* perm, int64_t n, void* scratch, size_t scratch_bytes,
                             void* stream) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  const size_t column = align_up(static_cast<size_t>(n) * sizeof(int64_t));
  const size_t cub_storage = align_up(cub_bytes(n));
  if (scratch_bytes < cub_storage + 2 * column) return static_cast<LaunchStatus>(cudaErrorInvalidValue);
  char* base = static_cast<char*>(scratch);
  auto* sorted_keys = reinterpret_cast<uint64_t*>(base + cub_storage);
  auto* index = reinterpret_cast<int64_t*>(base + cub_storage + column);
  const int64_t want = (n + kIotaThreads - 1) / kIotaThreads;
  iota_kernel<<<static_cast<unsigned>(want < 65536 ? want : 65536), kIotaThreads, 0, s>>>(index, n);
  // The keys are non-negative int64, so their unsigned order is their signed order.
  size_t cub_given = cub_storage;
  cudaError_t e = cub::DeviceRadixSort::SortPairs(base, cub_given, reinterpret_cast<const uint64_t*>(keys),
                                                  sorted_keys, index, perm, n, 0, kKeyBits, s);
  if (e != cudaSuccess) return static_cast<LaunchStatus>(e);
  return static_cast<LaunchStatus>(cudaGetLastError());
}

}  // namespace tensor::cuda_kernels
