// Internal: the CPU loops of sort and topk (kernels/cpu/SortKernels.cpp).
#pragma once

#include <cstdint>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// Writes the first k of every slice of `a` along dim d, in slice order (Note [Sort order and
/// NaN] in kernels/cpu/SortKernels.cpp), into values and indices: a's shape with size k along d,
/// allocated by the caller. A 0-dim `a` is one slice of one element. Real dtypes and bool;
/// `op` names the op in the dtype error.
void sort_select(const char* op, const Tensor& a, int64_t d, int64_t k, bool descending, const Tensor& values,
                 const Tensor& indices);

}  // namespace tensor::cpu
