// Internal: dispatcher table of sort and topk (argsort is sort's indices), so that wrapping
// layers (autograd) can fill their slots and backends can register kernels. CPU, CUDA and Meta
// slots: the front ends of src/ops/SortOps.cpp (Note [Front ends and backend kernels]), whose
// CPU kernel is in kernels/cpu/SortKernels.cpp.
#pragma once

#include <tuple>

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// sort: (input, dim, descending) -> (values, int64 indices). Always stable.
using SortFn = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool);
/// topk: (input, k, dim, largest, sorted) -> (values, int64 indices).
using TopkFn = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, int64_t, bool, bool);

/// Backend kernel of sort and topk: writes the first k of every slice of `a` along dim d, in
/// order (descending: largest first; stable), into values and indices, which have a's shape
/// with size k along d and are allocated by the front end (never empty). A 0-dim `a` is one
/// slice of one element; `op` names the op in a dtype error.
using SortKernel = void (*)(const char* op, const Tensor& a, int64_t d, int64_t k, bool descending,
                            const Tensor& values, const Tensor& indices);

struct SortOpDefs {
  dispatch::OpDef<SortFn> sort;
  dispatch::OpDef<TopkFn> topk;
};

/// The one table of sorting ops.
SortOpDefs& sort_ops();

/// Registers a backend's (CUDA's) kernel of sort and topk.
void register_kernel(DispatchKey backend, SortKernel kernel);

}  // namespace tensor::ops
