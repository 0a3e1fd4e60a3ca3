// The metadata behind a Tensor: storage, sizes, strides, offset, dtype, device.
#pragma once

#include <memory>

#include "tensor/core/ArrayRef.h"
#include "tensor/core/Device.h"
#include "tensor/core/IntrusivePtr.h"
#include "tensor/core/ScalarType.h"
#include "tensor/core/Storage.h"
#include "tensor/export.h"

namespace tensor {

namespace autograd { struct AutogradMeta; }
class Quantizer;
namespace detail {
/// Deletes the autograd meta a TensorImpl owns. The core cannot see inside it, so autograd
/// defines this (Note [Autograd hooks] in src/core/AutogradHooks.h).
struct AutogradMetaDeleter {
  void operator()(autograd::AutogradMeta* m) const noexcept;
};
}  // namespace detail

/// Sizes and strides are stored inline for up to 5 dims. Contiguity is cached and
/// recomputed whenever the geometry changes.
class TENSOR_API TensorImpl : public RefCounted {
 public:
  TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, Device device);
  ~TensorImpl() override;

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool is_contiguous() const { return is_contiguous_; }
  bool is_conj() const { return is_conj_; }
  void set_conj(bool c) { is_conj_ = c; }
  /// A 0-dim tensor made from a C++ number; it promotes as a weak type.
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool w) { is_wrapped_number_ = w; }
  /// True for views made by view ops (autograd refuses in-place writes through them for now).
  bool is_view() const { return is_view_; }
  void set_is_view(bool v) { is_view_ = v; }

  const intrusive_ptr<StorageImpl>& storage() const { return storage_; }
  /// Pointer to element 0 (storage data + offset). Null for meta tensors.
  void* data() const {
    return storage_->data() ? static_cast<char*>(storage_->data()) + storage_offset_ * element_size(dtype_) : nullptr;
  }

  /// Sets contiguous sizes (row-major strides).
  void set_sizes_contiguous(IntArrayRef sizes);
  /// Sets arbitrary geometry (views).
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
  /// Points this tensor at other data (libtorch's set_data): storage, dtype and device, with the
  /// geometry set separately. Every handle sharing this TensorImpl sees the change.
  void set_storage_and_dtype(intrusive_ptr<StorageImpl> storage, ScalarType dtype, Device device) {
    storage_ = std::move(storage);
    dtype_ = dtype;
    device_ = device;
  }

  /// The quantization parameters of a quantized tensor (Note [Quantized tensors] in
  /// src/core/Quantizer.h); null for every other dtype. Views share their base's (or one
  /// adjusted for a per-channel axis that moves).
  const intrusive_ptr<Quantizer>& quantizer() const { return quantizer_; }
  void set_quantizer(intrusive_ptr<Quantizer> q);

  autograd::AutogradMeta* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<autograd::AutogradMeta> m);
  /// True when autograd must record ops on this tensor.
  bool requires_grad() const;

  uint32_t version() const { return storage_->version(); }
  void bump_version() { storage_->bump_version(); }

 private:
  void refresh();
  intrusive_ptr<StorageImpl> storage_;
  intrusive_ptr<Quantizer> quantizer_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  ScalarType dtype_;
  Device device_;
  bool is_contiguous_ = true;
  bool is_conj_ = false;
  bool is_wrapped_number_ = false;
  bool is_view_ = false;
  std::unique_ptr<autograd::AutogradMeta, detail::AutogradMetaDeleter> autograd_meta_;
};

}  // namespace tensor
