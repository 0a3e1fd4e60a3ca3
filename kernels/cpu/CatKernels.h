// Internal: the CPU copy behind cat and stack (kernels/cpu/CatKernels.cpp).
#pragma once

#include <cstdint>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// Copies `src` into the [offset, offset + src.size(dim)) slab of the contiguous `out` along dim:
/// raw runs when src is contiguous, of out's dtype and not conjugated, else through copy_.
void cat_copy_slab(const Tensor& out, const Tensor& src, int64_t dim, int64_t offset);

}  // namespace tensor::cpu
