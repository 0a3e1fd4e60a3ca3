// Internal: CPU elementwise kernels. Each runs over a built TensorIterator whose operand 0
// is the output (Note [TensorIterator]); SIMD variants are chosen at run time per ISA.
#pragma once

#include "kernels/OpList.h"
#include "src/core/TensorIterator.h"
#include "tensor/core/Scalar.h"

namespace tensor::cpu {

/// The CPU kernel of each elementwise op, indexed by op (constant-initialized, so usable
/// from static initializers).
extern const UnaryKernel kUnaryKernels[oplist::kNumUnary];
extern const BinaryKernel kBinaryKernels[oplist::kNumBinary];

/// out = op(a, b) with the loops alone (no oneDNN); Add and Sub use out = a +/- alpha * b.
/// Comparisons write bool. `name` is the op name for errors about unsupported dtypes.
void binary_kernel(const TensorIterator& iter, BinaryOp op, const Scalar& alpha, const char* name);
/// out = op(a) with the loops alone (no oneDNN).
void unary_kernel(const TensorIterator& iter, UnaryOp op, const char* name);
/// out = in converted to out's dtype (every pair of the 12 dtypes).
void copy_kernel(const TensorIterator& iter);
/// out = value.
void fill_kernel(const TensorIterator& iter, const Scalar& value);
/// out = cond ? a : b (cond is operand 1, read as its own dtype).
void where_kernel(const TensorIterator& iter);
/// dst[r * d_row + c] = src[r + c * s_col] for 4-byte elements (a transposed 2-D copy).
void transpose32(uint32_t* dst, const uint32_t* src, int64_t rows, int64_t cols, int64_t d_row, int64_t s_col);
/// out = min(max(a, lo), hi); either bound may be absent.
void clamp_kernel(const TensorIterator& iter, const Scalar* lo, const Scalar* hi);
/// out = self <= threshold ? 0 : grad (operands: out, grad, self; real dtypes).
void threshold_backward_kernel(const TensorIterator& iter, const Scalar& threshold);

}  // namespace tensor::cpu
