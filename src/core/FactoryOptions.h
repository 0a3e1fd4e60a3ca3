// Internal: the part of factory options applied after a tensor is made.
#pragma once

#include "tensor/core/Tensor.h"
#include "tensor/core/TensorOptions.h"

namespace tensor::detail {
/// Applies the requires_grad part of factory options to a freshly made tensor.
inline Tensor apply_factory_options(Tensor t, const TensorOptions& o) {
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}
}  // namespace tensor::detail
