// Internal: the backend-neutral contract of the reduction, scan and softmax kernels: the op
// enum and what every backend's kernel must do (Note [Reduction kernel contracts]). The kernel
// typedefs are the dispatcher's (src/ops/ReduceOps.h); the CPU kernels are declared in
// kernels/cpu/Reduce.h, the CUDA ones in src/cuda/CUDAReduce.cpp. Includes nothing, so any
// backend's code (nvcc's included) can use it.
#pragma once

namespace tensor::kernels {

/// The reduction a ReduceKernel computes.
enum class ReduceOp : int { Sum, Prod, Max, Min, Any, All };

// Note [Reduction kernel contracts]
// The front ends in src/ops/ReduceOps.cpp check arguments, pick dtypes and allocate outputs;
// a backend's kernels only loop, and do this:
//
// ReduceKernel(op, in, mask, out): out = op over the dims of `in` whose bit is set in `mask`.
//   `out` has in's shape with the reduced dims removed, or kept with size 1 (keepdim), and any
//   strides. `in` may have any strides (expanded and transposed included) and must not be
//   empty. Output dtypes: Sum/Prod: in's dtype, int64 for bool/integer inputs, or float32 for
//   float16/bfloat16 inputs (accumulation happens in float either way); Max/Min: in's dtype
//   (not complex); Any/All: bool. Other combinations are the caller's to cast.
//
// ArgReduceKernel(is_max, in, dim, values, indices): the max (is_max) or min of `in` along
//   `dim` into `values` (in's dtype; may be undefined) and the position of its first occurrence
//   into `indices` (int64). NaN counts as larger and smaller than everything, so the first NaN
//   wins. Shapes as for ReduceKernel; `values` and `indices` share strides. `in.size(dim)` must
//   be at least 1.
//
// CumulativeKernel(is_prod, in, dim, out): inclusive running sum or product along `dim`. `in`
//   is contiguous with out's dtype and shape; `out` is contiguous.
//
// SoftmaxKernel(in, dim, log, out): softmax (or log_softmax) along `dim` of a contiguous
//   float32/float64 `in` into a contiguous `out` of the same dtype and shape.

}  // namespace tensor::kernels
