// ExpandingArray<D>: a size option given as one value for every dim or as D values, as
// libtorch's torch::ExpandingArray (`MaxPool2dOptions(2)` or `MaxPool2dOptions({2, 3})`).
// ExpandingArray<D, double> holds ratios (FractionalMaxPool2dOptions::output_ratio).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>

#include "tensor/core/ArrayRef.h"
#include "tensor/core/Error.h"

namespace tensor::nn {

template <size_t D, typename T = int64_t>
class ExpandingArray {
 public:
  /* implicit */ ExpandingArray(T single) { values_.fill(single); }
  /* implicit */ ExpandingArray(std::initializer_list<T> list) {
    if (list.size() != D) ::tensor::detail::throw_error("ExpandingArray: expected one value or exactly D values");
    size_t i = 0;
    for (T v : list) values_[i++] = v;
  }
  /* implicit */ ExpandingArray(ArrayRef<T> list) {
    if (list.size() != D) ::tensor::detail::throw_error("ExpandingArray: expected one value or exactly D values");
    for (size_t i = 0; i < D; ++i) values_[i] = list[i];
  }
  /* implicit */ operator ArrayRef<T>() const { return ArrayRef<T>(values_.data(), D); }
  T operator[](size_t i) const { return values_[i]; }
  T& operator[](size_t i) { return values_[i]; }
  static constexpr size_t size() { return D; }
  const T* data() const { return values_.data(); }
  bool operator==(const ExpandingArray& o) const { return values_ == o.values_; }

 private:
  std::array<T, D> values_{};
};

/// Prints as libtorch does: [2, 2].
template <size_t D, typename T>
std::ostream& operator<<(std::ostream& s, const ExpandingArray<D, T>& a) {
  s << "[";
  for (size_t i = 0; i < D; ++i) s << (i ? ", " : "") << a[i];
  return s << "]";
}

}  // namespace tensor::nn

namespace tensor {
/// libtorch spells it torch::ExpandingArray; the same template as nn::ExpandingArray.
using nn::ExpandingArray;
}  // namespace tensor
