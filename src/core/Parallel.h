// Internal: the library's one policy for starting OpenMP threads on CPU loops.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace tensor::detail {

/// Elements of work below which a loop runs on one thread: smaller loops lose more to waking
/// threads than they gain (the elementwise engine's grain too).
constexpr int64_t kGrain = 32768;

/// Threads for `work` elements: one below the grain or inside a parallel region, else at most
/// one per grain of work, up to the intra-op thread count.
inline int threads_for(int64_t work) {
  if (work < kGrain || omp_in_parallel()) return 1;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), work / kGrain)));
}

// Note [One-thread parallel regions]
// CPU loops run through parallel_range rather than `#pragma omp parallel for` with a
// num_threads or if clause: with one thread (every input under the grain) libgomp still enters
// a parallel region, and each region costs a futex system call (0.9 us on an idle 2-vCPU
// machine, several under load; layer_norm on [64, 64] spent more there than in its arithmetic,
// and a [64, 64] gather a seventh of its call). parallel_range runs a one-thread range inline.

/// Runs f(begin, end) over [0, n) in at most nt contiguous chunks (f once, inline, when one
/// thread suffices); never more threads than items. f must not throw.
template <class F>
void parallel_range(int64_t n, int nt, const F& f) {
  if (n < nt) nt = static_cast<int>(n);
  if (nt <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num(), k = omp_get_num_threads();
    const int64_t per = (n + k - 1) / k;
    const int64_t b = std::min(n, t * per), e = std::min(n, b + per);
    if (b < e) f(b, e);
  }
}

/// parallel_range over threads_for(n) chunks: the grain counts elements of work.
template <class F>
void parallel_range(int64_t n, const F& f) {
  parallel_range(n, threads_for(n), f);
}

}  // namespace tensor::detail
