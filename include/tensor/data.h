// tensor::data: datasets, samplers and data loaders with background prefetch (docs/io_data.md).
// Two spellings share one batching engine:
//  - libtorch's (tensor/data/datasets.h, samplers.h, dataloader.h): CRTP datasets::Dataset<Self>,
//    .map(transforms::...), data::samplers::*, make_data_loader;
//  - libtensor's (this file): a virtual data::Dataset, data::DataLoader with shuffle/seed options,
//    deterministic seek() for resuming, and datasets::MNIST (which also has .map()).
//
//   auto train = std::make_shared<data::datasets::MNIST>("/data/mnist", /*train=*/true);
//   data::DataLoader loader(train, data::DataLoaderOptions(64).shuffle(true).num_workers(2).seed(0));
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (data::Example<>& batch : loader)   // batch.data [64, 1, 28, 28] float32, batch.target [64] int64
//       train_step(batch.data, batch.target);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/data/dataloader.h"
#include "tensor/data/datasets.h"
#include "tensor/data/example.h"
#include "tensor/data/samplers.h"
#include "tensor/optional.h"

namespace tensor::data {

// libtorch's torch/data.h brings datasets::BatchDataset and datasets::Dataset into torch::data.
// BatchDataset is brought here too; Dataset is not: data::Dataset is libtensor's virtual dataset
// below, so libtorch's data::Dataset<Self> is spelled data::datasets::Dataset<Self> here.
using datasets::BatchDataset;

/// A map-style dataset: `size()` samples, sample i from `get(i)`. With DataLoader workers, get()
/// and get_batch() are called from several threads at once and must be thread-safe.
class TENSOR_API Dataset {
 public:
  virtual ~Dataset();
  /// Sample `index` (0 <= index < size()).
  virtual Example<> get(size_t index) = 0;
  /// The number of samples.
  virtual size_t size() const = 0;
  /// The samples at `indices`, stacked along a new dim 0 (data [B, ...], target [B, ...]).
  /// The default stacks get(i); datasets held in one tensor override it with index_select.
  virtual Example<> get_batch(const std::vector<size_t>& indices);
};

/// A dataset over two tensors whose dim 0 indexes the samples: sample i is {data[i], target[i]}.
class TENSOR_API TensorDataset : public Dataset, public datasets::Mappable<TensorDataset> {
 public:
  /// `data` and `target` must have the same size along dim 0.
  TensorDataset(Tensor data, Tensor target);
  Example<> get(size_t index) override;
  size_t size() const override;
  Example<> get_batch(const std::vector<size_t>& indices) override;
  const Tensor& data() const { return data_; }
  const Tensor& target() const { return target_; }

 private:
  Tensor data_, target_;
};

/// Chooses the order in which a DataLoader visits the samples of each epoch.
class TENSOR_API Sampler {
 public:
  virtual ~Sampler();
  /// The sample indices of epoch `epoch` (0, 1, 2, ...) over a dataset of `size` samples, in order.
  virtual std::vector<size_t> indices(size_t size, uint64_t epoch) = 0;
};

/// 0, 1, ..., size - 1 every epoch.
class TENSOR_API SequentialSampler : public Sampler {
 public:
  std::vector<size_t> indices(size_t size, uint64_t epoch) override;
};

/// A fresh random permutation every epoch, a pure function of (seed, epoch): the same seed gives
/// the same sequence of epochs on every run, machine and worker count. Independent of
/// tensor::manual_seed.
class TENSOR_API RandomSampler : public Sampler {
 public:
  explicit RandomSampler(uint64_t seed = 0) : seed_(seed) {}
  std::vector<size_t> indices(size_t size, uint64_t epoch) override;
  uint64_t seed() const { return seed_; }

 private:
  uint64_t seed_;
};

/// Iterates a Dataset in batches: `for (data::Example<>& batch : loader)` runs one epoch; every
/// range-for (every begin()) starts the next epoch, whose order the sampler chooses. Starting a
/// new epoch, or destroying the loader, mid-epoch stops and joins the workers of the old one.
/// An exception thrown by the dataset while building batch k is rethrown to the consumer when it
/// reaches batch k. Batches are built under NoGradGuard. One consumer thread at a time.
class TENSOR_API DataLoader {
 public:
  /// Uses options.shuffle() to choose RandomSampler(options.seed()) or SequentialSampler.
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});
  /// With an explicit sampler (options.shuffle() is then ignored).
  DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  class Iterator;
  /// Starts the next epoch (stopping an unfinished one) and returns its first batch.
  Iterator begin();
  Iterator end();
  /// Batches per epoch.
  size_t size() const;
  /// Epochs started so far (after seek(e, b), e until the next begin()).
  uint64_t epoch() const;
  /// Makes the next begin() run epoch `epoch` (numbered as the sampler numbers them: 0, 1, ...)
  /// from its batch `batch` on, without building batches 0 .. batch - 1; the epochs after it are
  /// epoch + 1, epoch + 2, ... A run resumed from a checkpoint taken after `batch` batches of
  /// `epoch` thus gets the batches an uninterrupted run would have got, in the same order, given
  /// the same dataset, sampler, batch_size and drop_last. Stops an unfinished epoch. begin()
  /// throws tensor::Error if `batch` is beyond the epoch's number of batches; `batch` equal to
  /// it gives an epoch with no batches left.
  void seek(uint64_t epoch, size_t batch = 0);
  const DataLoaderOptions& options() const;
  Dataset& dataset() const;

  /// An input iterator over the batches of the current epoch.
  class TENSOR_API Iterator {
   public:
    Example<>& operator*() const;
    Example<>* operator->() const { return &**this; }
    /// Fetches the next batch (waiting for the workers; rethrowing their exceptions).
    Iterator& operator++();
    bool operator==(const Iterator& o) const;
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    friend class DataLoader;
    Iterator(DataLoader* loader, uint64_t epoch) : loader_(loader), epoch_(epoch) {}
    DataLoader* loader_;
    uint64_t epoch_;
  };

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Reads an IDX file (the MNIST format; big-endian; gzipped or not) into a tensor of its element
/// type (ubyte -> uint8, sbyte -> int8, short -> int16, int -> int32, float -> float32,
/// double -> float64) and shape. A missing, truncated or corrupt file throws tensor::Error.
TENSOR_API Tensor read_idx(const std::string& path);

namespace datasets {

/// MNIST-format image classification data (MNIST, Fashion-MNIST, KMNIST, ...) from IDX files in
/// `root`: train-images-idx3-ubyte and train-labels-idx1-ubyte (or t10k-* when not training),
/// each optionally gzipped with a ".gz" suffix. Images become float32 [N, 1, H, W] scaled to
/// [0, 1]; labels int64 [N]. get(i) gives {image [1, H, W], label (0-dim)}. As in libtorch,
/// `MNIST(root).map(transforms::Normalize<>(0.1307, 0.3081)).map(transforms::Stack<>())` feeds
/// make_data_loader (a map reads the samples one by one with get(i)); data::DataLoader reads
/// whole batches with get_batch.
class TENSOR_API MNIST : public data::Dataset, public Mappable<MNIST> {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, bool train = true);
  MNIST(const std::string& root, Mode mode) : MNIST(root, mode == Mode::kTrain) {}
  Example<> get(size_t index) override;
  size_t size() const override;
  Example<> get_batch(const std::vector<size_t>& indices) override;
  bool is_train() const { return train_; }
  /// All images, float32 [N, 1, H, W].
  const Tensor& images() const { return images_; }
  /// All labels, int64 [N].
  const Tensor& targets() const { return targets_; }

 private:
  bool train_;
  Tensor images_, targets_;
};

}  // namespace datasets
}  // namespace tensor::data
