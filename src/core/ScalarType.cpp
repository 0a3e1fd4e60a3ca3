#include "tensor/core/ScalarType.h"

#include <atomic>
#include <ostream>

#include "src/core/Check.h"

namespace tensor {

const char* to_string(ScalarType t) {
  static const char* names[] = {"bool",    "uint8",    "int8",    "int16",   "int32",     "int64",     "float16",
                                "bfloat16", "float32", "float64", "complex64", "complex128", "qint8",   "quint8",  "qint32",    "undefined"};
  return names[static_cast<int>(t)];
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << to_string(t); }

// Note [Type promotion]
// promote_types is PyTorch's lattice: bool < integers < floating < complex by category;
// within integers the smallest type holding both ranges (uint8 with int8 gives int16);
// float16 with bfloat16 gives float32; complex takes the wider of its own precision and the
// other operand's. result_type (src/core/TensorIterator.cpp) layers PyTorch's three
// priorities on top: dimensioned tensors, then 0-dim tensors, then wrapped numbers, where a
// lower priority only wins by being of a higher category.
ScalarType promote_types(ScalarType a, ScalarType b) {
  using S = ScalarType;
  if (a == b) return a;
  if (a == S::Undefined) return b;
  if (b == S::Undefined) return a;
  // Quantized values carry their scale in the tensor, not the type: no rule mixes them.
  TENSOR_CHECK(!is_qint_type(a) && !is_qint_type(b),
               "promote_types: quantized types do not promote ({} with {}); dequantize() first", a, b);
  if (a == S::Bool) return b;
  if (b == S::Bool) return a;
  if (is_complex(a) || is_complex(b)) {
    bool wide = a == S::ComplexDouble || b == S::ComplexDouble || a == S::Double || b == S::Double;
    return wide ? S::ComplexDouble : S::ComplexFloat;
  }
  if (is_floating_point(a) || is_floating_point(b)) {
    if (!is_floating_point(a)) return b;
    if (!is_floating_point(b)) return a;
    if ((a == S::Half && b == S::BFloat16) || (a == S::BFloat16 && b == S::Half)) return S::Float;
    return element_size(a) >= element_size(b) ? a : b;
  }
  // Both integral, not bool.
  if (a == S::UInt8 || b == S::UInt8) {
    ScalarType other = a == S::UInt8 ? b : a;
    return other == S::Int8 ? S::Int16 : other;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

static std::atomic<ScalarType> g_default_dtype{ScalarType::Float};

ScalarType get_default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(ScalarType t) {
  TENSOR_CHECK(t == kFloat32 || t == kFloat64, "set_default_dtype: only float32 and float64 are supported, got {}", t);
  g_default_dtype.store(t);
}

}  // namespace tensor
