// Internal: dispatcher tables of the public ops that are composites of other public ops
// (matmul, dot, outer, einsum, argsort, the convolutions by dimension), as libtorch's
// CompositeImplicitAutograd ops: the same function in every backend slot, no Autograd kernel
// (their pieces record), and a table so that wrapping layers (the profiler) see the call.
#pragma once

#include <optional>
#include <string>

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

using MatmulFn = Tensor(const Tensor&, const Tensor&);
using ArgsortFn = Tensor(const Tensor&, int64_t, bool);
using EinsumFn = Tensor(const std::string&, TensorList);
using ConvNdFn = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef, IntArrayRef,
                        IntArrayRef, int64_t);
using ConvTransposeNdFn = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef, IntArrayRef,
                                 IntArrayRef, int64_t, IntArrayRef);

dispatch::OpDef<MatmulFn>& dot_op();
dispatch::OpDef<MatmulFn>& outer_op();
dispatch::OpDef<MatmulFn>& matmul_op();
dispatch::OpDef<ArgsortFn>& argsort_op();
dispatch::OpDef<EinsumFn>& einsum_op();
dispatch::OpDef<ConvNdFn>& conv1d_op();
dispatch::OpDef<ConvNdFn>& conv2d_op();
dispatch::OpDef<ConvNdFn>& conv3d_op();
dispatch::OpDef<ConvTransposeNdFn>& conv_transpose1d_op();
dispatch::OpDef<ConvTransposeNdFn>& conv_transpose2d_op();
dispatch::OpDef<ConvTransposeNdFn>& conv_transpose3d_op();

/// Defines ops::name_op(), the table of a composite public op: fn in every backend slot.
#define TENSOR_COMPOSITE_OP(name, Fn, fn)                                                         \
  ::tensor::dispatch::OpDef<Fn>& name##_op() {                                                    \
    static ::tensor::dispatch::OpDef<Fn> def = ::tensor::dispatch::composite_def<Fn>(#name, &fn); \
    return def;                                                                                   \
  }

}  // namespace tensor::ops
