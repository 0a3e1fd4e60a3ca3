// Philox4x32-10 and the transforms from its words to the numbers the factories draw
// (Note [Counter-based RNG] in src/core/Random.cpp). The CPU generator and the CUDA kernels
// both call these, so a seed gives the same bits on either device.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/math/Macros.h"

namespace tensor::math::philox {

// Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC 2011): the
// round multipliers and the Weyl key increments of Philox4x32.
constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
constexpr int kRounds = 10;

/// One Philox4x32 round: c becomes the round's output under key k.
TENSOR_HD_INLINE void round(uint32_t c[4], const uint32_t k[2]) {
#if defined(__CUDA_ARCH__)
  const uint32_t hi0 = __umulhi(kM0, c[0]), lo0 = kM0 * c[0];
  const uint32_t hi1 = __umulhi(kM1, c[2]), lo1 = kM1 * c[2];
#else
  const uint64_t p0 = uint64_t(kM0) * c[0], p1 = uint64_t(kM1) * c[2];
  const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
#endif
  const uint32_t n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

/// Philox4x32-10 of a full 128-bit counter `ctr` under the 64-bit key `key` into `out`
/// (the function Random123's philox4x32 computes; tests check its published answers).
TENSOR_HD_INLINE void raw(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k[2] = {key[0], key[1]};
  for (int r = 0; r < kRounds; ++r) {
    round(c, k);
    k[0] += kW0;
    k[1] += kW1;
  }
  for (int i = 0; i < 4; ++i) out[i] = c[i];
}

/// The 4 words of draw number `counter` for `seed`: raw() of counter {lo, hi, 0, 0} under key
/// {lo(seed), hi(seed)}. The generator's stream is draw(seed, offset), draw(seed, offset + 1)...
TENSOR_HD_INLINE void draw(uint64_t seed, uint64_t counter, uint32_t out[4]) {
  const uint32_t c[4] = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u};
  const uint32_t k[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  raw(c, k, out);
}

/// A double uniform on [0, 1) with 53 random bits, from two words (the high 32 bits of the
/// 53-bit integer from `hi`, the low 21 from the top of `lo`). rand draws two per counter:
/// u01_53(w[0], w[1]) and u01_53(w[2], w[3]).
TENSOR_HD_INLINE double u01_53(uint32_t hi, uint32_t lo) {
  return static_cast<double>((static_cast<uint64_t>(hi) << 21) ^ (lo >> 11)) * (1.0 / 9007199254740992.0);
}

/// Two independent standard normals from two uniforms on [0, 1) by Box-Muller:
/// r = sqrt(-2 log(1 - u1)) (1 - u1 is in (0, 1], so r is finite), th = 2 pi u2,
/// out = {r cos th, r sin th}. randn draws both from one counter's two uniforms.
TENSOR_HD_INLINE void box_muller(double u1, double u2, double out[2]) {
  const double r = std::sqrt(-2.0 * std::log(1.0 - u1)), th = 2.0 * 3.14159265358979323846 * u2;
  out[0] = r * std::cos(th);
  out[1] = r * std::sin(th);
}

/// An integer in [low, low + range) from two words (a 64-bit value reduced mod range, range >= 1;
/// the bias is below range / 2^64). Arithmetic wraps in uint64_t, so ranges over 2^63 work.
/// randint draws one per counter, from w[0] (high) and w[1] (low).
TENSOR_HD_INLINE int64_t uniform_int(uint32_t hi, uint32_t lo, int64_t low, uint64_t range) {
  const uint64_t v = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<int64_t>(static_cast<uint64_t>(low) + v % range);
}

}  // namespace tensor::math::philox
