// Internal: the global generator's position, so activation checkpointing can replay the random
// numbers of a forward pass (Note [Activation checkpointing]).
#pragma once

#include <cstdint>

namespace tensor::detail {

/// Philox key and counter offset of the global generator.
struct RngState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};
RngState get_rng_state();
void set_rng_state(const RngState& s);
/// Reserves `counters` Philox counters of the global generator: its seed and the first counter.
RngState reserve_rng(uint64_t counters);

}  // namespace tensor::detail
