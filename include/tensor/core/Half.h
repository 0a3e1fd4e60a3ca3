// 16-bit floating point storage types. They store bits only; arithmetic happens in float
// (see Note [Half types compute in float]).
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/core/HostDevice.h"

namespace tensor {

// Note [Half types compute in float]
// Half and BFloat16 are storage formats. Every kernel converts them to float, computes,
// and rounds back once per output element, as PyTorch's CPU kernels do. That keeps one
// rounding per op and lets the float SIMD loops serve them.

// Note [Half conversions on the device]
// In device code Half converts with the hardware's cvt instructions (the same round to nearest
// even, subnormals and overflow to inf; a NaN becomes the canonical 0x7fff rather than the
// host's sign | 0x7e00). With the bit-level emulation below (about 20 integer instructions per
// conversion) a float16 add ran at 54% of the copy bandwidth on an H200, where bfloat16, whose
// conversion is a shift, ran at 102% (first GPU run, 2026-11-28); the conversions are what
// differs between the two launches.

namespace detail {
// The device has bit-cast intrinsics; the host's memcpy compiles to a register move.
/// The bits of `f`.
TENSOR_HD_INLINE uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
/// The float whose bits are `u`.
TENSOR_HD_INLINE float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
}  // namespace detail

/// IEEE 754 binary16.
struct Half {
  uint16_t x = 0;
  Half() = default;
  /// Rounds to nearest even.
  TENSOR_HOST_DEVICE Half(float f) : x(from_float(f)) {}
  TENSOR_HOST_DEVICE operator float() const { return to_float(x); }
  /// The Half whose bits are `b`.
  TENSOR_HOST_DEVICE static Half from_bits(uint16_t b) { Half h; h.x = b; return h; }

  /// The bits of `f` rounded to nearest even (NaN gives a quiet NaN, overflow gives inf).
  TENSOR_HOST_DEVICE static uint16_t from_float(float f) {
#if defined(__CUDA_ARCH__)
    uint16_t r;  // Note [Half conversions on the device]
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
#else
    uint32_t u = detail::f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return static_cast<uint16_t>(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
    if (a < 0x38800000u) {  // subnormal or zero in half
      float v = detail::f32_from_bits(a) + 0.5f;  // align mantissa so the FPU rounds
      return static_cast<uint16_t>(sign | (detail::f32_bits(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (a >> 13) & 1u;
    a += 0xc8000fffu + mant_odd;  // rebias exponent and round to nearest even
    return static_cast<uint16_t>(sign | (a >> 13));
#endif
  }
  /// The float that the bits `h` encode (exact: every half is a float).
  TENSOR_HOST_DEVICE static float to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#else
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return detail::f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24
      return sign ? -v : v;
    }
    return detail::f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
#endif
  }
};

/// bfloat16: the upper half of a float32.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  /// Rounds to nearest even; NaN stays NaN.
  TENSOR_HOST_DEVICE BFloat16(float f) : x(from_float(f)) {}
  TENSOR_HOST_DEVICE operator float() const { return to_float(x); }
  /// The BFloat16 whose bits are `b`.
  TENSOR_HOST_DEVICE static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.x = b; return h; }
  /// The bits of `f` rounded to nearest even; NaN gives the quiet NaN 0x7fc0.
  TENSOR_HOST_DEVICE static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  /// The float that the bits `b` encode (exact).
  TENSOR_HOST_DEVICE static float to_float(uint16_t b) { return detail::f32_from_bits(static_cast<uint32_t>(b) << 16); }
};

}  // namespace tensor
