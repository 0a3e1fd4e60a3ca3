// Internal to the CUDA backend: how host code turns a built TensorIterator into launches of the
// elementwise engine (kernels/cuda/ElementwiseLaunch.h). Shared by CUDAElementwise.cpp and the
// ops that reuse the engine (masked_fill in CUDAIndex.cpp).
#pragma once

#include "kernels/cuda/ElementwiseLaunch.h"
#include "src/core/Check.h"
#include "src/core/TensorIterator.h"
#include "src/cuda/CUDARuntime.h"

namespace tensor::cuda_detail {

/// A Scalar (alpha, a bound) as a kernel argument: exact in `i` for integers, in `d` for floats.
cuda_kernels::ScalarArg scalar_arg(const Scalar& s);

/// The launch description of a built iterator: pointers, shape, byte strides, and the values of
/// CPU scalar operands (their data pointer nulled). dtype is operand 1's (the compute dtype).
cuda_kernels::ElementwiseLaunch describe(const TensorIterator& iter);

/// True when launch `l` fits 32-bit indexing (Note [32-bit indexing]).
bool fits_32bit(const cuda_kernels::ElementwiseLaunch& l);

/// Calls run(part) for launch `l`, split along its outermost dims until each part fits 32-bit
/// indexing (Note [32-bit indexing] in CUDAElementwise.cpp).
template <class F>
void for_each_32bit(const cuda_kernels::ElementwiseLaunch& l, const F& run) {
  if (fits_32bit(l)) {
    run(l);
    return;
  }
  int outer = l.ndim - 1;  // the outermost dim with more than one element
  while (outer > 0 && l.shape[outer] == 1) --outer;
  const int64_t size = l.shape[outer];
  TENSOR_INTERNAL_ASSERT(size > 1);
  cuda_kernels::ElementwiseLaunch lo = l, hi = l;
  const int64_t half = size / 2;
  lo.shape[outer] = half;
  hi.shape[outer] = size - half;
  for (int op = 0; op < l.ntensors; ++op)
    if (!l.is_scalar[op]) hi.data[op] = l.data[op] + half * l.strides[op][outer];
  for_each_32bit(lo, run);
  for_each_32bit(hi, run);
}

/// Raises the error of a failed launch: kNoKernelForDtype names the op, the dtype and the shape.
[[noreturn]] void throw_launch_error(const char* name, cuda_kernels::LaunchStatus st, ScalarType dtype,
                                     IntArrayRef shape);

/// Runs launcher(part) over the iterator's launch description on the current stream of its
/// device, in 32-bit parts; `adjust` may edit the description first (where's dtype).
template <class F, class Adjust>
void run_elementwise(const TensorIterator& iter, const char* name, const F& launcher, const Adjust& adjust) {
  if (iter.numel() == 0) return;
  const int device = iter.device().index();
  cuda::CUDAGuard guard(device);
  cuda_kernels::ElementwiseLaunch l = describe(iter);
  adjust(l);
  l.stream = current_stream(device);
  for_each_32bit(l, [&](const cuda_kernels::ElementwiseLaunch& part) {
    const cuda_kernels::LaunchStatus st = launcher(part);
    if (st != 0) throw_launch_error(name, st, l.dtype, iter.shape());
  });
}
template <class F>
void run_elementwise(const TensorIterator& iter, const char* name, const F& launcher) {
  run_elementwise(iter, name, launcher, [](cuda_kernels::ElementwiseLaunch&) {});
}

}  // namespace tensor::cuda_detail
