// The one host/device annotation: code marked with it compiles as ordinary C++ under a host
// compiler and as __host__ __device__ under nvcc, so CPU and CUDA kernels share one definition.
#pragma once

#if defined(__CUDACC__)
/// Callable from host and device code (nvcc); nothing under a host compiler.
#define TENSOR_HOST_DEVICE __host__ __device__
/// An inline host/device function; forced inline on the device, where a call costs registers.
#define TENSOR_HD_INLINE __host__ __device__ __forceinline__
#else
#define TENSOR_HOST_DEVICE
// Forced on the host too: the CPU kernels call these functors from Highway's per-ISA regions
// (Note [Per-ISA loops]), where an out-of-line copy would be compiled for the baseline ISA only.
#define TENSOR_HD_INLINE inline __attribute__((always_inline))
#endif
