// The CUDA kernels of the elementwise ops: read the front end's TensorIterator into a plain
// launch description, split it to fit 32-bit indexing, and call kernels/cuda's launchers.
#include "src/cuda/CUDAElementwise.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <type_traits>

#include "kernels/cuda/SelectLaunch.h"
#include "src/core/DtypeVisit.h"
#include "src/ops/ElementwiseOps.h"

namespace tensor::cuda_detail {

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

namespace {
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
}  // namespace

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
// fit is split in two along its outermost dim, recursively, each half with its pointers moved
// (for_each_32bit in src/cuda/CUDAElementwise.h).
bool fits_32bit(const ElementwiseLaunch& l) {
  if (l.numel() > INT32_MAX) return false;
  for (int op = 0; op < l.ntensors; ++op) {
    int64_t span = 0;
    for (int d = 0; d < l.ndim; ++d) span += (l.shape[d] - 1) * l.strides[op][d];
    if (span > int64_t(UINT32_MAX) - 16) return false;
  }
  return true;
}

void throw_launch_error(const char* name, LaunchStatus st, ScalarType dtype, IntArrayRef shape) {
  if (st == cuda_kernels::kNoKernelForDtype)
    TENSOR_ERROR("{}: no CUDA kernel for dtype {} yet (shape {}); use .cpu()", name, dtype, detail::shape_str(shape));
  throw_cuda_error(name, static_cast<cudaError_t>(st));
}

namespace {

using cpu::BinaryOp;
using cpu::UnaryOp;

// Note [Complex conj_physical on CUDA]
// CUDA has no complex elementwise kernels yet (docs/cuda.md), but resolve_conj of a complex
// tensor (conj_physical) needs none: over the same shape and byte strides, the output's real
// parts are a copy of the input's and its imaginary parts (8 or 4 bytes further) their negation,
// two launches of the real copy and neg kernels in the complex tensors' part dtype.
void complex_conj_kernel(const TensorIterator& iter) {
  const ScalarType part = iter.dtype(1) == ScalarType::ComplexFloat ? ScalarType::Float : ScalarType::Double;
  const int64_t part_bytes = part == ScalarType::Float ? 4 : 8;
  run_elementwise(iter, "conj_physical", [&](const ElementwiseLaunch& l) {
    if (l.is_scalar[1]) return cuda_kernels::kNoKernelForDtype;  // a device op's input is on the device
    ElementwiseLaunch re = l;
    re.dtype = re.out_dtype = part;
    const LaunchStatus st = cuda_kernels::launch_copy(re);
    if (st != 0) return st;
    ElementwiseLaunch im = re;
    im.data[0] += part_bytes;
    im.data[1] += part_bytes;
    return cuda_kernels::launch_unary(static_cast<int>(UnaryOp::Neg), im);
  });
}

template <UnaryOp Op>
void unary_kernel(const TensorIterator& iter) {
  if constexpr (Op == UnaryOp::Conj) {
    if (is_complex(iter.dtype(1)) && iter.dtype(0) == iter.dtype(1)) return complex_conj_kernel(iter);
  }
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

// where: operands out, cond (bool, not cast), a, b; the launch's dtype is the values' (a's).
void where_kernel(const TensorIterator& iter) {
  run_elementwise(
      iter, "where", [](const ElementwiseLaunch& l) { return cuda_kernels::launch_where(l); },
      [&](ElementwiseLaunch& l) { l.dtype = iter.dtype(0); });
}

// clamp: the bounds are checked against the dtype on the host, as the CPU kernel checks them
// (an int8 tensor cannot be clamped to 1000), then passed in the dtype's opmath type.
void clamp_kernel(const TensorIterator& iter, const Scalar* lo, const Scalar* hi) {
  ScalarArg lo_arg, hi_arg;
  visit_dtype<kGroupInt | kGroupFloating>(iter.dtype(0), "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OT = opmath_t<T>;
    auto arg = [](OT v) {
      ScalarArg a;
      if constexpr (std::is_integral_v<OT>) {
        a.i = static_cast<int64_t>(v);
        a.d = static_cast<double>(v);
      } else {
        a.d = static_cast<double>(v);
      }
      return a;
    };
    if (lo) lo_arg = arg(static_cast<OT>(checked_scalar<T>(*lo, "clamp")));
    if (hi) hi_arg = arg(static_cast<OT>(checked_scalar<T>(*hi, "clamp")));
  });
  run_elementwise(iter, "clamp", [&](const ElementwiseLaunch& l) {
    return cuda_kernels::launch_clamp(l, lo_arg, lo != nullptr, hi_arg, hi != nullptr);
  });
}

// threshold_backward: the threshold rounded to the opmath type on the host, as the CPU kernel's.
void threshold_backward_kernel(const TensorIterator& iter, const Scalar& threshold) {
  ScalarArg th;
  visit_dtype<kGroupFloating>(iter.dtype(0), "threshold_backward", [&](auto tag) {
    using OT = opmath_t<typename decltype(tag)::type>;
    th.d = static_cast<double>(threshold.to<OT>());
  });
  run_elementwise(iter, "threshold_backward",
                  [&](const ElementwiseLaunch& l) { return cuda_kernels::launch_threshold_backward(l, th); });
}

}  // namespace

void register_elementwise_kernels() {
  ops::register_kernel(DispatchKey::CUDA, &where_kernel);
  ops::register_kernel(DispatchKey::CUDA, &clamp_kernel);
  ops::register_kernel(DispatchKey::CUDA, &threshold_backward_kernel);
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
