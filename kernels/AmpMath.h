// Internal: the per-element steps of GradScaler's two ops, _amp_foreach_non_finite_check_and_unscale_
// and _amp_update_scale_ (libtorch's names). Backend-neutral and callable from device code, so a
// CUDA kernel can use the very functions the CPU kernels (kernels/cpu/AmpKernels.cpp) and the CPU
// tests run.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define TENSOR_AMP_HD __host__ __device__
#else
#define TENSOR_AMP_HD
#endif

namespace tensor::amp_math {

/// True for +-inf and NaN. Computed on the value widened to float (or double), so half and
/// bfloat16 infinities and NaNs are caught too.
template <class T>
TENSOR_AMP_HD inline bool non_finite(T v) {
  return !std::isfinite(v);
}

/// One gradient element unscaled: g * inv_scale. Applied to every element, finite or not (the
/// step is skipped anyway when one is not, and libtorch does the same).
template <class T>
TENSOR_AMP_HD inline T unscale(T g, T inv_scale) {
  return g * inv_scale;
}

/// libtorch's _amp_update_scale_ on one scale: after an overflow (found_inf != 0) the scale is
/// multiplied by backoff_factor and the count of clean steps restarts; after growth_interval clean
/// steps in a row it is multiplied by growth_factor (unless that overflows float32, then it stays).
TENSOR_AMP_HD inline void update_scale(float& scale, int32_t& growth_tracker, float found_inf, double growth_factor,
                                       double backoff_factor, int64_t growth_interval) {
  if (found_inf != 0.0f) {
    scale = static_cast<float>(scale * backoff_factor);
    growth_tracker = 0;
    return;
  }
  const int64_t successful = static_cast<int64_t>(growth_tracker) + 1;
  if (successful >= growth_interval) {
    const float grown = static_cast<float>(scale * growth_factor);
    if (std::isfinite(grown)) scale = grown;
    growth_tracker = 0;
  } else {
    growth_tracker = static_cast<int32_t>(successful);
  }
}

}  // namespace tensor::amp_math
