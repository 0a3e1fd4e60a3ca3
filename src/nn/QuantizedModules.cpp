// The quantized modules of tensor/nn/quantized.h: thin holders of packed weights and the
// output's scale and zero point around the kernels of tensor::quantized.
#include <cmath>
#include <ostream>

#include "src/core/Check.h"
#include "src/core/Quantizer.h"
#include "tensor/nn/quantized.h"
#include "tensor/ops.h"

namespace tensor::nn::quantized {
namespace q = ::tensor::quantized;

namespace {
// libtorch's initial weight: qint8 zeros with scale 1 (and a zero bias), until set_weight_bias.
Tensor zero_qweight(std::vector<int64_t> sizes) { return quantize_per_tensor(tensor::zeros(sizes), 1.0, 0, kQInt8); }
std::optional<Tensor> zero_bias(bool with_bias, int64_t out) {
  return with_bias ? std::optional<Tensor>(tensor::zeros({out})) : std::nullopt;
}
const char* qscheme_name(const Tensor& w) {
  return w.qscheme() == QScheme::PerChannelAffine ? "per_channel_affine" : "per_tensor_affine";
}

// Note [Quantized module state]: the weight and bias live in buffers; the packed params cache them.
void set_weight_bias_buffers(OrderedDict<std::string, Tensor>& buffers, const Tensor& qweight,
                             const std::optional<Tensor>& bias) {
  buffers.insert_or_assign("weight", qweight);
  if (bias && bias->defined())
    buffers.insert_or_assign("bias", *bias);
  else if (buffers.contains("bias"))
    buffers.erase("bias");
}
std::optional<Tensor> bias_buffer(const OrderedDict<std::string, Tensor>& buffers) {
  const Tensor* b = buffers.find("bias");
  return b ? std::optional<Tensor>(*b) : std::nullopt;
}
// Whether the buffers moved on since they were packed (versions recorded at packing).
bool stale(const OrderedDict<std::string, Tensor>& buffers, uint32_t weight_version, uint32_t bias_version) {
  const Tensor* b = buffers.find("bias");
  return buffers["weight"]._version() != weight_version || (b && b->_version() != bias_version);
}
void record_versions(const OrderedDict<std::string, Tensor>& buffers, uint32_t& weight_version,
                     uint32_t& bias_version) {
  weight_version = buffers["weight"]._version();
  const Tensor* b = buffers.find("bias");
  bias_version = b ? b->_version() : 0;
}
// The output's scale (float64) and zero point (int64) as 0-dim buffers.
OutputQParam<double> scale_buffer(Module& m) {
  return OutputQParam<double>(m.register_buffer("scale", tensor::scalar_tensor(1.0, TensorOptions().dtype(kFloat64))));
}
OutputQParam<int64_t> zero_point_buffer(Module& m) {
  return OutputQParam<int64_t>(
      m.register_buffer("zero_point", tensor::scalar_tensor(0, TensorOptions().dtype(kInt64))));
}
}  // namespace

// ---- Linear ----

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias)
    : in_features(in), out_features(out), scale(scale_buffer(*this)), zero_point(zero_point_buffer(*this)) {
  TENSOR_CHECK(in >= 0 && out >= 0,
               "nn::quantized::Linear: in_features and out_features must be non-negative, got {} "
               "and {}",
               in, out);
  set_weight_bias(zero_qweight({out, in}), zero_bias(with_bias, out));
}

void LinearImpl::set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias) {
  TENSOR_CHECK(
      qweight.defined() && qweight.dim() == 2 && qweight.size(0) == out_features && qweight.size(1) == in_features,
      "nn::quantized::Linear::set_weight_bias: expected a weight of shape [{}, {}], got {}", out_features, in_features,
      qweight.defined() ? qweight.describe() : "an undefined tensor");
  packed = q::linear_prepack(qweight, bias);
  set_weight_bias_buffers(buffers_, qweight, bias);
  record_versions(buffers_, weight_version_, bias_version_);
}
Tensor LinearImpl::weight() const { return buffers_["weight"]; }
std::optional<Tensor> LinearImpl::bias() const { return bias_buffer(buffers_); }
const q::LinearPackedParams& LinearImpl::packed_params() {
  if (stale(buffers_, weight_version_, bias_version_)) set_weight_bias(weight(), bias());
  return *packed;
}
Tensor LinearImpl::forward(const Tensor& qx) { return q::linear(qx, packed_params(), scale, zero_point); }
void LinearImpl::pretty_print(std::ostream& os) const {
  os << type_name() << "(in_features=" << in_features << ", out_features=" << out_features << ", scale=" << scale
     << ", zero_point=" << zero_point << ", qscheme=" << qscheme_name(weight()) << ")";
}

Tensor LinearReLUImpl::forward(const Tensor& qx) { return q::linear_relu(qx, packed_params(), scale, zero_point); }

// ---- convolutions ----

ConvNdImpl::ConvNdImpl(int64_t dims, int64_t in, int64_t out, std::vector<int64_t> k, std::vector<int64_t> s,
                       std::vector<int64_t> p, std::vector<int64_t> d, int64_t g, bool with_bias, Fuse f)
    : spatial_dims(dims),
      in_channels(in),
      out_channels(out),
      groups(g),
      kernel_size(std::move(k)),
      stride(std::move(s)),
      padding(std::move(p)),
      dilation(std::move(d)),
      fuse(f),
      scale(scale_buffer(*this)),
      zero_point(zero_point_buffer(*this)) {
  TENSOR_CHECK(static_cast<int64_t>(kernel_size.size()) == dims,
               "nn::quantized::Conv{}d: expected kernel_size with {} values, got {}", dims, dims,
               ::tensor::detail::shape_str(kernel_size));
  TENSOR_CHECK(g >= 1 && in % g == 0 && out % g == 0,
               "nn::quantized::Conv{}d: groups = {} must be positive and divide in_channels = {} and out_channels = {}",
               dims, g, in, out);
  std::vector<int64_t> wsz{out, in / g};
  wsz.insert(wsz.end(), kernel_size.begin(), kernel_size.end());
  set_weight_bias(zero_qweight(wsz), zero_bias(with_bias, out));
}

void ConvNdImpl::set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias) {
  std::vector<int64_t> want{out_channels, in_channels / groups};
  want.insert(want.end(), kernel_size.begin(), kernel_size.end());
  TENSOR_CHECK(qweight.defined() && qweight.sizes() == IntArrayRef(want),
               "nn::quantized::Conv{}d::set_weight_bias: expected a weight of shape {}, got {}", spatial_dims,
               ::tensor::detail::shape_str(want), qweight.defined() ? qweight.describe() : "an undefined tensor");
  packed = q::conv_prepack(qweight, bias, stride, padding, dilation, groups);
  set_weight_bias_buffers(buffers_, qweight, bias);
  record_versions(buffers_, weight_version_, bias_version_);
}
Tensor ConvNdImpl::weight() const { return buffers_["weight"]; }
std::optional<Tensor> ConvNdImpl::bias() const { return bias_buffer(buffers_); }
const q::ConvPackedParams& ConvNdImpl::packed_params() {
  if (stale(buffers_, weight_version_, bias_version_)) set_weight_bias(weight(), bias());
  return *packed;
}

Tensor ConvNdImpl::forward(const Tensor& qx) {
  TENSOR_CHECK(fuse == Fuse::None || fuse == Fuse::ReLU,
               "nn::quantized::ConvAdd{}d: forward needs the residual: call forward(qx, qresidual)",
               fuse == Fuse::AddReLU ? "ReLU2" : "2");
  const q::ConvPackedParams& w = packed_params();
  return fuse == Fuse::ReLU ? q::conv_relu(qx, w, scale, zero_point) : q::conv(qx, w, scale, zero_point);
}
Tensor ConvNdImpl::forward(const Tensor& qx, const Tensor& qresidual) {
  TENSOR_CHECK(fuse == Fuse::Add || fuse == Fuse::AddReLU,
               "nn::quantized::Conv{}d: forward(qx, qresidual) is for ConvAdd2d / ConvAddReLU2d; this module takes "
               "one input",
               spatial_dims);
  const q::ConvPackedParams& w = packed_params();
  return fuse == Fuse::AddReLU ? q::conv_add_relu(qx, w, qresidual, scale, zero_point)
                               : q::conv_add(qx, w, qresidual, scale, zero_point);
}
void ConvNdImpl::pretty_print(std::ostream& os) const {
  static const char* const kFuse[] = {"Conv", "ConvReLU", "ConvAdd", "ConvAddReLU"};
  auto list = [&](const std::vector<int64_t>& v) {
    std::string r = "(";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
    return r + (v.size() == 1 ? ",)" : ")");
  };
  os << "Quantized" << kFuse[static_cast<int>(fuse)] << spatial_dims << "d(" << in_channels << ", " << out_channels
     << ", kernel_size=" << list(kernel_size) << ", stride=" << list(stride) << ", scale=" << scale
     << ", zero_point=" << zero_point << ", padding=" << list(padding) << ", dilation=" << list(dilation)
     << ", groups=" << groups << ")";
}

// ---- FloatFunctional / QFunctional (Note [FloatFunctional]) ----

FloatFunctionalImpl::FloatFunctionalImpl() = default;

Tensor FloatFunctionalImpl::observe(const Tensor& result) {
  if (!intercepts_forward()) return result;
  return call_intercepted(result, [](const Tensor& r) { return r; });
}
Tensor FloatFunctionalImpl::add(const Tensor& a, const Tensor& b) {
  return redirect_ ? redirect_->add(a, b) : observe(a + b);
}
Tensor FloatFunctionalImpl::add_relu(const Tensor& a, const Tensor& b) {
  return redirect_ ? redirect_->add_relu(a, b) : observe(tensor::relu(a + b));
}
Tensor FloatFunctionalImpl::mul(const Tensor& a, const Tensor& b) {
  return redirect_ ? redirect_->mul(a, b) : observe(a * b);
}
Tensor FloatFunctionalImpl::mul_relu(const Tensor& a, const Tensor& b) {
  return redirect_ ? redirect_->mul_relu(a, b) : observe(tensor::relu(a * b));
}
Tensor FloatFunctionalImpl::cat(TensorList xs, int64_t dim) {
  return redirect_ ? redirect_->cat(xs, dim) : observe(tensor::cat(xs, dim));
}
Tensor FloatFunctionalImpl::add_scalar(const Tensor& a, double c) {
  return redirect_ ? redirect_->add_scalar(a, c) : a + c;
}
Tensor FloatFunctionalImpl::mul_scalar(const Tensor& a, double c) {
  return redirect_ ? redirect_->mul_scalar(a, c) : a * c;
}
void FloatFunctionalImpl::pretty_print(std::ostream& os) const { os << "FloatFunctional()"; }

QFunctionalImpl::QFunctionalImpl(double s, int64_t zp)
    : scale(scale_buffer(*this)), zero_point(zero_point_buffer(*this)) {
  scale = s;
  zero_point = zp;
}
Tensor QFunctionalImpl::add(const Tensor& qa, const Tensor& qb) { return q::add(qa, qb, scale, zero_point); }
Tensor QFunctionalImpl::add_relu(const Tensor& qa, const Tensor& qb) { return q::add_relu(qa, qb, scale, zero_point); }
Tensor QFunctionalImpl::mul(const Tensor& qa, const Tensor& qb) { return q::mul(qa, qb, scale, zero_point); }
Tensor QFunctionalImpl::mul_relu(const Tensor& qa, const Tensor& qb) { return q::mul_relu(qa, qb, scale, zero_point); }
Tensor QFunctionalImpl::cat(TensorList qxs, int64_t dim) { return q::cat(qxs, dim, scale, zero_point); }

namespace {
void check_per_tensor(const Tensor& qa, const char* op) {
  TENSOR_CHECK(qa.defined() && qa.is_quantized() && qa.qscheme() == QScheme::PerTensorAffine,
               "{}: expected a per-tensor quantized tensor, got {}", op,
               qa.defined() ? qa.describe() : "an undefined tensor");
}
}  // namespace

Tensor QFunctionalImpl::add_scalar(const Tensor& qa, double c) {
  constexpr const char* op = "nn::quantized::QFunctional::add_scalar";
  check_per_tensor(qa, op);
  TENSOR_CHECK(std::isfinite(c), "{}: the scalar must be finite, got {}", op, c);
  const double s = qa.q_scale();
  const int64_t z = qa.q_zero_point();
  const double lo = static_cast<double>(::tensor::detail::qmin(qa.dtype()));
  const double hi = static_cast<double>(::tensor::detail::qmax(qa.dtype()));
  // The shifted zero point z - c_q, in double (c_q may be huge); in range, the integers stay.
  const double zq = static_cast<double>(z) - std::nearbyint(c / s);
  if (zq >= lo && zq <= hi) return _make_per_tensor_quantized_tensor(qa.int_repr(), s, static_cast<int64_t>(zq));
  // Out of range: the real values (q - zq) * s span [(lo - zq) s, (hi - zq) s], all of one sign;
  // map the span from 0 to its far end onto the whole range, 0 at the near end (libtorch's rule).
  const bool up = zq < lo;
  const double s2 = (up ? hi - zq : zq - lo) / (hi - lo) * s;
  const int64_t z2 = static_cast<int64_t>(up ? lo : hi);
  const Tensor real = (qa.int_repr().to(kFloat64) - zq) * s;
  const Tensor ints = (real / s2).round().add(static_cast<double>(z2)).clamp(lo, hi);
  return _make_per_tensor_quantized_tensor(ints.to(to_underlying(qa.dtype())), s2, z2);
}

Tensor QFunctionalImpl::mul_scalar(const Tensor& qa, double c) {
  constexpr const char* op = "nn::quantized::QFunctional::mul_scalar";
  check_per_tensor(qa, op);
  TENSOR_CHECK(std::isfinite(c), "{}: the scalar must be finite, got {}", op, c);
  const Tensor ints = qa.int_repr();
  if (c == 0) return _make_per_tensor_quantized_tensor(tensor::zeros_like(ints), 1.0, 0);
  if (c > 0) return _make_per_tensor_quantized_tensor(ints, qa.q_scale() * c, qa.q_zero_point());
  // (q' - z') |c| s = (z - q) |c| s = c (q - z) s with q' = qmin + qmax - q, z' = qmin + qmax - z.
  const int64_t mirror = ::tensor::detail::qmin(qa.dtype()) + ::tensor::detail::qmax(qa.dtype());
  const Tensor flipped = (ints.to(kInt64).neg().add(mirror)).to(ints.dtype());
  return _make_per_tensor_quantized_tensor(flipped, qa.q_scale() * -c, mirror - qa.q_zero_point());
}

void QFunctionalImpl::pretty_print(std::ostream& os) const {
  os << "QFunctional(scale=" << scale << ", zero_point=" << zero_point << ")";
}

// ---- dynamic::Linear ----

namespace dynamic {
LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  TENSOR_CHECK(in >= 0 && out >= 0,
               "nn::quantized::dynamic::Linear: in_features and out_features must be non-negative, got {} and {}", in,
               out);
  set_weight_bias(zero_qweight({out, in}), zero_bias(with_bias, out));
}
void LinearImpl::set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias) {
  TENSOR_CHECK(
      qweight.defined() && qweight.dim() == 2 && qweight.size(0) == out_features && qweight.size(1) == in_features,
      "nn::quantized::dynamic::Linear::set_weight_bias: expected a weight of shape [{}, {}], got {}", out_features,
      in_features, qweight.defined() ? qweight.describe() : "an undefined tensor");
  packed = q::linear_prepack(qweight, bias);
  set_weight_bias_buffers(buffers_, qweight, bias);
  record_versions(buffers_, weight_version_, bias_version_);
}
Tensor LinearImpl::weight() const { return buffers_["weight"]; }
std::optional<Tensor> LinearImpl::bias() const { return bias_buffer(buffers_); }
const q::LinearPackedParams& LinearImpl::packed_params() {
  if (stale(buffers_, weight_version_, bias_version_)) set_weight_bias(weight(), bias());
  return *packed;
}
Tensor LinearImpl::forward(const Tensor& x) { return q::linear_dynamic(x, packed_params(), reduce_range); }
void LinearImpl::pretty_print(std::ostream& os) const {
  os << "DynamicQuantizedLinear(in_features=" << in_features << ", out_features=" << out_features
     << ", dtype=torch.qint8, qscheme=" << qscheme_name(weight()) << ")";
}
}  // namespace dynamic

}  // namespace tensor::nn::quantized
