// Internal: the plain-loop upsampling kernels (kernels/cpu/UpsampleKernels.cpp): bicubic
// resize of N * C planes and its adjoint, any floating dtype, computed in the dtype's opmath
// type (float for float32 and the half types, double for float64), as PyTorch's CPU kernels.
#pragma once

#include "kernels/Upsample.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

// The contract's geometry (kernels/Upsample.h), under the name the CPU code uses.
using kernels::Upsample2d;

namespace loops {
/// x: contiguous (N, C, H, W) -> out (N, C, OH, OW), contiguous.
void upsample_bicubic2d(const Tensor& x, const Upsample2d& g, const Tensor& out);
/// grad_out: contiguous (N, C, OH, OW) -> grad_in (N, C, H, W), contiguous, overwritten.
void upsample_bicubic2d_backward(const Tensor& grad_out, const Upsample2d& g, const Tensor& grad_in);
}  // namespace loops

}  // namespace tensor::cpu
