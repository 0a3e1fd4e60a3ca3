// Float32 vector math that hwy/contrib/math (Highway 1.0) lacks: erf, exp2, cosh, tan, and
// sinh over its whole finite range. Included once per Highway target, like Loops-inl.h, after
// hwy/contrib/math/math-inl.h. Accuracy over all float32 inputs: docs/benchmarks.md
// ("Transcendental accuracy"), asserted by tests/test_vec_math_ulp.cpp.

// Per-target include guard, as Highway's -inl.h convention requires.
#if defined(TENSOR_KERNELS_CPU_VEC_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TENSOR_KERNELS_CPU_VEC_MATH_INL_H_
#undef TENSOR_KERNELS_CPU_VEC_MATH_INL_H_
#else
#define TENSOR_KERNELS_CPU_VEC_MATH_INL_H_
#endif

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace vecmath {

/// c[0] + c[1] t + ... + c[N-1] t^(N-1) by Horner's rule with fused multiply-adds.
template <class D, class V, size_t N>
HWY_INLINE V poly(D d, V t, const float (&c)[N]) {
  V p = hn::Set(d, c[N - 1]);
  for (size_t k = N - 1; k-- > 0;) p = hn::MulAdd(p, t, hn::Set(d, c[k]));
  return p;
}

// Note [Vector erf]
// Two branch-free pieces, blended per lane:
// - |x| < 1: erf(x) = x + x * P(x^2). P is erf(x)/x - 1 (a degree-6 polynomial in x^2, fitted
//   for least maximum relative error by Lawson-weighted least squares in long double); adding
//   the small correction x * P to x last keeps the rounding error near half an ulp.
// - |x| >= 1: erf(|x|) = 1 - exp(Q(|x|)), Q a degree-9 polynomial fitted to log(erfc(x)) on
//   [1, 4] with weight erfc(x), i.e. for the absolute error of erfc, which is what the
//   subtraction from 1 keeps. |x| is clamped to 4, where erfc(4) = 1.5e-8 rounds 1 - erfc to 1.
// Max error over every float32 input: docs/benchmarks.md.
template <class D, class V>
HWY_INLINE V Erf(D d, V x) {
  static constexpr float kSmall[] = {1.283791657e-01f, -3.761262582e-01f, 1.128358515e-01f, -2.685381193e-02f,
                                     5.188327679e-03f, -8.010193568e-04f, 7.853861165e-05f};
  static constexpr float kLarge[] = {1.252929167e-04f,  -1.129203851e+00f, -6.341961319e-01f, -1.069614866e-01f,
                                     2.383649859e-02f,  -3.360263289e-03f, 1.017574407e-04f,  6.434216615e-05f,
                                     -1.245288414e-05f, 7.845268237e-07f};
  const V one = hn::Set(d, 1.0f);
  const V a = hn::Abs(x);
  const V small = hn::MulAdd(x, poly(d, hn::Mul(x, x), kSmall), x);
  const V q = poly(d, hn::Min(a, hn::Set(d, 4.0f)), kLarge);
  const V large = hn::CopySignToAbs(hn::Sub(one, hn::Exp(d, q)), x);
  const V r = hn::IfThenElse(hn::Lt(a, one), small, large);
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// 2^n for integer-valued lanes n in [-126, 127], built from the exponent bits.
template <class D, class VI>
HWY_INLINE hn::Vec<D> pow2i(D d, VI n) {
  const hn::RebindToSigned<D> di;
  return hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n, hn::Set(di, 127))));
}

// Note [Vector exp2]
// exp2(x) = 2^n * 2^f with n = round(x) and f = x - n, which is exact, so unlike exp(x ln 2)
// no rounding of the argument is magnified by a large |x|; 2^f is a polynomial (one range
// reduction, not a second one inside exp). x is clamped to [-152, 129], past which the result is 0 or inf anyway; 2^n is applied as
// two factors, each a normal float, so subnormal results round once and overflow gives inf.
template <class D, class V>
HWY_INLINE V Exp2(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V xc = hn::Min(hn::Max(x, hn::Set(d, -152.0f)), hn::Set(d, 129.0f));
  const V n = hn::Round(xc);
  // 2^f on [-0.5, 0.5]: degree 6, fitted for relative error like erf's pieces (0.95 ulp).
  static constexpr float k2f[] = {1.0f,          6.931472057e-01f, 2.402264689e-01f, 5.550328777e-02f,
                                  9.618488958e-03f, 1.339993122e-03f, 1.534581182e-04f};
  const V e = poly(d, hn::Sub(xc, n), k2f);
  const auto ni = hn::ConvertTo(di, n);
  const auto n1 = hn::ShiftRight<1>(ni);  // floor(n / 2), so both halves lie in [-76, 65]
  const V r = hn::Mul(hn::Mul(e, pow2i(d, n1)), pow2i(d, hn::Sub(ni, n1)));
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// exp(|x|) / 2 for cosh and sinh, finite up to |x| = 89.4 (where e^|x| itself overflows at
/// 88.7): above 88, exp(|x| / 2)^2 / 2 with an exact halving of the argument.
template <class D, class V>
HWY_INLINE V half_exp_abs(D d, V a) {
  const V half = hn::Set(d, 0.5f);
  const auto big = hn::Gt(a, hn::Set(d, 88.0f));
  // Exp is valid up to 104: past 180 (e^90 squared is inf anyway) the argument is clamped.
  const V e = hn::Exp(d, hn::IfThenElse(big, hn::Mul(hn::Min(a, hn::Set(d, 180.0f)), half), hn::Min(a, hn::Set(d, 88.0f))));
  return hn::IfThenElse(big, hn::Mul(hn::Mul(e, half), e), hn::Mul(e, half));
}

/// cosh(x) = e^|x| / 2 + e^-|x| / 2 (the second term vanishes where it is below an ulp).
template <class D, class V>
HWY_INLINE V Cosh(D d, V x) {
  const V a = hn::Abs(x);
  const V h = half_exp_abs(d, a);
  const V r = hn::Add(h, hn::Div(hn::Set(d, 0.25f), h));  // e^-|x| / 2 = (1/4) / (e^|x| / 2)
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// sinh: Highway's Sinh inside its range |x| <= 88.7, e^|x| / 2 with x's sign beyond it.
template <class D, class V>
HWY_INLINE V Sinh(D d, V x) {
  const V a = hn::Abs(x);
  const V big = hn::CopySignToAbs(half_exp_abs(d, a), x);
  const V r = hn::IfThenElse(hn::Gt(a, hn::Set(d, 88.0f)), big, hn::Sinh(d, hn::Min(hn::Max(x, hn::Set(d, -88.0f)), hn::Set(d, 88.0f))));
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

}  // namespace vecmath
}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
