// Quantized tensors, libtorch's spelling (docs/quantization.md): int8/uint8/int32 values with a
// scale and zero point, x = (q - zero_point) * scale. The accessors (q_scale, int_repr,
// dequantize, ...) are Tensor methods (tensor/core/Tensor.h).
//
//   Tensor q = tensor::quantize_per_tensor(x, 0.05, 128, tensor::kQUInt8);
//   q.int_repr();  q.dequantize();  q.q_scale();  q.qscheme();   // kPerTensorAffine
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor {

/// Quantizes a float32 CPU tensor with one scale and zero point: q = clamp(nearbyint(x *
/// (1/scale)) + zero_point) into dtype's range (ties round to even). dtype is kQInt8, kQUInt8 or
/// kQInt32; scale must be positive and finite and zero_point within dtype's range.
TENSOR_API Tensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, ScalarType dtype);
/// The same, with scale and zero_point given as one-element tensors (libtorch's overload).
TENSOR_API Tensor quantize_per_tensor(const Tensor& x, const Tensor& scale, const Tensor& zero_point, ScalarType dtype);
/// Quantizes a float32 CPU tensor with a scale and zero point per index of dim `axis`:
/// scales (floating) and zero_points (integer) are 1-D with x.size(axis) entries.
TENSOR_API Tensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                                       ScalarType dtype);
/// q.dequantize(): (q - zero_point) * scale as a new float32 tensor.
TENSOR_API Tensor dequantize(const Tensor& q);
/// q.int_repr(): the stored integers as a new int8/uint8/int32 tensor.
TENSOR_API Tensor int_repr(const Tensor& q);
/// Wraps integers (int8 -> qint8, uint8 -> quint8, int32 -> qint32) as a per-tensor quantized
/// tensor with these parameters; the integers are copied (libtorch's spelling).
TENSOR_API Tensor _make_per_tensor_quantized_tensor(const Tensor& int_repr, double scale, int64_t zero_point);
/// Wraps integers as a per-channel quantized tensor along `axis`; the integers are copied.
TENSOR_API Tensor _make_per_channel_quantized_tensor(const Tensor& int_repr, const Tensor& scales,
                                                     const Tensor& zero_points, int64_t axis);

}  // namespace tensor
