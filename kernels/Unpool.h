// Internal: the backend-neutral contract of the fractional max pooling kernel: the geometry
// the front ends (src/ops/UnpoolOps.cpp) hand every backend's kernels of ops::UnpoolKernels
// (src/ops/UnpoolOps.h, which says what each kernel does). The CPU kernels are the loops of
// kernels/cpu/UnpoolKernels.h. Standard headers only, so any backend's code can include it.
#pragma once

#include <array>
#include <cstdint>

namespace tensor::kernels {

/// One fractional max pooling problem, after the front end's checks. Sizes are {t, h, w}
/// (t = 1, k[0] = 1 in 2-d). sample_of[d]: the index along random_samples' last dim that drives
/// dim d (2-d: {-, 1, 0}, as libtorch reads (w, h); 3-d: {0, 1, 2}).
struct FractionalPool {
  int64_t n = 1, c = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1};
  std::array<int64_t, 3> sample_of{0, 1, 2};
  int64_t samples_per_plane = 2;  // random_samples.size(2)
  int64_t planes() const { return n * c; }
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
};

}  // namespace tensor::kernels
