// Quantizer: the parameters of a quantized tensor, their checks, and the views' adjustments
// (Note [Quantized tensors] in src/core/Quantizer.h).
#include "src/core/Quantizer.h"

#include <cmath>
#include <limits>
#include <ostream>

#include "src/core/Check.h"
#include "src/ops/QuantizedOps.h"
#include "tensor/ops.h"

namespace tensor {

const char* to_string(QScheme q) {
  static const char* names[] = {"per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                                "per_channel_symmetric", "per_channel_affine_float_qparams"};
  return names[static_cast<int>(q)];
}
std::ostream& operator<<(std::ostream& os, QScheme q) { return os << to_string(q); }

namespace detail {
int64_t qmin(ScalarType t) {
  switch (t) {
    case ScalarType::QInt8: return std::numeric_limits<int8_t>::min();
    case ScalarType::QUInt8: return std::numeric_limits<uint8_t>::min();
    case ScalarType::QInt32: return std::numeric_limits<int32_t>::min();
    default: TENSOR_ERROR("qmin: {} is not a quantized dtype", t);
  }
}
int64_t qmax(ScalarType t) {
  switch (t) {
    case ScalarType::QInt8: return std::numeric_limits<int8_t>::max();
    case ScalarType::QUInt8: return std::numeric_limits<uint8_t>::max();
    case ScalarType::QInt32: return std::numeric_limits<int32_t>::max();
    default: TENSOR_ERROR("qmax: {} is not a quantized dtype", t);
  }
}

Tensor empty_quantized(IntArrayRef sizes, QuantizerPtr q) {
  // Every quantized tensor starts here: the first fills the ops' Quantized slots.
  ops::ensure_quantized_kernels();
  Tensor raw = empty(sizes, TensorOptions().dtype(to_underlying(q->dtype())).device(Device(kCPU)));
  auto impl = make_intrusive<TensorImpl>(raw.impl()->storage(), q->dtype(), Device(kCPU));
  impl->set_sizes_contiguous(sizes);
  impl->set_quantizer(std::move(q));
  return Tensor(std::move(impl));
}

Tensor as_underlying(const Tensor& q) {
  auto impl = make_intrusive<TensorImpl>(q.impl()->storage(), to_underlying(q.dtype()), q.device());
  impl->set_sizes_and_strides(q.sizes(), q.strides(), q.storage_offset());
  return Tensor(std::move(impl));
}

const Quantizer& quantizer_of(const Tensor& t, const char* op) {
  TENSOR_CHECK(t.defined(), "{}: the tensor is undefined", op);
  TENSOR_CHECK(t.is_quantized(), "{}: expected a quantized tensor (qint8, quint8 or qint32), got {}", op, t.describe());
  const QuantizerPtr& q = t.impl()->quantizer();
  TENSOR_CHECK(q, "{}: the {} tensor has no quantization parameters (internal error)", op, t.dtype());
  return *q;
}
}  // namespace detail

namespace {
void check_qdtype(ScalarType dtype, const char* op) {
  TENSOR_CHECK(is_qint_type(dtype), "{}: dtype must be a quantized type (kQInt8, kQUInt8 or kQInt32), got {}", op,
               dtype);
}
void check_scale(double scale, const char* op) {
  TENSOR_CHECK(std::isfinite(scale) && scale > 0, "{}: scale must be a positive finite number, got {}", op, scale);
  // Quantizing multiplies by 1/scale in float32 (as libtorch), which must be finite too.
  TENSOR_CHECK(std::isfinite(1.0f / static_cast<float>(scale)),
               "{}: scale {} is too small: its reciprocal overflows float32", op, scale);
}
void check_zero_point(int64_t zp, ScalarType dtype, const char* op) {
  TENSOR_CHECK(zp >= detail::qmin(dtype) && zp <= detail::qmax(dtype),
               "{}: zero_point {} is out of range for {} [{}, {}]", op, zp, dtype, detail::qmin(dtype),
               detail::qmax(dtype));
}
}  // namespace

QuantizerPtr Quantizer::per_tensor(ScalarType dtype, double scale, int64_t zero_point, const char* op) {
  check_qdtype(dtype, op);
  check_scale(scale, op);
  check_zero_point(zero_point, dtype, op);
  QuantizerPtr q(new Quantizer());
  q->qscheme_ = QScheme::PerTensorAffine;
  q->dtype_ = dtype;
  q->scale_ = scale;
  q->zero_point_ = zero_point;
  return q;
}

QuantizerPtr Quantizer::per_channel(ScalarType dtype, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                                    const char* op) {
  check_qdtype(dtype, op);
  TENSOR_CHECK(scales.defined() && zero_points.defined(), "{}: scales and zero_points must be defined", op);
  TENSOR_CHECK(scales.dim() == 1 && zero_points.dim() == 1,
               "{}: scales and zero_points must be 1-D, got scales {} and zero_points {}", op, scales.describe(),
               zero_points.describe());
  TENSOR_CHECK(scales.numel() == zero_points.numel(),
               "{}: scales and zero_points must have the same number of entries, got {} and {}", op, scales.numel(),
               zero_points.numel());
  TENSOR_CHECK(scales.is_floating_point(), "{}: scales must be a floating tensor, got {}", op, scales.describe());
  TENSOR_CHECK(is_integral(zero_points.dtype(), /*include_bool=*/false),
               "{}: zero_points must be an integer tensor, got {}", op, zero_points.describe());
  TENSOR_CHECK(axis >= 0, "{}: axis must be non-negative, got {}", op, axis);
  QuantizerPtr q(new Quantizer());
  q->qscheme_ = QScheme::PerChannelAffine;
  q->dtype_ = dtype;
  q->scales_ = scales.detach().to(Device(kCPU), kFloat64, false, /*copy=*/true).contiguous();
  q->zero_points_ = zero_points.detach().to(Device(kCPU), kInt64, false, /*copy=*/true).contiguous();
  q->axis_ = axis;
  for (int64_t c = 0; c < q->num_channels(); ++c) {
    check_scale(q->channel_scale(c), op);
    check_zero_point(q->channel_zero_point(c), dtype, op);
  }
  return q;
}

bool Quantizer::equal(const Quantizer& o) const {
  if (qscheme_ != o.qscheme_ || dtype_ != o.dtype_) return false;
  if (qscheme_ == QScheme::PerTensorAffine) return scale_ == o.scale_ && zero_point_ == o.zero_point_;
  return axis_ == o.axis_ && scales_.equal(o.scales_) && zero_points_.equal(o.zero_points_);
}

std::string Quantizer::describe() const {
  if (qscheme_ == QScheme::PerTensorAffine)
    return fmt::format("{} {} (scale {}, zero_point {})", dtype_, to_string(qscheme_), scale_, zero_point_);
  return fmt::format("{} {} ({} channels along axis {})", dtype_, to_string(qscheme_), num_channels(), axis_);
}

QuantizerPtr Quantizer::with_axis(int64_t axis) const {
  QuantizerPtr q(new Quantizer());
  q->qscheme_ = qscheme_;
  q->dtype_ = dtype_;
  q->scales_ = scales_;  // immutable once made: shared, not copied
  q->zero_points_ = zero_points_;
  q->axis_ = axis;
  return q;
}

QuantizerPtr Quantizer::channel(int64_t c) const {
  QuantizerPtr q(new Quantizer());
  q->qscheme_ = QScheme::PerTensorAffine;
  q->dtype_ = dtype_;
  q->scale_ = channel_scale(c);
  q->zero_point_ = channel_zero_point(c);
  return q;
}

QuantizerPtr Quantizer::channels(int64_t start, int64_t step, int64_t n) const {
  QuantizerPtr q = with_axis(axis_);
  const int64_t end = n == 0 ? start : start + (n - 1) * step + 1;
  q->scales_ = scales_.slice(0, start, end, step).clone();
  q->zero_points_ = zero_points_.slice(0, start, end, step).clone();
  return q;
}

}  // namespace tensor
