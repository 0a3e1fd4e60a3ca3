// Internal: what the core calls into autograd for (Note [Autograd hooks]). Implemented in
// src/autograd/AutogradHooks.cpp.
#pragma once

#include <cstdint>

#include "tensor/core/ArrayRef.h"
#include "tensor/core/Tensor.h"

namespace tensor::autograd_hooks {

// Note [Autograd hooks]
// The core sits below autograd: TensorImpl owns an autograd meta it cannot see inside, and the
// view, copy and conversion methods of Tensor must record history when autograd is involved.
// So that src/core never includes src/autograd, this header names the few entry points the
// core needs, and autograd defines them (src/autograd/AutogradHooks.cpp), the way
// src/cuda/CUDAHooks.h names what the core needs from the CUDA backend. libtorch's c10 installs
// a table of function pointers at load time instead, because c10 is a separate library that
// cannot link against autograd; libtensor is one library, so plain declarations do the same job
// with no registration order to get wrong (a view made before any autograd code ran still
// remembers its base) and no indirect call. The hot path is unchanged: Tensor::requires_grad
// calls meta_requires_grad only when a tensor has a meta, and the view ops reach autograd only
// through record_view (the base requires grad) or remember_view_base, as before.
// If the core ever becomes a library of its own, this header is where the table goes.

/// The view ops whose backward record_view knows. The same enumerators, in the same order, as
/// autograd::ViewKind (src/autograd/Functions.h); src/autograd/AutogradHooks.cpp checks that.
enum class ViewKind {
  Select, Slice, View, Transpose, Permute, Expand, Squeeze, Unsqueeze, AsStrided, Clone, ToCopy, Real, Imag, Conj
};

/// AutogradMeta::requires_grad() of a tensor's meta (TensorImpl::requires_grad).
bool meta_requires_grad(const autograd::AutogradMeta& m);

/// Records a view op (or clone/to/contiguous) when the base requires grad.
void record_view(const Tensor& out, const Tensor& base, ViewKind kind, IntArrayRef params);
/// Records a view whose element i sits at flat logical position pos[i] of base.
void record_positions_view(const Tensor& out, const Tensor& base, const Tensor& pos);
/// The logical positions in base of the elements the geometry reads from base's storage;
/// raises naming `op` when there are none.
Tensor positions_in(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset, const char* op);
/// Remembers the root base of a view of a tensor that does not require grad (Note [In-place
/// on views] in src/autograd/Functions.cpp).
void remember_view_base(const Tensor& out, const Tensor& base);

}  // namespace tensor::autograd_hooks
