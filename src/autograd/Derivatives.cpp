// The derivatives table of the elementwise ops (Note [Derivatives table]) and the one
// recording template that turns its rows into Autograd kernels (Note [Recording template]).
#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>

#include "src/autograd/ConvFormulas.h"
#include "src/autograd/IndexFormulas.h"
#include "src/autograd/PoolNormFormulas.h"
#include "src/autograd/Record.h"
#include "src/autograd/ReduceFormulas.h"
#include "src/autograd/UnpoolFormulas.h"
#include "src/ops/CopyOps.h"
#include "src/ops/ElementwiseOps.h"
#include "src/ops/FoldOps.h"
#include "src/ops/IndexOps.h"
#include "src/ops/LinalgOps.h"
#include "src/ops/RearrangeOps.h"
#include "src/ops/ReduceOps.h"
#include "src/ops/UpsampleOps.h"
#include "tensor/nn/upsampling.h"
#include "src/ops/UnpoolOps.h"
#include "tensor/ops.h"

namespace tensor::autograd {
namespace {

using ops::BinaryOp;
using ops::UnaryOp;

// Note [Derivatives table]
// One row per op of the op list (kernels/OpList.h): PyTorch's node name, which values the
// formula needs saved (self, other, result), and a formula per input written with public ops,
// so that backward is itself differentiable (create_graph, double backward).
//
// Complex convention. Most rows are holomorphic functions and give their partial derivative
// d out / d input (`Deriv`). The table, not the row, turns it into the vector-Jacobian product
// of PyTorch's conjugate Wirtinger convention: grad_input = grad * conj(derivative). A row
// cannot forget the conjugate, and for real dtypes conj is free (it is the identity). The few
// non-holomorphic or real-only rows with a fused path (abs, relu, ...) give their whole
// product (`vjp`) and say why.
//
// Every op of the list has a case in the switches below, which have no `default`: with
// -Werror=switch (the pragma below) an op added to the list without a row, or without an
// explicit not_differentiable(), does not compile.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"

/// The values a formula may read: the saved inputs and result (undefined unless the row saves
/// them) and alpha (add/sub; 1 otherwise).
struct Vars {
  const Tensor& self;
  const Tensor& other;
  const Tensor& result;
  const Scalar& alpha;
};

/// A partial derivative as a row gives it: a tensor, or a number (1 passes grad unchanged).
struct Deriv {
  Deriv(Tensor t) : t(std::move(t)) {}  // NOLINT(google-explicit-constructor): rows return tensors
  Deriv(double s) : s(s) {}             // NOLINT(google-explicit-constructor)
  Deriv(const Scalar& s) : s(s) {}      // NOLINT(google-explicit-constructor)
  Tensor t;
  Scalar s{1.0};
};

using DerivFn = Deriv (*)(const Vars& v);
using VjpFn = Tensor (*)(const Vars& v, const Tensor& grad);

// Named apart from Record.h's arg(i) and kResult bits, which the TENSOR_ROW rows below use.
enum Saves : uint8_t { kSaveNone = 0, kSaveSelf = 1, kSaveOther = 2, kSaveResult = 4 };

// Note [Save only what a needed formula reads]
// A row names, per input, the saved values that input's formula reads (`need`); a call saves the
// union over the inputs that require grad, as libtorch's generated code saves a value only when
// a formula that reads it will run. So `x.div(2).exp_()` works (the gradient of x by a number
// needs neither x nor the result), while saving a value that a formula does not read would make
// a later in-place write fail backward for nothing. tests/test_saved_values.cpp checks every row
// of the op table for such a value: one whose in-place change breaks backward although
// changing it does not change the gradient.
struct Row {
  const char* node = nullptr;  // nullptr: not differentiable (outputs do not require grad)
  uint8_t saves = kSaveNone;   // the union of need[0] and need[1]
  uint8_t need[2] = {kSaveNone, kSaveNone};
  DerivFn d[2] = {nullptr, nullptr};  // holomorphic rows: d out / d input
  VjpFn vjp[2] = {nullptr, nullptr};  // the other rows: the whole product with grad
};

constexpr Row holo(const char* node, uint8_t saves, DerivFn d0, DerivFn d1 = nullptr) {
  Row r;
  r.node = node;
  r.saves = saves;
  r.need[0] = r.need[1] = saves;
  r.d[0] = d0;
  r.d[1] = d1;
  return r;
}
constexpr Row vjp(const char* node, uint8_t saves, VjpFn f0, VjpFn f1 = nullptr) {
  Row r;
  r.node = node;
  r.saves = saves;
  r.need[0] = r.need[1] = saves;
  r.vjp[0] = f0;
  r.vjp[1] = f1;
  return r;
}
constexpr Row not_differentiable() { return Row{}; }
/// The row with what each input's formula reads given apart (Note [Save only what a needed
/// formula reads]); a row without it saves `saves` whichever inputs require grad.
constexpr Row reads(Row r, uint8_t need_self, uint8_t need_other) {
  r.need[0] = need_self;
  r.need[1] = need_other;
  r.saves = need_self | need_other;
  return r;
}
/// The saved values a call needs, given which inputs require grad.
constexpr uint8_t saves_for(const Row& r, bool self_grad, bool other_grad) {
  return static_cast<uint8_t>((self_grad ? r.need[0] : 0) | (other_grad ? r.need[1] : 0));
}

// grad * conj(d): the convention, applied once for every holomorphic row.
Tensor times_conj(const Tensor& grad, const Deriv& d) {
  if (d.t.defined()) return grad * cj(d.t);
  if (d.s.is_complex()) return grad * Scalar(std::conj(d.s.to_complex()));
  const double s = d.s.to_double();
  if (s == 1.0) return grad;
  if (s == -1.0) return -grad;
  return grad * d.s;
}

// Rows read their saved values by name: v.self, v.other, v.result.
#define D(expr) [](const Vars& v) -> Deriv { return expr; }
#define VJP(expr) [](const Vars& v, const Tensor& g) -> Tensor { return expr; }

constexpr double kLn2 = 0.693147180559945309417;
constexpr double kLn10 = 2.302585092994045684018;
constexpr double kTwoOverSqrtPi = 1.128379167095512573896;

// Note [Fused relu backward]
// libtorch's rule: grad where out > 0, else 0 (a NaN output passes grad through). Without a
// graph being built (the usual backward) one fused pass, ops::threshold_backward, replaces
// gt + to + mul (three passes, two temporaries): ReluBackward0 on (64, 32, 28, 28) float,
// one thread, 1.6 ms -> 0.66 ms. With create_graph the same rule as a differentiable where.
Tensor relu_backward(const Tensor& g, const Tensor& y) {
  if (!GradMode::is_enabled() && g.device() == y.device() && g.dtype() == y.dtype() && is_floating_point(g.dtype()))
    return ops::threshold_backward(g, y, 0);
  return where(y.le(0), 0.0, g);
}

// d/dx of 0.5 x (1 + tanh(u)), u = b (x + k x^3): 0.5 (1 + t) + 0.5 x (1 - t^2) b (1 + 3 k x^2)
// with t = tanh(u) (PyTorch's GeluBackward0 for approximate="tanh").
Tensor gelu_tanh_derivative(const Tensor& x) {
  constexpr double b = 0.79788456080286535588, k = 0.044715;
  Tensor x2 = x * x;
  Tensor t = ((x + x2 * x * k) * b).tanh();
  return (t + 1) * 0.5 + x * 0.5 * (1 - t * t) * (x2 * (3 * k) + 1) * b;
}

// d/dx x * sigmoid(x) = s * (1 + x * (1 - s)).
Tensor silu_derivative(const Tensor& x) {
  Tensor s = x.sigmoid();
  return s * (1 + x * (1 - s));
}

// The complex sign z / |z| (0 at 0), for abs's gradient.
Tensor sgn(const Tensor& x) {
  Tensor mag = x.abs();
  Tensor safe = where(mag.eq(0), 1.0, mag);
  return (x / safe) * mag.ne(0).to(mag.dtype());
}

constexpr Row unary_row(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return holo("NegBackward0", kSaveNone, D(-1.0));
    // |z| is not holomorphic: its product is grad * sgn(z) (PyTorch's abs_backward).
    case UnaryOp::Abs: return vjp("AbsBackward0", kSaveSelf, VJP(v.self.is_complex() ? g * sgn(v.self) : g * v.self.sign()));
    case UnaryOp::Exp: return holo("ExpBackward0", kSaveResult, D(v.result));
    case UnaryOp::Exp2: return holo("Exp2Backward0", kSaveResult, D(v.result * kLn2));
    case UnaryOp::Log: return holo("LogBackward0", kSaveSelf, D(v.self.reciprocal()));
    case UnaryOp::Log2: return holo("Log2Backward0", kSaveSelf, D((v.self * kLn2).reciprocal()));
    case UnaryOp::Log10: return holo("Log10Backward0", kSaveSelf, D((v.self * kLn10).reciprocal()));
    case UnaryOp::Log1p: return holo("Log1pBackward0", kSaveSelf, D((v.self + 1).reciprocal()));
    case UnaryOp::Expm1: return holo("Expm1Backward0", kSaveResult, D(v.result + 1));
    case UnaryOp::Sqrt: return holo("SqrtBackward0", kSaveResult, D((v.result * 2).reciprocal()));
    case UnaryOp::Rsqrt: return holo("RsqrtBackward0", kSaveResult, D(v.result * v.result * v.result * -0.5));
    case UnaryOp::Sin: return holo("SinBackward0", kSaveSelf, D(v.self.cos()));
    case UnaryOp::Cos: return holo("CosBackward0", kSaveSelf, D(-v.self.sin()));
    case UnaryOp::Tan: return holo("TanBackward0", kSaveResult, D(v.result * v.result + 1));
    case UnaryOp::Asin: return holo("AsinBackward0", kSaveSelf, D((1 - v.self * v.self).rsqrt()));
    case UnaryOp::Acos: return holo("AcosBackward0", kSaveSelf, D(-(1 - v.self * v.self).rsqrt()));
    case UnaryOp::Atan: return holo("AtanBackward0", kSaveSelf, D((v.self * v.self + 1).reciprocal()));
    case UnaryOp::Sinh: return holo("SinhBackward0", kSaveSelf, D(v.self.cosh()));
    case UnaryOp::Cosh: return holo("CoshBackward0", kSaveSelf, D(v.self.sinh()));
    case UnaryOp::Tanh: return holo("TanhBackward0", kSaveResult, D(1 - v.result * v.result));
    case UnaryOp::Sigmoid: return holo("SigmoidBackward0", kSaveResult, D(v.result * (1 - v.result)));
    // Real-only, with a fused backward kernel (Note [Fused relu backward]).
    case UnaryOp::Relu: return vjp("ReluBackward0", kSaveResult, VJP(relu_backward(g, v.result)));
    case UnaryOp::Gelu: return holo("GeluBackward0", kSaveSelf, D((((v.self * M_SQRT1_2).erf() + 1) * 0.5) +
                                                               v.self * (v.self * v.self * -0.5).exp() *
                                                                   (0.5 * kTwoOverSqrtPi * M_SQRT1_2)));
    case UnaryOp::GeluTanh: return holo("GeluBackward0", kSaveSelf, D(gelu_tanh_derivative(v.self)));
    case UnaryOp::Silu: return holo("SiluBackward0", kSaveSelf, D(silu_derivative(v.self)));
    case UnaryOp::Erf: return holo("ErfBackward0", kSaveSelf, D((v.self * v.self * -1).exp() * kTwoOverSqrtPi));
    case UnaryOp::Reciprocal: return holo("ReciprocalBackward0", kSaveResult, D(-(v.result * v.result)));
    case UnaryOp::Square: return holo("PowBackward0", kSaveSelf, D(v.self * 2));
    // Piecewise constant: the gradient is 0 wherever it exists (PyTorch's rule).
    case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Round: case UnaryOp::Trunc: case UnaryOp::Sign:
      return vjp("ZeroGradBackward", kSaveNone, VJP(zeros_like(g)));
    // Bool or integer outputs; conj_physical is internal (Tensor::conj records its own view).
    case UnaryOp::LogicalNot: case UnaryOp::BitNot: case UnaryOp::IsNan: case UnaryOp::Conj:
      return not_differentiable();
  }
  return not_differentiable();
}

// copysign's gradient for self: the sign flip result / self, 0 where self is 0 (PyTorch's rule).
Tensor copysign_ratio(const Tensor& self, const Tensor& result) {
  return where(self.eq(0), 0.0, result / self);
}

constexpr Row binary_row(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return holo("AddBackward0", kSaveNone, D(1.0), D(v.alpha));
    case BinaryOp::Sub: return holo("SubBackward0", kSaveNone, D(1.0), D(-v.alpha));
    case BinaryOp::Mul: return reads(holo("MulBackward0", kSaveSelf | kSaveOther, D(v.other), D(v.self)), kSaveOther, kSaveSelf);
    // d/dother is -self / other^2 (libtorch's form): saving self rather than the result lets
    // the result be written in place, `a.div(b).exp_()`, as libtorch allows.
    case BinaryOp::Div: return reads(holo("DivBackward0", kSaveSelf | kSaveOther, D(v.other.reciprocal()),
                                          D(-v.self / (v.other * v.other))),
                                     kSaveOther, kSaveSelf | kSaveOther);
    case BinaryOp::Pow: return reads(holo("PowBackward1", kSaveSelf | kSaveOther | kSaveResult, D(v.other * v.self.pow(v.other - 1)),
                                          D(v.result * v.self.log())),
                                     kSaveSelf | kSaveOther, kSaveSelf | kSaveResult);
    // Real-only ops (atan2 ... copysign accept no complex): their partials are real.
    case BinaryOp::Maximum: return holo("MaximumBackward0", kSaveSelf | kSaveOther,
                                        D(v.self.gt(v.other).to(v.self.dtype()) + v.self.eq(v.other).to(v.self.dtype()) * 0.5),
                                        D(v.other.gt(v.self).to(v.self.dtype()) + v.self.eq(v.other).to(v.self.dtype()) * 0.5));
    case BinaryOp::Minimum: return holo("MinimumBackward0", kSaveSelf | kSaveOther,
                                        D(v.self.lt(v.other).to(v.self.dtype()) + v.self.eq(v.other).to(v.self.dtype()) * 0.5),
                                        D(v.other.lt(v.self).to(v.self.dtype()) + v.self.eq(v.other).to(v.self.dtype()) * 0.5));
    case BinaryOp::Atan2: return holo("Atan2Backward0", kSaveSelf | kSaveOther, D(v.other / (v.self * v.self + v.other * v.other)),
                                      D(-v.self / (v.self * v.self + v.other * v.other)));
    case BinaryOp::Remainder: return reads(holo("RemainderBackward0", kSaveSelf | kSaveOther, D(1.0), D(-div(v.self, v.other, "floor"))),
                                           kSaveNone, kSaveSelf | kSaveOther);
    case BinaryOp::Fmod: return reads(holo("FmodBackward0", kSaveSelf | kSaveOther, D(1.0), D(-div(v.self, v.other, "trunc"))),
                                      kSaveNone, kSaveSelf | kSaveOther);
    case BinaryOp::Hypot: return reads(holo("HypotBackward0", kSaveSelf | kSaveOther | kSaveResult, D(v.self / v.result), D(v.other / v.result)),
                                       kSaveSelf | kSaveResult, kSaveOther | kSaveResult);
    case BinaryOp::Logaddexp: return holo("LogaddexpBackward0", kSaveSelf | kSaveOther, D(((v.other - v.self).exp() + 1).reciprocal()),
                                          D(((v.self - v.other).exp() + 1).reciprocal()));
    // Real-only. d/dself is log(other), written as PyTorch's xlogy(grad, other) so that a zero
    // grad gives 0 even where log(other) is -inf, and 0 where self == 0 and other <= 0.
    case BinaryOp::Xlogy: return Row{"XlogyBackward0", kSaveSelf | kSaveOther, {kSaveSelf | kSaveOther, kSaveSelf | kSaveOther},
                                     {nullptr, D(v.self / v.other)},
                                     {VJP(where(v.self.eq(0).logical_and(v.other.le(0)), 0.0, xlogy(g, v.other))), nullptr}};
    // d/dother is 0 everywhere it exists (PyTorch's zeros_like(other)): it reads nothing.
    case BinaryOp::Copysign: return reads(holo("CopysignBackward0", kSaveSelf | kSaveResult, D(copysign_ratio(v.self, v.result)),
                                               D(0.0)),
                                          kSaveSelf | kSaveResult, kSaveNone);
    // Bool or integer results.
    case BinaryOp::DivTrunc: case BinaryOp::DivFloor: case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::Lt:
    case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge: case BinaryOp::LogicalAnd: case BinaryOp::LogicalOr:
    case BinaryOp::LogicalXor: case BinaryOp::BitAnd: case BinaryOp::BitOr: case BinaryOp::BitXor:
      return not_differentiable();
  }
  return not_differentiable();
}
#undef D
#undef VJP
#pragma GCC diagnostic pop

// ---------------------------------------------------------------------------------------
// Note [Recording template]
// Every Autograd kernel of the table is the same few steps, written once here: run the op
// below Autograd; if a row exists, the result is differentiable and an input requires grad,
// make the node with an edge per input, save what the row asks for (with the version seen now,
// Note [Saved outputs]), and make the node the output's history. The in-place form first checks
// the write is allowed (check_inplace), keeps the old history edge and, when the row reads
// self, a clone of the old values; the out= form refuses to record, as PyTorch does.
// ---------------------------------------------------------------------------------------

// Every node keeps three slots, self, other and result, each undefined unless this call saved
// it (Note [Save only what a needed formula reads]).
Tensor saved_or_none(const FormulaNode& n, size_t slot) { return n.saved(slot); }

template <const Row& R>
variable_list backward(FormulaNode& n, const Tensor& g) {
  const Tensor self = saved_or_none(n, 0);
  const Tensor other = saved_or_none(n, 1);
  const Tensor result = saved_or_none(n, 2);
  static const Scalar kOne(1.0);
  const Vars v{self, other, result, n.scalars.empty() ? kOne : n.scalars[0]};
  const size_t inputs = n.next_edges().size();
  variable_list out(inputs);
  for (size_t i = 0; i < inputs && i < 2; ++i) {
    if (!n.needs_input_grad(i)) continue;
    if (R.vjp[i]) out[i] = R.vjp[i](v, g);
    else if (R.d[i]) out[i] = times_conj(g, R.d[i](v));
  }
  return out;
}

void save_values(FormulaNode& node, uint8_t saves, const Tensor& self, const Tensor& other, const Tensor& result) {
  node.save((saves & kSaveSelf) ? self : Tensor());
  node.save((saves & kSaveOther) ? other : Tensor());
  node.save((saves & kSaveResult) ? result : Tensor(), /*is_output=*/true);
}

template <UnaryOp Op> constexpr Row kUnaryRow = unary_row(Op);
template <BinaryOp Op> constexpr Row kBinaryRow = binary_row(Op);

// ---- binary ----
// libtorch names a node after the overload it recorded: a Scalar on the right (add.Scalar,
// which libtensor runs as add with a wrapped-number tensor) records AddBackward1, SubBackward1,
// MulBackward1 or DivBackward1 where two tensors record ...Backward0. pow numbers its
// overloads the other way: pow.Tensor_Scalar records PowBackward0, two tensors PowBackward1,
// and pow.Scalar (a number raised to a tensor) PowBackward2. Users print and test these names.
template <BinaryOp Op>
const char* binary_node_name(const Tensor& a, const Tensor& b) {
  if (b.unsafeGetTensorImpl()->is_wrapped_number()) {
    if constexpr (Op == BinaryOp::Add) return "AddBackward1";
    if constexpr (Op == BinaryOp::Sub) return "SubBackward1";
    if constexpr (Op == BinaryOp::Mul) return "MulBackward1";
    if constexpr (Op == BinaryOp::Div) return "DivBackward1";
    if constexpr (Op == BinaryOp::Pow) return "PowBackward0";
  }
  if constexpr (Op == BinaryOp::Pow)
    if (a.unsafeGetTensorImpl()->is_wrapped_number()) return "PowBackward2";
  return kBinaryRow<Op>.node;
}

template <BinaryOp Op>
Tensor ag_binary(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  constexpr const Row& r = kBinaryRow<Op>;
  Tensor out;
  {
    BelowAutograd below;
    out = ops::binary_op(Op).functional(a, b, alpha);
  }
  if constexpr (r.node == nullptr) return out;
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&a, &b})) return out;
  auto node = std::make_shared<FormulaNode>(binary_node_name<Op>(a, b), &backward<kBinaryRow<Op>>);
  node->add_input(a);
  node->add_input(b);
  save_values(*node, saves_for(r, a.requires_grad(), b.requires_grad()), a, b, out);
  if (Op == BinaryOp::Add || Op == BinaryOp::Sub) node->scalars.push_back(alpha);
  set_history(out, node);
  return out;
}

// The in-place half of the template: before the write, check it is allowed and keep self's old
// history edge and, when the row reads self, a clone of the old values (with their history,
// CloneBackward, so the formula's use of them is differentiable for double backward).
struct InplaceRecord {
  bool record = false;
  uint8_t saves = kSaveNone;  // what this call saves (Note [Save only what a needed formula reads])
  Tensor before;
  Edge old;
  InputMeta old_meta;
};
InplaceRecord begin_inplace(const Row& r, const Tensor& self, const Tensor* other, const char* name) {
  InplaceRecord ir;
  const bool self_grad = self.requires_grad();
  const bool other_grad = other != nullptr && other->defined() && other->requires_grad();
  ir.record = r.node != nullptr && is_differentiable(self.dtype()) && (self_grad || other_grad);
  if (!ir.record) return ir;
  check_inplace(self, name);
  ir.saves = saves_for(r, self_grad, other_grad);
  ir.old_meta = InputMeta{DimVector(self.sizes()), self.dtype()};
  ir.old = self_grad ? gradient_edge(self) : Edge{};
  if (ir.saves & kSaveSelf) ir.before = self.clone();
  return ir;
}
std::shared_ptr<FormulaNode> inplace_node(const char* name, BackwardFn fn, const InplaceRecord& ir) {
  auto node = std::make_shared<FormulaNode>(name, fn);
  node->add_edge(ir.old, ir.old_meta);
  return node;
}

template <BinaryOp Op>
Tensor& ag_binary_inplace(Tensor& self, const Tensor& b, const Scalar& alpha) {
  constexpr const Row& r = kBinaryRow<Op>;
  InplaceRecord ir = begin_inplace(r, self, &b, ops::binary_name(Op));
  {
    BelowAutograd below;
    ops::binary_op(Op).inplace(self, b, alpha);
  }
  if (!ir.record) return self;
  auto node = inplace_node(binary_node_name<Op>(self, b), &backward<kBinaryRow<Op>>, ir);
  node->add_input(b);
  save_values(*node, ir.saves, ir.before, b, self);
  if (Op == BinaryOp::Add || Op == BinaryOp::Sub) node->scalars.push_back(alpha);
  set_inplace_history(self, node);
  return self;
}

template <BinaryOp Op>
Tensor& ag_binary_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  TENSOR_CHECK(!any_requires_grad({&a, &b}) || !is_differentiable(out.dtype()) || kBinaryRow<Op>.node == nullptr,
               "{}_out: functions with out=... arguments don't support automatic differentiation, but one of the "
               "arguments requires grad", ops::binary_name(Op));
  BelowAutograd below;
  return ops::binary_op(Op).out(out, a, b, alpha);
}

// ---- unary ----
template <UnaryOp Op>
Tensor ag_unary(const Tensor& x) {
  constexpr const Row& r = kUnaryRow<Op>;
  Tensor out;
  {
    BelowAutograd below;
    out = ops::unary_op(Op).functional(x);
  }
  if constexpr (r.node == nullptr) return out;
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&x})) return out;
  auto node = std::make_shared<FormulaNode>(r.node, &backward<kUnaryRow<Op>>);
  node->add_input(x);
  save_values(*node, saves_for(r, true, false), x, Tensor(), out);
  set_history(out, node);
  return out;
}

template <UnaryOp Op>
Tensor& ag_unary_inplace(Tensor& self) {
  constexpr const Row& r = kUnaryRow<Op>;
  InplaceRecord ir = begin_inplace(r, self, nullptr, ops::unary_name(Op));
  {
    BelowAutograd below;
    ops::unary_op(Op).inplace(self);
  }
  if (!ir.record) return self;
  auto node = inplace_node(r.node, &backward<kUnaryRow<Op>>, ir);
  save_values(*node, ir.saves, ir.before, Tensor(), self);
  set_inplace_history(self, node);
  return self;
}

template <UnaryOp Op>
Tensor& ag_unary_out(Tensor& out, const Tensor& x) {
  TENSOR_CHECK(!x.requires_grad() || kUnaryRow<Op>.node == nullptr,
               "{}_out: functions with out=... arguments don't support automatic differentiation, but the input "
               "requires grad", ops::unary_name(Op));
  BelowAutograd below;
  return ops::unary_op(Op).out(out, x);
}

template <BinaryOp Op>
void register_binary() {
  if constexpr (kBinaryRow<Op>.node != nullptr) note_row(ops::binary_name(Op), kBinaryRow<Op>.node);
  auto& d = ops::binary_op(Op);
  d.functional.set(DispatchKey::Autograd, &ag_binary<Op>);
  d.inplace.set(DispatchKey::Autograd, &ag_binary_inplace<Op>);
  d.out.set(DispatchKey::Autograd, &ag_binary_out<Op>);
}
template <UnaryOp Op>
void register_unary() {
  if constexpr (kUnaryRow<Op>.node != nullptr) note_row(ops::unary_name(Op), kUnaryRow<Op>.node);
  auto& d = ops::unary_op(Op);
  d.functional.set(DispatchKey::Autograd, &ag_unary<Op>);
  d.inplace.set(DispatchKey::Autograd, &ag_unary_inplace<Op>);
  d.out.set(DispatchKey::Autograd, &ag_unary_out<Op>);
}

}  // namespace

void register_elementwise_derivatives() {
#define TENSOR_REGISTER_BINARY(Enum, name, dtypes, result, api) register_binary<BinaryOp::Enum>();
#define TENSOR_REGISTER_UNARY(Enum, name, dtypes, result, api) register_unary<UnaryOp::Enum>();
  TENSOR_BINARY_OPS(TENSOR_REGISTER_BINARY)
  TENSOR_UNARY_OPS(TENSOR_REGISTER_UNARY)
#undef TENSOR_REGISTER_BINARY
#undef TENSOR_REGISTER_UNARY
}


// ---------------------------------------------------------------------------------------
// The rows of the other ops (Note [Recording template]): one TENSOR_ROW per op, written as for
// real numbers when `holomorphic` is true (the template applies the complex convention).
// ---------------------------------------------------------------------------------------
namespace {

// Reduced dims, wrapped and sorted, for an input of `ndim` dims; empty means all dims.
DimVector sorted_dims(IntArrayRef dims, size_t ndim) {
  DimVector d;
  const int64_t n = std::max<int64_t>(static_cast<int64_t>(ndim), 1);
  for (int64_t x : dims) d.push_back(x < 0 ? x + n : x);
  std::sort(d.begin(), d.end());
  return d;
}
// A reduction's gradient broadcast back over the input's shape.
Tensor expand_reduced(const Tensor& g, const InputMeta& m, IntArrayRef dims, bool keepdim) {
  const DimVector d = sorted_dims(dims, m.sizes.size());
  Tensor gg = g;
  if (!keepdim && !d.empty() && !m.sizes.empty())
    for (int64_t x : d) gg = gg.unsqueeze(x);
  return gg.expand(m.sizes);
}
int64_t reduced_count(const InputMeta& m, IntArrayRef dims) {
  int64_t count = 1;
  if (dims.empty()) for (int64_t s : m.sizes) count *= s;
  else for (int64_t x : sorted_dims(dims, m.sizes.size())) count *= m.sizes[x];
  return count;
}
int64_t wrap_dim(int64_t dim, size_t ndim) { return ndim == 0 ? 0 : (dim < 0 ? dim + static_cast<int64_t>(ndim) : dim); }
// grad * s, skipping the multiply for s == 1.
Tensor times(const Tensor& grad, const Scalar& s) {
  if (!s.is_complex() && s.to_double() == 1.0) return grad;
  return grad * s;
}

// ---- elementwise with a condition or bounds ----
TENSOR_ROW(Where, ops::where_op(), "WhereBackward0", arg(0), true,
    (const Tensor& condition, const Tensor& self, const Tensor& other),
    return {Tensor(), n.needs_input_grad(1) ? where(condition, grad, 0.0) : Tensor(),
            n.needs_input_grad(2) ? where(condition, 0.0, grad) : Tensor()};)
// The gradient passes where min <= self <= max (PyTorch's clamp_backward); real dtypes only.
TENSOR_ROW(Clamp, ops::clamp_op(), "ClampBackward1", arg(0), true,
    (const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max),
    Tensor keep = ones_like(self, TensorOptions(kBool));
    if (min) keep = keep.logical_and(self.ge(*min));
    if (max) keep = keep.logical_and(self.le(*max));
    return {grad * keep.to(grad.dtype())};)
// In place, clamp_ records as the functional clamp of the old values copied back: copy_
// records the in-place write (views included) and clamp's row the derivative.
Tensor& clamp_inplace_autograd(Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  if (!self.requires_grad() || !is_differentiable(self.dtype()))
    return ops::clamp_inplace_op().redispatch(DispatchKey::Autograd, self, lo, hi);
  check_inplace(self, "clamp_");
  Tensor old = self.clone();
  return self.copy_(old.clamp(lo, hi));
}

void register_condition_rows() {
  register_row<WhereRow>();
  register_row<ClampRow>();
  ops::clamp_inplace_op().set(DispatchKey::Autograd, &clamp_inplace_autograd);
}

// ---- reductions ----
// The longer formulas are manual formulas in ReduceFormulas.cpp; max and min along a dim
// (values and indices) stay hand-written there (multi-output). Reduced dims are recomputed from
// the arguments and the input's rank: rf::reduce_dims wraps and sorts them (all dims when none
// are given, none for a 0-dim input). The result's bit is written kResult: this file's
// elementwise table has a kResult of its own (Saves), which would name arg(2) here.
namespace rf = reduce_formulas;
// sum() and mean() over every element record libtorch's ...Backward0, over dims ...Backward1.
TENSOR_ROW(Sum, ops::reduce_ops().sum, "SumBackward1", 0, true,
    (const Tensor& self, IntArrayRef dim, bool keepdim, const std::optional<ScalarType>& dtype),
    return {expand_reduced(grad, n.input_meta(0), dim, keepdim)};)
TENSOR_ROW(Mean, ops::reduce_ops().mean, "MeanBackward1", 0, true,
    (const Tensor& self, IntArrayRef dim, bool keepdim, const std::optional<ScalarType>& dtype),
    const InputMeta& m = n.input_meta(0);
    return {expand_reduced(grad, m, dim, keepdim) / static_cast<double>(reduced_count(m, dim))};)
}  // namespace
template <>
struct NodeName<SumRow> {
  static const char* of(const Tensor&, IntArrayRef dim, bool, const std::optional<ScalarType>&) {
    return dim.empty() ? "SumBackward0" : "SumBackward1";
  }
};
template <>
struct NodeName<MeanRow> {
  static const char* of(const Tensor&, IntArrayRef dim, bool, const std::optional<ScalarType>&) {
    return dim.empty() ? "MeanBackward0" : "MeanBackward1";
  }
};
namespace {
// prod over all elements (keepdim is ignored there, as by the op) records ProdBackward0, along
// a dim ProdBackward1.
TENSOR_ROW(Prod, ops::reduce_ops().prod, "ProdBackward0", arg(0) | kResult, true,
    (const Tensor& self, std::optional<int64_t> dim, bool keepdim, const std::optional<ScalarType>& dtype),
    if (!dim) return {rf::prod_backward(grad, self, result, rf::reduce_dims({}, self.dim()), false, /*all=*/true)};
    return {rf::prod_backward(grad, self, result, rf::reduce_dims(IntArrayRef(*dim), self.dim()), keepdim, false)};)
}  // namespace
template <>
struct NodeName<ProdRow> {
  static const char* of(const Tensor&, std::optional<int64_t> dim, bool, const std::optional<ScalarType>&) {
    return dim ? "ProdBackward1" : "ProdBackward0";
  }
};
namespace {
// max(), min(), amax, amin: the gradient spread evenly over the ties (real dtypes only).
TENSOR_ROW(MaxAll, ops::reduce_ops().max_all, "MaxBackward1", arg(0) | kResult, true, (const Tensor& self),
    return {rf::evenly_distribute_backward(grad, self, result, rf::reduce_dims({}, self.dim()), false)};)
TENSOR_ROW(MinAll, ops::reduce_ops().min_all, "MinBackward1", arg(0) | kResult, true, (const Tensor& self),
    return {rf::evenly_distribute_backward(grad, self, result, rf::reduce_dims({}, self.dim()), false)};)
TENSOR_ROW(Amax, ops::reduce_ops().amax, "AmaxBackward0", arg(0) | kResult, true,
    (const Tensor& self, IntArrayRef dim, bool keepdim),
    return {rf::evenly_distribute_backward(grad, self, result, rf::reduce_dims(dim, self.dim()), keepdim)};)
TENSOR_ROW(Amin, ops::reduce_ops().amin, "AminBackward0", arg(0) | kResult, true,
    (const Tensor& self, IntArrayRef dim, bool keepdim),
    return {rf::evenly_distribute_backward(grad, self, result, rf::reduce_dims(dim, self.dim()), keepdim)};)
// grad * exp(self - result) (real dtypes only).
TENSOR_ROW(Logsumexp, ops::reduce_ops().logsumexp, "LogsumexpBackward0", arg(0) | kResult, true,
    (const Tensor& self, IntArrayRef dim, bool keepdim),
    const DimVector d = rf::reduce_dims(dim, self.dim());
    return {rf::restore_dims(grad, d, keepdim) * (self - rf::restore_dims(result, d, keepdim)).exp()};)
// var, std and norm map complex to real: not holomorphic, the formulas write their conjugates.
TENSOR_ROW(Var, ops::reduce_ops().var, "VarBackward0", arg(0), false,
    (const Tensor& self, IntArrayRef dim, int64_t correction, bool keepdim),
    return {rf::var_backward(grad, self, rf::reduce_dims(dim, self.dim()), correction, keepdim)};)
TENSOR_ROW(Std, ops::reduce_ops().std_dev, "StdBackward0", arg(0) | kResult, false,
    (const Tensor& self, IntArrayRef dim, int64_t correction, bool keepdim),
    return {rf::std_backward(grad, self, result, rf::reduce_dims(dim, self.dim()), correction, keepdim)};)
TENSOR_ROW(Norm, ops::reduce_ops().norm, "NormBackward1", arg(0) | kResult, false,
    (const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim),
    return {rf::norm_backward(grad, self, result, p.to_double(), rf::reduce_dims(dim, self.dim()), keepdim)};)
// Scans and softmax along one dim (a 0-dim input is its own slice).
TENSOR_ROW(Cumsum, ops::reduce_ops().cumsum, "CumsumBackward0", 0, true,
    (const Tensor& self, int64_t dim, const std::optional<ScalarType>& dtype),
    const int64_t ndim = static_cast<int64_t>(n.input_meta(0).sizes.size());
    if (ndim == 0) return {grad};
    return {rf::reverse_cumsum(grad, rf::wrap_dim(dim, ndim))};)
TENSOR_ROW(Cumprod, ops::reduce_ops().cumprod, "CumprodBackward0", arg(0) | kResult, true,
    (const Tensor& self, int64_t dim, const std::optional<ScalarType>& dtype),
    return {rf::cumprod_backward(grad, self, result, rf::wrap_dim(dim, self.dim()))};)
TENSOR_ROW(Softmax, ops::reduce_ops().softmax, "SoftmaxBackward0", kResult, true,
    (const Tensor& self, int64_t dim, const std::optional<ScalarType>& dtype),
    const DimVector d = rf::reduce_dims(IntArrayRef(dim), static_cast<int64_t>(n.input_meta(0).sizes.size()));
    return {result * (grad - rf::sum_keep(grad * result, d))};)
TENSOR_ROW(LogSoftmax, ops::reduce_ops().log_softmax, "LogSoftmaxBackward0", kResult, true,
    (const Tensor& self, int64_t dim, const std::optional<ScalarType>& dtype),
    const DimVector d = rf::reduce_dims(IntArrayRef(dim), static_cast<int64_t>(n.input_meta(0).sizes.size()));
    return {grad - result.exp() * rf::sum_keep(grad, d)};)
void register_reduction_rows() {
  register_row<SumRow>();
  register_row<MeanRow>();
  register_row<ProdRow>();
  register_row<MaxAllRow>();
  register_row<MinAllRow>();
  register_row<AmaxRow>();
  register_row<AminRow>();
  register_row<LogsumexpRow>();
  register_row<VarRow>();
  register_row<StdRow>();
  register_row<NormRow>();
  register_row<CumsumRow>();
  register_row<CumprodRow>();
  register_row<SoftmaxRow>();
  register_row<LogSoftmaxRow>();
}

// ---- indexing and joining ----
TENSOR_ROW(IndexSelect, ops::index_select_op(), "IndexSelectBackward0", arg(2), true,
    (const Tensor& self, int64_t dim, const Tensor& index),
    const InputMeta& m = n.input_meta(0);
    Tensor zero = zeros(m.sizes, TensorOptions(grad.dtype()).device(grad.device()));
    return {zero.index_add(wrap_dim(dim, m.sizes.size()), index, grad), Tensor()};)
// Repeated indices accumulate: scatter_add, not scatter.
TENSOR_ROW(Gather, ops::gather_op(), "GatherBackward0", arg(2), true,
    (const Tensor& self, int64_t dim, const Tensor& index),
    const InputMeta& m = n.input_meta(0);
    Tensor zero = zeros(m.sizes, TensorOptions(grad.dtype()).device(grad.device()));
    return {zero.scatter_add(wrap_dim(dim, m.sizes.size()), index, grad), Tensor()};)
// Edges: self, index, src. The overwritten positions of self do not reach the output.
TENSOR_ROW(Scatter, ops::scatter_op(), "ScatterBackward0", arg(2), true,
    (const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src),
    const int64_t d = wrap_dim(dim, n.input_meta(0).sizes.size());
    return {n.needs_input_grad(0) ? grad.scatter(d, index, Scalar(0)) : Tensor(), Tensor(),
            n.needs_input_grad(2) ? scatter_src_grad(grad, d, index, n.input_meta(2)) : Tensor()};)
TENSOR_ROW(ScatterAdd, ops::scatter_add_op(), "ScatterAddBackward0", arg(2), true,
    (const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src),
    const int64_t d = wrap_dim(dim, n.input_meta(0).sizes.size());
    return {grad, Tensor(), n.needs_input_grad(2) ? scatter_src_grad(grad, d, index, n.input_meta(2)) : Tensor()};)
// Edges: self, index, source.
TENSOR_ROW(IndexAdd, ops::index_add_op(), "IndexAddBackward0", arg(2), true,
    (const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha),
    Tensor gs;
    if (n.needs_input_grad(2)) {
      gs = times(grad.index_select(wrap_dim(dim, n.input_meta(0).sizes.size()), index), alpha);
      if (n.input_meta(2).sizes.empty()) gs = gs.reshape({});
    }
    return {grad, Tensor(), gs};)
// A broadcast self's gradient is summed back to its shape by FormulaNode::apply.
TENSOR_ROW(MaskedFill, ops::masked_fill_op(), "MaskedFillBackward0", arg(1), true,
    (const Tensor& self, const Tensor& mask, const Scalar& value),
    return {grad.masked_fill(mask, Scalar(0)), Tensor()};)
// One edge (and one gradient) per tensor of the list.
TENSOR_ROW(Cat, ops::cat_op(), "CatBackward0", 0, true,
    (TensorList tensors, int64_t dim),
    return cat_tensors_backward(n, grad, dim);)
TENSOR_ROW(Stack, ops::stack_op(), "StackBackward0", 0, true,
    (TensorList tensors, int64_t dim),
    const size_t inputs = n.next_edges().size();
    const int64_t d = dim < 0 ? dim + static_cast<int64_t>(n.input_meta(0).sizes.size()) + 1 : dim;
    variable_list grads;
    for (size_t i = 0; i < inputs; ++i)
      grads.push_back(n.needs_input_grad(i) ? grad.select(d, static_cast<int64_t>(i)) : Tensor());
    return grads;)
void register_indexing_rows() {
  register_row<IndexSelectRow>();
  register_row<GatherRow>();
  register_row<ScatterRow>();
  register_row<ScatterAddRow>();
  register_row<IndexAddRow>();
  register_row<MaskedFillRow>();
  register_row<CatRow>();
  register_row<StackRow>();
}

// ---- matrix products: grad_a = grad b^T, grad_b = a^T grad (as for real numbers) ----
TENSOR_ROW(Mm, ops::linalg_ops().mm, "MmBackward0", arg(0) | arg(1), true,
    (const Tensor& self, const Tensor& mat2),
    return {n.needs_input_grad(0) ? grad.mm(mat2.t()) : Tensor(), n.needs_input_grad(1) ? self.t().mm(grad) : Tensor()};)
TENSOR_ROW(Bmm, ops::linalg_ops().bmm, "BmmBackward0", arg(0) | arg(1), true,
    (const Tensor& self, const Tensor& mat2),
    return {n.needs_input_grad(0) ? grad.bmm(mat2.transpose(-2, -1)) : Tensor(),
            n.needs_input_grad(1) ? self.transpose(-2, -1).bmm(grad) : Tensor()};)
// self's gradient is summed back to its (broadcast) shape by FormulaNode::apply.
TENSOR_ROW(Addmm, ops::linalg_ops().addmm, "AddmmBackward0", arg(1) | arg(2), true,
    (const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha),
    return {n.needs_input_grad(0) ? times(grad, beta) : Tensor(),
            n.needs_input_grad(1) ? times(grad.mm(mat2.t()), alpha) : Tensor(),
            n.needs_input_grad(2) ? times(mat1.t().mm(grad), alpha) : Tensor()};)
// Leading dims of input and grad are flattened for the weight's and bias's gradients
// (flatten, not reshape({-1, k}): -1 cannot be inferred when k, a feature count, is 0).
TENSOR_ROW(Linear, ops::linalg_ops().linear, "LinearBackward0", arg(0) | arg(1), true,
    (const Tensor& input, const Tensor& weight, const Tensor& bias),
    auto rows = [](const Tensor& t) { return t.dim() == 2 ? t : t.dim() == 1 ? t.unsqueeze(0) : t.flatten(0, -2); };
    Tensor g2 = rows(grad);
    Tensor gx, gw, gb;
    if (n.needs_input_grad(0)) gx = grad.matmul(weight);
    if (n.needs_input_grad(1)) gw = g2.t().mm(rows(input));
    if (n.needs_input_grad(2)) gb = g2.sum({0}).reshape(n.input_meta(2).sizes);
    return {gx, gw, gb};)
void register_matrix_rows() {
  register_row<MmRow>();
  register_row<BmmRow>();
  register_row<AddmmRow>();
  register_row<LinearRow>();
}

// ---- convolutions ----
// Bilinear in (input, weight); the formula is Note [Convolution backward] (ConvFormulas.cpp).
TENSOR_ROW(Convolution, ops::conv_ops().convolution, "ConvolutionBackward0", arg(0) | arg(1), true,
    (const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef pad_l,
     IntArrayRef pad_r, IntArrayRef dilation, bool transposed, int64_t groups),
    return convolution_grads(grad, input, weight, stride, pad_l, pad_r, dilation, transposed, groups,
                             {n.needs_input_grad(0), n.needs_input_grad(1), n.needs_input_grad(2)});)
// im2col and col2im are adjoint linear maps: each one's gradient is the other.
TENSOR_ROW(Im2col, ops::fold_ops().im2col, "Im2ColBackward0", 0, true,
    (const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride),
    const auto& s = n.input_meta(0).sizes;
    const std::array<int64_t, 2> hw{s[s.size() - 2], s[s.size() - 1]};
    return {ops::fold_ops().col2im(grad, IntArrayRef(hw.data(), 2), kernel_size, dilation, padding, stride)};)
TENSOR_ROW(Col2im, ops::fold_ops().col2im, "Col2ImBackward0", 0, true,
    (const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
     IntArrayRef stride),
    return {ops::fold_ops().im2col(grad, kernel_size, dilation, padding, stride)};)
void register_convolution_rows() {
  register_row<ConvolutionRow>();
  register_row<Im2colRow>();
  register_row<Col2imRow>();
}

// ---- pooling and normalization ----
// Average pooling and its backward are adjoint linear maps: each one's gradient is the other.
// Pooling rejects complex; the rows are written as for real numbers all the same.
TENSOR_ROW(AvgPool2d, ops::pool_norm_ops().avg_pool2d, "AvgPool2DBackward0", 0, true,
    (const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
     bool count_include_pad, std::optional<int64_t> divisor_override),
    return {ops::pool_norm_ops().avg_pool2d_backward(grad, n.input_meta(0).sizes, kernel_size, stride, padding,
                                                     ceil_mode, count_include_pad, divisor_override)};)
TENSOR_ROW(AvgPool2dBackward, ops::pool_norm_ops().avg_pool2d_backward, "AvgPool2DBackwardBackward0", 0, true,
    (const Tensor& grad_output, IntArrayRef input_sizes, IntArrayRef kernel_size, IntArrayRef stride,
     IntArrayRef padding, bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override),
    return {avg_pool2d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)};)
TENSOR_ROW(AdaptiveAvgPool2d, ops::pool_norm_ops().adaptive_avg_pool2d, "AdaptiveAvgPool2DBackward0", 0, true,
    (const Tensor& self, IntArrayRef output_size),
    return {ops::pool_norm_ops().adaptive_avg_pool2d_backward(grad, n.input_meta(0).sizes)};)
TENSOR_ROW(AdaptiveAvgPool2dBackward, ops::pool_norm_ops().adaptive_avg_pool2d_backward,
    "AdaptiveAvgPool2DBackwardBackward0", 0, true,
    (const Tensor& grad_output, IntArrayRef input_sizes),
    const DimVector& out = n.input_meta(0).sizes;  // the forward's output sizes
    return {adaptive_avg_pool2d(grad, {out[out.size() - 2], out[out.size() - 1]})};)
// Linear in grad_output: its derivative picks the incoming gradient at the same indices.
// Edges: grad_output, indices.
TENSOR_ROW(MaxPool2dBackward, ops::pool_norm_ops().max_pool2d_backward, "MaxPool2DWithIndicesBackwardBackward0",
    arg(2), true,
    (const Tensor& grad_output, IntArrayRef input_sizes, const Tensor& indices),
    return {max_pool2d_double_backward(grad, input_sizes, indices), Tensor()};)
void register_pool_norm_rows() {
  register_row<AvgPool2dRow>();
  register_row<AvgPool2dBackwardRow>();
  register_row<AdaptiveAvgPool2dRow>();
  register_row<AdaptiveAvgPool2dBackwardRow>();
  register_row<MaxPool2dBackwardRow>();
}

// ---- upsampling ----
// upsample_bicubic2d and its backward are adjoint linear maps: each one's gradient is the other.
TENSOR_ROW(UpsampleBicubic2d, ops::upsample_ops().upsample_bicubic2d, "UpsampleBicubic2DBackward0", 0, true,
    (const Tensor& self, IntArrayRef output_size, bool align_corners, std::optional<double> scales_h,
     std::optional<double> scales_w),
    return {upsample_bicubic2d_backward(grad, output_size, n.input_meta(0).sizes, align_corners, scales_h,
                                        scales_w)};)
TENSOR_ROW(UpsampleBicubic2dBackward, ops::upsample_ops().upsample_bicubic2d_backward,
    "UpsampleBicubic2DBackwardBackward0", 0, true,
    (const Tensor& grad_output, IntArrayRef output_size, IntArrayRef input_size, bool align_corners,
     std::optional<double> scales_h, std::optional<double> scales_w),
    return {upsample_bicubic2d(grad, output_size, align_corners, scales_h, scales_w)};)
void register_upsample_rows() {
  register_row<UpsampleBicubic2dRow>();
  register_row<UpsampleBicubic2dBackwardRow>();
}

// ---- max unpooling and fractional max pooling (src/ops/UnpoolOps.cpp) ----
// max_unpool writes self at the indices, so its gradient gathers there (libtorch's
// max_pool_double_backward); the fractional pools' backward sums at the indices, a linear map
// whose derivative gathers the same way. Indices get no gradient; the backward's self gives
// its shape only (libtorch: zeros). The fractional pools themselves: nodes/Unpool.cpp.
TENSOR_ROW(MaxUnpool2d, ops::unpool_ops().max_unpool2d, "MaxUnpool2DBackward0", arg(1), true,
    (const Tensor& self, const Tensor& indices, IntArrayRef output_size),
    return {gather_planes(grad, indices, 2), Tensor()};)
TENSOR_ROW(MaxUnpool3d, ops::unpool_ops().max_unpool3d, "MaxUnpool3DBackward0", arg(1), true,
    (const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride, IntArrayRef padding),
    return {gather_planes(grad, indices, 3), Tensor()};)
TENSOR_ROW(FractionalMaxPool2dBackward, ops::unpool_ops().fractional_max_pool2d_backward,
    "FractionalMaxPool2DBackwardBackward0", arg(4), true,
    (const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size, IntArrayRef output_size,
     const Tensor& indices),
    return {gather_planes(grad, indices, 2), Tensor(), Tensor()};)
TENSOR_ROW(FractionalMaxPool3dBackward, ops::unpool_ops().fractional_max_pool3d_backward,
    "FractionalMaxPool3DBackwardBackward0", arg(4), true,
    (const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size, IntArrayRef output_size,
     const Tensor& indices),
    return {gather_planes(grad, indices, 3), Tensor(), Tensor()};)
void register_unpool_rows() {
  register_row<MaxUnpool2dRow>();
  register_row<MaxUnpool3dRow>();
  register_row<FractionalMaxPool2dBackwardRow>();
  register_row<FractionalMaxPool3dBackwardRow>();
  register_unpool_nodes();
}

// ---- rearranging: tril, triu, flip, repeat, roll ----
TENSOR_ROW(Tril, ops::rearrange_ops().tril, "TrilBackward0", 0, true, (const Tensor& self, int64_t diagonal),
    return {grad.tril(diagonal)};)
TENSOR_ROW(Triu, ops::rearrange_ops().triu, "TriuBackward0", 0, true, (const Tensor& self, int64_t diagonal),
    return {grad.triu(diagonal)};)
TENSOR_ROW(Flip, ops::rearrange_ops().flip, "FlipBackward0", 0, true, (const Tensor& self, IntArrayRef dims),
    return {grad.flip(dims)};)
// In place, tril_/triu_ record as masked_fill_ of the dropped triangle (a composite: masked_fill_
// handles the in-place history, views included), after checking the write under their own name.
// tril_(k) drops col > row + k, the mask triu(k + 1) keeps; triu_(k) drops col < row + k.
template <bool Lower>
Tensor& triangle_inplace_autograd(Tensor& self, int64_t diagonal) {
  auto& def = Lower ? ops::rearrange_ops().tril_ : ops::rearrange_ops().triu_;
  if (self.dim() < 2) return def.redispatch(DispatchKey::Autograd, self, diagonal);  // the front end's error
  check_inplace(self, Lower ? "tril_" : "triu_");
  Tensor drop;
  {
    BelowAutograd below;
    Tensor all = ones({self.size(-2), self.size(-1)}, TensorOptions(kBool).device(self.device()));
    drop = Lower ? all.triu(diagonal + 1) : all.tril(diagonal - 1);
  }
  return self.masked_fill_(drop, 0);
}
// repeat and roll are composites of dispatched ops (Note [Rearranging ops by composition]): no rows.
void register_rearrange_rows() {
  register_row<TrilRow>();
  register_row<TriuRow>();
  register_row<FlipRow>();
  ops::rearrange_ops().tril_.set(DispatchKey::Autograd, &triangle_inplace_autograd<true>);
  ops::rearrange_ops().triu_.set(DispatchKey::Autograd, &triangle_inplace_autograd<false>);
}


// ---- data movement: clone, _to_copy, resolve_conj (copy_ and fill_ write in place:
// nodes/InPlace.cpp) ----
TENSOR_ROW(Clone, ops::copy_ops().clone, "CloneBackward0", 0, true, (const Tensor& self), return {grad};)
// The gradient goes back to self's dtype and device (a real self of a complex result takes the
// real part, as PyTorch).
TENSOR_ROW(ToCopy, ops::copy_ops().to_copy, "ToCopyBackward0", 0, false,
    (const Tensor& self, ScalarType dtype, Device device, bool non_blocking),
    const InputMeta& m = n.input_meta(0);
    Tensor g = grad.is_complex() && !is_complex(m.dtype) ? grad.real() : grad;
    return {g.to(m.device, m.dtype)};)
// resolve_conj changes the representation, not the value: the conj view it reads records the
// conjugation (ConjBackward0).
TENSOR_ROW(ResolveConj, ops::copy_ops().resolve_conj, "ResolveConjBackward0", 0, true, (const Tensor& self),
    return {grad};)
void register_copy_rows() {
  register_row<CloneRow>();
  register_row<ToCopyRow>();
  register_row<ResolveConjRow>();
}

}  // namespace

void register_rows();
void register_rows() {
  register_copy_rows();
  register_condition_rows();
  register_reduction_rows();
  register_indexing_rows();
  register_matrix_rows();
  register_convolution_rows();
  register_pool_norm_rows();
  register_unpool_rows();
  register_rearrange_rows();
  register_upsample_rows();
}

namespace {
std::vector<DerivativeRow>& rows_list() {
  static std::vector<DerivativeRow> rows;
  return rows;
}
}  // namespace

// Called only from ensure_autograd_kernels' call_once, so the list needs no lock.
void note_row(const char* op, const char* node) { rows_list().push_back({op, node}); }

std::vector<DerivativeRow> derivative_rows() {
  ensure_autograd_kernels();
  return rows_list();
}

void register_loss_nodes();  // src/autograd/nodes/LossNodes.cpp

// Note [Lazy autograd registration]
// Built-in op tables are constant-initialized with their backend kernels. Their Autograd slots
// are filled here, once, when the first tensor starts requiring grad: until then no call can
// carry the Autograd key, so programs that never use autograd never pay for it, and nothing
// depends on static initializers (static linking works).
void ensure_autograd_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_elementwise_derivatives();
    register_rows();
    register_multi_output_nodes();
    register_inplace_nodes();
    register_view_nodes();
    register_loss_nodes();
  });
}

}  // namespace tensor::autograd
