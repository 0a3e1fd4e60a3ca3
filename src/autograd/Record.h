// Internal: the recording template that turns a derivatives-table row into an op's Autograd
// kernel (Note [Recording template]).
#pragma once

#include <optional>
#include <tuple>
#include <utility>

#include "src/autograd/Functions.h"

namespace tensor::autograd {

// Note [Recording template]
// Every Autograd kernel of the derivatives table is the same few steps, written once here:
// run the op below Autograd; if its result is differentiable and a tensor argument requires
// grad, make a node with one edge per tensor argument (in argument order; a TensorList gives
// one edge per element), keep the arguments the row's formula reads (tensors as SavedVariable,
// with the version seen now, Note [Saved outputs]; the others by value, IntArrayRef as an owned
// DimVector), save the result if the row reads it, and make the node the result's history.
// Backward unpacks the kept arguments and calls the row's formula with them by name.
//
// A row is a type with:
//   static auto& op()             the dispatcher table whose Autograd slot it fills;
//   static constexpr name         PyTorch's node name ("MmBackward0"); a NodeName<Row>
//                                 specialization may pick another per call, where one op
//                                 serves two of libtorch's overloads (sum() and sum(dim));
//   static constexpr saves        which arguments (arg(i)) and whether the result (kResult)
//                                 the formula reads; others reach it undefined;
//   static constexpr holomorphic  true when the formula is written as for real numbers and the
//                                 table applies the complex convention (below);
//   static variable_list backward(const FormulaNode& n, const Tensor& grad,
//                                 const Tensor& result, <the op's arguments>)
//                                 one gradient per tensor argument, in public ops.
// Mind the two numberings: arg(i) in `saves` counts every argument of the op, while edges, and
// so n.needs_input_grad(i), n.input_meta(i) and the returned gradients, count the tensor
// arguments only (a TensorList gives one per element). Integer tensor arguments (indices,
// masks) get an edge too, and an undefined gradient.
// The TENSOR_ROW macro writes the type from one line per part.
//
// Complex convention. For a holomorphic op, a formula written as for real numbers computes
// J^T v; PyTorch's conjugate Wirtinger convention wants J^H grad = conj(J^T conj(grad)). The
// template therefore calls a holomorphic row with conj(grad) and conjugates what it returns
// (lazy conj views, free for real dtypes): rows never write the conjugate themselves. Rows
// that are not holomorphic (norms, abs, real-valued functions of complex inputs) set
// holomorphic = false and write their own.

/// Bit of argument i in a row's `saves`; kResult is the result's bit.
constexpr unsigned arg(int i) { return 1u << i; }
constexpr unsigned kResult = 1u << 31;

/// The name of the node a row records for one call: Row::name, unless a specialization picks
/// among the op's PyTorch names by its arguments (sum() records SumBackward0, sum(dim)
/// SumBackward1: one dispatcher op serves both of libtorch's overloads).
template <class Row>
struct NodeName {
  template <class... A>
  static const char* of(const A&...) { return Row::name; }
};

namespace record_detail {

/// How a forward argument of type A is kept in the node and handed back to the formula.
template <class A>
struct Keep {
  using Stored = std::decay_t<A>;
  static Stored store(A a, bool) { return a; }
  static const Stored& load(const Stored& s, const char*) { return s; }
  static void reset(Stored&) {}
  static void release(Stored&) {}
  static void add_edges(FormulaNode&, const Stored&) {}
};
template <>
struct Keep<const Tensor&> {
  using Stored = SavedVariable;
  static Stored store(const Tensor& t, bool save) { return save ? SavedVariable(t, false) : SavedVariable(); }
  static Tensor load(const Stored& s, const char* name) { return s.unpack(name); }
  static void reset(Stored& s) { s.reset(); }
  static void release(Stored& s) { defer_release(s.take()); }
  static void add_edges(FormulaNode& n, const Tensor& t) { n.add_input(t); }
};
template <>
struct Keep<IntArrayRef> {
  using Stored = DimVector;
  static Stored store(IntArrayRef a, bool) { return DimVector(a); }
  static IntArrayRef load(const Stored& s, const char*) { return s.ref(); }
  static void reset(Stored&) {}
  static void release(Stored&) {}
  static void add_edges(FormulaNode&, IntArrayRef) {}
};
// Device has no default value, and the node's tuple is made before the arguments are kept.
template <>
struct Keep<Device> {
  using Stored = std::optional<Device>;
  static Stored store(Device d, bool) { return d; }
  static Device load(const Stored& s, const char*) { return *s; }
  static void reset(Stored&) {}
  static void release(Stored&) {}
  static void add_edges(FormulaNode&, Device) {}
};
template <>
struct Keep<TensorList> {
  using Stored = std::vector<SavedVariable>;
  static Stored store(TensorList ts, bool save) {
    Stored s;
    if (save)
      for (const Tensor& t : ts) s.emplace_back(t, false);
    return s;
  }
  static std::vector<Tensor> load(const Stored& s, const char* name) {
    std::vector<Tensor> ts;
    for (const SavedVariable& v : s) ts.push_back(v.unpack(name));
    return ts;
  }
  static void reset(Stored& s) {
    for (SavedVariable& v : s) v.reset();
  }
  static void release(Stored& s) {
    for (SavedVariable& v : s) defer_release(v.take());
  }
  static void add_edges(FormulaNode& n, TensorList ts) {
    for (const Tensor& t : ts) n.add_input(t);
  }
};

template <class A>
bool requires_grad_arg(const A& a) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) return a.defined() && a.requires_grad();
  else if constexpr (std::is_same_v<std::decay_t<A>, TensorList>) {
    for (const Tensor& t : a)
      if (t.defined() && t.requires_grad()) return true;
    return false;
  } else {
    return false;
  }
}

// The kept arguments that are saved tensors, for FormulaNode::list_saved.
inline void add_saved(std::vector<const SavedVariable*>& out, const SavedVariable& v) {
  if (v.defined()) out.push_back(&v);
}
inline void add_saved(std::vector<const SavedVariable*>& out, const std::vector<SavedVariable>& vs) {
  for (const SavedVariable& v : vs) add_saved(out, v);
}
template <class T>
void add_saved(std::vector<const SavedVariable*>&, const T&) {}

/// The node of one row: a FormulaNode that also keeps the forward's arguments.
template <class Row, class... A>
class RowNode final : public FormulaNode {
 public:
  explicit RowNode(const char* name) : FormulaNode(name, &RowNode::run) {}
  ~RowNode() override {
    std::apply([](auto&... s) { (Keep<A>::release(s), ...); }, args_);
  }
  void release_variables() override {
    FormulaNode::release_variables();
    std::apply([](auto&... s) { (Keep<A>::reset(s), ...); }, args_);
  }
  void list_saved(std::vector<const SavedVariable*>& out) const override {
    std::apply([&](const auto&... s) { (add_saved(out, s), ...); }, args_);
    FormulaNode::list_saved(out);
  }
  template <size_t... I>
  void keep(std::index_sequence<I...>, A... a) {
    args_ = std::tuple<typename Keep<A>::Stored...>(Keep<A>::store(a, (Row::saves & arg(I)) != 0)...);
  }

 private:
  static variable_list run(FormulaNode& fn, const Tensor& grad) {
    auto& n = static_cast<RowNode&>(fn);
    const Tensor result = (Row::saves & kResult) ? n.saved(0) : Tensor();
    const bool conj = Row::holomorphic && grad.is_complex();
    variable_list out = std::apply(
        [&](const auto&... s) { return Row::backward(n, conj ? grad.conj() : grad, result, Keep<A>::load(s, Row::name)...); },
        n.args_);
    if (conj)
      for (Tensor& t : out)
        if (t.defined() && t.is_complex()) t = t.conj();
    return out;
  }

  std::tuple<typename Keep<A>::Stored...> args_;
};

template <class Row, class Sig>
struct Kernel;
template <class Row, class R, class... A>
struct Kernel<Row, R(A...)> {
  static_assert(std::is_same_v<R, Tensor>, "multi-output ops record through hand-written nodes");
  static R fn(A... a) {
    R out;
    {
      BelowAutograd below;
      out = Row::op()(a...);
    }
    if (!is_differentiable(out.dtype()) || !(requires_grad_arg(a) || ...)) return out;
    auto node = std::make_shared<RowNode<Row, A...>>(NodeName<Row>::of(a...));
    (Keep<A>::add_edges(*node, a), ...);
    node->keep(std::index_sequence_for<A...>{}, a...);
    if (Row::saves & kResult) node->save(out, /*is_output=*/true);
    set_history(out, node);
    return out;
  }
};

}  // namespace record_detail

/// Adds a row to the list derivative_rows() returns (register_row calls it).
void note_row(const char* op, const char* node);

/// Fills Row::op()'s Autograd slot with the kernel the template makes from Row.
template <class Row>
void register_row() {
  auto& def = Row::op();
  using Sig = typename std::decay_t<decltype(def)>::Signature;
  def.set(DispatchKey::Autograd, &record_detail::Kernel<Row, Sig>::fn);
  note_row(def.name, Row::name);
}

/// One row of the derivatives table as a type (Note [Recording template]):
///   TENSOR_ROW(Mm, ops::linalg_ops().mm, "MmBackward0", arg(0) | arg(1), true,
///              (const Tensor& self, const Tensor& mat2),
///              { return {grad.mm(mat2.t()), self.t().mm(grad)}; })
/// The formula sees n (the node: n.needs_input_grad(i), n.input_meta(i)), grad, result and the
/// op's arguments under the names the parameter list gives them.
#define TENSOR_ROW(Id, op_expr, node_name, saved, is_holomorphic, params, ...)                         \
  struct Id##Row {                                                                                    \
    static auto& op() { return op_expr; }                                                             \
    static constexpr const char* name = node_name;                                                    \
    static constexpr unsigned saves = (saved);                                                        \
    static constexpr bool holomorphic = (is_holomorphic);                                             \
    static ::tensor::autograd::variable_list backward(const ::tensor::autograd::FormulaNode& n,      \
                                                      const ::tensor::Tensor& grad,                   \
                                                      const ::tensor::Tensor& result,                 \
                                                      TENSOR_ROW_STRIP params) {                      \
      (void)n;                                                                                        \
      (void)result;                                                                                   \
      __VA_ARGS__                                                                                     \
    }                                                                                                 \
  };
#define TENSOR_ROW_STRIP(...) __VA_ARGS__

}  // namespace tensor::autograd
