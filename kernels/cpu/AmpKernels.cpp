// CPU kernel of _amp_foreach_non_finite_check_and_unscale_ (GradScaler.unscale_).
#include "kernels/cpu/AmpKernels.h"

#include <atomic>
#include <cstdint>

#include "kernels/AmpMath.h"
#include "src/core/Parallel.h"

namespace tensor::cpu {
namespace {

// One contiguous gradient: checks and unscales in the same pass (the gradient is read once).
// Half types are widened to float for both steps, as libtorch's opmath.
template <class T, class Acc>
bool unscale_contiguous(T* p, int64_t n, Acc inv_scale) {
  std::atomic<bool> bad{false};
  ::tensor::detail::parallel_range(n, ::tensor::detail::threads_for(n), [&](int64_t b, int64_t e) {
    bool local = false;
    for (int64_t i = b; i < e; ++i) {
      const Acc v = static_cast<Acc>(p[i]);
      local = local || amp_math::non_finite(v);
      p[i] = static_cast<T>(amp_math::unscale(v, inv_scale));
    }
    if (local) bad.store(true, std::memory_order_relaxed);
  });
  return bad.load(std::memory_order_relaxed);
}

bool unscale_one(const Tensor& g, float inv_scale) {
  switch (g.dtype()) {
    case ScalarType::Float: return unscale_contiguous(g.data_ptr<float>(), g.numel(), inv_scale);
    case ScalarType::Double: return unscale_contiguous(g.data_ptr<double>(), g.numel(), static_cast<double>(inv_scale));
    case ScalarType::Half: return unscale_contiguous(g.data_ptr<Half>(), g.numel(), inv_scale);
    case ScalarType::BFloat16: return unscale_contiguous(g.data_ptr<BFloat16>(), g.numel(), inv_scale);
    default: return false;  // the front end admits floating dtypes only
  }
}

}  // namespace

void amp_non_finite_check_and_unscale(TensorList grads, float* found_inf, float inv_scale) {
  for (const Tensor& g : grads) {
    if (g.numel() > 0 && unscale_one(g, inv_scale)) *found_inf = 1.0f;
  }
}

}  // namespace tensor::cpu
