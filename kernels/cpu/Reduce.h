// Internal: CPU reduction, scan and softmax kernels (Note [Reduction kernels]). The front ends
// in src/ops/ReduceOps.cpp check arguments, pick dtypes and allocate outputs; these only loop.
#pragma once

#include <cstdint>

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

enum class ReduceOp : int { Sum, Prod, Max, Min, Any, All };

/// out = op over the dims of `in` whose bit is set in `mask`. `out` has in's shape with the
/// reduced dims removed, or kept with size 1 (keepdim), and any strides. `in` may have any
/// strides (expanded and transposed included) and must not be empty. Output dtypes:
/// Sum/Prod: in's dtype, int64 for bool/integer inputs, or float32 for float16/bfloat16
/// inputs (accumulation happens in float either way); Max/Min: in's dtype (not complex);
/// Any/All: bool. Other combinations are the caller's to cast.
void reduce_kernel(ReduceOp op, const Tensor& in, uint64_t mask, const Tensor& out);

/// The max (is_max) or min of `in` along `dim` into `values` (in's dtype; may be undefined)
/// and the position of its first occurrence into `indices` (int64). NaN counts as larger and
/// smaller than everything, so the first NaN wins. Shapes as for reduce_kernel; `values`
/// and `indices` share strides. `in.size(dim)` must be at least 1.
void arg_reduce_kernel(bool is_max, const Tensor& in, int64_t dim, const Tensor& values, const Tensor& indices);

/// Inclusive running sum or product along `dim`. `in` is contiguous with out's dtype and shape;
/// `out` is contiguous.
void cumulative_kernel(bool is_prod, const Tensor& in, int64_t dim, const Tensor& out);

/// softmax (or log_softmax) along `dim` of a contiguous float32/float64 `in` into a contiguous
/// `out` of the same dtype and shape.
void softmax_kernel(const Tensor& in, int64_t dim, bool log, const Tensor& out);

}  // namespace tensor::cpu
