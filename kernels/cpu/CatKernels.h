// Internal: the CPU copy behind cat and stack (kernels/cpu/CatKernels.cpp).
#pragma once

#include <cstdint>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// Copies `src` into the [offset, offset + src.size(dim)) slab of the contiguous `out` along dim:
/// raw runs when src is contiguous, of out's dtype and not conjugated, else through copy_.
void cat_copy_slab(const Tensor& out, const Tensor& src, int64_t dim, int64_t offset);

/// Fills the contiguous `out` with the cat of `tensors` along dim > 0 in one parallel pass over
/// out's rows (Note [Cat by output rows]) and returns true, when every non-empty input is made
/// of contiguous rows (a contiguous tensor or a narrow view of one), of out's dtype and not
/// conjugated; else returns false having written nothing.
/// Legacy empty inputs (Note [Legacy empty tensors in cat]) must be left out by the caller.
bool cat_rows(const Tensor& out, TensorList tensors, int64_t dim);

}  // namespace tensor::cpu
