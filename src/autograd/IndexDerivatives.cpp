// Derivatives of the indexing, joining and selection ops (see Note [Derivatives table]).
#include "src/autograd/Functions.h"
#include "src/ops/IndexOps.h"
#include "tensor/ops.h"

namespace tensor::autograd {

namespace {

#define GRAD TENSOR_GRAD

inline TensorOptions like(const Tensor& g) { return TensorOptions(g.dtype()).device(g.device()); }

/// The dim as the kernels see it: 0-dim tensors behave as 1-element 1-D ones.
inline int64_t wrap(int64_t dim, int64_t ndim) {
  if (ndim == 0) return 0;
  return dim < 0 ? dim + ndim : dim;
}

/// The gradient of the src of scatter / scatter_add: g gathered at the written positions. Only
/// the leading index-shaped block of src is read, so the rest of src gets zeros (padded with
/// cat, which keeps this differentiable). An empty index reads nothing.
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

// Formulas shared by the functional and in-place variants. Saved slot 0 is the index (or mask);
// ints[0] the wrapped dim; scalars[0] alpha (index_add).
variable_list scatter_backward(FormulaNode& n, const Tensor& g) {
  Tensor index = n.saved(0);
  const int64_t dim = n.ints[0];
  Tensor gself, gsrc;
  // The overwritten positions of self do not reach the output.
  if (n.needs_input_grad(0)) gself = g.scatter(dim, index, Scalar(0));
  if (n.needs_input_grad(1)) gsrc = scatter_src_grad(g, dim, index, n.input_meta(1));
  return {gself, gsrc};
}

variable_list scatter_add_backward(FormulaNode& n, const Tensor& g) {
  Tensor gsrc;
  if (n.needs_input_grad(1)) gsrc = scatter_src_grad(g, n.ints[0], n.saved(0), n.input_meta(1));
  return {g, gsrc};
}

variable_list index_add_backward(FormulaNode& n, const Tensor& g) {
  Tensor gs;
  if (n.needs_input_grad(1)) {
    gs = g.index_select(n.ints[0], n.saved(0)) * n.scalars[0];
    if (n.input_meta(1).sizes.empty()) gs = gs.reshape({});
  }
  return {g, gs};
}

variable_list masked_fill_backward(FormulaNode& n, const Tensor& g) {
  // Broadcast self: FormulaNode::apply sums the gradient back to self's shape.
  return {g.masked_fill(n.saved(0), Scalar(0))};
}

// ---- gather ----
Tensor ag_gather(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::gather_op()(x, dim, index);
  }
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&x})) return out;
  auto node = std::make_shared<FormulaNode>("GatherBackward0", GRAD(
      // Repeated indices accumulate: scatter_add, not scatter.
      return {zeros(n.input_meta(0).sizes, like(g)).scatter_add(n.ints[0], n.saved(0), g)};));
  node->add_input(x);
  node->save(index);
  node->ints.push_back(wrap(dim, x.dim()));
  set_history(out, node);
  return out;
}

// ---- scatter, scatter_add (tensor src) ----
template <bool Add>
Tensor ag_scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out;
  {
    BelowAutograd below;
    out = (Add ? ops::scatter_add_op() : ops::scatter_op())(x, dim, index, src);
  }
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&x, &src})) return out;
  auto node = std::make_shared<FormulaNode>(Add ? "ScatterAddBackward0" : "ScatterBackward0",
                                            Add ? &scatter_add_backward : &scatter_backward);
  node->add_input(x);
  node->add_input(src);
  node->save(index);
  node->ints.push_back(wrap(dim, x.dim()));
  set_history(out, node);
  return out;
}

// In-place variants follow ag_binary_inplace (Derivatives.cpp): the node's first edge is self's
// history before the write. The formulas need neither self's old values nor the output.
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
                                            Add ? &scatter_add_backward : &scatter_backward);
  node->add_edge(old, old_meta);
  node->add_input(src);
  node->save(index);
  node->ints.push_back(wrap(dim, self.dim()));
  set_inplace_history(self, node);
  return self;
}

// ---- index_add and index_add_ ----
Tensor ag_index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::index_add_op()(x, dim, index, src, alpha);
  }
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&x, &src})) return out;
  auto node = std::make_shared<FormulaNode>("IndexAddBackward0", &index_add_backward);
  node->add_input(x);
  node->add_input(src);
  node->save(index);
  node->ints.push_back(x.dim() == 0 ? 0 : (dim < 0 ? dim + x.dim() : dim));
  node->scalars.push_back(alpha);
  set_history(out, node);
  return out;
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
  auto node = std::make_shared<FormulaNode>("IndexAddBackward0", &index_add_backward);
  node->add_edge(old, old_meta);
  node->add_input(src);
  node->save(index);
  node->ints.push_back(wrap(dim, self.dim()));
  node->scalars.push_back(alpha);
  set_inplace_history(self, node);
  return self;
}

// ---- masked_fill ----
Tensor ag_masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::masked_fill_op()(x, mask, value);
  }
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&x})) return out;
  auto node = std::make_shared<FormulaNode>("MaskedFillBackward0", &masked_fill_backward);
  node->add_input(x);
  node->save(mask);
  set_history(out, node);
  return out;
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
  auto node = std::make_shared<FormulaNode>("MaskedFillBackward0", &masked_fill_backward);
  node->add_edge(old, old_meta);
  node->save(mask);
  set_inplace_history(self, node);
  return self;
}

// ---- cat, stack ----
bool list_requires_grad(TensorList ts) {
  for (const Tensor& t : ts)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// Note [Legacy empty tensors in cat] (JoinOps.cpp): 1-D inputs of shape [0] are skipped by the
// forward, whatever their rank; they get no gradient.
bool is_legacy_empty(const InputMeta& m) { return m.sizes.size() == 1 && m.sizes[0] == 0; }

Tensor ag_cat(TensorList tensors, int64_t dim) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::cat_op()(tensors, dim);
  }
  if (!is_differentiable(out.dtype()) || !list_requires_grad(tensors)) return out;
  auto node = std::make_shared<FormulaNode>("CatBackward0", GRAD(
      const int64_t d = n.ints[0];
      variable_list grads;
      int64_t offset = 0;
      for (size_t i = 0; i < n.next_edges().size(); ++i) {
        const InputMeta& m = n.input_meta(i);
        if (is_legacy_empty(m)) {
          grads.emplace_back();
          continue;
        }
        const int64_t len = m.sizes[d];
        grads.push_back(n.needs_input_grad(i) ? g.narrow(d, offset, len) : Tensor());
        offset += len;
      }
      return grads;));
  // The dim wraps against the first input that is not a legacy empty tensor (as the forward).
  int64_t ref_dim = -1;
  for (const Tensor& t : tensors) {
    node->add_input(t);
    if (ref_dim < 0 && !(t.dim() == 1 && t.size(0) == 0)) ref_dim = t.dim();
  }
  node->ints.push_back(ref_dim < 0 ? 0 : wrap(dim, ref_dim));
  set_history(out, node);
  return out;
}

Tensor ag_stack(TensorList tensors, int64_t dim) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::stack_op()(tensors, dim);
  }
  if (!is_differentiable(out.dtype()) || !list_requires_grad(tensors)) return out;
  auto node = std::make_shared<FormulaNode>("StackBackward0", GRAD(
      variable_list grads;
      for (size_t i = 0; i < n.next_edges().size(); ++i)
        grads.push_back(n.needs_input_grad(i) ? g.select(n.ints[0], static_cast<int64_t>(i)) : Tensor());
      return grads;));
  for (const Tensor& t : tensors) node->add_input(t);
  node->ints.push_back(dim < 0 ? dim + tensors[0].dim() + 1 : dim);
  set_history(out, node);
  return out;
}

#undef GRAD

}  // namespace

void register_index_derivatives() {
  ops::gather_op().set(DispatchKey::Autograd, &ag_gather);
  ops::scatter_op().set(DispatchKey::Autograd, &ag_scatter<false>);
  ops::scatter_add_op().set(DispatchKey::Autograd, &ag_scatter<true>);
  ops::scatter_inplace_op().set(DispatchKey::Autograd, &ag_scatter_inplace<false>);
  ops::scatter_add_inplace_op().set(DispatchKey::Autograd, &ag_scatter_inplace<true>);
  ops::index_add_op().set(DispatchKey::Autograd, &ag_index_add);
  ops::index_add_inplace_op().set(DispatchKey::Autograd, &ag_index_add_inplace);
  ops::masked_fill_op().set(DispatchKey::Autograd, &ag_masked_fill);
  ops::masked_fill_inplace_op().set(DispatchKey::Autograd, &ag_masked_fill_inplace);
  ops::cat_op().set(DispatchKey::Autograd, &ag_cat);
  ops::stack_op().set(DispatchKey::Autograd, &ag_stack);
}

}  // namespace tensor::autograd
