// Internal: dispatcher tables of the elementwise ops, so that wrapping layers (autograd,
// profiler, autocast) can fill their slots and backends can register kernels.
#pragma once

#include "kernels/OpList.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

using kernels::BinaryOp;
using kernels::UnaryOp;

using BinaryFn = Tensor(const Tensor&, const Tensor&, const Scalar&);
using BinaryInplaceFn = Tensor&(Tensor&, const Tensor&, const Scalar&);
using BinaryOutFn = Tensor&(Tensor&, const Tensor&, const Tensor&, const Scalar&);
using UnaryFn = Tensor(const Tensor&);
using UnaryInplaceFn = Tensor&(Tensor&);
using UnaryOutFn = Tensor&(Tensor&, const Tensor&);

constexpr int kNumBinaryOps = oplist::kNumBinary;
constexpr int kNumUnaryOps = oplist::kNumUnary;

/// One elementwise op's three entry points (functional, in-place, out=).
struct BinaryOpDefs {
  dispatch::OpDef<BinaryFn> functional;
  dispatch::OpDef<BinaryInplaceFn> inplace;
  dispatch::OpDef<BinaryOutFn> out;
};
struct UnaryOpDefs {
  dispatch::OpDef<UnaryFn> functional;
  dispatch::OpDef<UnaryInplaceFn> inplace;
  dispatch::OpDef<UnaryOutFn> out;
};

BinaryOpDefs& binary_op(BinaryOp op);
UnaryOpDefs& unary_op(UnaryOp op);
/// Public name of an op ("add", "exp", ...).
inline const char* binary_name(BinaryOp op) { return info(op).name; }
inline const char* unary_name(UnaryOp op) { return info(op).name; }

/// Registers a backend's kernel for one op (Note [Front ends and backend kernels]): the op's
/// backend slots then run the shared front end and this kernel. `backend` is CUDA; the CPU
/// kernels are built in (kernels/cpu).
TENSOR_API void register_kernel(DispatchKey backend, UnaryOp op, UnaryKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, BinaryOp op, BinaryKernel kernel);

using WhereFn = Tensor(const Tensor&, const Tensor&, const Tensor&);
using ClampFn = Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&);
/// clamp_out(out, a, lo, hi), out possibly undefined (then allocated); also Tensor::clamp_'s
/// path when not recording (out = a = self).
using ClampOutFn = Tensor&(Tensor&, const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&);
dispatch::OpDef<WhereFn>& where_op();
dispatch::OpDef<ClampFn>& clamp_op();
/// No Autograd kernel: out= is not differentiable (its front end says so).
dispatch::OpDef<ClampOutFn>& clamp_out_op();
using ClampInplaceFn = Tensor&(Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&);
/// clamp_: clamp_out's front end with out = self; recorded as clamp of a clone copied back.
dispatch::OpDef<ClampInplaceFn>& clamp_inplace_op();

/// Backend kernels of where and clamp over the front end's TensorIterator (operands: out, then
/// cond, a, b for where, cond kept bool; out, a for clamp, in the common dtype, with the bounds
/// given or null).
using WhereKernel = void (*)(const TensorIterator& iter);
using ClampKernel = void (*)(const TensorIterator& iter, const Scalar* lo, const Scalar* hi);
/// Registers a backend's (CUDA's) kernel of where, or of clamp and clamp_out.
TENSOR_API void register_kernel(DispatchKey backend, WhereKernel kernel);
TENSOR_API void register_kernel(DispatchKey backend, ClampKernel kernel);

/// libtorch's threshold_backward: self <= threshold ? 0 : grad, in one pass (floating dtypes;
/// not recorded by autograd). ReluBackward0 uses it when no graph is being built. Dispatched:
/// CPU's kernel is built in, CUDA's registered, Meta runs the front end alone.
Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold);

using ThresholdBackwardFn = Tensor(const Tensor&, const Tensor&, const Scalar&);
/// threshold_backward's dispatcher table (no Autograd kernel: it is itself a backward formula).
TENSOR_API dispatch::OpDef<ThresholdBackwardFn>& threshold_backward_op();
/// Backend kernel of threshold_backward over the front end's TensorIterator (operands: out,
/// grad, self, all of one floating dtype).
using ThresholdBackwardKernel = void (*)(const TensorIterator& iter, const Scalar& threshold);
/// Registers a backend's (CUDA's) kernel of threshold_backward.
TENSOR_API void register_kernel(DispatchKey backend, ThresholdBackwardKernel kernel);

}  // namespace tensor::ops
