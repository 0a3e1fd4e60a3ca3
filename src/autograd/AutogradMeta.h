// Internal: the autograd state hung off a TensorImpl. The autograd engine (issue 3) grows
// this into grad, grad_fn, hooks and retain_grad; the core only needs requires_grad.
#pragma once

#include <memory>

#include "src/core/Check.h"

namespace tensor::autograd {

struct AutogradMeta {
  bool requires_grad_ = false;
  bool requires_grad() const { return requires_grad_; }
};

}  // namespace tensor::autograd

namespace tensor::detail {
/// Applies the requires_grad part of factory options to a freshly made tensor.
inline Tensor apply_factory_options(Tensor t, const TensorOptions& o) {
  if (o.requires_grad()) {
    TENSOR_CHECK(is_floating_point(t.dtype()) || is_complex(t.dtype()),
                 "requires_grad: only floating point and complex tensors can require gradients, got {}", t.dtype());
    auto m = std::make_unique<autograd::AutogradMeta>();
    m->requires_grad_ = true;
    t.unsafeGetTensorImpl()->set_autograd_meta(std::move(m));
  }
  return t;
}
}  // namespace tensor::detail
