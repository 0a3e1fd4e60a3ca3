// x.index({Slice(0, 2), 1, None, Ellipsis, mask}) and x.index_put_(...), as libtorch.
#pragma once

#include <cstdint>
#include <optional>

#include "tensor/core/Tensor.h"

namespace tensor::indexing {

struct NoneIndexType {};
struct EllipsisIndexType {};

/// A slice bound: an integer, or None / std::nullopt for "open".
struct SliceBound {
  SliceBound(int64_t v) : value(v) {}
  SliceBound(int v) : value(v) {}
  SliceBound(std::nullopt_t) {}
  SliceBound(NoneIndexType) {}
  std::optional<int64_t> value;
};

/// A Python-style slice; absent bounds mean "from the start" / "to the end":
/// Slice(), Slice(1, None), Slice(None, None, 2).
class Slice {
 public:
  Slice(SliceBound start = std::nullopt, SliceBound stop = std::nullopt, SliceBound step = std::nullopt)
      : start_(start.value), stop_(stop.value), step_(step.value.value_or(1)) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_;
  int64_t step_;
};

/// Inserts a new dim of size 1.
constexpr NoneIndexType None{};
/// Stands for as many full slices as needed.
constexpr EllipsisIndexType Ellipsis{};

/// One entry of an index list: an integer, a Slice, None, Ellipsis, a bool or a tensor
/// (integer tensors gather, bool tensors mask).
class TENSOR_API TensorIndex {
 public:
  enum class Kind { Integer, Slice, None, Ellipsis, Boolean, Tensor };
  TensorIndex(int64_t i) : kind_(Kind::Integer), integer_(i) {}
  TensorIndex(int i) : kind_(Kind::Integer), integer_(i) {}
  TensorIndex(bool b) : kind_(Kind::Boolean), boolean_(b) {}
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}
  TensorIndex(NoneIndexType) : kind_(Kind::None) {}
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}
  TensorIndex(const char* s);  // "..." only
  TensorIndex(tensor::Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const tensor::Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  tensor::Tensor tensor_;
};

}  // namespace tensor::indexing

namespace tensor {
using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;
}  // namespace tensor
