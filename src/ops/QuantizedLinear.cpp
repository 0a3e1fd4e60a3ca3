// Quantized linear on oneDNN's int8 matmul (tensor::quantized::linear, linear_relu,
// linear_dynamic; tensor/nn/quantized.h), and the helpers the int8 convolution shares
// (src/ops/QuantizedOneDNN.h).
//
// Note [Requantization in oneDNN]
// The quantized linear and convolution compute, for output channel c,
//   acc = sum (x_q - x_zp) * w_q              exactly, in int32 (weights have zero point 0)
//   y_q = clamp(round((acc * x_scale * w_scale[c] + bias[c]) / y_scale) + y_zp)   [ReLU: acc term >= 0]
// The reference loops of tests/test_quantized_kernels.cpp compute the middle line in float64.
// oneDNN 2.x (the Debian package) takes the scales as an "output scale" and adds the bias before
// scaling, all in float32 (ReLU applies to v):
//   v   = float(float(acc) + bias[c] / (x_scale * w_scale[c])) * float(x_scale * w_scale[c] / y_scale)
//   y_q = saturate(round_half_even(v + y_zp))
// (conv_add: v += float(r_scale / y_scale) * (r_q - r_zp) before the ReLU, oneDNN's sum post-op.)
// The float32 roundings move the value by a few ulps, which changes the rounded integer only when
// the exact value lies within ~1e-6 (relative) of a half-integer: the result then differs from
// the float64 reference by exactly one step, never more. With power-of-two scales, a bias that is
// a multiple of x_scale * w_scale and |acc| < 2^24, every float32 step is exact and the results
// are equal; the tests check that equality, and the at-most-one-step bound with arbitrary scales.
// One more difference: the kernels add the output zero point before rounding,
// round_half_even(v + y_zp) rather than round_half_even(v) + y_zp. The two differ only at exact halves with an odd zero
// point (v = -154.5, y_zp = 255: 100 rather than 101), one step. The matmul behind linear does the same (its zero point
// is an eltwise post-op: Note [Output zero point as a post-op]). The tests hold both exactly to a reference that adds
// first, and to within one step of (for even zero points, exactly to) round-then-add.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/QuantizeKernels.h"
#include "src/core/Check.h"
#include "src/core/Quantizer.h"
#include "src/ops/QuantizedOneDNN.h"
#include "tensor/nn/quantized.h"
#include "tensor/ops.h"

namespace tensor::quantized {
namespace dn = ::tensor::cpu::onednn;
using ::tensor::detail::as_underlying;
using ::tensor::detail::shape_str;

namespace detail {

CheckedWeight check_weight(const Tensor& qweight, int64_t min_dim, int64_t max_dim, const char* op) {
  TENSOR_CHECK(qweight.defined(), "{}: the weight is undefined", op);
  TENSOR_CHECK(qweight.is_quantized() && qweight.dtype() == kQInt8,
               "{}: expected a qint8 weight (quantize_per_tensor or quantize_per_channel with kQInt8), got {}", op,
               qweight.describe());
  TENSOR_CHECK(qweight.dim() >= min_dim && qweight.dim() <= max_dim,
               "{}: expected a weight with {} to {} dims, got shape {}", op, min_dim, max_dim,
               shape_str(qweight.sizes()));
  const Quantizer& q = *qweight.impl()->quantizer();
  CheckedWeight w;
  w.qweight = qweight;
  const int64_t out = qweight.size(0);
  if (q.qscheme() == QScheme::PerTensorAffine) {
    TENSOR_CHECK(q.zero_point() == 0,
                 "{}: the weight's zero point must be 0 (oneDNN's int8 kernels take symmetric weights), got {} for a "
                 "weight of shape {}",
                 op, q.zero_point(), shape_str(qweight.sizes()));
    w.scales.assign(static_cast<size_t>(out), q.scale());
  } else {
    TENSOR_CHECK(
        q.axis() == 0,
        "{}: a per-channel weight must be quantized along dim 0 (the output channels), got axis {} for shape {}", op,
        q.axis(), shape_str(qweight.sizes()));
    for (int64_t c = 0; c < out; ++c) {
      TENSOR_CHECK(q.channel_zero_point(c) == 0,
                   "{}: the weight's zero points must be 0 (oneDNN's int8 kernels take symmetric weights), got {} for "
                   "channel {} of a weight of shape {}",
                   op, q.channel_zero_point(c), c, shape_str(qweight.sizes()));
      w.scales.push_back(q.channel_scale(c));
    }
    w.per_channel = true;
  }
  w.ints = as_underlying(qweight).contiguous();
  static std::atomic<int64_t> next_id{1};
  w.id = next_id.fetch_add(1, std::memory_order_relaxed);
  return w;
}

Tensor check_bias(const std::optional<Tensor>& bias, int64_t out, const char* op) {
  if (!bias || !bias->defined()) return Tensor();
  const Tensor& b = *bias;
  TENSOR_CHECK(!b.is_quantized() && b.dtype() == kFloat32 && b.is_cpu(), "{}: expected a float32 CPU bias, got {}", op,
               b.describe());
  TENSOR_CHECK(b.dim() == 1 && b.size(0) == out, "{}: expected a bias of shape [{}] (one per output channel), got {}",
               op, out, shape_str(b.sizes()));
  return b.detach().contiguous().clone();
}

void check_activation(const Tensor& qx, const char* op, const char* what) {
  TENSOR_CHECK(qx.defined(), "{}: the {} is undefined", op, what);
  TENSOR_CHECK(qx.is_quantized(),
               "{}: expected a quantized {} (quint8 or qint8, per-tensor), got {}; quantize_per_tensor it first", op,
               what, qx.describe());
  TENSOR_CHECK(qx.dtype() == kQUInt8 || qx.dtype() == kQInt8, "{}: expected a quint8 or qint8 {}, got {}", op, what,
               qx.describe());
  TENSOR_CHECK(qx.qscheme() == QScheme::PerTensorAffine,
               "{}: expected a per-tensor quantized {}, got a per-channel one ({})", op, what, qx.describe());
}

void check_output_qparams(double scale, int64_t zero_point, ScalarType dtype, const char* op) {
  TENSOR_CHECK(std::isfinite(scale) && scale > 0, "{}: the output scale must be positive and finite, got {}", op,
               scale);
  const int64_t lo = ::tensor::detail::qmin(dtype), hi = ::tensor::detail::qmax(dtype);
  TENSOR_CHECK(zero_point >= lo && zero_point <= hi, "{}: the output zero point {} is outside {}'s range [{}, {}]", op,
               zero_point, dtype, lo, hi);
}

dnnl::memory::data_type dnnl_type_of(ScalarType t) {
  switch (t) {
    case ScalarType::QUInt8:
      return dnnl::memory::data_type::u8;
    case ScalarType::QInt8:
      return dnnl::memory::data_type::s8;
    case ScalarType::Float:
      return dnnl::memory::data_type::f32;
    default:
      TENSOR_ERROR("internal: no oneDNN int8 type for {}", t);
  }
}

dnnl::memory PackedWeights::get(const dnnl::memory::desc& want, const dnnl::memory& plain) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Packed& p : packed_)
    if (p.desc == want) return p.mem;
  if (want == plain.get_desc()) {
    packed_.push_back({want, plain, Tensor()});
    return plain;
  }
  Tensor storage = tensor::empty({static_cast<int64_t>(want.get_size())}, TensorOptions().dtype(kUInt8));
  dnnl::memory packed(want, dn::engine(), storage.data_ptr());
  dnnl::memory src = plain;
  dnnl::reorder(src, packed).execute(dn::stream(), src, packed);
  dn::stream().wait();
  packed_.push_back({want, packed, storage});
  return packed;
}

std::vector<float> requant_scales(const CheckedWeight& w, double x_scale, double y_scale) {
  std::vector<float> s(w.per_channel ? w.scales.size() : 1);
  for (size_t c = 0; c < s.size(); ++c) s[c] = static_cast<float>(x_scale * w.scales[c] / y_scale);
  return s;
}

Tensor requant_bias(const CheckedWeight& w, const Tensor& bias, double x_scale) {
  if (!bias.defined()) return Tensor();
  const int64_t out = static_cast<int64_t>(w.scales.size());
  Tensor r = tensor::empty({out}, TensorOptions().dtype(kFloat32));
  float* b = r.data_ptr<float>();
  const float* src = bias.data_ptr<float>();
  for (int64_t c = 0; c < out; ++c) b[c] = static_cast<float>(src[c] / (x_scale * w.scales[c]));
  return r;
}

void add_scales_key(dn::Key& key, const CheckedWeight& w, double x_scale, double y_scale) {
  key.add(w.id).add(x_scale).add(y_scale);
}

dnnl::memory f32_memory(const Tensor& t) {
  dnnl::memory::desc md({t.numel()}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  return dnnl::memory(md, dn::engine(), t.data_ptr());
}

dnnl::memory s32_scalar(int32_t v, Tensor& keep) {
  keep = tensor::full({1}, static_cast<int64_t>(v), TensorOptions().dtype(kInt32));
  dnnl::memory::desc md({1}, dnnl::memory::data_type::s32, dnnl::memory::format_tag::a);
  return dnnl::memory(md, dn::engine(), keep.data_ptr());
}

}  // namespace detail

struct LinearPackedParams::Impl {
  detail::CheckedWeight w;
  Tensor bias;  // float32 [out] or undefined
  int64_t in = 0, out = 0;
  detail::PackedWeights packed;
};

std::tuple<Tensor, std::optional<Tensor>> LinearPackedParams::unpack() const {
  return {impl_->w.qweight, impl_->bias.defined() ? std::optional<Tensor>(impl_->bias) : std::nullopt};
}
int64_t LinearPackedParams::in_features() const { return impl_->in; }
int64_t LinearPackedParams::out_features() const { return impl_->out; }

std::shared_ptr<LinearPackedParams> linear_prepack(const Tensor& qweight, const std::optional<Tensor>& bias) {
  constexpr const char* op = "quantized::linear_prepack";
  auto impl = std::make_shared<LinearPackedParams::Impl>();
  impl->w = detail::check_weight(qweight, 2, 2, op);
  impl->out = qweight.size(0);
  impl->in = qweight.size(1);
  impl->bias = detail::check_bias(bias, impl->out, op);
  return std::make_shared<LinearPackedParams>(std::move(impl));
}

namespace {

// Runs the int8 matmul: x_ints [M, K] (u8 or s8, contiguous) with zero point x_zp, the packed
// weights, into out [M, N] (u8/s8 with y_zp, or f32 with no zero point).
void run_qmatmul(LinearPackedParams::Impl& p, const Tensor& x_ints, dnnl::memory::data_type src_dt, double x_scale,
                 int64_t x_zp, const Tensor& out, dnnl::memory::data_type dst_dt, double y_scale, int64_t y_zp,
                 bool relu) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t M = x_ints.size(0), K = p.in, N = p.out;
  const bool has_bias = p.bias.defined();
  const bool q_out = dst_dt != dt::f32;
  // Note [Constant scales in the int8 matmul]
  // With runtime output scales and source zero point, oneDNN 2.6 answers this matmul with its
  // generic gemm:jit; with the scales fixed at creation it takes brg:avx512_core_vnni, 11% faster
  // here (64x1024x1024: 0.184 against 0.206 ms, ONEDNN_VERBOSE), whose packed weights carry the
  // zero-point compensation. A static layer's scales and zero points are the same every call, so,
  // as the convolution does, they are part of the primitive and its cache key. The dynamic
  // linear's input scale and zero point change every batch, and a primitive per call would cost
  // far more: its output scales are the weight's alone (fixed), its zero point stays a runtime
  // value (which brgemm takes), and the input scale and the bias are applied after, in one pass
  // (dynamic_epilogue).
  const bool dynamic = !q_out;
  const bool bias_in_prim = has_bias && !dynamic;
  const double out_x_scale = dynamic ? 1.0 : x_scale, out_y_scale = dynamic ? 1.0 : y_scale;
  dn::Key key("quantized::linear");
  key.add(M).add(K).add(N).add(static_cast<int64_t>(src_dt)).add(static_cast<int64_t>(dst_dt));
  key.add(static_cast<int64_t>(p.w.per_channel)).add(static_cast<int64_t>(bias_in_prim));
  key.add(static_cast<int64_t>(relu)).add(q_out ? y_zp : int64_t{0});
  key.add(dynamic ? int64_t{-1} : x_zp);
  detail::add_scales_key(key, p.w, out_x_scale, out_y_scale);
  // ReLU after the bias: in the dynamic epilogue when that adds one.
  const bool relu_in_prim = relu && !(dynamic && has_bias);
  const dnnl::memory::desc src_md({M, K}, src_dt, tag::ab);
  const dnnl::memory::desc dst_md({M, N}, dst_dt, tag::ab);
  const dnnl::memory::desc bias_md({1, N}, dt::f32, tag::ab);
  dn::CachedPrimitive prim = dn::cached(key, [&] {
    dnnl::primitive_attr attr = dn::make_attr();
    attr.set_output_scales(p.w.per_channel ? (1 << 1) : 0, detail::requant_scales(p.w, out_x_scale, out_y_scale));
    if (dynamic) {
      attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    } else if (x_zp != 0) {
      attr.set_zero_points(DNNL_ARG_SRC, 0, {static_cast<int32_t>(x_zp)});
    }
    // Note [Output zero point as a post-op]
    // oneDNN 2.6's matmul with a runtime destination zero point runs ~70x slower (15.8 ms instead
    // of 0.21 ms for 64x1024x1024 here); adding the zero point with an eltwise_linear post-op
    // instead (a creation-time constant, part of the key) keeps the fast kernel. Like the
    // convolution's, it is added before rounding (Note [Requantization in oneDNN]).
    dnnl::post_ops po;
    if (relu_in_prim) po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    if (q_out && y_zp != 0) {
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, 1.f, static_cast<float>(y_zp));
    }
    attr.set_post_ops(po);
    const dnnl::memory::desc w_any({K, N}, dt::s8, tag::any);
    dnnl::matmul::desc d = bias_in_prim ? dnnl::matmul::desc(src_md, w_any, bias_md, dst_md)
                                        : dnnl::matmul::desc(src_md, w_any, dst_md);
    dnnl::matmul::primitive_desc pd(d, attr, dn::engine());
    return dn::CachedPrimitive{dnnl::matmul(pd), pd};
  });
  // The user's weights [N, K] row-major are the matmul's [K, N] with strides (1, K).
  const dnnl::memory::desc w_plain_md({K, N}, dt::s8, dnnl::memory::dims{1, K});
  dnnl::memory w_plain(w_plain_md, dn::engine(), p.w.ints.data_ptr());
  const dnnl::memory::desc want = prim.pd.weights_desc();
  dnnl::memory w = p.packed.get(want, w_plain);

  Tensor zp_src;
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(src_md, dn::engine(), x_ints.data_ptr())},
      {DNNL_ARG_WEIGHTS, w},
      {DNNL_ARG_DST, dnnl::memory(dst_md, dn::engine(), out.data_ptr())},
  };
  if (dynamic) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, detail::s32_scalar(static_cast<int32_t>(x_zp), zp_src));
  Tensor bias;
  if (bias_in_prim) {
    bias = detail::requant_bias(p.w, p.bias, x_scale);
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_md, dn::engine(), bias.data_ptr()));
  }
  dn::execute(prim, std::move(args));
  if (dynamic)
    cpu::dynamic_epilogue(out.data_ptr<float>(), M, N, static_cast<float>(x_scale),
                          has_bias ? p.bias.data_ptr<float>() : nullptr, relu && has_bias);
}

// The input's integers as a contiguous [M, K] tensor, checked against the packed weight.
Tensor flat_input(const Tensor& x, const LinearPackedParams& w, const char* op, std::vector<int64_t>& out_sizes) {
  TENSOR_CHECK(
      x.dim() >= 1 && x.size(-1) == w.in_features(),
      "{}: the input's last dim must be in_features = {} (weight of shape [{}, {}]), got an input of shape {} ({})", op,
      w.in_features(), w.out_features(), w.in_features(), shape_str(x.sizes()), x.dtype());
  out_sizes.assign(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = w.out_features();
  const Tensor base = x.is_quantized() ? as_underlying(x) : x;
  int64_t rows = 1;  // every dim but the last (not numel / in_features: in_features may be 0)
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  return base.contiguous().reshape({rows, w.in_features()});
}

Tensor linear_impl(const Tensor& qx, const LinearPackedParams& w, double y_scale, int64_t y_zp, bool relu,
                   const char* op) {
  detail::check_activation(qx, op);
  detail::check_output_qparams(y_scale, y_zp, qx.dtype(), op);
  std::vector<int64_t> out_sizes;
  const Tensor x = flat_input(qx, w, op, out_sizes);
  Tensor out = ::tensor::detail::empty_quantized(out_sizes, Quantizer::per_tensor(qx.dtype(), y_scale, y_zp, op));
  if (out.numel() == 0) return out;
  if (w.in_features() == 0) {  // an empty sum: requantize the bias alone
    Tensor b = w.impl()->bias.defined() ? w.impl()->bias.expand({x.size(0), w.out_features()}).reshape(out_sizes)
                                        : tensor::zeros(out_sizes);
    if (relu) b = tensor::relu(b);
    return quantize_per_tensor(b, y_scale, y_zp, qx.dtype());
  }
  const dnnl::memory::data_type t = detail::dnnl_type_of(qx.dtype());
  run_qmatmul(*w.impl(), x, t, qx.q_scale(), qx.q_zero_point(), out, t, y_scale, y_zp, relu);
  return out;
}

Tensor linear_dynamic_impl(const Tensor& x, const LinearPackedParams& w, bool reduce_range, bool relu, const char* op) {
  TENSOR_CHECK(x.defined() && !x.is_quantized() && x.dtype() == kFloat32 && x.is_cpu(),
               "{}: expected a float32 CPU input, got {}", op, x.defined() ? x.describe() : "an undefined tensor");
  std::vector<int64_t> out_sizes;
  const Tensor xf = flat_input(x, w, op, out_sizes);
  Tensor out = tensor::empty(out_sizes, TensorOptions().dtype(kFloat32));
  if (out.numel() == 0) return out;
  if (w.in_features() == 0) {
    Tensor b = w.impl()->bias.defined() ? w.impl()->bias.expand({xf.size(0), w.out_features()}).reshape(out_sizes)
                                        : tensor::zeros(out_sizes);
    return relu ? tensor::relu(b) : b;
  }
  // Note [Dynamic quantization range]: one scale for the whole batch, from its min and max (as
  // libtorch's dynamic linear); 8 bits, or 7 with reduce_range. The range and the quantization
  // (quantize_per_tensor's definition: x * (1/scale) in float32, rounded half to even) run as
  // vector loops (kernels/cpu/QuantizeKernels.cpp), so they cost a fraction of the int8 matmul.
  const float* p = xf.data_ptr<float>();
  const int64_t n = xf.numel();
  float lo = 0, hi = 0;
  TENSOR_CHECK(cpu::finite_range(p, n, &lo, &hi),
               "{}: the input {} holds NaN or infinite values; dynamic quantization needs a finite range", op,
               x.describe());
  auto [s, zp] = choose_qparams(lo, hi, 0, reduce_range ? 127 : 255);
  Tensor xq = tensor::empty(xf.sizes(), TensorOptions().dtype(kUInt8));
  uint8_t* q = xq.data_ptr<uint8_t>();
  cpu::quantize_q8(p, q, false, n, 1.0f / static_cast<float>(s), zp);
  if (reduce_range)  // the range maps to [0, 127]; rounding at its top may give 128
    for (int64_t i = 0; i < n; ++i) q[i] = std::min<uint8_t>(q[i], 127);
  run_qmatmul(*w.impl(), xq, dnnl::memory::data_type::u8, s, zp, out, dnnl::memory::data_type::f32, 1.0, 0, relu);
  return out;
}

}  // namespace

std::tuple<double, int64_t> choose_qparams(double x_min, double x_max, int64_t qmin, int64_t qmax) {
  x_min = std::min(x_min, 0.0);
  x_max = std::max(x_max, 0.0);
  // The scale is a float32 (as libtorch's, and as quantize_per_tensor's reciprocal needs).
  double scale = static_cast<float>((x_max - x_min) / static_cast<double>(qmax - qmin));
  if (scale == 0 || !std::isfinite(1.0f / static_cast<float>(scale))) scale = 0.1;
  const double zp_real = static_cast<double>(qmin) - x_min / scale;
  const int64_t zp =
      static_cast<int64_t>(std::clamp(std::nearbyint(zp_real), static_cast<double>(qmin), static_cast<double>(qmax)));
  return {scale, zp};
}

Tensor linear(const Tensor& qx, const LinearPackedParams& w, double output_scale, int64_t output_zero_point) {
  return linear_impl(qx, w, output_scale, output_zero_point, false, "quantized::linear");
}
Tensor linear_relu(const Tensor& qx, const LinearPackedParams& w, double output_scale, int64_t output_zero_point) {
  return linear_impl(qx, w, output_scale, output_zero_point, true, "quantized::linear_relu");
}
Tensor linear_dynamic(const Tensor& x, const LinearPackedParams& w, bool reduce_range) {
  return linear_dynamic_impl(x, w, reduce_range, false, "quantized::linear_dynamic");
}
Tensor linear_relu_dynamic(const Tensor& x, const LinearPackedParams& w, bool reduce_range) {
  return linear_dynamic_impl(x, w, reduce_range, true, "quantized::linear_relu_dynamic");
}

}  // namespace tensor::quantized
