// Internal: the Quantized-key kernels of the data-movement ops (Note [Quantized key] in
// src/dispatch/Dispatcher.h), filled into their tables by src/ops/CopyOps.cpp.
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::ops {

/// clone of a quantized tensor: a contiguous copy with the same quantizer.
Tensor quantized_clone(const Tensor& self);
/// copy_ where self or src is quantized: integers between equal quantizers, quantizing a
/// float source with self's quantizer; a quantized source into a plain tensor raises.
Tensor& quantized_copy_(Tensor& self, const Tensor& src, bool non_blocking);
/// to(dtype, device) of a quantized tensor: a clone when both stay; anything else raises.
Tensor quantized_to_copy(const Tensor& self, ScalarType dtype, Device device, bool non_blocking);
/// Fills the Quantized slots of relu, relu_, max_pool2d, avg_pool2d, adaptive_avg_pool2d, cat,
/// add and mul, once (Note [Lazy quantized registration] in src/ops/QuantizedElementwise.cpp).
void ensure_quantized_kernels();

}  // namespace tensor::ops
