// The manual formulas of pooling (PoolNormFormulas.h), called by the rows of the derivatives
// table (Derivatives.cpp, "pooling and normalization"), and the kernels that stay hand-written:
// max_pool2d, max_pool2d_with_indices and the normalizations (below, with why).
//
// The formulas are PyTorch's (tools/autograd/derivatives.yaml, FunctionsManual.cpp):
//   max_pool2d            the gradient goes to the returned index of each window (ties: the
//                         index returned); its backward is linear in the gradient, and its own
//                         derivative gathers at the same indices
//   avg_pool2d,           the gradient spread evenly over each window (the adjoint of the
//   adaptive_avg_pool2d   pooling); the adjoint of that adjoint is the pooling itself, so the
//                         backward ops are differentiable too (rows of Derivatives.cpp)
//   batch_norm, layer_norm, group_norm
//                         gx = invstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)),
//                         gxhat = grad * weight, means over the normalized set (batch_norm in
//                         eval mode: gx = gxhat * invstd of the running variance);
//                         gweight = sum(grad * xhat), gbias = sum(grad) over the other dims.
//
// Note [Fast and differentiable normalization backward]
// The normalization backward has two forms. Without create_graph (grad mode off while the
// formula runs) it calls the op's backward kernel: oneDNN for float32/bfloat16 batch_norm and
// layer_norm, the loops for group_norm and float64, using the mean and variance the forward
// saved. With create_graph it evaluates the formula above with public ops, recomputing the
// statistics from the saved input so that the result is differentiable in the input, weight
// and grad (gradgradcheck). Running statistics are buffers: no edge, no gradient.
#include "src/autograd/PoolNormFormulas.h"

#include "tensor/normalization.h"
#include "tensor/ops.h"

namespace tensor::autograd {
Tensor max_pool2d_double_backward(const Tensor& g, IntArrayRef in, const Tensor& idx) {
  const int64_t hw = in[in.size() - 2] * in[in.size() - 1];
  const int64_t planes = hw == 0 ? 0 : g.numel() / hw;
  Tensor picked = g.reshape({planes, hw}).gather(1, idx.reshape({planes, -1}));
  return picked.view(idx.sizes());
}

}  // namespace tensor::autograd
