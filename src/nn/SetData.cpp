#include "src/nn/SetData.h"

#include "src/core/Check.h"
#include "src/core/Quantizer.h"

namespace tensor::nn::detail {

// Note [set_data]
// Module::to must convert parameters in place, as libtorch's Variable::set_data does: the
// Tensor handles held by module members (fc->weight) and by optimizers share the TensorImpl,
// so replacing its storage, dtype and device is the only way they all see the conversion.
void set_data(const Tensor& dst, const Tensor& src) {
  TENSOR_CHECK(dst.defined() && src.defined(), "set_data: both tensors must be defined");
  if (dst.is_same(src)) return;
  TensorImpl* d = dst.unsafeGetTensorImpl();
  TensorImpl* s = src.unsafeGetTensorImpl();
  TENSOR_CHECK(!d->is_view() && !d->is_conj() && !s->is_conj(),
               "set_data: only plain (non-view, non-conjugated) tensors can be converted in place, got {}",
               dst.describe());
  d->set_storage_and_dtype(s->storage(), s->dtype(), s->device());
  d->set_quantizer(s->quantizer());
  d->set_sizes_and_strides(s->sizes(), s->strides(), s->storage_offset());
  // A stale gradient of the old dtype/device would break the next accumulation.
  if (dst.grad().defined()) dst.mutable_grad() = dst.grad().to(src.device(), src.dtype());
}

}  // namespace tensor::nn::detail
