// Internal: run a generic lambda with the C++ type of a runtime dtype.
#pragma once

#include <cmath>
#include <limits>

#include "src/core/Check.h"
#include "tensor/core/ScalarType.h"

namespace tensor {

template <class T> struct TypeTag { using type = T; };

/// Which dtype groups a kernel supports; a dtype outside them raises a clear Error.
enum DtypeGroups : unsigned {
  kGroupBool = 1,
  kGroupInt = 2,
  kGroupFloat = 4,    // float32, float64
  kGroupHalf = 8,     // float16, bfloat16
  kGroupComplex = 16,
  kGroupAll = 31,
  kGroupReal = kGroupBool | kGroupInt | kGroupFloat | kGroupHalf,
  kGroupFloating = kGroupFloat | kGroupHalf,
};

/// Calls f(TypeTag<T>{}) for the C++ type T of dtype t.
template <unsigned Groups = kGroupAll, class F>
inline void visit_dtype(ScalarType t, const char* op, F&& f) {
  switch (t) {
#define TENSOR_VISIT_CASE(E, T, G) \
  case ScalarType::E:              \
    if constexpr ((Groups & (G)) != 0) { f(TypeTag<T>{}); return; } \
    break;
    TENSOR_VISIT_CASE(Bool, bool, kGroupBool)
    TENSOR_VISIT_CASE(UInt8, uint8_t, kGroupInt)
    TENSOR_VISIT_CASE(Int8, int8_t, kGroupInt)
    TENSOR_VISIT_CASE(Int16, int16_t, kGroupInt)
    TENSOR_VISIT_CASE(Int32, int32_t, kGroupInt)
    TENSOR_VISIT_CASE(Int64, int64_t, kGroupInt)
    TENSOR_VISIT_CASE(Half, Half, kGroupHalf)
    TENSOR_VISIT_CASE(BFloat16, BFloat16, kGroupHalf)
    TENSOR_VISIT_CASE(Float, float, kGroupFloat)
    TENSOR_VISIT_CASE(Double, double, kGroupFloat)
    TENSOR_VISIT_CASE(ComplexFloat, complex64, kGroupComplex)
    TENSOR_VISIT_CASE(ComplexDouble, complex128, kGroupComplex)
#undef TENSOR_VISIT_CASE
    default: break;
  }
  TENSOR_ERROR("{}: not implemented for dtype {}", op, t);
}

/// The type kernels compute in: float for the half types (Note [Half types compute in float]).
template <class T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <class T> using opmath_t = typename OpMath<T>::type;

template <class T> struct IsComplexT : std::false_type {};
template <class T> struct IsComplexT<std::complex<T>> : std::true_type {};
template <class T> constexpr bool is_complex_v = IsComplexT<T>::value;

/// Converts between any two element types (complex -> real keeps the real part, complex ->
/// bool is true when either part is nonzero, as PyTorch).
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) return v;
  else if constexpr (std::is_same_v<To, bool> && is_complex_v<From>) return v.real() != 0 || v.imag() != 0;
  else if constexpr (is_complex_v<To>) {
    if constexpr (is_complex_v<From>) return To(static_cast<typename To::value_type>(v.real()), static_cast<typename To::value_type>(v.imag()));
    else return To(static_cast<typename To::value_type>(static_cast<opmath_t<From>>(v)), 0);
  } else if constexpr (is_complex_v<From>) {
    return convert<To>(v.real());
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != 0;
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

/// Scalar -> T for writing a user value into a tensor (fill_, masked_fill, clamp bounds): throws
/// naming `op` when the value does not fit, as PyTorch does. Infinities and NaN may go into
/// floating types; negative integers may wrap into unsigned ones.
template <class T>
inline T checked_scalar(const Scalar& s, const char* op) {
  if constexpr (std::is_same_v<T, bool>) {
    return s.to_bool();
  } else if constexpr (is_complex_v<T>) {
    return T(s.to_complex());
  } else if constexpr (std::is_integral_v<T>) {
    TENSOR_CHECK(!s.is_complex(), "{}: value of complex type cannot be converted to an integer type without losing "
                 "the imaginary part", op);
    if (s.is_floating_point()) {
      double d = s.to_double();
      const double lo = static_cast<double>(std::numeric_limits<T>::lowest()) - 1;
      const double hi = static_cast<double>(std::numeric_limits<T>::max()) + 1;
      TENSOR_CHECK(std::isfinite(d) && d > lo && d < hi, "{}: value {} cannot be converted to type {} without overflow",
                   op, d, to_string(CppTypeToScalarType<T>::value));
      return static_cast<T>(d);
    }
    int64_t i = s.to_long();
    bool fits = i <= static_cast<int64_t>(std::numeric_limits<T>::max()) &&
                (std::is_unsigned_v<T> ? i >= -static_cast<int64_t>(std::numeric_limits<T>::max()) - 1
                                       : i >= static_cast<int64_t>(std::numeric_limits<T>::lowest()));
    TENSOR_CHECK(fits, "{}: value {} cannot be converted to type {} without overflow", op, i,
                 to_string(CppTypeToScalarType<T>::value));
    return static_cast<T>(i);
  } else {
    double d = s.to_double();
    using O = opmath_t<T>;
    double mx = std::is_same_v<T, Half> ? 65504.0 : std::is_same_v<T, BFloat16> ? 3.3895313892515355e38
                                                                                 : static_cast<double>(std::numeric_limits<O>::max());
    TENSOR_CHECK(!std::isfinite(d) || (d <= mx && d >= -mx), "{}: value {} cannot be converted to type {} without overflow",
                 op, d, to_string(CppTypeToScalarType<T>::value));
    return T(static_cast<O>(d));
  }
}

}  // namespace tensor
