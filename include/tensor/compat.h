// <tensor/compat.h>: libtorch's at:: and c10:: names on libtensor's, for ported programs that
// spell ATen and c10 names directly (at::Tensor, at::indexing::Slice, at::kFloat, c10::IntArrayRef,
// c10::optional, c10::irange, ...). Opt-in: the umbrella header does not include it, because it
// declares the namespaces at and c10, which a program that also links libtorch owns. README
// "Porting from libtorch" lists what it covers.
//
//   #include <tensor/compat.h>
//   at::Tensor x = at::normal(0.0, 1.0, {2, 3}, at::TensorOptions().dtype(at::kFloat));
//   for (int64_t i : c10::irange(x.size(0))) x.index_put_({i, at::indexing::Slice(0, 2)}, 0);
//   c10::optional<int64_t> d = c10::nullopt;
#pragma once

#include <complex>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <type_traits>

#include "tensor/tensor.h"

// Note [at and c10 as aliases]
// at:: is every tensor:: name (a using-directive: at::zeros, at::Tensor, at::indexing::Slice,
// at::ScalarType::Long, at::MemoryFormat, at::kCUDA ...), so that ATen's free functions need
// no list here and a new tensor:: op is at:: at once; c10:: is the vocabulary types and helpers
// one by one (using-declarations), since c10 holds no ops. Both name the same entities as
// tensor::, so mixing the spellings in one program never makes a second type or an ambiguity.
namespace at {
using namespace ::tensor;
}  // namespace at

namespace c10 {

using ::tensor::ArrayRef;
using ::tensor::BFloat16;
using ::tensor::Device;
using ::tensor::DeviceType;
using ::tensor::Error;
using ::tensor::Half;
using ::tensor::IntArrayRef;
using ::tensor::MemoryFormat;
using ::tensor::Scalar;
using ::tensor::ScalarType;
using ::tensor::TensorOptions;
using ::tensor::kCPU;
using ::tensor::kCUDA;
using ::tensor::kMeta;
using ::tensor::make_optional;
using ::tensor::nullopt;
using ::tensor::nullopt_t;
using ::tensor::optional;
using ::tensor::str;
using ::tensor::AutoGradMode;
using ::tensor::GradMode;
using ::tensor::InferenceMode;
using ::tensor::NoGradGuard;
using std::string_view;

/// c10::complex<T>: std::complex<T> here (libtensor's complex dtypes store std::complex).
template <typename T>
using complex = std::complex<T>;

/// libtorch's camelCase dtype queries, on libtensor's snake_case ones.
inline int64_t elementSize(ScalarType t) { return ::tensor::element_size(t); }
inline const char* toString(ScalarType t) { return ::tensor::to_string(t); }
inline bool isFloatingType(ScalarType t) { return ::tensor::is_floating_point(t); }
inline bool isComplexType(ScalarType t) { return ::tensor::is_complex(t); }
inline bool isIntegralType(ScalarType t, bool include_bool) { return ::tensor::is_integral(t, include_bool); }

/// The integers [begin, end) for range-for (empty when end <= begin), as c10::irange.
template <typename I>
class integer_range {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = I;
    using difference_type = std::ptrdiff_t;
    using pointer = const I*;
    using reference = const I&;
    explicit iterator(I v) : v_(v) {}
    const I& operator*() const { return v_; }
    iterator& operator++() { ++v_; return *this; }
    iterator operator++(int) { iterator old = *this; ++v_; return old; }
    bool operator==(const iterator& o) const { return v_ == o.v_; }
    bool operator!=(const iterator& o) const { return v_ != o.v_; }

   private:
    I v_;
  };
  integer_range(I begin, I end) : begin_(begin), end_(end < begin ? begin : end) {}
  iterator begin() const { return iterator(begin_); }
  iterator end() const { return iterator(end_); }

 private:
  I begin_, end_;
};

/// for (auto i : c10::irange(n)): 0, 1, ..., n - 1, in n's type.
template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
integer_range<I> irange(I end) {
  return integer_range<I>(I(0), end);
}
/// for (auto i : c10::irange(b, e)): b, ..., e - 1, in e's type (as c10::irange).
template <typename I1, typename I2,
          typename = std::enable_if_t<std::is_integral_v<I1> && std::is_integral_v<I2>>>
integer_range<I2> irange(I1 begin, I2 end) {
  return integer_range<I2>(static_cast<I2>(begin), end);
}

}  // namespace c10

namespace at {
// c10's names that ATen re-exports under at::.
using ::c10::irange;
using ::c10::elementSize;
using ::c10::isComplexType;
using ::c10::isFloatingType;
using ::c10::isIntegralType;
using ::c10::toString;
}  // namespace at
