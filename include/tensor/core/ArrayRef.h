// Non-owning views of contiguous arrays (IntArrayRef for sizes, strides and dims) and a
// small inline vector for shapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "tensor/export.h"

namespace tensor {
namespace detail {
/// Raises tensor::Error for ArrayRef::slice out of range (out of line: this header stays light).
[[noreturn]] TENSOR_API void throw_array_ref_slice(size_t start, size_t n, size_t size);
}  // namespace detail

/// A non-owning view of `size()` elements. Cheap to copy; never outlives its source.
template <class T>
class ArrayRef {
 public:
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T* data, size_t n) : data_(data), size_(n) {}
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
  // Valid for the full-expression that creates the list: the usual way to pass {2, 3}.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr ArrayRef(std::initializer_list<T> il) : data_(il.begin()), size_(il.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  template <size_t N>
  constexpr ArrayRef(const T (&arr)[N]) : data_(arr), size_(N) {}

  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  constexpr const T& front() const { return data_[0]; }
  constexpr const T& back() const { return data_[size_ - 1]; }
  std::vector<T> vec() const { return std::vector<T>(data_, data_ + size_); }
  /// The n elements from index `start` (libtorch's ArrayRef::slice); throws when they run past the end.
  ArrayRef slice(size_t start, size_t n) const {
    if (start > size_ || n > size_ - start) detail::throw_array_ref_slice(start, n, size_);
    return ArrayRef(data_ + start, n);
  }
  /// The elements from index `start` to the end.
  ArrayRef slice(size_t start) const {
    if (start > size_) detail::throw_array_ref_slice(start, 0, size_);
    return ArrayRef(data_ + start, size_ - start);
  }
  bool equals(ArrayRef o) const {
    if (o.size_ != size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == o.data_[i])) return false;
    return true;
  }
  bool operator==(ArrayRef o) const { return equals(o); }
  bool operator!=(ArrayRef o) const { return !equals(o); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

using IntArrayRef = ArrayRef<int64_t>;

/// Up to N elements inline, heap beyond. Shapes of <= 5 dims never allocate.
template <class T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(ArrayRef<T> a) { assign(a.begin(), a.end()); }
  SmallVector(size_t n, T v) { resize(n, v); }
  SmallVector(std::initializer_list<T> il) { assign(il.begin(), il.end()); }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { move_from(o); }
  SmallVector& operator=(const SmallVector& o) { if (this != &o) assign(o.begin(), o.end()); return *this; }
  SmallVector& operator=(SmallVector&& o) noexcept { if (this != &o) { release(); move_from(o); } return *this; }
  ~SmallVector() { release(); }

  void assign(const T* b, const T* e) {
    size_t n = static_cast<size_t>(e - b);
    reserve(n);
    for (size_t i = 0; i < n; ++i) data_[i] = b[i];
    size_ = n;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    T* p = new T[n];
    for (size_t i = 0; i < size_; ++i) p[i] = data_[i];
    release();
    data_ = p;
    cap_ = n;
  }
  void resize(size_t n, T v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  void push_back(T v) {
    if (size_ == cap_) reserve(cap_ * 2);
    data_[size_++] = v;
  }
  void insert(size_t pos, T v) {
    push_back(v);
    for (size_t i = size_ - 1; i > pos; --i) data_[i] = data_[i - 1];
    data_[pos] = v;
  }
  void erase(size_t pos) {
    for (size_t i = pos; i + 1 < size_; ++i) data_[i] = data_[i + 1];
    --size_;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  operator ArrayRef<T>() const { return ArrayRef<T>(data_, size_); }
  ArrayRef<T> ref() const { return ArrayRef<T>(data_, size_); }
  std::vector<T> vec() const { return std::vector<T>(data_, data_ + size_); }

 private:
  void release() {
    if (data_ != inline_) delete[] data_;
    data_ = inline_;
    cap_ = N;
  }
  void move_from(SmallVector& o) {
    if (o.data_ == o.inline_) {
      data_ = inline_;
      cap_ = N;
      for (size_t i = 0; i < o.size_; ++i) inline_[i] = o.inline_[i];
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }
  T inline_[N];
  T* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = N;
};

using DimVector = SmallVector<int64_t, 5>;

}  // namespace tensor
