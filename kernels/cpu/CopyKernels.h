// Internal: CPU kernels of copy_ and fill_ (src/ops/CopyOps.cpp is their front end).
#pragma once

#include "tensor/core/Scalar.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// dst = src converted to dst's dtype and broadcast to dst's shape; a conj view of src reads as
/// its conjugate. Chooses a memcpy, a blocked transpose (Note [Blocked transpose copy]) or the
/// TensorIterator loop.
void copy(const Tensor& dst, const Tensor& src, bool non_blocking);
/// Every element of self = value.
void fill(const Tensor& self, const Scalar& value);

}  // namespace tensor::cpu
