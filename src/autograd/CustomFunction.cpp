// AutogradContext for custom Functions, and activation checkpointing.
#include "src/autograd/Functions.h"
#include "src/core/Check.h"
#include "src/core/RandomState.h"
#include "tensor/autograd/Function.h"

namespace tensor::autograd {

namespace detail {
Edge gradient_edge(const Tensor& t) { return autograd::gradient_edge(t); }
}  // namespace detail

void AutogradContext::save_for_backward(variable_list to_save) {
  saved_ = std::move(to_save);
  saved_versions_.clear();
  for (const Tensor& t : saved_) saved_versions_.push_back(t.defined() ? t._version() : 0);
  saved_output_nr_.assign(saved_.size(), -1);
}

// Note [Saved outputs of custom Functions]
// A forward that saves its own output would make a reference cycle: the node owns ctx, ctx the
// output, the output its history, the node. Freeing the saved tensors at the end of backward
// breaks it only for graphs that are differentiated. As libtorch's SavedVariable does for outputs,
// ctx keeps such a tensor as an alias without history (same storage and version counter) and a
// weak link to the node; get_saved_variables() hands backward a fresh alias whose history is the
// node again, so create_graph differentiates through it.
namespace detail {
void set_output_history(AutogradContext& ctx, const std::shared_ptr<Node>& node, const variable_list& inputs,
                        const Tensor& o, uint32_t nr, size_t num_outputs, bool dirty) {
  if (dirty && o.unsafeGetTensorImpl()->is_view()) {
    // libtorch's rebase_history: the base takes the change (CopySlices over this node), whose
    // backward hands the node one gradient, so the Function may have only one output.
    TENSOR_CHECK(num_outputs == 1,
                 "custom Function: Functions which modify views in-place must return a single Variable: the dirty "
                 "input [{}] is a view, and forward returned {} outputs", o.describe(), num_outputs);
    uint32_t input = 0;
    while (input < inputs.size() && !(inputs[input].defined() && inputs[input].is_same(o))) ++input;
    set_inplace_history(o, node, input);
  } else {
    autograd::set_history(o, node, nr);
  }
  for (size_t i = 0; i < ctx.saved_.size(); ++i)
    if (ctx.saved_[i].defined() && ctx.saved_[i].is_same(o)) {
      ctx.saved_[i] = ctx.saved_[i].detach();
      ctx.saved_output_nr_[i] = nr;
      ctx.node_ = node;
    }
}
}  // namespace detail

namespace detail {

variable_list conform_custom_grads(const char* fn, variable_list all, size_t num_args,
                                   const std::vector<size_t>& tensor_arg_pos,
                                   const std::vector<std::vector<int64_t>>& input_sizes,
                                   const std::vector<TensorOptions>& input_options) {
  // Extra trailing entries are allowed only when undefined (libtorch's rule).
  if (all.size() > num_args) {
    bool extra_undefined = true;
    for (size_t i = num_args; i < all.size(); ++i) extra_undefined = extra_undefined && !all[i].defined();
    if (extra_undefined) all.resize(num_args);
  }
  TENSOR_CHECK(all.size() == num_args,
               "function {} returned an incorrect number of gradients (expected {}, got {}): backward returns one "
               "entry per forward argument, an undefined Tensor() for those without a gradient",
               fn, num_args, all.size());
  std::vector<bool> is_tensor(num_args, false);
  for (size_t p : tensor_arg_pos) is_tensor[p] = true;
  for (size_t i = 0; i < num_args; ++i)
    TENSOR_CHECK(is_tensor[i] || !all[i].defined(),
                 "function {} returned a gradient that is defined at position {}, but the corresponding forward "
                 "input was not a Tensor", fn, i + 1);
  variable_list out;
  out.reserve(tensor_arg_pos.size());
  for (size_t i = 0; i < tensor_arg_pos.size(); ++i) {
    Tensor g = all[tensor_arg_pos[i]];
    const bool known = !(input_sizes[i].size() == 1 && input_sizes[i][0] < 0);  // an undefined input: no edge
    if (g.defined() && known) {
      const IntArrayRef want(input_sizes[i]);
      if (g.sizes() != want) {
        // libtorch's is_expandable_to: the input's shape broadcasts to the gradient's.
        bool expandable = g.dim() >= static_cast<int64_t>(want.size());
        for (size_t d = 0; expandable && d < want.size(); ++d) {
          const int64_t gs = g.size(g.dim() - 1 - static_cast<int64_t>(d)), ws = want[want.size() - 1 - d];
          expandable = ws == gs || ws == 1;
        }
        TENSOR_CHECK(expandable,
                     "Function {} returned an invalid gradient at index {} - got {} but expected shape compatible "
                     "with {}", fn, i, ::tensor::detail::shape_str(g.sizes()), ::tensor::detail::shape_str(want));
        g = sum_to(g, want);
      }
      TENSOR_CHECK(g.device() == input_options[i].device(),
                   "Function {} returned an invalid gradient at index {} - expected device {} but got {}", fn, i,
                   input_options[i].device().str(), g.device().str());
      if (g.scalar_type() != input_options[i].dtype()) g = g.to(input_options[i].dtype());
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace detail

void AutogradContext::release_saved_variables() {
  released_ = !saved_.empty();
  saved_.clear();
  saved_versions_.clear();
  saved_output_nr_.clear();
}

variable_list AutogradContext::get_saved_variables() const {
  TENSOR_CHECK(!released_,
               "CppNode: Trying to backward through the graph a second time (or directly access saved tensors after "
               "they have already been freed). Saved intermediate values of the graph are freed when you call "
               ".backward() or autograd::grad(). Specify retain_graph=true if you need to backward through the graph "
               "a second time or if you need to access saved tensors after calling backward.");
  for (size_t i = 0; i < saved_.size(); ++i)
    TENSOR_CHECK(!saved_[i].defined() || saved_[i]._version() == saved_versions_[i],
                 "CppNode: one of the variables needed for gradient computation has been modified by an inplace "
                 "operation: saved tensor {} ([{}]) is at version {}; expected version {} instead", i,
                 saved_[i].describe(), saved_[i]._version(), saved_versions_[i]);
  variable_list out = saved_;
  const std::shared_ptr<Node> node = node_.lock();
  for (size_t i = 0; i < out.size(); ++i)
    if (saved_output_nr_[i] >= 0) {
      out[i] = saved_[i].detach();
      if (node) autograd::set_history(out[i], node, static_cast<uint32_t>(saved_output_nr_[i]));
    }
  return out;
}

void AutogradContext::mark_dirty(const variable_list& tensors) { dirty_ = tensors; }

// Note [Custom Function in-place semantics]
// libtorch's contract for a forward that changes an input in place: the in-place op bumps the
// input's version (every node that saved it earlier then refuses to run: "modified by an
// inplace operation"), forward lists it in mark_dirty and returns it, and the Function's node
// becomes its history. Our in-place ops bump the version too; a forward that writes through
// data_ptr() does not, so mark_dirty's input is bumped here when its version did not move
// during forward (never twice, so _version() counts as libtorch's does). While recording,
// dirtying a leaf that requires grad is the error libtorch raises: its .grad() would describe a
// value it no longer has. The check runs after forward, as libtorch's does, so the data has
// already changed when it throws. Versions of the saved tensors are taken here, after forward,
// as libtorch makes its SavedVariables after forward: a forward that saves x and then changes it
// (marking it dirty) hands backward the changed x without an error.
namespace detail {
void finish_custom_forward(AutogradContext& ctx, const variable_list& inputs, const std::vector<uint32_t>& versions,
                           const variable_list& outputs, bool record) {
  for (size_t d = 0; d < ctx.dirty_.size(); ++d) {
    const Tensor& t = ctx.dirty_[d];
    TENSOR_CHECK(t.defined(), "custom Function: mark_dirty got an undefined tensor (entry {})", d);
    size_t input = inputs.size();
    for (size_t i = 0; i < inputs.size() && input == inputs.size(); ++i)
      if (inputs[i].defined() && inputs[i].is_same(t)) input = i;
    if (input < inputs.size() && t._version() == versions[input]) t.unsafeGetTensorImpl()->bump_version();
    if (!record) continue;
    TENSOR_CHECK(!(t.is_leaf() && t.requires_grad()),
                 "custom Function: a leaf Variable that requires grad is being used in an in-place operation: "
                 "mark_dirty got {} ([{}]); change a clone of it, or the leaf under NoGradGuard",
                 input < inputs.size() ? "input " + std::to_string(input) : std::string("a tensor"), t.describe());
    bool returned = false;
    for (const Tensor& o : outputs) returned = returned || (o.defined() && o.is_same(t));
    TENSOR_CHECK(returned,
                 "custom Function: some elements marked as dirty during the forward method were not returned as "
                 "output ([{}]); the inputs that are modified inplace must all be outputs of the Function",
                 t.describe());
    // A dirty view: libtorch's handle_view_on_rebase refusals (a view made in no-grad mode, an
    // output of a multi-view function, a view of a leaf that requires grad).
    if (t.unsafeGetTensorImpl()->is_view()) check_inplace(t, "custom Function", /*writes_one_value=*/false);
  }
  for (size_t i = 0; i < ctx.saved_.size(); ++i)
    ctx.saved_versions_[i] = ctx.saved_[i].defined() ? ctx.saved_[i]._version() : 0;
}
}  // namespace detail
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
