// The CUDA caching allocator (Note [CUDA caching allocator]).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
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
// Blocks belong to the stream they were allocated on and are only reused on it: that keeps
// reuse stream-ordered once streams other than the default one exist. When cudaMalloc runs out
// of memory, whole cached segments are freed and the call retried once.
namespace {

constexpr size_t kMinBlockSize = 512;             // sizes are rounded up to a multiple of this
constexpr size_t kSmallSize = size_t(1) << 20;    // largest request served by the small pool
constexpr size_t kSmallBuffer = size_t(2) << 20;  // segment size of the small pool
constexpr size_t kRoundLarge = size_t(2) << 20;   // large segments are multiples of this

struct BlockPool;

struct Block {
  int device;
  cudaStream_t stream;
  size_t size;
  void* ptr;
  BlockPool* pool;
  Block* prev = nullptr;  // neighbours within the same cudaMalloc segment
  Block* next = nullptr;
  bool allocated = false;

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

// One device's pools and statistics. The caller makes the device current before malloc and
// before anything that may call cudaFree.
class DeviceCachingAllocator {
 public:
  explicit DeviceCachingAllocator(int device) : device_(device), small_(true), large_(false) {}

  Block* malloc(size_t nbytes, cudaStream_t stream) {
    std::lock_guard<std::mutex> g(mu_);
    // Refuse sizes whose rounding would overflow; cudaMalloc could never satisfy them anyway.
    if (nbytes > SIZE_MAX - kRoundLarge) throw_oom(nbytes, cudaErrorMemoryAllocation);
    size_t size = round_size(nbytes);
    BlockPool& pool = size <= kSmallSize ? small_ : large_;
    Block* b = take_cached(pool, size, stream);
    if (b == nullptr) b = alloc_segment(pool, size, stream, nbytes);
    split(b, size);
    b->allocated = true;
    stats_.allocated_bytes += b->size;
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
    ++stats_.num_alloc_calls;
    return b;
  }

  // Called from storage deleters: makes no CUDA call, so it cannot fail, also at exit.
  void free(Block* b) {
    std::lock_guard<std::mutex> g(mu_);
    b->allocated = false;
    stats_.allocated_bytes -= b->size;
    merge(b, b->prev);
    merge(b, b->next);
    b->pool->blocks.insert(b);
  }

  // Returns every fully free segment to the driver.
  void empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    release_cached();
  }

  bool has_cached() {
    std::lock_guard<std::mutex> g(mu_);
    return !small_.blocks.empty() || !large_.blocks.empty();
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
    Block key{device_, stream, size, nullptr, &pool};
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
    Block* b = *it;
    pool.blocks.erase(it);
    return b;
  }

  Block* alloc_segment(BlockPool& pool, size_t size, cudaStream_t stream, size_t requested) {
    size_t seg = segment_size(size);
    ++stats_.num_cuda_malloc_calls;
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, seg);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      ++stats_.num_ooms;
      release_cached();
      err = cudaMalloc(&ptr, seg);
    }
    if (err == cudaErrorMemoryAllocation) throw_oom(requested, err);
    if (err != cudaSuccess) cuda_detail::throw_cuda_error("cudaMalloc", err);
    stats_.reserved_bytes += seg;
    if (stats_.reserved_bytes > stats_.peak_reserved_bytes) stats_.peak_reserved_bytes = stats_.reserved_bytes;
    return new Block{device_, stream, seg, ptr, &pool};
  }

  // Splits the tail off `b` when it is big enough to be useful: any remainder in the small
  // pool, only more than kSmallSize in the large pool (smaller rests would fragment it).
  void split(Block* b, size_t size) {
    size_t rest = b->size - size;
    if (b->pool->is_small ? rest < kMinBlockSize : rest <= kSmallSize) return;
    Block* r = new Block{device_, b->stream, rest, static_cast<char*>(b->ptr) + size, b->pool};
    r->prev = b;
    r->next = b->next;
    if (r->next) r->next->prev = r;
    b->next = r;
    b->size = size;
    b->pool->blocks.insert(r);
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
    size_t free_b = 0, total_b = 0;
    std::string dev_mem = cudaMemGetInfo(&free_b, &total_b) == cudaSuccess
                              ? fmt::format("{} free of {} total", human_bytes(free_b), human_bytes(total_b))
                              : std::string("unknown");
    (void)cudaGetLastError();
    TENSOR_ERROR("CUDA out of memory: tried to allocate {} bytes ({}) on cuda:{} (cudaMalloc: {}). Device memory: {}; "
                 "libtensor holds {} in live tensors (peak {}) and {} reserved in total (its free cache was already "
                 "released and the allocation retried). Free tensors you no longer need or use smaller sizes",
                 requested, human_bytes(requested), device_, cudaGetErrorString(err), dev_mem,
                 human_bytes(stats_.allocated_bytes), human_bytes(stats_.peak_allocated_bytes),
                 human_bytes(stats_.reserved_bytes));
  }

  std::mutex mu_;
  int device_;
  BlockPool small_;
  BlockPool large_;
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
  CUDACachingAllocator& a = caching_allocator();
  for (int d = 0; d < a.num_devices(); ++d) {
    if (!a.device(d).has_cached()) continue;  // do not create a context on an unused device
    cuda::CUDAGuard guard(d);
    a.device(d).empty_cache();
  }
}

// Placeholders until the stream-aware allocator lands (issue 21, runtime part).
Allocator* pinned_host_allocator() {
  struct Pinned final : Allocator {
    DataPtr allocate(size_t nbytes, Device) override {
      if (nbytes == 0) return {};
      void* p = nullptr;
      TENSOR_CUDA_CHECK(cudaHostAlloc(&p, nbytes, cudaHostAllocDefault));
      return {p, nullptr, [](void* d, void*) {
                if (cudaFreeHost(d) != cudaSuccess) (void)cudaGetLastError();
              }};
    }
  };
  static Pinned a;
  return &a;
}

void record_stream(void*, int, cudaStream_t) { TENSOR_ERROR("record_stream: not implemented yet"); }

}  // namespace cuda_detail

}  // namespace tensor
