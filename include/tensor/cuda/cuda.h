// CUDA device queries and guards. On a build or machine without CUDA the queries report
// no devices and everything else throws a clear tensor::Error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/export.h"

namespace tensor::cuda {

/// True when libtensor was built with CUDA and at least one device is visible.
TENSOR_API bool is_available();
/// Number of visible CUDA devices (0 without CUDA).
TENSOR_API int device_count();
/// The current device of this thread.
TENSOR_API int current_device();
/// Sets the current device of this thread.
TENSOR_API void set_device(int index);
/// Waits for all work on the current device.
TENSOR_API void synchronize();

/// Sets the current device for a scope and restores the previous one on exit.
class TENSOR_API CUDAGuard {
 public:
  explicit CUDAGuard(int index);
  ~CUDAGuard();
  CUDAGuard(const CUDAGuard&) = delete;
  CUDAGuard& operator=(const CUDAGuard&) = delete;

 private:
  int prev_ = -1;
};

/// Caching allocator statistics for one device.
struct MemoryStats {
  size_t allocated_bytes = 0;  ///< bytes in live blocks
  size_t reserved_bytes = 0;   ///< bytes held from cudaMalloc (live + cached)
  size_t peak_allocated_bytes = 0;
  size_t num_alloc_calls = 0;     ///< requests served
  size_t num_cuda_malloc_calls = 0;  ///< requests that reached cudaMalloc
};
/// Statistics of the caching allocator on `device`.
TENSOR_API MemoryStats memory_stats(int device = -1);
/// Returns cached, unused blocks to the driver.
TENSOR_API void empty_cache();

}  // namespace tensor::cuda
