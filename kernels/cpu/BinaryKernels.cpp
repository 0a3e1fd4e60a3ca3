// CPU binary elementwise kernels, compiled once per Highway target (Note [Per-ISA loops]).
#include <cmath>

#include "kernels/cpu/Elementwise.h"
#include "kernels/math/Binary.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/BinaryKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "kernels/cpu/Loops-inl.h"
#include "kernels/cpu/VecMath-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace {

// The scalar formula of each op is kernels/math/Binary.h's binary_op, shared with the CUDA
// kernels.
template <BinaryOp Op, class T>
HWY_INLINE auto scalar_fn(T a, T b) {
  return math::binary_op<Op>(a, b);
}

// Note [Vector binary math]
// The binary ops whose scalar formula is a C library call (fmod and the ops built on it,
// atan2, hypot, logaddexp) ran one element at a time, at well under 1 GB/s. On float32 and
// float64 rows that are contiguous or a broadcast scalar, they run as Highway vectors
// (kernels/cpu/VecMath-inl.h). fmod, remainder and floor division stay bit-identical to the
// scalar formulas (Note [Vector fmod]); so does hypot wherever the C library's special rules
// could differ: a vector that holds a lane the vector formula does not cover (NaN, inf, a
// zero divisor, magnitudes at the ends of the range) is computed with the scalar formula.
// Truncating division joins them: its scalar std::trunc(a / b) stayed a call per element (4K
// floats took 3.6 us, torch 2.15 1.0 us); the vector Div and Trunc round exactly as it does.
// float32 pow (std::pow per element: 4K took 17 us, torch 2.15 10 us) is computed in float64
// lanes: on AVX-512 as 2^(b log2 a) with short polynomials and lane-permute tables (Note
// [Vector pow]; 0.5001 ulp over the dense grid of tests/test_vec_math_ulp.cpp, 4K floats about
// 0.65x torch 2.15's time), elsewhere as Highway's exp(b log a) (4K floats 10.9 us of CPU
// time, torch 2.15 10.4 us: Sleef's powf works in float lanes, twice as many per vector).
// Lanes with a <= 0 or a non-finite operand, where pow's special rules apply, take the scalar
// formula: a vector holding one goes whole to the C library's powf (not correctly rounded:
// 0.68 ulp over the accuracy test's random pairs; torch's Sleef pow is within 1 ulp).
// xlogy (a * log(b), 0 where a is 0) ran the scalar formula, a C library log per element (4K
// floats: 12.4 us of CPU time, 1.74 us now; sweep:xlogy_4K_out read 1.71x torch 2.15, whose
// loop is scalar too). It is a times Highway's Log (the one tensor::log runs) on vectors whose
// b lanes are all positive and finite, else the scalar formula for that vector (b <= 0, inf or
// NaN, where log's special values and the NaN rule apply).
template <BinaryOp Op, class T>
constexpr bool kVecBinary = Op == BinaryOp::Fmod || Op == BinaryOp::Remainder || Op == BinaryOp::DivFloor ||
                            Op == BinaryOp::DivTrunc || Op == BinaryOp::Atan2 || Op == BinaryOp::Hypot ||
                            Op == BinaryOp::Logaddexp || Op == BinaryOp::Xlogy ||
                            (Op == BinaryOp::Pow && std::is_same_v<T, float> && HWY_TARGET != HWY_SCALAR);

template <BinaryOp Op, class D, class V>
HWY_INLINE V vec_binary_op(D d, V a, V b) {
  const V zero = hn::Zero(d);
  if constexpr (Op == BinaryOp::Fmod) {
    return vecmath::Fmod(d, a, b);
  } else if constexpr (Op == BinaryOp::Remainder) {
    // Python's modulo: a nonzero fmod whose sign differs from b's moves by b (py_mod).
    const V mod = vecmath::Fmod(d, a, b);
    const auto fix = hn::And(hn::Ne(mod, zero), hn::Xor(hn::Lt(mod, zero), hn::Lt(b, zero)));
    return hn::IfThenElse(fix, hn::Add(mod, b), mod);
  } else if constexpr (Op == BinaryOp::DivTrunc) {
    return hn::Trunc(hn::Div(a, b));
#if HWY_TARGET != HWY_SCALAR  // one lane has no halves; pow stays scalar there
  } else if constexpr (Op == BinaryOp::Pow) {
    const hn::Half<D> dh;
    const hn::Rebind<double, decltype(dh)> dd;
    using DD = decltype(dd);
    auto half = [&](auto ha, auto hb) {
      const auto x = hn::PromoteTo(dd, ha), y = hn::PromoteTo(dd, hb);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      return hn::DemoteTo(dh, vecmath::PowPositiveF64(dd, x, y));  // Note [Vector pow]
#else
      // A float promoted to double is never subnormal there, so Log's subnormal rescaling
      // (hn::Log is impl::Log<..., true>) is skipped: 7-10% of pow's time at 4K floats. Capped
      // inside Exp's valid range (to +706): exp(110) is still inf as a float; below -1000 Exp
      // returns 0 itself, and above that a result under float's range demotes to 0.
      const auto lg = hn::impl::Log<DD, hn::Vec<DD>, /*kAllowSubnormals=*/false>(dd, x);
      const auto t = hn::Min(hn::Mul(y, lg), hn::Set(dd, 110.0));
      return hn::DemoteTo(dh, hn::Exp(dd, t));
#endif
    };
    return hn::Combine(d, half(hn::UpperHalf(dh, a), hn::UpperHalf(dh, b)),
                       half(hn::LowerHalf(dh, a), hn::LowerHalf(dh, b)));
#endif
  } else if constexpr (Op == BinaryOp::DivFloor) {
    // The steps of kernels/math/Binary.h's floating DivFloor, lane by lane.
    using T = hn::TFromD<D>;
    const V one = hn::Set(d, T(1));
    const V mod = vecmath::Fmod(d, a, b);
    V div = hn::Div(hn::Sub(a, mod), b);
    const auto fix = hn::And(hn::Ne(mod, zero), hn::Xor(hn::Lt(b, zero), hn::Lt(mod, zero)));
    div = hn::IfThenElse(fix, hn::Sub(div, one), div);
    V fl = hn::Floor(div);
    fl = hn::IfThenElse(hn::Gt(hn::Sub(div, fl), hn::Set(d, T(0.5))), hn::Add(fl, one), fl);
    // A zero quotient takes the sign of a / b: the xor of the operands' sign bits.
    return hn::IfThenElse(hn::Ne(div, zero), fl, hn::CopySign(zero, hn::Xor(a, b)));
  } else if constexpr (Op == BinaryOp::Xlogy) {
    return hn::IfThenElse(hn::Eq(a, zero), zero, hn::Mul(a, hn::Log(d, b)));
  } else if constexpr (Op == BinaryOp::Atan2) {
    return vecmath::Atan2(d, a, b);
  } else if constexpr (Op == BinaryOp::Hypot) {
    return vecmath::Hypot(d, a, b);
  } else {
    return vecmath::LogAddExp(d, a, b);
  }
}

/// Lanes the vector formula leaves to the scalar one (Note [Vector binary math]).
template <BinaryOp Op, class D, class V>
HWY_INLINE hn::Mask<D> vec_binary_needs_scalar(D d, V a, V b) {
  if constexpr (Op == BinaryOp::Fmod || Op == BinaryOp::Remainder || Op == BinaryOp::DivFloor)
    return vecmath::FmodNeedsScalar(d, a, b);
  else if constexpr (Op == BinaryOp::Hypot)
    return vecmath::HypotNeedsScalar(d, a, b);
  else if constexpr (Op == BinaryOp::Pow)
    return hn::Not(hn::And(hn::Gt(a, hn::Zero(d)), hn::And(hn::IsFinite(a), hn::IsFinite(b))));
  else if constexpr (Op == BinaryOp::Xlogy)
    return hn::Not(hn::And(hn::Gt(b, hn::Zero(d)), hn::IsFinite(b)));
  else
    return hn::FirstN(d, 0);
}

/// o[i] = op(a[i * sa], b[i * sb]) for i < n, sa and sb each 0 (a broadcast scalar) or 1.
template <BinaryOp Op, class T>
void vec_binary_row(const T* a, int64_t sa, const T* b, int64_t sb, T* o, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto va0 = hn::Set(d, *a), vb0 = hn::Set(d, *b);
  auto scalar = [&](int64_t i, int64_t k) {
    for (int64_t l = i; l < i + k; ++l) o[l] = math::binary_op<Op>(a[l * sa], b[l * sb]);
  };
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto va = sa ? hn::LoadU(d, a + i) : va0, vb = sb ? hn::LoadU(d, b + i) : vb0;
    if (!hn::AllFalse(d, vec_binary_needs_scalar<Op>(d, va, vb))) {
      scalar(i, N);
      continue;
    }
    hn::StoreU(vec_binary_op<Op>(d, va, vb), d, o + i);
  }
  if (i == n) return;
  // The tail through the same vector code, in buffers padded with ones (valid for every op).
  const int64_t k = n - i;
  HWY_ALIGN T ta[hn::MaxLanes(d)], tb[hn::MaxLanes(d)];
  for (int64_t l = 0; l < N; ++l) {
    ta[l] = l < k ? a[(i + l) * sa] : T(1);
    tb[l] = l < k ? b[(i + l) * sb] : T(1);
  }
  const auto va = hn::Load(d, ta), vb = hn::Load(d, tb);
  if (!hn::AllFalse(d, vec_binary_needs_scalar<Op>(d, va, vb))) return scalar(i, k);
  hn::Store(vec_binary_op<Op>(d, va, vb), d, ta);
  for (int64_t l = 0; l < k; ++l) o[i + l] = ta[l];
}

template <BinaryOp Op>
void run_op(const TensorIterator& iter, const Scalar& alpha, const char* name) {
  visit_dtype<info(Op).dtypes>(iter.dtype(1), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OT = opmath_t<T>;
    using R = decltype(scalar_fn<Op>(OT{}, OT{}));
    using out_t = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
    auto run = [&](auto f) {
      iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
        if constexpr (kVecBinary<Op, T> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
          constexpr int64_t w = sizeof(T);
          if (s[0] == w && (s[1] == w || s[1] == 0) && (s[2] == w || s[2] == 0)) {
            for (int64_t j = 0; j < n1; ++j)
              vec_binary_row<Op>(reinterpret_cast<const T*>(d[1] + j * s[4]), s[1] / w,
                                 reinterpret_cast<const T*>(d[2] + j * s[5]), s[2] / w,
                                 reinterpret_cast<T*>(d[0] + j * s[3]), n0);
            return;
          }
        }
        loop_binary<out_t, T, T>(d, s, n0, n1, f);
      });
    };
    if constexpr (Op == BinaryOp::Add || Op == BinaryOp::Sub) {
      if constexpr (!std::is_same_v<T, bool>) {
        OT al = alpha.to<OT>();
        if (!(al == OT(1))) {
          run([al](OT a, OT b) { return math::add_alpha<Op>(a, b, al); });
          return;
        }
      }
    }
    run([](OT a, OT b) { return scalar_fn<Op>(a, b); });
  });
}

using RunFn = void (*)(const TensorIterator&, const Scalar&, const char*);
#define TENSOR_BINARY_ENTRY(Enum, name, dtypes, result, api) &run_op<BinaryOp::Enum>,
const RunFn kBinaryTable[] = {TENSOR_BINARY_OPS(TENSOR_BINARY_ENTRY)};
#undef TENSOR_BINARY_ENTRY

}  // namespace

void BinaryKernelImpl(const TensorIterator& iter, int op, const Scalar& alpha, const char* name) {
  kBinaryTable[op](iter, alpha, name);
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(BinaryKernelImpl);
void binary_kernel(const TensorIterator& iter, BinaryOp op, const Scalar& alpha, const char* name) {
  HWY_DYNAMIC_DISPATCH(BinaryKernelImpl)(iter, static_cast<int>(op), alpha, name);
}

namespace {
template <BinaryOp Op>
void binary_entry(const TensorIterator& iter, const Scalar& alpha) {
  HWY_DYNAMIC_DISPATCH(BinaryKernelImpl)(iter, static_cast<int>(Op), alpha, info(Op).name);
}
}  // namespace

#define TENSOR_BINARY_ENTRY(Enum, name, dtypes, result, api) &binary_entry<BinaryOp::Enum>,
const BinaryKernel kBinaryKernels[oplist::kNumBinary] = {TENSOR_BINARY_OPS(TENSOR_BINARY_ENTRY)};
#undef TENSOR_BINARY_ENTRY
}  // namespace tensor::cpu
#endif
