// Internal: the pieces that turn an op's backend slots into front ends over per-backend
// kernels (Note [Front ends and backend kernels], src/ops/ElementwiseOps.cpp).
#pragma once

#include "src/dispatch/Dispatcher.h"

namespace tensor::dispatch {

/// Backends that run kernels: CPU (built in) and CUDA (registered). Meta runs the front end alone.
constexpr int kNumKernelBackends = 2;
constexpr int backend_index(DispatchKey k) { return k == DispatchKey::CUDA ? 1 : 0; }

/// One op's (or one family of ops') kernel per backend. Built-in tables are constant-initialized
/// with CPU's kernel; a backend fills its entry when it registers (check_kernel_backend first).
template <class Kernel>
struct BackendKernels {
  Kernel kernels[kNumKernelBackends] = {};

  /// Backend K's kernel, or the dispatcher's "no kernel" error naming `op`; nullptr for Meta.
  /// Front ends call it before any work, so a missing kernel fails before allocating.
  template <DispatchKey K>
  Kernel get(const char* op) const {
    if constexpr (K == DispatchKey::Meta) {
      return nullptr;
    } else {
      Kernel k = kernels[backend_index(K)];
      if (__builtin_expect(k == nullptr, 0)) no_kernel(op, K);
      return k;
    }
  }
  void set(DispatchKey backend, Kernel k) { kernels[backend_index(backend)] = k; }
};

/// An op table whose CPU and Meta slots hold the front end's instances for those keys; the
/// CUDA slot is filled when a CUDA kernel is registered. Constant-initializable.
template <class Fn>
constexpr OpDef<Fn> front_end_def(const char* name, Fn* cpu, Fn* meta) {
  OpDef<Fn> d{name, {}};
  d.kernels[static_cast<int>(DispatchKey::CPU)] = cpu;
  d.kernels[static_cast<int>(DispatchKey::Meta)] = meta;
  return d;
}
/// front_end_def of a front end written as `template <DispatchKey K> R f(A...)`.
#define TENSOR_FRONT_END_DEF(Fn, name, f) \
  ::tensor::dispatch::front_end_def<Fn>(name, &f<::tensor::DispatchKey::CPU>, &f<::tensor::DispatchKey::Meta>)

/// An op table for a composite of dispatched public ops: the composite serves every backend
/// key, since each of its pieces dispatches on its own (and records its own history).
template <class Fn>
constexpr OpDef<Fn> composite_def(const char* name, Fn* f) {
  OpDef<Fn> d{name, {}};
  d.kernels[static_cast<int>(DispatchKey::CPU)] = f;
  d.kernels[static_cast<int>(DispatchKey::CUDA)] = f;
  d.kernels[static_cast<int>(DispatchKey::Meta)] = f;
  return d;
}

/// `d` with its Quantized slot set to `f` (Note [Quantized key] in src/dispatch/Dispatcher.h).
template <class Fn>
constexpr OpDef<Fn> with_quantized(OpDef<Fn> d, Fn* f) {
  d.kernels[static_cast<int>(DispatchKey::Quantized)] = f;
  return d;
}

/// A composite made of views only (reshape, narrow, split, ...): quantized tensors may take
/// it too, so it fills the Quantized slot as well. Other composites leave that slot empty, so
/// that they raise under their own name rather than under the name of their first piece.
template <class Fn>
constexpr OpDef<Fn> view_composite_def(const char* name, Fn* f) {
  return with_quantized(composite_def<Fn>(name, f), f);
}

/// An op table for a view (Note [Views through the dispatcher], src/ops/ViewOps.cpp): one
/// geometry function, which reads no data, serves every backend key and quantized tensors;
/// unlike a composite's, the Autograd slot is filled (by autograd) to record the view node.
template <class Fn>
constexpr OpDef<Fn> view_def(const char* name, Fn* geometry) {
  return view_composite_def<Fn>(name, geometry);
}

/// Throws unless kernels can be registered for `backend`: only CUDA, since CPU's are built in
/// and Meta runs the front end alone.
void check_kernel_backend(DispatchKey backend, const char* op);

}  // namespace tensor::dispatch
