// The manual formula of the convolutions (ConvFormulas.h), called by the ConvolutionBackward0
// row of the derivatives table (Derivatives.cpp, "convolutions").
//
// Note [Convolution backward]
// ConvolutionBackward0 saves the input and the weight. Its formula has two paths:
// - grad mode off (a plain backward): the convolution_backward op, i.e. oneDNN's
//   backward-data and backward-weights primitives (or the reference loops for float64),
//   computing only the gradients whose inputs need them;
// - grad mode on (create_graph): the same gradients written with the differentiable
//   convolution op itself, so that they are recorded and can be differentiated again:
//     grad_input of a convolution  = the transposed convolution of grad with the weight
//     grad_input of a transposed   = the convolution of grad with the weight
//     grad_weight (both)           = a convolution of P with Q, roles swapped: batch and
//                                    channels exchanged, stride and dilation exchanged
//     grad_bias                    = grad summed over batch and spatial dims
//   (P and Q as in Note [One relation for every convolution loop]: P is a convolution's input
//   or a transposed convolution's output.) Every convolution here is sized exactly through its
//   right padding (Note [Convolution padding]), which may be negative.
#include "src/autograd/ConvFormulas.h"

#include "tensor/ops.h"

namespace tensor::autograd {
namespace {

/// The parameters of one convolution (Note [Convolution padding]).
struct Args {
  IntArrayRef stride, pad_l, pad_r, dilation;
  bool transposed = false;
  int64_t groups = 1;
};

/// grad_weight = sum over batch and positions of Q[n, qc, q] * P[n, pc, q * s + k * d - pad_l],
/// computed as convolution(X, Wq) with X = P as (P channels / g, g * N, ...) and Wq = Q as
/// (Q channels, N, ...): stride d, dilation s, groups g. Result (Q channels, P channels / g, k...).
Tensor weight_grad(const Tensor& P, const Tensor& Q, IntArrayRef wsizes, const Args& a) {
  const int64_t nd = P.dim() - 2, n = P.size(0), g = a.groups, pcg = P.size(1) / g;
  DimVector split{n, g, pcg}, perm{2, 1, 0}, merged{pcg, g * n}, pad_r;
  for (int64_t i = 0; i < nd; ++i) {
    split.push_back(P.size(2 + i));
    perm.push_back(3 + i);
    merged.push_back(P.size(2 + i));
    const int64_t k = wsizes[2 + i], len = P.size(2 + i), out = Q.size(2 + i);
    pad_r.push_back((k - 1) * a.dilation[i] + a.stride[i] * (out - 1) + 1 - len - a.pad_l[i]);
  }
  Tensor x = P.reshape(split).permute(perm).reshape(merged);
  Tensor y = ops::conv_ops().convolution(x, Q.transpose(0, 1), Tensor(), a.dilation, a.pad_l, pad_r, a.stride,
                                         false, g);
  return y.transpose(0, 1);
}

/// The gradients with differentiable ops (create_graph), only where asked.
variable_list composite_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Args& a,
                                 std::array<bool, 3> mask) {
  Tensor gi, gw, gb;
  const int64_t nd = x.dim() - 2;
  if (mask[0]) {
    if (!a.transposed) {
      DimVector pad_r;
      for (int64_t i = 0; i < nd; ++i)
        pad_r.push_back((g.size(2 + i) - 1) * a.stride[i] + a.dilation[i] * (w.size(2 + i) - 1) + 1 - x.size(2 + i) -
                        a.pad_l[i]);
      gi = ops::conv_ops().convolution(g, w, Tensor(), a.stride, a.pad_l, pad_r, a.dilation, true, a.groups);
    } else {
      gi = ops::conv_ops().convolution(g, w, Tensor(), a.stride, a.pad_l, a.pad_r, a.dilation, false, a.groups);
    }
  }
  if (mask[1]) gw = a.transposed ? weight_grad(g, x, w.sizes(), a) : weight_grad(x, g, w.sizes(), a);
  if (mask[2]) {
    DimVector dims{0};
    for (int64_t i = 0; i < nd; ++i) dims.push_back(2 + i);
    gb = g.sum(dims);
  }
  return {gi, gw, gb};
}

}  // namespace

variable_list convolution_grads(const Tensor& grad, const Tensor& input, const Tensor& weight, IntArrayRef stride,
                                IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation, bool transposed,
                                int64_t groups, std::array<bool, 3> mask) {
  const Tensor gr = grad.dtype() == input.dtype() ? grad : grad.to(input.dtype());
  const Args a{stride, pad_l, pad_r, dilation, transposed, groups};
  if (GradMode::is_enabled()) return composite_backward(gr, input, weight, a, mask);
  auto [gi, gw, gb] = ops::conv_ops().convolution_backward(gr, input, weight, stride, pad_l, pad_r, dilation,
                                                           transposed, groups, mask);
  return {gi, gw, gb};
}

}  // namespace tensor::autograd
