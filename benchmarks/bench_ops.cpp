// Elementwise and reduction cases of TARGETS.md: libtensor beside libtorch, same process,
// same thread count. Prints each figure and the time ratio (libtensor / libtorch; < 1 wins).
// Usage: bench_ops [case-substring]
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

const bench::AddCases kOpCases({
    {"eager_add_1elem", "us", 0, "<= 0.5x", eager_add},
    {"autograd_overhead", "us", 0, "<= 0.5x", autograd_overhead},
    {"add_16M_out", "GB/s", 3.0 * 4 * k16M, ">= 1.0x, >= 90% stream", add_out},
    {"exp_16M", "GB/s", 2.0 * 4 * k16M, ">= 1.5x", exp16},
    {"broadcast_add_4096", "ms", 0, "<= 0.5x", bcast_add},
    {"transpose_copy_4096", "ms", 0, "<= 0.5x", transpose_copy},
    {"sum_16M", "ms", 0, "<= 1.0x", sum16},
    {"sum_dim0_4096", "ms", 0, "<= 1.0x", sum_dim0},
    {"softmax_rows_4096", "ms", 0, "<= 0.5x", softmax_rows},
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
    if (c.name == "add_16M_out")
      std::printf("%-22s %14.0f%%  of streaming bandwidth\n", "", 100.0 * stream / ours);
  }
  return 0;
}
