// The CPU kernels of convolution and convolution_backward (src/ops/ConvOps.h's
// ConvolutionKernel and ConvolutionBackwardKernel): the front end has checked the arguments and
// allocated the results; the kernel picks oneDNN (float32, bfloat16; float16 through float32,
// src/cpu/Conv.cpp) or the reference loops (float64, kernels/cpu/ConvKernels.cpp), and handles
// the empty and negatively padded cases.
#include <algorithm>
#include <utility>

#include "src/cpu/Conv.h"
#include "src/cpu/Layout.h"
#include "tensor/ops.h"

namespace tensor::cpu {
namespace {

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
  if (!has_negative_pad(p)) return onednn_convolution(input, weight, bias, p, out);
  ConvParams q;
  Tensor in = input, o = out;
  if (!p.transposed ? !trim(p, in, q) : !trim(p, o, q)) return ref_convolution(input, weight, bias, p, out);
  if (p.transposed) fill_bias(out, bias);  // the trimmed tail
  onednn_convolution(in, weight, bias, q, o);
}

void onednn_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvParams& p,
                     const Tensor& gi, const Tensor& gw, const Tensor& gb) {
  if (!has_negative_pad(p)) return onednn_convolution_backward(grad, input, weight, p, gi, gw, gb);
  ConvParams q;
  Tensor in = input, g = grad, gi_part = gi, gb_part = gb;
  if (!p.transposed) {
    // The dropped input tail gets a zero gradient.
    if (!trim(p, in, q) || (gi.defined() && !trim(p, gi_part, q)))
      return ref_convolution_backward(grad, input, weight, p, gi, gw, gb);
    if (gi.defined()) Tensor(gi).zero_();
  } else {
    if (!trim(p, g, q)) return ref_convolution_backward(grad, input, weight, p, gi, gw, gb);
    gb_part = Tensor();  // the bias also reached the trimmed tail: sum the whole grad below
  }
  onednn_convolution_backward(g, in, weight, q, gi_part, gw, gb_part);
  if (gb.defined() && !gb_part.defined()) Tensor(gb).copy_(grad.sum(channel_reduce_dims(grad)));
}

}  // namespace

void convolution_kernel(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                        const Tensor& out) {
  if (input.numel() == 0 || weight.numel() == 0) {  // no input channels: only the bias
    fill_bias(out, bias);
    return;
  }
  switch (input.scalar_type()) {
    case kFloat32:
    case kBFloat16:
      onednn_forward(input, weight, bias, p, out);
      break;
    case kFloat16: {  // oneDNN 2.6 has no float16 convolution on this CPU: compute in float32
      Tensor o32 = empty_in_layout_of(out.sizes(), input, input.options().dtype(kFloat32));
      onednn_forward(input.to(kFloat32), weight.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias, p, o32);
      Tensor(out).copy_(o32);
      break;
    }
    default:
      ref_convolution(input, weight, bias, p, out);
  }
}

void convolution_backward_kernel(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvParams& p,
                                 const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
  Tensor gi = grad_input, gw = grad_weight, gb = grad_bias;
  if (grad.numel() == 0 || input.numel() == 0 || weight.numel() == 0) {
    for (Tensor* r : {&gi, &gw, &gb})
      if (r->defined()) r->zero_();
    if (gb.defined() && grad.numel() > 0) gb.copy_(grad.sum(channel_reduce_dims(grad)));
    return;
  }
  const ScalarType t = input.scalar_type();
  const Tensor g = grad.scalar_type() == t ? grad : grad.to(t);
  switch (t) {
    case kFloat32:
    case kBFloat16:
      onednn_backward(g, input, weight, p, gi, gw, gb);
      break;
    case kFloat16: {
      auto f32 = [](const Tensor& x) {
        return x.defined() ? empty_in_layout_of(x.sizes(), x, x.options().dtype(kFloat32)) : x;
      };
      Tensor gi32 = f32(gi), gw32 = f32(gw), gb32 = f32(gb);
      onednn_backward(g.to(kFloat32), input.to(kFloat32), weight.to(kFloat32), p, gi32, gw32, gb32);
      for (auto [dst, src] : {std::pair<Tensor*, Tensor*>{&gi, &gi32}, {&gw, &gw32}, {&gb, &gb32}})
        if (dst->defined()) dst->copy_(*src);
      break;
    }
    default:
      ref_convolution_backward(g, input, weight, p, gi, gw, gb);
  }
}

}  // namespace tensor::cpu
