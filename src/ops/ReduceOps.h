// Internal: dispatcher tables of the reductions, scans and softmax, so that wrapping layers
// (autograd, profiler, CUDA) can fill their slots. The CPU and Meta slots hold the front ends
// of src/ops/ReduceOps.cpp; mean, var, std, norm and logsumexp are composites of public ops.
#pragma once

#include <optional>
#include <tuple>

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// sum, mean: (input, dims (empty = all), keepdim, dtype).
using ReduceDtypeFn = Tensor(const Tensor&, IntArrayRef, bool, std::optional<ScalarType>);
/// prod: (input, dim (none = all), keepdim, dtype).
using ReduceOneDtypeFn = Tensor(const Tensor&, std::optional<int64_t>, bool, std::optional<ScalarType>);
/// max(), min(): over all elements, 0-dim result.
using ReduceAllFn = Tensor(const Tensor&);
/// max(dim), min(dim): (values, int64 indices).
using ReduceIndexFn = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool);
/// amax, amin, logsumexp: (input, dims (empty = all), keepdim).
using ReduceDimsFn = Tensor(const Tensor&, IntArrayRef, bool);
/// argmax, argmin, any, all: (input, dim (none = all), keepdim).
using ReduceOptDimFn = Tensor(const Tensor&, std::optional<int64_t>, bool);
/// var, std: (input, dims (empty = all), correction, keepdim).
using VarFn = Tensor(const Tensor&, IntArrayRef, int64_t, bool);
/// norm: (input, p, dims (empty = all), keepdim).
using NormFn = Tensor(const Tensor&, const Scalar&, IntArrayRef, bool);
/// cumsum, cumprod, softmax, log_softmax: (input, dim, dtype).
using ScanFn = Tensor(const Tensor&, int64_t, std::optional<ScalarType>);

struct ReduceOpDefs {
  dispatch::OpDef<ReduceDtypeFn> sum, mean;
  dispatch::OpDef<ReduceOneDtypeFn> prod;
  dispatch::OpDef<ReduceAllFn> max_all, min_all;
  dispatch::OpDef<ReduceIndexFn> max_dim, min_dim;
  dispatch::OpDef<ReduceDimsFn> amax, amin, logsumexp;
  dispatch::OpDef<ReduceOptDimFn> argmax, argmin, any, all;
  dispatch::OpDef<VarFn> var, std_dev;
  dispatch::OpDef<NormFn> norm;
  dispatch::OpDef<ScanFn> cumsum, cumprod, softmax, log_softmax;
};

/// The one table of reduction ops.
ReduceOpDefs& reduce_ops();

}  // namespace tensor::ops
