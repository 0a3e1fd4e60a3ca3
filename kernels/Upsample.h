// Internal: the backend-neutral contract of the upsampling kernels: the geometry the front
// ends (src/ops/UpsampleOps.cpp) hand every backend's kernels of ops::UpsampleKernels
// (src/ops/UpsampleOps.h, which says what each kernel does). The CPU kernels are the loops of
// kernels/cpu/UpsampleKernels.h. Standard headers only, so any backend's code can include it.
#pragma once

#include <cstdint>
#include <optional>

namespace tensor::kernels {

/// One 2-d resize over `planes` = N * C planes, after the front end's checks.
struct Upsample2d {
  int64_t planes = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  bool align_corners = false;
  std::optional<double> scales_h, scales_w;
};

}  // namespace tensor::kernels
