// Internal: the CPU kernels of the convolution ops (src/cpu/ConvKernel.cpp) and the oneDNN
// convolutions they run (src/cpu/Conv.cpp).
#pragma once

#include "kernels/cpu/ConvKernels.h"

namespace tensor::cpu {

// The CPU kernels behind the front ends (src/ops/ConvOps.h's ConvolutionKernel and
// ConvolutionBackwardKernel): oneDNN for float32 and bfloat16 (float16 through float32), the
// reference loops otherwise.
/// out (non-empty, allocated by the front end) = convolution(input, weight) + bias.
void convolution_kernel(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                        const Tensor& out);
/// Fills the defined ones of grad_input, grad_weight and grad_bias (grad may have another dtype).
void convolution_backward_kernel(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvParams& p,
                                 const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias);

// oneDNN kernels (src/cpu/Conv.cpp), for float32 and bfloat16 only. Outputs are allocated by
// the caller with their final sizes and strides (NCHW-contiguous or channels-last).
/// out = convolution(input, weight) + bias.
void onednn_convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                        const Tensor& out);
/// Fills the defined ones of grad_input, grad_weight and grad_bias.
void onednn_convolution_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvParams& p,
                                 const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace tensor::cpu
