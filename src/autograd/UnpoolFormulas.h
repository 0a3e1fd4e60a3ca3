// Internal: the derivative formula the unpooling rows share (Derivatives.cpp, "max unpooling
// and fractional max pooling"), and the registration of the fractional pools' nodes.
#pragma once

#include "tensor/ops.h"

namespace tensor::autograd {

/// g's values at `indices`, plane by plane over the trailing `dims` dims: g (P..., g's plane)
/// and indices (P..., any plane) share their leading dims; the result has indices' shape. It is
/// max_unpool's gradient (max_unpool writes there) and the derivative of the fractional pools'
/// backward (a scatter-add there), as libtorch's max_pool_double_backward.
inline Tensor gather_planes(const Tensor& g, const Tensor& indices, int64_t dims) {
  int64_t planes = 1;
  for (int64_t d = 0; d < g.dim() - dims; ++d) planes *= g.size(d);
  if (planes == 0 || indices.numel() == 0) return zeros(indices.sizes(), g.options());
  return g.reshape({planes, -1}).gather(1, indices.reshape({planes, -1})).view(indices.sizes());
}

/// Fills the Autograd slots of fractional_max_pool2d/3d (nodes/Unpool.cpp).
void register_unpool_nodes();

}  // namespace tensor::autograd
