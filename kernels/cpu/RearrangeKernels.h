// Internal: the CPU loops of tril/triu and flip (kernels/cpu/RearrangeKernels.cpp); their
// signatures are the backend kernels' of src/ops/RearrangeOps.h.
#pragma once

#include <cstdint>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// tril (lower) or triu of the last two dims of src (Note [tril/triu row kernel]).
/// out undefined: zero src's dropped elements in place; else write the result to out, a
/// contiguous tensor of src's shape and dtype.
void tril_triu(const Tensor& src, const Tensor& out, int64_t diagonal, bool lower);

/// out (contiguous, src's sizes, allocated by the caller) = src with every dim d whose bit
/// (1 << d) is set in `flipped` reversed.
void flip(const Tensor& src, uint64_t flipped, const Tensor& out);

}  // namespace tensor::cpu
