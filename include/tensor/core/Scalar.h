// A number of any dtype category, passed to ops as a "weak" type (Note [Type promotion]).
#pragma once

#include <complex>
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "tensor/core/ScalarType.h"

namespace tensor {

/// A bool, integer, floating or complex number. Integers are held as int64, floats as
/// double, complex as complex<double>.
class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Double, Complex };

  Scalar() : Scalar(int64_t(0)) {}
  Scalar(bool b) : kind_(Kind::Bool) { v_.i = b; }
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T i) : kind_(Kind::Int) { v_.i = static_cast<int64_t>(i); }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T d) : kind_(Kind::Double) { v_.d = static_cast<double>(d); }
  Scalar(Half h) : Scalar(static_cast<float>(h)) {}
  Scalar(BFloat16 h) : Scalar(static_cast<float>(h)) {}
  template <class T>
  Scalar(std::complex<T> c) : kind_(Kind::Complex) { v_.z[0] = c.real(); v_.z[1] = c.imag(); }

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral(bool include_bool = false) const { return kind_ == Kind::Int || (include_bool && is_bool()); }
  bool is_floating_point() const { return kind_ == Kind::Double; }
  bool is_complex() const { return kind_ == Kind::Complex; }

  /// The dtype this scalar has when it stands alone: bool, int64, float64 or complex128.
  ScalarType type() const {
    switch (kind_) {
      case Kind::Bool: return kBool;
      case Kind::Int: return kInt64;
      case Kind::Double: return kFloat64;
      default: return kComplex128;
    }
  }

  double to_double() const {
    return kind_ == Kind::Double ? v_.d : kind_ == Kind::Complex ? v_.z[0] : static_cast<double>(v_.i);
  }
  int64_t to_long() const {
    return kind_ == Kind::Double ? static_cast<int64_t>(v_.d)
           : kind_ == Kind::Complex ? static_cast<int64_t>(v_.z[0]) : v_.i;
  }
  bool to_bool() const {
    return kind_ == Kind::Double ? v_.d != 0 : kind_ == Kind::Complex ? (v_.z[0] != 0 || v_.z[1] != 0) : v_.i != 0;
  }
  std::complex<double> to_complex() const {
    return kind_ == Kind::Complex ? std::complex<double>(v_.z[0], v_.z[1]) : std::complex<double>(to_double(), 0);
  }
  /// Converts to T with C++ conversion rules (complex -> real keeps the real part).
  template <class T> T to() const;

  // libtorch's spellings of the conversions and kind tests (c10::Scalar), same rules as to<T>().
  /// The value as double (a complex scalar gives its real part).
  double toDouble() const { return to_double(); }
  /// The value as float.
  float toFloat() const { return to<float>(); }
  /// The value as int64 (floating values truncate toward zero).
  int64_t toLong() const { return to<int64_t>(); }
  /// The value as int32.
  int32_t toInt() const { return to<int32_t>(); }
  /// The value as int16.
  int16_t toShort() const { return to<int16_t>(); }
  /// The value as int8.
  int8_t toChar() const { return to<int8_t>(); }
  /// The value as uint8.
  uint8_t toByte() const { return to<uint8_t>(); }
  /// True for any nonzero value.
  bool toBool() const { return to_bool(); }
  /// The value as complex<double>.
  std::complex<double> toComplexDouble() const { return to_complex(); }
  /// The value as complex<float>.
  std::complex<float> toComplexFloat() const { return to<std::complex<float>>(); }
  /// True for a floating (not complex) scalar.
  bool isFloatingPoint() const { return is_floating_point(); }
  /// True for an integer scalar (and a bool one when include_bool).
  bool isIntegral(bool include_bool) const { return is_integral(include_bool); }
  /// True for a complex scalar.
  bool isComplex() const { return is_complex(); }
  /// True for a bool scalar.
  bool isBoolean() const { return is_bool(); }

  Scalar operator-() const {
    switch (kind_) {
      case Kind::Double: return Scalar(-v_.d);
      case Kind::Complex: return Scalar(-to_complex());
      default: return Scalar(-v_.i);
    }
  }

 private:
  Kind kind_;
  union {
    int64_t i;
    double d;
    double z[2];
  } v_;
};

template <class T>
inline T Scalar::to() const {
  if constexpr (std::is_same_v<T, bool>) return to_bool();
  else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
    return T(to_complex());
  else if constexpr (std::is_integral_v<T>) return kind_ == Kind::Int || kind_ == Kind::Bool ? static_cast<T>(v_.i) : static_cast<T>(to_double());
  else return static_cast<T>(to_double());
}

/// Prints the value as libtorch does: a float as a double (`2.5`), an integer (`3`), a bool as
/// `true`/`false`, a complex as `(re,im)`.
/// A template so that only a Scalar itself binds: Half, bool or int arguments keep their own
/// operator<< instead of becoming ambiguous through Scalar's converting constructors.
template <class S, std::enable_if_t<std::is_same_v<S, Scalar>, int> = 0>
std::ostream& operator<<(std::ostream& os, const S& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool: return os << (s.to_bool() ? "true" : "false");
    case Scalar::Kind::Int: return os << s.to_long();
    case Scalar::Kind::Double: return os << s.to_double();
    default: return os << s.to_complex();
  }
}

}  // namespace tensor
