// Quantized convolution on oneDNN's int8 convolution (tensor::quantized::conv, conv_relu,
// conv_add, conv_add_relu; tensor/nn/quantized.h): 1 to 3 spatial dims, groups, per-channel
// weights, ReLU and the residual add fused as post-ops. Requantization: Note [Requantization in
// oneDNN] in src/ops/QuantizedLinear.cpp; weights: Note [Weights packed once].
//
// Note [Channels-last quantized convolution]
// oneDNN's int8 convolutions run on channels-last activations (nwc/nhwc/ndhwc); given NCHW they
// either reorder inside or fall back to a reference kernel. So the input is read through a
// channels-last view (no copy when it already is one, as the output of a previous quantized
// conv is) and the output is allocated channels-last and returned as an [N, C, spatial...] view
// of it. Later ops that want contiguous NCHW integers call contiguous() as usual.
#include <numeric>

#include "src/core/Check.h"
#include "src/core/Quantizer.h"
#include "src/ops/QuantizedOneDNN.h"
#include "tensor/nn/quantized.h"
#include "tensor/ops.h"

namespace tensor::quantized {
namespace dn = ::tensor::cpu::onednn;
using ::tensor::detail::as_underlying;
using ::tensor::detail::shape_str;

struct ConvPackedParams::Impl {
  detail::CheckedWeight w;
  Tensor bias;
  int64_t spatial = 2, groups = 1, out = 0, in_per_group = 0;
  std::vector<int64_t> kernel, stride, padding, dilation;
  detail::PackedWeights packed;
};

std::tuple<Tensor, std::optional<Tensor>> ConvPackedParams::unpack() const {
  return {impl_->w.qweight, impl_->bias.defined() ? std::optional<Tensor>(impl_->bias) : std::nullopt};
}
std::vector<int64_t> ConvPackedParams::stride() const { return impl_->stride; }
std::vector<int64_t> ConvPackedParams::padding() const { return impl_->padding; }
std::vector<int64_t> ConvPackedParams::dilation() const { return impl_->dilation; }
int64_t ConvPackedParams::groups() const { return impl_->groups; }

namespace {
std::vector<int64_t> expand_param(IntArrayRef v, int64_t n, const char* name, int64_t min, const char* op) {
  TENSOR_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == n,
               "{}: expected {} with 1 or {} values (one per spatial dim), got {}", op, name, n, shape_str(v));
  std::vector<int64_t> r(static_cast<size_t>(n), v[0]);
  if (v.size() != 1) r.assign(v.begin(), v.end());
  for (int64_t x : r) TENSOR_CHECK(x >= min, "{}: {} must be >= {}, got {}", op, name, min, shape_str(v));
  return r;
}
}  // namespace

std::shared_ptr<ConvPackedParams> conv_prepack(const Tensor& qweight, const std::optional<Tensor>& bias,
                                               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                               int64_t groups) {
  constexpr const char* op = "quantized::conv_prepack";
  auto p = std::make_shared<ConvPackedParams::Impl>();
  p->w = detail::check_weight(qweight, 3, 5, op);
  p->spatial = qweight.dim() - 2;
  p->out = qweight.size(0);
  p->in_per_group = qweight.size(1);
  TENSOR_CHECK(groups >= 1 && p->out % groups == 0,
               "{}: groups must be positive and divide the {} output channels (weight of shape {}), got {}", op, p->out,
               shape_str(qweight.sizes()), groups);
  p->groups = groups;
  p->kernel.assign(qweight.sizes().begin() + 2, qweight.sizes().end());
  for (int64_t k : p->kernel)
    TENSOR_CHECK(k > 0, "{}: the weight's kernel size must be positive, got shape {}", op, shape_str(qweight.sizes()));
  p->stride = expand_param(stride, p->spatial, "stride", 1, op);
  p->padding = expand_param(padding, p->spatial, "padding", 0, op);
  p->dilation = expand_param(dilation, p->spatial, "dilation", 1, op);
  p->bias = detail::check_bias(bias, p->out, op);
  return std::make_shared<ConvPackedParams>(std::move(p));
}

namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

tag channels_last_tag(int64_t spatial) { return spatial == 1 ? tag::nwc : spatial == 2 ? tag::nhwc : tag::ndhwc; }
tag weight_tag(int64_t spatial, bool grouped) {
  if (grouped) return spatial == 1 ? tag::goiw : spatial == 2 ? tag::goihw : tag::goidhw;
  return spatial == 1 ? tag::oiw : spatial == 2 ? tag::oihw : tag::oidhw;
}

Tensor conv_impl(const Tensor& qx, const ConvPackedParams& wp, const Tensor* residual, double y_scale, int64_t y_zp,
                 bool relu, const char* op) {
  ConvPackedParams::Impl& p = *wp.impl();
  detail::check_activation(qx, op);
  detail::check_output_qparams(y_scale, y_zp, qx.dtype(), op);
  const int64_t S = p.spatial;
  TENSOR_CHECK(qx.dim() == S + 2,
               "{}: expected a batched input [N, C, {} spatial dims] for a weight of shape {}, got shape {} ({})", op,
               S, shape_str(p.w.qweight.sizes()), shape_str(qx.sizes()), qx.dtype());
  const int64_t N = qx.size(0), C = qx.size(1);
  TENSOR_CHECK(C == p.in_per_group * p.groups,
               "{}: the input has {} channels but the weight of shape {} with groups = {} expects {}", op, C,
               shape_str(p.w.qweight.sizes()), p.groups, p.in_per_group * p.groups);
  std::vector<int64_t> out_sp(static_cast<size_t>(S)), pad_r(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; ++i) {
    const int64_t in = qx.size(2 + i), k = p.kernel[i], d = p.dilation[i], s = p.stride[i], pad = p.padding[i];
    const int64_t span = d * (k - 1) + 1;
    TENSOR_CHECK(in + 2 * pad >= span,
                 "{}: the input of shape {} padded by {} is smaller than the dilated kernel ({} with dilation {}) in "
                 "spatial dim {}",
                 op, shape_str(qx.sizes()), shape_str(p.padding), shape_str(p.kernel), shape_str(p.dilation), i);
    out_sp[i] = (in + 2 * pad - span) / s + 1;
    pad_r[i] = (out_sp[i] - 1) * s + span - in - pad;
  }
  // Channels-last permutation (Note [Channels-last quantized convolution]).
  std::vector<int64_t> to_cl{0}, from_cl{0, S + 1};
  for (int64_t i = 0; i < S; ++i) to_cl.push_back(2 + i), from_cl.push_back(1 + i);
  to_cl.push_back(1);
  std::vector<int64_t> out_cl_sizes{N};
  out_cl_sizes.insert(out_cl_sizes.end(), out_sp.begin(), out_sp.end());
  out_cl_sizes.push_back(p.out);
  Tensor out_cl = ::tensor::detail::empty_quantized(out_cl_sizes, Quantizer::per_tensor(qx.dtype(), y_scale, y_zp, op));
  Tensor out = out_cl.permute(from_cl);

  float sum_scale = 0;
  int32_t sum_zp = 0;
  if (residual) {
    detail::check_activation(*residual, op, "residual");
    TENSOR_CHECK(residual->dtype() == qx.dtype() && residual->sizes() == out.sizes(),
                 "{}: the residual must have the output's dtype {} and shape {}, got {} of shape {}", op, qx.dtype(),
                 shape_str(out.sizes()), residual->dtype(), shape_str(residual->sizes()));
    sum_scale = static_cast<float>(residual->q_scale() / y_scale);
    sum_zp = static_cast<int32_t>(residual->q_zero_point());
    as_underlying(out).copy_(as_underlying(*residual));
  }
  if (out.numel() == 0) return out;

  const Tensor x_cl = as_underlying(qx).permute(to_cl).contiguous();
  const dt src_dt = detail::dnnl_type_of(qx.dtype());
  dnnl::memory::dims src_dims{N, C}, dst_dims{N, p.out}, w_dims, strides, dil, pl, pr;
  for (int64_t i = 0; i < S; ++i) {
    src_dims.push_back(qx.size(2 + i));
    dst_dims.push_back(out_sp[i]);
    strides.push_back(p.stride[i]);
    dil.push_back(p.dilation[i] - 1);
    pl.push_back(p.padding[i]);
    pr.push_back(pad_r[i]);
  }
  const bool grouped = p.groups > 1;
  if (grouped)
    w_dims = {p.groups, p.out / p.groups, p.in_per_group};
  else
    w_dims = {p.out, p.in_per_group};
  w_dims.insert(w_dims.end(), p.kernel.begin(), p.kernel.end());
  const dnnl::memory::desc src_md(src_dims, src_dt, channels_last_tag(S));
  const dnnl::memory::desc dst_md(dst_dims, src_dt, channels_last_tag(S));
  const dnnl::memory::desc bias_md({p.out}, dt::f32, tag::a);
  const bool has_bias = p.bias.defined();

  // oneDNN 2.6's int8 convolutions take their output scales at creation only (runtime scales
  // find no implementation), so the scales are part of the key: a module with fixed input and
  // output parameters makes its primitive once. A zero input zero point is left out of the
  // attributes, which lets oneDNN pick its brgemm kernels (a nonzero one needs jit_int8's
  // compensation).
  const bool src_zp = qx.q_zero_point() != 0;
  dn::Key key("quantized::conv");
  detail::add_scales_key(key, p.w, qx.q_scale(), y_scale);
  key.add(static_cast<int64_t>(src_zp));
  key.add(IntArrayRef(src_dims)).add(IntArrayRef(w_dims)).add(IntArrayRef(strides)).add(IntArrayRef(dil));
  key.add(IntArrayRef(pl)).add(IntArrayRef(pr)).add(static_cast<int64_t>(src_dt));
  key.add(static_cast<int64_t>(p.w.per_channel)).add(static_cast<int64_t>(has_bias)).add(static_cast<int64_t>(relu));
  key.add(static_cast<int64_t>(residual != nullptr))
      .add(static_cast<double>(sum_scale))
      .add(static_cast<int64_t>(sum_zp));
  dn::CachedPrimitive prim = dn::cached(key, [&] {
    dnnl::primitive_attr attr = dn::make_attr();
    attr.set_output_scales(p.w.per_channel ? (1 << 1) : 0, detail::requant_scales(p.w, qx.q_scale(), y_scale));
    if (src_zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    dnnl::post_ops po;
    if (residual) po.append_sum(sum_scale, sum_zp, src_dt);
    if (relu) po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(po);
    const dnnl::memory::desc w_any(w_dims, dt::s8, tag::any);
    auto d =
        has_bias
            ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                              src_md, w_any, bias_md, dst_md, strides, dil, pl, pr)
            : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                              src_md, w_any, dst_md, strides, dil, pl, pr);
    dnnl::convolution_forward::primitive_desc pd(d, attr, dn::engine());
    return dn::CachedPrimitive{dnnl::convolution_forward(pd), pd};
  });
  const dnnl::memory::desc w_plain_md(w_dims, dt::s8, weight_tag(S, grouped));
  dnnl::memory w_plain(w_plain_md, dn::engine(), p.w.ints.data_ptr());
  dnnl::memory w = p.packed.get(prim.pd.weights_desc(), w_plain);

  Tensor zp_src, zp_dst;
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(src_md, dn::engine(), x_cl.data_ptr())},
      {DNNL_ARG_WEIGHTS, w},
      {DNNL_ARG_DST, dnnl::memory(dst_md, dn::engine(), out_cl.data_ptr())},
      {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, detail::s32_scalar(static_cast<int32_t>(y_zp), zp_dst)},
  };
  if (src_zp) {
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                 detail::s32_scalar(static_cast<int32_t>(qx.q_zero_point()), zp_src));
  }
  const Tensor bias = detail::requant_bias(p.w, p.bias, qx.q_scale());
  if (has_bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_md, dn::engine(), bias.data_ptr()));
  dn::execute(prim, std::move(args));
  return out;
}
}  // namespace

Tensor conv(const Tensor& qx, const ConvPackedParams& w, double output_scale, int64_t output_zero_point) {
  return conv_impl(qx, w, nullptr, output_scale, output_zero_point, false, "quantized::conv");
}
Tensor conv_relu(const Tensor& qx, const ConvPackedParams& w, double output_scale, int64_t output_zero_point) {
  return conv_impl(qx, w, nullptr, output_scale, output_zero_point, true, "quantized::conv_relu");
}
Tensor conv_add(const Tensor& qx, const ConvPackedParams& w, const Tensor& qresidual, double output_scale,
                int64_t output_zero_point) {
  return conv_impl(qx, w, &qresidual, output_scale, output_zero_point, false, "quantized::conv_add");
}
Tensor conv_add_relu(const Tensor& qx, const ConvPackedParams& w, const Tensor& qresidual, double output_scale,
                     int64_t output_zero_point) {
  return conv_impl(qx, w, &qresidual, output_scale, output_zero_point, true, "quantized::conv_add_relu");
}

}  // namespace tensor::quantized
