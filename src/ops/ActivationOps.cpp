// Internal fused activation backward ops (ops::threshold_backward).
#include "kernels/cpu/Elementwise.h"
#include "src/core/Check.h"
#include "src/ops/ElementwiseOps.h"
#include "src/core/TensorIterator.h"

namespace tensor::ops {

Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  TENSOR_CHECK(grad.dtype() == self.dtype() && is_floating_point(grad.dtype()),
               "threshold_backward: grad {} and self {} must share one floating dtype", grad.describe(),
               self.describe());
  TensorIterator it;
  it.name("threshold_backward").add_output().add_input(grad).add_input(self);
  it.build();
  if (!it.is_meta()) cpu::threshold_backward_kernel(it, threshold);
  return it.output();
}

}  // namespace tensor::ops
