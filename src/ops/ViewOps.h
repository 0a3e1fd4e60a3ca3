// Internal: dispatcher table of the view ops (Note [Views through the dispatcher] in
// src/ops/ViewOps.cpp), so that wrapping layers (autograd, profiler, autocast) see every view.
#pragma once

#include <cstdint>
#include <optional>

#include "src/dispatch/Dispatcher.h"
#include "tensor/export.h"

namespace tensor::ops {

using ViewFn = Tensor(const Tensor&, IntArrayRef);                     // view, reshape, permute, expand
using DimPairFn = Tensor(const Tensor&, int64_t, int64_t);             // transpose, select, flatten
using DimFn = Tensor(const Tensor&, int64_t);                          // squeeze(dim), unsqueeze
using UnaryViewFn = Tensor(const Tensor&);                             // t, squeeze, detach, conj, real, imag
using SliceFn = Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>, int64_t);
using NarrowFn = Tensor(const Tensor&, int64_t, int64_t, int64_t);     // narrow, unfold, diagonal
using UnflattenFn = Tensor(const Tensor&, int64_t, IntArrayRef);
using AsStridedFn = Tensor(const Tensor&, IntArrayRef, IntArrayRef, std::optional<int64_t>);

struct ViewOpDefs {
  // Views: the geometry in every backend slot (dispatch::view_def); the Autograd slot, filled by
  // src/autograd/nodes/Views.cpp, records the view node and redispatches below itself.
  dispatch::OpDef<ViewFn> view, permute, expand;
  dispatch::OpDef<DimPairFn> transpose, select;
  dispatch::OpDef<UnaryViewFn> t, squeeze, conj, real, imag;
  dispatch::OpDef<DimFn> squeeze_dim, unsqueeze;
  dispatch::OpDef<SliceFn> slice;
  dispatch::OpDef<NarrowFn> unfold, diagonal;
  dispatch::OpDef<AsStridedFn> as_strided;
  // An alias without history: the geometry alone, no Autograd kernel (nothing to record).
  dispatch::OpDef<UnaryViewFn> detach;
  // Composites of the views above (dispatch::composite_def): no Autograd kernel, their pieces
  // record (reshape is view, or contiguous then view, as in libtorch).
  dispatch::OpDef<ViewFn> reshape;
  dispatch::OpDef<NarrowFn> narrow;
  dispatch::OpDef<DimPairFn> flatten;
  dispatch::OpDef<UnflattenFn> unflatten;
};

/// The one table of view ops. Exported for tests/test_view_dispatch.cpp, which swaps slots to
/// see that each public view goes through it.
TENSOR_API ViewOpDefs& view_ops();

/// slice's start after wrapping a negative one and clamping to [0, size] (the Autograd kernel
/// records it; the geometry uses the same rule).
int64_t slice_start(std::optional<int64_t> start, int64_t size);

}  // namespace tensor::ops
