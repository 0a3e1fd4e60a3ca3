// CPU unary elementwise kernels, compiled once per Highway target (Note [Per-ISA loops]).
#include <cmath>
#include <limits>

#include "kernels/cpu/Elementwise.h"
#include "kernels/math/Unary.h"
#include "src/cpu/OneDNNEltwise.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/UnaryKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "kernels/cpu/Loops-inl.h"
#include "kernels/cpu/VecMath-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace {

// The scalar formula of each op is kernels/math/Unary.h's unary_op, shared with the CUDA
// kernels; the Highway vector paths below are tested against it (tests/test_kernel_bodies.cpp).
template <UnaryOp Op, class T>
HWY_INLINE auto scalar_fn(T x) {
  return math::unary_op<Op>(x);
}

// Note [Vector math at the edges]
// Highway's math functions are accurate only inside documented input ranges. IEEE special
// values and out-of-range inputs are patched after the vector call so results match the C
// library (and PyTorch): exp overflows to inf and underflows to 0, log of 0 is -inf, of a
// negative is NaN, of inf is inf, and NaN stays NaN. Sin and cos reduce their argument
// accurately only for moderate magnitudes, so vectors holding a larger |x| take the scalar path.
template <class D, class V>
HWY_INLINE V exp_edges(D d, V v, V r) {
  using T = hn::TFromD<D>;
  const T hi = sizeof(T) == 4 ? T(88.72283) : T(709.782712893384);
  const T lo = sizeof(T) == 4 ? T(-103.972) : T(-745.1332191019411);
  r = hn::IfThenElse(hn::Gt(v, hn::Set(d, hi)), hn::Inf(d), r);
  r = hn::IfThenElse(hn::Lt(v, hn::Set(d, lo)), hn::Zero(d), r);
  return hn::IfThenElse(hn::IsNaN(v), v, r);
}
template <class D, class V>
HWY_INLINE V safe_exp(D d, V v) { return exp_edges(d, v, hn::Exp(d, v)); }
template <class D, class V>
HWY_INLINE V safe_expm1(D d, V v) {
  V r = exp_edges(d, v, hn::Expm1(d, v));
  using T = hn::TFromD<D>;
  return hn::IfThenElse(hn::Lt(v, hn::Set(d, T(-100))), hn::Set(d, T(-1)), r);
}
// For log-like f with a pole at `pole` (0 for log, -1 for log1p).
template <class D, class V>
HWY_INLINE V log_edges(D d, V v, V r, hn::TFromD<D> pole) {
  const V p = hn::Set(d, pole);
  r = hn::IfThenElse(hn::Eq(v, p), hn::Neg(hn::Inf(d)), r);
  r = hn::IfThenElse(hn::Lt(v, p), hn::NaN(d), r);
  r = hn::IfThenElse(hn::Eq(v, hn::Inf(d)), hn::Inf(d), r);
  return hn::IfThenElse(hn::IsNaN(v), v, r);
}

// Note [Sigmoid and silu edges]
// sigmoid and silu are 1 / (1 + exp(-x)) and x / (1 + exp(-x)) with an exp called directly
// (for float, since session 15, Note [Vector exp for sigmoid]: sweep:sigmoid_4K_out 1.02-1.05x ->
// 0.81-0.82x torch 2.15, silu_4K_out 0.75x; Highway's Exp for double): safe_exp's three compare-and-blend patches were six of the sigmoid loop's ~43
// instructions (sweep:sigmoid_4K_out 1.12x torch 2.15). Exp itself returns 0 below its lower
// bound (-104, -1000 for double), also for NaN, and is exact up to where its result overflows
// to inf, but past about twice that (its exponent split) it is garbage. So both clamp -x to
// kExpInfAt, where exp is already inf: sigmoid is then 1 / (1 + inf) = 0 and silu x / inf = -0
// below -88.72, and silu at -inf is NaN, all as the scalar formulas give; sigmoid returns NaN
// lanes as they are (silu's numerator carries them). Both keep their tails: sigmoid's
// subnormal results for x in [-88.7, -87] and silu's normal ones down to -88.7 (-5e-37 at -88;
// silu flushed everything below -80 to 0 before). Tested in tests/test_eltwise_onednn.cpp.
template <class T>
constexpr T kExpInfAt = sizeof(T) == 4 ? T(89) : T(710);

/// exp(t) with t clamped to kExpInfAt: float takes ExpClamped (Note [Vector exp for sigmoid]),
/// with t also raised to -88 (exp(-88) = 6e-39 leaves 1 + e at 1); double Highway's Exp.
template <class D, class V>
HWY_INLINE V sigmoid_exp(D d, V t) {
  using T = hn::TFromD<D>;
  const V c = hn::Min(t, hn::Set(d, kExpInfAt<T>));
  if constexpr (std::is_same_v<T, float>) return vecmath::ExpClamped(d, hn::Max(c, hn::Set(d, -88.0f)));
  else return hn::Exp(d, c);
}

/// vec_map for sin, cos and tan, whose Highway reduction is accurate only for |x| <= bound: a
/// vector holding a larger |x| or a NaN takes the scalar formula. The check used to be a scalar
/// pass over the whole row before the vector one (a third of sin's time at 4K floats).
template <UnaryOp Op, class T, class VF>
HWY_INLINE void vec_map_small(const T* in, T* out, int64_t n, T bound, const VF& vf) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vb = hn::Set(d, bound);
  auto scalar = [&](int64_t i, int64_t k) {
    for (int64_t l = i; l < i + k; ++l) out[l] = scalar_fn<Op>(in[l]);
  };
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, in + i);
    if (!hn::AllTrue(d, hn::Le(hn::Abs(v), vb))) {  // also catches NaN
      scalar(i, N);
      continue;
    }
    hn::StoreU(vf(d, v), d, out + i);
  }
  if (i == n) return;
  HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
  for (int64_t k = 0; k < n - i; ++k) buf[k] = in[i + k];
  const auto v = hn::Load(d, buf);
  if (!hn::AllTrue(d, hn::Le(hn::Abs(v), vb))) return scalar(i, n - i);
  hn::Store(vf(d, v), d, buf);
  for (int64_t k = 0; k < n - i; ++k) out[i + k] = buf[k];
}

// Explicit Highway vector code for float/double; returns false when the op has none.
template <UnaryOp Op, class T>
HWY_INLINE bool vec_unary(const T* in, T* out, int64_t n) {
  auto run = [&](auto vf) { vec_map(in, out, n, vf); return true; };
  using D = hn::ScalableTag<T>;
  if constexpr (Op == UnaryOp::Exp) return run([](D d, auto v) { return safe_exp(d, v); });
  else if constexpr (Op == UnaryOp::Log) return run([](D d, auto v) { return log_edges(d, v, hn::Log(d, v), T(0)); });
  else if constexpr (Op == UnaryOp::Log1p) return run([](D d, auto v) { return log_edges(d, v, hn::Log1p(d, v), T(-1)); });
  else if constexpr (Op == UnaryOp::Log2) return run([](D d, auto v) { return log_edges(d, v, hn::Log2(d, v), T(0)); });
  else if constexpr (Op == UnaryOp::Log10) return run([](D d, auto v) { return log_edges(d, v, hn::Log10(d, v), T(0)); });
  else if constexpr (Op == UnaryOp::Expm1) return run([](D d, auto v) { return safe_expm1(d, v); });
  else if constexpr (Op == UnaryOp::Sin) {
    vec_map_small<Op>(in, out, n, T(8192), [](D d, auto v) { return hn::Sin(d, v); });
    return true;
  } else if constexpr (Op == UnaryOp::Cos) {
    vec_map_small<Op>(in, out, n, T(8192), [](D d, auto v) { return hn::Cos(d, v); });
    return true;
  }
  else if constexpr (Op == UnaryOp::Tan) {
    // Highway's sin and cos are within 3 ulp relative even next to their zeros, so their
    // quotient stays within a few ulp next to tan's poles and zeros.
    vec_map_small<Op>(in, out, n, T(8192), [](D d, auto v) { return hn::Div(hn::Sin(d, v), hn::Cos(d, v)); });
    return true;
  } else if constexpr (Op == UnaryOp::Asin || Op == UnaryOp::Acos) {
    // Outside [-1, 1] (and for NaN) the result is NaN, as the C library's.
    return run([](D d, auto v) {
      auto r = Op == UnaryOp::Asin ? hn::Asin(d, v) : hn::Acos(d, v);
      return hn::IfThenElse(hn::Le(hn::Abs(v), hn::Set(d, T(1))), r, hn::NaN(d));
    });
  }
  // The float-only functions of kernels/cpu/VecMath-inl.h; float64 keeps the C library's.
  else if constexpr (Op == UnaryOp::Erf && std::is_same_v<T, float>) return run([](D d, auto v) { return vecmath::Erf(d, v); });
  else if constexpr (Op == UnaryOp::Gelu && std::is_same_v<T, float>) return run([](D d, auto v) { return vecmath::Gelu(d, v); });
  else if constexpr (Op == UnaryOp::Exp2 && std::is_same_v<T, float>) return run([](D d, auto v) { return vecmath::Exp2(d, v); });
  else if constexpr (Op == UnaryOp::Cosh && std::is_same_v<T, float>) return run([](D d, auto v) { return vecmath::Cosh(d, v); });
  else if constexpr (Op == UnaryOp::Sinh && std::is_same_v<T, float>) return run([](D d, auto v) { return vecmath::Sinh(d, v); });
  else if constexpr (Op == UnaryOp::Tanh)
    return run([](D d, auto v) { return hn::IfThenElse(hn::IsNaN(v), v, hn::Tanh(d, v)); });
  else if constexpr (Op == UnaryOp::Atan) return run([](D d, auto v) { return hn::Atan(d, v); });
  else if constexpr (Op == UnaryOp::Sigmoid)
    return run([](D d, auto v) {
      // Note [Sigmoid and silu edges]: -x clamped where exp is inf anyway; NaN patched after.
      auto one = hn::Set(d, T(1));
      auto e = sigmoid_exp(d, hn::Neg(v));
      return hn::IfThenElse(hn::IsNaN(v), v, hn::Div(one, hn::Add(one, e)));
    });
  else if constexpr (Op == UnaryOp::Silu)
    return run([](D d, auto v) {
      // Note [Sigmoid and silu edges]: -x clamped as sigmoid's; x / inf is -0 below -88.72 and
      // NaN at -inf, as the scalar x * sigmoid(x).
      auto one = hn::Set(d, T(1));
      return hn::Div(v, hn::Add(one, sigmoid_exp(d, hn::Neg(v))));
    });
  else if constexpr (Op == UnaryOp::Sqrt) return run([](D, auto v) { return hn::Sqrt(v); });
  else if constexpr (Op == UnaryOp::Rsqrt) return run([](D d, auto v) { return hn::Div(hn::Set(d, T(1)), hn::Sqrt(v)); });
  else if constexpr (Op == UnaryOp::Reciprocal) return run([](D d, auto v) { return hn::Div(hn::Set(d, T(1)), v); });
  else if constexpr (Op == UnaryOp::Relu)
    return run([](D d, auto v) { return hn::IfThenElse(hn::IsNaN(v), v, hn::Max(v, hn::Zero(d))); });
  else if constexpr (Op == UnaryOp::Floor) return run([](D, auto v) { return hn::Floor(v); });
  else if constexpr (Op == UnaryOp::Ceil) return run([](D, auto v) { return hn::Ceil(v); });
  else if constexpr (Op == UnaryOp::Round) return run([](D, auto v) { return hn::Round(v); });
  else if constexpr (Op == UnaryOp::Trunc) return run([](D, auto v) { return hn::Trunc(v); });
  else return false;
}

template <UnaryOp Op>
void run_op(const TensorIterator& iter, const char* name) {
  ScalarType in_t = iter.dtype(1), out_t = iter.dtype(0);
  visit_dtype<info(Op).dtypes>(in_t, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OT = opmath_t<T>;
    using R = decltype(scalar_fn<Op>(OT{}));
    auto f = [](OT x) { return scalar_fn<Op>(x); };
    if constexpr (std::is_same_v<R, bool>) {
      iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) { loop_unary<bool, T>(d, s, n0, n1, f); });
    } else if constexpr (is_complex_v<T> && !is_complex_v<R>) {  // abs of complex -> real
      using RT = typename T::value_type;
      iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) { loop_unary<RT, T>(d, s, n0, n1, f); });
    } else {
      TENSOR_INTERNAL_ASSERT(out_t == in_t);
      iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          if (n1 == 1 && s[0] == sizeof(T) && s[1] == sizeof(T) &&
              vec_unary<Op, T>(reinterpret_cast<const T*>(d[1]), reinterpret_cast<T*>(d[0]), n0))
            return;
        }
        loop_unary<T, T>(d, s, n0, n1, f);
      });
    }
  });
}

using RunFn = void (*)(const TensorIterator&, const char*);
#define TENSOR_UNARY_ENTRY(Enum, name, dtypes, result, api) &run_op<UnaryOp::Enum>,
const RunFn kUnaryTable[] = {TENSOR_UNARY_OPS(TENSOR_UNARY_ENTRY)};
#undef TENSOR_UNARY_ENTRY

}  // namespace

void UnaryKernelImpl(const TensorIterator& iter, int op, const char* name) { kUnaryTable[op](iter, name); }

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
static_assert(unsigned(oplist::B) == unsigned(kGroupBool) && unsigned(oplist::I) == unsigned(kGroupInt) &&
                  unsigned(oplist::F) == unsigned(kGroupFloating) && unsigned(oplist::C) == unsigned(kGroupComplex),
              "the op list's dtype columns must be DtypeGroups bits");

HWY_EXPORT(UnaryKernelImpl);
void unary_kernel(const TensorIterator& iter, UnaryOp op, const char* name) {
  HWY_DYNAMIC_DISPATCH(UnaryKernelImpl)(iter, static_cast<int>(op), name);
}

namespace {
// The CPU kernel of one op: oneDNN where it is faster (Note [oneDNN eltwise]), else the loops.
template <UnaryOp Op>
void unary_entry(const TensorIterator& iter) {
  if constexpr (Op == UnaryOp::GeluTanh || Op == UnaryOp::Tanh) {
    if (onednn_unary(iter, Op)) return;
  }
  HWY_DYNAMIC_DISPATCH(UnaryKernelImpl)(iter, static_cast<int>(Op), info(Op).name);
}
}  // namespace

#define TENSOR_UNARY_ENTRY(Enum, name, dtypes, result, api) &unary_entry<UnaryOp::Enum>,
const UnaryKernel kUnaryKernels[oplist::kNumUnary] = {TENSOR_UNARY_OPS(TENSOR_UNARY_ENTRY)};
#undef TENSOR_UNARY_ENTRY
}  // namespace tensor::cpu
#endif
