// Internal: CPU elementwise kernels. Each runs over a built TensorIterator whose operand 0
// is the output (Note [TensorIterator]); SIMD variants are chosen at run time per ISA.
#pragma once

#include "src/core/TensorIterator.h"
#include "tensor/core/Scalar.h"

namespace tensor::cpu {

enum class BinaryOp : int {
  Add, Sub, Mul, Div, DivTrunc, DivFloor, Remainder, Fmod, Pow, Maximum, Minimum, Atan2,
  Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor, BitAnd, BitOr, BitXor,
};

enum class UnaryOp : int {
  Neg, Abs, Exp, Exp2, Log, Log2, Log10, Log1p, Expm1, Sqrt, Rsqrt, Sin, Cos, Tan, Asin, Acos, Atan,
  Sinh, Cosh, Tanh, Sigmoid, Relu, Gelu, Silu, Erf, Floor, Ceil, Round, Trunc, Sign, Reciprocal,
  Square, LogicalNot, BitNot, IsNan, Conj,
};

/// out = op(a, b); Add and Sub use out = a +/- alpha * b. Comparisons write bool. `name`
/// is the public op name for errors about unsupported dtypes.
void binary_kernel(const TensorIterator& iter, BinaryOp op, const Scalar& alpha, const char* name);
/// out = op(a).
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
