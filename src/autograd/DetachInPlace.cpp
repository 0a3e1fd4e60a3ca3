// tensor::detach_ (libtorch's detach_): drops a tensor's autograd history in place, so it lives
// beside the autograd state it changes.
#include "src/autograd/Functions.h"
#include "src/core/Check.h"
#include "tensor/ported_ops.h"

namespace tensor {

Tensor& detach_(Tensor& self) {
  TENSOR_CHECK(self.defined(), "detach_: the tensor is undefined");
  autograd::AutogradMeta* m = self.unsafeGetTensorImpl()->autograd_meta();
  if (m) {
    // libtorch: a view shares its base's history, so detaching only the view in place would
    // leave the two disagreeing about whether their common memory is differentiable.
    TENSOR_CHECK(!(m->view_base_.defined() && m->view_base_.requires_grad()),
                 "detach_: Can't detach views in-place. Use detach() instead ({})", self.describe());
    m->grad_fn_.reset();
    m->output_nr_ = 0;
    m->requires_grad_ = false;
  }
  return self;
}

}  // namespace tensor
