// DataLoader: batches of a Dataset, built in the consumer's thread or by prefetching workers.
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/data.h"

namespace tensor::data {

// Note [DataLoader prefetch]: an epoch fixes its index order up front (the sampler's), so batch k
// is a pure function of k: workers claim batch numbers in increasing order, build them outside
// the lock and file them under their number; the consumer takes batch k, k+1, ... in order. A
// worker may only claim batch j while j < consumed + prefetch, which bounds the batches held
// (ready or in construction) to `prefetch`, plus the one the consumer holds. Which worker built a
// batch never changes its contents, so the order and the batches are the same for any number of
// workers. An exception is filed under its batch number and rethrown when the consumer gets
// there. Stopping (a new epoch, destruction) sets `stop`, wakes every worker and joins them;
// workers finish the batch they are building, which is the only wait.
struct DataLoader::Impl {
  struct Slot {
    Example batch;
    std::exception_ptr error;
  };
  struct Epoch {
    uint64_t id = 0;
    std::vector<size_t> order;
    size_t num_batches = 0;
    size_t consumed = 0;  // batches handed to the consumer (or skipped by seek) so far
    bool has_current = false;
    Example current;
    // Shared with the workers, under mu.
    std::mutex mu;
    std::condition_variable work_cv, ready_cv;
    size_t next_claim = 0;
    bool stop = false;
    std::map<size_t, Slot> ready;
    std::vector<std::thread> threads;
  };

  std::shared_ptr<Dataset> dataset;
  std::shared_ptr<Sampler> sampler;
  DataLoaderOptions options;
  uint64_t epochs_started = 0;
  size_t first_batch = 0;  // where the next epoch starts (seek); batches before it are never built
  std::unique_ptr<Epoch> epoch;

  size_t num_batches(size_t n) const {
    size_t bs = options.batch_size();
    return options.drop_last() ? n / bs : (n + bs - 1) / bs;
  }

  Example build(const Epoch& e, size_t k) const {
    size_t bs = options.batch_size();
    size_t begin = k * bs, end = std::min(e.order.size(), begin + bs);
    std::vector<size_t> idx(e.order.begin() + begin, e.order.begin() + end);
    NoGradGuard no_grad;
    return dataset->get_batch(idx);
  }

  void worker(Epoch* e) {
    for (;;) {
      size_t k;
      {
        std::unique_lock<std::mutex> lock(e->mu);
        size_t window = prefetch();
        e->work_cv.wait(lock, [&] {
          return e->stop || e->next_claim >= e->num_batches || e->next_claim < e->consumed + window;
        });
        if (e->stop || e->next_claim >= e->num_batches) return;
        k = e->next_claim++;
      }
      Slot slot;
      try {
        slot.batch = build(*e, k);
      } catch (...) {
        slot.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(e->mu);
        e->ready.emplace(k, std::move(slot));
      }
      e->ready_cv.notify_all();
    }
  }

  size_t prefetch() const {
    size_t p = options.prefetch() ? options.prefetch() : 2 * options.num_workers();
    return std::max<size_t>(p, 1);
  }

  static void join_workers(Epoch& e) {
    {
      std::lock_guard<std::mutex> lock(e.mu);
      e.stop = true;
    }
    e.work_cv.notify_all();
    for (auto& t : e.threads) t.join();
    e.threads.clear();
  }

  void stop_epoch() {
    if (!epoch) return;
    join_workers(*epoch);
    epoch.reset();
  }

  void start_epoch() {
    stop_epoch();
    auto e = std::make_unique<Epoch>();
    e->id = epochs_started++;
    size_t n = dataset->size();
    e->order = sampler->indices(n, e->id);
    for (size_t i : e->order)
      TENSOR_CHECK(i < n, "DataLoader: the sampler returned index {} for a dataset of {} samples", i, n);
    e->num_batches = num_batches(e->order.size());
    const size_t skip = std::exchange(first_batch, 0);
    TENSOR_CHECK(skip <= e->num_batches, "DataLoader: seek to batch {} of epoch {}, which has only {} batches", skip,
                 e->id, e->num_batches);
    // Skipping is starting the claim and consume counters at `skip`: batch k's indices are a
    // function of k alone (Note [DataLoader prefetch]), so nothing before it is built.
    e->consumed = e->next_claim = skip;
    epoch = std::move(e);
    for (size_t w = 0; w < options.num_workers() && w < epoch->num_batches - epoch->consumed; ++w)
      epoch->threads.emplace_back(&Impl::worker, this, epoch.get());
    advance();
  }

  // Makes batch `consumed` the current one, or ends the epoch.
  void advance() {
    Epoch& e = *epoch;
    e.has_current = false;
    e.current = Example();
    if (e.consumed >= e.num_batches) return;
    size_t k = e.consumed;
    Slot slot;
    if (e.threads.empty()) {
      try {
        slot.batch = build(e, k);
      } catch (...) {
        slot.error = std::current_exception();
      }
    } else {
      std::unique_lock<std::mutex> lock(e.mu);
      e.ready_cv.wait(lock, [&] { return e.ready.count(k) != 0; });
      auto it = e.ready.find(k);
      slot = std::move(it->second);
      e.ready.erase(it);
    }
    {
      std::lock_guard<std::mutex> lock(e.mu);
      e.consumed = k + 1;
    }
    e.work_cv.notify_all();
    if (slot.error) {
      // The epoch ends at the failed batch (its workers stop now); the next begin() starts afresh.
      join_workers(e);
      std::rethrow_exception(slot.error);
    }
    e.current = std::move(slot.batch);
    e.has_current = true;
  }

  bool at_end(uint64_t id) const { return !epoch || epoch->id != id || !epoch->has_current; }
};

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : DataLoader(dataset, options.shuffle() ? std::shared_ptr<Sampler>(std::make_shared<RandomSampler>(options.seed()))
                                            : std::shared_ptr<Sampler>(std::make_shared<SequentialSampler>()),
                 options) {}

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler, DataLoaderOptions options)
    : impl_(std::make_unique<Impl>()) {
  TENSOR_CHECK(dataset != nullptr, "DataLoader: the dataset is null");
  TENSOR_CHECK(sampler != nullptr, "DataLoader: the sampler is null");
  TENSOR_CHECK(options.batch_size() >= 1, "DataLoader: batch_size must be at least 1 (got 0)");
  impl_->dataset = std::move(dataset);
  impl_->sampler = std::move(sampler);
  impl_->options = options;
}

DataLoader::~DataLoader() { impl_->stop_epoch(); }

DataLoader::Iterator DataLoader::begin() {
  impl_->start_epoch();
  return Iterator(this, impl_->epoch->id);
}

DataLoader::Iterator DataLoader::end() { return Iterator(this, UINT64_MAX); }

size_t DataLoader::size() const { return impl_->num_batches(impl_->dataset->size()); }
uint64_t DataLoader::epoch() const { return impl_->epochs_started; }
const DataLoaderOptions& DataLoader::options() const { return impl_->options; }
Dataset& DataLoader::dataset() const { return *impl_->dataset; }

void DataLoader::seek(uint64_t epoch, size_t batch) {
  impl_->stop_epoch();
  impl_->epochs_started = epoch;
  impl_->first_batch = batch;
}

Example& DataLoader::Iterator::operator*() const {
  TENSOR_CHECK(!loader_->impl_->at_end(epoch_),
               "DataLoader::Iterator: dereferencing an iterator past the end of its epoch (or of an epoch that a "
               "later begin() replaced)");
  return loader_->impl_->epoch->current;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  TENSOR_CHECK(!loader_->impl_->at_end(epoch_),
               "DataLoader::Iterator: incrementing an iterator past the end of its epoch (or of an epoch that a later "
               "begin() replaced)");
  loader_->impl_->advance();
  return *this;
}

bool DataLoader::Iterator::operator==(const Iterator& o) const {
  bool end_a = loader_->impl_->at_end(epoch_), end_b = o.loader_->impl_->at_end(o.epoch_);
  if (end_a || end_b) return end_a == end_b;
  return loader_ == o.loader_ && epoch_ == o.epoch_;
}

}  // namespace tensor::data
