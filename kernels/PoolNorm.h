// Internal: the backend-neutral contract of the pooling kernels: the geometry the front ends
// (src/ops/PoolNormOps.cpp) compute once and hand every backend's kernels of
// ops::PoolNormKernels (src/ops/PoolNormOps.h, which says what each kernel does). The CPU
// kernels are src/cpu/PoolNorm.h's entries over the loops of kernels/cpu/PoolNormKernels.h.
// Standard headers only, so any backend's code can include it.
#pragma once

#include <cstdint>

namespace tensor::kernels {

/// One 2-d pooling problem over `planes` = N * C planes, after the front end's checks.
struct Pool2d {
  int64_t n = 1, c = 1, ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false, count_include_pad = true;
  int64_t divisor = 0;  // divisor_override; 0 = none
  int64_t planes() const { return n * c; }
};

/// One 3-d pooling problem over `planes` = N * C planes of D * H * W. Adaptive pooling uses
/// the sizes only; 2-d adaptive max pooling is the 3-d one with id = od = 1.
struct Pool3d {
  int64_t n = 1, c = 1, id = 0, ih = 0, iw = 0, od = 0, oh = 0, ow = 0;
  int64_t kd = 1, kh = 1, kw = 1, sd = 1, sh = 1, sw = 1, pd = 0, ph = 0, pw = 0, dd = 1, dh = 1, dw = 1;
  int64_t planes() const { return n * c; }
  int64_t in_plane() const { return id * ih * iw; }
  int64_t out_plane() const { return od * oh * ow; }
};

}  // namespace tensor::kernels
