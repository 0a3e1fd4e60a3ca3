// Internal: the plain-loop upsampling kernels (kernels/cpu/UpsampleKernels.cpp): bicubic
// resize of N * C planes and its adjoint, any floating dtype, computed in the dtype's opmath
// type (float for float32 and the half types, double for float64), as PyTorch's CPU kernels.
#pragma once

#include <cstdint>
#include <optional>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// One 2-d resize over `planes` = N * C planes, after the front end's checks.
struct Upsample2d {
  int64_t planes = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  bool align_corners = false;
  std::optional<double> scales_h, scales_w;
};

namespace loops {
/// x: contiguous (N, C, H, W) -> out (N, C, OH, OW), contiguous.
void upsample_bicubic2d(const Tensor& x, const Upsample2d& g, const Tensor& out);
/// grad_out: contiguous (N, C, OH, OW) -> grad_in (N, C, H, W), contiguous, overwritten.
void upsample_bicubic2d_backward(const Tensor& grad_out, const Upsample2d& g, const Tensor& grad_in);
}  // namespace loops

}  // namespace tensor::cpu
