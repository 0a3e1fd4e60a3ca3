// Front ends of the elementwise ops: dtype rules, checks, and the dispatcher tables.
#include "src/ops/ElementwiseOps.h"
#include "src/cpu/OneDNNEltwise.h"
#include "src/autograd/Functions.h"

#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
using cpu::BinaryOp;
using cpu::UnaryOp;

namespace {

constexpr const char* kBinaryNames[] = {
    "add", "sub", "mul", "div", "div", "div", "remainder", "fmod", "pow", "maximum", "minimum", "atan2",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor"};
constexpr const char* kUnaryNames[] = {
    "neg", "abs", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "relu", "gelu", "silu", "erf", "floor", "ceil",
    "round", "trunc", "sign", "reciprocal", "square", "logical_not", "bitwise_not", "isnan", "conj_physical"};

constexpr bool bool_output(BinaryOp op) { return op >= BinaryOp::Eq && op <= BinaryOp::LogicalXor; }
constexpr bool int_to_float(BinaryOp op) { return op == BinaryOp::Div || op == BinaryOp::Atan2; }
constexpr bool int_to_float(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: case UnaryOp::Abs: case UnaryOp::Relu: case UnaryOp::Floor: case UnaryOp::Ceil:
    case UnaryOp::Round: case UnaryOp::Trunc: case UnaryOp::Sign: case UnaryOp::Square: case UnaryOp::LogicalNot:
    case UnaryOp::BitNot: case UnaryOp::IsNan: case UnaryOp::Conj: return false;
    default: return true;
  }
}

template <BinaryOp Op>
void configure(TensorIterator& it) {
  it.name(kBinaryNames[static_cast<int>(Op)]);
  if constexpr (bool_output(Op)) it.output_dtype(kBool);
  if constexpr (int_to_float(Op)) it.promote_integer_inputs_to_float();
}

// Checks that depend on values or on the computed dtype, before any kernel runs.
template <BinaryOp Op>
void check(const TensorIterator& it, const Tensor& b, const Scalar& alpha) {
  const char* name = kBinaryNames[static_cast<int>(Op)];
  ScalarType t = it.common_dtype();
  if constexpr (Op == BinaryOp::Sub) {
    TENSOR_CHECK(t != kBool, "sub: subtraction of two bool tensors is not supported; use logical_xor or bitwise_xor");
  }
  if constexpr (Op == BinaryOp::Add || Op == BinaryOp::Sub) {
    TENSOR_CHECK(!is_integral(t, true) || alpha.is_integral(true),
                 "{}: for integral input tensors (dtype {}), argument alpha must not be a floating point number", name, t);
    TENSOR_CHECK(is_complex(t) || !alpha.is_complex(), "{}: for non-complex input tensors (dtype {}), argument alpha must "
                 "not be a complex number", name, t);
  }
  if constexpr (Op == BinaryOp::DivTrunc || Op == BinaryOp::DivFloor || Op == BinaryOp::Remainder ||
                Op == BinaryOp::Fmod) {
    if (is_integral(t, true) && !it.is_meta() && b.numel() > 0)
      TENSOR_CHECK(!b.eq(0).any().template item<bool>(), "{}: integer division by zero (divisor of shape {}, dtype {})",
                   name, detail::shape_str(b.sizes()), b.dtype());
  }
  if constexpr (Op == BinaryOp::Pow) {
    // As PyTorch: a negative Scalar exponent is an error; a tensor exponent follows powi rules.
    if (is_integral(t, true) && b.unsafeGetTensorImpl()->is_wrapped_number())
      TENSOR_CHECK(b.item().to_long() >= 0, "pow: integers to negative integer powers are not allowed (dtype {})", t);
  }
}

template <BinaryOp Op>
Tensor binary_fn(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  TensorIterator it;
  configure<Op>(it);
  it.add_output().add_input(a).add_input(b);
  it.build();
  check<Op>(it, b, alpha);
  if (!it.is_meta()) cpu::binary_kernel(it, Op, alpha, kBinaryNames[static_cast<int>(Op)]);
  return it.output();
}

template <BinaryOp Op>
Tensor& binary_inplace(Tensor& self, const Tensor& b, const Scalar& alpha) {
  TensorIterator it;
  configure<Op>(it);
  it.add_output(self).add_input(self).add_input(b).inplace();
  it.build();
  check<Op>(it, b, alpha);
  if (!it.is_meta()) {
    cpu::binary_kernel(it, Op, alpha, kBinaryNames[static_cast<int>(Op)]);
    it.finish();
  }
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

template <BinaryOp Op>
Tensor& binary_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  TensorIterator it;
  configure<Op>(it);
  it.add_output(out).add_input(a).add_input(b);
  it.build();
  check<Op>(it, b, alpha);
  if (!it.is_meta()) {
    cpu::binary_kernel(it, Op, alpha, kBinaryNames[static_cast<int>(Op)]);
    it.finish();
  }
  out.unsafeGetTensorImpl()->bump_version();
  return out;
}

/// The CPU kernel of a unary op: oneDNN where it is faster (Note [oneDNN eltwise]), else the loops.
template <UnaryOp Op>
void run_unary(const TensorIterator& it) {
  if constexpr (Op == UnaryOp::Gelu || Op == UnaryOp::Tanh || Op == UnaryOp::Sigmoid) {
    if (cpu::onednn_unary(it, Op)) return;
  }
  cpu::unary_kernel(it, Op, kUnaryNames[static_cast<int>(Op)]);
}

template <UnaryOp Op>
void configure(TensorIterator& it, const Tensor& a) {
  it.name(kUnaryNames[static_cast<int>(Op)]);
  if constexpr (Op == UnaryOp::LogicalNot || Op == UnaryOp::IsNan) it.output_dtype(kBool);
  if constexpr (int_to_float(Op)) it.promote_integer_inputs_to_float();
  if constexpr (Op == UnaryOp::Abs) {
    if (is_complex(a.dtype())) it.output_dtype(to_real_type(a.dtype()));
  }
  if constexpr (Op == UnaryOp::Neg) {
    TENSOR_CHECK(a.dtype() != kBool, "neg: negation of a bool tensor (shape {}) is not supported; use logical_not",
                 detail::shape_str(a.sizes()));
  }
}

template <UnaryOp Op>
Tensor unary_fn(const Tensor& a) {
  TensorIterator it;
  configure<Op>(it, a);
  it.add_output().add_input(a);
  it.build();
  if (!it.is_meta()) run_unary<Op>(it);
  return it.output();
}

template <UnaryOp Op>
Tensor& unary_inplace(Tensor& self) {
  TensorIterator it;
  configure<Op>(it, self);
  it.add_output(self).add_input(self).inplace();
  it.build();
  if (!it.is_meta()) {
    run_unary<Op>(it);
    it.finish();
  }
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

template <UnaryOp Op>
Tensor& unary_out(Tensor& out, const Tensor& a) {
  TensorIterator it;
  configure<Op>(it, a);
  it.add_output(out).add_input(a);
  it.build();
  if (!it.is_meta()) {
    run_unary<Op>(it);
    it.finish();
  }
  out.unsafeGetTensorImpl()->bump_version();
  return out;
}

using dispatch::backend_def;

#define BINARY_DEFS(Op)                                                   \
  BinaryOpDefs{backend_def<BinaryFn>(kBinaryNames[int(BinaryOp::Op)], &binary_fn<BinaryOp::Op>),        \
               backend_def<BinaryInplaceFn>(kBinaryNames[int(BinaryOp::Op)], &binary_inplace<BinaryOp::Op>), \
               backend_def<BinaryOutFn>(kBinaryNames[int(BinaryOp::Op)], &binary_out<BinaryOp::Op>)},
#define UNARY_DEFS(Op)                                                    \
  UnaryOpDefs{backend_def<UnaryFn>(kUnaryNames[int(UnaryOp::Op)], &unary_fn<UnaryOp::Op>),           \
              backend_def<UnaryInplaceFn>(kUnaryNames[int(UnaryOp::Op)], &unary_inplace<UnaryOp::Op>), \
              backend_def<UnaryOutFn>(kUnaryNames[int(UnaryOp::Op)], &unary_out<UnaryOp::Op>)},

BinaryOpDefs g_binary[] = {
    BINARY_DEFS(Add) BINARY_DEFS(Sub) BINARY_DEFS(Mul) BINARY_DEFS(Div) BINARY_DEFS(DivTrunc) BINARY_DEFS(DivFloor)
    BINARY_DEFS(Remainder) BINARY_DEFS(Fmod) BINARY_DEFS(Pow) BINARY_DEFS(Maximum) BINARY_DEFS(Minimum)
    BINARY_DEFS(Atan2) BINARY_DEFS(Eq) BINARY_DEFS(Ne) BINARY_DEFS(Lt) BINARY_DEFS(Le) BINARY_DEFS(Gt) BINARY_DEFS(Ge)
    BINARY_DEFS(LogicalAnd) BINARY_DEFS(LogicalOr) BINARY_DEFS(LogicalXor) BINARY_DEFS(BitAnd) BINARY_DEFS(BitOr)
    BINARY_DEFS(BitXor)};
UnaryOpDefs g_unary[] = {
    UNARY_DEFS(Neg) UNARY_DEFS(Abs) UNARY_DEFS(Exp) UNARY_DEFS(Exp2) UNARY_DEFS(Log) UNARY_DEFS(Log2) UNARY_DEFS(Log10)
    UNARY_DEFS(Log1p) UNARY_DEFS(Expm1) UNARY_DEFS(Sqrt) UNARY_DEFS(Rsqrt) UNARY_DEFS(Sin) UNARY_DEFS(Cos)
    UNARY_DEFS(Tan) UNARY_DEFS(Asin) UNARY_DEFS(Acos) UNARY_DEFS(Atan) UNARY_DEFS(Sinh) UNARY_DEFS(Cosh)
    UNARY_DEFS(Tanh) UNARY_DEFS(Sigmoid) UNARY_DEFS(Relu) UNARY_DEFS(Gelu) UNARY_DEFS(Silu) UNARY_DEFS(Erf)
    UNARY_DEFS(Floor) UNARY_DEFS(Ceil) UNARY_DEFS(Round) UNARY_DEFS(Trunc) UNARY_DEFS(Sign) UNARY_DEFS(Reciprocal)
    UNARY_DEFS(Square) UNARY_DEFS(LogicalNot) UNARY_DEFS(BitNot) UNARY_DEFS(IsNan) UNARY_DEFS(Conj)};
#undef BINARY_DEFS
#undef UNARY_DEFS
static_assert(sizeof(g_binary) / sizeof(g_binary[0]) == kNumBinaryOps);
static_assert(sizeof(g_unary) / sizeof(g_unary[0]) == kNumUnaryOps);

}  // namespace

BinaryOpDefs& binary_op(BinaryOp op) { return g_binary[static_cast<int>(op)]; }
UnaryOpDefs& unary_op(UnaryOp op) { return g_unary[static_cast<int>(op)]; }
const char* binary_name(BinaryOp op) { return kBinaryNames[static_cast<int>(op)]; }
const char* unary_name(UnaryOp op) { return kUnaryNames[static_cast<int>(op)]; }

}  // namespace ops

// ---- public API ----
using ops::binary_op;
using ops::unary_op;
using cpu::BinaryOp;
using cpu::UnaryOp;

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_op(BinaryOp::Add).functional(a, b, alpha); }
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) { return add(a, wrapped_scalar(b), alpha); }
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_op(BinaryOp::Add).out(out, a, b, alpha); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_op(BinaryOp::Sub).functional(a, b, alpha); }
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(a, wrapped_scalar(b), alpha); }
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_op(BinaryOp::Sub).out(out, a, b, alpha); }
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return tensor::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return tensor::add(*this, o, alpha); }
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return binary_op(BinaryOp::Add).inplace(*this, o, alpha); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) { return add_(wrapped_scalar(o), alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return tensor::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return tensor::sub(*this, o, alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return binary_op(BinaryOp::Sub).inplace(*this, o, alpha); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) { return sub_(wrapped_scalar(o), alpha); }

#define TENSOR_BINARY_PUBLIC(name, Op)                                                                             \
  Tensor name(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Op).functional(a, b, 1); }            \
  Tensor name(const Tensor& a, const Scalar& b) { return binary_op(BinaryOp::Op).functional(a, wrapped_scalar(b), 1); } \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Op).out(out, a, b, 1); } \
  Tensor Tensor::name(const Tensor& o) const { return tensor::name(*this, o); }                                    \
  Tensor Tensor::name(const Scalar& o) const { return tensor::name(*this, o); }                                    \
  Tensor& Tensor::name##_(const Tensor& o) { return binary_op(BinaryOp::Op).inplace(*this, o, 1); }                \
  Tensor& Tensor::name##_(const Scalar& o) { return binary_op(BinaryOp::Op).inplace(*this, wrapped_scalar(o), 1); }
TENSOR_BINARY_PUBLIC(mul, Mul)
TENSOR_BINARY_PUBLIC(div, Div)
TENSOR_BINARY_PUBLIC(remainder, Remainder)
TENSOR_BINARY_PUBLIC(fmod, Fmod)
TENSOR_BINARY_PUBLIC(pow, Pow)
TENSOR_BINARY_PUBLIC(maximum, Maximum)
TENSOR_BINARY_PUBLIC(minimum, Minimum)
TENSOR_BINARY_PUBLIC(atan2, Atan2)
TENSOR_BINARY_PUBLIC(eq, Eq)
TENSOR_BINARY_PUBLIC(ne, Ne)
TENSOR_BINARY_PUBLIC(lt, Lt)
TENSOR_BINARY_PUBLIC(le, Le)
TENSOR_BINARY_PUBLIC(gt, Gt)
TENSOR_BINARY_PUBLIC(ge, Ge)
TENSOR_BINARY_PUBLIC(logical_and, LogicalAnd)
TENSOR_BINARY_PUBLIC(logical_or, LogicalOr)
TENSOR_BINARY_PUBLIC(logical_xor, LogicalXor)
TENSOR_BINARY_PUBLIC(bitwise_and, BitAnd)
TENSOR_BINARY_PUBLIC(bitwise_or, BitOr)
TENSOR_BINARY_PUBLIC(bitwise_xor, BitXor)
#undef TENSOR_BINARY_PUBLIC

Tensor pow(const Scalar& base, const Tensor& exponent) { return pow(wrapped_scalar(base), exponent); }

Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  if (rounding_mode.empty()) return div(a, b);
  if (rounding_mode == "trunc") return binary_op(BinaryOp::DivTrunc).functional(a, b, 1);
  if (rounding_mode == "floor") return binary_op(BinaryOp::DivFloor).functional(a, b, 1);
  TENSOR_ERROR("div: rounding_mode must be \"trunc\", \"floor\" or empty, got \"{}\"", rounding_mode);
}

#define TENSOR_UNARY_PUBLIC(name, Op)                                                                 \
  Tensor name(const Tensor& a) { return unary_op(UnaryOp::Op).functional(a); }                        \
  Tensor& name##_out(Tensor& out, const Tensor& a) { return unary_op(UnaryOp::Op).out(out, a); }
#define TENSOR_UNARY_METHOD(name, Op)                                                  \
  Tensor Tensor::name() const { return tensor::name(*this); }                         \
  Tensor& Tensor::name##_() { return unary_op(UnaryOp::Op).inplace(*this); }
#define TENSOR_UNARY_BOTH(name, Op) TENSOR_UNARY_PUBLIC(name, Op) TENSOR_UNARY_METHOD(name, Op)
TENSOR_UNARY_BOTH(neg, Neg)
TENSOR_UNARY_BOTH(abs, Abs)
TENSOR_UNARY_BOTH(exp, Exp)
TENSOR_UNARY_BOTH(exp2, Exp2)
TENSOR_UNARY_BOTH(log, Log)
TENSOR_UNARY_BOTH(log2, Log2)
TENSOR_UNARY_BOTH(log10, Log10)
TENSOR_UNARY_BOTH(log1p, Log1p)
TENSOR_UNARY_BOTH(expm1, Expm1)
TENSOR_UNARY_BOTH(sqrt, Sqrt)
TENSOR_UNARY_BOTH(rsqrt, Rsqrt)
TENSOR_UNARY_BOTH(sin, Sin)
TENSOR_UNARY_BOTH(cos, Cos)
TENSOR_UNARY_BOTH(tan, Tan)
TENSOR_UNARY_BOTH(asin, Asin)
TENSOR_UNARY_BOTH(acos, Acos)
TENSOR_UNARY_BOTH(atan, Atan)
TENSOR_UNARY_BOTH(sinh, Sinh)
TENSOR_UNARY_BOTH(cosh, Cosh)
TENSOR_UNARY_BOTH(tanh, Tanh)
TENSOR_UNARY_BOTH(sigmoid, Sigmoid)
TENSOR_UNARY_BOTH(relu, Relu)
TENSOR_UNARY_BOTH(gelu, Gelu)
TENSOR_UNARY_BOTH(silu, Silu)
TENSOR_UNARY_BOTH(erf, Erf)
TENSOR_UNARY_BOTH(floor, Floor)
TENSOR_UNARY_BOTH(ceil, Ceil)
TENSOR_UNARY_BOTH(round, Round)
TENSOR_UNARY_BOTH(trunc, Trunc)
TENSOR_UNARY_BOTH(sign, Sign)
TENSOR_UNARY_BOTH(reciprocal, Reciprocal)
TENSOR_UNARY_BOTH(square, Square)
TENSOR_UNARY_BOTH(logical_not, LogicalNot)
TENSOR_UNARY_BOTH(bitwise_not, BitNot)
TENSOR_UNARY_PUBLIC(isnan, IsNan)
#undef TENSOR_UNARY_BOTH
#undef TENSOR_UNARY_METHOD
#undef TENSOR_UNARY_PUBLIC
Tensor Tensor::isnan() const { return tensor::isnan(*this); }

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrapped_scalar(a), b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrapped_scalar(a), b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator~(const Tensor& a) { return bitwise_not(a); }

// ---- clamp and where ----
Tensor& clamp_out(Tensor& out, const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  TENSOR_CHECK(!out.defined() || !autograd::GradMode::is_enabled() || !(a.requires_grad() || out.requires_grad()),
               "clamp_out: functions with out=... arguments don't support automatic differentiation, but one of the "
               "arguments requires grad (input shape {})", detail::shape_str(a.sizes()));
  TENSOR_CHECK(lo || hi, "clamp: at least one of min and max must be given (input shape {})", detail::shape_str(a.sizes()));
  TensorIterator it;
  it.name("clamp");
  // The bounds take part in promotion as weak types, as PyTorch does.
  Tensor lo_t = lo ? wrapped_scalar(*lo) : Tensor(), hi_t = hi ? wrapped_scalar(*hi) : Tensor();
  Tensor all[3] = {a, lo_t, hi_t};
  it.common_dtype(result_type_of(all, 3));
  it.add_output(out).add_input(a);
  it.build();
  TENSOR_CHECK(!is_complex(it.common_dtype()) && it.common_dtype() != kBool, "clamp: not supported for dtype {}", it.common_dtype());
  if (!it.is_meta()) {
    cpu::clamp_kernel(it, lo ? &*lo : nullptr, hi ? &*hi : nullptr);
    it.finish();
  }
  if (out.defined()) out.unsafeGetTensorImpl()->bump_version();
  else out = it.output();
  return out;
}
namespace {
Tensor clamp_kernel_fn(const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Tensor out;
  return clamp_out(out, a, lo, hi);
}
Tensor where_kernel_fn(const Tensor& cond, const Tensor& a, const Tensor& b) {
  TENSOR_CHECK(cond.dtype() == kBool, "where: condition must be a bool tensor, got {} of shape {}", cond.dtype(),
               detail::shape_str(cond.sizes()));
  TensorIterator it;
  it.name("where").add_output().add_input(cond).add_input(a).add_input(b).no_input_cast(1);
  it.build();
  if (!it.is_meta()) cpu::where_kernel(it);
  return it.output();
}
dispatch::OpDef<ops::ClampFn> g_clamp = dispatch::backend_def<ops::ClampFn>("clamp", &clamp_kernel_fn);
dispatch::OpDef<ops::WhereFn> g_where = dispatch::backend_def<ops::WhereFn>("where", &where_kernel_fn);
}  // namespace
dispatch::OpDef<ops::ClampFn>& ops::clamp_op() { return g_clamp; }
dispatch::OpDef<ops::WhereFn>& ops::where_op() { return g_where; }

Tensor clamp(const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi) { return g_clamp(a, lo, hi); }
Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const { return tensor::clamp(*this, lo, hi); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) {
  // While recording, the in-place clamp is the functional one of the old values copied back:
  // copy_ records the in-place write (Note [Differentiable copy_]).
  if (autograd::GradMode::is_enabled() && requires_grad() && autograd::copy_needs_recording(*this, *this)) {
    Tensor old = clone();
    return copy_(old.clamp(lo, hi));
  }
  return clamp_out(*this, *this, lo, hi);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return g_where(cond, a, b); }
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) { return where(cond, wrapped_scalar(a), b); }
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) { return where(cond, a, wrapped_scalar(b)); }

}  // namespace tensor
