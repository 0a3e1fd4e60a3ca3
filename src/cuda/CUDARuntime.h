// Internal to libtensor_cuda: the device queries, allocator and copies behind its CUDAHooks
// (src/cuda/CUDAHooksImpl.cpp). Host C++ only; kernels see src/cuda/CUDAKernels.h.
#pragma once

#include <cstddef>

#include "src/cuda/CUDAKernels.h"
#include "tensor/core/Device.h"
#include "tensor/core/Storage.h"
#include "tensor/core/Tensor.h"
#include "tensor/cuda/cuda.h"

namespace tensor::cuda_detail {

/// Visible devices, queried once (0 without a driver or device; never throws).
int device_count();
/// The error of that query, or cudaSuccess.
cudaError_t device_query_error();
/// Throws naming `op` when no device is visible or `index` (-1: current) is out of range.
void check_index(const char* op, int index);
/// Throws tensor::Error naming `op` unless CUDA is usable for `device`.
void check_available(const char* op, Device device);
int get_device();
void set_device(int index);
void synchronize(int device);

/// The caching device allocator (src/cuda/CUDAAllocator.cpp).
Allocator* device_allocator();
cuda::MemoryStats memory_stats(int device);
void reset_peak_memory_stats(int device);
void empty_cache();

/// Copies nbytes of contiguous memory between any two of CPU and CUDA devices, ordered on the
/// current stream of the CUDA side (Note [non_blocking copies] in src/cuda/CUDACopy.cpp).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes, bool non_blocking);
/// Fills nbytes on a CUDA device with a repeated element pattern of elem_size bytes.
void fill_bytes(void* dst, Device device, const void* pattern, size_t elem_size, size_t count);
/// CUDA's kernel of copy_: dst = src where either is a CUDA tensor, converted to dst's dtype
/// and broadcast to dst's shape.
void copy_kernel(const Tensor& dst, const Tensor& src, bool non_blocking);
/// CUDA's kernel of fill_: every element of the CUDA tensor self = value.
void fill_kernel(const Tensor& self, const Scalar& value);

}  // namespace tensor::cuda_detail

namespace tensor::cuda_detail {

/// The caching pinned (page-locked) host allocator: CPU tensors whose copies to and from CUDA
/// can run asynchronously (Note [Pinned host memory] in src/cuda/CUDAAllocator.cpp).
Allocator* pinned_host_allocator();
/// Says that work queued on `stream` (of `device`) uses the host memory at `ptr` (anywhere in a
/// block): a pinned block is not reused until that work has finished. Returns whether `ptr` is
/// in a live block of pinned_host_allocator (false: pageable or foreign memory, nothing noted).
bool record_host_use(const void* ptr, int device, cudaStream_t stream);
/// Defers reuse of the device block starting at `ptr` until the work queued on `stream` so far
/// is done (Tensor::record_stream; Note [record_stream]). Memory the caching allocator did not
/// hand out is ignored, as in libtorch.
void record_stream(void* ptr, int device, cudaStream_t stream);

/// Registers every CUDA kernel into the dispatcher (once, when the backend loads).
void register_cuda_kernels();

}  // namespace tensor::cuda_detail
