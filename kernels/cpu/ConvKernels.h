// Internal: convolution parameters and the plain-loop convolution kernels.
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// The parameters of one convolution, per spatial dim (Note [Convolution padding]).
struct ConvParams {
  DimVector stride, pad_l, pad_r, dilation;
  bool transposed = false;
  int64_t groups = 1;
  int64_t spatial() const { return static_cast<int64_t>(stride.size()); }
};

// Plain loops (kernels/cpu/ConvKernels.cpp): any floating dtype, computed in float64; the
// path for dtypes and layouts oneDNN does not take, and the reference the tests compare to.
void ref_convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                     const Tensor& out);
void ref_convolution_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvParams& p,
                              const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace tensor::cpu
