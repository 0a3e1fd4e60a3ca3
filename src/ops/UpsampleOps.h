// Internal: dispatcher tables of the upsampling ops (src/ops/UpsampleOps.cpp) and their backend
// kernels (Note [Front ends and backend kernels]). CPU's kernels: kernels/cpu/UpsampleKernels.h;
// the geometry every backend's kernel takes: kernels/Upsample.h.
#pragma once

#include <optional>

#include "kernels/Upsample.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// upsample_bicubic2d: (input, output_size, align_corners, scales_h, scales_w).
using UpsampleBicubicFn = Tensor(const Tensor&, IntArrayRef, bool, std::optional<double>, std::optional<double>);
/// upsample_bicubic2d_backward: (grad_output, output_size, input_size, align_corners, scales_h,
/// scales_w). Linear in grad_output.
using UpsampleBicubicBwdFn = Tensor(const Tensor&, IntArrayRef, IntArrayRef, bool, std::optional<double>,
                                    std::optional<double>);

struct UpsampleOpDefs {
  dispatch::OpDef<UpsampleBicubicFn> upsample_bicubic2d;
  dispatch::OpDef<UpsampleBicubicBwdFn> upsample_bicubic2d_backward;
};

/// The one table of upsampling ops.
UpsampleOpDefs& upsample_ops();

/// A backend's kernels (called after the front end's checks, on non-empty tensors; never on
/// meta tensors). Each fills its contiguous, preallocated result.
struct UpsampleKernels {
  void (*upsample_bicubic2d)(const Tensor& x, const kernels::Upsample2d& g, const Tensor& out) = nullptr;
  void (*upsample_bicubic2d_backward)(const Tensor& grad, const kernels::Upsample2d& g,
                                      const Tensor& grad_input) = nullptr;
};
using UpsampleBicubicKernel = decltype(UpsampleKernels::upsample_bicubic2d);
using UpsampleBicubicBwdKernel = decltype(UpsampleKernels::upsample_bicubic2d_backward);

/// Registers a backend's (CUDA's) kernels: each op whose kernel is given routes to it; the
/// others keep an empty slot (the dispatcher's "no kernel" error).
void register_kernels(DispatchKey backend, const UpsampleKernels& kernels);

}  // namespace tensor::ops
