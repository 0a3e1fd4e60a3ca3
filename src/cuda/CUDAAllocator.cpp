// The CUDA caching allocator (Note [CUDA caching allocator]) and the caching pinned host
// allocator (Note [Pinned host memory]).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"

namespace tensor {

// Note [CUDA caching allocator]
// cudaMalloc and cudaFree are slow (cudaFree synchronizes the device), so freed memory is kept
// and reused. Per device there are two pools: requests up to kSmallSize are carved out of
// kSmallBuffer segments, larger ones out of segments rounded up to kRoundLarge. A request takes
// the smallest cached block of its pool and stream that fits (best fit), and splits off the
// rest when it is worth keeping; a freed block is merged with free neighbours of the same
// segment, so a segment that is entirely free is again one block and can go back to the driver.
// Blocks belong to the stream they were allocated on and are only reused on it: work on that
// stream is ordered, so a block freed while kernels on its stream still use it can be handed
// out again at once. Use on other streams is declared with record_stream (Note [record_stream]).
// When cudaMalloc runs out of memory, the allocator waits for the blocks held back by
// record_stream, frees every whole cached segment and retries once before raising.
//
// Note [record_stream]
// A block used by a stream other than its own (a tensor allocated on stream A, read by a kernel
// on stream B) must not be reused on A until B's work is done, which A's ordering does not
// imply. Tensor::record_stream(B) adds B to the live block's stream_uses. When such a block is
// freed, an event is recorded on each of those streams and the block waits in `pending_` (still
// marked allocated, so neither reused nor merged); it returns to its pool once all its events
// have completed. Completed events are collected (cudaEventQuery, no waiting) at the start of
// every malloc; the out-of-memory path and empty_cache wait for them all, as libtorch does.
// Events come from a per-device pool: cudaEventCreate on every free would be slow.
// The free path runs in storage deleters, which must not throw (and at exit may run after the
// CUDA runtime is gone). If recording an event fails, the host waits for that stream instead
// (cudaStreamSynchronize): slower, still correct. If that fails too, CUDA is unusable (a sticky
// error, or the runtime unloading), and the block is never returned to the pool: reusing memory
// that a stream may still touch would be a silent data race, while keeping it only costs
// memory in a context that is broken anyway.
namespace {

constexpr size_t kMinBlockSize = 512;             // sizes are rounded up to a multiple of this
constexpr size_t kSmallSize = size_t(1) << 20;    // largest request served by the small pool
constexpr size_t kSmallBuffer = size_t(2) << 20;  // segment size of the small pool
constexpr size_t kRoundLarge = size_t(2) << 20;   // large segments are multiples of this

struct BlockPool;

struct Block {
  Block(int device_, cudaStream_t stream_, size_t size_, void* ptr_, BlockPool* pool_)
      : device(device_), stream(stream_), size(size_), ptr(ptr_), pool(pool_) {}
  int device;
  cudaStream_t stream;
  size_t size;
  void* ptr;
  BlockPool* pool;
  Block* prev = nullptr;  // neighbours within the same cudaMalloc segment
  Block* next = nullptr;
  bool allocated = false;                 // handed out, or freed but waiting for events
  int event_count = 0;                    // events to complete before it returns to the pool
  std::vector<cudaStream_t> stream_uses;  // other streams that used it (record_stream)

  bool is_segment() const { return prev == nullptr && next == nullptr; }
};

// Ordered by (stream, size, address): lower_bound finds the best fit on a stream.
struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return reinterpret_cast<uintptr_t>(a->stream) < reinterpret_cast<uintptr_t>(b->stream);
    if (a->size != b->size) return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};

struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  std::set<Block*, BlockLess> blocks;  // free blocks only
  bool is_small;
};

size_t round_size(size_t n) { return n < kMinBlockSize ? kMinBlockSize : (n + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize; }

size_t segment_size(size_t size) {
  return size <= kSmallSize ? kSmallBuffer : (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

std::string human_bytes(size_t n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", v, units[u]);
}

// Makes `device` current for a scope without throwing: the free paths run in deleters. ok() is
// false when CUDA could not even be asked (then nothing may be recorded).
class QuietDeviceGuard {
 public:
  explicit QuietDeviceGuard(int device) {
    ok_ = cudaGetDevice(&prev_) == cudaSuccess && (prev_ == device || cudaSetDevice(device) == cudaSuccess);
    if (!ok_) (void)cudaGetLastError();
    changed_ = ok_ && prev_ != device;
  }
  ~QuietDeviceGuard() {
    if (changed_ && cudaSetDevice(prev_) != cudaSuccess) (void)cudaGetLastError();
  }
  QuietDeviceGuard(const QuietDeviceGuard&) = delete;
  QuietDeviceGuard& operator=(const QuietDeviceGuard&) = delete;
  bool ok() const { return ok_; }

 private:
  int prev_ = -1;
  bool ok_ = false;
  bool changed_ = false;
};

// Cached cudaEvents of one device (Note [record_stream]); the owner's mutex guards it.
class EventPool {
 public:
  // An event of the current device, or null when one cannot be created. Never throws.
  cudaEvent_t take() {
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return e;
  }
  // Takes back an event; it may still be pending (re-recording an event is allowed).
  void give(cudaEvent_t e) { free_.push_back(e); }

 private:
  std::vector<cudaEvent_t> free_;
};

// Records an event of `events` (the current device's) on each stream, all of the current device,
// for a block used there. Returns false when neither an event nor a host wait could make some
// use safe (Note [record_stream]); `recorded` receives the (stream, event) pairs. Never throws.
bool record_uses(EventPool& events, const std::vector<cudaStream_t>& streams,
                 std::vector<std::pair<cudaStream_t, cudaEvent_t>>& recorded) {
  for (cudaStream_t s : streams) {
    cudaEvent_t e = events.take();
    if (e != nullptr && cudaEventRecord(e, s) == cudaSuccess) {
      recorded.emplace_back(s, e);
      continue;
    }
    (void)cudaGetLastError();
    if (e != nullptr) events.give(e);
    if (cudaStreamSynchronize(s) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
  }
  return true;
}

// One device's pools and statistics. The caller makes the device current before malloc and
// empty_cache; free sets it itself when it records events (it runs in deleters, on any thread).
class DeviceCachingAllocator {
 public:
  explicit DeviceCachingAllocator(int device) : device_(device), small_(true), large_(false) {}

  Block* malloc(size_t nbytes, cudaStream_t stream) {
    std::lock_guard<std::mutex> g(mu_);
    // Refuse sizes whose rounding would overflow; cudaMalloc could never satisfy them anyway.
    if (nbytes > SIZE_MAX - kRoundLarge) throw_oom(nbytes, cudaErrorMemoryAllocation);
    if (!pending_.empty()) process_events();
    size_t size = round_size(nbytes);
    BlockPool& pool = size <= kSmallSize ? small_ : large_;
    cudaError_t err = cudaSuccess;
    Block* b = take_cached(pool, size, stream);
    if (b == nullptr) b = alloc_segment(pool, size, stream, err);
    if (b == nullptr) {
      // Out of memory: wait for the blocks record_stream holds back (one may fit), then give
      // every whole cached segment back to the driver and try once more.
      synchronize_and_free_events();
      b = take_cached(pool, size, stream);
      if (b == nullptr) {
        release_cached();
        b = alloc_segment(pool, size, stream, err);
      }
      if (b == nullptr) throw_oom(nbytes, err);
    }
    split(b, size);
    b->allocated = true;
    active_.emplace(b->ptr, b);
    stats_.allocated_bytes += b->size;
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
    ++stats_.num_alloc_calls;
    return b;
  }

  // Called from storage deleters: never throws (Note [record_stream]).
  void free(Block* b) noexcept {
    std::lock_guard<std::mutex> g(mu_);
    stats_.allocated_bytes -= b->size;
    active_.erase(b->ptr);
    if (!b->stream_uses.empty() && !defer_until_used(b)) return;
    if (b->event_count == 0) free_block(b);
  }

  // Adds `stream` to the uses of the live block at `ptr`. False when no live block of this
  // device starts there (memory from elsewhere).
  bool record_stream(void* ptr, cudaStream_t stream) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = active_.find(ptr);
    if (it == active_.end()) return false;
    Block* b = it->second;
    if (stream == b->stream) return true;  // its own stream orders every reuse already
    for (cudaStream_t s : b->stream_uses)
      if (s == stream) return true;
    b->stream_uses.push_back(stream);
    return true;
  }

  // Waits for the blocks held back by record_stream, then returns every whole free segment to
  // the driver.
  void empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    synchronize_and_free_events();
    release_cached();
  }

  bool has_cached() {
    std::lock_guard<std::mutex> g(mu_);
    return !small_.blocks.empty() || !large_.blocks.empty() || !pending_.empty();
  }

  cuda::MemoryStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return stats_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> g(mu_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
  }

 private:
  Block* take_cached(BlockPool& pool, size_t size, cudaStream_t stream) {
    Block key(device_, stream, size, nullptr, &pool);
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
    Block* b = *it;
    pool.blocks.erase(it);
    return b;
  }

  // A new segment holding `size`, or null when the device is out of memory (err says how).
  Block* alloc_segment(BlockPool& pool, size_t size, cudaStream_t stream, cudaError_t& err) {
    size_t seg = segment_size(size);
    ++stats_.num_cuda_malloc_calls;
    void* ptr = nullptr;
    err = cudaMalloc(&ptr, seg);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    if (err != cudaSuccess) cuda_detail::throw_cuda_error("cudaMalloc", err);
    stats_.reserved_bytes += seg;
    if (stats_.reserved_bytes > stats_.peak_reserved_bytes) stats_.peak_reserved_bytes = stats_.reserved_bytes;
    return new Block(device_, stream, seg, ptr, &pool);
  }

  // Splits the tail off `b` when it is big enough to be useful: any remainder in the small
  // pool, only more than kSmallSize in the large pool (smaller rests would fragment it).
  void split(Block* b, size_t size) {
    size_t rest = b->size - size;
    if (b->pool->is_small ? rest < kMinBlockSize : rest <= kSmallSize) return;
    Block* r = new Block(device_, b->stream, rest, static_cast<char*>(b->ptr) + size, b->pool);
    r->prev = b;
    r->next = b->next;
    if (r->next) r->next->prev = r;
    b->next = r;
    b->size = size;
    b->pool->blocks.insert(r);
  }

  // Returns a block nothing uses any more to its pool, merged with its free neighbours.
  void free_block(Block* b) {
    b->allocated = false;
    b->stream_uses.clear();
    merge(b, b->prev);
    merge(b, b->next);
    b->pool->blocks.insert(b);
  }

  // Absorbs the free neighbour `n` (b->prev or b->next) into b, which is not in the pool.
  void merge(Block* b, Block* n) {
    if (n == nullptr || n->allocated) return;
    n->pool->blocks.erase(n);
    if (n == b->prev) {
      b->ptr = n->ptr;
      b->prev = n->prev;
      if (b->prev) b->prev->next = b;
    } else {
      b->next = n->next;
      if (b->next) b->next->prev = b;
    }
    b->size += n->size;
    delete n;
  }

  // Records an event on every other stream that used b; b then waits in pending_. False when
  // b must never be reused (Note [record_stream]). Never throws.
  bool defer_until_used(Block* b) noexcept {
    QuietDeviceGuard on(device_);
    std::vector<std::pair<cudaStream_t, cudaEvent_t>> recorded;
    bool safe = on.ok() && record_uses(events_, b->stream_uses, recorded);
    b->stream_uses.clear();
    if (!safe) {
      for (auto& se : recorded) events_.give(se.second);
      return false;  // leaked on purpose: stays reserved, never reused
    }
    for (auto& se : recorded) pending_[se.first].emplace_back(se.second, b);
    b->event_count = static_cast<int>(recorded.size());
    return true;
  }

  void event_done(cudaEvent_t e, Block* b) {
    events_.give(e);
    if (--b->event_count == 0) free_block(b);
  }

  // Returns the blocks whose events have all completed, without waiting. Events of one stream
  // complete in the order they were recorded, so each queue stops at its first pending one.
  void process_events() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      auto& queue = it->second;
      while (!queue.empty()) {
        cudaError_t err = cudaEventQuery(queue.front().first);
        if (err == cudaErrorNotReady) {
          (void)cudaGetLastError();
          break;
        }
        if (err != cudaSuccess) cuda_detail::throw_cuda_error("cudaEventQuery", err);
        auto [e, b] = queue.front();
        queue.pop_front();
        event_done(e, b);
      }
      it = queue.empty() ? pending_.erase(it) : std::next(it);
    }
  }

  // Waits for every pending event and returns their blocks.
  void synchronize_and_free_events() {
    for (auto it = pending_.begin(); it != pending_.end(); it = pending_.erase(it)) {
      auto& queue = it->second;
      while (!queue.empty()) {
        cudaError_t err = cudaEventSynchronize(queue.front().first);
        if (err != cudaSuccess) cuda_detail::throw_cuda_error("cudaEventSynchronize", err);
        auto [e, b] = queue.front();
        queue.pop_front();
        event_done(e, b);
      }
    }
  }

  void release_cached() {
    for (BlockPool* pool : {&small_, &large_}) {
      for (auto it = pool->blocks.begin(); it != pool->blocks.end();) {
        Block* b = *it;
        if (!b->is_segment()) {
          ++it;
          continue;
        }
        it = pool->blocks.erase(it);
        cudaError_t err = cudaFree(b->ptr);
        stats_.reserved_bytes -= b->size;
        delete b;
        if (err != cudaSuccess) cuda_detail::throw_cuda_error("cudaFree", err);
      }
    }
  }

  [[noreturn]] void throw_oom(size_t requested, cudaError_t err) {
    (void)cudaGetLastError();
    ++stats_.num_ooms;
    size_t free_b = 0, total_b = 0;
    std::string dev_mem = cudaMemGetInfo(&free_b, &total_b) == cudaSuccess
                              ? fmt::format("{} free of {} total", human_bytes(free_b), human_bytes(total_b))
                              : std::string("unknown");
    (void)cudaGetLastError();
    TENSOR_ERROR("CUDA out of memory: tried to allocate {} bytes ({}) on cuda:{} (cudaMalloc: {}). Device memory: {}; "
                 "libtensor holds {} bytes ({}) allocated in live tensors (peak {}) and {} bytes ({}) reserved in total "
                 "(its free cache was already released and the allocation retried). Free tensors you no longer need "
                 "or use smaller sizes",
                 requested, human_bytes(requested), device_, cudaGetErrorString(err), dev_mem, stats_.allocated_bytes,
                 human_bytes(stats_.allocated_bytes), human_bytes(stats_.peak_allocated_bytes), stats_.reserved_bytes,
                 human_bytes(stats_.reserved_bytes));
  }

  std::mutex mu_;
  int device_;
  BlockPool small_;
  BlockPool large_;
  std::unordered_map<void*, Block*> active_;  // live blocks by address (record_stream)
  // Freed blocks waiting for events, per stream, in recording order (Note [record_stream]).
  std::unordered_map<cudaStream_t, std::deque<std::pair<cudaEvent_t, Block*>>> pending_;
  EventPool events_;
  cuda::MemoryStats stats_;
};

class CUDACachingAllocator final : public Allocator {
 public:
  // One allocator per visible device, built once: the deleter indexes it without locking.
  CUDACachingAllocator() {
    int n = cuda_detail::device_count();
    for (int d = 0; d < n; ++d) devices_.push_back(std::make_unique<DeviceCachingAllocator>(d));
  }

  DataPtr allocate(size_t nbytes, Device device) override {
    int d = cuda_detail::resolve_device("CUDA allocation", device);
    if (nbytes == 0) return {};
    cuda::CUDAGuard guard(d);
    Block* b = devices_[d]->malloc(nbytes, cuda_detail::current_stream(d));
    return {b->ptr, b, &free_block};
  }

  DeviceCachingAllocator& device(int d) { return *devices_[d]; }
  int num_devices() const { return static_cast<int>(devices_.size()); }

 private:
  static void free_block(void* data, void* ctx);

  std::vector<std::unique_ptr<DeviceCachingAllocator>> devices_;
};

CUDACachingAllocator& caching_allocator() {
  static auto* a = new CUDACachingAllocator();  // never destroyed: storages may die during static destruction
  return *a;
}

void CUDACachingAllocator::free_block(void*, void* ctx) {
  Block* b = static_cast<Block*>(ctx);
  caching_allocator().device(b->device).free(b);
}

// Note [Pinned host memory]
// Page-locked host memory lets copies to and from a device run asynchronously (DMA), but
// cudaHostAlloc and cudaFreeHost are slow (cudaFreeHost synchronizes), so freed blocks are
// cached and reused, as libtorch's CachingHostAllocator does. Sizes are rounded up to a power of
// two and a request only takes a cached block of exactly its size class. A non_blocking copy
// reads or writes the host block after copy_ returns, so the copy code reports each such use
// (record_host_use); when the block is freed, an event is recorded on each of those streams and
// the block is only reused once they have all completed (as Note [record_stream], with the same
// fallbacks in the free path). The address map answers "is this pointer pinned by us", also for
// a pointer into a block (a view), without asking the driver.
class CachingHostAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    if (nbytes == 0) return {};
    cuda_detail::check_index("pin_memory", -1);  // page-locking goes through the CUDA driver
    TENSOR_CHECK(nbytes <= (SIZE_MAX >> 1) + 1, "pin_memory: {} bytes cannot be page-locked", nbytes);
    size_t size = kMinHostBlock;
    while (size < nbytes) size <<= 1;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!pending_.empty()) process_events();
      if (HostBlock* b = take_cached(size)) return {b->ptr, b, &deleter};
    }
    // Pinning pages is slow: other threads keep freeing and copying meanwhile.
    void* ptr = nullptr;
    cudaError_t err = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
    std::lock_guard<std::mutex> g(mu_);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      synchronize_and_free_events();
      if (HostBlock* b = take_cached(size)) return {b->ptr, b, &deleter};
      release_cached();
      err = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
    }
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      TENSOR_ERROR("pin_memory: cudaHostAlloc of {} bytes ({} requested) failed: {}; libtensor holds {} bytes of pinned "
                   "host memory ({} in use)",
                   size, nbytes, cudaGetErrorString(err), reserved_, in_use_);
    }
    auto* b = new HostBlock(size, ptr);
    b->allocated = true;
    blocks_.emplace(reinterpret_cast<uintptr_t>(ptr), b);
    reserved_ += size;
    in_use_ += size;
    return {ptr, b, &deleter};
  }

  // Notes that the live pinned block containing `ptr` is used by work queued on `stream` (of
  // `device`). False when `ptr` is not in a live block of this allocator.
  bool record_use(const void* ptr, int device, cudaStream_t stream) {
    std::lock_guard<std::mutex> g(mu_);
    HostBlock* b = find(ptr);
    if (b == nullptr) return false;
    for (const auto& use : b->stream_uses)
      if (use.first == device && use.second == stream) return true;
    b->stream_uses.emplace_back(device, stream);
    return true;
  }

  // Waits for pending copies, then gives every cached block back to the driver.
  void empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    synchronize_and_free_events();
    release_cached();
  }

 private:
  static constexpr size_t kMinHostBlock = 512;

  struct HostBlock {
    HostBlock(size_t size_, void* ptr_) : size(size_), ptr(ptr_) {}
    size_t size;
    void* ptr;
    bool allocated = false;
    int event_count = 0;
    std::vector<std::pair<int, cudaStream_t>> stream_uses;  // (device, stream) of async copies
  };
  struct Pending {
    cudaEvent_t event;
    int device;
    HostBlock* block;
  };

  static void deleter(void*, void* ctx);

  // The most recently freed block of exactly `size` (its pages are the likeliest to be hot),
  // marked in use; null when none is cached.
  HostBlock* take_cached(size_t size) {
    auto it = free_.upper_bound(size);
    if (it == free_.begin() || std::prev(it)->first != size) return nullptr;
    --it;
    HostBlock* b = it->second;
    free_.erase(it);
    b->allocated = true;
    in_use_ += b->size;
    return b;
  }

  HostBlock* find(const void* ptr) {
    auto it = blocks_.upper_bound(reinterpret_cast<uintptr_t>(ptr));
    if (it == blocks_.begin()) return nullptr;
    HostBlock* b = std::prev(it)->second;
    uintptr_t off = reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(b->ptr);
    return b->allocated && off < b->size ? b : nullptr;
  }

  EventPool& events(int device) {
    if (static_cast<size_t>(device) >= events_.size()) events_.resize(static_cast<size_t>(device) + 1);
    return events_[static_cast<size_t>(device)];
  }

  // Never throws (Note [record_stream]).
  void free(HostBlock* b) noexcept {
    std::lock_guard<std::mutex> g(mu_);
    in_use_ -= b->size;
    if (b->stream_uses.empty()) {
      to_free_list(b);
      return;
    }
    std::vector<Pending> recorded;
    bool safe = true;
    std::vector<int> devices;
    for (const auto& use : b->stream_uses)
      if (std::find(devices.begin(), devices.end(), use.first) == devices.end()) devices.push_back(use.first);
    for (int d : devices) {
      QuietDeviceGuard on(d);
      std::vector<cudaStream_t> streams;
      for (const auto& use : b->stream_uses)
        if (use.first == d) streams.push_back(use.second);
      std::vector<std::pair<cudaStream_t, cudaEvent_t>> events_on_d;
      safe = on.ok() && record_uses(events(d), streams, events_on_d);
      for (auto& se : events_on_d) recorded.push_back({se.second, d, b});
      if (!safe) break;
    }
    b->stream_uses.clear();
    if (!safe) {
      for (const Pending& p : recorded) events(p.device).give(p.event);
      return;  // leaked on purpose: never reused
    }
    if (recorded.empty()) {
      to_free_list(b);
      return;
    }
    b->event_count = static_cast<int>(recorded.size());
    for (const Pending& p : recorded) pending_.push_back(p);
  }

  void to_free_list(HostBlock* b) {
    b->allocated = false;
    free_.emplace(b->size, b);
  }

  void event_done(const Pending& p) {
    events(p.device).give(p.event);
    if (--p.block->event_count == 0) to_free_list(p.block);
  }

  // Returns the blocks whose copies have completed, without waiting.
  void process_events() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      cudaError_t err = cudaEventQuery(it->event);
      if (err == cudaErrorNotReady) {
        (void)cudaGetLastError();
        ++it;
        continue;
      }
      if (err != cudaSuccess) cuda_detail::throw_cuda_error("cudaEventQuery", err);
      event_done(*it);
      it = pending_.erase(it);
    }
  }

  void synchronize_and_free_events() {
    while (!pending_.empty()) {
      cudaError_t err = cudaEventSynchronize(pending_.front().event);
      if (err != cudaSuccess) cuda_detail::throw_cuda_error("cudaEventSynchronize", err);
      event_done(pending_.front());
      pending_.pop_front();
    }
  }

  void release_cached() {
    while (!free_.empty()) {
      HostBlock* b = free_.begin()->second;
      free_.erase(free_.begin());
      blocks_.erase(reinterpret_cast<uintptr_t>(b->ptr));
      reserved_ -= b->size;
      cudaError_t err = cudaFreeHost(b->ptr);
      delete b;
      if (err != cudaSuccess) cuda_detail::throw_cuda_error("cudaFreeHost", err);
    }
  }

  std::mutex mu_;
  std::map<uintptr_t, HostBlock*> blocks_;   // every block by address (pointer lookups)
  std::multimap<size_t, HostBlock*> free_;   // cached blocks by size
  std::deque<Pending> pending_;              // freed blocks waiting for their copies
  std::vector<EventPool> events_;            // per device
  size_t reserved_ = 0;                      // bytes page-locked
  size_t in_use_ = 0;                        // bytes in live tensors
};

CachingHostAllocator& host_allocator() {
  static auto* a = new CachingHostAllocator();  // never destroyed, as the device allocator
  return *a;
}

void CachingHostAllocator::deleter(void*, void* ctx) { host_allocator().free(static_cast<HostBlock*>(ctx)); }

}  // namespace

namespace cuda_detail {

Allocator* device_allocator() { return &caching_allocator(); }

cuda::MemoryStats memory_stats(int device) {
  if (device_count() == 0) return {};
  int d = device < 0 ? get_device() : device;
  TENSOR_CHECK(d < device_count(), "cuda::memory_stats: CUDA device index {} is out of range ({} devices visible)", d,
               device_count());
  return caching_allocator().device(d).stats();
}

void reset_peak_memory_stats(int device) {
  if (device_count() == 0) return;
  int d = device < 0 ? get_device() : device;
  TENSOR_CHECK(d < device_count(),
               "cuda::reset_peak_memory_stats: CUDA device index {} is out of range ({} devices visible)", d,
               device_count());
  caching_allocator().device(d).reset_peak();
}

void empty_cache() {
  if (device_count() == 0) return;
  CUDACachingAllocator& a = caching_allocator();
  for (int d = 0; d < a.num_devices(); ++d) {
    if (!a.device(d).has_cached()) continue;  // do not create a context on an unused device
    cuda::CUDAGuard guard(d);
    a.device(d).empty_cache();
  }
  host_allocator().empty_cache();
}

Allocator* pinned_host_allocator() { return &host_allocator(); }

bool record_host_use(const void* ptr, int device, cudaStream_t stream) {
  return host_allocator().record_use(ptr, device, stream);
}

void record_stream(void* ptr, int device, cudaStream_t stream) {
  check_index("record_stream", device);
  TENSOR_CHECK(device >= 0, "record_stream: expected a device index >= 0, got {}", device);
  if (ptr == nullptr) return;  // an empty storage: nothing to protect
  // False for memory this allocator did not hand out (from_blob): like libtorch, nothing to do.
  (void)caching_allocator().device(device).record_stream(ptr, stream);
}

}  // namespace cuda_detail

}  // namespace tensor
