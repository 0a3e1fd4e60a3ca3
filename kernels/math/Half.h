// Half and bfloat16 conversions on raw bits, for kernels that move uint16_t. They forward to
// tensor::Half and tensor::BFloat16 so that the rounding is defined once.
#pragma once

#include <cstdint>

#include "kernels/math/Macros.h"
#include "tensor/core/Half.h"

namespace tensor::math {

/// The float that the IEEE binary16 bits `h` encode (exact).
TENSOR_HD_INLINE float half_bits_to_float(uint16_t h) { return Half::to_float(h); }
/// `f` rounded to nearest even binary16 bits (overflow to inf, NaN to a quiet NaN).
TENSOR_HD_INLINE uint16_t float_to_half_bits(float f) { return Half::from_float(f); }
/// The float that the bfloat16 bits `b` encode (exact).
TENSOR_HD_INLINE float bf16_bits_to_float(uint16_t b) { return BFloat16::to_float(b); }
/// `f` rounded to nearest even bfloat16 bits (NaN to 0x7fc0).
TENSOR_HD_INLINE uint16_t float_to_bf16_bits(float f) { return BFloat16::from_float(f); }

}  // namespace tensor::math
