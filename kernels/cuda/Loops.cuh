// The elementwise engine's kernels and host launcher (after ATen's CUDALoops): a vectorized
// path for contiguous operands (16-byte loads and stores) and a strided path through the offset
// calculator, both thin shells around the bodies of kernels/cuda/ElementwiseBody.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/OpList.h"
#include "kernels/cuda/ElementwiseBody.h"
#include "kernels/cuda/ElementwiseLaunch.h"

namespace tensor::cuda_kernels {

constexpr int kThreads = 128;
constexpr int kUnroll = 4;  // elements per thread on the strided path

template <int VEC, class out_t, class in_t, int NIN, class F>
__global__ void __launch_bounds__(kThreads) vectorized_kernel(ElementwiseArgs<in_t, NIN> a, uint32_t n, F f) {
  vectorized_body<VEC, out_t>(a, blockIdx.x * kThreads + threadIdx.x, n, f);
}

template <class out_t, class in_t, int NIN, class F>
__global__ void __launch_bounds__(kThreads) strided_kernel(ElementwiseArgs<in_t, NIN> a, uint32_t n, F f) {
  uint32_t i = blockIdx.x * (kThreads * kUnroll) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u, i += kThreads)
    if (i < n) strided_body<out_t>(a, i, f);
}

template <class T>
inline T scalar_value(const ScalarArg& s) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(s.i);
  else return static_cast<T>(s.d);
}

inline bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

/// Fills the body arguments of launch `l` (src/cuda splits it to fit 32-bit indexing first).
template <class in_t, int NIN>
ElementwiseArgs<in_t, NIN> make_args(const ElementwiseLaunch& l) {
  using op_t = math::opmath_t<in_t>;
  ElementwiseArgs<in_t, NIN> a{};
  a.out = l.data[0];
  a.scalar_mask = 0;
  for (int k = 0; k < NIN; ++k) {
    a.in[k] = l.data[k + 1];
    a.scalar[k] = op_t{};
    if (l.is_scalar[k + 1]) {
      a.scalar_mask |= 1u << k;
      a.scalar[k] = scalar_value<op_t>(l.scalar[k + 1]);
    }
  }
  return a;
}

/// True when launch `l` can take the vectorized path with VEC elements per vector.
template <int VEC, class out_t, class in_t, int NIN>
bool can_vectorize(const ElementwiseLaunch& l) {
  if (l.ndim != 1) return false;
  if (l.strides[0][0] != int64_t(sizeof(out_t)) || !aligned(l.data[0], sizeof(out_t) * VEC)) return false;
  for (int k = 1; k <= NIN; ++k) {
    if (l.is_scalar[k]) continue;
    if (l.strides[k][0] != int64_t(sizeof(in_t)) || !aligned(l.data[k], sizeof(in_t) * VEC)) return false;
  }
  return true;
}

/// Launches f over `l` on its stream. Returns the launch status.
template <class out_t, class in_t, int NIN, class F>
LaunchStatus launch(const ElementwiseLaunch& l, const F& f) {
  const int64_t n64 = l.numel();
  if (n64 == 0) return 0;
  const uint32_t n = static_cast<uint32_t>(n64);
  auto stream = static_cast<cudaStream_t>(l.stream);
  ElementwiseArgs<in_t, NIN> a = make_args<in_t, NIN>(l);
  constexpr int VEC = vec_size<out_t, in_t>();
  if (can_vectorize<VEC, out_t, in_t, NIN>(l)) {
    const uint32_t nvec = (n + VEC - 1) / VEC;
    const uint32_t blocks = (nvec + kThreads - 1) / kThreads;
    vectorized_kernel<VEC, out_t, in_t, NIN><<<blocks, kThreads, 0, stream>>>(a, n, f);
  } else {
    const int64_t* strides[NIN + 1];
    for (int k = 0; k <= NIN; ++k) strides[k] = l.strides[k];
    a.offsets = math::OffsetCalculator<NIN + 1>(l.ndim, l.shape, strides);
    const uint32_t per_block = kThreads * kUnroll;
    const uint32_t blocks = static_cast<uint32_t>((n64 + per_block - 1) / per_block);
    strided_kernel<out_t, in_t, NIN><<<blocks, kThreads, 0, stream>>>(a, n, f);
  }
  return static_cast<LaunchStatus>(cudaGetLastError());
}

template <class T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) for the C++ type of dtype t when the op list's `dtypes` bits of the op
/// (Groups) include it; complex is not on CUDA yet. Else kNoKernelForDtype.
template <unsigned Groups, class F>
LaunchStatus dispatch_real(ScalarType t, const F& f) {
  switch (t) {
#define TENSOR_CUDA_CASE(E, T, G) \
  case ScalarType::E:             \
    if constexpr ((Groups & (G)) != 0) return f(TypeTag<T>{}); \
    break;
    TENSOR_CUDA_CASE(Bool, bool, 1u)
    TENSOR_CUDA_CASE(UInt8, uint8_t, 2u)
    TENSOR_CUDA_CASE(Int8, int8_t, 2u)
    TENSOR_CUDA_CASE(Int16, int16_t, 2u)
    TENSOR_CUDA_CASE(Int32, int32_t, 2u)
    TENSOR_CUDA_CASE(Int64, int64_t, 2u)
    TENSOR_CUDA_CASE(Half, Half, 8u)
    TENSOR_CUDA_CASE(BFloat16, BFloat16, 8u)
    TENSOR_CUDA_CASE(Float, float, 4u)
    TENSOR_CUDA_CASE(Double, double, 4u)
#undef TENSOR_CUDA_CASE
    default: break;
  }
  return kNoKernelForDtype;
}

}  // namespace tensor::cuda_kernels
