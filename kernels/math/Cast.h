// The types kernels compute in, and conversions between element types, for host and device.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/math/Macros.h"
#include "tensor/core/Half.h"

namespace tensor::math {

/// The type an element is computed in: float for the half types (Note [Half types compute in
/// float]), itself otherwise.
template <class T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <class T> using opmath_t = typename OpMath<T>::type;

template <class T>
constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// Converts a real value between element types as PyTorch does: to bool is "nonzero", the half
/// types round to nearest even from float, everything else is a C++ conversion. (Complex
/// conversions stay in src/core/DtypeVisit.h's convert, which is host-only.)
template <class To, class From>
TENSOR_HD_INLINE To cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != opmath_t<From>(0);
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(static_cast<opmath_t<From>>(v)));
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

}  // namespace tensor::math
