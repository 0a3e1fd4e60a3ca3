// Element types (dtypes) and their properties.
#pragma once

#include <complex>
#include <cstdint>
#include <iosfwd>

#include "tensor/core/Half.h"
#include "tensor/export.h"

namespace tensor {

/// The element types. The order is part of the ABI (it indexes kernel tables): new types go
/// before Undefined, after the existing ones.
enum class ScalarType : int8_t {
  Bool = 0,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Half,
  BFloat16,
  Float,
  Double,
  ComplexFloat,
  ComplexDouble,
  // Quantized integers (Note [Quantized tensors], src/core/Quantizer.h): the bytes are int8,
  // uint8 or int32; the tensor's quantizer maps them to real values.
  QInt8,
  QUInt8,
  QInt32,
  Undefined,
  // libtorch's enumerator names for the integer types (c10::ScalarType::Byte, ..., Long), so that
  // `at::ScalarType::Long` and `case ScalarType::Byte:` port; same values as the names above.
  Byte = UInt8,
  Char = Int8,
  Short = Int16,
  Int = Int32,
  Long = Int64,
};
constexpr int kNumScalarTypes = 15;

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kUInt8 = ScalarType::UInt8;
constexpr ScalarType kInt8 = ScalarType::Int8;
constexpr ScalarType kInt16 = ScalarType::Int16;
constexpr ScalarType kInt32 = ScalarType::Int32;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kFloat16 = ScalarType::Half;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kFloat64 = ScalarType::Double;
constexpr ScalarType kComplex64 = ScalarType::ComplexFloat;
constexpr ScalarType kComplex128 = ScalarType::ComplexDouble;
constexpr ScalarType kQInt8 = ScalarType::QInt8;
constexpr ScalarType kQUInt8 = ScalarType::QUInt8;
constexpr ScalarType kQInt32 = ScalarType::QInt32;
constexpr ScalarType kFloat = kFloat32;
constexpr ScalarType kDouble = kFloat64;
constexpr ScalarType kHalf = kFloat16;
constexpr ScalarType kLong = kInt64;
constexpr ScalarType kInt = kInt32;
constexpr ScalarType kShort = kInt16;
constexpr ScalarType kByte = kUInt8;
constexpr ScalarType kChar = kInt8;
constexpr ScalarType kComplexFloat = kComplex64;
constexpr ScalarType kComplexDouble = kComplex128;
// The short spellings libtorch programs also use (kF32 for float32, kI64 for int64, ...).
constexpr ScalarType kF16 = kFloat16;
constexpr ScalarType kBF16 = kBFloat16;
constexpr ScalarType kF32 = kFloat32;
constexpr ScalarType kF64 = kFloat64;
constexpr ScalarType kU8 = kUInt8;
constexpr ScalarType kI8 = kInt8;
constexpr ScalarType kI16 = kInt16;
constexpr ScalarType kI32 = kInt32;
constexpr ScalarType kI64 = kInt64;

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

/// Bytes per element.
constexpr int64_t element_size(ScalarType t) {
  constexpr int8_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16, 1, 1, 4, 0};
  return sizes[static_cast<int>(t)];
}
/// True for bool and the integer types.
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return (t >= ScalarType::UInt8 && t <= ScalarType::Int64) || (include_bool && t == ScalarType::Bool);
}
/// True for float16, bfloat16, float32, float64.
constexpr bool is_floating_point(ScalarType t) { return t >= ScalarType::Half && t <= ScalarType::Double; }
/// True for complex64 and complex128.
constexpr bool is_complex(ScalarType t) { return t == ScalarType::ComplexFloat || t == ScalarType::ComplexDouble; }
/// True for the signed types (all but bool, uint8 and quint8).
constexpr bool is_signed(ScalarType t) {
  return t != ScalarType::Bool && t != ScalarType::UInt8 && t != ScalarType::QUInt8;
}
/// True for the quantized types qint8, quint8, qint32.
constexpr bool is_qint_type(ScalarType t) { return t >= ScalarType::QInt8 && t <= ScalarType::QInt32; }
/// libtorch's spelling of is_qint_type.
constexpr bool isQIntType(ScalarType t) { return is_qint_type(t); }
/// The integer type holding a quantized type's values (qint8 -> int8, quint8 -> uint8,
/// qint32 -> int32); other types unchanged. libtorch's toUnderlying.
constexpr ScalarType to_underlying(ScalarType t) {
  return t == ScalarType::QInt8 ? ScalarType::Int8 : t == ScalarType::QUInt8 ? ScalarType::UInt8
                                                   : t == ScalarType::QInt32 ? ScalarType::Int32 : t;
}
/// complex64 -> float32, complex128 -> float64, others unchanged.
constexpr ScalarType to_real_type(ScalarType t) {
  return t == ScalarType::ComplexFloat ? ScalarType::Float : t == ScalarType::ComplexDouble ? ScalarType::Double : t;
}
/// float16/bfloat16/float32 -> complex64, float64 -> complex128; complex unchanged.
constexpr ScalarType to_complex_type(ScalarType t) {
  return t == ScalarType::Double || t == ScalarType::ComplexDouble ? ScalarType::ComplexDouble : ScalarType::ComplexFloat;
}
/// The name PyTorch prints: "float32", "int64", ...
TENSOR_API const char* to_string(ScalarType t);
TENSOR_API std::ostream& operator<<(std::ostream& os, ScalarType t);

/// PyTorch's type promotion lattice for two dtypes.
TENSOR_API ScalarType promote_types(ScalarType a, ScalarType b);

/// The default floating dtype (float32 unless changed) used by factories and float literals.
TENSOR_API ScalarType get_default_dtype();
/// Sets the default floating dtype (float32 or float64).
TENSOR_API void set_default_dtype(ScalarType t);

/// Maps a C++ type to its ScalarType (float -> kFloat32, ...).
template <class T> struct CppTypeToScalarType;
#define TENSOR_CPP_TYPE(T, S) \
  template <> struct CppTypeToScalarType<T> { static constexpr ScalarType value = S; };
TENSOR_CPP_TYPE(bool, kBool)
TENSOR_CPP_TYPE(uint8_t, kUInt8)
TENSOR_CPP_TYPE(int8_t, kInt8)
TENSOR_CPP_TYPE(int16_t, kInt16)
TENSOR_CPP_TYPE(int32_t, kInt32)
TENSOR_CPP_TYPE(int64_t, kInt64)
TENSOR_CPP_TYPE(Half, kFloat16)
TENSOR_CPP_TYPE(BFloat16, kBFloat16)
TENSOR_CPP_TYPE(float, kFloat32)
TENSOR_CPP_TYPE(double, kFloat64)
TENSOR_CPP_TYPE(complex64, kComplex64)
TENSOR_CPP_TYPE(complex128, kComplex128)
#undef TENSOR_CPP_TYPE

}  // namespace tensor
