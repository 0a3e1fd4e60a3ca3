// Internal: the plain-loop convolution kernels, over the backend-neutral ConvParams of
// kernels/Conv.h.
#pragma once

#include "kernels/Conv.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

// The contract's parameters, under the name the CPU code uses.
using kernels::ConvParams;

// Plain loops (kernels/cpu/ConvKernels.cpp): any floating dtype, computed in float64; the
// path for dtypes and layouts oneDNN does not take, and the reference the tests compare to.
void ref_convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                     const Tensor& out);
void ref_convolution_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvParams& p,
                              const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace tensor::cpu
