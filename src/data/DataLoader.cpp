// The batching engine (detail::BatchQueue) and data::DataLoader on top of it.
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "src/core/Check.h"
#include "src/profiler/ProfilerHooks.h"
#include "tensor/autograd/autograd.h"
#include "tensor/data.h"

namespace tensor::data {
namespace detail {

// Note [DataLoader prefetch]: an epoch fixes its index batches up front (the sampler's), so batch
// k is a pure function of k: workers claim batch numbers in increasing order, build them outside
// the lock and file them under their number; the consumer takes batch k, k+1, ... in order. A
// worker may only claim batch j while j < consumed + prefetch, which bounds the batches held
// (ready or in construction) to `prefetch`, plus the one the consumer holds. Which worker built a
// batch never changes its contents, so the order and the batches are the same for any number of
// workers. An exception is filed under its batch number and rethrown when the consumer gets
// there. Stopping (a new epoch, destruction) sets `stop`, wakes every worker and joins them;
// workers finish the batch they are building, which is the only wait. Both data::DataLoader and
// make_data_loader's StatelessDataLoader run their epochs on this queue.
struct BatchQueue::Impl {
  struct Slot {
    std::shared_ptr<void> batch;
    std::exception_ptr error;
  };
  Builder build;
  size_t num_batches = 0;
  size_t prefetch = 1;
  optional<std::chrono::milliseconds> timeout;
  size_t consumed = 0;  // batches handed to the consumer (or skipped) so far
  bool over = false;    // a build failed: the epoch ended there
  // Shared with the workers, under mu.
  std::mutex mu;
  std::condition_variable work_cv, ready_cv;
  size_t next_claim = 0;
  size_t handed = 0;  // `consumed` as the workers see it
  bool stop = false;
  std::map<size_t, Slot> ready;
  std::vector<std::thread> threads;

  Slot run(size_t k, size_t worker) {
    Slot slot;
    try {
      slot.batch = build(k, worker);
    } catch (...) {
      slot.error = std::current_exception();
    }
    return slot;
  }

  void worker_loop(size_t worker) {
    for (;;) {
      size_t k;
      {
        std::unique_lock<std::mutex> lock(mu);
        work_cv.wait(lock, [&] { return stop || next_claim >= num_batches || next_claim < handed + prefetch; });
        if (stop || next_claim >= num_batches) return;
        k = next_claim++;
      }
      // A profile that started after this worker did records its ops too (Note [Profiler threads]).
      if (__builtin_expect(profiler::detail::active(), 0)) profiler::detail::thread_buffer();
      Slot slot = run(k, worker);
      {
        std::lock_guard<std::mutex> lock(mu);
        ready.emplace(k, std::move(slot));
      }
      ready_cv.notify_all();
    }
  }

  void join() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (auto& t : threads) t.join();
    threads.clear();
  }
};

BatchQueue::BatchQueue(size_t first, size_t num_batches, size_t workers, size_t prefetch, Builder build,
                       optional<std::chrono::milliseconds> timeout)
    : impl_(std::make_unique<Impl>()) {
  TENSOR_CHECK(first <= num_batches, "DataLoader: seek to batch {} of an epoch of only {} batches", first, num_batches);
  impl_->build = std::move(build);
  impl_->num_batches = num_batches;
  impl_->prefetch = std::max<size_t>(prefetch, 1);
  impl_->timeout = timeout;
  // Skipping is starting the claim and consume counters at `first`: batch k is a function of k
  // alone, so nothing before it is built.
  impl_->consumed = impl_->next_claim = impl_->handed = first;
  for (size_t w = 0; w < workers && w < num_batches - first; ++w)
    impl_->threads.emplace_back(&Impl::worker_loop, impl_.get(), w);
}

BatchQueue::~BatchQueue() { impl_->join(); }

size_t BatchQueue::consumed() const { return impl_->consumed; }

std::shared_ptr<void> BatchQueue::next() {
  Impl& q = *impl_;
  // The wait for a batch (or, without workers, its building) is DataLoader.next in a profile.
  profiler::detail::ScopedRange range(profiler::detail::Kind::DataLoader, "DataLoader.next");
  if (q.over || q.consumed >= q.num_batches) return nullptr;
  const size_t k = q.consumed;
  Impl::Slot slot;
  if (q.threads.empty()) {
    slot = q.run(k, kConsumer);
  } else {
    std::unique_lock<std::mutex> lock(q.mu);
    auto has_k = [&] { return q.ready.count(k) != 0; };
    if (q.timeout) {
      if (!q.ready_cv.wait_for(lock, *q.timeout, has_k)) {
        lock.unlock();
        TENSOR_ERROR("DataLoader: batch {} was not ready within the timeout of {} ms", k, q.timeout->count());
      }
    } else {
      q.ready_cv.wait(lock, has_k);
    }
    auto it = q.ready.find(k);
    slot = std::move(it->second);
    q.ready.erase(it);
  }
  q.consumed = k + 1;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    q.handed = k + 1;
  }
  q.work_cv.notify_all();
  if (slot.error) {
    // The epoch ends at the failed batch (its workers stop now); the next epoch starts afresh.
    q.over = true;
    q.join();
    std::rethrow_exception(slot.error);
  }
  return slot.batch;
}

}  // namespace detail

struct DataLoader::Impl {
  struct Epoch {
    uint64_t id = 0;
    std::vector<size_t> order;
    size_t num_batches = 0;
    std::shared_ptr<Example<>> current;
    std::unique_ptr<detail::BatchQueue> queue;  // after `order`, which its workers read
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

  std::shared_ptr<void> build(const Epoch& e, size_t k) const {
    size_t bs = options.batch_size();
    size_t begin = k * bs, end = std::min(e.order.size(), begin + bs);
    std::vector<size_t> idx(e.order.begin() + begin, e.order.begin() + end);
    NoGradGuard no_grad;
    return std::make_shared<Example<>>(dataset->get_batch(idx));
  }

  void stop_epoch() { epoch.reset(); }

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
    size_t prefetch = options.prefetch() ? options.prefetch() : 2 * options.num_workers();
    Epoch* raw = e.get();
    e->queue = std::make_unique<detail::BatchQueue>(
        skip, e->num_batches, options.num_workers(), prefetch,
        [this, raw](size_t k, size_t) { return build(*raw, k); }, options.timeout());
    epoch = std::move(e);
    advance();
  }

  // Makes the next batch the current one, or ends the epoch.
  void advance() {
    epoch->current.reset();
    epoch->current = std::static_pointer_cast<Example<>>(epoch->queue->next());
  }

  bool at_end(uint64_t id) const { return !epoch || epoch->id != id || !epoch->current; }
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

Example<>& DataLoader::Iterator::operator*() const {
  TENSOR_CHECK(!loader_->impl_->at_end(epoch_),
               "DataLoader::Iterator: dereferencing an iterator past the end of its epoch (or of an epoch that a "
               "later begin() replaced)");
  return *loader_->impl_->epoch->current;
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
