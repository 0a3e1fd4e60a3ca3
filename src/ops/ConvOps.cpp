// Front ends of the convolutions: argument checks (errors name the op, the shapes and dtypes),
// int-or-list parameters, "valid"/"same" padding, unbatched inputs, output shapes, and the
// dispatcher table (src/ops/ConvOps.h) whose CPU kernels pick oneDNN (float32, bfloat16; float16
// through float32) or the reference loops (float64).
#include "src/ops/ConvOps.h"
#include "src/cpu/Conv.h"

#include <algorithm>

#include "src/core/Check.h"
#include "src/cpu/Layout.h"
#include "tensor/conv.h"
#include "tensor/ops.h"

namespace tensor {

namespace ops {
namespace {

using cpu::ConvParams;

/// Output spatial sizes (Note [Convolution padding]).
DimVector output_sizes(const Tensor& input, const Tensor& weight, const ConvParams& p) {
  DimVector out{input.size(0), p.transposed ? weight.size(1) * p.groups : weight.size(0)};
  for (int64_t i = 0; i < p.spatial(); ++i) {
    const int64_t in = input.size(2 + i), k = p.dilation[i] * (weight.size(2 + i) - 1) + 1;
    out.push_back(p.transposed ? (in - 1) * p.stride[i] - p.pad_l[i] - p.pad_r[i] + k
                               : (in + p.pad_l[i] + p.pad_r[i] - k) / p.stride[i] + 1);
  }
  return out;
}

/// An activation-shaped result laid out as `like` prefers (Note [Channels-last layout]).
Tensor empty_like_layout(IntArrayRef sizes, const Tensor& like, ScalarType t) {
  return cpu::empty_in_layout_of(sizes, like, like.options().dtype(t));
}

ConvParams make_params(IntArrayRef stride, IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation,
                       bool transposed, int64_t groups) {
  ConvParams p;
  p.stride = stride;
  p.pad_l = pad_l;
  p.pad_r = pad_r;
  p.dilation = dilation;
  p.transposed = transposed;
  p.groups = groups;
  return p;
}

/// The batch and spatial dims, over which a bias gradient sums.
DimVector channel_reduce_dims(const Tensor& act) {
  DimVector dims{0};
  for (int64_t i = 2; i < act.dim(); ++i) dims.push_back(i);
  return dims;
}

/// Sizes (N, C, 1, ...) so that a per-channel vector broadcasts over an activation.
DimVector channel_shape(const Tensor& act) {
  DimVector s(act.dim(), 1);
  s[1] = act.size(1);
  return s;
}

// Note [Negative right padding on oneDNN]
// oneDNN accepts pad_r > -stride only; the reference loops accept any pad_r. A negative pad_r
// only drops elements: for a convolution the input's tail that no output reads, for a
// transposed convolution the output's tail that no input reaches (it gets just the bias). So
// the oneDNN calls narrow those tails away and use pad_r = 0.
bool has_negative_pad(const ConvParams& p) {
  return std::any_of(p.pad_r.begin(), p.pad_r.end(), [](int64_t v) { return v < 0; });
}

/// The tail-trimmed form (Note [Negative right padding on oneDNN]): `t` narrowed in every
/// spatial dim with a negative pad_r; false when nothing would be left.
bool trim(const ConvParams& p, Tensor& t, ConvParams& q) {
  q = p;
  for (int64_t i = 0; i < p.spatial(); ++i) {
    if (p.pad_r[i] >= 0) continue;
    const int64_t keep = t.size(2 + i) + p.pad_r[i];
    if (keep <= 0) return false;
    t = t.narrow(2 + i, 0, keep);
    q.pad_r[i] = 0;
  }
  return true;
}

void fill_bias(const Tensor& out, const Tensor& bias) {
  Tensor o = out;
  if (bias.defined()) o.copy_(bias.reshape(channel_shape(out)).expand(out.sizes()));
  else o.zero_();
}

void onednn_forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                    const Tensor& out) {
  if (!has_negative_pad(p)) return cpu::onednn_convolution(input, weight, bias, p, out);
  ConvParams q;
  Tensor in = input, o = out;
  if (!p.transposed ? !trim(p, in, q) : !trim(p, o, q)) return cpu::ref_convolution(input, weight, bias, p, out);
  if (p.transposed) fill_bias(out, bias);  // the trimmed tail
  cpu::onednn_convolution(in, weight, bias, q, o);
}

void onednn_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvParams& p,
                     const Tensor& gi, const Tensor& gw, const Tensor& gb) {
  if (!has_negative_pad(p)) return cpu::onednn_convolution_backward(grad, input, weight, p, gi, gw, gb);
  ConvParams q;
  Tensor in = input, g = grad, gi_part = gi, gb_part = gb;
  if (!p.transposed) {
    // The dropped input tail gets a zero gradient.
    if (!trim(p, in, q) || (gi.defined() && !trim(p, gi_part, q)))
      return cpu::ref_convolution_backward(grad, input, weight, p, gi, gw, gb);
    if (gi.defined()) Tensor(gi).zero_();
  } else {
    if (!trim(p, g, q)) return cpu::ref_convolution_backward(grad, input, weight, p, gi, gw, gb);
    gb_part = Tensor();  // the bias also reached the trimmed tail: sum the whole grad below
  }
  cpu::onednn_convolution_backward(g, in, weight, q, gi_part, gw, gb_part);
  if (gb.defined() && !gb_part.defined()) Tensor(gb).copy_(grad.sum(channel_reduce_dims(grad)));
}

// ---- CPU and Meta kernels ----

Tensor convolution_impl(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation, bool transposed, int64_t groups) {
  const ConvParams p = make_params(stride, pad_l, pad_r, dilation, transposed, groups);
  Tensor out = empty_like_layout(output_sizes(input, weight, p), input, input.scalar_type());
  if (input.is_meta() || out.numel() == 0) return out;
  if (input.numel() == 0 || weight.numel() == 0) {  // no input channels: only the bias
    fill_bias(out, bias);
    return out;
  }
  switch (input.scalar_type()) {
    case kFloat32:
    case kBFloat16:
      onednn_forward(input, weight, bias, p, out);
      break;
    case kFloat16: {  // oneDNN 2.6 has no float16 convolution on this CPU: compute in float32
      Tensor o32 = empty_like_layout(out.sizes(), input, kFloat32);
      onednn_forward(input.to(kFloat32), weight.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias, p, o32);
      out.copy_(o32);
      break;
    }
    default:
      cpu::ref_convolution(input, weight, bias, p, out);
  }
  return out;
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward_impl(const Tensor& grad, const Tensor& input,
                                                             const Tensor& weight, IntArrayRef stride,
                                                             IntArrayRef pad_l, IntArrayRef pad_r,
                                                             IntArrayRef dilation, bool transposed, int64_t groups,
                                                             std::array<bool, 3> mask) {
  const ConvParams p = make_params(stride, pad_l, pad_r, dilation, transposed, groups);
  const ScalarType t = input.scalar_type();
  Tensor gi = mask[0] ? empty_like_layout(input.sizes(), input, t) : Tensor();
  Tensor gw = mask[1] ? empty(weight.sizes(), weight.options()) : Tensor();
  Tensor gb = mask[2] ? empty({grad.size(1)}, grad.options().dtype(t)) : Tensor();
  if (input.is_meta()) return {gi, gw, gb};
  if (grad.numel() == 0 || input.numel() == 0 || weight.numel() == 0) {
    for (Tensor* r : {&gi, &gw, &gb})
      if (r->defined()) r->zero_();
    if (gb.defined() && grad.numel() > 0) gb.copy_(grad.sum(channel_reduce_dims(grad)));
    return {gi, gw, gb};
  }
  const Tensor g = grad.scalar_type() == t ? grad : grad.to(t);
  switch (t) {
    case kFloat32:
    case kBFloat16:
      onednn_backward(g, input, weight, p, gi, gw, gb);
      break;
    case kFloat16: {
      auto f32 = [](const Tensor& x) { return x.defined() ? empty_like_layout(x.sizes(), x, kFloat32) : x; };
      Tensor gi32 = f32(gi), gw32 = f32(gw), gb32 = f32(gb);
      onednn_backward(g.to(kFloat32), input.to(kFloat32), weight.to(kFloat32), p, gi32, gw32, gb32);
      for (auto [dst, src] : {std::pair<Tensor*, Tensor*>{&gi, &gi32}, {&gw, &gw32}, {&gb, &gb32}})
        if (dst->defined()) dst->copy_(*src);
      break;
    }
    default:
      cpu::ref_convolution_backward(g, input, weight, p, gi, gw, gb);
  }
  return {gi, gw, gb};
}

using dispatch::backend_def;

ConvOpDefs g_conv = {
    backend_def<ConvolutionFn>("convolution", &convolution_impl),
    backend_def<ConvolutionBackwardFn>("convolution_backward", &convolution_backward_impl),
};

}  // namespace

ConvOpDefs& conv_ops() { return g_conv; }

}  // namespace ops

// ---- public front ends ----
namespace {

using detail::shape_str;

/// One int-or-list argument expanded to one value per spatial dim.
DimVector expand_param(const char* op, const char* what, IntArrayRef v, int64_t nd) {
  TENSOR_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == nd,
               "{}: expected {} to be a single integer value or a list of {} values to match the convolution "
               "dimensions, but got {}={}",
               op, what, nd, what, shape_str(v));
  DimVector r;
  for (int64_t i = 0; i < nd; ++i) r.push_back(v.size() == 1 ? v[0] : v[i]);
  return r;
}

const char* weight_layout(bool transposed, int64_t nd) {
  static const char* const conv[] = {"(out_channels, in_channels / groups, k)",
                                     "(out_channels, in_channels / groups, kh, kw)",
                                     "(out_channels, in_channels / groups, kd, kh, kw)"};
  static const char* const tconv[] = {"(in_channels, out_channels / groups, k)",
                                      "(in_channels, out_channels / groups, kh, kw)",
                                      "(in_channels, out_channels / groups, kd, kh, kw)"};
  return (transposed ? tconv : conv)[nd - 1];
}

/// Checks everything about one convolution call; `padding` is the user's (symmetric) padding,
/// `extra_r` what "same" adds on the right.
void check_conv(const char* op, int64_t nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                IntArrayRef stride, IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation, bool transposed,
                IntArrayRef output_padding, int64_t groups) {
  TENSOR_CHECK(input.defined() && weight.defined(), "{}: input and weight must be defined tensors (got input {}, weight {})",
               op, input.describe(), weight.describe());
  TENSOR_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2,
               "{}: expected a {}-D (unbatched) or {}-D (batched) input, but got input of shape {}", op, nd + 1, nd + 2,
               shape_str(input.sizes()));
  TENSOR_CHECK(weight.dim() == nd + 2, "{}: expected a {}-D weight {}, but got weight of shape {}", op, nd + 2,
               weight_layout(transposed, nd), shape_str(weight.sizes()));
  TENSOR_CHECK(input.is_floating_point(), "{}: expected a floating point input, got {}", op, input.describe());
  TENSOR_CHECK(input.dtype() == weight.dtype(),
               "{}: input and weight must have the same dtype, got input {} and weight {}", op, input.describe(),
               weight.describe());
  TENSOR_CHECK(input.device() == weight.device(),
               "{}: input and weight must be on the same device, got input {} and weight {}", op, input.describe(),
               weight.describe());
  for (int64_t i = 0; i < nd; ++i) {
    TENSOR_CHECK(stride[i] > 0, "{}: stride must be positive, got stride={}", op, shape_str(stride));
    TENSOR_CHECK(dilation[i] > 0, "{}: dilation must be positive, got dilation={}", op, shape_str(dilation));
    TENSOR_CHECK(pad_l[i] >= 0, "{}: padding must be non-negative, got padding={}", op, shape_str(pad_l));
  }
  TENSOR_CHECK(groups > 0, "{}: groups must be positive, got groups={}", op, groups);
  const int64_t batch_dims = input.dim() - nd;  // 2 batched, 1 unbatched
  const int64_t cin = input.size(batch_dims - 1);
  const std::string shapes = fmt::format("input of shape {}, weight of shape {}", shape_str(input.sizes()),
                                         shape_str(weight.sizes()));
  int64_t cout;
  if (!transposed) {
    TENSOR_CHECK(weight.size(0) % groups == 0,
                 "{}: out_channels (weight.size(0) = {}) must be divisible by groups = {} ({})", op, weight.size(0),
                 groups, shapes);
    TENSOR_CHECK(cin == weight.size(1) * groups,
                 "{}: expected input with {} channels (weight.size(1) * groups = {} * {}), but got {} channels "
                 "({})",
                 op, weight.size(1) * groups, weight.size(1), groups, cin, shapes);
    cout = weight.size(0);
  } else {
    TENSOR_CHECK(weight.size(0) % groups == 0,
                 "{}: in_channels (weight.size(0) = {}) must be divisible by groups = {} ({})", op, weight.size(0),
                 groups, shapes);
    TENSOR_CHECK(cin == weight.size(0), "{}: expected input with {} channels (weight.size(0)), but got {} channels ({})",
                 op, weight.size(0), cin, shapes);
    cout = weight.size(1) * groups;
    for (int64_t i = 0; i < nd; ++i)
      TENSOR_CHECK(output_padding[i] >= 0 && (output_padding[i] < stride[i] || output_padding[i] < dilation[i]),
                   "{}: output_padding must be non-negative and smaller than either stride or dilation, got "
                   "output_padding={}, stride={}, dilation={}",
                   op, shape_str(output_padding), shape_str(stride), shape_str(dilation));
  }
  if (bias.defined()) {
    TENSOR_CHECK(bias.dim() == 1 && bias.size(0) == cout,
                 "{}: expected bias of shape [{}] (one value per output channel), but got bias of shape {} ({})", op,
                 cout, shape_str(bias.sizes()), shapes);
    TENSOR_CHECK(bias.dtype() == input.dtype() && bias.device() == input.device(),
                 "{}: bias must have the input's dtype and device, got input {} and bias {}", op, input.describe(),
                 bias.describe());
  }
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t in = input.size(batch_dims + i), k = dilation[i] * (weight.size(2 + i) - 1) + 1;
    if (!transposed) {
      TENSOR_CHECK(in + pad_l[i] + pad_r[i] >= k,
                   "{}: the (dilated) kernel is larger than the padded input in spatial dim {}: padded input size {}, "
                   "kernel size {} ({}, padding={}, dilation={})",
                   op, i, in + pad_l[i] + pad_r[i], k, shapes, shape_str(pad_l), shape_str(dilation));
    } else {
      const int64_t out = (in - 1) * stride[i] - pad_l[i] - pad_r[i] + k;
      TENSOR_CHECK(out > 0, "{}: the output size in spatial dim {} would be {} (not positive) ({}, stride={}, padding={})",
                   op, i, out, shapes, shape_str(stride), shape_str(pad_l));
      TENSOR_CHECK(in > 0, "{}: expected a non-empty spatial input, got {}", op, shapes);
    }
  }
}

Tensor bias_of(const std::optional<Tensor>& b) { return b ? *b : Tensor(); }

/// Checks, then runs the internal op on a batched input.
Tensor run_conv(const char* op, int64_t nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                IntArrayRef stride, IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation, bool transposed,
                IntArrayRef output_padding, int64_t groups) {
  check_conv(op, nd, input, weight, bias, stride, pad_l, pad_r, dilation, transposed, output_padding, groups);
  const bool unbatched = input.dim() == nd + 1;
  Tensor out = ops::conv_ops().convolution(unbatched ? input.unsqueeze(0) : input, weight, bias, stride, pad_l, pad_r,
                                           dilation, transposed, groups);
  return unbatched ? out.squeeze(0) : out;
}

Tensor conv_nd(const char* op, int64_t nd, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const DimVector s = expand_param(op, "stride", stride, nd), p = expand_param(op, "padding", padding, nd),
                  d = expand_param(op, "dilation", dilation, nd);
  return run_conv(op, nd, input, weight, bias_of(bias), s, p, p, d, false, {}, groups);
}

Tensor conv_transpose_nd(const char* op, int64_t nd, const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                         IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  const DimVector s = expand_param(op, "stride", stride, nd), p = expand_param(op, "padding", padding, nd),
                  op_ = expand_param(op, "output_padding", output_padding, nd),
                  d = expand_param(op, "dilation", dilation, nd);
  DimVector pr;
  for (int64_t i = 0; i < nd; ++i) pr.push_back(p[i] - op_[i]);
  return run_conv(op, nd, input, weight, bias_of(bias), s, p, pr, d, true, op_, groups);
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}

namespace detail {
Tensor conv_padding_mode(int64_t nd, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, std::string_view padding, IntArrayRef dilation, int64_t groups) {
  static const char* const names[] = {"conv1d", "conv2d", "conv3d"};
  TENSOR_CHECK(nd >= 1 && nd <= 3, "convolution: {} spatial dims are not supported", nd);
  const char* op = names[nd - 1];
  const DimVector s = expand_param(op, "stride", stride, nd), d = expand_param(op, "dilation", dilation, nd);
  DimVector pl(nd, 0), pr(nd, 0);
  if (padding == "same") {
    for (int64_t i = 0; i < nd; ++i)
      TENSOR_CHECK(s[i] == 1, "{}: padding='same' is not supported for strided convolutions (got stride={})", op,
                   shape_str(s));
    // As libtorch: total padding dilation * (k - 1), the odd element on the right.
    TENSOR_CHECK(weight.defined() && weight.dim() == nd + 2, "{}: expected a {}-D weight {}, but got weight {}", op,
                 nd + 2, weight_layout(false, nd), weight.describe());
    for (int64_t i = 0; i < nd; ++i) {
      const int64_t total = d[i] * (weight.size(2 + i) - 1);
      pl[i] = total / 2;
      pr[i] = total - pl[i];
    }
  } else {
    TENSOR_CHECK(padding == "valid", "{}: invalid padding string '{}' (expected \"valid\" or \"same\")", op, padding);
  }
  return run_conv(op, nd, input, weight, bias_of(bias), s, pl, pr, d, false, {}, groups);
}
}  // namespace detail

}  // namespace tensor
