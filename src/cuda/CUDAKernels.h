// Internal to the CUDA backend: helpers shared by src/cuda/*.cpp and the host launchers of
// kernels/cuda/*.cu. Only CUDA runtime types here (no fmt), so nvcc can include it cheaply.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "tensor/core/Device.h"

namespace tensor::cuda_detail {

/// Throws tensor::Error "<api> failed: <cudaGetErrorString> (<error name>)" and clears the
/// runtime's last-error slot. `api` may be a whole call expression; only its name is kept.
[[noreturn]] void throw_cuda_error(const char* api, cudaError_t err);

/// Checks a CUDA runtime call; a failure becomes a tensor::Error naming the API.
#define TENSOR_CUDA_CHECK(expr)                                                         \
  do {                                                                                  \
    cudaError_t tensor_cuda_err_ = (expr);                                              \
    if (__builtin_expect(tensor_cuda_err_ != cudaSuccess, 0))                           \
      ::tensor::cuda_detail::throw_cuda_error(#expr, tensor_cuda_err_);                 \
  } while (0)

/// The concrete index of a CUDA device (-1 -> current device). Throws naming `op` when no
/// device is available or the index is out of range.
int resolve_device(const char* op, Device device);

/// The stream that work for `device` is ordered on: this thread's current stream there
/// (src/cuda/CUDAStream.cpp; the legacy default stream unless a StreamGuard set another).
cudaStream_t current_stream(int device);

/// Fills nbytes at dst with `pattern` (elem_size bytes, elem_size in {1, 2, 4, 8, 16}) repeated,
/// on `stream` of the current device. dst needs no alignment. Returns the launch status.
cudaError_t launch_fill(void* dst, const void* pattern, size_t elem_size, size_t nbytes, cudaStream_t stream);

}  // namespace tensor::cuda_detail
