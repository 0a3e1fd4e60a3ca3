// CPU binary elementwise kernels, compiled once per Highway target (Note [Per-ISA loops]).
#include <cmath>

#include "kernels/cpu/Elementwise.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/BinaryKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/Loops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace {

template <class T>
HWY_INLINE bool is_nan_v(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// Python-style modulo: the result takes the sign of the divisor.
template <class T>
HWY_INLINE T py_mod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    T r = static_cast<T>(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  }
}

// Integer power with powi's rules for negative exponents (1 stays 1, -1 alternates, else 0).
template <class T>
HWY_INLINE T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  T result = 1;
  while (exp > 0) {
    if (exp & 1) result = static_cast<T>(result * base);
    base = static_cast<T>(base * base);
    exp = static_cast<T>(exp >> 1);
  }
  return result;
}

template <BinaryOp Op, class T>
HWY_INLINE auto scalar_fn(T a, T b) {
  if constexpr (Op == BinaryOp::Add) return static_cast<T>(a + b);
  else if constexpr (Op == BinaryOp::Sub) return static_cast<T>(a - b);
  else if constexpr (Op == BinaryOp::Mul) {
    if constexpr (std::is_same_v<T, bool>) return a && b; else return static_cast<T>(a * b);
  } else if constexpr (Op == BinaryOp::Div) return static_cast<T>(a / b);
  else if constexpr (Op == BinaryOp::DivTrunc) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(a / b); else return std::trunc(a / b);
  } else if constexpr (Op == BinaryOp::DivFloor) {
    if constexpr (std::is_integral_v<T>) {
      T q = static_cast<T>(a / b);
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
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
    if constexpr (std::is_integral_v<T>) return static_cast<T>(a % b); else return std::fmod(a, b);
  } else if constexpr (Op == BinaryOp::Pow) {
    if constexpr (std::is_integral_v<T>) return int_pow(a, b); else return std::pow(a, b);
  } else if constexpr (Op == BinaryOp::Maximum) return is_nan_v(a) ? a : is_nan_v(b) ? b : (a > b ? a : b);
  else if constexpr (Op == BinaryOp::Minimum) return is_nan_v(a) ? a : is_nan_v(b) ? b : (a < b ? a : b);
  else if constexpr (Op == BinaryOp::Atan2) return std::atan2(a, b);
  else if constexpr (Op == BinaryOp::Hypot) return std::hypot(a, b);
  else if constexpr (Op == BinaryOp::Logaddexp) {
    // log(e^a + e^b) = max + log1p(e^-|a-b|); equal infinities would give inf - inf = NaN.
    if (std::isinf(a) && a == b) return a;
    T m = std::max(a, b);
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

template <BinaryOp Op>
void run_op(const TensorIterator& iter, const Scalar& alpha, const char* name) {
  visit_dtype<info(Op).dtypes>(iter.dtype(1), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OT = opmath_t<T>;
    using R = decltype(scalar_fn<Op>(OT{}, OT{}));
    using out_t = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
    auto run = [&](auto f) {
      iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) { loop_binary<out_t, T, T>(d, s, n0, n1, f); });
    };
    if constexpr (Op == BinaryOp::Add || Op == BinaryOp::Sub) {
      if constexpr (!std::is_same_v<T, bool>) {
        OT al = alpha.to<OT>();
        if (!(al == OT(1))) {
          if constexpr (Op == BinaryOp::Add) run([al](OT a, OT b) { return static_cast<OT>(a + al * b); });
          else run([al](OT a, OT b) { return static_cast<OT>(a - al * b); });
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
