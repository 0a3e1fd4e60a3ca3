// The arithmetic binary ops of the op list on CUDA (comparisons, logical and bitwise ops are in
// BinaryCompareKernels.cu).
#include "kernels/cuda/BinaryKernels.cuh"

namespace tensor::cuda_kernels {
namespace {

template <BinaryOp Op>
LaunchStatus launch_op(const ElementwiseLaunch& l, ScalarArg alpha) {
  if constexpr (is_compare(Op)) return kNoKernelForDtype;  // launch_binary_compare's
  else return launch_binary_op<Op>(l, alpha);
}

using Launcher = LaunchStatus (*)(const ElementwiseLaunch&, ScalarArg);
#define TENSOR_CUDA_BINARY(Enum, name, dtypes, result, api) &launch_op<BinaryOp::Enum>,
constexpr Launcher kLaunchers[] = {TENSOR_BINARY_OPS(TENSOR_CUDA_BINARY)};
#undef TENSOR_CUDA_BINARY

}  // namespace

LaunchStatus launch_binary_arith(int op, const ElementwiseLaunch& l, ScalarArg alpha) { return kLaunchers[op](l, alpha); }

}  // namespace tensor::cuda_kernels
