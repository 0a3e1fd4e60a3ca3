// Internal: dispatcher tables of the elementwise ops, so that wrapping layers (autograd,
// profiler, CUDA) can fill their slots.
#pragma once

#include "kernels/cpu/Elementwise.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

using BinaryFn = Tensor(const Tensor&, const Tensor&, const Scalar&);
using BinaryInplaceFn = Tensor&(Tensor&, const Tensor&, const Scalar&);
using BinaryOutFn = Tensor&(Tensor&, const Tensor&, const Tensor&, const Scalar&);
using UnaryFn = Tensor(const Tensor&);
using UnaryInplaceFn = Tensor&(Tensor&);
using UnaryOutFn = Tensor&(Tensor&, const Tensor&);

constexpr int kNumBinaryOps = static_cast<int>(cpu::BinaryOp::BitXor) + 1;
constexpr int kNumUnaryOps = static_cast<int>(cpu::UnaryOp::Conj) + 1;

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

using WhereFn = Tensor(const Tensor&, const Tensor&, const Tensor&);
using ClampFn = Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&);
dispatch::OpDef<WhereFn>& where_op();
dispatch::OpDef<ClampFn>& clamp_op();

/// libtorch's threshold_backward: self <= threshold ? 0 : grad, in one pass (CPU, floating
/// dtypes; not recorded by autograd). ReluBackward0 uses it when no graph is being built.
Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold);

BinaryOpDefs& binary_op(cpu::BinaryOp op);
UnaryOpDefs& unary_op(cpu::UnaryOp op);
/// Public name of an op ("add", "exp", ...).
const char* binary_name(cpu::BinaryOp op);
const char* unary_name(cpu::UnaryOp op);

}  // namespace tensor::ops
