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

/// True when the element count of the non-negative `sizes` fits in int64 (any 0 makes it 0,
/// as libtorch's safe_compute_numel counts). TensorImpl::refresh checks every shape with it;
/// ops check first to name themselves in the message.
inline bool numel_fits(IntArrayRef sizes) {
  int64_t n = 1;
  bool overflow = false, zero = false;
  for (int64_t s : sizes) {
    zero |= s == 0;
    overflow |= __builtin_mul_overflow(n, s, &n);  // a wrapped n may be 0: hence `zero`
  }
  return !overflow || zero;
}

}  // namespace tensor::detail
