// Internal: dispatcher table of sort and topk (argsort is sort's indices), so that wrapping
// layers (autograd) can fill their slots. CPU and Meta slots: src/ops/SortOps.cpp, whose CPU
// loops are in kernels/cpu/SortKernels.cpp.
#pragma once

#include <tuple>

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// sort: (input, dim, descending) -> (values, int64 indices). Always stable.
using SortFn = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool);
/// topk: (input, k, dim, largest, sorted) -> (values, int64 indices).
using TopkFn = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, int64_t, bool, bool);

struct SortOpDefs {
  dispatch::OpDef<SortFn> sort;
  dispatch::OpDef<TopkFn> topk;
};

/// The one table of sorting ops.
SortOpDefs& sort_ops();

}  // namespace tensor::ops
