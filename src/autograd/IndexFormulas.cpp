// The manual formulas of the indexing and joining ops (IndexFormulas.h), which their rows in the
// derivatives table call (Derivatives.cpp, "indexing and joining"), and the in-place kernels,
// which stay hand-written (below).
#include "src/autograd/IndexFormulas.h"

#include "tensor/ops.h"

namespace tensor::autograd {

namespace {

inline TensorOptions like(const Tensor& g) { return TensorOptions(g.dtype()).device(g.device()); }

/// The dim as the kernels see it: 0-dim tensors behave as 1-element 1-D ones.
inline int64_t wrap(int64_t dim, int64_t ndim) {
  if (ndim == 0) return 0;
  return dim < 0 ? dim + ndim : dim;
}

// Note [Legacy empty tensors in cat] (JoinOps.cpp): 1-D inputs of shape [0] are skipped by the
// forward, whatever their rank; they get no gradient.
bool is_legacy_empty(const InputMeta& m) { return m.sizes.size() == 1 && m.sizes[0] == 0; }

}  // namespace

// Only the leading index-shaped block of src is read, so the rest of src gets zeros (padded
// with cat, which keeps this differentiable). An empty index reads nothing.
Tensor scatter_src_grad(const Tensor& g, int64_t dim, const Tensor& index, const InputMeta& src) {
  const DimVector& ss = src.sizes;
  if (index.numel() == 0) return zeros(ss, like(g));
  Tensor gs = g.gather(dim, index);
  if (gs.dim() == 0 && ss.size() == 1) gs = gs.reshape({1});
  for (int64_t d = 0; d < gs.dim() && d < static_cast<int64_t>(ss.size()); ++d) {
    if (gs.size(d) < ss[d]) {
      DimVector pad(gs.sizes());
      pad[d] = ss[d] - gs.size(d);
      gs = cat({gs, zeros(pad, like(g))}, d);
    }
  }
  if (ss.empty() && gs.dim() != 0) gs = gs.reshape({});
  return gs;
}

variable_list cat_tensors_backward(const FormulaNode& n, const Tensor& g, int64_t dim) {
  const size_t inputs = n.next_edges().size();
  // The dim wraps against the first input that is not a legacy empty tensor (as the forward).
  int64_t ref_dim = -1;
  for (size_t i = 0; i < inputs && ref_dim < 0; ++i)
    if (!is_legacy_empty(n.input_meta(i))) ref_dim = static_cast<int64_t>(n.input_meta(i).sizes.size());
  const int64_t d = ref_dim < 0 ? 0 : wrap(dim, ref_dim);
  variable_list grads;
  int64_t offset = 0;
  for (size_t i = 0; i < inputs; ++i) {
    const InputMeta& m = n.input_meta(i);
    if (is_legacy_empty(m)) {
      grads.emplace_back();
      continue;
    }
    const int64_t len = m.sizes[d];
    grads.push_back(n.needs_input_grad(i) ? g.narrow(d, offset, len) : Tensor());
    offset += len;
  }
  return grads;
}

// ---- hand-written: in-place / multi-output ----
// scatter_, scatter_add_, index_add_ and masked_fill_ write into self: the recording template
// (Record.h) only makes nodes for new results. Their node's first edge is self's history before
// the write, the write must be checked (check_inplace) and the history set on self (or rebased
// on its view base, set_inplace_history), as ag_binary_inplace does (Derivatives.cpp). They
// share the formulas of the functional rows. The indexing area has no multi-output op.
namespace {

// Saved slot 0 is the index (or mask); ints[0] the wrapped dim; scalars[0] alpha (index_add_).
// Edges: self's old history, then src.
variable_list scatter_inplace_backward(FormulaNode& n, const Tensor& g) {
  Tensor index = n.saved(0);
  const int64_t dim = n.ints[0];
  Tensor gself, gsrc;
  // The overwritten positions of self do not reach the output.
  if (n.needs_input_grad(0)) gself = g.scatter(dim, index, Scalar(0));
  if (n.needs_input_grad(1)) gsrc = scatter_src_grad(g, dim, index, n.input_meta(1));
  return {gself, gsrc};
}

variable_list scatter_add_inplace_backward(FormulaNode& n, const Tensor& g) {
  Tensor gsrc;
  if (n.needs_input_grad(1)) gsrc = scatter_src_grad(g, n.ints[0], n.saved(0), n.input_meta(1));
  return {g, gsrc};
}

variable_list index_add_inplace_backward(FormulaNode& n, const Tensor& g) {
  Tensor gs;
  if (n.needs_input_grad(1)) {
    // grad * conj(alpha), as the functional row (conjugate Wirtinger convention).
    const Scalar& alpha = n.scalars[0];
    gs = g.index_select(n.ints[0], n.saved(0)) * (alpha.is_complex() ? Scalar(std::conj(alpha.to_complex())) : alpha);
    if (n.input_meta(1).sizes.empty()) gs = gs.reshape({});
  }
  return {g, gs};
}

variable_list masked_fill_inplace_backward(FormulaNode& n, const Tensor& g) {
  return {g.masked_fill(n.saved(0), Scalar(0))};
}

template <bool Add>
Tensor& ag_scatter_inplace(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const char* name = Add ? "scatter_add_" : "scatter_";
  bool rec = is_differentiable(self.dtype()) && any_requires_grad({&self, &src});
  Edge old;
  InputMeta old_meta{DimVector(self.sizes()), self.dtype()};
  if (rec) {
    check_inplace(self, name);
    old = self.requires_grad() ? gradient_edge(self) : Edge{};
  }
  {
    BelowAutograd below;
    (Add ? ops::scatter_add_inplace_op() : ops::scatter_inplace_op())(self, dim, index, src);
  }
  if (!rec) return self;
  auto node = std::make_shared<FormulaNode>(Add ? "ScatterAddBackward0" : "ScatterBackward0",
                                            Add ? &scatter_add_inplace_backward : &scatter_inplace_backward);
  node->add_edge(old, old_meta);
  node->add_input(src);
  node->save(index);
  node->ints.push_back(wrap(dim, self.dim()));
  set_inplace_history(self, node);
  return self;
}

Tensor& ag_index_add_inplace(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) {
  bool rec = is_differentiable(self.dtype()) && any_requires_grad({&self, &src});
  Edge old;
  InputMeta old_meta{DimVector(self.sizes()), self.dtype()};
  if (rec) {
    check_inplace(self, "index_add_");
    old = self.requires_grad() ? gradient_edge(self) : Edge{};
  }
  {
    BelowAutograd below;
    ops::index_add_inplace_op()(self, dim, index, src, alpha);
  }
  if (!rec) return self;
  auto node = std::make_shared<FormulaNode>("IndexAddBackward0", &index_add_inplace_backward);
  node->add_edge(old, old_meta);
  node->add_input(src);
  node->save(index);
  node->ints.push_back(wrap(dim, self.dim()));
  node->scalars.push_back(alpha);
  set_inplace_history(self, node);
  return self;
}

Tensor& ag_masked_fill_inplace(Tensor& self, const Tensor& mask, const Scalar& value) {
  bool rec = is_differentiable(self.dtype()) && self.requires_grad();
  Edge old;
  InputMeta old_meta{DimVector(self.sizes()), self.dtype()};
  if (rec) {
    check_inplace(self, "masked_fill_");
    old = gradient_edge(self);
  }
  {
    BelowAutograd below;
    ops::masked_fill_inplace_op()(self, mask, value);
  }
  if (!rec) return self;
  auto node = std::make_shared<FormulaNode>("MaskedFillBackward0", &masked_fill_inplace_backward);
  node->add_edge(old, old_meta);
  node->save(mask);
  set_inplace_history(self, node);
  return self;
}

}  // namespace

// The functional ops (gather, scatter, scatter_add, index_add, masked_fill, cat, stack) are
// rows of the derivatives table (register_indexing_rows in Derivatives.cpp).
void register_index_derivatives() {
  ops::scatter_inplace_op().set(DispatchKey::Autograd, &ag_scatter_inplace<false>);
  ops::scatter_add_inplace_op().set(DispatchKey::Autograd, &ag_scatter_inplace<true>);
  ops::index_add_inplace_op().set(DispatchKey::Autograd, &ag_index_add_inplace);
  ops::masked_fill_inplace_op().set(DispatchKey::Autograd, &ag_masked_fill_inplace);
}

}  // namespace tensor::autograd
