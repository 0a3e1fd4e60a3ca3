// Internal: autocast's thread-local state and its cast (src/amp/Autocast.cpp), shared with the
// Autocast-key kernels (src/amp/AutocastPolicy.cpp).
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::autocast {

/// True when `t` is a tensor autocast may cast on `device`: defined, on that device type,
/// floating point and not float64 (libtorch's is_eligible).
inline bool is_eligible(const Tensor& t, DeviceType device) {
  return t.defined() && t.device().type() == device && t.is_floating_point() && t.dtype() != kFloat64;
}

/// `t` cast to `to` when eligible and of another dtype, else `t`. A float32 leaf that requires
/// grad, cast to the region's lower-precision dtype, is cast once per region (Note [Autocast
/// cast cache]). The cast is the public `to()`, so autograd records it (ToCopyBackward0) and
/// gradients reach the float32 source in float32.
Tensor cached_cast(ScalarType to, const Tensor& t, DeviceType device);

}  // namespace tensor::autocast
