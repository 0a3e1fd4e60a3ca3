// Internal: the dispatcher table of max unpooling and fractional max pooling, and its backend
// kernels (Note [Front ends and backend kernels]). CPU's kernels: the plain loops of
// kernels/cpu/UnpoolKernels.h; the fractional pooling geometry every backend's kernel takes:
// kernels/Unpool.h. Derivatives: rows of src/autograd/Derivatives.cpp ("unpooling")
// and the fractional pools' hand-written nodes in src/autograd/nodes/Unpool.cpp.
#pragma once

#include <tuple>

#include "kernels/Unpool.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// max_unpool2d: (self, indices, output_size).
using MaxUnpool2dFn = Tensor(const Tensor&, const Tensor&, IntArrayRef);
/// max_unpool3d: (self, indices, output_size, stride, padding).
using MaxUnpool3dFn = Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef);
/// fractional_max_pool{2,3}d: (self, kernel_size, output_size, random_samples) -> (output, indices).
using FractionalMaxPoolFn = std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, const Tensor&);
/// fractional_max_pool{2,3}d_backward: (grad_output, self, kernel_size, output_size, indices), as
/// libtorch's; self gives the gradient's shape only.
using FractionalMaxPoolBwdFn = Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, const Tensor&);

struct UnpoolOpDefs {
  dispatch::OpDef<MaxUnpool2dFn> max_unpool2d;
  dispatch::OpDef<MaxUnpool3dFn> max_unpool3d;
  dispatch::OpDef<FractionalMaxPoolFn> fractional_max_pool2d;
  dispatch::OpDef<FractionalMaxPoolFn> fractional_max_pool3d;
  dispatch::OpDef<FractionalMaxPoolBwdFn> fractional_max_pool2d_backward;
  dispatch::OpDef<FractionalMaxPoolBwdFn> fractional_max_pool3d_backward;
};

/// The one table of unpooling and fractional pooling ops.
UnpoolOpDefs& unpool_ops();

// ---- backend kernels (called after the front end's checks, on non-empty contiguous tensors;
// never on meta tensors) ----
struct UnpoolKernels {
  /// Zeroes out, writes x's values at the indices; -1, or the first index found out of range.
  int64_t (*max_unpool)(const Tensor& x, const Tensor& indices, int64_t planes, int64_t in_plane, int64_t out_plane,
                        const Tensor& out) = nullptr;
  /// Fills out and indices.
  void (*fractional_max_pool)(const Tensor& x, const Tensor& samples, const kernels::FractionalPool& g,
                              const Tensor& out, const Tensor& indices) = nullptr;
  /// grad_in = grad summed at the indices; -1, or the first index found out of range.
  int64_t (*fractional_max_pool_backward)(const Tensor& grad, const Tensor& indices, int64_t planes,
                                          int64_t out_plane, int64_t in_plane, const Tensor& grad_in) = nullptr;
};
using MaxUnpoolKernel = decltype(UnpoolKernels::max_unpool);
using FractionalPoolKernel = decltype(UnpoolKernels::fractional_max_pool);
using FractionalPoolBwdKernel = decltype(UnpoolKernels::fractional_max_pool_backward);

/// Registers a backend's (CUDA's) kernels: the ops whose kernels are given route to them.
void register_kernels(DispatchKey backend, const UnpoolKernels& kernels);

}  // namespace tensor::ops
