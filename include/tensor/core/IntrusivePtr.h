// Intrusive reference counting for TensorImpl and StorageImpl (cheaper than shared_ptr:
// one allocation, one atomic per copy).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace tensor {

/// Base for intrusively counted objects. Starts at refcount 0; intrusive_ptr adopts it.
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;
  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  template <class T> friend class intrusive_ptr;
  mutable std::atomic<uint32_t> refcount_{0};
};

/// Owning pointer to a RefCounted object.
template <class T>
class intrusive_ptr {
 public:
  intrusive_ptr() = default;
  explicit intrusive_ptr(T* p) : p_(p) { retain(); }
  intrusive_ptr(const intrusive_ptr& o) : p_(o.p_) { retain(); }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <class U>
  intrusive_ptr(intrusive_ptr<U>&& o) noexcept : p_(o.release()) {}
  ~intrusive_ptr() { reset(); }
  intrusive_ptr& operator=(const intrusive_ptr& o) { intrusive_ptr(o).swap(*this); return *this; }
  intrusive_ptr& operator=(intrusive_ptr&& o) noexcept { intrusive_ptr(std::move(o)).swap(*this); return *this; }

  void reset() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  T* release() { T* p = p_; p_ = nullptr; return p; }
  void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const intrusive_ptr& o) const { return p_ == o.p_; }
  bool operator!=(const intrusive_ptr& o) const { return p_ != o.p_; }
  uint32_t use_count() const { return p_ ? p_->use_count() : 0; }

  /// Adopts a pointer whose count was already incremented by release().
  static intrusive_ptr reclaim(T* p) { intrusive_ptr r; r.p_ = p; return r; }

 private:
  void retain() { if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed); }
  T* p_ = nullptr;
};

template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace tensor
