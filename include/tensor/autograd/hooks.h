// Engine-level hooks for code that reacts to backward as it runs (DDP, FSDP, optimizers in
// backward): a hook after a leaf's gradient is accumulated, and callbacks at the end of a
// backward pass (Note [Engine callbacks] in src/autograd/Engine.cpp).
#pragma once

#include <functional>

#include "tensor/core/Tensor.h"

namespace tensor::autograd {

/// Runs `hook(leaf)` each time backward has accumulated a gradient into `leaf.grad()` (PyTorch's
/// Tensor.register_post_accumulate_grad_hook), on the thread running backward, after the new
/// gradient is in place. `leaf` must be a leaf that requires grad. Returns a handle for removal.
TENSOR_API unsigned register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook);

/// Removes a hook registered on `leaf` by register_post_accumulate_grad_hook; false if the handle
/// is unknown (already removed).
TENSOR_API bool remove_post_accumulate_grad_hook(const Tensor& leaf, unsigned handle);

/// Queues `callback` to run once the backward pass running on this thread has run every node,
/// before backward()/grad() returns (libtorch's queue_callback). Callable only from inside a
/// backward pass (a hook or a node's backward); throws tensor::Error elsewhere.
TENSOR_API void queue_callback(std::function<void()> callback);

}  // namespace tensor::autograd
