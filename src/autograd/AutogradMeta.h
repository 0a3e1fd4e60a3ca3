// Internal: the autograd state hung off a TensorImpl (ARCHITECTURE.md: Autograd).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "src/core/Check.h"
#include "tensor/autograd/Node.h"

namespace tensor::autograd {

struct AutogradMeta {
  bool requires_grad_ = false;       // leaves only; non-leaves require grad through grad_fn_
  bool retains_grad_ = false;
  Tensor grad_;
  std::shared_ptr<Node> grad_fn_;
  std::weak_ptr<Node> grad_accumulator_;  // leaves: the AccumulateGrad node, made on first use
  // Guards grad_ and grad_accumulator_ of a leaf (Note [Concurrent backward]).
  std::mutex mutex_;
  uint32_t output_nr_ = 0;
  // Leaves: register_hook's hooks with their handles (Tensor::remove_hook).
  std::vector<std::pair<unsigned, std::function<Tensor(Tensor)>>> hooks_;
  // Leaves: run after a gradient was accumulated into grad_ (register_post_accumulate_grad_hook),
  // with the handle each was registered under; guarded by mutex_.
  std::vector<std::pair<unsigned, std::function<void(const Tensor&)>>> post_acc_hooks_;
  unsigned next_post_acc_handle_ = 0;
  // retain_grad on a non-leaf: the slot its grad_fn's hook fills (shared, so the hook never
  // points at a dead tensor).
  std::shared_ptr<Tensor> retained_grad_;
  // Views made with grad mode on: the root base they view, and the storage version at which
  // grad_fn_ was last recorded; a write to the storage since then makes grad_fn_ stale, and it
  // is rebuilt from the base's current history on next use (Note [In-place on views]).
  Tensor view_base_;
  uint32_t view_version_ = 0;
  // Outputs of a function that returns several views (split, chunk) made with grad mode on: the
  // backward node's name and the output number, for PyTorch's error on in-place writes into
  // them (Note [Multi-output views]); views of such a view inherit it.
  const char* multi_view_fn_ = nullptr;
  uint32_t multi_view_nr_ = 0;
  // A view requires grad once its base does (the base may start requiring grad after the view
  // was made, e.g. through an in-place write into another view of it), as in PyTorch.
  bool requires_grad() const {
    return requires_grad_ || grad_fn_ != nullptr || (view_base_.defined() && view_base_.requires_grad());
  }
};

/// The meta of t, created on first need.
AutogradMeta& materialize_meta(const Tensor& t);
/// Registers the Autograd kernels of every op the first time any tensor requires grad
/// (Note [Lazy autograd registration]).
void ensure_autograd_kernels();

}  // namespace tensor::autograd
