// Internal: what the core calls into autograd for (Note [Autograd hooks]). Implemented in
// src/autograd/AutogradHooks.cpp.
#pragma once

#include <cstdint>

#include "tensor/core/ArrayRef.h"
#include "tensor/core/Tensor.h"

namespace tensor::autograd_hooks {

// Note [Autograd hooks]
// The core sits below autograd: TensorImpl owns an autograd meta it cannot see inside, and the
// copy and conversion methods of Tensor must record history when autograd is involved. (The
// view ops are dispatcher ops in src/ops since Note [Views through the dispatcher]: autograd
// fills their Autograd slots, so they need no hook.)
// So that src/core never includes src/autograd, this header names the few entry points the
// core needs, and autograd defines them (src/autograd/AutogradHooks.cpp), the way
// src/cuda/CUDAHooks.h names what the core needs from the CUDA backend. libtorch's c10 installs
// a table of function pointers at load time instead, because c10 is a separate library that
// cannot link against autograd; libtensor is one library, so plain declarations do the same job
// with no registration order to get wrong and no indirect call. The hot path is unchanged:
// Tensor::requires_grad calls meta_requires_grad only when a tensor has a meta.
// If the core ever becomes a library of its own, this header is where the table goes.

/// The view ops whose backward record_view knows. The same enumerators, in the same order, as
/// autograd::ViewKind (src/autograd/Functions.h); src/autograd/AutogradHooks.cpp checks that.
enum class ViewKind {
  Select, Slice, View, Transpose, Permute, Expand, Squeeze, Unsqueeze, AsStrided, Clone, ToCopy, Real, Imag, Conj
};

/// AutogradMeta::requires_grad() of a tensor's meta (TensorImpl::requires_grad).
bool meta_requires_grad(const autograd::AutogradMeta& m);

/// Records clone/to/contiguous (as a ViewKind) when the base requires grad.
void record_view(const Tensor& out, const Tensor& base, ViewKind kind, IntArrayRef params);

/// True when Tensor::copy_ must record (Note [Differentiable copy_]); record_copy_ then does the
/// copy and records it.
bool copy_needs_recording(const Tensor& self, const Tensor& src);
Tensor& record_copy_(Tensor& self, const Tensor& src, bool non_blocking);

}  // namespace tensor::autograd_hooks
