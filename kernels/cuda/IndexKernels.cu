// The indexing ops on CUDA: index_select, gather, scatter, scatter_add and index_add, as thin
// shells around the bodies of kernels/cuda/IndexBody.h, and the range check the host runs first.
#include "kernels/cuda/IndexBody.h"
#include "kernels/cuda/IndexLaunch.h"
#include "kernels/cuda/Loops.cuh"

namespace tensor::cuda_kernels {
namespace {

// The strided shells: kUnroll positions per thread, kThreads apart (as the elementwise engine).
template <class E, class I>
__global__ void __launch_bounds__(kThreads) gather_kernel(IndexArgs<I> a, uint32_t n) {
  uint32_t i = blockIdx.x * (kThreads * kUnroll) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u, i += kThreads)
    if (i < n) gather_body<E>(a, i);
}

template <class E, class I>
__global__ void __launch_bounds__(kThreads) scatter_kernel(IndexArgs<I> a, uint32_t n) {
  uint32_t i = blockIdx.x * (kThreads * kUnroll) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u, i += kThreads)
    if (i < n) scatter_body<E>(a, i);
}

template <class T, class I>
__global__ void __launch_bounds__(kThreads) add_kernel(IndexArgs<I> a, uint32_t n, math::opmath_t<T> alpha) {
  uint32_t i = blockIdx.x * (kThreads * kUnroll) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u, i += kThreads)
    if (i < n) index_add_body<T>(a, i, alpha);
}

template <class I>
__global__ void __launch_bounds__(kThreads) check_kernel(const char* index, math::OffsetCalculator<1> offsets,
                                                         uint32_t n, int64_t size, unsigned long long* first_bad) {
  uint32_t i = blockIdx.x * (kThreads * kUnroll) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u, i += kThreads)
    if (i < n && index_out_of_range<I>(index, offsets.get(i)[0], size)) atomicMin(first_bad, i);
}

/// A 16-byte element (complex128) moved whole.
struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};

uint32_t blocks_for(uint32_t n) {
  const uint32_t per_block = kThreads * kUnroll;
  return static_cast<uint32_t>((uint64_t(n) + per_block - 1) / per_block);
}

template <class I>
LaunchStatus launch_with_index(IndexMode mode, const ElementwiseLaunch& l, const IndexDim& dim, ScalarArg alpha) {
  const int64_t n64 = l.numel();
  if (n64 == 0) return 0;
  const uint32_t n = static_cast<uint32_t>(n64);
  auto stream = static_cast<cudaStream_t>(l.stream);
  IndexArgs<I> a{};
  a.dense = l.data[0];
  a.index = l.data[1];
  a.self = l.data[2];
  a.dim_size = dim.size;
  a.dim_stride = dim.stride;
  const int64_t* strides[3] = {l.strides[0], l.strides[1], l.strides[2]};
  a.offsets = math::OffsetCalculator<3>(l.ndim, l.shape, strides);
  const uint32_t blocks = blocks_for(n);
  if (mode == IndexMode::Add) {
    return dispatch_real<1u | 2u | 4u | 8u>(l.dtype, [&](auto tag) -> LaunchStatus {
      using T = typename decltype(tag)::type;
      add_kernel<T, I><<<blocks, kThreads, 0, stream>>>(a, n, scalar_value<math::opmath_t<T>>(alpha));
      return static_cast<LaunchStatus>(cudaGetLastError());
    });
  }
  auto run = [&](auto etag) -> LaunchStatus {
    using E = typename decltype(etag)::type;
    if (mode == IndexMode::Gather) gather_kernel<E, I><<<blocks, kThreads, 0, stream>>>(a, n);
    else scatter_kernel<E, I><<<blocks, kThreads, 0, stream>>>(a, n);
    return static_cast<LaunchStatus>(cudaGetLastError());
  };
  switch (element_size(l.dtype)) {
    case 1: return run(TypeTag<uint8_t>{});
    case 2: return run(TypeTag<uint16_t>{});
    case 4: return run(TypeTag<uint32_t>{});
    case 8: return run(TypeTag<uint64_t>{});
    case 16: return run(TypeTag<Bytes16>{});
    default: return kNoKernelForDtype;
  }
}

}  // namespace

LaunchStatus launch_index(IndexMode mode, const ElementwiseLaunch& l, const IndexDim& dim, ScalarArg alpha) {
  if (dim.index_dtype == ScalarType::Int32) return launch_with_index<int32_t>(mode, l, dim, alpha);
  return launch_with_index<int64_t>(mode, l, dim, alpha);
}

LaunchStatus launch_index_check(const ElementwiseLaunch& l, int64_t size, unsigned long long* first_bad) {
  const int64_t n64 = l.numel();
  if (n64 == 0) return 0;
  const uint32_t n = static_cast<uint32_t>(n64);
  auto stream = static_cast<cudaStream_t>(l.stream);
  const int64_t* strides[1] = {l.strides[0]};
  const math::OffsetCalculator<1> offsets(l.ndim, l.shape, strides);
  if (l.dtype == ScalarType::Int32)
    check_kernel<int32_t><<<blocks_for(n), kThreads, 0, stream>>>(l.data[0], offsets, n, size, first_bad);
  else
    check_kernel<int64_t><<<blocks_for(n), kThreads, 0, stream>>>(l.data[0], offsets, n, size, first_bad);
  return static_cast<LaunchStatus>(cudaGetLastError());
}

}  // namespace tensor::cuda_kernels
