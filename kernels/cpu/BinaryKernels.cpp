// CPU binary elementwise kernels, compiled once per Highway target (Note [Per-ISA loops]).
#include <cmath>

#include "kernels/cpu/Elementwise.h"
#include "kernels/math/Binary.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/BinaryKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/Loops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace {

// The scalar formula of each op is kernels/math/Binary.h's binary_op, shared with the CUDA
// kernels.
template <BinaryOp Op, class T>
HWY_INLINE auto scalar_fn(T a, T b) {
  return math::binary_op<Op>(a, b);
}

template <BinaryOp Op>
void run_op(const TensorIterator& iter, const Scalar& alpha, const char* name) {
  visit_dtype<info(Op).dtypes>(iter.dtype(1), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OT = opmath_t<T>;
    using R = decltype(scalar_fn<Op>(OT{}, OT{}));
    using out_t = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
    auto run = [&](auto f) {
      iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) { loop_binary<out_t, T, T>(d, s, n0, n1, f); });
    };
    if constexpr (Op == BinaryOp::Add || Op == BinaryOp::Sub) {
      if constexpr (!std::is_same_v<T, bool>) {
        OT al = alpha.to<OT>();
        if (!(al == OT(1))) {
          run([al](OT a, OT b) { return math::add_alpha<Op>(a, b, al); });
          return;
        }
      }
    }
    run([](OT a, OT b) { return scalar_fn<Op>(a, b); });
  });
}

using RunFn = void (*)(const TensorIterator&, const Scalar&, const char*);
#define TENSOR_BINARY_ENTRY(Enum, name, dtypes, result, api) &run_op<BinaryOp::Enum>,
const RunFn kBinaryTable[] = {TENSOR_BINARY_OPS(TENSOR_BINARY_ENTRY)};
#undef TENSOR_BINARY_ENTRY

}  // namespace

void BinaryKernelImpl(const TensorIterator& iter, int op, const Scalar& alpha, const char* name) {
  kBinaryTable[op](iter, alpha, name);
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(BinaryKernelImpl);
void binary_kernel(const TensorIterator& iter, BinaryOp op, const Scalar& alpha, const char* name) {
  HWY_DYNAMIC_DISPATCH(BinaryKernelImpl)(iter, static_cast<int>(op), alpha, name);
}

namespace {
template <BinaryOp Op>
void binary_entry(const TensorIterator& iter, const Scalar& alpha) {
  HWY_DYNAMIC_DISPATCH(BinaryKernelImpl)(iter, static_cast<int>(Op), alpha, info(Op).name);
}
}  // namespace

#define TENSOR_BINARY_ENTRY(Enum, name, dtypes, result, api) &binary_entry<BinaryOp::Enum>,
const BinaryKernel kBinaryKernels[oplist::kNumBinary] = {TENSOR_BINARY_OPS(TENSOR_BINARY_ENTRY)};
#undef TENSOR_BINARY_ENTRY
}  // namespace tensor::cpu
#endif
