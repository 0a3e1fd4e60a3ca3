// Internal: dispatcher tables of the factories (src/ops/FactoryOps.cpp), so that wrapping
// layers (the profiler) see them like any other op.
#pragma once

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

}  // namespace tensor::ops
