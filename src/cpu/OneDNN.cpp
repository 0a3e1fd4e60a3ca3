// The oneDNN glue: engine, per-thread streams, plain memory descriptors and the primitive
// cache (Note [Primitive cache]).
#include "src/cpu/OneDNN.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>

#include "src/core/Check.h"
#include "tensor/onednn.h"
#include "tensor/ops.h"

namespace tensor::cpu::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

bool supports(ScalarType t) { return t == ScalarType::Float || t == ScalarType::BFloat16; }

dnnl::memory::data_type to_dnnl(ScalarType t) {
  switch (t) {
    case ScalarType::Float: return dnnl::memory::data_type::f32;
    case ScalarType::BFloat16: return dnnl::memory::data_type::bf16;
    case ScalarType::Half: return dnnl::memory::data_type::f16;
    case ScalarType::Int32: return dnnl::memory::data_type::s32;
    case ScalarType::Int8: return dnnl::memory::data_type::s8;
    case ScalarType::UInt8: return dnnl::memory::data_type::u8;
    default: TENSOR_ERROR("oneDNN: dtype {} is not supported", t);
  }
}

dnnl::memory::desc plain_md(IntArrayRef sizes, IntArrayRef strides, ScalarType t) {
  if (sizes.empty()) return dnnl::memory::desc({1}, to_dnnl(t), dnnl::memory::dims{1});
  dnnl::memory::dims d(sizes.begin(), sizes.end()), s(strides.begin(), strides.end());
  return dnnl::memory::desc(d, to_dnnl(t), s);
}

dnnl::memory::desc plain_md(const Tensor& t) { return plain_md(t.sizes(), t.strides(), t.scalar_type()); }

dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, engine(), t.defined() ? t.data_ptr() : nullptr);
}

Key& Key::add(const Tensor& t) {
  if (!t.defined()) return add(int64_t{-1});
  add(static_cast<int64_t>(t.scalar_type()));
  add(t.sizes());
  return add(t.strides());
}

dnnl::primitive_attr make_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

namespace {

/// LRU: a list in use order (front = newest) and a map from key to list position.
struct Cache {
  std::mutex mu;
  size_t capacity;
  size_t misses = 0;
  /// Bumped (under mu) whenever an entry leaves or the capacity changes: thread copies made
  /// under an older generation are stale (Note [Thread-local primitive cache]).
  std::atomic<uint64_t> generation{1};
  using Entry = std::pair<std::string, CachedPrimitive>;
  std::list<Entry> order;
  std::unordered_map<std::string, std::list<Entry>::iterator> index;

  Cache() {
    const char* env = std::getenv("TENSOR_ONEDNN_CACHE_CAPACITY");
    capacity = env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : 1024;
  }
  void evict_to(size_t n) {
    if (order.size() <= n) return;
    generation.fetch_add(1, std::memory_order_release);
    while (order.size() > n) {
      index.erase(order.back().first);
      order.pop_back();
    }
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // leaked: primitives may be used during static destruction
  return *c;
}

uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

/// A thread's copy of a global cache entry (Note [Thread-local primitive cache]).
struct ThreadEntry {
  uint64_t generation = 0;  // 0: empty
  uint64_t hash = 0;
  std::string key;
  CachedPrimitive prim;
  std::list<Cache::Entry>::iterator pos;  // valid while generation is current
};
constexpr int kThreadEntries = 8;

struct ThreadCache {
  ThreadEntry e[kThreadEntries];
  int next = 0;
};
ThreadCache& thread_cache() {
  thread_local ThreadCache tc;
  return tc;
}

/// Remembers a global entry in this thread; call with c.mu held and capacity > 0.
void remember(Cache& c, const Key& key, std::list<Cache::Entry>::iterator pos) {
  ThreadCache& tc = thread_cache();
  ThreadEntry& e = tc.e[tc.next];
  tc.next = (tc.next + 1) % kThreadEntries;
  e.generation = c.generation.load(std::memory_order_relaxed);
  e.hash = hash_bytes(key.data(), key.size());
  e.key.assign(key.data(), key.size());
  e.prim = pos->second;
  e.pos = pos;
}

}  // namespace

const CachedPrimitive* cached_in_thread(const Key& key) {
  Cache& c = cache();
  const uint64_t gen = c.generation.load(std::memory_order_acquire);
  ThreadCache& tc = thread_cache();
  uint64_t h = 0;
  bool hashed = false;
  for (ThreadEntry& e : tc.e) {
    if (e.generation == 0) continue;
    if (e.generation != gen) {  // stale: let go of the primitive now
      e = ThreadEntry{};
      continue;
    }
    if (!hashed) { h = hash_bytes(key.data(), key.size()); hashed = true; }
    if (e.hash != h || e.key.size() != key.size() || std::memcmp(e.key.data(), key.data(), key.size()) != 0)
      continue;
    std::unique_lock<std::mutex> g(c.mu, std::try_to_lock);
    if (g.owns_lock() && c.generation.load(std::memory_order_relaxed) == e.generation)
      c.order.splice(c.order.begin(), c.order, e.pos);  // keep the global LRU order
    return &e.prim;
  }
  return nullptr;
}

CachedPrimitive cached_global(const Key& key, const std::function<CachedPrimitive()>& make) {
  Cache& c = cache();
  const std::string k = key.str();
  {
    std::lock_guard<std::mutex> g(c.mu);
    auto it = c.index.find(k);
    if (it != c.index.end()) {
      c.order.splice(c.order.begin(), c.order, it->second);
      if (c.capacity > 0) remember(c, key, it->second);
      return it->second->second;
    }
    ++c.misses;
  }
  // Made outside the lock: JIT compilation can take milliseconds.
  CachedPrimitive p;
  try {
    p = make();
  } catch (const dnnl::error& e) {
    TENSOR_ERROR("{}: oneDNN could not create a primitive: {}", key.op(), e.what());
  }
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.index.find(k);
  if (it != c.index.end()) return it->second->second;  // another thread made it meanwhile
  c.order.emplace_front(k, std::move(p));
  c.index[k] = c.order.begin();
  if (c.capacity == 0) {
    // Caching off: keep only this one alive for the caller, replaced by the next miss; it is
    // never remembered by the thread, so every call misses.
    c.evict_to(1);
    return c.order.front().second;
  }
  c.evict_to(c.capacity);
  remember(c, key, c.order.begin());
  return c.order.front().second;
}

void set_cache_capacity(size_t n) {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.capacity = n;
  c.generation.fetch_add(1, std::memory_order_release);
  c.evict_to(n);
}
size_t cache_capacity() { return cache().capacity; }
size_t cache_size() {
  std::lock_guard<std::mutex> g(cache().mu);
  return cache().capacity == 0 ? 0 : cache().order.size();
}
size_t cache_misses() {
  std::lock_guard<std::mutex> g(cache().mu);
  return cache().misses;
}

void execute(const CachedPrimitive& p, std::unordered_map<int, dnnl::memory> args) {
  dnnl::memory::desc sd = p.pd.scratchpad_desc();
  Tensor scratch;
  if (sd.get_size() > 0) {
    scratch = tensor::empty({static_cast<int64_t>(sd.get_size())}, TensorOptions().dtype(kUInt8));
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(sd, engine(), scratch.data_ptr()));
  }
  try {
    p.prim.execute(stream(), args);
  } catch (const dnnl::error& e) {
    TENSOR_ERROR("oneDNN primitive failed: {}", e.what());
  }
  // CPU streams run synchronously with the OpenMP runtime; wait() is a no-op kept for clarity.
  stream().wait();
}

}  // namespace tensor::cpu::onednn

namespace tensor::onednn {
void set_primitive_cache_capacity(size_t n) { cpu::onednn::set_cache_capacity(n); }
size_t primitive_cache_capacity() { return cpu::onednn::cache_capacity(); }
size_t primitive_cache_size() { return cpu::onednn::cache_size(); }
size_t primitive_cache_misses() { return cpu::onednn::cache_misses(); }
}  // namespace tensor::onednn
