// Internal: dispatcher tables of the factories (src/ops/FactoryOps.cpp), so that wrapping
// layers (the profiler) see them like any other op.
#pragma once

#include <cstdint>

#include "kernels/Factory.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

using EmptyFn = Tensor(IntArrayRef, const TensorOptions&);
using EmptyStridedFn = Tensor(IntArrayRef, IntArrayRef, const TensorOptions&);
using FullFn = Tensor(IntArrayRef, const Scalar&, const TensorOptions&);
using ScalarTensorFn = Tensor(const Scalar&, const TensorOptions&);
using ArangeFn = Tensor(const Scalar&, const Scalar&, const Scalar&, const TensorOptions&);
using LinspaceFn = Tensor(const Scalar&, const Scalar&, int64_t, const TensorOptions&);
using EyeFn = Tensor(int64_t, int64_t, const TensorOptions&);
using RandFn = Tensor(IntArrayRef, const TensorOptions&);
using RandintFn = Tensor(int64_t, int64_t, IntArrayRef, const TensorOptions&);
using RandpermFn = Tensor(int64_t, const TensorOptions&);

struct FactoryOpDefs {
  dispatch::OpDef<EmptyFn> empty;
  dispatch::OpDef<EmptyStridedFn> empty_strided;
  dispatch::OpDef<FullFn> full;
  dispatch::OpDef<ScalarTensorFn> scalar_tensor;
  dispatch::OpDef<ArangeFn> arange;
  dispatch::OpDef<LinspaceFn> linspace;
  dispatch::OpDef<EyeFn> eye;
  dispatch::OpDef<RandFn> rand, randn;
  dispatch::OpDef<RandintFn> randint;
  dispatch::OpDef<RandpermFn> randperm;
};

/// The one table of the factories (exported for tests, as copy_ops).
TENSOR_API FactoryOpDefs& factory_ops();

// Note [Factory kernels]
// rand, randn, randint, randperm, arange and linspace have one front end for every backend (checks, the
// count, the dtype rules, the allocation on the options' device, the generator's reservation,
// apply_factory_options) and a per-backend kernel that only fills the fresh contiguous output,
// so no backend computes on the host and copies. The generator stays in libtensor: a kernel
// gets the Philox key and its first counter (Note [Random factory streams] in
// kernels/cuda/RandomBody.h), so a seed gives the same numbers on every backend and the
// offset advances by the same count.

/// Fills contiguous `out` (a floating dtype) with rand's uniforms (normal = false) or randn's
/// normals: pair i from Philox counter base + i under key seed.
using RandomKernel = void (*)(const Tensor& out, uint64_t seed, uint64_t base, bool normal);
/// Fills contiguous `out` (any dtype the backend supports) with randint's values in
/// [low, low + range): element i from counter base + i.
using RandintKernel = void (*)(const Tensor& out, uint64_t seed, uint64_t base, int64_t low, uint64_t range);
/// Fills contiguous `out` with arange's values (kernels::ArangeParams).
using ArangeKernel = void (*)(const Tensor& out, const kernels::ArangeParams& p);
/// Fills contiguous `out` with linspace's values (kernels::LinspaceParams).
using LinspaceKernel = void (*)(const Tensor& out, const kernels::LinspaceParams& p);
/// randperm's sort: writes to contiguous int64 `out` the indices that order contiguous int64
/// `keys` (values in [0, 2^62)) ascending, equal keys in index order (a stable argsort), so
/// every backend gives the same permutation for the same keys (Note [randperm by sorted keys]).
using RandpermKernel = void (*)(const Tensor& keys, const Tensor& out);

/// Registers a backend's (CUDA's) fill for rand/randn, randint, arange, linspace or randperm; until
/// then that backend's slot of the op raises "no kernel". CPU's are built in.
TENSOR_API void register_kernel(DispatchKey backend, RandomKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, RandintKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, ArangeKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, LinspaceKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, RandpermKernel kernel);

}  // namespace tensor::ops
