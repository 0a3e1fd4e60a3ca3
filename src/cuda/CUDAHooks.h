// Internal: what the core calls into the CUDA backend for. Implemented in src/cuda/*.cpp
// when nvcc is found, and by CUDAStub.cpp otherwise (every entry throws a clear Error).
#pragma once

#include <cstddef>

#include "tensor/core/Device.h"
#include "tensor/core/Storage.h"
#include "tensor/core/Tensor.h"

namespace tensor {

/// The CUDA caching allocator (device index taken from the Device passed to allocate).
Allocator* cuda_allocator();

namespace cuda_detail {
/// Throws tensor::Error naming `op` unless CUDA is usable for `device`.
void check_available(const char* op, Device device);
/// Copies nbytes of contiguous memory between any two of CPU and CUDA devices. Synchronous
/// unless non_blocking (then ordered on the current stream of the CUDA side).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes, bool non_blocking);
/// Fills nbytes on a CUDA device with a repeated element pattern of elem_size bytes.
void fill_bytes(void* dst, Device device, const void* pattern, size_t elem_size, size_t count);
/// CUDA's kernel of copy_ (src/ops/CopyOps.cpp): dst = src where either is a CUDA tensor,
/// converted to dst's dtype and broadcast to dst's shape.
void copy_kernel(const Tensor& dst, const Tensor& src, bool non_blocking);
/// CUDA's kernel of fill_: every element of the CUDA tensor self = value.
void fill_kernel(const Tensor& self, const Scalar& value);
}  // namespace cuda_detail

}  // namespace tensor
