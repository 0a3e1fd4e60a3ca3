// Division by a divisor fixed at launch time, without the divide instruction (Note [IntDivider]).
#pragma once

#include <cstdint>

#include "kernels/math/Macros.h"

namespace tensor::math {

// Note [IntDivider]
// A GPU has no integer divide instruction: n / d compiles to ~20 instructions, and the
// offset calculator divides once per dim per element. For a d known on the host,
// Granlund and Montgomery ("Division by invariant integers using multiplication", 1994,
// Thm 4.2) give a multiplier m and shift s with
//     n / d == (mulhi(n, m) + n) >> s      for every 0 <= n < 2^32,
// where s = ceil(log2 d) and m = floor(2^32 * (2^s - d) / d) + 1 fits 32 bits when d <= 2^31.
// The sum mulhi + n needs 33 bits, so it is formed in 64 (ATen adds in 32 bits and so is exact
// only below 2^31). mulhi is __umulhi on the device and a 64-bit product on the host.

/// Quotient and remainder.
template <class Value>
struct DivMod {
  Value div, mod;
};

/// n / d and n % d for a divisor fixed on the host. This fallback divides; the uint32_t
/// specialization below multiplies instead.
template <class Value>
struct IntDivider {
  IntDivider() = default;
  /// Requires d >= 1.
  explicit IntDivider(Value d) : divisor(d) { TENSOR_MATH_REQUIRE(d >= 1, "IntDivider: the divisor must be >= 1"); }
  TENSOR_HD_INLINE Value div(Value n) const { return n / divisor; }
  TENSOR_HD_INLINE Value mod(Value n) const { return n % divisor; }
  TENSOR_HD_INLINE DivMod<Value> divmod(Value n) const { return {n / divisor, n % divisor}; }
  Value divisor;
};

/// High 32 bits of the 64-bit product a * b.
TENSOR_HD_INLINE uint32_t mulhi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

/// n / d and n % d by a multiply and a shift (Note [IntDivider]): exact for every 32-bit n and
/// 1 <= d <= 2^31. Trivially copyable, so it travels in kernel arguments.
template <>
struct IntDivider<uint32_t> {
  IntDivider() = default;
  /// Precomputes the multiplier for d; requires 1 <= d <= 2^31.
  explicit IntDivider(uint32_t d) : divisor(d) {
    TENSOR_MATH_REQUIRE(d >= 1 && d <= (uint32_t(1) << 31), "IntDivider<uint32_t>: the divisor must be in [1, 2^31]");
    shift = 0;
    while ((uint64_t(1) << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }
  /// n / d.
  TENSOR_HD_INLINE uint32_t div(uint32_t n) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(mulhi(n, magic)) + n) >> shift);
  }
  /// n % d.
  TENSOR_HD_INLINE uint32_t mod(uint32_t n) const { return n - div(n) * divisor; }
  /// n / d and n % d together (one multiply-high).
  TENSOR_HD_INLINE DivMod<uint32_t> divmod(uint32_t n) const {
    const uint32_t q = div(n);
    return {q, n - q * divisor};
  }
  uint32_t divisor;
  uint32_t magic;
  uint32_t shift;
};

}  // namespace tensor::math
