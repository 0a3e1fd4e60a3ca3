// Internal: the backend-neutral contract of the im2col and col2im kernels (Im2colKernel and
// Col2imKernel, src/ops/FoldOps.h): the geometry the front end (src/ops/FoldOps.cpp) hands
// every backend, and what each kernel must do. The CPU kernels are declared in
// kernels/cpu/FoldKernels.h. <cstdint> only, so any backend's code can include it.
//
// Im2colKernel(image, g, out): out (contiguous, n * (c * kh * kw) * (oh * ow) elements) = the
//   columns of image, whose element (b, c, y, x) is at image's strides (batch dim first;
//   unbatched images have n = 1).
// Col2imKernel(cols, g, out): out (contiguous, n * c * h * w elements) = the sum of cols'
//   blocks into the image; cols has (batch,) rows, positions dims with any strides.
#pragma once

#include <cstdint>

namespace tensor::kernels {

/// The geometry of one im2col/col2im call: the image (n, c, h, w), the kernel, dilation,
/// padding and stride per spatial dim, the number of block positions (oh, ow), and the image's
/// strides (n, c, h, w; the n stride is unused when n == 1 for an unbatched input).
struct FoldGeometry {
  int64_t n = 1, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, dh = 1, dw = 1, ph = 0, pw = 0, sh = 1, sw = 1;
  int64_t oh = 0, ow = 0;
};

}  // namespace tensor::kernels
