// Internal: the one place nn computes x W^T + b.
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::nn::detail {

/// input [..., in] x weight [out, in] (+ bias [out]); arguments already checked.
Tensor linear_forward(const Tensor& input, const Tensor& weight, const Tensor& bias);

}  // namespace tensor::nn::detail
