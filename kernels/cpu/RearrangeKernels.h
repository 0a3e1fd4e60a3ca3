// Internal: the CPU loops of tril/triu and flip (kernels/cpu/RearrangeKernels.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// tril (lower) or triu of the last two dims of src (Note [tril/triu row kernel]).
/// dst == nullptr: zero src's dropped elements in place; else write the result to dst, a
/// contiguous buffer of src's shape.
void tril_triu(const Tensor& src, char* dst, int64_t diagonal, bool lower);

/// out (contiguous, src's sizes, allocated by the caller) = src with the dims marked in
/// `flipped` reversed.
void flip(const Tensor& src, const std::vector<bool>& flipped, const Tensor& out);

}  // namespace tensor::cpu
