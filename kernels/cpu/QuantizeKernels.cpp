// Vectorized quantize, dequantize and quantized add/mul loops over contiguous 8-bit data, per
// Highway target (kernels/cpu/QuantizeKernels.h).
//
// Note [Vectorized quantize loops]
// These loops compute the scalar definitions bit for bit, with the same IEEE operations in the
// same order, only several lanes at a time:
//   quantize   float32 x * (1/scale) (Mul), Round (ties to even, as nearbyint in the default
//              mode), clamped to [qmin - zp, qmax - zp] while still float (the rounded values
//              are integers or infinities, so clamping before adding the zero point equals
//              clamping after, and nothing inexact happens past 2^24), NaN replaced by
//              qmin - zp, then converted to int32, the zero point added, narrowed.
//   dequantize the integers widened to float64, (q - zp) * scale in float64, then one
//              rounding to float32 (DemoteTo) -- as the scalar loop; float32 arithmetic would
//              round the scale first and differ in the last bit.
//   add / mul  float64 lanes doing what src/ops/QuantizedElementwise.cpp's loop does (Note
//              [Quantized elementwise arithmetic]); Round, add the zero point, clamp.
// The file is compiled with -ffp-contract=off (CMakeLists.txt): the AVX2 and AVX-512 targets
// have FMA, and a fused (a - za) * sa + rb would round once where the definition rounds twice.
// Tails shorter than a vector run the scalar formulas, and so does the whole loop on the
// baseline target (HWY_SCALAR / HWY_EMU128, which CPUs without AVX2 get: CMakeLists.txt disables
// SSSE3/SSE4): Highway's one-lane emulation of Round and the conversions is several times slower
// than the plain loops, which the compiler vectorizes with SSE2 itself.
#include "kernels/cpu/QuantizeKernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/QuantizeKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether this target has real vectors (else the plain loops run: see the Note).
constexpr bool kVectors = HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128;


template <class T>
void QuantizeT(const float* HWY_RESTRICT src, T* HWY_RESTRICT dst, int64_t n, float inv, int64_t zp) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<T, decltype(df)> dq;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto vinv = hn::Set(df, inv);
  const auto vlo = hn::Set(df, static_cast<float>(std::numeric_limits<T>::min() - zp));
  const auto vhi = hn::Set(df, static_cast<float>(std::numeric_limits<T>::max() - zp));
  const auto vzp = hn::Set(di, static_cast<int32_t>(zp));
  int64_t i = 0;
  for (; kVectors && i + N <= n; i += N) {
    const auto r = hn::Round(hn::Mul(hn::LoadU(df, src + i), vinv));
    const auto c = hn::IfThenElse(hn::IsNaN(r), vlo, hn::Min(hn::Max(r, vlo), vhi));
    hn::StoreU(hn::DemoteTo(dq, hn::Add(hn::ConvertTo(di, c), vzp)), dq, dst + i);
  }
  for (; i < n; ++i) dst[i] = ::tensor::cpu::quantize_value<T>(src[i], inv, zp);
}

void QuantizeImpl(const float* src, void* dst, bool is_signed, int64_t n, float inv, int64_t zp) {
  if (is_signed)
    QuantizeT(src, static_cast<int8_t*>(dst), n, inv, zp);
  else
    QuantizeT(src, static_cast<uint8_t*>(dst), n, inv, zp);
}

// The dynamic linear's input range (Note [Dynamic quantization range] in
// src/ops/QuantizedLinear.cpp): min and max of the values and 0, false if any is NaN or inf.
bool FiniteRangeImpl(const float* HWY_RESTRICT src, int64_t n, float* lo, float* hi) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto vlo0 = hn::Zero(d), vhi0 = hn::Zero(d), vlo1 = vlo0, vhi1 = vhi0;
  auto bad = hn::Lt(vlo0, vlo0);  // all false
  int64_t i = 0;
  for (; kVectors && i + 2 * N <= n; i += 2 * N) {
    const auto a = hn::LoadU(d, src + i), b = hn::LoadU(d, src + i + N);
    vlo0 = hn::Min(vlo0, a), vhi0 = hn::Max(vhi0, a);
    vlo1 = hn::Min(vlo1, b), vhi1 = hn::Max(vhi1, b);
    bad = hn::Or(bad, hn::Or(hn::Not(hn::IsFinite(a)), hn::Not(hn::IsFinite(b))));
  }
  float l = hn::GetLane(hn::MinOfLanes(d, hn::Min(vlo0, vlo1)));
  float h = hn::GetLane(hn::MaxOfLanes(d, hn::Max(vhi0, vhi1)));
  bool finite = hn::AllFalse(d, bad);
  for (; i < n; ++i) {
    finite &= std::isfinite(src[i]);
    l = std::min(l, src[i]);
    h = std::max(h, src[i]);
  }
  *lo = l, *hi = h;
  return finite;
}

// The dynamic linear's epilogue (Note [Constant scales in the int8 matmul]): each row of `out`
// [M, N] times s, plus bias[n], then ReLU (x > 0 ? x : 0) if asked; multiply and add round
// separately (this file is compiled without contraction).
void DynamicEpilogueImpl(float* HWY_RESTRICT out, int64_t M, int64_t N, float s, const float* HWY_RESTRICT bias,
                         bool relu) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto vs = hn::Set(d, s);
  for (int64_t m = 0; m < M; ++m) {
    float* row = out + m * N;
    int64_t n = 0;
    for (; kVectors && n + L <= N; n += L) {
      auto v = hn::Mul(hn::LoadU(d, row + n), vs);
      if (bias) v = hn::Add(v, hn::LoadU(d, bias + n));
      if (relu) v = hn::Max(v, hn::Zero(d));  // x86 max returns the second operand for NaN and -0
      hn::StoreU(v, d, row + n);
    }
    for (; n < N; ++n) {
      float v = row[n] * s;
      if (bias) v += bias[n];
      row[n] = relu ? (v > 0.f ? v : 0.f) : v;
    }
  }
}

template <class T>
void DequantizeT(const T* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n, double scale, int64_t zp) {
  const double z = static_cast<double>(zp);
  int64_t i = 0;
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> dd;
  const hn::Rebind<int32_t, decltype(dd)> di;
  const hn::Rebind<T, decltype(dd)> dq;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const auto vs = hn::Set(dd, scale), vz = hn::Set(dd, z);
  for (; kVectors && i + N <= n; i += N) {
    const auto q = hn::PromoteTo(dd, hn::PromoteTo(di, hn::LoadU(dq, src + i)));
    hn::StoreU(hn::DemoteTo(df, hn::Mul(hn::Sub(q, vz), vs)), df, dst + i);
  }
#endif
  for (; i < n; ++i) dst[i] = static_cast<float>((static_cast<double>(src[i]) - z) * scale);
}

void DequantizeImpl(const void* src, bool is_signed, float* dst, int64_t n, double scale, int64_t zp) {
  if (is_signed)
    DequantizeT(static_cast<const int8_t*>(src), dst, n, scale, zp);
  else
    DequantizeT(static_cast<const uint8_t*>(src), dst, n, scale, zp);
}

template <class T>
void BinaryT(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, T* HWY_RESTRICT dst, int64_t n, const QBinaryParams& p) {
  const double lo = static_cast<double>(std::max<int64_t>(std::numeric_limits<T>::min(), p.floor_q));
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  const double zp = static_cast<double>(p.zero_point);
  auto scalar = [&](T x, T y) {
    const double ra = (static_cast<double>(x) - p.za) * p.sa, rb = (static_cast<double>(y) - p.zb) * p.sb;
    const double v = p.mul ? ra * rb / p.scale : (ra + rb) / p.scale;
    return static_cast<T>(std::clamp(std::nearbyint(v) + zp, lo, hi));
  };
  int64_t i = 0;
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> dd;
  const hn::Rebind<int32_t, decltype(dd)> di;
  const hn::Rebind<T, decltype(dd)> dq;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  const auto vsa = hn::Set(dd, p.sa), vza = hn::Set(dd, p.za), vsb = hn::Set(dd, p.sb), vzb = hn::Set(dd, p.zb);
  const auto vscale = hn::Set(dd, p.scale), vzp = hn::Set(dd, zp), vlo = hn::Set(dd, lo), vhi = hn::Set(dd, hi);
  for (; kVectors && i + N <= n; i += N) {
    const auto ra = hn::Mul(hn::Sub(hn::PromoteTo(dd, hn::PromoteTo(di, hn::LoadU(dq, a + i))), vza), vsa);
    const auto rb = hn::Mul(hn::Sub(hn::PromoteTo(dd, hn::PromoteTo(di, hn::LoadU(dq, b + i))), vzb), vsb);
    const auto v = p.mul ? hn::Div(hn::Mul(ra, rb), vscale) : hn::Div(hn::Add(ra, rb), vscale);
    const auto r = hn::Min(hn::Max(hn::Add(hn::Round(v), vzp), vlo), vhi);
    hn::StoreU(hn::DemoteTo(dq, hn::DemoteTo(di, r)), dq, dst + i);
  }
#endif
  for (; i < n; ++i) dst[i] = scalar(a[i], b[i]);
}

void BinaryImpl(const void* a, const void* b, void* dst, bool is_signed, int64_t n, const QBinaryParams& p) {
  if (is_signed)
    BinaryT(static_cast<const int8_t*>(a), static_cast<const int8_t*>(b), static_cast<int8_t*>(dst), n, p);
  else
    BinaryT(static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), static_cast<uint8_t*>(dst), n, p);
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(QuantizeImpl);
HWY_EXPORT(DequantizeImpl);
HWY_EXPORT(BinaryImpl);
HWY_EXPORT(FiniteRangeImpl);
HWY_EXPORT(DynamicEpilogueImpl);

void quantize_q8(const float* src, void* dst, bool is_signed, int64_t n, float inv_scale, int64_t zero_point) {
  HWY_DYNAMIC_DISPATCH(QuantizeImpl)(src, dst, is_signed, n, inv_scale, zero_point);
}
void dequantize_q8(const void* src, bool is_signed, float* dst, int64_t n, double scale, int64_t zero_point) {
  HWY_DYNAMIC_DISPATCH(DequantizeImpl)(src, is_signed, dst, n, scale, zero_point);
}
void binary_q8(const void* a, const void* b, void* dst, bool is_signed, int64_t n, const QBinaryParams& p) {
  HWY_DYNAMIC_DISPATCH(BinaryImpl)(a, b, dst, is_signed, n, p);
}
bool finite_range(const float* src, int64_t n, float* lo, float* hi) {
  return HWY_DYNAMIC_DISPATCH(FiniteRangeImpl)(src, n, lo, hi);
}
void dynamic_epilogue(float* out, int64_t M, int64_t N, float s, const float* bias, bool relu) {
  HWY_DYNAMIC_DISPATCH(DynamicEpilogueImpl)(out, M, N, s, bias, relu);
}
}  // namespace tensor::cpu
#endif
