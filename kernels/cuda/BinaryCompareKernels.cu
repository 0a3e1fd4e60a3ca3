// The comparison, logical and bitwise binary ops of the op list on CUDA.
#include "kernels/cuda/BinaryKernels.cuh"

namespace tensor::cuda_kernels {
namespace {

template <BinaryOp Op>
LaunchStatus launch_op(const ElementwiseLaunch& l) {
  if constexpr (!is_compare(Op)) return kNoKernelForDtype;  // launch_binary_arith's
  else return launch_binary_op<Op>(l, ScalarArg{1.0, 1});
}

using Launcher = LaunchStatus (*)(const ElementwiseLaunch&);
#define TENSOR_CUDA_BINARY(Enum, name, dtypes, result, api) &launch_op<BinaryOp::Enum>,
constexpr Launcher kLaunchers[] = {TENSOR_BINARY_OPS(TENSOR_CUDA_BINARY)};
#undef TENSOR_CUDA_BINARY

}  // namespace

LaunchStatus launch_binary_compare(int op, const ElementwiseLaunch& l) { return kLaunchers[op](l); }

}  // namespace tensor::cuda_kernels
