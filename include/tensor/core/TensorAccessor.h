// Element access by index chains, as libtorch's TensorAccessor: `auto a = t.accessor<float, 2>();
// a[i][j] = 1;`. Holds the tensor's data pointer, sizes and strides; valid while the tensor
// lives and keeps its shape.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensor {

/// What every accessor holds: the first element and the sizes and strides of its dims.
template <class T>
class TensorAccessorBase {
 public:
  TensorAccessorBase(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  /// Size of dim d of this (sub-)accessor.
  int64_t size(size_t d) const { return sizes_[d]; }
  /// Stride of dim d, in elements.
  int64_t stride(size_t d) const { return strides_[d]; }
  /// The first element.
  T* data() const { return data_; }

 protected:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

/// N-dimensional view of raw elements of type T with the tensor's strides.
template <class T, size_t N>
class TensorAccessor : public TensorAccessorBase<T> {
 public:
  using TensorAccessorBase<T>::TensorAccessorBase;
  /// The sub-accessor at index i of the first dim.
  TensorAccessor<T, N - 1> operator[](int64_t i) const {
    return TensorAccessor<T, N - 1>(this->data_ + i * this->strides_[0], this->sizes_ + 1, this->strides_ + 1);
  }
};

template <class T>
class TensorAccessor<T, 1> : public TensorAccessorBase<T> {
 public:
  using TensorAccessorBase<T>::TensorAccessorBase;
  /// The element at index i.
  T& operator[](int64_t i) const { return this->data_[i * this->strides_[0]]; }
};

}  // namespace tensor
