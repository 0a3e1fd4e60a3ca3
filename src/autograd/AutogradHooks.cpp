// Autograd's side of the interface the core calls through (Note [Autograd hooks] in
// src/core/AutogradHooks.h): each entry forwards to the autograd function it names.
#include "src/core/AutogradHooks.h"

#include "src/autograd/Functions.h"

namespace tensor {

namespace {
// The core's ViewKind mirrors autograd's, enumerator for enumerator.
using CoreKind = autograd_hooks::ViewKind;
using AutogradKind = autograd::ViewKind;
#define TENSOR_SAME_VIEW_KIND(k) \
  static_assert(static_cast<int>(CoreKind::k) == static_cast<int>(AutogradKind::k), "ViewKind::" #k " differs");
TENSOR_SAME_VIEW_KIND(Select)
TENSOR_SAME_VIEW_KIND(Slice)
TENSOR_SAME_VIEW_KIND(View)
TENSOR_SAME_VIEW_KIND(Transpose)
TENSOR_SAME_VIEW_KIND(Permute)
TENSOR_SAME_VIEW_KIND(Expand)
TENSOR_SAME_VIEW_KIND(Squeeze)
TENSOR_SAME_VIEW_KIND(Unsqueeze)
TENSOR_SAME_VIEW_KIND(AsStrided)
TENSOR_SAME_VIEW_KIND(Clone)
TENSOR_SAME_VIEW_KIND(ToCopy)
TENSOR_SAME_VIEW_KIND(Real)
TENSOR_SAME_VIEW_KIND(Imag)
TENSOR_SAME_VIEW_KIND(Conj)
#undef TENSOR_SAME_VIEW_KIND
}  // namespace

void detail::AutogradMetaDeleter::operator()(autograd::AutogradMeta* m) const noexcept { delete m; }

namespace autograd_hooks {

bool meta_requires_grad(const autograd::AutogradMeta& m) { return m.requires_grad(); }

void record_view(const Tensor& out, const Tensor& base, ViewKind kind, IntArrayRef params) {
  autograd::record_view(out, base, static_cast<AutogradKind>(kind), params);
}

bool copy_needs_recording(const Tensor& self, const Tensor& src) { return autograd::copy_needs_recording(self, src); }
Tensor& record_copy_(Tensor& self, const Tensor& src, bool non_blocking) {
  return autograd::record_copy_(self, src, non_blocking);
}

}  // namespace autograd_hooks
}  // namespace tensor
