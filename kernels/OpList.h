// The elementwise op list: each op is named once, here (Note [One op list]).
#pragma once

// Note [One op list]
// An elementwise op's identity used to be spread over eleven lists: the kernel enum, the name
// table, the dtype switches, the dispatcher tables, the kernel tables, the derivatives switch
// and the public definitions. Now every one of them is generated from the X-macros below, or
// statically checked against them:
//   - kernels::UnaryOp / BinaryOp, the names and the dtype rules      (this header)
//   - the dispatcher tables and the public functions/methods        (src/ops/ElementwiseOps.cpp)
//   - the CPU kernel tables and the dtypes each kernel accepts       (kernels/cpu/*Kernels.cpp)
//   - the derivatives table: a switch without `default`, compiled with -Werror=switch, so an
//     op with neither a row nor `not_differentiable()` does not build (src/autograd/Derivatives.cpp)
//   - the test table: a test fails when a public op has no row (tests/test_op_list.cpp)
// It lives in kernels/ because it is the lowest layer that needs it: kernels, front ends,
// autograd and tests all include it downwards. It includes nothing.
//
// Columns: X(Enum, name, dtypes, result, api)
//   Enum    the enumerator in kernels::UnaryOp / kernels::BinaryOp (also named cpu::).
//   name    the public name: tensor::name, Tensor::name, error messages, the test table's row.
//   dtypes  the input dtypes the kernels accept, over B (bool), I (integers), F (floating,
//           half types included) and C (complex); anything else raises a tensor::Error.
//   result  the output dtype: Same (the common dtype), ToFloat (integer inputs promote to the
//           default float dtype first), Bool, or ToReal (complex -> its real dtype).
//   api     the public surface generated for it: Full (function, _out, method and in-place
//           method), Fn (function, _out and a const method), Alpha (add/sub: written by hand for
//           their alpha argument) or Internal (reached through another public op).

// NOLINTBEGIN(cppcoreguidelines-macro-usage)
#define TENSOR_UNARY_OPS(X)                                   \
  X(Neg, neg, I | F | C, Same, Full)                          \
  X(Abs, abs, I | F | C, ToReal, Full)                        \
  X(Exp, exp, F | C, ToFloat, Full)                           \
  X(Exp2, exp2, F | C, ToFloat, Full)                         \
  X(Log, log, F | C, ToFloat, Full)                           \
  X(Log2, log2, F | C, ToFloat, Full)                         \
  X(Log10, log10, F | C, ToFloat, Full)                       \
  X(Log1p, log1p, F | C, ToFloat, Full)                       \
  X(Expm1, expm1, F | C, ToFloat, Full)                       \
  X(Sqrt, sqrt, F | C, ToFloat, Full)                         \
  X(Rsqrt, rsqrt, F | C, ToFloat, Full)                       \
  X(Sin, sin, F | C, ToFloat, Full)                           \
  X(Cos, cos, F | C, ToFloat, Full)                           \
  X(Tan, tan, F | C, ToFloat, Full)                           \
  X(Asin, asin, F | C, ToFloat, Full)                         \
  X(Acos, acos, F | C, ToFloat, Full)                         \
  X(Atan, atan, F | C, ToFloat, Full)                         \
  X(Sinh, sinh, F | C, ToFloat, Full)                         \
  X(Cosh, cosh, F | C, ToFloat, Full)                         \
  X(Tanh, tanh, F | C, ToFloat, Full)                         \
  X(Sigmoid, sigmoid, F | C, ToFloat, Full)                   \
  X(Relu, relu, I | F, Same, Full)                            \
  X(Gelu, gelu, F, ToFloat, Full)                             \
  X(GeluTanh, gelu_tanh, F, ToFloat, Internal)                \
  X(Silu, silu, F, ToFloat, Full)                             \
  X(Erf, erf, F, ToFloat, Full)                               \
  X(Floor, floor, I | F, Same, Full)                          \
  X(Ceil, ceil, I | F, Same, Full)                            \
  X(Round, round, I | F, Same, Full)                          \
  X(Trunc, trunc, I | F, Same, Full)                          \
  X(Sign, sign, B | I | F, Same, Full)                        \
  X(Reciprocal, reciprocal, F | C, ToFloat, Full)             \
  X(Square, square, I | F | C, Same, Full)                    \
  X(LogicalNot, logical_not, B | I | F | C, Bool, Full)       \
  X(BitNot, bitwise_not, B | I, Same, Full)                   \
  X(IsNan, isnan, B | I | F | C, Bool, Fn)                    \
  X(Conj, conj_physical, B | I | F | C, Same, Internal)

#define TENSOR_BINARY_OPS(X)                                  \
  X(Add, add, B | I | F | C, Same, Alpha)                     \
  X(Sub, sub, B | I | F | C, Same, Alpha)                     \
  X(Mul, mul, B | I | F | C, Same, Full)                      \
  X(Div, div, F | C, ToFloat, Full)                           \
  X(DivTrunc, div, I | F, Same, Internal)                     \
  X(DivFloor, div, I | F, Same, Internal)                     \
  X(Remainder, remainder, I | F, Same, Full)                  \
  X(Fmod, fmod, I | F, Same, Full)                            \
  X(Pow, pow, I | F | C, Same, Full)                          \
  X(Maximum, maximum, B | I | F, Same, Full)                  \
  X(Minimum, minimum, B | I | F, Same, Full)                  \
  X(Atan2, atan2, F, ToFloat, Full)                           \
  X(Hypot, hypot, F, ToFloat, Full)                           \
  X(Logaddexp, logaddexp, F, ToFloat, Full)                   \
  X(Xlogy, xlogy, F, ToFloat, Full)                           \
  X(Copysign, copysign, F, ToFloat, Full)                     \
  X(Eq, eq, B | I | F | C, Bool, Full)                        \
  X(Ne, ne, B | I | F | C, Bool, Full)                        \
  X(Lt, lt, B | I | F, Bool, Full)                            \
  X(Le, le, B | I | F, Bool, Full)                            \
  X(Gt, gt, B | I | F, Bool, Full)                            \
  X(Ge, ge, B | I | F, Bool, Full)                            \
  X(LogicalAnd, logical_and, B | I | F | C, Bool, Full)       \
  X(LogicalOr, logical_or, B | I | F | C, Bool, Full)         \
  X(LogicalXor, logical_xor, B | I | F | C, Bool, Full)       \
  X(BitAnd, bitwise_and, B | I, Same, Full)                   \
  X(BitOr, bitwise_or, B | I, Same, Full)                     \
  X(BitXor, bitwise_xor, B | I, Same, Full)
// NOLINTEND(cppcoreguidelines-macro-usage)

namespace tensor::oplist {

/// Dtype groups of the `dtypes` column (the same bits as DtypeGroups in src/core/DtypeVisit.h).
enum Dtypes : unsigned { B = 1, I = 2, F = 4 | 8, C = 16 };
/// The `result` column.
enum class Result { Same, ToFloat, Bool, ToReal };
/// The `api` column.
enum class Api { Full, Fn, Alpha, Internal };

/// Facts about one op, for code that iterates the list at run time (the tests, error messages).
struct OpInfo {
  const char* name;
  unsigned dtypes;
  Result result;
  Api api;
};

#define TENSOR_OPLIST_INFO(Enum, name, dtypes, result, api) OpInfo{#name, (dtypes), Result::result, Api::api},
inline constexpr OpInfo kUnary[] = {TENSOR_UNARY_OPS(TENSOR_OPLIST_INFO)};
inline constexpr OpInfo kBinary[] = {TENSOR_BINARY_OPS(TENSOR_OPLIST_INFO)};
#undef TENSOR_OPLIST_INFO

constexpr int kNumUnary = sizeof(kUnary) / sizeof(kUnary[0]);
constexpr int kNumBinary = sizeof(kBinary) / sizeof(kBinary[0]);

}  // namespace tensor::oplist

namespace tensor {

class TensorIterator;
class Scalar;
/// A backend's kernel for one elementwise op, over a built TensorIterator whose operand 0 is
/// the output. Binary kernels get alpha (add/sub compute a +/- alpha * b; others ignore it).
using UnaryKernel = void (*)(const TensorIterator& iter);
using BinaryKernel = void (*)(const TensorIterator& iter, const Scalar& alpha);

}  // namespace tensor

namespace tensor::kernels {

#define TENSOR_OPLIST_ENUM(Enum, name, dtypes, result, api) Enum,
/// Elementwise ops, in op-list order (the value indexes every generated table). Backend-neutral:
/// every backend's kernel tables are indexed by them.
enum class UnaryOp : int { TENSOR_UNARY_OPS(TENSOR_OPLIST_ENUM) };
enum class BinaryOp : int { TENSOR_BINARY_OPS(TENSOR_OPLIST_ENUM) };
#undef TENSOR_OPLIST_ENUM

/// The op list's row of an op.
constexpr const oplist::OpInfo& info(UnaryOp op) { return oplist::kUnary[static_cast<int>(op)]; }
constexpr const oplist::OpInfo& info(BinaryOp op) { return oplist::kBinary[static_cast<int>(op)]; }

}  // namespace tensor::kernels

namespace tensor::cpu {

// The names the CPU kernels, kernels/math and the CUDA kernels were written against.
using kernels::BinaryOp;
using kernels::info;
using kernels::UnaryOp;

}  // namespace tensor::cpu
