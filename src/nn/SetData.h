// Internal: replace a tensor's data while keeping its TensorImpl (PyTorch's set_data).
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::nn::detail {

/// Makes `dst` hold `src`'s storage, geometry, dtype and device. Every handle sharing dst's
/// TensorImpl (module members, optimizer parameter lists) sees the change; autograd metadata
/// (requires_grad, hooks) stays, and a gradient is converted alongside.
void set_data(const Tensor& dst, const Tensor& src);

}  // namespace tensor::nn::detail
