// Vector math that hwy/contrib/math (Highway 1.0) lacks: float32 erf, exp2, cosh, tan, and
// sinh over its whole finite range; float32/float64 fmod, hypot, atan2 and logaddexp. Included once per Highway target, like Loops-inl.h, after
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

// Note [Vector exp for sigmoid]
// exp(t) for float t already clamped to [-88, 89] (sigmoid and silu, Note [Sigmoid and silu
// edges]): n = round(t / ln 2), r = t - n ln 2 in two parts, a degree-6 polynomial (1.9e-9
// relative on [-ln 2 / 2, ln 2 / 2]) and 2^n applied as two normal factors, so results round to
// subnormals near -88 and overflow to inf past 88.72. No lower-bound compare or blend and no NaN
// patch, which the callers' clamps make unnecessary: 17 ops against Highway's Exp's ~22.
template <class D, class V>
HWY_INLINE V ExpClamped(D d, V t) {
  const hn::RebindToSigned<D> di;
  static constexpr float kE[] = {1.000000000e+00f, 1.000000000e+00f, 4.999999106e-01f, 1.666641980e-01f,
                                 4.166822508e-02f, 8.374815807e-03f, 1.383684226e-03f};
  const V n = hn::Round(hn::Mul(t, hn::Set(d, 1.44269504088896341f)));
  V r = hn::NegMulAdd(n, hn::Set(d, 0.693145751953125f), t);
  r = hn::NegMulAdd(n, hn::Set(d, 1.428606765330187045e-06f), r);
  const auto ni = hn::ConvertTo(di, n);
  const auto n1 = hn::ShiftRight<1>(ni);  // both factors in [-64, 64]
  return hn::Mul(hn::Mul(poly(d, r, kE), pow2i(d, n1)), pow2i(d, hn::Sub(ni, n1)));
}

// Note [Vector gelu]
// gelu(x) = x Phi(x), Phi the standard normal CDF. torch's and oneDNN's 0.5 x (1 + erf(x / sqrt 2))
// cancel for x < 0: 1 + erf loses every digit by x = -5.7, where they return 0 for values down
// to 1e-7 of x (oneDNN 2.6: 1.7e7 ulp). Here q = Phi(-|x|) is computed without cancellation,
// gelu = max(x, 0) - |x| q, one fused multiply-add that is exact for x < 0 and rounds once for
// x >= 0:
// - q = exp(-u^2 / 2) R(t), u = |x|, R(u) = Phi(-u) exp(u^2 / 2) smooth and in (0.03, 0.5] on
//   [0, 13.27]; a degree-8 polynomial in t = 1 / (1 + 0.3 u) (the Abramowitz-Stegun 26.2.17
//   substitution, here fitted for relative error by Lawson-weighted least squares) fits it to 6e-8;
//   rounding t in float costs the rest (3e-7 evaluated in float).
// - exp(-u^2 / 2): u^2 = h + l exactly (fma), w = -h - 2 n ln 2 (Cody-Waite, ln 2 in two parts)
//   minus l, exp(w / 2) a degree-5 polynomial, times 2^n. The product's rounding is never
//   magnified by u^2, unlike exp(-x * x) of a rounded square.
// - u is clamped to 13.27, where n = -127 makes 2^n (from the exponent bits) exactly 0: past it
//   gelu is exactly 0 or x, and the true value is below 2^-126 anyway.
// 21 multiplies or fmas, a division and ~9 cheaper ops per vector; the fma pipe bounds it. On
// AVX-512 only vectors with a lane past |x| = 4 (or inf, NaN) come here: the rest take Note
// [Gelu by table], about twice as fast. Max error of this path: 8.54 ulp near x = -0.34, from
// rounding t (docs/benchmarks.md, "Transcendental accuracy"; tests/test_vec_math_ulp.cpp).
// Note [Gelu by table]
// Where every lane of a vector has |x| < 4 (all but ~1e-3 of the vectors of randn input),
// gelu(x) = max(x, 0) - g(|x|), g(u) = u Phi(-u), is a degree-5 polynomial picked per lane from
// 16 intervals of width 1/4 (s = 4u - k in [0, 1), each coefficient one permute of a 16-entry
// table), fitted for relative error by scripts/fit_gelu_table.py. That is 5 fmas, 6 permutes
// and 5 cheaper ops against Note [Vector gelu]'s 21 fmas and a division, and it is more
// accurate: max 3.0 ulp against 8.54. g(u) for x < 0 is the whole result, so only a relative
// fit keeps its digits; interval 0's slope is 1/8 exactly, so tiny x give x / 2 rounded once.
// Vectors with a lane past 4, inf or NaN take the general path. Needs 16 lanes (AVX-512).
template <class D, class V>
HWY_INLINE V GeluByTable(D d, V x, V u) {
  const hn::RebindToSigned<D> di;
  alignas(64) static constexpr float kG[6][16] = {
      {0.000000000e+00f, 1.003234163e-01f, 1.542687714e-01f, 1.699705124e-01f, 1.586552560e-01f, 1.320622116e-01f,
       1.002108008e-01f, 7.010352612e-02f, 4.550026357e-02f, 2.750506438e-02f, 1.552416384e-02f, 8.194348775e-03f,
       4.049694166e-03f, 1.875331393e-03f, 8.142017759e-04f, 3.315647773e-04f},
      {1.250000000e-01f, 7.615661621e-02f, 3.312621638e-02f, 1.936087065e-04f, -2.082880586e-02f, -3.066533804e-02f,
       -3.186726198e-02f, -2.773153037e-02f, -2.130796202e-02f, -1.479745656e-02f, -9.402790107e-03f, -5.506895483e-03f,
       -2.986417152e-03f, -1.504346146e-03f, -7.054386660e-04f, -3.084522323e-04f},
      {-2.493371814e-02f, -2.341100574e-02f, -1.925351843e-02f, -1.352810208e-02f, -7.562283427e-03f, -2.497805748e-03f,
       1.011463581e-03f, 2.864589216e-03f, 3.374570282e-03f, 3.037808230e-03f, 2.328182803e-03f, 1.580851153e-03f,
       9.695272311e-04f, 5.429385346e-04f, 2.795166511e-04f, 1.328920625e-04f},
      {-1.667219408e-06f, 9.887554916e-04f, 1.718768734e-03f, 2.023625886e-03f, 1.893320587e-03f, 1.451981254e-03f,
       8.870454622e-04f, 3.690157027e-04f, -5.305573154e-07f, -1.985085692e-04f, -2.576026891e-04f, -2.325534733e-04f,
       -1.733703248e-04f, -1.127410069e-04f, -6.556582957e-05f, -3.456943523e-05f},
      {2.647031506e-04f, 2.295141894e-04f, 1.333128166e-04f, 1.522418188e-05f, -8.429814625e-05f, -1.389207027e-04f,
       -1.442491630e-04f, -1.140246677e-04f, -6.937423314e-05f, -2.832557766e-05f, -3.837322140e-07f, 1.326605616e-05f,
       1.635647095e-05f, 1.384243660e-05f, 9.606644198e-06f, 5.785810572e-06f},
      {-5.895342838e-06f, -1.853114009e-05f, -2.303284600e-05f, -1.961712405e-05f, -1.096906362e-05f, -1.331035264e-06f,
       5.726695235e-06f, 8.689834431e-06f, 8.096832062e-06f, 5.582057838e-06f, 2.779159331e-06f, 6.769992638e-07f,
       -4.588772242e-07f, -8.234845268e-07f, -7.557234198e-07f, -5.360466275e-07f},
  };
  const V t = hn::Mul(u, hn::Set(d, 4.0f));
  const V f = hn::Floor(t);
  const auto idx = hn::IndicesFromVec(d, hn::ConvertTo(di, f));
  const V s = hn::Sub(t, f);
  const auto c = [&](int j) { return hn::TableLookupLanes(hn::Load(d, kG[j]), idx); };
  V p = c(5);
  for (int j = 4; j >= 0; --j) p = hn::MulAdd(p, s, c(j));
  // max(0, x), not max(x, 0): x86's max returns its second operand on a tie, so gelu(-0) = -0.
  return hn::Sub(hn::Max(hn::Zero(d), x), p);
}

template <class D, class V>
HWY_INLINE V Gelu(D d, V x) {
  const V a = hn::Abs(x);
  if constexpr (hn::MaxLanes(D()) == 16 && std::is_same_v<hn::TFromD<D>, float>) {
    if (hn::AllTrue(d, hn::Lt(a, hn::Set(d, 4.0f)))) return GeluByTable(d, x, a);
  }
  const hn::RebindToSigned<D> di;
  static constexpr float kR[] = {6.592955287e-06f, 1.194974557e-01f, 1.218509004e-01f, 9.495405108e-02f, 1.419021934e-01f,
                                 -7.559178025e-02f, 2.278620452e-01f, -1.687805355e-01f, 3.829909861e-02f};
  // exp(w / 2) for w in [-ln 2, ln 2]: exp's degree-5 coefficients on [-ln 2 / 2, ln 2 / 2]
  // (7.5e-8 relative) over powers of two, which is exact.
  static constexpr float kE[] = {1.000000119e+00f,      9.999997020e-01f / 2,  4.999889433e-01f / 4,
                                 1.666757464e-01f / 8,  4.191538319e-02f / 16, 8.297652006e-03f / 32};
  const V u = hn::Min(a, hn::Set(d, 13.27f));
  const V h = hn::Mul(u, u);
  const V l = hn::MulSub(u, u, h);  // u^2 = h + l exactly
  const V n = hn::Round(hn::Mul(h, hn::Set(d, -0.721347520444481703f)));
  V w = hn::NegMulSub(n, hn::Set(d, 2 * 0.693145751953125f), h);  // -u^2 - 2 n ln 2
  w = hn::NegMulAdd(n, hn::Set(d, 2 * 1.428606765330187045e-06f), w);
  w = hn::Sub(w, l);
  const V e = hn::Mul(poly(d, w, kE), pow2i(d, hn::ConvertTo(di, n)));
  const V t = hn::Div(hn::Set(d, 1.0f), hn::MulAdd(u, hn::Set(d, 0.3f), hn::Set(d, 1.0f)));
  const V q = hn::Mul(e, poly(d, t, kR));  // Phi(-|x|)
  // max(0, x), not max(x, 0): x86's max returns its second operand on a tie, so gelu(-0) = -0.
  const V y = hn::NegMulAdd(u, q, hn::Max(hn::Zero(d), x));
  // NaN, and -inf (-inf * 0, as the formula 0.5 x erfc(-x / sqrt 2) gives): NaN.
  return hn::IfThenElse(hn::Gt(x, hn::Set(d, -HUGE_VALF)), y, hn::NaN(d));
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

// ---- binary functions, float32 and float64 (kernels/cpu/BinaryKernels.cpp) ----

// Note [Vector fmod]
// fmod(a, b) is exact in IEEE arithmetic (the remainder is always representable), and the
// scalar path gives the C library's exact answer; the vector path must give the same bits.
// Where |a| < 2^p |b| (p = 24 for float, 53 for double) the quotient q = trunc(a / b) of the
// rounded division is the true integer quotient n or n + 1: the division errs by less than
// one unit below 2^p and cannot round below an integer it reaches. a - q b then holds exactly
// in one fused multiply-add, since for q = n it is the true remainder and for q = n + 1 it is
// that remainder minus |b| in a's direction, a multiple of b's last bit smaller than |b|
// (|a| >= |b| whenever n >= 1; for |a| < |b| the quotient rounds below 1, so q = 0). The
// wrong-signed result of q = n + 1 is corrected by adding |b| back, again exactly. Lanes
// outside that range (huge quotients, b = 0 or inf, a = inf, NaN) are marked for the caller
// to compute with the scalar formula; without a native FMA every lane is.
template <class D, class V>
HWY_INLINE hn::Mask<D> FmodNeedsScalar(D d, V a, V b) {
#if HWY_NATIVE_FMA
  using T = hn::TFromD<D>;
  const V ab = hn::Abs(b);
  const V limit = hn::Mul(ab, hn::Set(d, sizeof(T) == 4 ? T(16777216.0) : T(9007199254740992.0)));
  // Also true for NaN lanes (every comparison with NaN is false).
  return hn::Not(hn::And(hn::Lt(hn::Abs(a), limit), hn::Lt(ab, hn::Inf(d))));
#else
  (void)a, (void)b;
  return hn::FirstN(d, hn::Lanes(d));
#endif
}

/// fmod(a, b) for the lanes FmodNeedsScalar leaves to the vector path (others: unspecified).
template <class D, class V>
HWY_INLINE V Fmod(D d, V a, V b) {
  const V zero = hn::Zero(d);
  const V q = hn::Trunc(hn::Div(a, b));
  V r = hn::NegMulAdd(q, b, a);  // a - q b, exact (Note [Vector fmod])
  const auto wrong = hn::And(hn::Ne(r, zero), hn::Xor(hn::Lt(r, zero), hn::Lt(a, zero)));
  r = hn::IfThenElse(wrong, hn::Add(r, hn::CopySign(hn::Abs(b), a)), r);
  return hn::CopySign(r, a);  // a zero remainder takes a's sign, as C's fmod
}

// Note [Vector hypot]
// sqrt(a^2 + b^2) as sqrt(fma(a, a, b * b)): the rounding of b^2 (the smaller square is b's
// once |a| >= |b|) and of the fma, each at most half an ulp of the sum, are halved again by the
// square root, so the result stays within about one ulp. The squares neither overflow nor
// lose the smaller term to underflow while max(|a|, |b|) lies in [2^-50, 2^50] (float; 2^-450
// to 2^450 for double) or is 0; other lanes (and inf and NaN, whose hypot(inf, NaN) = inf rule
// the C library keeps) are marked for the scalar formula.
template <class D, class V>
HWY_INLINE hn::Mask<D> HypotNeedsScalar(D d, V a, V b) {
#if HWY_NATIVE_FMA
  using T = hn::TFromD<D>;
  const V m = hn::Max(hn::Abs(a), hn::Abs(b));
  const bool f32 = sizeof(T) == 4;
  const V hi = hn::Set(d, f32 ? T(0x1p50) : T(0x1p450)), lo = hn::Set(d, f32 ? T(0x1p-50) : T(0x1p-450));
  const auto ok = hn::And(hn::Le(m, hi), hn::Or(hn::Ge(m, lo), hn::Eq(m, hn::Zero(d))));
  return hn::Not(hn::And(ok, hn::Not(hn::Or(hn::IsNaN(a), hn::IsNaN(b)))));
#else
  (void)a, (void)b;
  return hn::FirstN(d, hn::Lanes(d));
#endif
}
template <class D, class V>
HWY_INLINE V Hypot(D, V a, V b) {
  const V aa = hn::Abs(a), ab = hn::Abs(b);
  const V big = hn::Max(aa, ab), small = hn::Min(aa, ab);
  return hn::Sqrt(hn::MulAdd(big, big, hn::Mul(small, small)));
}

// Note [Vector atan2]
// atan2(y, x) from one atan on [0, 1]: t = min(|x|, |y|) / max(|x|, |y|), then the octant
// is restored with pi/2 - atan(t) (when |y| > |x|) and pi - that (when x is negative, -0
// included), each constant split into a head and a tail so that only the subtraction
// rounds, and the sign of y goes on last. The C library's special values follow from the same
// steps with t = 0 for 0/0 (atan2(+-0, +-0) = +-0 or +-pi) and t = 1 for inf/inf
// (+-pi/4, +-3pi/4); NaN in either gives NaN. Max error: docs/benchmarks.md.
template <class D, class V>
HWY_INLINE V Atan2(D d, V y, V x) {
  using T = hn::TFromD<D>;
  const V zero = hn::Zero(d), one = hn::Set(d, T(1));
  const V ay = hn::Abs(y), ax = hn::Abs(x);
  const V num = hn::Min(ay, ax), den = hn::Max(ay, ax);
  V t = hn::Div(num, den);
  t = hn::IfThenElse(hn::Eq(den, zero), zero, t);
  t = hn::IfThenElse(hn::And(hn::IsInf(y), hn::IsInf(x)), one, t);
  V a = hn::Atan(d, t);
  // pi/2 and pi as head + tail (the tail is the head's rounding error, in T).
  const T half_pi_hi = static_cast<T>(1.57079632679489661923132169163975144L);
  const T half_pi_lo = static_cast<T>(1.57079632679489661923132169163975144L - static_cast<long double>(half_pi_hi));
  const T pi_hi = static_cast<T>(3.14159265358979323846264338327950288L);
  const T pi_lo = static_cast<T>(3.14159265358979323846264338327950288L - static_cast<long double>(pi_hi));
  a = hn::IfThenElse(hn::Gt(ay, ax), hn::Add(hn::Sub(hn::Set(d, half_pi_hi), a), hn::Set(d, half_pi_lo)), a);
  const auto x_neg = hn::Lt(hn::CopySign(one, x), zero);  // sign bit, so -0 counts
  a = hn::IfThenElse(x_neg, hn::Add(hn::Sub(hn::Set(d, pi_hi), a), hn::Set(d, pi_lo)), a);
  const V r = hn::CopySign(a, y);
  return hn::IfThenElse(hn::Or(hn::IsNaN(y), hn::IsNaN(x)), hn::Add(y, x), r);
}

/// log(e^a + e^b) = max(a, b) + log1p(e^-|a - b|), as kernels/math/Binary.h's scalar formula:
/// equal infinities give themselves (inf - inf would be NaN), NaN in either gives NaN.
template <class D, class V>
HWY_INLINE V LogAddExp(D d, V a, V b) {
  using T = hn::TFromD<D>;
  const V m = hn::Max(a, b);
  const V nd = hn::Neg(hn::Abs(hn::Sub(a, b)));  // <= 0, or NaN
  // Exp is valid down to -FLT_MAX, but past the subnormal range it need not round to 0.
  const T lo = sizeof(T) == 4 ? T(-103.972) : T(-745.1332191019411);
  const V e = hn::IfThenElse(hn::Lt(nd, hn::Set(d, lo)), hn::Zero(d), hn::Exp(d, nd));
  V r = hn::Add(m, hn::Log1p(d, e));
  r = hn::IfThenElse(hn::And(hn::IsInf(a), hn::Eq(a, b)), a, r);
  return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), r);
}


#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// Note [Vector pow]
// float32 pow(a, y) for positive finite a and finite y, as 2^(y log2 a) in float64 lanes with
// eight-entry tables: one 512-bit vector each, looked up with a lane permute (so AVX-512
// only; other targets keep Highway's float64 Log and Exp, Note [Vector binary math]). A float
// result needs y log2 a to about 2^-28 absolute (that times ln 2 is its relative error) and
// |y log2 a| <= 150 where the result is not 0 or inf, so log2 a needs ~2^-36 relative error,
// far less than Highway's full-precision float64 Log (a division, 12 polynomial terms) and Exp.
// - log2: a = 2^k z with z in [0.71875, 1.4375) (the bits of a minus those of 0.71875, split
//   at the exponent field; a float promoted to double is never subnormal). The top three
//   mantissa bits of z - 0.71875 pick c (the centre of z's eighth of the range, exactly 1 in
//   the one holding 1, so that log2 a near 1 keeps its relative accuracy); with r = z / c - 1,
//   |r| <= 1/16, log2 a = k + log2 c + log2(1 + r), the last by its Taylor series to r^9
//   (truncation below 2^-39 relative). z * (1 / c) - 1 rounds once, at 2^-53.
// - exp2: t = y log2 a, clamped to [-160, 130] (past which the float result is 0 or inf),
//   N = round(8 t) and f = t - N / 8, exact, |f| <= 1/16; 2^t = 2^(N >> 3) 2^((N & 7) / 8) 2^f,
//   the middle factor from a table whose entries hold -(j << 49) so that adding N << 49 to
//   their bits also applies 2^(N >> 3); 2^f is its Taylor series to f^5 (below 2^-36).
// The float64 result is within ~2^-33 relative of the exact power and the demotion to float
// rounds it once, to a subnormal or to inf where the exact result is one. Max error over the
// accuracy test's pairs: tests/test_vec_math_ulp.cpp.
template <class DD>
HWY_INLINE hn::Vec<DD> PowPositiveF64(DD dd, hn::Vec<DD> a, hn::Vec<DD> y) {
  static_assert(hn::MaxLanes(DD()) == 8, "eight-entry tables are one 512-bit vector");
  const hn::RebindToSigned<DD> di;
  alignas(64) static constexpr double kInvC[8] = {
      0x1.5555555555555p+0, 0x1.3b13b13b13b14p+0, 0x1.2492492492492p+0, 0x1.1111111111111p+0,
      0x1p+0,               0x1.c71c71c71c71cp-1, 0x1.999999999999ap-1, 0x1.745d1745d1746p-1};
  alignas(64) static constexpr double kLog2C[8] = {
      -0x1.a8ff971810a5dp-2, -0x1.32bfee370ee6ap-2, -0x1.8a8980abfbd3p-3, -0x1.7d60496cfbb4bp-4,
      0.0,                   0x1.5c01a39fbd68bp-3,  0x1.49a784bcd1b8ap-2, 0x1.d6753e032ea0ep-2};
  // Bits of 2^(j/8), minus j << 49.
  alignas(64) static constexpr int64_t kExp2J[8] = {
      0x3ff0000000000000LL, 0x3fef72b83c7d517bLL, 0x3fef06fe0a31b715LL, 0x3feebfdad5362a27LL,
      0x3feea09e667f3bcdLL, 0x3feeace5422aa0dbLL, 0x3feee89f995ad3adLL, 0x3fef5818dcfba487LL};
  // log2(1 + r) = r * (c1 + c2 r + ... + c9 r^8), c_k = (-1)^(k+1) / (k ln 2).
  static constexpr double kLog2P[9] = {0x1.71547652b82fep+0,  -0x1.71547652b82fep-1, 0x1.ec709dc3a03fdp-2,
                                       -0x1.71547652b82fep-2, 0x1.2776c50ef9bfep-2,  -0x1.ec709dc3a03fdp-3,
                                       0x1.a61762a7aded9p-3,  -0x1.71547652b82fep-3, 0x1.484b13d7c02a9p-3};
  // 2^f - 1 = f * (e1 + e2 f + ... + e5 f^4), e_k = ln(2)^k / k!.
  static constexpr double kExp2P[5] = {0x1.62e42fefa39efp-1, 0x1.ebfbdff82c58fp-3, 0x1.c6b08d704a0cp-5,
                                       0x1.3b2ab6fba4e77p-7, 0x1.5d87fe78a6731p-10};
  const auto bits = hn::BitCast(di, a);
  const auto tmp = hn::Sub(bits, hn::Set(di, 0x3FE7000000000000LL));
  const auto idx = hn::IndicesFromVec(dd, hn::And(hn::ShiftRight<49>(tmp), hn::Set(di, 7)));
  const auto k = hn::ConvertTo(dd, hn::ShiftRight<52>(tmp));  // arithmetic shift: k may be < 0
  const auto z = hn::BitCast(dd, hn::Sub(bits, hn::And(tmp, hn::Set(di, -(int64_t(1) << 52)))));
  const auto r = hn::MulSub(z, hn::TableLookupLanes(hn::Load(dd, kInvC), idx), hn::Set(dd, 1.0));
  auto p = hn::Set(dd, kLog2P[8]);
  for (int i = 7; i >= 0; --i) p = hn::MulAdd(p, r, hn::Set(dd, kLog2P[i]));
  const auto lg = hn::MulAdd(p, r, hn::Add(k, hn::TableLookupLanes(hn::Load(dd, kLog2C), idx)));
  const auto t = hn::Min(hn::Max(hn::Mul(y, lg), hn::Set(dd, -160.0)), hn::Set(dd, 130.0));
  const auto n = hn::Round(hn::Mul(t, hn::Set(dd, 8.0)));
  const auto f = hn::NegMulAdd(n, hn::Set(dd, 0.125), t);
  const auto ni = hn::ConvertTo(di, n);
  const auto j = hn::IndicesFromVec(dd, hn::And(ni, hn::Set(di, 7)));
  const auto tj = hn::TableLookupLanes(hn::BitCast(dd, hn::Load(di, kExp2J)), j);
  const auto scale = hn::BitCast(dd, hn::Add(hn::BitCast(di, tj), hn::ShiftLeft<49>(ni)));
  auto q = hn::Set(dd, kExp2P[4]);
  for (int i = 3; i >= 0; --i) q = hn::MulAdd(q, f, hn::Set(dd, kExp2P[i]));
  return hn::MulAdd(hn::Mul(q, f), scale, scale);
}
#endif

}  // namespace vecmath
}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
