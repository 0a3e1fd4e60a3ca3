// Internal: run a generic lambda with the C++ type of a runtime dtype.
#pragma once

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

/// Converts between any two element types (complex -> real keeps the real part).
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) return v;
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

}  // namespace tensor
