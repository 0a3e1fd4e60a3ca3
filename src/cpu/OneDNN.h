// Internal: the glue between libtensor tensors and oneDNN (engine, streams, memory
// descriptors, the primitive cache). Only src/cpu/*.cpp include this: oneDNN's headers never
// reach the public headers.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "tensor/core/Tensor.h"

namespace tensor::cpu::onednn {

/// The one CPU engine.
dnnl::engine& engine();
/// A CPU stream per thread (primitives may run from several threads at once).
dnnl::stream& stream();

/// True when oneDNN computes in this dtype here (float32, bfloat16); others take the
/// reference paths (float64, integers, complex) or are converted (float16).
bool supports(ScalarType t);
dnnl::memory::data_type to_dnnl(ScalarType t);

/// A plain (strided) descriptor with t's sizes and strides. A 0-dim tensor is described as [1].
dnnl::memory::desc plain_md(const Tensor& t);
dnnl::memory::desc plain_md(IntArrayRef sizes, IntArrayRef strides, ScalarType t);
/// Wraps t's data (no copy) as memory of descriptor md.
dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t);

// Note [Primitive cache]
// Creating a oneDNN primitive descriptor walks oneDNN's implementation list and costs tens of
// microseconds to milliseconds (JIT code generation). A training loop calls the same op with
// the same shapes every step, so libtensor keeps created primitives in an LRU cache keyed by
// everything that selects the kernel: op, shapes, strides, dtypes and attributes. The key is a
// byte string built by Key; the capacity is set with set_cache_capacity (or the environment
// variable TENSOR_ONEDNN_CACHE_CAPACITY), default 1024.
//
// Note [Thread-local primitive cache]
// A hit in the global cache costs a std::string key (an allocation), a hash of ~250 bytes and
// the mutex. So each thread also remembers its last few hits (key hash, key bytes, primitive):
// a repeated call is a hash and a memcmp. Every eviction and capacity change bumps the global
// cache's generation, which invalidates all threads' copies, so the global cache stays the only
// authority on what is cached (misses are counted, and capacity 0 caches nothing, exactly as
// before). A thread hit still moves the entry to the front of the global LRU when the mutex is
// free (try_lock; under contention the order may lag, which only affects which entry is evicted).

/// Builds a cache key from the op name and every parameter that affects the primitive. The bytes
/// live in an inline buffer (no allocation per call for keys up to kInline bytes: matmul's is
/// ~250; Note [Small matmul overhead]).
class Key {
 public:
  explicit Key(const char* op) : op_(op) { append(op, std::strlen(op) + 1); }
  Key& add(int64_t v) { append(&v, sizeof v); return *this; }
  Key& add(double v) { append(&v, sizeof v); return *this; }
  Key& add(IntArrayRef v) {
    add(static_cast<int64_t>(v.size()));
    append(v.data(), v.size() * sizeof(int64_t));
    return *this;
  }
  /// Sizes, strides and dtype of a tensor (alignment is not part of the key: oneDNN kernels
  /// take any pointer).
  Key& add(const Tensor& t);
  const char* data() const { return heap_.empty() ? buf_ : heap_.data(); }
  size_t size() const { return n_; }
  std::string str() const { return std::string(data(), n_); }
  const char* op() const { return op_; }

 private:
  static constexpr size_t kInline = 480;
  void append(const void* p, size_t n) {
    if (heap_.empty() && n_ + n <= kInline) {
      std::memcpy(buf_ + n_, p, n);
    } else {
      if (heap_.empty()) heap_.assign(buf_, n_);
      heap_.append(static_cast<const char*>(p), n);
    }
    n_ += n;
  }
  const char* op_;
  size_t n_ = 0;
  std::string heap_;  // used once the key outgrows buf_
  char buf_[kInline];
};

/// A cached primitive and the descriptor it was made from (scratchpad and workspace sizes).
struct CachedPrimitive {
  dnnl::primitive prim;
  dnnl::primitive_desc_base pd;
};

/// This thread's copy of the cached primitive for key, or nullptr (Note [Thread-local
/// primitive cache]).
const CachedPrimitive* cached_in_thread(const Key& key);
/// The global cache's lookup: the primitive for key, made by make() on a miss.
CachedPrimitive cached_global(const Key& key, const std::function<CachedPrimitive()>& make);

/// The cached primitive for key, made by make() on a miss. Thread-safe; returns a copy (the
/// handles are reference-counted) so that eviction by another thread cannot invalidate it.
/// A template so that a hit never wraps make in a std::function (an allocation per call).
template <class Make>
CachedPrimitive cached(const Key& key, Make&& make) {
  if (const CachedPrimitive* p = cached_in_thread(key)) return *p;
  return cached_global(key, std::function<CachedPrimitive()>(std::forward<Make>(make)));
}

/// Capacity of the primitive cache, in primitives (0 disables caching).
void set_cache_capacity(size_t n);
size_t cache_capacity();
/// Primitives currently cached, and lookups that missed since start (for tests).
size_t cache_size();
size_t cache_misses();

/// Attributes every libtensor primitive is made with: a user scratchpad (from libtensor's
/// allocator, so that repeated calls reuse cached blocks instead of oneDNN allocating).
dnnl::primitive_attr make_attr();

/// Runs a primitive on the thread's stream with a scratchpad from libtensor's allocator.
void execute(const CachedPrimitive& p, std::unordered_map<int, dnnl::memory> args);

}  // namespace tensor::cpu::onednn
