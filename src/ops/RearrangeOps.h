// Internal: dispatcher tables of the rearranging ops (tril, triu and their in-place forms,
// flip, repeat, roll), so that wrapping layers (autograd, profiler, autocast) can fill their
// slots and backends can register kernels (Note [Front ends and backend kernels]).
#pragma once

#include <cstdint>

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

using TriangleFn = Tensor(const Tensor&, int64_t);
using TriangleInplaceFn = Tensor&(Tensor&, int64_t);
using FlipFn = Tensor(const Tensor&, IntArrayRef);
using RepeatFn = Tensor(const Tensor&, IntArrayRef);
using RollFn = Tensor(const Tensor&, IntArrayRef, IntArrayRef);

/// Backend kernel of tril/triu (lower: tril): with `out` defined (contiguous, self's shape),
/// out = self's kept triangle and zeros; with `out` undefined, zero self's dropped triangle in
/// place. self is not conjugated lazily (the front end resolves it).
using TriangleKernel = void (*)(const Tensor& self, const Tensor& out, int64_t diagonal, bool lower);
/// Backend kernel of flip: out (contiguous, self's shape) = self with every dim d whose bit
/// (1 << d) is set in `dims` reversed.
using FlipKernel = void (*)(const Tensor& self, uint64_t dims, const Tensor& out);

struct RearrangeOpDefs {
  // Front ends over the backend kernels above.
  dispatch::OpDef<TriangleFn> tril, triu;
  dispatch::OpDef<TriangleInplaceFn> tril_, triu_;
  dispatch::OpDef<FlipFn> flip;
  // Composites of dispatched ops (Note [Rearranging ops by composition]): the same function in
  // every backend slot, no Autograd kernel (their pieces record).
  dispatch::OpDef<RepeatFn> repeat;
  dispatch::OpDef<RollFn> roll;
};

/// The one table of rearranging ops.
RearrangeOpDefs& rearrange_ops();

/// Registers a backend's (CUDA's) kernel: tril, triu, tril_ and triu_ share TriangleKernel.
TENSOR_API void register_kernel(DispatchKey backend, TriangleKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, FlipKernel kernel);

}  // namespace tensor::ops
