// quantize_per_tensor / quantize_per_channel / dequantize / int_repr and the q_* accessors
// (tensor/quantized.h), and the Quantized-key kernels of clone, copy_ and _to_copy.
//
// Note [Quantize and dequantize arithmetic]
// As libtorch's reference kernels: quantizing multiplies by the float32 reciprocal of the
// scale and rounds with nearbyint (half to even under the default rounding mode), then adds
// the zero point and clamps to the dtype's range; NaN goes to the lowest value (what x86 gives
// libtorch's cast). Dequantizing computes (q - zero_point) * scale in double and rounds once to
// float32 (libtorch subtracts in float, which agrees for 8-bit values and is coarser for
// qint32 values past 2^24). For qint8/quint8 the loops over contiguous data are vectorized
// (kernels/cpu/QuantizeKernels.cpp, Note [Vectorized quantize loops]: the same bits as the
// scalar formulas below, which qint32 and short per-channel rows still use) and split into
// chunks of kChunk elements across OpenMP's threads (each element computed alone, so the
// results do not depend on the thread count).
#include "src/ops/QuantizedOps.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/QuantizeKernels.h"
#include "src/core/Check.h"
#include "src/core/Parallel.h"
#include "src/core/Quantizer.h"
#include "tensor/ops.h"
#include "tensor/quantized.h"

namespace tensor {
namespace {
using detail::as_underlying;
using detail::parallel_range;
using detail::quantizer_of;
using detail::threads_for;

template <class F>
void visit_qint(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::QInt8: f(int8_t{}); return;
    case ScalarType::QUInt8: f(uint8_t{}); return;
    case ScalarType::QInt32: f(int32_t{}); return;
    default: TENSOR_ERROR("internal: {} is not a quantized dtype", t);
  }
}

// Runs f(begin, length) over [0, n) in chunks, on OpenMP's threads when there are several.
constexpr int64_t kChunk = 65536;
template <class F>
void for_chunks(int64_t n, F&& f) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_range(chunks, threads_for(n), [&](int64_t c_begin, int64_t c_end) {
    for (int64_t c = c_begin; c < c_end; ++c) f(c * kChunk, std::min(kChunk, n - c * kChunk));
  });
}
// Per-channel rows shorter than this run the scalar loop (a vector call per row would cost more).
constexpr int64_t kMinVectorRow = 64;

// Layout of a contiguous tensor around `axis`: outer x channels x inner.
struct ChannelLayout {
  int64_t outer = 1, channels = 1, inner = 1;
};
ChannelLayout layout_of(IntArrayRef sizes, int64_t axis) {
  ChannelLayout l;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (d < axis) l.outer *= sizes[d];
    else if (d == axis) l.channels = sizes[d];
    else l.inner *= sizes[d];
  }
  return l;
}

void check_quantize_input(const Tensor& x, const char* op) {
  TENSOR_CHECK(x.defined(), "{}: the input tensor is undefined", op);
  TENSOR_CHECK(!x.is_quantized(), "{}: the input is already quantized ({}); dequantize() it first", op, x.describe());
  TENSOR_CHECK(x.dtype() == kFloat32,
               "{}: expected a float32 tensor, got {} (as libtorch, only float32 quantizes; convert with .to(kFloat32))",
               op, x.describe());
  TENSOR_CHECK(x.is_cpu(), "{}: quantized tensors live on the CPU for now, got a tensor on {}", op, x.device().str());
}

// Writes quantize(x) into the contiguous quantized tensor `out` (same sizes as x).
void quantize_into(const Tensor& out, const Tensor& x) {
  const Quantizer& q = *out.impl()->quantizer();
  const Tensor xc = x.detach().contiguous();
  const float* src = xc.data_ptr<float>();
  visit_qint(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = static_cast<T*>(out.data_ptr());
    constexpr bool vec = sizeof(T) == 1;  // qint8 / quint8
    constexpr bool is_signed = std::is_signed_v<T>;
    if (q.qscheme() == QScheme::PerTensorAffine) {
      const float inv = 1.0f / static_cast<float>(q.scale());
      const int64_t zp = q.zero_point();
      for_chunks(xc.numel(), [&](int64_t b, int64_t len) {
        if constexpr (vec) {
          cpu::quantize_q8(src + b, dst + b, is_signed, len, inv, zp);
        } else {
          for (int64_t i = b; i < b + len; ++i) dst[i] = cpu::quantize_value<T>(src[i], inv, zp);
        }
      });
      return;
    }
    const ChannelLayout l = layout_of(xc.sizes(), q.axis());
    const bool long_rows = vec && l.inner >= kMinVectorRow;
    parallel_range(l.outer * l.channels, threads_for(xc.numel()), [&](int64_t row_begin, int64_t row_end) {
      for (int64_t row = row_begin; row < row_end; ++row) {
        const int64_t c = row % l.channels, i0 = row * l.inner;
        const float inv = 1.0f / static_cast<float>(q.channel_scale(c));
        const int64_t zp = q.channel_zero_point(c);
        if (long_rows)
          cpu::quantize_q8(src + i0, dst + i0, is_signed, l.inner, inv, zp);
        else
          for (int64_t i = i0; i < i0 + l.inner; ++i) dst[i] = cpu::quantize_value<T>(src[i], inv, zp);
      }
    });
  });
}

void check_axis_matches(const Quantizer& q, IntArrayRef sizes, const char* op) {
  TENSOR_CHECK(q.axis() < static_cast<int64_t>(sizes.size()),
               "{}: axis {} is out of range for a tensor of shape {}", op, q.axis(), detail::shape_str(sizes));
  TENSOR_CHECK(q.num_channels() == sizes[q.axis()],
               "{}: expected {} scales and zero_points (the size of dim {} of shape {}), got {}", op, sizes[q.axis()],
               q.axis(), detail::shape_str(sizes), q.num_channels());
}

int64_t wrap_axis(int64_t axis, int64_t dim, const char* op) {
  TENSOR_CHECK(axis >= -dim && axis < dim, "{}: axis {} is out of range for a tensor with {} dims", op, axis, dim);
  return axis < 0 ? axis + dim : axis;
}
}  // namespace

// ---- quantize / dequantize ----

Tensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, ScalarType dtype) {
  constexpr const char* op = "quantize_per_tensor";
  check_quantize_input(x, op);
  Tensor out = detail::empty_quantized(x.sizes(), Quantizer::per_tensor(dtype, scale, zero_point, op));
  quantize_into(out, x);
  return out;
}

Tensor quantize_per_tensor(const Tensor& x, const Tensor& scale, const Tensor& zero_point, ScalarType dtype) {
  constexpr const char* op = "quantize_per_tensor";
  TENSOR_CHECK(scale.defined() && zero_point.defined() && scale.numel() == 1 && zero_point.numel() == 1,
               "{}: scale and zero_point tensors must hold one element each, got {} and {}", op,
               scale.defined() ? scale.describe() : "undefined", zero_point.defined() ? zero_point.describe() : "undefined");
  TENSOR_CHECK(is_integral(zero_point.dtype(), /*include_bool=*/false),
               "{}: zero_point must be an integer tensor, got {}", op, zero_point.describe());
  return quantize_per_tensor(x, scale.item<double>(), zero_point.item<int64_t>(), dtype);
}

Tensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                            ScalarType dtype) {
  constexpr const char* op = "quantize_per_channel";
  check_quantize_input(x, op);
  axis = wrap_axis(axis, x.dim(), op);
  QuantizerPtr q = Quantizer::per_channel(dtype, scales, zero_points, axis, op);
  check_axis_matches(*q, x.sizes(), op);
  Tensor out = detail::empty_quantized(x.sizes(), std::move(q));
  quantize_into(out, x);
  return out;
}

Tensor dequantize(const Tensor& self) {
  const Quantizer& q = quantizer_of(self, "dequantize");
  const Tensor ints = as_underlying(self).contiguous();
  Tensor out = empty(self.sizes(), TensorOptions().dtype(kFloat32));
  float* dst = out.data_ptr<float>();
  visit_qint(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(ints.data_ptr());
    constexpr bool vec = sizeof(T) == 1;  // qint8 / quint8
    constexpr bool is_signed = std::is_signed_v<T>;
    auto scalar = [&](int64_t i0, int64_t len, double s, int64_t z) {
      const double zp = static_cast<double>(z);
      for (int64_t i = i0; i < i0 + len; ++i) dst[i] = static_cast<float>((static_cast<double>(src[i]) - zp) * s);
    };
    if (q.qscheme() == QScheme::PerTensorAffine) {
      for_chunks(ints.numel(), [&](int64_t b, int64_t len) {
        if constexpr (vec)
          cpu::dequantize_q8(src + b, is_signed, dst + b, len, q.scale(), q.zero_point());
        else
          scalar(b, len, q.scale(), q.zero_point());
      });
      return;
    }
    const ChannelLayout l = layout_of(ints.sizes(), q.axis());
    const bool long_rows = vec && l.inner >= kMinVectorRow;
    parallel_range(l.outer * l.channels, threads_for(ints.numel()), [&](int64_t row_begin, int64_t row_end) {
      for (int64_t row = row_begin; row < row_end; ++row) {
        const int64_t c = row % l.channels, i0 = row * l.inner;
        if (long_rows)
          cpu::dequantize_q8(src + i0, is_signed, dst + i0, l.inner, q.channel_scale(c), q.channel_zero_point(c));
        else
          scalar(i0, l.inner, q.channel_scale(c), q.channel_zero_point(c));
      }
    });
  });
  return out;
}

Tensor int_repr(const Tensor& self) {
  quantizer_of(self, "int_repr");
  return as_underlying(self).clone();
}

namespace {
Tensor make_quantized_from_ints(const Tensor& ints, QuantizerPtr q) {
  Tensor out = detail::empty_quantized(ints.sizes(), std::move(q));
  as_underlying(out).copy_(ints);
  return out;
}
ScalarType quantized_type_for(const Tensor& ints, const char* op) {
  TENSOR_CHECK(ints.defined(), "{}: the integer tensor is undefined", op);
  TENSOR_CHECK(ints.is_cpu(), "{}: quantized tensors live on the CPU for now, got a tensor on {}", op,
               ints.device().str());
  switch (ints.dtype()) {
    case ScalarType::Int8: return kQInt8;
    case ScalarType::UInt8: return kQUInt8;
    case ScalarType::Int32: return kQInt32;
    default:
      TENSOR_ERROR("{}: expected an int8, uint8 or int32 tensor (for qint8, quint8, qint32), got {}", op,
                   ints.describe());
  }
}
}  // namespace

Tensor _make_per_tensor_quantized_tensor(const Tensor& ints, double scale, int64_t zero_point) {
  constexpr const char* op = "_make_per_tensor_quantized_tensor";
  const ScalarType qt = quantized_type_for(ints, op);
  return make_quantized_from_ints(ints, Quantizer::per_tensor(qt, scale, zero_point, op));
}

Tensor _make_per_channel_quantized_tensor(const Tensor& ints, const Tensor& scales, const Tensor& zero_points,
                                          int64_t axis) {
  constexpr const char* op = "_make_per_channel_quantized_tensor";
  const ScalarType qt = quantized_type_for(ints, op);
  axis = wrap_axis(axis, ints.dim(), op);
  QuantizerPtr q = Quantizer::per_channel(qt, scales, zero_points, axis, op);
  check_axis_matches(*q, ints.sizes(), op);
  return make_quantized_from_ints(ints, std::move(q));
}

// ---- Tensor methods ----

QScheme Tensor::qscheme() const { return quantizer_of(*this, "qscheme").qscheme(); }

namespace {
const Quantizer& per_tensor_of(const Tensor& t, const char* op, const char* instead) {
  const Quantizer& q = quantizer_of(t, op);
  TENSOR_CHECK(q.qscheme() == QScheme::PerTensorAffine, "{}: expected a per-tensor quantized tensor, got {}; use {}",
               op, q.describe(), instead);
  return q;
}
const Quantizer& per_channel_of(const Tensor& t, const char* op, const char* instead) {
  const Quantizer& q = quantizer_of(t, op);
  TENSOR_CHECK(q.qscheme() == QScheme::PerChannelAffine, "{}: expected a per-channel quantized tensor, got {}; use {}",
               op, q.describe(), instead);
  return q;
}
}  // namespace

double Tensor::q_scale() const { return per_tensor_of(*this, "q_scale", "q_per_channel_scales()").scale(); }
int64_t Tensor::q_zero_point() const {
  return per_tensor_of(*this, "q_zero_point", "q_per_channel_zero_points()").zero_point();
}
Tensor Tensor::q_per_channel_scales() const {
  return per_channel_of(*this, "q_per_channel_scales", "q_scale()").scales().clone();
}
Tensor Tensor::q_per_channel_zero_points() const {
  return per_channel_of(*this, "q_per_channel_zero_points", "q_zero_point()").zero_points().clone();
}
int64_t Tensor::q_per_channel_axis() const { return per_channel_of(*this, "q_per_channel_axis", "q_scale()").axis(); }
Tensor Tensor::int_repr() const { return tensor::int_repr(*this); }
Tensor Tensor::dequantize() const { return tensor::dequantize(*this); }

// ---- Quantized-key kernels of clone, copy_, _to_copy ----

namespace ops {

Tensor quantized_clone(const Tensor& self) {
  quantizer_of(self, "clone");
  return make_quantized_from_ints(as_underlying(self), QuantizerPtr(self.impl()->quantizer()));
}

Tensor& quantized_copy_(Tensor& self, const Tensor& src, bool non_blocking) {
  TENSOR_CHECK(self.defined() && src.defined(), "copy_: both tensors must be defined");
  TENSOR_CHECK(self.is_cpu() && src.is_cpu(), "copy_: quantized tensors live on the CPU for now (copy {} on {} into {} on {})",
               src.describe(), src.device().str(), self.describe(), self.device().str());
  TENSOR_CHECK(self.is_quantized(),
               "copy_: copying from a quantized tensor ({}) into a non-quantized one ({}) is not allowed; use "
               "dequantize() for the real values or int_repr() for the integers",
               src.describe(), self.describe());
  const Quantizer& qs = quantizer_of(self, "copy_");
  if (!src.is_quantized()) {
    // Quantize the (broadcast) source with self's parameters, then copy the integers in.
    TENSOR_CHECK(!src.is_complex(), "copy_: cannot quantize a complex tensor ({}) into {}", src.describe(),
                 self.describe());
    Tensor tmp = detail::empty_quantized(self.sizes(), QuantizerPtr(self.impl()->quantizer()));
    quantize_into(tmp, src.to(kFloat32).expand(self.sizes()));
    as_underlying(self).copy_(as_underlying(tmp), non_blocking);
    // The integers are written through an alias with its own version counter: count the write
    // on self, so that whoever caches self (the packed weights of nn::quantized modules, Note
    // [Quantized module state]) sees it.
    self.unsafeGetTensorImpl()->bump_version();
    return self;
  }
  const Quantizer& qr = quantizer_of(src, "copy_");
  TENSOR_CHECK(self.dtype() == src.dtype(), "copy_: cannot copy a {} tensor into a {} tensor; dequantize() and quantize "
               "again to change the quantized dtype", src.dtype(), self.dtype());
  if (!qs.equal(qr)) {
    // As libtorch, the destination takes the source's parameters: only a whole tensor (not a
    // view, whose base would disagree) of the same shape can.
    TENSOR_CHECK(!self.impl()->is_view() && self.sizes() == src.sizes(),
                 "copy_: the destination ({}, {}) and the source ({}, {}) have different quantization parameters; "
                 "only a whole tensor of the same shape can take the source's",
                 self.describe(), qs.describe(), src.describe(), qr.describe());
    self.unsafeGetTensorImpl()->set_quantizer(src.impl()->quantizer());
  } else if (qr.qscheme() == QScheme::PerChannelAffine) {
    TENSOR_CHECK(self.sizes() == src.sizes(), "copy_: per-channel quantized tensors copy between equal shapes, got {} "
                 "into {}", src.describe(), self.describe());
  }
  as_underlying(self).copy_(as_underlying(src), non_blocking);
  self.unsafeGetTensorImpl()->bump_version();  // as above
  return self;
}

Tensor quantized_to_copy(const Tensor& self, ScalarType dtype, Device device, bool non_blocking) {
  TENSOR_CHECK(is_qint_type(dtype),
               "to: converting a quantized tensor ({}) to {} is not allowed; use dequantize() for the real values or "
               "int_repr() for the integers",
               self.describe(), dtype);
  TENSOR_CHECK(dtype == self.dtype(), "to: cannot convert a {} tensor to {}; dequantize() and quantize again",
               self.dtype(), dtype);
  TENSOR_CHECK(device.is_cpu(), "to: quantized tensors live on the CPU for now; cannot move {} to {}",
               self.describe(), device.str());
  return quantized_clone(self);
}

}  // namespace ops
}  // namespace tensor
