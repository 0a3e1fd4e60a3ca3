// Autograd's side of the interface the core calls through (Note [Autograd hooks] in
// src/core/AutogradHooks.h): each entry forwards to the autograd function it names.
#include "src/core/AutogradHooks.h"

#include "src/autograd/Functions.h"

namespace tensor {

void detail::AutogradMetaDeleter::operator()(autograd::AutogradMeta* m) const noexcept { delete m; }

namespace autograd_hooks {

bool meta_requires_grad(const autograd::AutogradMeta& m) { return m.requires_grad(); }

}  // namespace autograd_hooks
}  // namespace tensor
