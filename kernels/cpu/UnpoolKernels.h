// Internal: the plain-loop kernels of max unpooling and fractional max pooling
// (kernels/cpu/UnpoolKernels.cpp). Both work plane by plane over N * C planes of a contiguous
// tensor, with 2-d problems as 3-d ones of depth 1, so one loop serves max_unpool2d/3d and
// fractional_max_pool2d/3d. Any floating dtype; float64 is the reference the tests use.
#pragma once

#include <cstdint>

#include "kernels/Unpool.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

// The contract's geometry (kernels/Unpool.h), under the name the CPU code uses.
using kernels::FractionalPool;

namespace loops {
/// out (planes * out_plane, zeroed here): out[p][idx[p][i]] = x[p][i] for each of in_plane
/// elements of each plane. x, indices: contiguous. Returns -1, or an index outside
/// [0, out_plane) (nothing of that plane past it is written), for the front end's error.
int64_t max_unpool(const Tensor& x, const Tensor& indices, int64_t planes, int64_t in_plane, int64_t out_plane,
                   const Tensor& out);
/// grad_in (planes * in_plane, zeroed here) += grad[p][i] at idx[p][i], i < out_plane: the
/// fractional pooling's backward (windows overlap, so sums). Returns -1 or an invalid index.
int64_t fractional_max_pool_backward(const Tensor& grad, const Tensor& indices, int64_t planes, int64_t out_plane,
                                     int64_t in_plane, const Tensor& grad_in);
/// Fills out and indices (contiguous, g.planes() * g.out_plane()) from x (contiguous) and
/// samples (contiguous (>= n, c, samples_per_plane), x's dtype).
void fractional_max_pool(const Tensor& x, const Tensor& samples, const FractionalPool& g, const Tensor& out,
                         const Tensor& indices);
/// libtorch's window starts for one dim: alpha = (in - k) / (out - 1) and
/// start[i] = int((i + u) * alpha) - int(u * alpha), the last = in - k, computed in the
/// arithmetic of `dtype` (float32 in float, float64 in double; the half types round each step,
/// as c10's operators do), so that the windows are libtorch's for the same samples.
void fractional_intervals(ScalarType dtype, double u, int64_t in, int64_t out, int64_t k, int64_t* starts);
}  // namespace loops

}  // namespace tensor::cpu
