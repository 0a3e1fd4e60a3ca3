// The per-element formula of every binary op of the op list, for the CPU and CUDA kernels
// (Note [Shared kernel math]). Real types run on both; the complex branches are host-only.
#pragma once

#include <cmath>
#include <type_traits>

#include "kernels/OpList.h"
#include "kernels/math/Macros.h"
#include "kernels/math/Unary.h"  // is_complex_v

namespace tensor::math {

using cpu::BinaryOp;

template <class T>
TENSOR_HD_INLINE bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

/// v < 0, without a comparison that is always false for unsigned types (a warning in nvcc).
template <class T>
TENSOR_HD_INLINE bool is_negative(T v) {
  if constexpr (std::is_unsigned_v<T>) return false;
  else return v < T(0);
}

// Note [Integer division by -1]
// MIN / -1 overflows: x86's idiv traps (SIGFPE kills the process) and C++ leaves it undefined;
// MIN % -1 traps too. The front end rejects a 0 divisor before any kernel runs; -1 is answered
// here, before the hardware divides, so the CPU and CUDA kernels (which share these functors)
// give one defined answer: the quotient wraps (-MIN == MIN, as libtorch on CUDA and NumPy give)
// and every remainder by -1 is 0 (Python's x % -1 == 0).
template <class T>
TENSOR_HD_INLINE bool is_minus_one(T b) {
  if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) return b == T(-1);
  else return false;
}
/// Python-style modulo: the result takes the sign of the divisor.
template <class T>
TENSOR_HD_INLINE T py_mod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    if (is_minus_one(b)) return T(0);  // Note [Integer division by -1]
    T r = static_cast<T>(a % b);
    if (r != 0 && (is_negative(r) != is_negative(b))) r = static_cast<T>(r + b);
    return r;
  }
}

/// Integer power with powi's rules for negative exponents (1 stays 1, -1 alternates, else 0).
template <class T>
TENSOR_HD_INLINE T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  T result = 1;
  while (exp > 0) {
    if (exp & 1) result = wrapping_mul(result, base);
    base = wrapping_mul(base, base);
    exp = static_cast<T>(exp >> 1);
  }
  return result;
}

/// op(a, b) on opmath values (float for the half types). Comparisons and logical ops return
/// bool; the rest return T. Add and Sub here have alpha 1 (see add_alpha).
template <BinaryOp Op, class T>
TENSOR_HD_INLINE auto binary_op(T a, T b) {
  if constexpr (Op == BinaryOp::Add) return wrapping_add(a, b);  // Note [Integer overflow wraps]
  else if constexpr (Op == BinaryOp::Sub) return wrapping_sub(a, b);
  else if constexpr (Op == BinaryOp::Mul) {
    if constexpr (std::is_same_v<T, bool>) return a && b; else return wrapping_mul(a, b);
  } else if constexpr (Op == BinaryOp::Div) return static_cast<T>(a / b);
  else if constexpr (Op == BinaryOp::DivTrunc) {
    if constexpr (std::is_integral_v<T>) {
      if (is_minus_one(b)) return wrapping_neg(a);  // Note [Integer division by -1]
      return static_cast<T>(a / b);
    } else {
      return std::trunc(a / b);
    }
  } else if constexpr (Op == BinaryOp::DivFloor) {
    if constexpr (std::is_integral_v<T>) {
      if (is_minus_one(b)) return wrapping_neg(a);  // exact, so floor == trunc
      T q = static_cast<T>(a / b);
      if ((a % b != 0) && (is_negative(a) != is_negative(b))) --q;
      return q;
    } else {
      // PyTorch's div_floor_floating: exact for cases like 1.0 // 0.1 == 9 (Python's answer).
      if (b == 0) return a / b;
      T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
      if (div != 0) {
        T fl = std::floor(div);
        if (div - fl > T(0.5)) fl += T(1);
        return fl;
      }
      return std::copysign(T(0), a / b);
    }
  } else if constexpr (Op == BinaryOp::Remainder) return py_mod(a, b);
  else if constexpr (Op == BinaryOp::Fmod) {
    if constexpr (std::is_integral_v<T>) return is_minus_one(b) ? T(0) : static_cast<T>(a % b);
    else return std::fmod(a, b);
  } else if constexpr (Op == BinaryOp::Pow) {
    if constexpr (std::is_integral_v<T>) return int_pow(a, b); else return std::pow(a, b);
  } else if constexpr (Op == BinaryOp::Maximum) return is_nan(a) ? a : is_nan(b) ? b : (a > b ? a : b);
  else if constexpr (Op == BinaryOp::Minimum) return is_nan(a) ? a : is_nan(b) ? b : (a < b ? a : b);
  else if constexpr (Op == BinaryOp::Atan2) return std::atan2(a, b);
  else if constexpr (Op == BinaryOp::Hypot) return std::hypot(a, b);
  else if constexpr (Op == BinaryOp::Logaddexp) {
    // log(e^a + e^b) = max + log1p(e^-|a-b|); equal infinities would give inf - inf = NaN.
    if (std::isinf(a) && a == b) return a;
    T m = a < b ? b : a;
    return m + std::log1p(std::exp(-std::fabs(a - b)));
  } else if constexpr (Op == BinaryOp::Xlogy) {
    // 0 * log(y) is 0 for every y but NaN, as PyTorch (and SciPy) define it.
    if (std::isnan(b)) return b;
    return a == T(0) ? T(0) : a * std::log(b);
  } else if constexpr (Op == BinaryOp::Copysign) return std::copysign(a, b);
  else if constexpr (Op == BinaryOp::Eq) return a == b;
  else if constexpr (Op == BinaryOp::Ne) return a != b;
  else if constexpr (Op == BinaryOp::Lt) return a < b;
  else if constexpr (Op == BinaryOp::Le) return a <= b;
  else if constexpr (Op == BinaryOp::Gt) return a > b;
  else if constexpr (Op == BinaryOp::Ge) return a >= b;
  else if constexpr (Op == BinaryOp::LogicalAnd) return (a != T(0)) && (b != T(0));
  else if constexpr (Op == BinaryOp::LogicalOr) return (a != T(0)) || (b != T(0));
  else if constexpr (Op == BinaryOp::LogicalXor) return (a != T(0)) != (b != T(0));
  else if constexpr (Op == BinaryOp::BitAnd) { if constexpr (std::is_same_v<T, bool>) return a && b; else return static_cast<T>(a & b); }
  else if constexpr (Op == BinaryOp::BitOr) { if constexpr (std::is_same_v<T, bool>) return a || b; else return static_cast<T>(a | b); }
  else if constexpr (Op == BinaryOp::BitXor) { if constexpr (std::is_same_v<T, bool>) return a != b; else return static_cast<T>(a ^ b); }
}

/// add and sub with alpha != 1: a +/- alpha * b.
template <BinaryOp Op, class T>
TENSOR_HD_INLINE T add_alpha(T a, T b, T alpha) {
  if constexpr (Op == BinaryOp::Add) return wrapping_add(a, wrapping_mul(alpha, b));
  else return wrapping_sub(a, wrapping_mul(alpha, b));
}

}  // namespace tensor::math
