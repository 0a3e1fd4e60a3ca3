// Data loaders: DataLoaderOptions, and libtorch's make_data_loader over a dataset and a sampler
// (StatelessDataLoader). Both loaders build batches on the same prefetching engine
// (detail::BatchQueue, Note [DataLoader prefetch] in src/data/DataLoader.cpp).
//
//   auto loader = data::make_data_loader<data::samplers::SequentialSampler>(std::move(ds), 64);
//   for (auto& batch : *loader) step(batch.data, batch.target);
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/autograd/autograd.h"
#include "tensor/core/Error.h"
#include "tensor/data/datasets.h"
#include "tensor/data/samplers.h"
#include "tensor/optional.h"

namespace tensor::data {

/// Data loader settings, chainable: `DataLoaderOptions(64).workers(2).drop_last(true)`. An
/// integer converts to the options of that batch size, so `make_data_loader(ds, 64)` works.
struct DataLoaderOptions {
  /* implicit */ DataLoaderOptions(size_t batch_size = 1) : batch_size_(batch_size) {}
  /// Samples per batch (>= 1).
  DataLoaderOptions& batch_size(size_t v) { batch_size_ = v; return *this; }
  /// data::DataLoader only: a new random order every epoch (RandomSampler(seed)); else in order.
  /// make_data_loader's order is its sampler's, and it rejects shuffle(true).
  DataLoaderOptions& shuffle(bool v) { shuffle_ = v; return *this; }
  /// Drop the last batch of an epoch when it has fewer than batch_size samples.
  DataLoaderOptions& drop_last(bool v) { drop_last_ = v; return *this; }
  /// Background threads that build batches ahead of the consumer; 0 builds each batch in the
  /// consumer's thread when it is requested. The batches and their order do not depend on it.
  DataLoaderOptions& num_workers(size_t v) { num_workers_ = v; return *this; }
  /// libtorch's spelling of num_workers.
  DataLoaderOptions& workers(size_t v) { return num_workers(v); }
  /// At most this many batches are built ahead of the consumer (bounded memory); 0 means
  /// 2 * num_workers.
  DataLoaderOptions& prefetch(size_t v) { prefetch_ = v; return *this; }
  /// libtorch's spelling of prefetch.
  DataLoaderOptions& max_jobs(size_t v) { return prefetch(v); }
  /// The longest the consumer waits for a worker's next batch before tensor::Error (no limit
  /// unless set).
  DataLoaderOptions& timeout(std::chrono::milliseconds v) { timeout_ = v; return *this; }
  /// Accepted for libtorch code; batches always arrive in order (the order never depends on the
  /// workers), which is what enforce_ordering(true) asks for and one valid result of false.
  DataLoaderOptions& enforce_ordering(bool v) { enforce_ordering_ = v; return *this; }
  /// data::DataLoader only: seed of the shuffling order.
  DataLoaderOptions& seed(uint64_t v) { seed_ = v; return *this; }

  size_t batch_size() const { return batch_size_; }
  bool shuffle() const { return shuffle_; }
  bool drop_last() const { return drop_last_; }
  size_t num_workers() const { return num_workers_; }
  size_t workers() const { return num_workers_; }
  size_t prefetch() const { return prefetch_; }
  /// The prefetch limit if set (libtorch: defaults to 2 * workers).
  optional<size_t> max_jobs() const { return prefetch_ ? optional<size_t>(prefetch_) : nullopt; }
  optional<std::chrono::milliseconds> timeout() const { return timeout_; }
  bool enforce_ordering() const { return enforce_ordering_; }
  uint64_t seed() const { return seed_; }

 private:
  size_t batch_size_;
  bool shuffle_ = false;
  bool drop_last_ = false;
  size_t num_workers_ = 0;
  size_t prefetch_ = 0;
  optional<std::chrono::milliseconds> timeout_;
  bool enforce_ordering_ = true;
  uint64_t seed_ = 0;
};

namespace detail {

/// One epoch's batches 0 .. num_batches - 1 (starting at `first`), built by `build(k, worker)` in
/// `workers` threads at most `prefetch` batches ahead of the consumer, or in the consumer's
/// thread (worker == kConsumer) when workers is 0; handed out strictly in order. The engine of
/// both data loaders (Note [DataLoader prefetch] in src/data/DataLoader.cpp).
class TENSOR_API BatchQueue {
 public:
  static constexpr size_t kConsumer = static_cast<size_t>(-1);
  using Builder = std::function<std::shared_ptr<void>(size_t batch, size_t worker)>;

  BatchQueue(size_t first, size_t num_batches, size_t workers, size_t prefetch, Builder build,
             optional<std::chrono::milliseconds> timeout = nullopt);
  /// Stops the workers and joins them (they finish the batch they are building).
  ~BatchQueue();
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;

  /// Batch `consumed()`, or null when the epoch is over. A build's exception is rethrown here
  /// when its batch is reached, after which the queue is over (its workers stopped).
  std::shared_ptr<void> next();
  /// Batches handed out (or skipped by `first`) so far.
  size_t consumed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace detail

/// libtorch's data loader over a (stateless) dataset and a sampler, as make_data_loader returns
/// it. Every begin() (every range-for) resets the sampler and runs one epoch: the sampler's
/// index batches (the last dropped if short and drop_last), each turned into a batch by the
/// dataset's get_batch. Batches are `Dataset::BatchType`: `std::vector<Example<>>` for a
/// Dataset<Self>, `Example<>` after `.map(transforms::Stack<>())`. With workers, each worker has
/// its own copy of the dataset (as in libtorch; a non-copyable dataset is shared, and its
/// get_batch must then be thread-safe). Batches are built under NoGradGuard, always delivered in
/// order, and identical for any number of workers; a build's exception reaches the consumer at
/// its batch. Starting a new epoch or destroying the loader mid-epoch stops the old workers.
template <typename Dataset, typename Sampler = samplers::RandomSampler>
class StatelessDataLoader {
  using Traits = datasets::detail::dataset_traits<Dataset>;

 public:
  using BatchType = typename Traits::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  /// Owns `dataset` and `sampler`.
  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : options_(std::move(options)), sampler_(std::move(sampler)) {
    if (options_.batch_size() == 0) ::tensor::detail::throw_error("make_data_loader: batch_size must be at least 1 (got 0)");
    if (options_.shuffle())
      ::tensor::detail::throw_error(
          "make_data_loader: DataLoaderOptions::shuffle() chooses data::DataLoader's order; make_data_loader's "
          "order is its sampler's (samplers::RandomSampler by default, samplers::SequentialSampler for in order)");
    if constexpr (std::is_copy_constructible_v<Dataset>) {
      for (size_t w = 0; w < options_.workers(); ++w) worker_datasets_.push_back(std::make_unique<Dataset>(dataset));
    }
    dataset_ = std::make_unique<Dataset>(std::move(dataset));
  }

  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;
  ~StatelessDataLoader() { join(); }

  /// An input iterator over the batches of the current epoch.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = BatchType;
    using difference_type = std::ptrdiff_t;
    using pointer = BatchType*;
    using reference = BatchType&;

    /// The current batch.
    BatchType& operator*() const {
      if (loader_->at_end(epoch_))
        ::tensor::detail::throw_error("DataLoader iterator: dereferencing an iterator past the end of its epoch");
      return *loader_->current_;
    }
    BatchType* operator->() const { return &**this; }
    /// Fetches the next batch (waiting for the workers; rethrowing their exceptions).
    Iterator& operator++() {
      if (loader_->at_end(epoch_))
        ::tensor::detail::throw_error("DataLoader iterator: incrementing an iterator past the end of its epoch");
      loader_->advance();
      return *this;
    }
    bool operator==(const Iterator& o) const {
      bool a = loader_->at_end(epoch_), b = o.loader_->at_end(o.epoch_);
      if (a || b) return a == b;
      return loader_ == o.loader_ && epoch_ == o.epoch_;
    }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    friend class StatelessDataLoader;
    Iterator(StatelessDataLoader* loader, uint64_t epoch) : loader_(loader), epoch_(epoch) {}
    StatelessDataLoader* loader_;
    uint64_t epoch_;
  };

  /// Resets the sampler, starts the next epoch (stopping an unfinished one) and returns its first batch.
  Iterator begin() {
    join();
    sampler_.reset(nullopt);
    requests_.clear();
    while (auto request = sampler_.next(options_.batch_size())) {
      if (request->size() < options_.batch_size() && options_.drop_last()) break;
      requests_.push_back(std::move(*request));
    }
    ++epoch_;
    size_t prefetch = options_.prefetch() ? options_.prefetch() : 2 * options_.workers();
    queue_ = std::make_unique<detail::BatchQueue>(
        0, requests_.size(), options_.workers(), prefetch,
        [this](size_t k, size_t worker) -> std::shared_ptr<void> {
          NoGradGuard no_grad;
          Dataset& d = worker < worker_datasets_.size() ? *worker_datasets_[worker] : *dataset_;
          return std::make_shared<BatchType>(Traits::get_batch(d, BatchRequestType(requests_[k])));
        },
        options_.timeout());
    advance();
    return Iterator(this, epoch_);
  }
  /// The iterator every epoch's iterator equals once its batches are done.
  Iterator end() { return Iterator(this, UINT64_MAX); }

  /// Stops the current epoch's workers and joins them.
  void join() {
    queue_.reset();
    current_.reset();
  }
  /// The options the loader was made with.
  const DataLoaderOptions& options() const noexcept { return options_; }
  /// The loader's sampler (e.g. to set_epoch a distributed sampler between epochs).
  Sampler& sampler() noexcept { return sampler_; }

 private:
  void advance() {
    current_.reset();
    if (!queue_) return;
    current_ = std::static_pointer_cast<BatchType>(queue_->next());
  }
  bool at_end(uint64_t epoch) const { return epoch != epoch_ || !current_; }

  DataLoaderOptions options_;
  Sampler sampler_;
  std::unique_ptr<Dataset> dataset_;
  std::vector<std::unique_ptr<Dataset>> worker_datasets_;
  std::vector<BatchRequestType> requests_;
  uint64_t epoch_ = 0;
  std::shared_ptr<BatchType> current_;
  std::unique_ptr<detail::BatchQueue> queue_;  // last: destroyed (workers joined) first
};

/// A data loader for `dataset` with `sampler` (libtorch's make_data_loader).
template <typename Dataset, typename Sampler,
          typename = std::enable_if_t<!datasets::detail::dataset_traits<Dataset>::is_stateful>>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, Sampler sampler,
                                                                        DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

/// A data loader for `dataset` with a Sampler made from the dataset's size: by default a
/// samplers::RandomSampler (as libtorch); `make_data_loader<samplers::SequentialSampler>(...)`
/// for in order. `options` may be a batch size. The dataset must know its size.
template <typename Sampler = samplers::RandomSampler, typename Dataset,
          typename = std::enable_if_t<!datasets::detail::dataset_traits<Dataset>::is_stateful &&
                                      std::is_constructible_v<Sampler, size_t>>>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                        DataLoaderOptions options = DataLoaderOptions()) {
  const optional<size_t> size = datasets::detail::dataset_traits<Dataset>::size(dataset);
  if (!size) ::tensor::detail::throw_error("make_data_loader: the dataset's size() is nullopt, but a sampler needs it");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

}  // namespace tensor::data
