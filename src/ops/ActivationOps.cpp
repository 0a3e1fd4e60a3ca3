// Internal fused activation backward ops: threshold_backward's front end over its backend
// kernels (Note [Front ends and backend kernels], src/ops/ElementwiseOps.cpp).
#include "kernels/cpu/Elementwise.h"
#include "src/core/Check.h"
#include "src/core/TensorIterator.h"
#include "src/dispatch/BackendKernels.h"
#include "src/ops/ElementwiseOps.h"

namespace tensor::ops {

namespace {

// CPU's kernel built in, CUDA's registered.
dispatch::BackendKernels<ThresholdBackwardKernel> g_threshold_backward_kernels{{&cpu::threshold_backward_kernel, nullptr}};

template <DispatchKey K>
Tensor threshold_backward_fn(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  const ThresholdBackwardKernel kernel = g_threshold_backward_kernels.get<K>("threshold_backward");
  TENSOR_CHECK(grad.defined() && self.defined(), "threshold_backward: grad and self must be defined tensors");
  TENSOR_CHECK(grad.dtype() == self.dtype() && is_floating_point(grad.dtype()),
               "threshold_backward: grad {} and self {} must share one floating dtype", grad.describe(),
               self.describe());
  TensorIterator it;
  it.name("threshold_backward").add_output().add_input(grad).add_input(self);
  it.build();
  if constexpr (K != DispatchKey::Meta) kernel(it, threshold);
  return it.output();
}

dispatch::OpDef<ThresholdBackwardFn> g_threshold_backward =
    TENSOR_FRONT_END_DEF(ThresholdBackwardFn, "threshold_backward", threshold_backward_fn);

}  // namespace

dispatch::OpDef<ThresholdBackwardFn>& threshold_backward_op() { return g_threshold_backward; }

void register_kernel(DispatchKey backend, ThresholdBackwardKernel kernel) {
  dispatch::check_kernel_backend(backend, "threshold_backward");
  g_threshold_backward_kernels.set(backend, kernel);
  g_threshold_backward.set(backend, &threshold_backward_fn<DispatchKey::CUDA>);
}

Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  return g_threshold_backward(grad, self, threshold);
}

}  // namespace tensor::ops
