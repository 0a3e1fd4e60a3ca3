// The contract between the CUDA backend's host code (src/cuda/CUDAElementwise.cpp, which reads a
// built TensorIterator) and the elementwise launchers of kernels/cuda/*.cu. Plain data: nvcc
// never sees TensorIterator, fmt or OpenMP.
#pragma once

#include <cstdint>

#include "kernels/OpList.h"
#include "tensor/core/ScalarType.h"

namespace tensor::cuda_kernels {

constexpr int kMaxOperands = 4;  // the output and up to three inputs (where: cond, a, b)
constexpr int kMaxDims = 8;

/// A value passed to a kernel as an argument: a CPU scalar operand (x + 2), or alpha. Integral
/// dtypes read `i`, floating ones `d`, so both are exact.
struct ScalarArg {
  double d = 0;
  int64_t i = 0;
};

/// One elementwise launch: operand 0 is the output, inputs follow; dim 0 is innermost. Every
/// input has the compute dtype `dtype`; the output has `out_dtype` (dtype, or bool).
struct ElementwiseLaunch {
  int ntensors = 0;
  char* data[kMaxOperands] = {};
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};  // bytes
  bool is_scalar[kMaxOperands] = {};              // a CPU scalar: value in scalar[op], no memory
  ScalarArg scalar[kMaxOperands];
  ScalarType dtype = ScalarType::Float;
  ScalarType out_dtype = ScalarType::Float;
  void* stream = nullptr;  // cudaStream_t

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
};

/// Launch status: 0 (cudaSuccess) or a cudaError_t. -1: the op has no kernel for the dtype.
using LaunchStatus = int;
constexpr LaunchStatus kNoKernelForDtype = -1;

/// The binary ops of launch_binary_compare (comparison, logical and bitwise); the rest are
/// launch_binary_arith's.
constexpr bool is_compare_op(int op) {
  using B = cpu::BinaryOp;
  const B b = static_cast<B>(op);
  return b == B::Eq || b == B::Ne || b == B::Lt || b == B::Le || b == B::Gt || b == B::Ge || b == B::LogicalAnd ||
         b == B::LogicalOr || b == B::LogicalXor || b == B::BitAnd || b == B::BitOr || b == B::BitXor;
}

/// The launchers, one per op family (kernels/cuda/UnaryKernels.cu, BinaryKernels*.cu). `op` is
/// the op-list index (cpu::UnaryOp / cpu::BinaryOp). The launch must fit 32-bit indexing
/// (src/cuda/CUDAElementwise.cpp splits larger ones).
LaunchStatus launch_unary(int op, const ElementwiseLaunch& l);
LaunchStatus launch_binary_arith(int op, const ElementwiseLaunch& l, ScalarArg alpha);
LaunchStatus launch_binary_compare(int op, const ElementwiseLaunch& l);
/// copy_ / fill_ (kernels/cuda/CopyKernels.cu): out (out_dtype) = input 1 (dtype), converted;
/// input 1 may be a scalar argument (a fill). Any real dtype pair.
LaunchStatus launch_copy(const ElementwiseLaunch& l);

}  // namespace tensor::cuda_kernels
