// Every unary op of the op list on CUDA, for bool, the integers and the floating dtypes, over
// the shared formulas of kernels/math/Unary.h.
#include "kernels/cuda/Loops.cuh"
#include "kernels/math/Unary.h"

namespace tensor::cuda_kernels {
namespace {

using cpu::UnaryOp;

template <UnaryOp Op>
struct UnaryFn {
  template <class T>
  TENSOR_HD_INLINE auto operator()(T x) const {
    return math::unary_op<Op>(x);
  }
};

template <UnaryOp Op>
LaunchStatus launch_op(const ElementwiseLaunch& l) {
  return dispatch_real<cpu::info(Op).dtypes>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    using R = decltype(math::unary_op<Op>(math::opmath_t<T>{}));
    using out_t = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
    return launch<out_t, T, 1>(l, UnaryFn<Op>{});
  });
}

using Launcher = LaunchStatus (*)(const ElementwiseLaunch&);
#define TENSOR_CUDA_UNARY(Enum, name, dtypes, result, api) &launch_op<UnaryOp::Enum>,
constexpr Launcher kLaunchers[] = {TENSOR_UNARY_OPS(TENSOR_CUDA_UNARY)};
#undef TENSOR_CUDA_UNARY

}  // namespace

LaunchStatus launch_unary(int op, const ElementwiseLaunch& l) { return kLaunchers[op](l); }

}  // namespace tensor::cuda_kernels
