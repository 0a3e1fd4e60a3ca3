// The factories as dispatcher ops (src/ops/FactoryOps.h).
//
// Note [Factories through the dispatcher]
// A factory has no tensor argument to take a dispatch key from, so it dispatches on the
// backend of the device its options name (OpDef::call_on), plus the thread's included keys:
// the profiler sees `empty`, `zeros` (as `full`), `arange` or `randn` like any other op, as in
// libtorch. The implementations (src/core/Factories.cpp, src/core/Random.cpp) allocate through
// the device's allocator, so one function fills every backend slot (composite_def). The filling
// factories (rand, randn, randint, randperm, arange, linspace) are front ends over a
// per-backend kernel instead (Note [Factory kernels] in src/ops/FactoryOps.h). The *_like
// factories, zeros, ones, and the shorter arange/eye/randint overloads call these, so they show
// as the op they call. from_blob and the tensor() literals are not ops, as in libtorch.
#include "src/ops/FactoryOps.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cuda/RandomBody.h"
#include "src/core/Check.h"
#include "src/core/DtypeVisit.h"
#include "src/core/FactoryImpls.h"
#include "src/core/FactoryOptions.h"
#include "src/core/Parallel.h"
#include "src/core/RandomState.h"
#include "src/dispatch/BackendKernels.h"
#include "src/ops/MemoryFormat.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {
using dispatch::composite_def;
namespace body = cuda_kernels;

// ---- the CPU kernels: the bodies of kernels/cuda/RandomBody.h per index ----

// Below this many elements the threads cost more than the fill.
constexpr int64_t kParallelGrain = 65536;

/// f(i) for i in [0, count), on threads when n (the elements written) is above the grain;
/// inline below it (Note [One-thread parallel regions] in src/core/Parallel.h).
template <class F>
void for_each_index(int64_t count, int64_t n, const F& f) {
  detail::parallel_range(count, n > kParallelGrain ? detail::threads_for(n) : 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

void random_cpu(const Tensor& out, uint64_t seed, uint64_t base, bool normal) {
  const int64_t n = out.numel(), pairs = (n + 1) / 2;
  visit_dtype<kGroupFloating>(out.dtype(), normal ? "randn" : "rand", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    for_each_index(pairs, n, [&](int64_t i) { body::random_pair_body(p, n, i, seed, base, normal); });
  });
}

// Complex outputs (CPU only) take the real value through DtypeVisit's convert, as a copy from
// the int64 or float64 value would.
void randint_cpu(const Tensor& out, uint64_t seed, uint64_t base, int64_t low, uint64_t range) {
  const int64_t n = out.numel();
  visit_dtype(out.dtype(), "randint", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    for_each_index(n, n, [&](int64_t i) {
      if constexpr (is_complex_v<T>) p[i] = convert<T>(body::randint_value(seed, base, i, low, range));
      else body::randint_body(p, i, seed, base, low, range);
    });
  });
}

void arange_cpu(const Tensor& out, const kernels::ArangeParams& a) {
  const int64_t n = out.numel();
  visit_dtype(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    for_each_index(n, n, [&](int64_t i) {
      if constexpr (is_complex_v<T>)
        p[i] = a.integral ? convert<T>(body::arange_int_value(a, i)) : convert<T>(body::arange_value(a, i));
      else body::arange_body(p, i, a);
    });
  });
}

void linspace_cpu(const Tensor& out, const kernels::LinspaceParams& l) {
  const int64_t n = out.numel();
  visit_dtype(out.dtype(), "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    for_each_index(n, n, [&](int64_t i) {
      if constexpr (is_complex_v<T>) p[i] = convert<T>(body::linspace_value(l, i));
      else body::linspace_body(p, i, l);
    });
  });
}

// Note [randperm by sorted keys]
// randperm draws one Philox key per element (randint's n counters over [0, 2^62)) and returns
// the stable argsort of the keys: a uniform permutation (ties, rare at 62 bits, keep index
// order) that is a function of (seed, offset) only. Unlike a Fisher-Yates shuffle it sorts in
// parallel, so CUDA (CUB's radix sort, stable too) gives the same permutation as the CPU.
void randperm_cpu(const Tensor& keys, const Tensor& out) {
  const int64_t n = keys.numel();
  const int64_t* k = keys.data_ptr<int64_t>();
  int64_t* p = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  std::stable_sort(p, p + n, [k](int64_t a, int64_t b) { return k[a] < k[b]; });
}

dispatch::BackendKernels<RandomKernel> g_random_kernels{{&random_cpu, nullptr}};
dispatch::BackendKernels<RandintKernel> g_randint_kernels{{&randint_cpu, nullptr}};
dispatch::BackendKernels<ArangeKernel> g_arange_kernels{{&arange_cpu, nullptr}};
dispatch::BackendKernels<LinspaceKernel> g_linspace_kernels{{&linspace_cpu, nullptr}};
dispatch::BackendKernels<RandpermKernel> g_randperm_kernels{{&randperm_cpu, nullptr}};

// ---- the front ends, shared by every backend; Meta allocates and fills nothing ----
// The output is allocated before the kernel is looked up, so a CUDA request without the CUDA
// library fails with the allocator's message saying why; the generator is advanced only once a
// kernel will run.

template <DispatchKey K>
Tensor random_front(IntArrayRef sizes, const TensorOptions& o, bool normal) {
  const char* op = normal ? "randn" : "rand";
  const ScalarType t = o.dtype();
  TENSOR_CHECK(is_floating_point(t), "{}: expected a floating point dtype, got {} (size {})", op, t,
               detail::shape_str(sizes));
  Tensor out = empty(sizes, o.requires_grad(false));
  if constexpr (K != DispatchKey::Meta) {
    RandomKernel k = g_random_kernels.get<K>(op);
    const detail::RngState r = detail::reserve_rng(static_cast<uint64_t>((out.numel() + 1) / 2));
    k(out, r.seed, r.offset, normal);
  }
  return detail::apply_factory_options(out, o);
}
template <DispatchKey K>
Tensor rand_front(IntArrayRef sizes, const TensorOptions& o) { return random_front<K>(sizes, o, false); }
template <DispatchKey K>
Tensor randn_front(IntArrayRef sizes, const TensorOptions& o) { return random_front<K>(sizes, o, true); }

template <DispatchKey K>
Tensor randint_front(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& o) {
  TENSOR_CHECK(low < high, "randint: expected low < high, got low={} high={} (size {})", low, high,
               detail::shape_str(sizes));
  const TensorOptions opts = o.has_dtype() ? o : o.dtype(kInt64);
  Tensor out = empty(sizes, opts.requires_grad(false));
  if constexpr (K != DispatchKey::Meta) {
    RandintKernel k = g_randint_kernels.get<K>("randint");
    const detail::RngState r = detail::reserve_rng(static_cast<uint64_t>(out.numel()));
    // In uint64: high - low overflows int64 for ranges over 2^63 (randint(-2^62, 2^62) is one).
    k(out, r.seed, r.offset, low, static_cast<uint64_t>(high) - static_cast<uint64_t>(low));
  }
  return detail::apply_factory_options(out, o);
}

// The largest n whose permutation's values 0 .. n-1 all fit `t` exactly.
int64_t randperm_limit(ScalarType t) {
  switch (t) {
    case kUInt8: return int64_t(1) << 8;
    case kInt8: return int64_t(1) << 7;
    case kInt16: return int64_t(1) << 15;
    case kInt32: return int64_t(1) << 31;
    case kFloat16: return (int64_t(1) << 11) + 1;
    case kBFloat16: return (int64_t(1) << 8) + 1;
    case kFloat32: return (int64_t(1) << 24) + 1;
    case kFloat64: return (int64_t(1) << 53) + 1;
    default: return std::numeric_limits<int64_t>::max();
  }
}

template <DispatchKey K>
Tensor randperm_front(int64_t n, const TensorOptions& o) {
  TENSOR_CHECK(n >= 0, "randperm: n must be non-negative, got {}", n);
  const TensorOptions opts = o.has_dtype() ? o : o.dtype(kInt64);
  const ScalarType t = opts.dtype();
  TENSOR_CHECK(t != kBool && !is_complex(t), "randperm: expected a real integer or floating dtype, got {}", t);
  TENSOR_CHECK(n <= randperm_limit(t), "randperm: n is too large for result tensor type {}: n={} (at most {})", t, n,
               randperm_limit(t));
  const TensorOptions idx = TensorOptions(kInt64).device(opts.device());
  Tensor perm = empty({n}, idx);
  if constexpr (K != DispatchKey::Meta) {
    RandintKernel draw = g_randint_kernels.get<K>("randperm");
    RandpermKernel sort = g_randperm_kernels.get<K>("randperm");
    Tensor keys = empty({n}, idx);
    const detail::RngState r = detail::reserve_rng(static_cast<uint64_t>(n));
    draw(keys, r.seed, r.offset, 0, uint64_t(1) << 62);
    sort(keys, perm);
  }
  Tensor out = t == kInt64 ? perm : perm.to(t);
  return detail::apply_factory_options(out, o);
}

template <DispatchKey K>
Tensor arange_front(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  const bool all_int = start.is_integral(true) && end.is_integral(true) && step.is_integral(true);
  const TensorOptions opts = o.has_dtype() ? o : o.dtype(all_int ? kInt64 : get_default_dtype());
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  TENSOR_CHECK(st != 0, "arange: step must be nonzero");
  TENSOR_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
               "arange: upper bound and larger bound inconsistent with step sign (start={}, end={}, step={})", s, e, st);
  kernels::ArangeParams a;
  a.integral = all_int;
  a.start = s;
  a.step = st;
  int64_t n;
  if (all_int) {
    a.istart = start.to_long();
    a.istep = step.to_long();
    n = (end.to_long() - a.istart + a.istep - (a.istep > 0 ? 1 : -1)) / a.istep;
  } else {
    n = static_cast<int64_t>(std::ceil((e - s) / st));
  }
  Tensor out = empty({n}, opts.requires_grad(false));
  if constexpr (K != DispatchKey::Meta) g_arange_kernels.get<K>("arange")(out, a);
  return detail::apply_factory_options(out, o);
}

template <DispatchKey K>
Tensor linspace_front(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  TENSOR_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got {}", steps);
  kernels::LinspaceParams l;
  l.start = start.to_double();
  // One step is start, as PyTorch (the symmetric formula alone would count it back from end).
  l.end = steps == 1 ? l.start : end.to_double();
  l.step = steps > 1 ? (l.end - l.start) / static_cast<double>(steps - 1) : 0.0;
  l.steps = steps;
  const TensorOptions opts = o.has_dtype() ? o : o.dtype(get_default_dtype());
  Tensor out = empty({steps}, opts.requires_grad(false));
  if constexpr (K != DispatchKey::Meta) g_linspace_kernels.get<K>("linspace")(out, l);
  return detail::apply_factory_options(out, o);
}

// The front end's instance for each backend key; a backend without a registered kernel raises
// "no kernel" from BackendKernels::get.
template <class Fn>
constexpr dispatch::OpDef<Fn> kernel_def(const char* name, Fn* cpu, Fn* cuda, Fn* meta) {
  dispatch::OpDef<Fn> d{name, {}};
  d.kernels[static_cast<int>(DispatchKey::CPU)] = cpu;
  d.kernels[static_cast<int>(DispatchKey::CUDA)] = cuda;
  d.kernels[static_cast<int>(DispatchKey::Meta)] = meta;
  return d;
}
#define TENSOR_FACTORY_DEF(Fn, name, f) \
  kernel_def<Fn>(name, &f<DispatchKey::CPU>, &f<DispatchKey::CUDA>, &f<DispatchKey::Meta>)

FactoryOpDefs g_factories = {
    composite_def<EmptyFn>("empty", &detail::empty_impl),
    composite_def<EmptyStridedFn>("empty_strided", &detail::empty_strided_impl),
    composite_def<FullFn>("full", &detail::full_impl),
    composite_def<ScalarTensorFn>("scalar_tensor", &detail::scalar_tensor_impl),
    TENSOR_FACTORY_DEF(ArangeFn, "arange", arange_front),
    TENSOR_FACTORY_DEF(LinspaceFn, "linspace", linspace_front),
    composite_def<EyeFn>("eye", &detail::eye_impl),
    TENSOR_FACTORY_DEF(RandFn, "rand", rand_front),
    TENSOR_FACTORY_DEF(RandFn, "randn", randn_front),
    TENSOR_FACTORY_DEF(RandintFn, "randint", randint_front),
    TENSOR_FACTORY_DEF(RandpermFn, "randperm", randperm_front),
};
#undef TENSOR_FACTORY_DEF
}  // namespace

FactoryOpDefs& factory_ops() { return g_factories; }

void register_kernel(DispatchKey backend, RandomKernel kernel) {
  dispatch::check_kernel_backend(backend, "rand");
  g_random_kernels.set(backend, kernel);
}
void register_kernel(DispatchKey backend, RandintKernel kernel) {
  dispatch::check_kernel_backend(backend, "randint");
  g_randint_kernels.set(backend, kernel);
}
void register_kernel(DispatchKey backend, ArangeKernel kernel) {
  dispatch::check_kernel_backend(backend, "arange");
  g_arange_kernels.set(backend, kernel);
}
void register_kernel(DispatchKey backend, LinspaceKernel kernel) {
  dispatch::check_kernel_backend(backend, "linspace");
  g_linspace_kernels.set(backend, kernel);
}
void register_kernel(DispatchKey backend, RandpermKernel kernel) {
  dispatch::check_kernel_backend(backend, "randperm");
  g_randperm_kernels.set(backend, kernel);
}
}  // namespace ops

using ops::factory_ops;

Tensor empty(IntArrayRef sizes, const TensorOptions& o) {
  if (o.has_memory_format()) return empty(sizes, o, std::nullopt);
  return factory_ops().empty.call_on(o.device(), sizes, o);
}
Tensor empty(IntArrayRef sizes, const TensorOptions& o, std::optional<MemoryFormat> memory_format) {
  TENSOR_CHECK(!(o.has_memory_format() && memory_format.has_value()),
               "empty: memory_format given both in the options ({}) and as an argument ({}); give it once",
               to_string(*o.memory_format_opt()), to_string(memory_format.value_or(MemoryFormat::Contiguous)));
  const MemoryFormat f = memory_format ? *memory_format : o.memory_format_opt().value_or(MemoryFormat::Contiguous);
  if (f == MemoryFormat::Contiguous) return factory_ops().empty.call_on(o.device(), sizes, o);
  return empty_strided(sizes, layout::strides_for(sizes, f, "empty"), o);
}
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o) {
  return factory_ops().empty_strided.call_on(o.device(), sizes, strides, o);
}
Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& o) {
  return factory_ops().full.call_on(o.device(), sizes, value, o);
}
Tensor scalar_tensor(const Scalar& s, const TensorOptions& o) {
  // A scalar tensor is on the CPU unless the options say otherwise (not the default device).
  return factory_ops().scalar_tensor.call_on(o.has_device() ? o.device() : Device(kCPU), s, o);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  return factory_ops().arange.call_on(o.device(), start, end, step, o);
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  return factory_ops().linspace.call_on(o.device(), start, end, steps, o);
}
Tensor eye(int64_t n, int64_t m, const TensorOptions& o) { return factory_ops().eye.call_on(o.device(), n, m, o); }
Tensor rand(IntArrayRef sizes, const TensorOptions& o) { return factory_ops().rand.call_on(o.device(), sizes, o); }
Tensor randn(IntArrayRef sizes, const TensorOptions& o) { return factory_ops().randn.call_on(o.device(), sizes, o); }
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& o) {
  return factory_ops().randint.call_on(o.device(), low, high, sizes, o);
}
Tensor randperm(int64_t n, const TensorOptions& o) { return factory_ops().randperm.call_on(o.device(), n, o); }

}  // namespace tensor
