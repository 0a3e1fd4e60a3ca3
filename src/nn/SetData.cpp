#include "src/nn/SetData.h"

#include "src/autograd/AutogradMeta.h"
#include "src/core/Check.h"

namespace tensor::nn::detail {

// Note [set_data without a core setter]
// Module::to must convert parameters in place, as libtorch's Variable::set_data does: the
// Tensor handles held by module members (fc->weight) and by optimizers share the TensorImpl,
// so replacing its storage, dtype and device is the only way they all see the conversion.
// TensorImpl exposes no setter for storage, dtype and device, and the core headers are not
// this area's to change, so this file reaches the three private members through the standard
// explicit-instantiation access rule ([temp.spec.general]: access checking does not apply to
// names in explicit instantiations). It is the only place that does so; once TensorImpl gains
// a `set_data(storage, dtype, device)`, replace the three Access tags with that call.
namespace {
template <typename Tag, typename Tag::type Member>
struct Access {
  friend typename Tag::type member_of(Tag) { return Member; }
};
struct StorageTag {
  using type = intrusive_ptr<StorageImpl> TensorImpl::*;
  friend type member_of(StorageTag);
};
struct DtypeTag {
  using type = ScalarType TensorImpl::*;
  friend type member_of(DtypeTag);
};
struct DeviceTag {
  using type = Device TensorImpl::*;
  friend type member_of(DeviceTag);
};
}  // namespace
template struct Access<StorageTag, &TensorImpl::storage_>;
template struct Access<DtypeTag, &TensorImpl::dtype_>;
template struct Access<DeviceTag, &TensorImpl::device_>;

void set_data(const Tensor& dst, const Tensor& src) {
  TENSOR_CHECK(dst.defined() && src.defined(), "set_data: both tensors must be defined");
  if (dst.is_same(src)) return;
  TensorImpl* d = dst.unsafeGetTensorImpl();
  TensorImpl* s = src.unsafeGetTensorImpl();
  TENSOR_CHECK(!d->is_view() && !d->is_conj() && !s->is_conj(),
               "set_data: only plain (non-view, non-conjugated) tensors can be converted in place, got {}",
               dst.describe());
  d->*member_of(StorageTag{}) = s->storage();
  d->*member_of(DtypeTag{}) = s->dtype();
  d->*member_of(DeviceTag{}) = s->device();
  d->set_sizes_and_strides(s->sizes(), s->strides(), s->storage_offset());
  // A stale gradient of the old dtype/device would break the next accumulation.
  if (autograd::AutogradMeta* m = d->autograd_meta(); m && m->grad_.defined())
    m->grad_ = m->grad_.to(src.device(), src.dtype());
}

}  // namespace tensor::nn::detail
