// The per-element formula of every unary op of the op list, for the CPU and CUDA kernels
// (Note [Shared kernel math]). Real types run on both; the complex branches are host-only.
#pragma once

#include <cmath>
#include <complex>
#include <type_traits>

#include "kernels/OpList.h"
#include "kernels/math/Macros.h"

namespace tensor::math {

using cpu::UnaryOp;

template <class T> struct IsComplex : std::false_type {};
template <class T> struct IsComplex<std::complex<T>> : std::true_type {};
template <class T> constexpr bool is_complex_v = IsComplex<T>::value;

template <class T>
TENSOR_HD_INLINE T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// Note [Integer overflow wraps]
// Integer add, sub, mul, neg, abs and pow wrap modulo 2^bits, as libtorch's kernels do in
// practice, NumPy does, and the SIMD kernels do by construction. In C++ a signed overflow is
// undefined (UBSan's signed-integer-overflow check stops the suite on INT_MIN + INT_MIN), so the
// scalar formulas compute in the unsigned type of at least int's width (unsigned short * unsigned
// short promotes to a signed int, and can overflow it too) and convert back: defined since C++20
// and in every compiler we build with. Floating and bool types use the plain operators.
template <class T>
constexpr bool wraps_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
using wrap_unsigned_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <class T>
TENSOR_HD_INLINE T wrapping_add(T a, T b) {
  if constexpr (wraps_v<T>) {
    using U = wrap_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}
template <class T>
TENSOR_HD_INLINE T wrapping_sub(T a, T b) {
  if constexpr (wraps_v<T>) {
    using U = wrap_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<T>(a - b);
  }
}
template <class T>
TENSOR_HD_INLINE T wrapping_mul(T a, T b) {
  if constexpr (wraps_v<T>) {
    using U = wrap_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return static_cast<T>(a * b);
  }
}
/// -a; -MIN == MIN for signed integers (Note [Integer overflow wraps]).
template <class T>
TENSOR_HD_INLINE T wrapping_neg(T a) {
  if constexpr (wraps_v<T>) return wrapping_sub(T(0), a);
  else return static_cast<T>(-a);
}

/// op(x) on an opmath value (float for the half types). Returns bool for the predicates, the
/// real type for abs of a complex, and T otherwise.
template <UnaryOp Op, class T>
TENSOR_HD_INLINE auto unary_op(T x) {
  if constexpr (Op == UnaryOp::Neg) return wrapping_neg(x);
  else if constexpr (Op == UnaryOp::Abs) {
    if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (is_complex_v<T>) return std::abs(x);
    else return x < 0 ? wrapping_neg(x) : x;
  } else if constexpr (Op == UnaryOp::Exp) return std::exp(x);
  else if constexpr (Op == UnaryOp::Exp2) {
    if constexpr (is_complex_v<T>) return std::pow(T(2), x);
    else return std::exp2(x);
  } else if constexpr (Op == UnaryOp::Log) return std::log(x);
  else if constexpr (Op == UnaryOp::Log2) {
    if constexpr (is_complex_v<T>) return std::log(x) / std::log(typename T::value_type(2));
    else return std::log2(x);
  } else if constexpr (Op == UnaryOp::Log10) return std::log10(x);
  else if constexpr (Op == UnaryOp::Log1p) {
    if constexpr (is_complex_v<T>) return std::log(T(1) + x);
    else return std::log1p(x);
  } else if constexpr (Op == UnaryOp::Expm1) {
    if constexpr (is_complex_v<T>) return std::exp(x) - T(1);
    else return std::expm1(x);
  } else if constexpr (Op == UnaryOp::Sqrt) return std::sqrt(x);
  else if constexpr (Op == UnaryOp::Rsqrt) return T(1) / std::sqrt(x);
  else if constexpr (Op == UnaryOp::Sin) return std::sin(x);
  else if constexpr (Op == UnaryOp::Cos) return std::cos(x);
  else if constexpr (Op == UnaryOp::Tan) return std::tan(x);
  else if constexpr (Op == UnaryOp::Asin) return std::asin(x);
  else if constexpr (Op == UnaryOp::Acos) return std::acos(x);
  else if constexpr (Op == UnaryOp::Atan) return std::atan(x);
  else if constexpr (Op == UnaryOp::Sinh) return std::sinh(x);
  else if constexpr (Op == UnaryOp::Cosh) return std::cosh(x);
  else if constexpr (Op == UnaryOp::Tanh) return std::tanh(x);
  else if constexpr (Op == UnaryOp::Sigmoid) return sigmoid(x);
  else if constexpr (Op == UnaryOp::Relu) {
    if constexpr (std::is_floating_point_v<T>) return std::isnan(x) || x > T(0) ? x : T(0);  // NaN propagates
    else return static_cast<T>(x > T(0) ? x : T(0));
  } else if constexpr (Op == UnaryOp::Gelu) {
    // erfc, not 1 + erf, which cancels for x < 0 (Note [Vector gelu]); in double for float, as
    // erfc(a) magnifies the rounding of a = x / sqrt 2 by 2 a^2 (32x at x = -5.7).
    using W = std::conditional_t<std::is_same_v<T, float>, double, T>;
    return static_cast<T>(W(0.5) * W(x) * std::erfc(W(x) * W(-0.70710678118654752440)));
  } else if constexpr (Op == UnaryOp::GeluTanh) {
    // PyTorch's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
    return static_cast<T>(T(0.5) * x * (T(1) + std::tanh(inner)));
  } else if constexpr (Op == UnaryOp::Silu) return static_cast<T>(x * sigmoid(x));
  else if constexpr (Op == UnaryOp::Erf) return std::erf(x);
  else if constexpr (Op == UnaryOp::Floor) {
    if constexpr (std::is_integral_v<T>) return x; else return std::floor(x);
  } else if constexpr (Op == UnaryOp::Ceil) {
    if constexpr (std::is_integral_v<T>) return x; else return std::ceil(x);
  } else if constexpr (Op == UnaryOp::Round) {
    if constexpr (std::is_integral_v<T>) return x; else return std::nearbyint(x);
  } else if constexpr (Op == UnaryOp::Trunc) {
    if constexpr (std::is_integral_v<T>) return x; else return std::trunc(x);
  } else if constexpr (Op == UnaryOp::Sign) {
    if constexpr (is_complex_v<T>) return x == T(0) ? T(0) : x / std::abs(x);
    else if constexpr (std::is_same_v<T, bool>) return x;
    else if constexpr (std::is_unsigned_v<T>) return static_cast<T>(x > T(0));
    // NaN gives 0, as PyTorch's (0 < x) - (x < 0).
    else return static_cast<T>((T(0) < x) - (x < T(0)));
  } else if constexpr (Op == UnaryOp::Reciprocal) return static_cast<T>(T(1) / x);
  else if constexpr (Op == UnaryOp::Square) return wrapping_mul(x, x);
  else if constexpr (Op == UnaryOp::LogicalNot) return !(x != T(0));
  else if constexpr (Op == UnaryOp::BitNot) {
    if constexpr (std::is_same_v<T, bool>) return !x; else return static_cast<T>(~x);
  } else if constexpr (Op == UnaryOp::IsNan) {
    if constexpr (is_complex_v<T>) return std::isnan(x.real()) || std::isnan(x.imag());
    else if constexpr (std::is_floating_point_v<T>) return static_cast<bool>(std::isnan(x));
    else return false;
  } else if constexpr (Op == UnaryOp::Conj) {
    if constexpr (is_complex_v<T>) return std::conj(x); else return x;
  }
}

}  // namespace tensor::math
