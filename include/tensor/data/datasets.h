// libtorch's dataset pipeline (torch::data::datasets, torch::data::transforms): CRTP datasets,
// MapDataset and the transforms that .map() applies (docs/io_data.md).
//
//   struct Points : data::datasets::Dataset<Points> {
//     data::Example<> get(size_t i) override { return {x[i], y[i]}; }
//     tensor::optional<size_t> size() const override { return x.size(0); }
//     Tensor x, y;
//   };
//   auto ds = Points{...}.map(data::transforms::Normalize<>(0.5, 0.25)).map(data::transforms::Stack<>());
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/core/ArrayRef.h"
#include "tensor/core/Error.h"
#include "tensor/core/Tensor.h"
#include "tensor/data/example.h"
#include "tensor/ops.h"
#include "tensor/optional.h"

namespace tensor::data {
namespace datasets {

template <typename SourceDataset, typename AppliedTransform>
class MapDataset;

/// Wraps `dataset` so that every batch it returns goes through `transform` (libtorch's
/// datasets::map; `dataset.map(transform)` is the usual spelling). The transform's input batch
/// type must be the dataset's batch type.
template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform);

/// A dataset read a batch at a time: `get_batch(request)` returns a `Batch`. Self is the derived
/// class (CRTP), so that `.map()` can return a MapDataset that owns a Self.
template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  /// Stateful datasets (libtorch's ChunkDataset) are not supported; every dataset is stateless.
  constexpr static bool is_stateful = false;

  virtual ~BatchDataset() = default;

  /// The batch for `request` (usually sample indices).
  virtual Batch get_batch(BatchRequest request) = 0;

  /// The number of samples, if known (a data loader needs it to build its sampler).
  virtual optional<size_t> size() const = 0;

  /// A MapDataset that applies `transform` to every batch; copies this dataset.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }

  /// A MapDataset that applies `transform` to every batch; moves this dataset into it.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

/// A dataset read one sample at a time: implement `get(index)` and `size()`. get_batch collects
/// get(i) for each index into a std::vector (stack them with `.map(transforms::Stack<>())`).
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  /// Sample `index`.
  virtual ExampleType get(size_t index) = 0;

  /// get(i) for every i in `indices`, in order.
  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

/// libtorch's StreamDataset spelling of a batch dataset whose request is a batch size.
template <typename Self, typename Batch = std::vector<Example<>>>
using StreamDataset = BatchDataset<Self, Batch, size_t>;

namespace detail {
template <typename D, typename = void>
struct has_batch_type : std::false_type {};
template <typename D>
struct has_batch_type<D, std::void_t<typename D::BatchType>> : std::true_type {};

template <typename D, typename = void>
struct is_sample_dataset : std::false_type {};
template <typename D>
struct is_sample_dataset<D, std::void_t<decltype(std::declval<D&>().get(size_t{0})),
                                        decltype(static_cast<size_t>(std::declval<const D&>().size()))>>
    : std::true_type {};

/// How MapDataset and the data loaders read a dataset. A BatchDataset is read through its own
/// get_batch and size. A libtensor data::Dataset (virtual get(i) and size_t size(), such as
/// datasets::MNIST) has no BatchType: it is read sample by sample into a std::vector, exactly as
/// a libtorch Dataset<Self> would be, so the same transforms apply to it.
template <typename D, typename = void>
struct dataset_traits {};

template <typename D>
struct dataset_traits<D, std::enable_if_t<has_batch_type<D>::value>> {
  using BatchType = typename D::BatchType;
  using BatchRequestType = typename D::BatchRequestType;
  static constexpr bool is_stateful = D::is_stateful;
  static BatchType get_batch(D& d, BatchRequestType request) { return d.get_batch(std::move(request)); }
  static optional<size_t> size(const D& d) { return d.size(); }
};

template <typename D>
struct dataset_traits<D, std::enable_if_t<!has_batch_type<D>::value && is_sample_dataset<D>::value>> {
  using BatchType = std::vector<std::decay_t<decltype(std::declval<D&>().get(size_t{0}))>>;
  using BatchRequestType = ArrayRef<size_t>;
  static constexpr bool is_stateful = false;
  static BatchType get_batch(D& d, BatchRequestType request) {
    BatchType batch;
    batch.reserve(request.size());
    for (size_t i : request) batch.push_back(d.get(i));
    return batch;
  }
  static optional<size_t> size(const D& d) { return static_cast<size_t>(d.size()); }
};
}  // namespace detail

/// A dataset whose batches are those of SourceDataset passed through AppliedTransform
/// (`transform.apply_batch(source.get_batch(request))`). Itself a BatchDataset, so maps chain.
template <typename SourceDataset, typename AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<SourceDataset, AppliedTransform>,
                                       typename AppliedTransform::OutputBatchType,
                                       typename detail::dataset_traits<SourceDataset>::BatchRequestType> {
 public:
  using DatasetType = SourceDataset;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename detail::dataset_traits<SourceDataset>::BatchRequestType;
  using OutputBatchType = typename AppliedTransform::OutputBatchType;

  static_assert(std::is_same_v<typename detail::dataset_traits<SourceDataset>::BatchType,
                               typename AppliedTransform::InputBatchType>,
                "datasets::map: the transform's input batch type (InputBatchType) is not the dataset's batch type "
                "(BatchType); e.g. Stack<>() takes std::vector<Example<>>, so it cannot follow another Stack");

  /// Owns `dataset` and `transform`.
  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  /// The source's batch for `request`, transformed.
  OutputBatchType get_batch(BatchRequestType request) override {
    return transform_.apply_batch(detail::dataset_traits<SourceDataset>::get_batch(dataset_, std::move(request)));
  }

  /// The source's size.
  optional<size_t> size() const noexcept override { return detail::dataset_traits<SourceDataset>::size(dataset_); }

  /// The source dataset.
  const SourceDataset& dataset() noexcept { return dataset_; }
  /// The transform.
  const AppliedTransform& transform() noexcept { return transform_; }

 private:
  SourceDataset dataset_;
  AppliedTransform transform_;
};

template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform) {
  return MapDataset<DatasetType, TransformType>(std::move(dataset), std::move(transform));
}

/// libtorch's TensorDataset: the samples are the rows (dim 0) of one tensor, without targets.
/// (data::TensorDataset, libtensor's, pairs a data tensor with a target tensor.)
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  /// The rows of `tensors` stacked along a new dim 0.
  explicit TensorDataset(const std::vector<Tensor>& tensors) : TensorDataset(tensor::stack(tensors)) {}
  /// The rows of `tensor`.
  explicit TensorDataset(Tensor tensor) : tensor(std::move(tensor)) {}
  /// Row `index`.
  TensorExample get(size_t index) override { return TensorExample(tensor[static_cast<int64_t>(index)]); }
  /// The number of rows.
  optional<size_t> size() const override { return static_cast<size_t>(tensor.size(0)); }

  Tensor tensor;
};

/// Gives a class that is not a BatchDataset (a libtensor data::Dataset such as MNIST) the
/// `.map()` members of one.
template <typename Self>
class Mappable {
 public:
  /// A MapDataset over a copy of this dataset.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  /// A MapDataset that owns this dataset.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

}  // namespace datasets

namespace transforms {

/// Transforms a whole batch: `apply_batch(InputBatch) -> OutputBatch`.
template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  /// The transformed batch.
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

/// Transforms each example of a batch: `apply(Input) -> Output`, mapped over std::vector batches.
template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  /// The transformed example.
  virtual OutputType apply(InputType input) = 0;
  /// apply() on every example, in order.
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output;
    output.reserve(input_batch.size());
    for (auto& input : input_batch) output.push_back(apply(std::move(input)));
    return output;
  }
};

/// A BatchTransform from a function: `BatchLambda<std::vector<Example<>>, Example<>>(f)`.
template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using typename BatchTransform<Input, Output>::InputBatchType;
  using typename BatchTransform<Input, Output>::OutputBatchType;
  using FunctionType = std::function<OutputBatchType(InputBatchType)>;
  /// Calls `function` on each batch.
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  OutputBatchType apply_batch(InputBatchType input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

/// A per-example Transform from a function: `Lambda<Example<>>([](Example<> e) { ...; return e; })`.
template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using typename Transform<Input, Output>::InputType;
  using typename Transform<Input, Output>::OutputType;
  using FunctionType = std::function<Output(Input)>;
  /// Calls `function` on each example.
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  OutputType apply(InputType input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

/// A Transform of the data tensor of each example (the target passes through): implement
/// `Tensor operator()(Tensor)`.
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  /// The transformed data tensor.
  virtual Tensor operator()(Tensor input) = 0;
  /// The example with its data transformed.
  E apply(E input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

/// A TensorTransform from a function of the data tensor.
template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  /// Calls `function` on each example's data.
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

/// (data - mean) / stddev per channel. As in libtorch, mean and stddev become float32 tensors of
/// shape [C, 1, 1], so data is read as [..., C, H, W]; a data tensor of fewer than 3 dims gains
/// leading dims by broadcasting (a [4] sample becomes [1, 1, 4]).
template <typename Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  /// Per-channel means and standard deviations (one value each applies to every channel).
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(tensor::tensor(mean.vec(), TensorOptions().dtype(kFloat32)).unsqueeze(1).unsqueeze(2)),
        stddev(tensor::tensor(stddev.vec(), TensorOptions().dtype(kFloat32)).unsqueeze(1).unsqueeze(2)) {}
  /// (input - mean) / stddev.
  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }

  Tensor mean, stddev;
};

/// Turns a std::vector of examples into one batch (libtorch's Collation).
template <typename BatchType, typename T = std::vector<BatchType>>
using Collation = BatchTransform<T, BatchType>;

/// Stacks a batch of examples along a new dim 0: data [B, ...] and target [B, ...].
template <typename T = Example<>>
struct Stack;

/// Stacks data and targets.
template <>
struct Stack<Example<>> : public Collation<Example<>> {
  /// {stack(data of each), stack(target of each)}; an empty batch throws tensor::Error.
  Example<> apply_batch(std::vector<Example<>> examples) override {
    if (examples.empty()) ::tensor::detail::throw_error("transforms::Stack: the batch has no examples");
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& e : examples) {
      data.push_back(std::move(e.data));
      targets.push_back(std::move(e.target));
    }
    return {tensor::stack(data), tensor::stack(targets)};
  }
};

/// Stacks the data of examples without targets.
template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  /// stack(data of each); an empty batch throws tensor::Error.
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    if (examples.empty()) ::tensor::detail::throw_error("transforms::Stack: the batch has no examples");
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& e : examples) data.push_back(std::move(e.data));
    return TensorExample(tensor::stack(data));
  }
};

}  // namespace transforms
}  // namespace tensor::data
