// CPU kernels of activation backward passes, compiled once per Highway target
// (Note [Per-ISA loops]).
#include "kernels/cpu/Elementwise.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/ActivationKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/Loops-inl.h"
#include "kernels/math/Select.h"

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {

// out = self <= threshold ? 0 : grad (libtorch's threshold_backward: a NaN in self passes the
// gradient through). One pass, no temporaries; the select vectorizes to a masked blend.
void ThresholdBackwardImpl(const TensorIterator& iter, const Scalar& threshold) {
  visit_dtype<kGroupFloating>(iter.dtype(0), "threshold_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OT = opmath_t<T>;
    const OT th = threshold.to<OT>();
    iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
      // The same functor as the CUDA kernel (kernels/math/Select.h).
      loop_binary<T, T, T>(d, s, n0, n1, math::ThresholdBackwardOp<OT>{th});
    });
  });
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(ThresholdBackwardImpl);
void threshold_backward_kernel(const TensorIterator& iter, const Scalar& threshold) {
  HWY_DYNAMIC_DISPATCH(ThresholdBackwardImpl)(iter, threshold);
}
}  // namespace tensor::cpu
#endif
