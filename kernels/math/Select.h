// Per-element math of the selecting ops (clamp, threshold_backward, where) for the CPU and CUDA
// kernels (Note [Shared kernel math]). Each works in the op's opmath type (kernels/math/Cast.h).
#pragma once

#include "kernels/math/Macros.h"

namespace tensor::math {

/// libtorch's threshold_backward: 0 where self <= threshold, else grad. A NaN self compares
/// false, so it passes the gradient through (as relu's backward must).
template <class T>
TENSOR_HD_INLINE T threshold_backward(T grad, T self, T threshold) {
  return self <= threshold ? T(0) : grad;
}

/// clamp's functor: min(max(x, lo), hi) with either bound optional. A NaN x stays NaN (both
/// comparisons are false), as PyTorch's clamp propagates NaN.
template <class T>
struct ClampOp {
  T lo, hi;
  bool has_lo, has_hi;
  TENSOR_HD_INLINE T operator()(T x) const {
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
  }
};

/// threshold_backward as a binary functor (grad, self) with its threshold bound.
template <class T>
struct ThresholdBackwardOp {
  T threshold;
  TENSOR_HD_INLINE T operator()(T grad, T self) const { return threshold_backward(grad, self, threshold); }
};

/// where's select: a when cond, else b. Values are moved, not converted.
template <class T>
TENSOR_HD_INLINE T where_select(bool cond, T a, T b) {
  return cond ? a : b;
}

}  // namespace tensor::math
