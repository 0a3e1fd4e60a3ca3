// The per-index bodies of the random and range factories (rand, randn, randint, arange,
// linspace): the CPU kernels (src/ops/FactoryOps.cpp) and the CUDA kernels
// (kernels/cuda/RandomKernels.cu, RangeKernels.cu) both call them, so a seed gives the same
// bits on either device and tests/test_random_bodies.cpp checks them per index on the CPU
// (Note [Kernel bodies run on the CPU] in kernels/cuda/ElementwiseBody.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/Factory.h"
#include "kernels/math/Cast.h"
#include "kernels/math/Philox.h"

namespace tensor::cuda_kernels {

// Note [Random factory streams]
// rand and randn use one Philox counter per pair of elements: pair i of a draw reserved at
// `base` is draw(seed, base + i), whose words give two 53-bit uniforms (u01_53), which randn
// turns into a Box-Muller pair; a draw of n elements reserves (n + 1) / 2 counters and drops
// the second half of the last pair when n is odd. randint uses one counter per element. The
// values are computed in double (int64 for randint) and then cast to the output dtype once,
// so a float32 rand is the float64 rand rounded, on every device and at any thread count.

/// The two float64 values of pair `pair` of a draw: uniforms on [0, 1), or normals.
TENSOR_HD_INLINE void random_pair_values(uint64_t seed, uint64_t base, int64_t pair, bool normal, double v[2]) {
  uint32_t r[4];
  math::philox::draw(seed, base + static_cast<uint64_t>(pair), r);
  const double u1 = math::philox::u01_53(r[0], r[1]), u2 = math::philox::u01_53(r[2], r[3]);
  if (normal) {
    math::philox::box_muller(u1, u2, v);
  } else {
    v[0] = u1;
    v[1] = u2;
  }
}

/// The largest value below 1 that floating type T holds (1 - 2^-mantissa bits): a uniform that
/// rounds up to 1.0 in a narrower type is clamped to it, keeping rand's range [0, 1).
template <class T>
TENSOR_HD_INLINE math::opmath_t<T> below_one() {
  if constexpr (std::is_same_v<T, Half>)
    return 1.0f - 1.0f / 2048;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return 1.0f - 1.0f / 256;
  else if constexpr (std::is_same_v<T, float>)
    return 1.0f - 1.0f / 16777216;
  else
    return 1.0 - 1.0 / 9007199254740992.0;  // never reached: u01_53 < 1 already
}

/// One float64 value of rand (normal = false) or randn in floating type T.
template <class T>
TENSOR_HD_INLINE T random_store_value(double v, bool normal) {
  const T t = math::cast<T>(v);
  if constexpr (!std::is_same_v<T, double>) {
    if (!normal && static_cast<math::opmath_t<T>>(t) >= math::opmath_t<T>(1)) return T(below_one<T>());
  }
  return t;
}

/// Pair `pair` of an n-element rand/randn draw into contiguous `out` (elements 2 pair and,
/// when it exists, 2 pair + 1). T is a floating type.
template <class T>
TENSOR_HD_INLINE void random_pair_body(T* out, int64_t n, int64_t pair, uint64_t seed, uint64_t base, bool normal) {
  double v[2];
  random_pair_values(seed, base, pair, normal, v);
  out[2 * pair] = random_store_value<T>(v[0], normal);
  if (2 * pair + 1 < n) out[2 * pair + 1] = random_store_value<T>(v[1], normal);
}

/// Element i of randint in [low, low + range) as int64 (counter base + i).
TENSOR_HD_INLINE int64_t randint_value(uint64_t seed, uint64_t base, int64_t i, int64_t low, uint64_t range) {
  uint32_t r[4];
  math::philox::draw(seed, base + static_cast<uint64_t>(i), r);
  return math::philox::uniform_int(r[0], r[1], low, range);
}

/// Element i of randint into contiguous `out` of real type T.
template <class T>
TENSOR_HD_INLINE void randint_body(T* out, int64_t i, uint64_t seed, uint64_t base, int64_t low, uint64_t range) {
  out[i] = math::cast<T>(randint_value(seed, base, i, low, range));
}

// Note [Uncontracted factory arithmetic]
// nvcc contracts a * b + c into one fused multiply-add (rounded once) by default, while the CPU
// build (no -mfma) rounds the product and the sum separately; arange's and linspace's values
// would then differ in the last bit between the devices. The device side spells the two
// roundings with the _rn intrinsics, which are never contracted.

/// a * b + c with the product rounded before the sum, on host and device.
TENSOR_HD_INLINE double mul_then_add(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(__dmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}
/// c - a * b with the product rounded before the difference, on host and device.
TENSOR_HD_INLINE double mul_then_sub_from(double c, double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(c, __dmul_rn(a, b));
#else
  return c - a * b;
#endif
}

/// Element i of an integral arange (start + i * step, wrapping in uint64 rather than
/// overflowing: the front end's count keeps every element in range).
TENSOR_HD_INLINE int64_t arange_int_value(const kernels::ArangeParams& p, int64_t i) {
  return static_cast<int64_t>(static_cast<uint64_t>(p.istart) +
                              static_cast<uint64_t>(i) * static_cast<uint64_t>(p.istep));
}
/// Element i of a floating arange.
TENSOR_HD_INLINE double arange_value(const kernels::ArangeParams& p, int64_t i) {
  return mul_then_add(static_cast<double>(i), p.step, p.start);  // start + i * step
}

/// Element i of arange into contiguous `out` of real type T.
template <class T>
TENSOR_HD_INLINE void arange_body(T* out, int64_t i, const kernels::ArangeParams& p) {
  out[i] = p.integral ? math::cast<T>(arange_int_value(p, i)) : math::cast<T>(arange_value(p, i));
}

/// Element i of linspace: up from start below steps / 2, back from end from there on.
TENSOR_HD_INLINE double linspace_value(const kernels::LinspaceParams& p, int64_t i) {
  return i < p.steps / 2 ? mul_then_add(p.step, static_cast<double>(i), p.start)
                         : mul_then_sub_from(p.end, p.step, static_cast<double>(p.steps - 1 - i));
}

/// Element i of linspace into contiguous `out` of real type T.
template <class T>
TENSOR_HD_INLINE void linspace_body(T* out, int64_t i, const kernels::LinspaceParams& p) {
  out[i] = math::cast<T>(linspace_value(p, i));
}

}  // namespace tensor::cuda_kernels
