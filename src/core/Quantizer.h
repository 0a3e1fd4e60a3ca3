// Internal: the quantization parameters a quantized tensor carries (Note [Quantized tensors]).
#pragma once

#include <cstdint>

#include "tensor/core/QScheme.h"
#include "tensor/core/Tensor.h"

namespace tensor {

// Note [Quantized tensors]
// A quantized tensor stores integers (int8 for kQInt8, uint8 for kQUInt8, int32 for kQInt32)
// and means real values: x = (q - zero_point) * scale. The dtype names the integer type; the
// scale and zero point live in an immutable Quantizer that the TensorImpl holds, as libtorch's
// QTensorImpl does:
//   per-tensor affine   one scale (double) and one zero point (int64) for every element;
//   per-channel affine  scales (float64) and zero points (int64), one per index of `axis`.
// Views share their base's quantizer; a view that moves, slices or selects the channel axis of
// a per-channel tensor gets one rebuilt for its own dims (Note [Per-channel views] in
// src/ops/ViewOps.cpp). Quantized tensors live on the CPU, are never made by the factories
// (empty(kQInt8) has no scale to give them) and never require grad.
class Quantizer : public RefCounted {
 public:
  /// Checks the parameters (naming `op` in the error) and makes a per-tensor quantizer.
  static intrusive_ptr<Quantizer> per_tensor(ScalarType dtype, double scale, int64_t zero_point, const char* op);
  /// Checks the parameters and makes a per-channel quantizer; scales/zero_points are any real
  /// 1-D CPU tensors (copied into contiguous float64/int64 tensors).
  static intrusive_ptr<Quantizer> per_channel(ScalarType dtype, const Tensor& scales, const Tensor& zero_points,
                                              int64_t axis, const char* op);

  QScheme qscheme() const { return qscheme_; }
  ScalarType dtype() const { return dtype_; }
  double scale() const { return scale_; }
  int64_t zero_point() const { return zero_point_; }
  /// Per-channel: contiguous CPU float64 / int64, one entry per channel.
  const Tensor& scales() const { return scales_; }
  const Tensor& zero_points() const { return zero_points_; }
  int64_t axis() const { return axis_; }
  int64_t num_channels() const { return scales_.defined() ? scales_.numel() : 0; }
  double channel_scale(int64_t c) const { return scales_.data_ptr<double>()[c]; }
  int64_t channel_zero_point(int64_t c) const { return zero_points_.data_ptr<int64_t>()[c]; }

  /// Same scheme and dtype, and equal parameters.
  bool equal(const Quantizer& o) const;
  /// "scale: 0.1, zero_point: 10" or "per_channel_affine, axis 0": for messages.
  std::string describe() const;

  // For views of a per-channel tensor (Note [Per-channel views]):
  /// The same channels on another dim.
  intrusive_ptr<Quantizer> with_axis(int64_t axis) const;
  /// Channel c alone: a per-tensor quantizer (select on the channel axis).
  intrusive_ptr<Quantizer> channel(int64_t c) const;
  /// Channels start, start + step, ... (n of them) on the same axis (slice on the channel axis).
  intrusive_ptr<Quantizer> channels(int64_t start, int64_t step, int64_t n) const;

 private:
  Quantizer() = default;
  QScheme qscheme_ = QScheme::PerTensorAffine;
  ScalarType dtype_ = ScalarType::QInt8;
  double scale_ = 1;
  int64_t zero_point_ = 0;
  Tensor scales_, zero_points_;
  int64_t axis_ = 0;
};
using QuantizerPtr = intrusive_ptr<Quantizer>;

namespace detail {
/// The smallest and largest integer of a quantized dtype ([-128, 127] for qint8, ...).
int64_t qmin(ScalarType t);
int64_t qmax(ScalarType t);
/// A new contiguous CPU quantized tensor with these parameters, its integers uninitialized
/// (libtorch's _empty_affine_quantized).
Tensor empty_quantized(IntArrayRef sizes, QuantizerPtr q);
/// The integers of quantized `q` as a plain int8/uint8/int32 tensor over the same memory (same
/// sizes, strides and offset; writes go through). Not a recorded view: integers carry no grad.
Tensor as_underlying(const Tensor& q);
/// The quantizer of `t`, checked to be quantized (`op` names the caller in the error).
const Quantizer& quantizer_of(const Tensor& t, const char* op);
}  // namespace detail

}  // namespace tensor
