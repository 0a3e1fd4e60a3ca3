// Internal: dispatcher tables of GradScaler's ops (src/amp/AmpOps.cpp), listed in
// src/ops/AllOps.h, so that wrapping keys see them and a CUDA backend can fill their slots.
#pragma once

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale): every gradient
/// multiplied by inv_scale in place; found_inf (one float32 element) set to 1 when any element of
/// any gradient was inf or NaN, left as it was otherwise.
using AmpUnscaleFn = void(TensorList, const Tensor&, const Tensor&);
/// _amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
/// growth_interval): GradScaler.update's step on the one-element float32 scale and int32 growth
/// tracker, in place (kernels/AmpMath.h); returns scale.
using AmpUpdateScaleFn = Tensor&(Tensor&, const Tensor&, const Tensor&, double, double, int64_t);

dispatch::OpDef<AmpUnscaleFn>& amp_unscale_op();
dispatch::OpDef<AmpUpdateScaleFn>& amp_update_scale_op();

/// A backend's (CUDA's) kernels of the two ops, called after the front end's checks: every
/// tensor is on one device; gradients are floating, non-empty and contiguous (the front end
/// passes contiguous copies of strided ones and writes them back); found_inf, inv_scale and
/// scale are one-element float32, growth_tracker one-element int32. The kernels read and write
/// those on the device: no host synchronization.
struct AmpKernels {
  void (*unscale)(TensorList grads, const Tensor& found_inf, const Tensor& inv_scale) = nullptr;
  void (*update_scale)(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                       double growth_factor, double backoff_factor, int64_t growth_interval) = nullptr;
};
/// Registers a backend's kernels of _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_.
TENSOR_API void register_kernel(DispatchKey backend, const AmpKernels& kernels);

}  // namespace tensor::ops
