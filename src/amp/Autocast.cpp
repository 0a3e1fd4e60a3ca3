// Autocast's thread-local state, AutocastGuard and the cast cache.
#include "tensor/amp/autocast.h"

#include <unordered_map>

#include "src/amp/AutocastPolicy.h"
#include "src/amp/AutocastState.h"
#include "src/core/Check.h"
#include "src/dispatch/Dispatcher.h"
#include "tensor/autograd/autograd.h"

namespace tensor::autocast {
namespace {

// Note [Autocast cast cache]
// A weight used by several ops in one forward (or a tied embedding) would be cast again by each.
// As libtorch's cached_casts, a cast of a float32 leaf that requires grad to the region's
// lower-precision dtype is kept, keyed by the source's TensorImpl and the target dtype, until the
// outermost AutocastGuard exits. The entry holds the source too, so that its TensorImpl cannot be
// freed and its address reused by another tensor while the entry lives (libtorch holds a weak
// reference for the same reason). Only casts made with grad mode on are cached: a cast made
// under NoGradGuard has no history, and reusing it with grad on would cut the weight off from
// its gradient. Leaves change only through in-place updates outside the region (the optimizer
// step), so an entry never goes stale inside one.
struct CacheKey {
  const TensorImpl* impl;
  ScalarType dtype;
  bool operator==(const CacheKey& o) const { return impl == o.impl && dtype == o.dtype; }
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    return std::hash<const void*>()(k.impl) ^ (static_cast<size_t>(k.dtype) << 1);
  }
};
struct CacheEntry {
  Tensor source;
  Tensor cast;
};

struct DeviceState {
  bool enabled;
  ScalarType dtype;
};

struct State {
  DeviceState device[2] = {{false, kBFloat16}, {false, kFloat16}};  // CPU, CUDA (libtorch's defaults)
  bool cache_enabled = true;
  int nesting = 0;
  std::unordered_map<CacheKey, CacheEntry, CacheKeyHash> cache;
};

thread_local State t_state;

int device_index(DeviceType d) { return d == DeviceType::CUDA ? 1 : 0; }

// The Autocast key is in this thread's included set exactly while a device has autocast on.
void sync_key() {
  dispatch::LocalKeys& lk = dispatch::local_keys();
  const bool on = t_state.device[0].enabled || t_state.device[1].enabled;
  lk.included = on ? lk.included | DispatchKeySet(DispatchKey::Autocast) : lk.included.remove(DispatchKey::Autocast);
}

void check_dtype(DeviceType device, ScalarType dtype) {
  const bool ok = dtype == kBFloat16 || dtype == kFloat16;
  TENSOR_CHECK(ok,
               "AutocastGuard: in autocast on device {}, only kBFloat16 and kFloat16 are supported as the "
               "lower-precision dtype, got {}",
               Device(device).str(), dtype);
}

}  // namespace

AutocastGuard::AutocastGuard(DeviceType device, ScalarType dtype, bool enabled, bool cache_enabled) : device_(device) {
  TENSOR_CHECK(device == DeviceType::CPU || device == DeviceType::CUDA,
               "AutocastGuard: autocast supports the devices cpu and cuda, got {}", Device(device).str());
  if (enabled) check_dtype(device, dtype);
  (void)ensure_autocast_kernels();
  DeviceState& s = t_state.device[device_index(device)];
  prev_enabled_ = s.enabled;
  prev_dtype_ = s.dtype;
  prev_cache_enabled_ = t_state.cache_enabled;
  s.enabled = enabled;
  if (enabled) s.dtype = dtype;
  t_state.cache_enabled = cache_enabled;
  ++t_state.nesting;  // disabled guards count too, as torch.autocast's __enter__
  sync_key();
}

AutocastGuard::~AutocastGuard() {
  DeviceState& s = t_state.device[device_index(device_)];
  s.enabled = prev_enabled_;
  s.dtype = prev_dtype_;
  t_state.cache_enabled = prev_cache_enabled_;
  if (--t_state.nesting == 0) t_state.cache.clear();
  sync_key();
}

bool is_autocast_enabled(DeviceType device) {
  return device != DeviceType::Meta && t_state.device[device_index(device)].enabled;
}

ScalarType get_autocast_dtype(DeviceType device) {
  TENSOR_CHECK(device != DeviceType::Meta, "get_autocast_dtype: autocast supports the devices cpu and cuda, got meta");
  return t_state.device[device_index(device)].dtype;
}

bool is_autocast_cache_enabled() { return t_state.cache_enabled; }
void clear_autocast_cache() { t_state.cache.clear(); }
size_t autocast_cache_size() { return t_state.cache.size(); }

Tensor cached_cast(ScalarType to, const Tensor& t, DeviceType device) {
  if (!is_eligible(t, device) || t.dtype() == to) return t;
  const bool can_cache = to == t_state.device[device_index(device)].dtype && t.dtype() == kFloat32 &&
                         t.requires_grad() && t.is_leaf() && t_state.cache_enabled && GradMode::is_enabled();
  if (!can_cache) return t.to(to);
  const CacheKey key{t.unsafeGetTensorImpl(), to};
  auto it = t_state.cache.find(key);
  if (it != t_state.cache.end()) return it->second.cast;
  Tensor cast = t.to(to);
  t_state.cache.emplace(key, CacheEntry{t, cast});
  return cast;
}

}  // namespace tensor::autocast
