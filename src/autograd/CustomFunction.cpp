// AutogradContext for custom Functions, and activation checkpointing.
#include "src/autograd/Functions.h"
#include "src/core/RandomState.h"
#include "tensor/autograd/Function.h"

namespace tensor::autograd {

namespace detail {
Edge gradient_edge(const Tensor& t) { return autograd::gradient_edge(t); }
void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t nr) {
  autograd::set_history(t, node, nr);
}
}  // namespace detail

void AutogradContext::save_for_backward(variable_list to_save) {
  saved_ = std::move(to_save);
  saved_versions_.clear();
  for (const Tensor& t : saved_) saved_versions_.push_back(t.defined() ? t._version() : 0);
}

variable_list AutogradContext::get_saved_variables() const {
  for (size_t i = 0; i < saved_.size(); ++i)
    TENSOR_CHECK(!saved_[i].defined() || saved_[i]._version() == saved_versions_[i],
                 "custom Function: saved tensor {} ({}) was modified by an inplace operation: it is at version {}; "
                 "expected version {} instead", i, saved_[i].describe(), saved_[i]._version(), saved_versions_[i]);
  return saved_;
}

void AutogradContext::mark_dirty(const variable_list& tensors) { dirty_ = tensors; }
void AutogradContext::mark_non_differentiable(const variable_list& outputs) { non_differentiable_ = outputs; }

// Note [Activation checkpointing]
// The forward runs without recording, so none of fn's intermediates stay alive; only the
// inputs are saved. Backward re-runs fn on detached copies of the inputs with recording on and
// differentiates that fresh graph with autograd::grad. Random ops inside fn (dropout) must draw
// the same numbers again: the generator's position at the forward is saved and restored for
// the recompute, then the generator is put back where it was, so the recompute consumes no
// random numbers of the program (PyTorch's preserve_rng_state).
namespace {
class CheckpointNode final : public Node {
 public:
  std::function<variable_list(const variable_list&)> fn;
  std::vector<SavedVariable> inputs;
  std::vector<bool> input_requires;
  std::vector<DimVector> out_sizes;
  std::vector<TensorOptions> out_options;
  tensor::detail::RngState rng;  // the generator's position when the forward ran

  std::string name() const override { return "CheckpointBackward"; }
  void release_variables() override {
    for (auto& s : inputs) s.reset();
  }
  variable_list apply(variable_list&& grads) override {
    variable_list detached;
    variable_list wrt;
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor t = inputs[i].unpack("CheckpointBackward");
      Tensor d = t.defined() ? t.detach() : t;
      if (d.defined() && input_requires[i]) {
        d.requires_grad_(true);
        wrt.push_back(d);
      }
      detached.push_back(d);
    }
    variable_list outs;
    {
      AutoGradMode on(true);
      const tensor::detail::RngState now = tensor::detail::get_rng_state();
      tensor::detail::set_rng_state(rng);
      try {
        outs = fn(detached);
      } catch (...) {
        tensor::detail::set_rng_state(now);
        throw;
      }
      tensor::detail::set_rng_state(now);
    }
    variable_list roots, seeds;
    for (size_t i = 0; i < outs.size() && i < grads.size(); ++i)
      if (grads[i].defined() && outs[i].requires_grad()) {
        roots.push_back(outs[i]);
        seeds.push_back(grads[i]);
      }
    variable_list result(inputs.size());
    if (roots.empty() || wrt.empty()) return result;
    variable_list g = grad(roots, wrt, seeds, /*retain_graph=*/false, /*create_graph=*/GradMode::is_enabled(),
                           /*allow_unused=*/true);
    for (size_t i = 0, k = 0; i < inputs.size(); ++i)
      if (detached[i].defined() && input_requires[i]) result[i] = g[k++];
    return result;
  }
};
}  // namespace

variable_list checkpoint(const std::function<variable_list(const variable_list&)>& fn, const variable_list& inputs) {
  const tensor::detail::RngState rng = tensor::detail::get_rng_state();
  variable_list outs;
  {
    AutoGradMode off(false);
    outs = fn(inputs);
  }
  bool any = false;
  for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
  if (!any || !GradMode::is_enabled()) return outs;
  auto node = std::make_shared<CheckpointNode>();
  node->fn = fn;
  node->rng = rng;
  for (const Tensor& t : inputs) {
    node->inputs.emplace_back(t, false);
    node->input_requires.push_back(t.defined() && t.requires_grad());
    node->mutable_next_edges().push_back(t.defined() && t.requires_grad() ? gradient_edge(t) : Edge{});
  }
  node->set_num_inputs(static_cast<uint32_t>(outs.size()));
  for (size_t i = 0; i < outs.size(); ++i) {
    Tensor& o = outs[i];
    if (!o.defined() || !(o.is_floating_point() || o.is_complex())) continue;
    for (const Tensor& t : inputs)
      if (t.is_same(o)) o = o.detach();  // an input passed through keeps its own history
    set_history(o, node, static_cast<uint32_t>(i));
  }
  return outs;
}

}  // namespace tensor::autograd
