// Internal: what the core calls into autograd for (Note [Autograd hooks]). Implemented in
// src/autograd/AutogradHooks.cpp.
#pragma once

#include <cstdint>

#include "tensor/core/ArrayRef.h"
#include "tensor/core/Tensor.h"

namespace tensor::autograd_hooks {

// Note [Autograd hooks]
// The core sits below autograd: TensorImpl owns an autograd meta it cannot see inside. Views,
// copies and conversions are dispatcher ops in src/ops (Note [Views through the dispatcher],
// Note [Copy through the dispatcher]) whose Autograd slots autograd fills, so the one thing the
// core still asks autograd is whether a meta requires grad.
// So that src/core never includes src/autograd, this header names that entry point and autograd
// defines it (src/autograd/AutogradHooks.cpp). (The CUDA backend is the opposite case: it is a
// separate library, so src/core/CUDAHooks.h is an interface it implements; Note [CUDA hooks].)
// libtorch's c10 installs a table of function pointers at load time
// instead, because c10 is a separate library that cannot link against autograd; libtensor is one
// library, so a plain declaration does the same job with no registration order to get wrong and
// no indirect call. Tensor::requires_grad calls meta_requires_grad only when a tensor has a meta.
// If the core ever becomes a library of its own, this header is where the table goes.

/// AutogradMeta::requires_grad() of a tensor's meta (TensorImpl::requires_grad).
bool meta_requires_grad(const autograd::AutogradMeta& m);

}  // namespace tensor::autograd_hooks
