// where, clamp and threshold_backward on CUDA. clamp and threshold_backward are ordinary
// elementwise ops of the engine (kernels/cuda/Loops.cuh) over the functors of
// kernels/math/Select.h; where has its own shells around kernels/cuda/SelectBody.h.
#include <cstring>

#include "kernels/cuda/Loops.cuh"
#include "kernels/cuda/SelectBody.h"
#include "kernels/cuda/SelectLaunch.h"

namespace tensor::cuda_kernels {
namespace {

template <int VEC, class U>
__global__ void __launch_bounds__(kThreads) where_vectorized_kernel(WhereArgs<U> w, uint32_t n) {
  where_vectorized_body<VEC>(w, blockIdx.x * kThreads + threadIdx.x, n);
}

template <class U>
__global__ void __launch_bounds__(kThreads) where_strided_kernel(WhereArgs<U> w, uint32_t n) {
  uint32_t i = blockIdx.x * (kThreads * kUnroll) + threadIdx.x;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u, i += kThreads)
    if (i < n) where_strided_body(w, i);
}

// The element bits of a CPU scalar operand of dtype T (its value converted on the host).
template <class T, class U>
U scalar_bits(const ScalarArg& s) {
  static_assert(sizeof(T) == sizeof(U));
  T v;
  if constexpr (std::is_integral_v<T>) v = static_cast<T>(s.i);
  else v = math::cast<T>(s.d);
  U bits;
  std::memcpy(&bits, &v, sizeof(U));
  return bits;
}

// Launches where over `l` with elements of type T moved as U.
template <class T, class U>
LaunchStatus launch_where_as(const ElementwiseLaunch& l) {
  const int64_t n64 = l.numel();
  if (n64 == 0) return 0;
  const uint32_t n = static_cast<uint32_t>(n64);
  auto stream = static_cast<cudaStream_t>(l.stream);
  WhereArgs<U> w{};
  w.out = l.data[0];
  w.cond = l.data[1];
  w.a = l.data[2];
  w.b = l.data[3];
  w.scalar_mask = (l.is_scalar[1] ? 1u : 0u) | (l.is_scalar[2] ? 2u : 0u) | (l.is_scalar[3] ? 4u : 0u);
  w.cond_scalar = l.is_scalar[1] && l.scalar[1].i != 0;
  w.a_scalar = l.is_scalar[2] ? scalar_bits<T, U>(l.scalar[2]) : U{};
  w.b_scalar = l.is_scalar[3] ? scalar_bits<T, U>(l.scalar[3]) : U{};
  constexpr int VEC = static_cast<int>(16 / sizeof(U));
  bool vectorize = l.ndim == 1 && l.strides[0][0] == int64_t(sizeof(U)) && aligned(l.data[0], sizeof(U) * VEC);
  for (int k = 1; k < 4 && vectorize; ++k) {
    if (l.is_scalar[k]) continue;
    const size_t es = k == 1 ? sizeof(bool) : sizeof(U);
    vectorize = l.strides[k][0] == int64_t(es) && aligned(l.data[k], es * VEC);
  }
  if (vectorize) {
    const uint32_t nvec = (n + VEC - 1) / VEC;
    where_vectorized_kernel<VEC, U><<<(nvec + kThreads - 1) / kThreads, kThreads, 0, stream>>>(w, n);
  } else {
    const int64_t* strides[4] = {l.strides[0], l.strides[1], l.strides[2], l.strides[3]};
    w.offsets = math::OffsetCalculator<4>(l.ndim, l.shape, strides);
    const uint32_t per_block = kThreads * kUnroll;
    where_strided_kernel<U><<<static_cast<uint32_t>((n64 + per_block - 1) / per_block), kThreads, 0, stream>>>(w, n);
  }
  return static_cast<LaunchStatus>(cudaGetLastError());
}

template <size_t N> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };

constexpr unsigned kBool = 1u, kInt = 2u, kFloat = 4u, kHalf = 8u;  // dispatch_real's groups

}  // namespace

LaunchStatus launch_where(const ElementwiseLaunch& l) {
  return dispatch_real<kBool | kInt | kFloat | kHalf>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    return launch_where_as<T, typename Bits<sizeof(T)>::type>(l);
  });
}

LaunchStatus launch_clamp(const ElementwiseLaunch& l, ScalarArg lo, bool has_lo, ScalarArg hi, bool has_hi) {
  return dispatch_real<kInt | kFloat | kHalf>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    using op_t = math::opmath_t<T>;
    const math::ClampOp<op_t> f{scalar_value<op_t>(lo), scalar_value<op_t>(hi), has_lo, has_hi};
    return launch<T, T, 1>(l, f);
  });
}

LaunchStatus launch_threshold_backward(const ElementwiseLaunch& l, ScalarArg threshold) {
  return dispatch_real<kFloat | kHalf>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    using op_t = math::opmath_t<T>;
    return launch<T, T, 2>(l, math::ThresholdBackwardOp<op_t>{scalar_value<op_t>(threshold)});
  });
}

}  // namespace tensor::cuda_kernels
