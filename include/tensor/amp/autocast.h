// Autocast: per-op mixed precision inside a region (libtorch's torch.autocast / at::autocast).
//
//   { tensor::autocast::AutocastGuard ac(tensor::kCPU, tensor::kBFloat16);
//     auto loss = F::cross_entropy(net->forward(x), y); }   // matmul/conv/linear in bf16
//
// Inside a guard, ops listed in the cast policy (Note [Autocast policy], src/amp/AutocastPolicy.h)
// cast their floating-point inputs first: matrix products and convolutions to the region's
// lower-precision dtype, numerically sensitive ops (softmax, exp, log, norms, sums) to float32,
// joins (cat, stack) to the widest input dtype. Other ops run in their inputs' dtypes. See
// docs/amp.md.
#pragma once

#include <cstddef>

#include "tensor/core/Device.h"
#include "tensor/core/ScalarType.h"
#include "tensor/export.h"

namespace tensor::autocast {

/// Turns autocast on (or, with enabled = false, off) for tensors of `device` on this thread
/// until the guard is destroyed, then restores the previous state. CPU accepts kBFloat16 and
/// kFloat16, CUDA kFloat16 and kBFloat16; any other dtype throws tensor::Error. Guards nest;
/// casts of float32 leaf weights are cached (Note [Autocast cast cache]) until the outermost
/// guard exits. CPU and CUDA states are separate.
class TENSOR_API AutocastGuard {
 public:
  AutocastGuard(DeviceType device, ScalarType dtype, bool enabled = true, bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_;
  bool prev_enabled_;
  ScalarType prev_dtype_;
  bool prev_cache_enabled_;
};

/// True when autocast is on for `device` on this thread.
TENSOR_API bool is_autocast_enabled(DeviceType device);
/// The lower-precision dtype autocast casts to on `device` (kBFloat16 on CPU and kFloat16 on
/// CUDA until a guard sets another).
TENSOR_API ScalarType get_autocast_dtype(DeviceType device);
/// True when autocast caches casts of float32 leaf weights on this thread.
TENSOR_API bool is_autocast_cache_enabled();
/// Drops this thread's cached casts (the outermost guard does it on exit).
TENSOR_API void clear_autocast_cache();
/// The number of casts cached now on this thread (for tests and diagnostics).
TENSOR_API size_t autocast_cache_size();

}  // namespace tensor::autocast
