// Internal: the nodes autograd records, saved tensors, and recording helpers.
#pragma once

#include <atomic>

#include "src/autograd/AutogradMeta.h"
#include "src/dispatch/Dispatcher.h"
#include "tensor/autograd/autograd.h"

namespace tensor::autograd {

/// A tensor kept for backward, with the version it had when saved (Note [Saved outputs]).
class SavedVariable {
 public:
  SavedVariable() = default;
  /// `producer`: for a saved output, the node that produces it (its history is set after saving).
  SavedVariable(const Tensor& t, bool is_output, std::weak_ptr<Node> producer = {});
  /// The saved tensor; throws if it was modified in place since, or freed by a finished backward.
  Tensor unpack(const char* node_name) const;
  void reset() { data_.reset(); was_reset_ = true; }
  /// Gives up the saved tensor (for deferred destruction, Note [Iterative graph teardown]).
  Tensor take() { return std::move(data_); }
  bool defined() const { return defined_; }
  /// The saved tensor without checks (undefined once freed), for inspection (to_dot).
  const Tensor& peek() const { return data_; }

 private:
  Tensor data_;                 // inputs: the tensor itself; outputs: an alias without history
  std::weak_ptr<Node> grad_fn_;  // outputs: their grad_fn, restored on unpack
  uint32_t output_nr_ = 0;
  uint32_t version_ = 0;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool defined_ = false;
  bool was_reset_ = false;
};

/// Shape and dtype of one forward input, for checking and reducing its gradient.
struct InputMeta {
  DimVector sizes;
  ScalarType dtype = ScalarType::Undefined;
  Device device{DeviceType::CPU};
};

class FormulaNode;
/// A backward formula: from the gradient of the (single) output, the gradients of the inputs.
using BackwardFn = variable_list (*)(FormulaNode& node, const Tensor& grad);

/// One node per recorded op call; its formula comes from the derivatives table.
class FormulaNode : public Node {
 public:
  FormulaNode(const char* name, BackwardFn fn) : name_(name), fn_(fn) {}
  ~FormulaNode() override;
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return name_; }
  void release_variables() override;

  /// Adds an edge to t's history (or an invalid edge when t does not require grad).
  void add_input(const Tensor& t);
  /// Adds an explicit edge (in-place ops: the tensor's history before the write).
  void add_edge(const Edge& e, const InputMeta& m);
  bool needs_input_grad(size_t i) const { return next_edges()[i].valid(); }
  const InputMeta& input_meta(size_t i) const { return input_meta_[i]; }
  void save(const Tensor& t, bool is_output = false) {
    saved_.emplace_back(t, is_output, is_output ? weak_from_this() : std::weak_ptr<Node>());
  }
  Tensor saved(size_t i) const { return saved_[i].unpack(name_); }
  /// Every tensor kept for backward (to_dot lists their shapes): a subclass's own (a table
  /// row's kept arguments), then those of save(), in order.
  virtual void list_saved(std::vector<const SavedVariable*>& out) const {
    for (const SavedVariable& v : saved_)
      if (v.defined()) out.push_back(&v);
  }

  // Non-tensor arguments the formula needs.
  std::vector<Scalar> scalars;
  DimVector ints;

 private:
  const char* name_;
  BackwardFn fn_;
  std::vector<SavedVariable> saved_;
  std::vector<InputMeta> input_meta_;
  bool released_ = false;
};

/// The leaf of an AccumulateGrad node, or nullptr for any other node (src/autograd/Engine.cpp).
const Tensor* accumulate_grad_leaf(const Node& n);
/// The gradient edge of t: its grad_fn, or its AccumulateGrad when it is a leaf requiring grad.
Edge gradient_edge(const Tensor& t);
/// Makes `node` the history of output t (output number nr).
void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t nr = 0);
/// True when an op with these inputs must be recorded.
bool any_requires_grad(std::initializer_list<const Tensor*> ts);
/// True for dtypes that carry gradients.
inline bool is_differentiable(ScalarType t) { return is_floating_point(t) || is_complex(t); }
/// Conjugates complex tensors (lazily); identity for real ones. Formulas use it for the
/// conjugate Wirtinger convention.
inline Tensor cj(const Tensor& t) { return t.is_complex() ? t.conj() : t; }

/// A backward formula as a captureless lambda: `n` is the node, `g` the incoming gradient.
#define TENSOR_GRAD(...) [](::tensor::autograd::FormulaNode& n, const ::tensor::Tensor& g) -> ::tensor::autograd::variable_list { __VA_ARGS__ }

/// Reduces a broadcast gradient back to `sizes` (sums over broadcast dims).
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);
/// Throws PyTorch's errors for an in-place write to t while recording; `writes_one_value` (fill_)
/// lets the write through an expanded view whose base does not require grad.
void check_inplace(const Tensor& t, const char* op, bool writes_one_value = false);
/// Makes `node` (an in-place op's node) the new history of self; when self is a view of a
/// recorded tensor, rebases the base's history instead (Note [In-place on views]). `self_nr` is
/// the input of `node` that self was (a custom Function's dirty argument may be any of them).
void set_inplace_history(const Tensor& self, const std::shared_ptr<Node>& node, uint32_t self_nr = 0);

/// Runs backend kernels with the Autograd key excluded, so composite kernels do not record.
class BelowAutograd {
 public:
  BelowAutograd() : prev_(dispatch::local_keys().excluded) {
    dispatch::local_keys().excluded = prev_ | DispatchKeySet(DispatchKey::Autograd);
  }
  ~BelowAutograd() { dispatch::local_keys().excluded = prev_; }

 private:
  DispatchKeySet prev_;
};

/// Fill the Autograd slots of the elementwise ops from the derivatives table (Derivatives.cpp).
void register_elementwise_derivatives();
/// Fill the Autograd slots of the hand-written kernels (Note [Hand-written nodes]): the
/// multi-output ops (nodes/MultiOutput.cpp) and the in-place indexing ops (nodes/InPlace.cpp).
void register_multi_output_nodes();
void register_inplace_nodes();
/// Fill the Autograd slots of the view ops (nodes/Views.cpp, Note [Views through the dispatcher]).
void register_view_nodes();

/// True when Tensor::copy_ must record (Note [Differentiable copy_]); record_copy_ then does
/// the copy and records it.
bool copy_needs_recording(const Tensor& self, const Tensor& src);
Tensor& record_copy_(Tensor& self, const Tensor& src, bool non_blocking);

/// Queues a tensor for destruction by the outermost node destructor on this thread.
void defer_release(Tensor t);

/// Runs fn on the gradient arriving at input input_nr of node n (register_hook, retain_grad).
/// Pre-hook on input `input_nr` of n; `handle` (from next_hook_handle()) lets remove_node_hook
/// find it, 0 for hooks that are never removed (retain_grad).
void register_node_hook(Node* n, uint32_t input_nr, std::function<Tensor(Tensor)> fn, unsigned handle = 0);
/// Removes n's pre-hook registered under `handle`; false if there is none.
bool remove_node_hook(Node* n, unsigned handle);
/// A fresh, never zero, handle for register_hook.
unsigned next_hook_handle();

/// Records a view op (from the view ops' Autograd kernels, nodes/Views.cpp) when the base
/// requires grad. (diagonal, unfold and as_strided record through record_positions_view.)
enum class ViewKind {
  Select, Slice, View, Transpose, Permute, Expand, Squeeze, Unsqueeze, AsStrided, Real, Imag, Conj
};
void record_view(const Tensor& out, const Tensor& base, ViewKind kind, IntArrayRef params);
/// Records a view whose element i sits at flat logical position pos[i] of base.
void record_positions_view(const Tensor& out, const Tensor& base, const Tensor& pos);
/// The logical positions in base of the elements the geometry (sizes, strides, storage offset)
/// reads from base's storage (Note [Positions in a base]); raises naming `op` when there are none.
Tensor positions_in(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset, const char* op);
/// Remembers the root base of a view of a tensor that does not require grad (grad mode on, a
/// differentiable dtype), so that writing a value that requires grad into the view can give the
/// base a history (Note [In-place on views]).
void remember_view_base(const Tensor& out, const Tensor& base);
/// Rebuilds a view's grad_fn from its base's current history when the base requires grad and the
/// storage was written since the view's history was recorded (or it has none yet).
void refresh_view_history(const Tensor& t);
/// Marks the outputs of a multi-output view function (split, chunk, unbind) made with grad mode on, so
/// that in-place writes into them raise PyTorch's error when their base requires grad
/// (Note [Multi-output views]). `node_name`: PyTorch's backward node name (SplitBackward0).
void mark_multi_output_views(const std::vector<Tensor>& outs, const char* node_name);

}  // namespace tensor::autograd
