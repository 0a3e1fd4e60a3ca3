// The quantized modules of tensor/nn/quantized.h: thin holders of packed weights and the
// output's scale and zero point around the kernels of tensor::quantized.
#include <ostream>

#include "src/core/Check.h"
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
}  // namespace

// ---- Linear ----

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  TENSOR_CHECK(in >= 0 && out >= 0,
               "nn::quantized::Linear: in_features and out_features must be non-negative, got {} "
               "and {}",
               in, out);
  packed = q::linear_prepack(zero_qweight({out, in}), zero_bias(with_bias, out));
}

void LinearImpl::set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias) {
  TENSOR_CHECK(
      qweight.defined() && qweight.dim() == 2 && qweight.size(0) == out_features && qweight.size(1) == in_features,
      "nn::quantized::Linear::set_weight_bias: expected a weight of shape [{}, {}], got {}", out_features, in_features,
      qweight.defined() ? qweight.describe() : "an undefined tensor");
  packed = q::linear_prepack(qweight, bias);
}
Tensor LinearImpl::weight() const { return std::get<0>(packed->unpack()); }
std::optional<Tensor> LinearImpl::bias() const { return std::get<1>(packed->unpack()); }
Tensor LinearImpl::forward(const Tensor& qx) { return q::linear(qx, *packed, scale, zero_point); }
void LinearImpl::pretty_print(std::ostream& os) const {
  os << type_name() << "(in_features=" << in_features << ", out_features=" << out_features << ", scale=" << scale
     << ", zero_point=" << zero_point << ", qscheme=" << qscheme_name(weight()) << ")";
}

Tensor LinearReLUImpl::forward(const Tensor& qx) { return q::linear_relu(qx, *packed, scale, zero_point); }

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
      fuse(f) {
  TENSOR_CHECK(static_cast<int64_t>(kernel_size.size()) == dims,
               "nn::quantized::Conv{}d: expected kernel_size with {} values, got {}", dims, dims,
               ::tensor::detail::shape_str(kernel_size));
  TENSOR_CHECK(g >= 1 && in % g == 0 && out % g == 0,
               "nn::quantized::Conv{}d: groups = {} must be positive and divide in_channels = {} and out_channels = {}",
               dims, g, in, out);
  std::vector<int64_t> wsz{out, in / g};
  wsz.insert(wsz.end(), kernel_size.begin(), kernel_size.end());
  packed = q::conv_prepack(zero_qweight(wsz), zero_bias(with_bias, out), stride, padding, dilation, groups);
}

void ConvNdImpl::set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias) {
  std::vector<int64_t> want{out_channels, in_channels / groups};
  want.insert(want.end(), kernel_size.begin(), kernel_size.end());
  TENSOR_CHECK(qweight.defined() && qweight.sizes() == IntArrayRef(want),
               "nn::quantized::Conv{}d::set_weight_bias: expected a weight of shape {}, got {}", spatial_dims,
               ::tensor::detail::shape_str(want), qweight.defined() ? qweight.describe() : "an undefined tensor");
  packed = q::conv_prepack(qweight, bias, stride, padding, dilation, groups);
}
Tensor ConvNdImpl::weight() const { return std::get<0>(packed->unpack()); }
std::optional<Tensor> ConvNdImpl::bias() const { return std::get<1>(packed->unpack()); }

Tensor ConvNdImpl::forward(const Tensor& qx) {
  TENSOR_CHECK(fuse == Fuse::None || fuse == Fuse::ReLU,
               "nn::quantized::ConvAdd{}d: forward needs the residual: call forward(qx, qresidual)",
               fuse == Fuse::AddReLU ? "ReLU2" : "2");
  return fuse == Fuse::ReLU ? q::conv_relu(qx, *packed, scale, zero_point) : q::conv(qx, *packed, scale, zero_point);
}
Tensor ConvNdImpl::forward(const Tensor& qx, const Tensor& qresidual) {
  TENSOR_CHECK(fuse == Fuse::Add || fuse == Fuse::AddReLU,
               "nn::quantized::Conv{}d: forward(qx, qresidual) is for ConvAdd2d / ConvAddReLU2d; this module takes "
               "one input",
               spatial_dims);
  return fuse == Fuse::AddReLU ? q::conv_add_relu(qx, *packed, qresidual, scale, zero_point)
                               : q::conv_add(qx, *packed, qresidual, scale, zero_point);
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

// ---- dynamic::Linear ----

namespace dynamic {
LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  TENSOR_CHECK(in >= 0 && out >= 0,
               "nn::quantized::dynamic::Linear: in_features and out_features must be non-negative, got {} and {}", in,
               out);
  packed = q::linear_prepack(zero_qweight({out, in}), zero_bias(with_bias, out));
}
void LinearImpl::set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias) {
  TENSOR_CHECK(
      qweight.defined() && qweight.dim() == 2 && qweight.size(0) == out_features && qweight.size(1) == in_features,
      "nn::quantized::dynamic::Linear::set_weight_bias: expected a weight of shape [{}, {}], got {}", out_features,
      in_features, qweight.defined() ? qweight.describe() : "an undefined tensor");
  packed = q::linear_prepack(qweight, bias);
}
Tensor LinearImpl::weight() const { return std::get<0>(packed->unpack()); }
std::optional<Tensor> LinearImpl::bias() const { return std::get<1>(packed->unpack()); }
Tensor LinearImpl::forward(const Tensor& x) { return q::linear_dynamic(x, *packed, reduce_range); }
void LinearImpl::pretty_print(std::ostream& os) const {
  os << "DynamicQuantizedLinear(in_features=" << in_features << ", out_features=" << out_features
     << ", dtype=torch.qint8, qscheme=" << qscheme_name(weight()) << ")";
}
}  // namespace dynamic

}  // namespace tensor::nn::quantized
