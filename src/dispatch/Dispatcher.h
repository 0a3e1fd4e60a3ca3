// Internal: per-op kernel tables and the dispatch hot path (Note [Dispatch hot path]).
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "tensor/core/Tensor.h"
#include "tensor/dispatch/DispatchKey.h"

namespace tensor::dispatch {

// Note [Dispatch hot path]
// Each built-in op is an OpDef<Sig> holding one function pointer per DispatchKey. A call
// ORs the key sets of its tensor arguments with the thread-local included set, masks out
// the thread-local excluded set, takes the highest bit and calls that slot: no strings,
// no std::function, no allocation. A kernel that wraps others (Autograd, Profiler) calls
// `redispatch` with the keys below its own.

/// Thread-local included/excluded keys (NoGradGuard excludes Autograd, the profiler includes Profiler).
struct LocalKeys {
  DispatchKeySet included;
  DispatchKeySet excluded;
};
// Note [Thread-local keys]
// Every call reads these, so they are one exported thread_local read inline with the
// initial-exec model: a load at a fixed offset from the thread pointer, where a function call
// and __tls_get_addr (the default for a shared library) cost more than the rest of the key
// computation. initial-exec suits a library linked at program start (as libtensor is); a
// dlopen()ed libtensor still loads while glibc's static TLS reserve lasts.
extern TENSOR_API thread_local LocalKeys g_local_keys __attribute__((tls_model("initial-exec")));
inline LocalKeys& local_keys() { return g_local_keys; }

// Note [Global keys]
// Keys every thread includes on top of its own: the profiler's while a Profile records, so that
// ops on threads the user starts are recorded as libtorch's profiler records them. A relaxed
// atomic load per call (a plain load on x86); the thread-local excluded set still masks it.
extern TENSOR_API std::atomic<uint16_t> g_global_included;

inline DispatchKeySet key_set_of(const TensorImpl* t) {
  DispatchKeySet ks;
  switch (t->device().type()) {
    case DeviceType::CPU: ks = DispatchKeySet(DispatchKey::CPU); break;
    case DeviceType::CUDA: ks = DispatchKeySet(DispatchKey::CUDA); break;
    case DeviceType::Meta: ks = DispatchKeySet(DispatchKey::Meta); break;
  }
  if (t->autograd_meta() && t->requires_grad()) ks = ks | DispatchKeySet(DispatchKey::Autograd);
  if (__builtin_expect(is_qint_type(t->dtype()), 0)) ks = ks | DispatchKeySet(DispatchKey::Quantized);
  return ks;
}

// Note [Quantized key]
// A tensor of a quantized dtype (kQInt8, kQUInt8, kQInt32) adds the Quantized key, which sits
// above the backends. The key never falls through: an op whose table has no Quantized kernel
// raises naming the op and the dtype, so that `q + q` or `q.sum()` cannot run a CPU kernel
// over the raw integers (whose meaning depends on the scale and zero point). The ops that do
// serve quantized tensors fill the slot: every view (view_def) and composite (composite_def;
// their pieces dispatch again and raise there), clone, copy_ and _to_copy (src/ops/CopyOps.cpp),
// and the int8 kernels of src/ops/QuantizedElementwise.cpp: relu and relu_, max_pool2d,
// avg_pool2d, adaptive_avg_pool2d, cat, and add and mul of two quantized tensors.
// libtorch has a QuantizedCPU key per backend; one key serves while quantized tensors live on
// the CPU only.

/// The quantized dtype among an op's arguments, for the error of a missing Quantized kernel.
inline ScalarType quantized_dtype_of(const Tensor& t) {
  return t.defined() && is_qint_type(t.scalar_type()) ? t.scalar_type() : ScalarType::Undefined;
}
inline ScalarType quantized_dtype_of(const std::optional<Tensor>& t) {
  return t ? quantized_dtype_of(*t) : ScalarType::Undefined;
}
inline ScalarType quantized_dtype_of(TensorList ts) {
  for (const Tensor& t : ts)
    if (quantized_dtype_of(t) != ScalarType::Undefined) return t.scalar_type();
  return ScalarType::Undefined;
}
template <class T>
inline ScalarType quantized_dtype_of(const T&) { return ScalarType::Undefined; }
template <class... A>
inline ScalarType first_quantized_dtype(const A&... a) {
  ScalarType r = ScalarType::Undefined;
  ((r = r != ScalarType::Undefined ? r : quantized_dtype_of(a)), ...);
  return r;
}

/// The backend key of a device (a factory's key set).
inline DispatchKeySet backend_keys(Device d) {
  switch (d.type()) {
    case DeviceType::CUDA: return DispatchKeySet(DispatchKey::CUDA);
    case DeviceType::Meta: return DispatchKeySet(DispatchKey::Meta);
    default: return DispatchKeySet(DispatchKey::CPU);
  }
}

inline DispatchKeySet arg_keys(const Tensor& t) { return t.defined() ? key_set_of(t.unsafeGetTensorImpl()) : DispatchKeySet(); }
inline DispatchKeySet arg_keys(const std::optional<Tensor>& t) { return t ? arg_keys(*t) : DispatchKeySet(); }
inline DispatchKeySet arg_keys(TensorList ts) {
  DispatchKeySet ks;
  for (const Tensor& t : ts) ks = ks | arg_keys(t);
  return ks;
}
template <class T>
inline DispatchKeySet arg_keys(const T&) { return DispatchKeySet(); }

inline DispatchKeySet from_local(DispatchKeySet ks, const LocalKeys& lk) {
  const uint16_t global = g_global_included.load(std::memory_order_relaxed);
  return DispatchKeySet::from_bits(static_cast<uint16_t>(((ks | lk.included).raw() | global) & ~lk.excluded.raw()));
}

template <class... A>
inline DispatchKeySet compute_keys(const A&... a) {
  DispatchKeySet ks = (DispatchKeySet() | ... | arg_keys(a));
  const LocalKeys& lk = local_keys();
  return from_local(ks, lk);
}

[[noreturn]] TENSOR_API void no_kernel(const char* op, DispatchKey k);
/// The error of an op without a Quantized kernel (Note [Quantized key]).
[[noreturn]] TENSOR_API void no_quantized_kernel(const char* op, ScalarType dtype);

template <class Sig> struct OpDef;

/// One op's kernel table.
template <class R, class... A>
struct OpDef<R(A...)> {
  using Signature = R(A...);
  using Fn = R (*)(A...);
  const char* name;
  Fn kernels[kNumDispatchKeys] = {};

  R operator()(A... a) const { return call_with(compute_keys(a...), a...); }
  /// For a factory (no tensor argument): dispatches on the backend of `device`.
  R call_on(Device device, A... a) const {
    return call_with(from_local(backend_keys(device) | (DispatchKeySet() | ... | arg_keys(a)), local_keys()), a...);
  }
  /// redispatch for a factory: the backend of `device` stands for the missing tensor arguments.
  R redispatch_on(Device device, DispatchKey self, A... a) const {
    return call_with((backend_keys(device) | compute_keys(a...)).below(self), a...);
  }
  /// Calls the kernel for the highest key in `ks` below `self` (used by wrapping kernels).
  R redispatch(DispatchKey self, A... a) const { return call_with(compute_keys(a...).below(self), a...); }
  R call_with(DispatchKeySet ks, A... a) const {
    DispatchKey k = ks.highest();
    Fn f = kernels[static_cast<int>(k)];
    if (__builtin_expect(f == nullptr, 0)) {
      // Wrapping keys without a kernel fall through to the next key down; Quantized does not
      // (Note [Quantized key]).
      while (f == nullptr && k > DispatchKey::Quantized) {
        ks = ks.below(k);
        k = ks.highest();
        f = kernels[static_cast<int>(k)];
      }
      if (!f && k == DispatchKey::Quantized) no_quantized_kernel(name, first_quantized_dtype(a...));
      if (!f) no_kernel(name, k);
    }
    return f(a...);
  }
  void set(DispatchKey k, Fn f) { kernels[static_cast<int>(k)] = f; }
};

}  // namespace tensor::dispatch
