// data::Example: one sample, or one batch, of a dataset (libtorch's torch::data::Example).
#pragma once

#include <utility>

#include "tensor/core/Tensor.h"

namespace tensor::data {

/// An input and its target. `Example<>` is {Tensor data, Tensor target}; a dataset may choose other
/// types (`Example<std::string, int64_t>`). `Example<Tensor, example::NoTarget>` (TensorExample)
/// holds data alone.
template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  /// An example of `data` and `target`.
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}

  Data data;
  Target target;
};

namespace example {
/// The target type of an example without targets.
using NoTarget = void;
}  // namespace example

/// An example that holds data and no target (libtorch's specialization).
template <typename Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;

  Example() = default;
  /// An example of `data` alone.
  /* implicit */ Example(Data data) : data(std::move(data)) {}
  /// So that an Example<Data, NoTarget> converts to its data, as in libtorch.
  operator Data&() { return data; }
  operator const Data&() const { return data; }

  Data data;
};

/// An example of one tensor and no target.
using TensorExample = Example<Tensor, example::NoTarget>;

}  // namespace tensor::data
