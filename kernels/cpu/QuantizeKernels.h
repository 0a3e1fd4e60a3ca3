// Internal: vectorized loops over contiguous 8-bit quantized data (Highway; Note [Vectorized
// quantize loops] in kernels/cpu/QuantizeKernels.cpp). Each computes exactly what the scalar
// definitions of src/ops/QuantizedOps.cpp and src/ops/QuantizedElementwise.cpp compute; the
// callers split large tensors across threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace tensor::cpu {

/// The scalar definition the vector loops match: clamp(nearbyint(x * inv_scale) + zero_point)
/// into T's range, the product in float32, ties to even, NaN -> the lowest value.
template <class T>
inline T quantize_value(float x, float inv_scale, int64_t zero_point) {
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  double r = static_cast<double>(std::nearbyint(x * inv_scale)) + static_cast<double>(zero_point);
  if (!(r >= lo)) r = lo;  // also NaN
  if (r > hi) r = hi;
  return static_cast<T>(r);
}

/// dst[i] = clamp(nearbyint(src[i] * inv_scale) + zero_point) into int8 (is_signed) or uint8;
/// the product in float32, ties to even, NaN -> the lowest value.
void quantize_q8(const float* src, void* dst, bool is_signed, int64_t n, float inv_scale, int64_t zero_point);
/// dst[i] = float((double(src[i]) - zero_point) * scale), src int8 (is_signed) or uint8.
void dequantize_q8(const void* src, bool is_signed, float* dst, int64_t n, double scale, int64_t zero_point);
/// The quantized add/mul of Note [Quantized elementwise arithmetic], in float64:
///   add: v = ((a - za) * sa + (b - zb) * sb) / scale;  mul: v = ((a - za) * sa) * ((b - zb) * sb) / scale
///   dst = max(floor_q, clamp(nearbyint(v) + zero_point, qmin, qmax)).
struct QBinaryParams {
  double sa, za, sb, zb, scale;
  int64_t zero_point, floor_q;
  bool mul;
};
void binary_q8(const void* a, const void* b, void* dst, bool is_signed, int64_t n, const QBinaryParams& p);

/// *lo = min(0, src...), *hi = max(0, src...); false if any of the n values is NaN or infinite.
bool finite_range(const float* src, int64_t n, float* lo, float* hi);
/// out[m, n] = out[m, n] * s (+ bias[n] if bias) (then x > 0 ? x : 0 if relu), rounding after
/// each operation; out is [M, N] row-major.
void dynamic_epilogue(float* out, int64_t M, int64_t N, float s, const float* bias, bool relu);

}  // namespace tensor::cpu
