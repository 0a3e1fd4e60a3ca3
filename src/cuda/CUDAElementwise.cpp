// The CUDA kernels of the elementwise ops: read the front end's TensorIterator into a plain
// launch description, split it to fit 32-bit indexing, and call kernels/cuda's launchers.
#include <cuda_runtime_api.h>

#include <cstring>
#include <type_traits>

#include "kernels/cuda/ElementwiseLaunch.h"
#include "src/core/Check.h"
#include "src/core/DtypeVisit.h"
#include "src/core/TensorIterator.h"
#include "src/cuda/CUDARuntime.h"
#include "src/ops/ElementwiseOps.h"

namespace tensor::cuda_detail {

namespace {

using cpu::BinaryOp;
using cpu::UnaryOp;
using cuda_kernels::ElementwiseLaunch;
using cuda_kernels::LaunchStatus;
using cuda_kernels::ScalarArg;

ScalarArg scalar_arg(const Scalar& s) {
  ScalarArg a;
  if (s.is_integral(true)) {
    a.i = s.to<int64_t>();
    a.d = static_cast<double>(a.i);
  } else {
    a.d = s.to<double>();
    a.i = static_cast<int64_t>(a.d);
  }
  return a;
}

// The value of a CPU scalar operand (a 0-dim CPU tensor already in the compute dtype).
ScalarArg scalar_operand(const TensorIterator& iter, int op) {
  ScalarArg a;
  visit_dtype<kGroupReal>(iter.dtype(op), "CUDA elementwise (CPU scalar operand)", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, iter.data(op), sizeof(T));
    if constexpr (std::is_integral_v<T>) {
      a.i = static_cast<int64_t>(v);
      a.d = static_cast<double>(a.i);
    } else {
      a.d = static_cast<double>(static_cast<opmath_t<T>>(v));
    }
  });
  return a;
}

ElementwiseLaunch describe(const TensorIterator& iter) {
  TENSOR_INTERNAL_ASSERT(iter.ntensors() <= cuda_kernels::kMaxOperands && iter.ndim() <= cuda_kernels::kMaxDims);
  ElementwiseLaunch l;
  l.ntensors = iter.ntensors();
  l.ndim = iter.ndim();
  for (int d = 0; d < l.ndim; ++d) l.shape[d] = iter.shape()[d];
  for (int op = 0; op < l.ntensors; ++op) {
    l.data[op] = iter.data(op);
    for (int d = 0; d < l.ndim; ++d) l.strides[op][d] = iter.stride(op, d);
    if (iter.is_cpu_scalar(op)) {
      l.is_scalar[op] = true;
      l.scalar[op] = scalar_operand(iter, op);
      l.data[op] = nullptr;  // host memory: the kernel must never read it
    }
  }
  l.dtype = iter.ntensors() > 1 ? iter.dtype(1) : iter.dtype(0);
  l.out_dtype = iter.dtype(0);
  return l;
}

// Note [32-bit indexing]
// Kernels index with 32 bits (the offset calculator's divisions and byte offsets are uint32),
// which is faster on the GPU. A launch whose element count or an operand's byte span does not
// fit is split in two along its outermost dim, recursively, each half with its pointers moved.
bool fits_32bit(const ElementwiseLaunch& l) {
  if (l.numel() > INT32_MAX) return false;
  for (int op = 0; op < l.ntensors; ++op) {
    int64_t span = 0;
    for (int d = 0; d < l.ndim; ++d) span += (l.shape[d] - 1) * l.strides[op][d];
    if (span > int64_t(UINT32_MAX) - 16) return false;
  }
  return true;
}

template <class F>
void for_each_32bit(const ElementwiseLaunch& l, const F& run) {
  if (fits_32bit(l)) {
    run(l);
    return;
  }
  int outer = l.ndim - 1;  // the outermost dim with more than one element
  while (outer > 0 && l.shape[outer] == 1) --outer;
  const int64_t size = l.shape[outer];
  TENSOR_INTERNAL_ASSERT(size > 1);
  ElementwiseLaunch lo = l, hi = l;
  const int64_t half = size / 2;
  lo.shape[outer] = half;
  hi.shape[outer] = size - half;
  for (int op = 0; op < l.ntensors; ++op)
    if (!l.is_scalar[op]) hi.data[op] = l.data[op] + half * l.strides[op][outer];
  for_each_32bit(lo, run);
  for_each_32bit(hi, run);
}

template <class F>
void run_elementwise(const TensorIterator& iter, const char* name, const F& launcher) {
  if (iter.numel() == 0) return;
  const int device = iter.device().index();
  cuda::CUDAGuard guard(device);
  ElementwiseLaunch l = describe(iter);
  l.stream = current_stream(device);
  for_each_32bit(l, [&](const ElementwiseLaunch& part) {
    LaunchStatus st = launcher(part);
    if (st == cuda_kernels::kNoKernelForDtype)
      TENSOR_ERROR("{}: no CUDA kernel for dtype {} yet (shape {}); use .cpu()", name, l.dtype,
                   detail::shape_str(iter.shape()));
    if (st != 0) throw_cuda_error(name, static_cast<cudaError_t>(st));
  });
}

template <UnaryOp Op>
void unary_kernel(const TensorIterator& iter) {
  run_elementwise(iter, cpu::info(Op).name,
                  [](const ElementwiseLaunch& l) { return cuda_kernels::launch_unary(static_cast<int>(Op), l); });
}

template <BinaryOp Op>
void binary_kernel(const TensorIterator& iter, const Scalar& alpha) {
  const ScalarArg al = scalar_arg(alpha);
  run_elementwise(iter, cpu::info(Op).name, [&](const ElementwiseLaunch& l) {
    const int op = static_cast<int>(Op);
    return cuda_kernels::is_compare_op(op) ? cuda_kernels::launch_binary_compare(op, l)
                                           : cuda_kernels::launch_binary_arith(op, l, al);
  });
}

}  // namespace

void register_elementwise_kernels() {
#define TENSOR_REG_UNARY(Enum, name, dtypes, result, api) \
  ops::register_kernel(DispatchKey::CUDA, UnaryOp::Enum, &unary_kernel<UnaryOp::Enum>);
#define TENSOR_REG_BINARY(Enum, name, dtypes, result, api) \
  ops::register_kernel(DispatchKey::CUDA, BinaryOp::Enum, &binary_kernel<BinaryOp::Enum>);
  TENSOR_UNARY_OPS(TENSOR_REG_UNARY)
  TENSOR_BINARY_OPS(TENSOR_REG_BINARY)
#undef TENSOR_REG_UNARY
#undef TENSOR_REG_BINARY
}

}  // namespace tensor::cuda_detail
