// Internal: the manual formula of the convolutions (as PyTorch's FunctionsManual.cpp), which
// the ConvolutionBackward0 row of the derivatives table (src/autograd/Derivatives.cpp, section
// "convolutions") calls. Defined in src/autograd/ConvFormulas.cpp (Note [Convolution backward]).
#pragma once

#include <array>

#include "src/autograd/Functions.h"
#include "src/ops/ConvOps.h"

namespace tensor::autograd {

/// The gradients of convolution(input, weight, bias, ...) for those of (input, weight, bias)
/// that `mask` asks for: convolution_backward without create_graph, differentiable
/// convolutions with it.
variable_list convolution_grads(const Tensor& grad, const Tensor& input, const Tensor& weight, IntArrayRef stride,
                                IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation, bool transposed,
                                int64_t groups, std::array<bool, 3> mask);

}  // namespace tensor::autograd
