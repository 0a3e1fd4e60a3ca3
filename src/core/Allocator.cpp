// CPU caching allocator (Note [CPU caching allocator]) and the per-device allocator table.
#include <sys/mman.h>

#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "src/core/Check.h"
#include "src/profiler/ProfilerHooks.h"
#include "tensor/core/Storage.h"

#if defined(__SANITIZE_ADDRESS__)
#define TENSOR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENSOR_ASAN 1
#endif
#endif
#ifdef TENSOR_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace tensor {

// Note [CPU caching allocator]
// Fresh pages cost more than the arithmetic of an add: a 64 MB output touched for the first
// time page-faults 16k times. Blocks above 64 KB are kept on free and reused for a request of
// the same size class (rounded up to 1 MB from kMinCached on, to 64 KB below it), up to
// kMaxCachedBytes in total; smaller ones go through per-thread lists (Note [Small block
// cache]). The blocks between 64 KB and 1 MB went straight to malloc until session 17: glibc
// gave the top of its heap back to the kernel when they were freed and took it again for the
// next, so an LSTM's per-step buffers (128-512 KB) paid a TLB shootdown and fresh-page faults
// every step, 13% of lstm_fwd_bwd_T64_B32_256's samples (perf: __brk, exc_page_fault). Every block is
// 64-byte aligned for AVX-512 loads. Blocks of 2 MB and more are 2 MB aligned and advised as
// transparent huge pages: a strided walk over a big tensor (transpose, reductions over dim 0)
// then misses the TLB once per 2 MB instead of once per 4 KB, and first touch faults 512x less.
//
// Note [Reuse the warmest block]
// A request takes the block of its class freed last, not the one freed first. multimap keeps
// equal keys in insertion order, and find() used to return the oldest: once a long program
// (the whole benchmark suite) had left several free blocks of one class, a loop that frees and
// reallocates its output cycled through all of them, each cold in the cache, where the block
// it had just freed was still in L3. repeat 1024x2048 x2 (24 MB moved per call, under the
// 32 MB L3) read 51 GB/s after ~100 other cases and 90+ GB/s alone; LIFO gives the warm one.
namespace {
constexpr size_t kAlign = 64;
constexpr size_t kMinCached = size_t(1) << 20;
constexpr size_t kMediumGranule = size_t(64) << 10;  // the size classes below kMinCached
constexpr size_t kMaxCachedBytes = size_t(2) << 30;
constexpr size_t kHugePage = size_t(2) << 20;

// Note [Cached blocks under AddressSanitizer]
// A cached block stays allocated as far as malloc knows, so ASan alone would miss a read of a
// freed tensor whose block sits in a cache, and a read past a tensor's end that stays inside
// its rounded-up block. Under ASan a block is therefore poisoned while cached, and its tail
// beyond the requested size is poisoned while in use.
#ifdef TENSOR_ASAN
inline void poison(void* p, size_t n) { ASAN_POISON_MEMORY_REGION(p, n); }
inline void unpoison(void* p, size_t n) { ASAN_UNPOISON_MEMORY_REGION(p, n); }
#else
inline void poison(void*, size_t) {}
inline void unpoison(void*, size_t) {}
#endif
/// Hands out `cap` bytes at p for a request of `nbytes` (see the Note above).
inline void* hand_out(void* p, size_t nbytes, size_t cap) {
  unpoison(p, nbytes);
  poison(static_cast<char*>(p) + nbytes, cap - nbytes);
  return p;
}

// Note [Aligned blocks from malloc]
// Blocks under 2 MB come from plain malloc with kHeader + kAlign spare bytes, aligned by hand,
// with the malloc'd base and size stored just below the block; not from aligned_alloc. glibc
// serves aligned_alloc(64, n) by taking n + 64 + a minimum chunk and giving the slop back; once
// small long-lived objects settle in that slop, the hole a freed block leaves is a few bytes short
// of the next such request, which then extends the heap. A loop that kept one small tensor per
// iteration beside two 512 KB temporaries grew the heap by 512 KB per iteration without bound
// (2.1 GB of free but unusable heap after 4,000 iterations; test Allocator.HeapDoesNot-
// GrowWithSmallLongLivedTensors). A malloc of n + spare fits exactly the hole that a freed block
// of the same size left. It also steadied the resident size of a training loop: it read 66.7 to
// 70.2 MB from step to step of benchmarks/soak_mlp, and now a constant 62.5 MB. Blocks of 2 MB
// and more keep aligned_alloc for their 2 MB alignment; the cache above reuses them.
constexpr size_t kHeader = 2 * sizeof(void*);

// No x86-64 or AArch64 process maps more than 2^57 bytes (5-level paging): a larger request is
// refused before malloc, whose answer to it differs by runtime (glibc returns null; ASan aborts
// the process unless allocator_may_return_null is set), and before the rounding below could wrap.
constexpr size_t kMaxAllocation = size_t(1) << 57;

void* raw_alloc(size_t nbytes) {
  TENSOR_CHECK(nbytes <= kMaxAllocation, "CPU allocator: out of memory allocating {} bytes (more than a process can map)",
               nbytes);
  if (nbytes >= kHugePage) {
    size_t n = (nbytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, n);
    TENSOR_CHECK(p != nullptr, "CPU allocator: out of memory allocating {} bytes", nbytes);
#ifdef MADV_HUGEPAGE
    madvise(p, n, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    return p;
  }
  const size_t total = nbytes + kHeader + kAlign;
  char* base = static_cast<char*>(std::malloc(total));
  TENSOR_CHECK(base != nullptr, "CPU allocator: out of memory allocating {} bytes", nbytes);
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  char* p = base + (((b + kHeader + kAlign - 1) & ~uintptr_t(kAlign - 1)) - b);
  reinterpret_cast<void**>(p)[-1] = base;
  reinterpret_cast<size_t*>(p)[-2] = total;
  poison(base, static_cast<size_t>(p - base));                       // the header and the lead
  poison(p + nbytes, total - static_cast<size_t>(p - base) - nbytes);  // the slack after the block
  return p;
}

/// Frees a raw_alloc(nbytes) block (nbytes decides which kind it is).
void raw_free(void* p, size_t nbytes) {
  if (nbytes >= kHugePage) {
    unpoison(p, nbytes);
    std::free(p);
    return;
  }
  unpoison(static_cast<char*>(p) - kHeader, kHeader);
  void* base = static_cast<void**>(p)[-1];
  unpoison(base, static_cast<size_t*>(p)[-2]);
  std::free(base);
}

// Note [Small block cache]
// The output of a 1-element op costs more in malloc than in arithmetic: glibc's memalign
// path (which these blocks took before Note [Aligned blocks from malloc]) consolidates and
// searches bins, and plain malloc takes locks and may consolidate too. Blocks of up to 64 KB
// are therefore recycled through per-thread free lists, one per power-of-two size class; a
// block freed on another thread simply joins that thread's lists. Up to 4 KB a class keeps
// 64 blocks; above, 256 KB worth (at least 8), so a thread holds at most ~1.8 MB. The 64 KB
// bound covers a 64x64 float32 product's output, whose memalign + free (with glibc's
// malloc_consolidate) was ~7% of a 4 us mm (perf, /tmp/mmlib/s64.cpp).
constexpr int kSmallClasses = 11;       // 64 B .. 64 KB
constexpr size_t kSmallMax = size_t(64) << (kSmallClasses - 1);
constexpr int kSmallDepth = 64;         // blocks kept per class and thread, at most
constexpr int depth_of(int c) {
  return (size_t(64) << c) <= 4096 ? kSmallDepth : std::max<int>(8, static_cast<int>((256 << 10) / (size_t(64) << c)));
}

// The lists are trivially destructible, so they stay readable while other thread_local
// objects (tensors among them) are destroyed at thread exit and free their blocks; a separate
// reaper frees the cached blocks and marks the lists dead, after which blocks go to free().
struct SmallCache {
  void* blocks[kSmallClasses][kSmallDepth];
  int count[kSmallClasses];
  bool dead;
};
thread_local SmallCache t_small_cache;  // zero-initialised: no dynamic init, no destructor

struct SmallCacheReaper {
  ~SmallCacheReaper() {
    SmallCache& sc = t_small_cache;
    for (int c = 0; c < kSmallClasses; ++c)
      for (int i = 0; i < sc.count[c]; ++i) raw_free(sc.blocks[c][i], size_t(64) << c);
    for (int& n : sc.count) n = 0;
    sc.dead = true;
  }
};
thread_local SmallCacheReaper t_small_reaper;

/// This thread's lists, or nullptr once its reaper has run.
inline SmallCache* small_cache() {
  SmallCache& sc = t_small_cache;
  if (sc.dead) return nullptr;
  (void)&t_small_reaper;  // odr-use: registers the reaper's destructor for this thread
  return &sc;
}

inline int small_class(size_t nbytes) {
  int c = 0;
  size_t cap = 64;
  while (cap < nbytes) cap <<= 1, ++c;
  return c;
}

void free_small_cached(void* p, void* ctx) {
  int c = static_cast<int>(reinterpret_cast<uintptr_t>(ctx));
  SmallCache* sc = small_cache();
  if (sc && sc->count[c] < depth_of(c)) {
    poison(p, size_t(64) << c);
    sc->blocks[c][sc->count[c]++] = p;
    return;
  }
  raw_free(p, size_t(64) << c);
}

DataPtr allocate_small(size_t nbytes) {
  int c = small_class(nbytes);
  SmallCache* sc = small_cache();
  void* ctx = reinterpret_cast<void*>(static_cast<uintptr_t>(c));
  const size_t cap = size_t(64) << c;
  if (sc && sc->count[c] > 0) return {hand_out(sc->blocks[c][--sc->count[c]], nbytes, cap), ctx, &free_small_cached};
  return {hand_out(raw_alloc(cap), nbytes, cap), ctx, &free_small_cached};
}

class CPUCachingAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    DataPtr d = allocate_block(nbytes);
    // profile_memory: the free is recorded too (Note [Profiler off costs one branch]). One
    // returned variable, so that the off path builds it in place.
    if (__builtin_expect(profiler::detail::memory_active(), 0)) d = profiler::detail::on_alloc(d, nbytes);
    return d;
  }

 private:
  __attribute__((always_inline)) DataPtr allocate_block(size_t nbytes) {
    if (nbytes <= kSmallMax) return allocate_small(nbytes);
    const size_t granule = nbytes < kMinCached ? kMediumGranule : kMinCached;
    size_t sz = (nbytes + granule - 1) / granule * granule;
    void* ctx = reinterpret_cast<void*>(static_cast<uintptr_t>(sz));
    {
      std::lock_guard<std::mutex> g(mu_);
      // The most recently freed block of the class (Note [Reuse the warmest block]).
      auto it = free_.upper_bound(sz);
      if (it != free_.begin() && (--it)->first == sz) {
        void* p = it->second;
        free_.erase(it);
        cached_bytes_ -= sz;
        return {hand_out(p, nbytes, sz), ctx, &free_large};
      }
    }
    return {hand_out(raw_alloc(sz), nbytes, sz), ctx, &free_large};
  }

  static void free_large(void* p, void* ctx);
  void release(void* p, size_t sz) {
    std::lock_guard<std::mutex> g(mu_);
    if (cached_bytes_ + sz > kMaxCachedBytes) {
      raw_free(p, sz);
      return;
    }
    poison(p, sz);
    free_.emplace(sz, p);
    cached_bytes_ += sz;
  }

  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  size_t cached_bytes_ = 0;
};

CPUCachingAllocator& cpu_allocator() {
  static auto* a = new CPUCachingAllocator();  // never destroyed: storages may die during static destruction
  return *a;
}

void CPUCachingAllocator::free_large(void* p, void* ctx) {
  cpu_allocator().release(p, static_cast<size_t>(reinterpret_cast<uintptr_t>(ctx)));
}

class MetaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t, Device) override { return {}; }
};
}  // namespace

Allocator* cuda_allocator();  // src/cuda (or its CPU-only stub)

Allocator* get_allocator(DeviceType t) {
  static MetaAllocator meta;
  switch (t) {
    case DeviceType::CPU: return &cpu_allocator();
    case DeviceType::Meta: return &meta;
    default: return cuda_allocator();
  }
}

}  // namespace tensor
