// Internal: the glue between libtensor tensors and oneDNN (engine, streams, memory
// descriptors, the primitive cache). Only src/cpu/*.cpp include this: oneDNN's headers never
// reach the public headers.
#pragma once

#include <cstdint>
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

/// Builds a cache key from the op name and every parameter that affects the primitive.
class Key {
 public:
  explicit Key(const char* op) : op_(op), s_(op) { s_.push_back('\0'); }
  Key& add(int64_t v) { s_.append(reinterpret_cast<const char*>(&v), sizeof v); return *this; }
  Key& add(double v) { s_.append(reinterpret_cast<const char*>(&v), sizeof v); return *this; }
  Key& add(IntArrayRef v) {
    add(static_cast<int64_t>(v.size()));
    for (int64_t x : v) add(x);
    return *this;
  }
  /// Sizes, strides and dtype of a tensor (alignment is not part of the key: oneDNN kernels
  /// take any pointer).
  Key& add(const Tensor& t);
  const std::string& str() const { return s_; }
  const char* op() const { return op_; }

 private:
  const char* op_;
  std::string s_;
};

/// A cached primitive and the descriptor it was made from (scratchpad and workspace sizes).
struct CachedPrimitive {
  dnnl::primitive prim;
  dnnl::primitive_desc_base pd;
};

/// The cached primitive for key, made by make() on a miss. Thread-safe; returns a copy (the
/// handles are reference-counted) so that eviction by another thread cannot invalidate it.
CachedPrimitive cached(const Key& key, const std::function<CachedPrimitive()>& make);

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
