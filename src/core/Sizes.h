// Internal: whether a shape can be laid out at all (Note [Sizes that fit] in src/core/Factories.cpp).
#pragma once

#include <cstdint>

#include "tensor/core/ArrayRef.h"

namespace tensor::detail {

/// True when the product of the non-negative `sizes`, each 0 counted as 1, fits in int64: then
/// so do the contiguous strides and the element count, even when a size is 0.
inline bool contiguous_strides_fit(IntArrayRef sizes) {
  int64_t span = 1;
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(span, s == 0 ? 1 : s, &span)) return false;
  return true;
}

}  // namespace tensor::detail
