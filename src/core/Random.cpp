// The global generator: Philox4x32-10, counter-based (Note [Counter-based RNG]). The generator
// and its transforms live in kernels/math/Philox.h, shared with the CUDA kernels; rand, randn
// and randint reserve counters here and fill on their backend (Note [Factory kernels] in
// src/ops/FactoryOps.h).
#include <mutex>

#include "src/core/FactoryImpls.h"
#include "src/core/RandomState.h"
#include "src/core/Check.h"
#include "tensor/ops.h"

namespace tensor {

// Note [Counter-based RNG]
// Philox maps (key = seed, counter) to 4 random 32-bit words with no state to carry, so
// element i of a draw uses counter offset + i / 2 (rand, randn) or offset + i (randint)
// whatever thread or device computes it: results are identical for any thread count and on
// CUDA, and the generator only advances its offset per call (graph-safe RNG needs exactly this).
namespace {
struct Generator {
  std::mutex mu;
  uint64_t seed = 67280421310721ull;
  uint64_t offset = 0;
};
Generator& gen() {
  static Generator g;
  return g;
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
RngState reserve_rng(uint64_t counters) {
  std::lock_guard<std::mutex> g(gen().mu);  // seed and offset read together: no manual_seed between
  RngState r{gen().seed, gen().offset};
  gen().offset += counters;
  return r;
}
}  // namespace detail

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(gen().mu);
  gen().seed = seed;
  gen().offset = 0;
}

Tensor randint(int64_t high, IntArrayRef sizes, const TensorOptions& o) { return randint(0, high, sizes, o); }

}  // namespace tensor
