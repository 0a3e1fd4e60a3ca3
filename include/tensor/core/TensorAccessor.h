// Element access by index chains, as libtorch's TensorAccessor: `auto a = t.accessor<float, 2>();
// a[i][j] = 1;`. Holds the tensor's data pointer, sizes and strides; valid while the tensor
// lives and keeps its shape.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensor {

/// N-dimensional view of raw elements of type T with the tensor's strides.
template <class T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  /// The sub-accessor (or, for N == 1, the element) at index i of the first dim.
  TensorAccessor<T, N - 1> operator[](int64_t i) const {
    return TensorAccessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
  }
  /// Size of dim d of this (sub-)accessor.
  int64_t size(size_t d) const { return sizes_[d]; }
  /// Stride of dim d, in elements.
  int64_t stride(size_t d) const { return strides_[d]; }
  /// The first element.
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

template <class T>
class TensorAccessor<T, 1> {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  /// The element at index i.
  T& operator[](int64_t i) const { return data_[i * strides_[0]]; }
  /// Size of the dim.
  int64_t size(size_t d) const { return sizes_[d]; }
  /// Stride of the dim, in elements.
  int64_t stride(size_t d) const { return strides_[d]; }
  /// The first element.
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

}  // namespace tensor
