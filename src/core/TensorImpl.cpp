#include "tensor/core/TensorImpl.h"

#include <cstring>

#include "src/core/AutogradHooks.h"
#include "src/core/Check.h"
#include "src/core/Quantizer.h"
#include "src/core/Sizes.h"

namespace tensor {

namespace {
thread_local bool tls_inference_mode = false;
}  // namespace

namespace detail {
bool inference_mode_enabled() { return tls_inference_mode; }
void set_inference_mode_enabled(bool enabled) { tls_inference_mode = enabled; }
}  // namespace detail

StorageImpl::StorageImpl(size_t nbytes, Device device, Allocator* alloc)
    : nbytes_(nbytes), device_(device), allocator_(alloc), inference_(tls_inference_mode) {
  data_ = alloc->allocate(nbytes, device);
}

StorageImpl::StorageImpl(DataPtr external, size_t nbytes, Device device)
    : data_(external), nbytes_(nbytes), device_(device), allocator_(nullptr), inference_(tls_inference_mode) {}

StorageImpl::~StorageImpl() { free_data(); }

void StorageImpl::free_data() {
  if (data_.deleter) data_.deleter(data_.data, data_.ctx);
  data_ = DataPtr{};
  nbytes_ = 0;
}

void StorageImpl::resize(size_t nbytes) {
  TENSOR_CHECK(allocator_ != nullptr, "Storage::resize: cannot resize memory that libtensor does not own (from_blob)");
  DataPtr fresh = allocator_->allocate(nbytes, device_);
  if (device_.is_cpu() && data_.data && fresh.data) std::memcpy(fresh.data, data_.data, std::min(nbytes, nbytes_));
  free_data();
  data_ = fresh;
  nbytes_ = nbytes;
}

TensorImpl::TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, Device device)
    : storage_(std::move(storage)), dtype_(dtype), device_(device) {}

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_quantizer(intrusive_ptr<Quantizer> q) { quantizer_ = std::move(q); }

void TensorImpl::set_sizes_contiguous(IntArrayRef sizes) {
  sizes_ = sizes;
  strides_.resize(sizes.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    strides_[i] = s;
    s *= sizes[i] == 0 ? 1 : sizes[i];
  }
  storage_offset_ = 0;
  refresh();
}

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  sizes_ = sizes;
  strides_ = strides;
  storage_offset_ = storage_offset;
  refresh();
}

void TensorImpl::refresh() {
  // Every shape passes here, so this is where a count that wraps is caught (an expand or view
  // to [2^32, 2^32] would otherwise report 0 elements and reduce to 0).
  TENSOR_CHECK(detail::numel_fits(sizes_), "tensor of size {} has more elements than int64 can count",
               detail::shape_str(sizes_));
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  numel_ = n;
  // Contiguous means row-major; dims of size 1 may carry any stride (as PyTorch).
  bool c = true;
  if (n != 0) {
    int64_t expected = 1;
    for (int64_t i = static_cast<int64_t>(sizes_.size()) - 1; i >= 0; --i) {
      if (sizes_[i] == 1) continue;
      if (strides_[i] != expected) { c = false; break; }
      expected *= sizes_[i];
    }
  }
  is_contiguous_ = c;
}

void TensorImpl::set_autograd_meta(std::unique_ptr<autograd::AutogradMeta> m) { autograd_meta_.reset(m.release()); }

bool TensorImpl::requires_grad() const {
  return autograd_meta_ && autograd_hooks::meta_requires_grad(*autograd_meta_);
}

}  // namespace tensor
