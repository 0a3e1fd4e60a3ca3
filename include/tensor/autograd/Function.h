// Custom differentiable functions: struct MyOp : autograd::Function<MyOp> { static forward(ctx, ...);
// static backward(ctx, grads); }; MyOp::apply(...). Also activation checkpointing.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tensor/autograd/Node.h"
#include "tensor/autograd/autograd.h"
#include "tensor/dispatch/Library.h"
#include "tensor/ops.h"

namespace tensor::autograd {

class AutogradContext;

namespace detail {
/// The gradient edge of t (its grad_fn, or its AccumulateGrad for a leaf requiring grad).
TENSOR_API Edge gradient_edge(const Tensor& t);
/// What a custom Function's apply does once forward has returned, for the tensors forward marked
/// dirty and saved (Note [Custom Function in-place semantics]): bumps the version of a dirty
/// input that forward changed without bumping it, and when the call is recorded rejects a dirty
/// leaf that requires grad and a dirty tensor that is not returned; then records the saved
/// tensors' versions. `versions` holds each input's version from before forward.
TENSOR_API void finish_custom_forward(AutogradContext& ctx, const variable_list& inputs,
                                      const std::vector<uint32_t>& versions, const variable_list& outputs,
                                      bool record);
/// Makes `node` the history of forward's output `o` (output number nr of num_outputs), as
/// libtorch's custom Function does: a dirty view input rebases its base's history instead
/// (Note [In-place on views]; refused with several outputs, as libtorch), and a saved tensor
/// that is this output is kept without its history (Note [Saved outputs of custom Functions]).
TENSOR_API void set_output_history(AutogradContext& ctx, const std::shared_ptr<Node>& node,
                                   const variable_list& inputs, const Tensor& o, uint32_t nr, size_t num_outputs,
                                   bool dirty);
/// Checks what a custom Function's backward returned, with libtorch's rules, and returns the
/// tensor arguments' gradients: one entry per forward argument (extra entries only if
/// undefined), none for a non-tensor argument, each gradient of its input's shape (a
/// broadcast one is summed down), dtype (cast) and device. Errors name `fn` and the index.
TENSOR_API variable_list conform_custom_grads(const char* fn, variable_list all, size_t num_args,
                                              const std::vector<size_t>& tensor_arg_pos,
                                              const std::vector<std::vector<int64_t>>& input_sizes,
                                              const std::vector<TensorOptions>& input_options);
}  // namespace detail

/// State shared by forward and backward of a custom Function.
class TENSOR_API AutogradContext {
 public:
  /// Tensors the backward needs; they are checked for in-place changes when retrieved.
  void save_for_backward(variable_list to_save);
  /// The saved tensors; throws if one was modified in place after saving.
  variable_list get_saved_variables() const;
  /// Tensors forward modified in place. Each must be an input and be returned; it takes this
  /// Function's node as its history, and its version counter is bumped if forward changed it
  /// without bumping it (a write through data_ptr), so that a tensor saved earlier in the graph
  /// is known to be stale. A leaf that requires grad may not be marked dirty while recording.
  void mark_dirty(const variable_list& tensors);
  /// Outputs that get no gradient (indices, masks).
  void mark_non_differentiable(const variable_list& outputs);
  /// Whether input i (counting only tensor arguments) needs a gradient.
  bool needs_input_grad(size_t i) const { return i < needs_input_grad_.size() && needs_input_grad_[i]; }
  /// When true (default), undefined output gradients reach backward as zeros.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  /// Anything else forward wants to pass to backward.
  std::unordered_map<std::string, dispatch::IValue> saved_data;

  /// Drops the saved tensors once backward ran without retain_graph (CppNode::release_variables):
  /// a saved output would otherwise hold this Function's node through its own history.
  void release_saved_variables();

  // Used by Function<T>::apply.
  std::vector<bool> needs_input_grad_;
  std::vector<Tensor> non_differentiable_;
  std::vector<Tensor> dirty_;
  bool materialize_grads_ = true;

 private:
  std::vector<Tensor> saved_;  // a saved output: an alias without history
  std::vector<uint32_t> saved_versions_;
  std::vector<int64_t> saved_output_nr_;  // the output number of a saved output, else -1
  std::weak_ptr<Node> node_;              // this Function's node, restored as a saved output's history
  bool released_ = false;
  friend void detail::finish_custom_forward(AutogradContext&, const variable_list&, const std::vector<uint32_t>&,
                                            const variable_list&, bool);
  friend void detail::set_output_history(AutogradContext&, const std::shared_ptr<Node>&, const variable_list&,
                                         const Tensor&, uint32_t, size_t, bool);
};

/// The node recorded for a custom Function: calls T::backward.
template <class T>
class CppNode final : public Node {
 public:
  variable_list apply(variable_list&& grads) override {
    if (ctx.materialize_grads_)
      for (size_t i = 0; i < grads.size(); ++i)
        if (!grads[i].defined()) grads[i] = zeros(output_sizes[i], output_options[i]);
    return detail::conform_custom_grads("CppNode", T::backward(&ctx, std::move(grads)), num_args, tensor_arg_pos,
                                        input_sizes, input_options);
  }
  std::string name() const override { return "CppNode"; }
  void release_variables() override { ctx.release_saved_variables(); }

  AutogradContext ctx;
  std::vector<size_t> tensor_arg_pos;  // position of each tensor argument among all arguments
  size_t num_args = 0;                 // forward's arguments, tensors or not
  std::vector<std::vector<int64_t>> input_sizes;  // of each tensor argument ({-1} if undefined)
  std::vector<TensorOptions> input_options;
  std::vector<std::vector<int64_t>> output_sizes;
  std::vector<TensorOptions> output_options;
};

/// Base for custom differentiable ops (libtorch's torch::autograd::Function).
template <class T>
struct Function {
  /// Runs T::forward(ctx, args...) without recording, then records one node whose backward is
  /// T::backward(ctx, grads). Returns what forward returns (Tensor or variable_list).
  template <class... Args>
  static auto apply(Args&&... args) {
    auto node = std::make_shared<CppNode<T>>();
    variable_list inputs;
    size_t pos = 0;
    auto collect = [&](const auto& a) {
      using A = std::decay_t<decltype(a)>;
      if constexpr (std::is_same_v<A, Tensor>) {
        inputs.push_back(a);
        node->tensor_arg_pos.push_back(pos);
      }
      ++pos;
    };
    (collect(args), ...);
    node->num_args = pos;
    bool record = GradMode::is_enabled();
    bool any = false;
    for (const Tensor& t : inputs) {
      bool r = t.defined() && t.requires_grad();
      node->ctx.needs_input_grad_.push_back(r);
      any = any || r;
    }
    record = record && any;
    std::vector<uint32_t> versions;
    for (const Tensor& t : inputs) versions.push_back(t.defined() ? t._version() : 0);
    using R = decltype(T::forward(&node->ctx, std::forward<Args>(args)...));
    R result = [&] {
      AutoGradMode no_grad(false);
      return T::forward(&node->ctx, std::forward<Args>(args)...);
    }();
    {
      variable_list returned;
      if constexpr (std::is_same_v<R, Tensor>) returned.push_back(result);
      else returned = result;
      detail::finish_custom_forward(node->ctx, inputs, versions, returned, record);
    }
    if (!record) return result;
    for (const Tensor& t : inputs) {
      node->mutable_next_edges().push_back(t.defined() && t.requires_grad() ? detail::gradient_edge(t) : Edge{});
      node->input_sizes.push_back(t.defined() ? t.sizes().vec() : std::vector<int64_t>{-1});
      node->input_options.push_back(t.defined() ? t.options() : TensorOptions());
    }
    variable_list outs;
    if constexpr (std::is_same_v<R, Tensor>) outs.push_back(result);
    else outs = result;
    node->set_num_inputs(static_cast<uint32_t>(outs.size()));
    for (size_t i = 0; i < outs.size(); ++i) {
      Tensor& o = outs[i];
      node->output_sizes.push_back(o.sizes().vec());
      node->output_options.push_back(o.options());
      bool nondiff = false;
      for (const Tensor& n : node->ctx.non_differentiable_) nondiff = nondiff || n.is_same(o);
      if (nondiff || !(o.is_floating_point() || o.is_complex())) continue;
      // An input returned unchanged gets a fresh alias so the input keeps its own history.
      bool is_input = false;
      for (const Tensor& t : inputs) is_input = is_input || t.is_same(o);
      bool dirty = false;
      for (const Tensor& d : node->ctx.dirty_) dirty = dirty || d.is_same(o);
      if (is_input && !dirty) o = o.detach();
      detail::set_output_history(node->ctx, node, inputs, o, static_cast<uint32_t>(i), outs.size(), dirty);
    }
    // The node owns ctx: a dirty output kept there would hold the node through its own history
    // (a reference cycle, never freed).
    node->ctx.dirty_.clear();
    node->ctx.non_differentiable_.clear();
    if constexpr (std::is_same_v<R, Tensor>) return outs[0];
    else return outs;
  }
};

/// Activation checkpointing: runs fn(inputs) without keeping its intermediate tensors, and
/// recomputes them during backward. Random ops in fn draw the same numbers again (the global
/// generator is replayed); fn must otherwise be deterministic.
TENSOR_API variable_list checkpoint(const std::function<variable_list(const variable_list&)>& fn,
                                    const variable_list& inputs);

}  // namespace tensor::autograd
