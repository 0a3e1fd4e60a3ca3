// Elementwise and reduction cases of TARGETS.md: libtensor beside its two libtorch peers, with
// the same thread count: Debian's 1.13 in this process, the torch wheel's in a child process
// (Note [Two libtorch peers] in peer.h). Prints each figure and the time ratio against the faster
// peer (libtensor / libtorch; < 1 wins). Usage: bench_ops --help. --json writes the report's
// input (docs/benchmarks.md); --sweep times every op instead (Note [Op sweep] in sweep_ops.h).
#include <immintrin.h>
#include <omp.h>
#include <unistd.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "peer.h"

using namespace tensor;
using bench::median_seconds;

namespace {

constexpr int64_t k16M = 16 << 20;
constexpr int64_t k4K = 4096;

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

// Note [Hardware limits in the same run]
// Every share of a limit in the report divides by figures measured at the start of the same
// run, with the thread count the cases use, so that machine load moves both alike.
// Streaming bandwidth: a STREAM triad a = b + s * c over three arrays of 16M floats (192 MB,
// far beyond any cache), counting 12 bytes per element as STREAM does. Kernels that write large
// outputs with non-temporal stores skip the read-for-ownership of the output line, so the triad
// runs both ways and the limit is the faster median: a kernel should not beat its own limit
// merely by storing differently.
constexpr int64_t kStreamN = 16 << 20;
constexpr double kStreamBytes = 3.0 * 4 * kStreamN;
__attribute__((target("avx512f"))) void triad_nt_avx512(float* a, const float* b, const float* c, float s) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < kStreamN; i += 16)
    _mm512_stream_ps(a + i, _mm512_fmadd_ps(_mm512_set1_ps(s), _mm512_load_ps(c + i), _mm512_load_ps(b + i)));
  _mm_sfence();
}
__attribute__((target("avx2,fma"))) void triad_nt_avx2(float* a, const float* b, const float* c, float s) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < kStreamN; i += 8)
    _mm256_stream_ps(a + i, _mm256_fmadd_ps(_mm256_set1_ps(s), _mm256_load_ps(c + i), _mm256_load_ps(b + i)));
  _mm_sfence();
}
/// Seconds per triad pass, the faster of plain and (where the CPU has AVX2) non-temporal stores.
double stream_triad() {
  struct Free { void operator()(float* p) const { std::free(p); } };
  auto alloc = [] { return std::unique_ptr<float[], Free>(static_cast<float*>(std::aligned_alloc(64, 4 * kStreamN))); };
  auto pa = alloc(), pb = alloc(), pc = alloc();
  float *a = pa.get(), *b = pb.get(), *c = pc.get();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < kStreamN; ++i) a[i] = 0, b[i] = 1.0f, c[i] = 2.0f;  // first touch per thread
  const float s = 0.5f;
  double best = median_seconds([&] {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < kStreamN; ++i) a[i] = b[i] + s * c[i];
  }, 9);
  if (__builtin_cpu_supports("avx512f"))
    best = std::min(best, median_seconds([&] { triad_nt_avx512(a, b, c, s); }, 9));
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    best = std::min(best, median_seconds([&] { triad_nt_avx2(a, b, c, s); }, 9));
  return best;
}

// The machine's float32 FMA peak: each thread runs 12 independent chains of FMAs (two FMA
// ports x 4 cycles of latency need 8 in flight), so nothing but the FMA units limits it.
// Named accumulators, not an array: an array of vectors is spilled to memory at -O2.
#define TENSOR_BENCH_FMA_CHAINS(V, SET1, FMADD, ADD)                                                 \
  const V m = SET1(0.9999f), c = SET1(1e-7f);                                                        \
  V a0 = SET1(0.1f), a1 = SET1(0.2f), a2 = SET1(0.3f), a3 = SET1(0.4f), a4 = SET1(0.5f);             \
  V a5 = SET1(0.6f), a6 = SET1(0.7f), a7 = SET1(0.8f), a8 = SET1(0.9f), a9 = SET1(1.0f);             \
  V a10 = SET1(1.1f), a11 = SET1(1.2f);                                                              \
  for (int64_t i = 0; i < iters; ++i) {                                                              \
    a0 = FMADD(a0, m, c); a1 = FMADD(a1, m, c); a2 = FMADD(a2, m, c); a3 = FMADD(a3, m, c);          \
    a4 = FMADD(a4, m, c); a5 = FMADD(a5, m, c); a6 = FMADD(a6, m, c); a7 = FMADD(a7, m, c);          \
    a8 = FMADD(a8, m, c); a9 = FMADD(a9, m, c); a10 = FMADD(a10, m, c); a11 = FMADD(a11, m, c);      \
  }                                                                                                  \
  const V s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(ADD(a4, a5), ADD(a6, a7)),                  \
                                                     ADD(ADD(a8, a9), ADD(a10, a11))));

__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iters) {
  TENSOR_BENCH_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
  return _mm512_reduce_add_ps(s);
}
__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iters) {
  TENSOR_BENCH_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[7];
}
#undef TENSOR_BENCH_FMA_CHAINS
constexpr int64_t kFmaIters = 4 << 20;

struct FmaPeak {
  double flops_per_s = 0;  // 0: the CPU has neither AVX-512 nor AVX2 + FMA
  const char* isa = nullptr;
};
/// fma_chains on every thread at once, with the widest FMA the CPU has.
FmaPeak fma_peak() {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return {};
  const int lanes = avx512 ? 16 : 8;
  volatile float sink = 0;
  const double sec = median_seconds([&] {
#pragma omp parallel
    {
      const float r = avx512 ? fma_chains_avx512(kFmaIters) : fma_chains_avx2(kFmaIters);
#pragma omp critical
      sink = sink + r;
    }
  }, 9);
  const double flops = 2.0 * lanes * 12 * kFmaIters * omp_get_max_threads();
  return {flops / sec, avx512 ? "AVX-512" : "AVX2"};
}

const bench::AddCases kOpCases({
    {"eager_add_1elem", "us", 0, "<= 0.5x", eager_add},
    {"autograd_overhead", "us", 0, "<= 0.5x", autograd_overhead},
    {"view_overhead", "us", 0, "<= 1.0x", view_overhead},
    {"view_autograd_overhead", "us", 0, "<= 1.0x", view_autograd_overhead},
    {"add_16M_out", "GB/s", 3.0 * 4 * k16M, ">= 1.0x, >= 90% stream", add_out},
    {"exp_16M", "GB/s", 2.0 * 4 * k16M, ">= 1.5x", exp16},
    // Bytes: each input read once and the output written once (Note [Case work] in harness.h).
    bench::Case{"broadcast_add_4096", "ms", 0, "<= 0.5x", bcast_add}.with_bytes(4.0 * (2 * k4K * k4K + k4K)),
    bench::Case{"transpose_copy_4096", "ms", 0, "<= 0.5x", transpose_copy}.with_bytes(4.0 * 2 * k4K * k4K),
    bench::Case{"sum_16M", "ms", 0, "<= 1.0x", sum16}.with_bytes(4.0 * k16M),
    bench::Case{"sum_dim0_4096", "ms", 0, "<= 1.0x", sum_dim0}.with_bytes(4.0 * (k4K * k4K + k4K)),
    bench::Case{"softmax_rows_4096", "ms", 0, "<= 0.5x", softmax_rows}.with_bytes(4.0 * 2 * k4K * k4K),
    {"log_softmax_128x10", "us", 0, "<= 1.0x", log_softmax_small},
});


/// A figure in the case's unit: a time per call, or a throughput from its declared work.
double value_in_unit(double sec, const bench::Case& c) {
  if (c.unit == "us") return sec * 1e6;
  if (c.unit == "ms") return sec * 1e3;
  return c.work / sec / 1e9;  // GB/s or GFLOP/s
}
std::string show(double sec, const bench::Case& c) {
  char buf[64];
  if (c.unit == "us") std::snprintf(buf, sizeof buf, "%.3f us", value_in_unit(sec, c));
  else if (c.unit == "ms") std::snprintf(buf, sizeof buf, "%.2f ms", value_in_unit(sec, c));
  else std::snprintf(buf, sizeof buf, "%.1f %s", value_in_unit(sec, c), c.unit.c_str());
  return buf;
}

constexpr const char* kUsage =
    "Usage: bench_ops [--sweep] [--list] [--json FILE] [SUBSTRING...]\n"
    "Times the libtensor cases of shared/TARGETS.md with 2 threads, each beside its twins in the\n"
    "libtorch peers that are built: Debian's libtorch (in this process) and the torch wheel's\n"
    "(bench_torch_peer, a child process); ratio = libtensor time / the faster peer's time (below\n"
    "1: libtensor wins).\n"
    "\n"
    "  SUBSTRING     run only the cases whose name contains one of the substrings\n"
    "  --sweep       the per-op sweep instead: every op of the op list, reductions, softmax,\n"
    "                norms, losses and indexing at 16M and 4K elements, fresh and out=\n"
    "  --list        print every case (area and name) and exit without running any\n"
    "  --json FILE   also write every case run, with the same-run hardware limits, as JSON\n"
    "                (scripts/bench_report.py turns it into a Markdown table and an SVG chart)\n"
    "  -h, --help    print this help and exit\n"
    "\n"
    "TENSOR_BENCH_TORCH_PEER=PATH runs another bench_torch_peer; set to empty, no wheel peer.\n"
    "A case that cannot run here (a GPU case without a device) prints why and is skipped; one\n"
    "that raises prints the error and the run goes on, then exits 3.\n";

struct Options {
  bool list = false;
  bool sweep = false;
  std::string json_path;
  std::vector<std::string> filters;
};

/// Parses argv; exits 0 after --help and 2 (usage on stderr) on an unknown or incomplete option.
Options parse_args(int argc, char** argv) {
  Options o;
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "bench_ops: %s\n%s", msg.c_str(), kUsage);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--sweep") {
      o.sweep = true;
    } else if (a == "--json") {
      if (i + 1 >= argc) fail("--json needs a file name");
      o.json_path = argv[++i];
    } else if (a.rfind("--json=", 0) == 0) {
      o.json_path = a.substr(7);
      if (o.json_path.empty()) fail("--json needs a file name");
    } else if (a == "--") {
      for (++i; i < argc; ++i) o.filters.push_back(argv[i]);
    } else if (!a.empty() && a[0] == '-') {
      fail("unknown option '" + a + "'");
    } else {
      o.filters.push_back(a);
    }
  }
  return o;
}

bool selected(const bench::Case& c, const Options& o) {
  if (c.sweep != o.sweep) return false;  // the sweep runs alone, and only when asked for
  const auto& filters = o.filters;
  if (filters.empty()) return true;
  for (const auto& f : filters)
    if (c.name.find(f) != std::string::npos) return true;
  return false;
}

/// One figure for the JSON: seconds per call, the figure in the case's unit, and the
/// throughputs its declared work gives.
nlohmann::ordered_json figure(double sec, const bench::Case& c) {
  nlohmann::ordered_json f = {{"seconds", sec}, {"value", value_in_unit(sec, c)}, {"unit", c.unit}};
  f["gflops"] = c.flops_per_call() > 0 ? nlohmann::ordered_json(c.flops_per_call() / sec / 1e9) : nlohmann::ordered_json();
  f["gbytes_per_s"] = c.bytes_per_call() > 0 ? nlohmann::ordered_json(c.bytes_per_call() / sec / 1e9) : nlohmann::ordered_json();
  return f;
}

/// bench_torch_peer beside this program, or $TENSOR_BENCH_TORCH_PEER; "" when there is none.
std::string torch_peer_path() {
  if (const char* env = std::getenv("TENSOR_BENCH_TORCH_PEER")) return env;
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  const std::string self(buf, static_cast<size_t>(n));
  const std::string path = self.substr(0, self.rfind('/') + 1) + "bench_torch_peer";
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

/// "1.13" from "1.13.0": the column headings.
std::string major_minor(const std::string& v) {
  const auto dot = v.find('.', v.find('.') + 1);
  return v.substr(0, dot);
}

nlohmann::ordered_json or_null(bool present, nlohmann::ordered_json v) {
  return present ? std::move(v) : nlohmann::ordered_json();
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_args(argc, argv);
  if (opt.list) {
    for (const bench::Case& c : bench::cases())
      if (selected(c, opt)) std::printf("%-12s %s\n", c.area.c_str(), c.name.c_str());
    return 0;
  }
  std::vector<const bench::Case*> todo;
  for (const bench::Case& c : bench::cases())
    if (selected(c, opt)) todo.push_back(&c);
  if (todo.empty()) {
    std::fprintf(stderr, "bench_ops: no case name contains the given substring(s); see --list\n");
    return 1;
  }
  // Fail on an unwritable path now, not after the whole run.
  std::ofstream json_out;
  if (!opt.json_path.empty()) {
    json_out.open(opt.json_path);
    if (!json_out) {
      std::fprintf(stderr, "bench_ops: cannot write %s\n", opt.json_path.c_str());
      return 1;
    }
  }

  constexpr int kThreads = 2;
  tensor::set_num_threads(kThreads);
  omp_set_num_threads(kThreads);
  tensor::manual_seed(0);
  const bench::TwinTable& twins = bench::twins();
  const char* peer = bench::torch_available() ? "Debian libtorch-dev" : nullptr;
  const std::string peer_version = bench::torch_version();
  // The wheel's libtorch in a child process (Note [Two libtorch peers] in peer.h).
  bench::TorchPeer wheel;
  const std::string wheel_exe = torch_peer_path();
  if (!wheel_exe.empty()) {
    std::string why;
    if (!wheel.start(wheel_exe, why))
      std::printf("torch wheel peer unavailable, its column stays empty: %s\n", why.c_str());
  }
  const std::string wheel_version = wheel.version();  // "" when it did not start
  const std::string wheel_name = wheel_version.empty() ? "" : "torch " + wheel_version + " wheel (bench_torch_peer)";
  const std::string col1 = peer ? "torch " + major_minor(peer_version) : "libtorch";
  const std::string col2 = wheel_version.empty() ? "torch wheel" : "torch " + major_minor(wheel_version);
  std::printf("libtensor vs %s%s and %s, %d threads; ratio = libtensor time / the faster peer's time\n",
              peer ? ("libtorch " + peer_version + " (").c_str() : "libtorch (", peer ? "Debian libtorch-dev, in process)" : "not installed)",
              wheel_version.empty() ? "no torch wheel peer" : ("libtorch " + wheel_version + " (torch wheel, child process)").c_str(),
              kThreads);
  std::printf("%-26s %14s %14s %14s %7s %5s %7s  %s\n", "case", "libtensor", col1.c_str(), col2.c_str(), "ratio", "vs",
              "limit", "goal");

  const double stream_bps = kStreamBytes / stream_triad();
  std::printf("%-26s %9.1f GB/s %14s %14s %7s %5s %7s  %s\n", "stream_triad_16M (ref)", stream_bps / 1e9, "-", "-",
              "-", "-", "-", "hardware reference");
  const FmaPeak fma = fma_peak();
  if (fma.flops_per_s > 0)
    std::printf("%-26s %6.1f GFLOP/s %14s %14s %7s %5s %7s  hardware reference (%s)\n", "fma_peak_fp32 (ref)",
                fma.flops_per_s / 1e9, "-", "-", "-", "-", "-", fma.isa);

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  int errors = 0;
  double device_bps = 0;  // the device copy bandwidth, once a GPU case has measured it
  for (const bench::Case* cp : todo) {
    const bench::Case& c = *cp;
    // A case that cannot run (no GPU) or raises (an op not yet on this device) reports it in
    // its row; the other cases still run.
    double ours = 0;
    std::string skipped, error;
    try {
      ours = c.ours();
    } catch (const bench::Skipped& e) {
      skipped = e.what();
    } catch (const std::exception& e) {
      error = e.what();
      ++errors;
    }
    if (!skipped.empty() || !error.empty()) {
      // The twins of a case that did not run are not run either.
      std::string shown = skipped.empty() ? "error: " + error : skipped;
      shown = shown.substr(0, shown.find('\n'));
      if (shown.size() > 100) shown = shown.substr(0, 97) + "...";
      std::printf("%-26s %14s\n", c.name.c_str(), shown.c_str());
      std::fflush(stdout);
      nlohmann::ordered_json row = {{"name", c.name}, {"area", c.area}, {"goal", c.goal}, {"ours", nullptr}};
      if (!skipped.empty()) row["skipped"] = skipped;
      else row["error"] = error;
      rows.push_back(std::move(row));
      continue;
    }
    auto it = twins.find(c.name);
    const double theirs = it == twins.end() ? 0 : it->second();
    // The wheel's twin right after, in the child; a new child if the last one died.
    std::string wheel_error;
    if (!wheel.alive() && !wheel_version.empty() && wheel.starts() < bench::kMaxPeerStarts) {
      std::string why;
      if (!wheel.start(wheel_exe, why)) std::printf("torch wheel peer did not restart: %s\n", why.c_str());
    }
    double wheel_theirs = wheel.run(c.name, wheel_error);
    if (wheel_theirs < 0) {
      std::printf("  (torch %s twin of %s: %s)\n", major_minor(wheel_version).c_str(), c.name.c_str(),
                  wheel_error.c_str());
      wheel_theirs = 0;
    }
    // The ratio is against the faster peer that has a figure (TARGETS.md).
    const double best = theirs > 0 && wheel_theirs > 0 ? std::min(theirs, wheel_theirs)
                                                       : theirs > 0 ? theirs : wheel_theirs;
    const char* faster = best <= 0 ? nullptr : best == theirs ? "libtorch" : "libtorch_wheel";
    // Share of the same-run limit (Note [Case work] in harness.h): compute-bound cases against
    // the FMA peak, memory-bound ones against the streaming bandwidth; the larger when both.
    double share = -1;
    const char* limit = nullptr;
    if (c.flops_per_call() > 0 && fma.flops_per_s > 0) {
      share = c.flops_per_call() / ours / fma.flops_per_s;
      limit = "fma_peak";
    }
    if (c.bytes_per_call() > 0 && c.device_bandwidth) {
      try {
        device_bps = c.device_bandwidth();
        share = c.bytes_per_call() / ours / device_bps;
        limit = "device_copy";
      } catch (const std::exception&) {
        // The copy itself failed on this device: the case keeps its figure, without a share.
      }
    } else if (c.bytes_per_call() > 0) {
      const double s = c.bytes_per_call() / ours / stream_bps;
      if (s > share) share = s, limit = "stream_bandwidth";
    }
    char ratio[16] = "-", pct[16] = "-";
    if (best > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", ours / best);
    if (limit) std::snprintf(pct, sizeof pct, "%.0f%%", 100 * share);
    const std::string vs = !faster ? "-" : faster == std::string("libtorch") ? major_minor(peer_version) : major_minor(wheel_version);
    std::printf("%-26s %14s %14s %14s %7s %5s %7s  %s\n", c.name.c_str(), show(ours, c).c_str(),
                theirs > 0 ? show(theirs, c).c_str() : "-", wheel_theirs > 0 ? show(wheel_theirs, c).c_str() : "-",
                ratio, vs.c_str(), pct, c.goal.c_str());
    std::fflush(stdout);
    rows.push_back({{"name", c.name},
                    {"area", c.area},
                    {"goal", c.goal},
                    {"ours", figure(ours, c)},
                    {"libtorch", or_null(theirs > 0, figure(theirs, c))},
                    {"libtorch_wheel", or_null(wheel_theirs > 0, figure(wheel_theirs, c))},
                    {"ratio", or_null(best > 0, ours / best)},
                    {"ratio_libtorch", or_null(theirs > 0, ours / theirs)},
                    {"ratio_libtorch_wheel", or_null(wheel_theirs > 0, ours / wheel_theirs)},
                    {"faster_peer", or_null(faster != nullptr, faster ? faster : "")},
                    {"flops_per_call", c.flops_per_call() > 0 ? nlohmann::ordered_json(c.flops_per_call()) : nlohmann::ordered_json()},
                    {"bytes_per_call", c.bytes_per_call() > 0 ? nlohmann::ordered_json(c.bytes_per_call()) : nlohmann::ordered_json()},
                    {"limit", limit ? nlohmann::ordered_json(limit) : nlohmann::ordered_json()},
                    {"share_of_limit", limit ? nlohmann::ordered_json(share) : nlohmann::ordered_json()}});
  }
  if (json_out.is_open()) {
    const nlohmann::ordered_json doc = {
        {"threads", kThreads},
        {"libtorch", peer ? nlohmann::ordered_json(peer) : nlohmann::ordered_json()},
        {"libtorch_version", or_null(peer != nullptr, peer_version)},
        {"libtorch_wheel", or_null(!wheel_name.empty(), wheel_name)},
        {"libtorch_wheel_version", or_null(!wheel_version.empty(), wheel_version)},
        {"hardware",
         {{"fma_peak_gflops", fma.flops_per_s > 0 ? nlohmann::ordered_json(fma.flops_per_s / 1e9) : nlohmann::ordered_json()},
          {"fma_isa", fma.isa ? nlohmann::ordered_json(fma.isa) : nlohmann::ordered_json()},
          {"stream_triad_gbytes_per_s", stream_bps / 1e9},
          {"device_copy_gbytes_per_s", device_bps > 0 ? nlohmann::ordered_json(device_bps / 1e9) : nlohmann::ordered_json()}}},
        {"cases", rows}};
    json_out << doc.dump(2) << "\n";
    json_out.close();
    if (!json_out) {
      std::fprintf(stderr, "bench_ops: writing %s failed\n", opt.json_path.c_str());
      return 1;
    }
  }
  return errors ? 3 : 0;
}
