// Internal: the CPU loops of im2col and col2im (kernels/cpu/FoldKernels.cpp); their signatures
// are the backend kernels' of src/ops/FoldOps.h.
#pragma once

#include <cstdint>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// The geometry of one im2col/col2im call: the image (n, c, h, w), the kernel, dilation,
/// padding and stride per spatial dim, the number of block positions (oh, ow), and the image's
/// strides (n, c, h, w; the n stride is unused when n == 1 for an unbatched input).
struct FoldGeometry {
  int64_t n = 1, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, dh = 1, dw = 1, ph = 0, pw = 0, sh = 1, sw = 1;
  int64_t oh = 0, ow = 0;
};

/// out (contiguous, n * (c * kh * kw) * (oh * ow) elements) = the columns of image, whose
/// element (b, c, y, x) is at image's strides (batch dim first; unbatched images have n = 1).
void im2col(const Tensor& image, const FoldGeometry& g, const Tensor& out);
/// out (contiguous, n * c * h * w elements) = the sum of cols' blocks into the image; cols has
/// (batch,) rows, positions dims with any strides.
void col2im(const Tensor& cols, const FoldGeometry& g, const Tensor& out);

}  // namespace tensor::cpu
