// The recorded node of a formula (FormulaNode) and the saved tensors it keeps (SavedVariable).
#include "src/autograd/Functions.h"

namespace tensor::autograd {

// Note [Saved outputs]
// A node that saves its own output would keep itself alive through the output's grad_fn.
// Outputs are therefore saved as an alias without history plus a weak pointer to the node;
// unpacking rebuilds a tensor with that grad_fn, so double backward still sees the graph.
// Every saved tensor remembers its version: an in-place write after saving is an error.

SavedVariable::SavedVariable(const Tensor& t, bool is_output, std::weak_ptr<Node> producer)
    : is_output_(is_output), defined_(t.defined()) {
  if (!t.defined()) return;
  version_ = t._version();
  requires_grad_ = t.requires_grad();
  if (is_output) {
    data_ = t.detach();
    grad_fn_ = std::move(producer);
    output_nr_ = 0;
    return;
  }
  AutogradMeta* m = t.unsafeGetTensorImpl()->autograd_meta();
  if (!m || !m->view_base_.defined()) {
    // A tensor without history is saved as an alias: a later in-place write may give t a
    // history that reaches this node (buf.copy_(buf * w)), and the saved value must not own it.
    data_ = requires_grad_ ? t : t.detach();
    return;
  }
  // Note [Saved views]
  // A view keeps its root base alive (view_base_), and an in-place write through another view
  // of that base makes the base's grad_fn the CopySlices node that owns this saved tensor:
  // saving the view itself would close a cycle node -> view -> base -> CopySlices -> node
  // (y.narrow(0, 0, 2).mul_(y.narrow(0, 2, 2)) leaked it). PyTorch's SavedVariable also keeps
  // the data apart from the history; here the view is saved as an alias of its memory (same
  // storage and version counter) carrying only the view's history at save time (grad_fn, or
  // the leaf's accumulator), without the base. Tensors without history are saved as plain
  // aliases for the same reason (a write may give them a history later).
  refresh_view_history(t);  // the history the view's values have now
  data_ = t.detach();
  if (m->grad_fn_ || m->requires_grad_) {
    AutogradMeta& am = materialize_meta(data_);
    am.grad_fn_ = m->grad_fn_;
    am.output_nr_ = m->output_nr_;
    am.requires_grad_ = m->requires_grad_;
    std::lock_guard<std::mutex> lock(m->mutex_);  // Note [Concurrent backward]
    am.grad_accumulator_ = m->grad_accumulator_;
  }
}

Tensor SavedVariable::unpack(const char* node_name) const {
  if (!defined_) return Tensor();
  TENSOR_CHECK(!was_reset_,
               "{}: trying to backward through the graph a second time (or directly access saved tensors after they "
               "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
               "or autograd::grad(). Pass retain_graph=true if you need to backward through the graph a second time",
               node_name);
  TENSOR_CHECK(data_._version() == version_,
               "{}: one of the variables needed for gradient computation has been modified by an inplace operation: "
               "[{}] is at version {}; expected version {} instead",
               node_name, data_.describe(), data_._version(), version_);
  if (!is_output_) return data_;
  Tensor t = data_.detach();
  if (auto fn = grad_fn_.lock()) set_history(t, fn, output_nr_);
  return t;
}

void FormulaNode::add_input(const Tensor& t) {
  Edge e = (t.defined() && t.requires_grad()) ? gradient_edge(t) : Edge{};
  mutable_next_edges().push_back(e);
  input_meta_.push_back(t.defined() ? InputMeta{DimVector(t.sizes()), t.dtype(), t.device()} : InputMeta{});
}

void FormulaNode::add_edge(const Edge& e, const InputMeta& m) {
  mutable_next_edges().push_back(e);
  input_meta_.push_back(m);
}

variable_list FormulaNode::apply(variable_list&& grads) {
  variable_list out = fn_(*this, grads[0]);
  // Gradients must match their inputs' shapes and dtypes (a formula bug otherwise).
  for (size_t i = 0; i < out.size() && i < input_meta_.size(); ++i) {
    if (!out[i].defined() || !needs_input_grad(i)) {
      if (!needs_input_grad(i)) out[i] = Tensor();
      continue;
    }
    const InputMeta& m = input_meta_[i];
    if (out[i].sizes() != m.sizes.ref()) out[i] = sum_to(out[i], m.sizes);
    TENSOR_CHECK(out[i].sizes() == m.sizes.ref(), "{} returned a gradient of shape {} for input {} of shape {}", name_,
                 detail::shape_str(out[i].sizes()), i, detail::shape_str(m.sizes));
    if (out[i].dtype() != m.dtype) out[i] = out[i].to(m.dtype);
  }
  return out;
}

FormulaNode::~FormulaNode() {
  for (auto& s : saved_) defer_release(s.take());
}

void FormulaNode::release_variables() {
  for (auto& s : saved_) s.reset();
}

bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  if (grad.sizes() == sizes) return grad;
  int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] == 1 && grad.size(lead + static_cast<int64_t>(i)) != 1) dims.push_back(lead + static_cast<int64_t>(i));
  Tensor r = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
  return r.reshape(sizes);
}

}  // namespace tensor::autograd
