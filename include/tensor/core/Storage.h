// Refcounted bytes shared by a tensor and its views.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tensor/core/Device.h"
#include "tensor/core/IntrusivePtr.h"
#include "tensor/export.h"

namespace tensor {

/// A raw allocation and how to free it. `deleter(data, ctx)` runs once when the storage dies.
struct DataPtr {
  void* data = nullptr;
  void* ctx = nullptr;
  void (*deleter)(void* data, void* ctx) = nullptr;
};

/// Allocates device memory for storages. One per device type (CPU caching, CUDA caching).
class TENSOR_API Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes, Device device) = 0;
};

/// Refcounted memory. Views share one StorageImpl; it can be resized or freed while tensors
/// keep their metadata (Note [Version counter lives in storage]).
class TENSOR_API StorageImpl : public RefCounted {
 public:
  StorageImpl(size_t nbytes, Device device, Allocator* alloc);
  /// Wraps memory that the caller owns (from_blob): never freed by libtensor unless a deleter is given.
  StorageImpl(DataPtr external, size_t nbytes, Device device);
  ~StorageImpl() override;

  void* data() const { return data_.data; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  /// The allocator the memory came from (null for external memory).
  Allocator* allocator() const { return allocator_; }
  /// Frees the memory; tensors keep their sizes and fail clearly on data access.
  void free_data();
  /// Reallocates to `nbytes` (contents up to the old size are copied on CPU).
  void resize(size_t nbytes);

  // Note [Version counter lives in storage]
  // Every in-place write bumps a counter that autograd compares against the version saved
  // with a tensor. Views must share it, and views share the storage, so the counter lives
  // here: no extra allocation per tensor.
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  /// True when this memory was allocated inside an InferenceMode scope (Tensor::is_inference).
  bool is_inference() const { return inference_; }

 private:
  DataPtr data_;
  size_t nbytes_;
  Device device_;
  Allocator* allocator_;
  std::atomic<uint32_t> version_{0};
  bool inference_ = false;  // set once, by the constructor, from the thread's InferenceMode
};

namespace detail {
/// Whether an InferenceMode scope is active on this thread (memory allocated now is inference).
TENSOR_API bool inference_mode_enabled();
TENSOR_API void set_inference_mode_enabled(bool enabled);
}  // namespace detail

/// The allocator for a device type (CPU caching allocator, CUDA caching allocator).
TENSOR_API Allocator* get_allocator(DeviceType t);

}  // namespace tensor
