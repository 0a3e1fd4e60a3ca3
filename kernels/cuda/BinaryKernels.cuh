// Shared by the binary-op launchers (kernels/cuda/BinaryArithKernels.cu, BinaryCompareKernels.cu),
// which split the op list in two so nvcc compiles them in parallel.
#pragma once

#include "kernels/cuda/Loops.cuh"
#include "kernels/math/Binary.h"

namespace tensor::cuda_kernels {

using cpu::BinaryOp;

constexpr bool is_compare(BinaryOp op) { return is_compare_op(static_cast<int>(op)); }

template <BinaryOp Op>
struct BinaryFn {
  template <class T>
  TENSOR_HD_INLINE auto operator()(T a, T b) const {
    return math::binary_op<Op>(a, b);
  }
};

template <BinaryOp Op, class T>
struct AddAlphaFn {
  T alpha;
  TENSOR_HD_INLINE T operator()(T a, T b) const { return math::add_alpha<Op>(a, b, alpha); }
};

/// op over launch `l`; add and sub with alpha != 1 compute a +/- alpha * b.
template <BinaryOp Op>
LaunchStatus launch_binary_op(const ElementwiseLaunch& l, ScalarArg alpha) {
  return dispatch_real<cpu::info(Op).dtypes>(l.dtype, [&](auto tag) -> LaunchStatus {
    using T = typename decltype(tag)::type;
    using op_t = math::opmath_t<T>;
    using R = decltype(math::binary_op<Op>(op_t{}, op_t{}));
    using out_t = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
    if constexpr ((Op == BinaryOp::Add || Op == BinaryOp::Sub) && !std::is_same_v<T, bool>) {
      const op_t al = scalar_value<op_t>(alpha);
      if (!(al == op_t(1))) return launch<T, T, 2>(l, AddAlphaFn<Op, op_t>{al});
    }
    return launch<out_t, T, 2>(l, BinaryFn<Op>{});
  });
}

}  // namespace tensor::cuda_kernels
