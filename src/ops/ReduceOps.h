// Internal: dispatcher tables of the reductions, scans and softmax, so that wrapping layers
// (autograd, profiler, autocast) can fill their slots and backends can register kernels
// (Note [Front ends and backend kernels]). The backend slots hold the front ends of
// src/ops/ReduceOps.cpp, one instance per key; var, std, norm and logsumexp are composites of
// public ops and serve every backend key.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "kernels/Reduce.h"
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

// ---- backend kernels (what each must do: Note [Reduction kernel contracts] in kernels/Reduce.h) ----
using kernels::ReduceOp;
using ReduceKernel = void (*)(ReduceOp op, const Tensor& in, uint64_t mask, const Tensor& out);
using ArgReduceKernel = void (*)(bool is_max, const Tensor& in, int64_t dim, const Tensor& values, const Tensor& indices);
using CumulativeKernel = void (*)(bool is_prod, const Tensor& in, int64_t dim, const Tensor& out);
using SoftmaxKernel = void (*)(const Tensor& in, int64_t dim, bool log, const Tensor& out);

/// Registers a backend's (CUDA's) kernel; the ops that use it then route that backend's key
/// to their front end and this kernel.
///   ReduceKernel      sum, mean, prod, max(), min(), amax, amin, any, all
///   ArgReduceKernel   max(dim), min(dim), argmax, argmin
///   CumulativeKernel  cumsum, cumprod
///   SoftmaxKernel     softmax, log_softmax
TENSOR_API void register_kernel(DispatchKey backend, ReduceKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, ArgReduceKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, CumulativeKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, SoftmaxKernel kernel);

}  // namespace tensor::ops
