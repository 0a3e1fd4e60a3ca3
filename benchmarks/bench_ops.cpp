// Elementwise and reduction cases of TARGETS.md: libtensor beside libtorch, same process,
// same thread count. Prints each figure and the time ratio (libtensor / libtorch; < 1 wins).
// Usage: bench_ops [case-substring]
#include <immintrin.h>
#include <omp.h>
#include <tensor/tensor.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

constexpr int64_t k16M = 16 << 20;

double eager_add() {
  Tensor a = tensor::rand({1}), b = tensor::rand({1});
  return median_seconds([&] { Tensor c = a + b; }, 15, 20000);
}
double autograd_overhead() {
  Tensor x = tensor::rand({1}, tensor::requires_grad()), y = tensor::rand({1}, tensor::requires_grad());
  return median_seconds([&] { (x * y + x).sum().backward(); }, 15, 2000);
}
// Views are made everywhere (inside other ops' front ends too), so their fixed cost matters:
// view, transpose and select of a small tensor, without and with a base that requires grad.
double view_overhead() {
  Tensor x = tensor::rand({4, 4});
  return median_seconds([&] {
    Tensor v = x.view({16});
    Tensor t = x.transpose(0, 1);
    Tensor s = x.select(0, 1);
  }, 15, 20000);
}
double view_autograd_overhead() {
  Tensor x = tensor::rand({4, 4}, tensor::requires_grad());
  return median_seconds([&] {
    Tensor v = x.view({16});
    Tensor t = x.transpose(0, 1);
    Tensor s = x.select(0, 1);
  }, 15, 5000);
}
double add_out() {
  Tensor a = tensor::rand({k16M}), b = tensor::rand({k16M}), c = tensor::empty({k16M});
  return median_seconds([&] { tensor::add_out(c, a, b); });
}
double exp16() {
  Tensor a = tensor::rand({k16M});
  return median_seconds([&] { Tensor c = tensor::exp(a); });
}
double bcast_add() {
  Tensor a = tensor::rand({4096, 4096}), b = tensor::rand({4096});
  return median_seconds([&] { Tensor c = a + b; });
}
double transpose_copy() {
  Tensor a = tensor::rand({4096, 4096});
  return median_seconds([&] { Tensor c = a.t().contiguous(); });
}
double sum16() {
  Tensor a = tensor::rand({k16M});
  return median_seconds([&] { Tensor s = a.sum(); });
}
double sum_dim0() {
  Tensor a = tensor::rand({4096, 4096});
  return median_seconds([&] { Tensor s = a.sum({0}); });
}
// A classifier's log_softmax (cross_entropy over 10 classes, batch 128): rows shorter than a vector.
double log_softmax_small() {
  Tensor a = tensor::randn({128, 10});
  return median_seconds([&] { Tensor s = tensor::log_softmax(a, 1); }, 15, 2000);
}
double softmax_rows() {
  Tensor a = tensor::rand({4096, 4096});
  return median_seconds([&] { Tensor s = tensor::softmax(a, 1); });
}

// The machine's streaming bandwidth: a plain OpenMP c = a + b over 16M floats.
double stream_add() {
  std::vector<float> a(k16M, 1.0f), b(k16M, 2.0f), c(k16M);
  return median_seconds([&] {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < k16M; ++i) c[i] = a[i] + b[i];
  });
}

// The machine's float32 FMA peak: each thread runs 12 independent chains of 512-bit FMAs (two
// FMA ports x 4 cycles of latency need 8 in flight), so nothing but the FMA units limits it.
// Named accumulators, not an array: an array of vectors is spilled to memory at -O2.
__attribute__((target("avx512f"))) float fma_chains(int64_t iters) {
  const __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-7f);
  __m512 a0 = _mm512_set1_ps(0.1f), a1 = _mm512_set1_ps(0.2f), a2 = _mm512_set1_ps(0.3f), a3 = _mm512_set1_ps(0.4f);
  __m512 a4 = _mm512_set1_ps(0.5f), a5 = _mm512_set1_ps(0.6f), a6 = _mm512_set1_ps(0.7f), a7 = _mm512_set1_ps(0.8f);
  __m512 a8 = _mm512_set1_ps(0.9f), a9 = _mm512_set1_ps(1.0f), a10 = _mm512_set1_ps(1.1f), a11 = _mm512_set1_ps(1.2f);
  for (int64_t i = 0; i < iters; ++i) {
    a0 = _mm512_fmadd_ps(a0, m, c); a1 = _mm512_fmadd_ps(a1, m, c); a2 = _mm512_fmadd_ps(a2, m, c);
    a3 = _mm512_fmadd_ps(a3, m, c); a4 = _mm512_fmadd_ps(a4, m, c); a5 = _mm512_fmadd_ps(a5, m, c);
    a6 = _mm512_fmadd_ps(a6, m, c); a7 = _mm512_fmadd_ps(a7, m, c); a8 = _mm512_fmadd_ps(a8, m, c);
    a9 = _mm512_fmadd_ps(a9, m, c); a10 = _mm512_fmadd_ps(a10, m, c); a11 = _mm512_fmadd_ps(a11, m, c);
  }
  const __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                 _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)),
                                               _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11))));
  return _mm512_reduce_add_ps(s);
}
constexpr int64_t kFmaIters = 4 << 20;
constexpr double kFmaFlops = 2.0 * 16 * 12 * kFmaIters;  // per thread per call

/// Seconds per call of fma_chains on every thread at once; 0 when the CPU lacks AVX-512.
double fma_peak() {
  if (!__builtin_cpu_supports("avx512f")) return 0;
  volatile float sink = 0;
  return median_seconds([&] {
#pragma omp parallel
    sink = sink + fma_chains(kFmaIters);
  });
}

const bench::AddCases kOpCases({
    {"eager_add_1elem", "us", 0, "<= 0.5x", eager_add},
    {"autograd_overhead", "us", 0, "<= 0.5x", autograd_overhead},
    {"view_overhead", "us", 0, "<= 1.0x", view_overhead},
    {"view_autograd_overhead", "us", 0, "<= 1.0x", view_autograd_overhead},
    {"add_16M_out", "GB/s", 3.0 * 4 * k16M, ">= 1.0x, >= 90% stream", add_out},
    {"exp_16M", "GB/s", 2.0 * 4 * k16M, ">= 1.5x", exp16},
    {"broadcast_add_4096", "ms", 0, "<= 0.5x", bcast_add},
    {"transpose_copy_4096", "ms", 0, "<= 0.5x", transpose_copy},
    {"sum_16M", "ms", 0, "<= 1.0x", sum16},
    {"sum_dim0_4096", "ms", 0, "<= 1.0x", sum_dim0},
    {"softmax_rows_4096", "ms", 0, "<= 0.5x", softmax_rows},
    {"log_softmax_128x10", "us", 0, "<= 1.0x", log_softmax_small},
});


std::string show(double sec, const bench::Case& c) {
  char buf[64];
  if (c.unit == "us") std::snprintf(buf, sizeof buf, "%.3f us", sec * 1e6);
  else if (c.unit == "ms") std::snprintf(buf, sizeof buf, "%.2f ms", sec * 1e3);
  else if (c.unit == "GFLOP/s") std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", c.work / sec / 1e9);
  else std::snprintf(buf, sizeof buf, "%.1f GB/s", c.work / sec / 1e9);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : "";
  tensor::set_num_threads(2);
  omp_set_num_threads(2);
  tensor::manual_seed(0);
  const bench::TwinTable& twins = bench::twins();
  std::printf("libtensor vs libtorch (%s), %d threads; ratio = libtensor time / libtorch time\n",
              bench::torch_available() ? "Debian libtorch-dev" : "libtorch not installed", 2);
  std::printf("%-22s %14s %14s %8s  %s\n", "case", "libtensor", "libtorch", "ratio", "goal");
  double stream = stream_add();
  std::printf("%-22s %14s %14s %8s  %s\n", "stream_add_16M (ref)",
              show(stream, bench::Case{"", "GB/s", 3.0 * 4 * k16M, "", nullptr}).c_str(), "-", "-", "hardware reference");
  const double fma = fma_peak();
  const double peak_flops = fma > 0 ? kFmaFlops * omp_get_max_threads() / fma : 0;
  if (peak_flops > 0)
    std::printf("%-22s %8.1f GFLOP/s %14s %8s  %s\n", "fma_peak_fp32 (ref)", peak_flops / 1e9, "-", "-",
                "hardware reference (AVX-512)");
  for (const bench::Case& c : bench::cases()) {
    if (*filter && c.name.find(filter) == std::string::npos) continue;
    double ours = c.ours();
    auto it = twins.find(c.name);
    if (it == twins.end()) {
      std::printf("%-22s %14s %14s %8s  %s\n", c.name.c_str(), show(ours, c).c_str(), "-", "-", c.goal.c_str());
      continue;
    }
    double theirs = it->second();
    std::printf("%-22s %14s %14s %7.2fx  %s\n", c.name.c_str(), show(ours, c).c_str(), show(theirs, c).c_str(),
                ours / theirs, c.goal.c_str());
    if (peak_flops > 0 && c.goal.find("FMA peak") != std::string::npos)
      std::printf("%-22s %14.0f%%  of the FMA peak\n", "", 100.0 * c.work / ours / peak_flops);
    if (c.name == "add_16M_out")
      std::printf("%-22s %14.0f%%  of streaming bandwidth\n", "", 100.0 * stream / ours);
  }
  return 0;
}
