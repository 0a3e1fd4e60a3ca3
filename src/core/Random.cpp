// The global generator: Philox4x32-10, counter-based (Note [Counter-based RNG]). The generator
// and its transforms live in kernels/math/Philox.h, shared with the CUDA kernels.
#include <mutex>

#include "kernels/math/Philox.h"
#include "src/core/FactoryImpls.h"
#include "src/core/RandomState.h"
#include "src/core/Check.h"
#include "src/core/FactoryOptions.h"
#include "src/core/DtypeVisit.h"
#include "tensor/ops.h"

namespace tensor {

// Note [Counter-based RNG]
// Philox maps (key = seed, counter) to 4 random 32-bit words with no state to carry, so
// element i of a draw uses counter (offset + i / 4) whatever thread computes it: results
// are identical for any thread count, and the generator only advances its offset per call.
// CUDA kernels can use the same scheme (and graph-safe RNG needs exactly this).
namespace {
struct Generator {
  std::mutex mu;
  uint64_t seed = 67280421310721ull;
  uint64_t offset = 0;
  // Reserves `n` counters and returns the first.
  uint64_t reserve(uint64_t n) {
    std::lock_guard<std::mutex> g(mu);
    uint64_t o = offset;
    offset += n;
    return o;
  }
};
Generator& gen() {
  static Generator g;
  return g;
}

// Fills a contiguous float64 buffer of n values, 2 per counter (uniform) via `f(u1, u2, out2)`.
template <class F>
void fill_pairs(double* p, int64_t n, uint64_t seed, uint64_t base, const F& f) {
  int64_t pairs = (n + 1) / 2;
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < pairs; ++i) {
    uint32_t r[4];
    math::philox::draw(seed, base + static_cast<uint64_t>(i), r);
    double out2[2];
    f(math::philox::u01_53(r[0], r[1]), math::philox::u01_53(r[2], r[3]), out2);
    p[2 * i] = out2[0];
    if (2 * i + 1 < n) p[2 * i + 1] = out2[1];
  }
}

Tensor random_impl(IntArrayRef sizes, const TensorOptions& o, bool normal, const char* op) {
  ScalarType t = o.dtype();
  TENSOR_CHECK(is_floating_point(t), "{}: expected a floating point dtype, got {}", op, t);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Tensor buf = empty({n}, TensorOptions(kFloat64));
  uint64_t seed, base = gen().reserve(static_cast<uint64_t>((n + 1) / 2));
  {
    std::lock_guard<std::mutex> g(gen().mu);
    seed = gen().seed;
  }
  double* p = buf.data_ptr<double>();
  if (normal) {
    fill_pairs(p, n, seed, base, [](double u1, double u2, double* out) { math::philox::box_muller(u1, u2, out); });
  } else {
    fill_pairs(p, n, seed, base, [](double u1, double u2, double* out) {
      out[0] = u1;
      out[1] = u2;
    });
  }
  Tensor out = buf.view(sizes).to(TensorOptions().dtype(t).device(o.device()));
  if (!normal && t != kFloat64) {
    // Rounding to a narrower dtype can produce exactly 1.0; clamp to the largest value below
    // 1 that the target dtype holds (1 - 2^-mantissa bits), keeping the range [0, 1).
    const double below_one = t == kHalf ? 1.0 - 1.0 / 2048 : t == kBFloat16 ? 1.0 - 1.0 / 256 : 1.0 - 1.0 / 16777216;
    Tensor cpu_out = out.is_cpu() ? out : out.cpu();
    out = cpu_out.clamp(std::nullopt, below_one).to(o.device());
  }
  return detail::apply_factory_options(out, o);
}
}  // namespace

namespace detail {
RngState get_rng_state() {
  std::lock_guard<std::mutex> g(gen().mu);
  return {gen().seed, gen().offset};
}
void set_rng_state(const RngState& s) {
  std::lock_guard<std::mutex> g(gen().mu);
  gen().seed = s.seed;
  gen().offset = s.offset;
}
}  // namespace detail

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(gen().mu);
  gen().seed = seed;
  gen().offset = 0;
}

Tensor detail::rand_impl(IntArrayRef sizes, const TensorOptions& o) { return random_impl(sizes, o, false, "rand"); }
Tensor detail::randn_impl(IntArrayRef sizes, const TensorOptions& o) { return random_impl(sizes, o, true, "randn"); }

Tensor randint(int64_t high, IntArrayRef sizes, const TensorOptions& o) { return randint(0, high, sizes, o); }
Tensor detail::randint_impl(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& o) {
  TENSOR_CHECK(low < high, "randint: expected low < high, got low={} high={}", low, high);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Tensor buf = empty({n}, TensorOptions(kInt64));
  uint64_t seed, base = gen().reserve(static_cast<uint64_t>(n));
  {
    std::lock_guard<std::mutex> g(gen().mu);
    seed = gen().seed;
  }
  // In uint64: high - low overflows int64 for ranges over 2^63 (randint(-2^62, 2^62) is one).
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  int64_t* p = buf.data_ptr<int64_t>();
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    uint32_t r[4];
    math::philox::draw(seed, base + static_cast<uint64_t>(i), r);
    p[i] = math::philox::uniform_int(r[0], r[1], low, range);  // < high: no wrap past it
  }
  TensorOptions opts = o.has_dtype() ? o : o.dtype(kInt64);
  return buf.view(sizes).to(TensorOptions().dtype(opts.dtype()).device(opts.device()));
}

Tensor detail::randperm_impl(int64_t n, const TensorOptions& o) {
  TENSOR_CHECK(n >= 0, "randperm: n must be non-negative, got {}", n);
  Tensor keys = randint(0, int64_t(1) << 62, {n});
  // Fisher-Yates driven by the drawn keys keeps it a function of (seed, offset) only.
  Tensor out = empty({n}, TensorOptions(kInt64));
  int64_t* p = out.data_ptr<int64_t>();
  const int64_t* k = keys.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[k[i] % (i + 1)]);
  TensorOptions opts = o.has_dtype() ? o : o.dtype(kInt64);
  return out.to(TensorOptions().dtype(opts.dtype()).device(opts.device()));
}

}  // namespace tensor
