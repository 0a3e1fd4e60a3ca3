// Internal: the manual formulas of pooling (as PyTorch's FunctionsManual.cpp), which the rows of
// the derivatives table (src/autograd/Derivatives.cpp, section "pooling and normalization")
// call. Defined, with the hand-written kernels of max_pool2d and the normalizations, in
// src/autograd/PoolNormFormulas.cpp.
#pragma once

#include "src/autograd/Functions.h"
#include "src/ops/PoolNormOps.h"
#include "tensor/pooling.h"

namespace tensor::autograd {

/// The derivative of max_pool2d_backward(grad_output, input_sizes, indices) with respect to
/// grad_output: `grad` (input-shaped) picked at the indices, in the indices' shape.
Tensor max_pool2d_double_backward(const Tensor& grad, IntArrayRef input_sizes, const Tensor& indices);

}  // namespace tensor::autograd
