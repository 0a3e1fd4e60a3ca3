// Soak test: many training steps of the MLP case of bench_train.cpp (same model, batch and
// optimizer; a fresh random batch every step), sampling resident memory after a warm-up and at
// intervals (Note [RSS samples]). Exits 1 when the last sample exceeds the post-warm-up one by
// the threshold or more: steady-state training must not grow (a leak, a cache without bound,
// fragmentation).
//
//   soak_mlp [--steps N] [--warmup N] [--every N] [--window N] [--threshold PCT] [--threads N]
//            [--seed N] [--leak-bytes N]
//
// scripts/soak.sh builds and runs it; docs/testing.md has the figures.
#include <tensor/onednn.h>
#include <tensor/tensor.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "models.h"

using namespace tensor;
namespace F = tensor::nn::functional;

namespace {

struct Flags {
  int64_t steps = 10000;
  int64_t warmup = 1000;
  int64_t every = 1000;
  int64_t window = 100;
  double threshold = 2.0;  // percent
  int threads = 2;
  uint64_t seed = 0;
  int64_t leak_bytes = 0;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: soak_mlp [--steps N] [--warmup N] [--every N] [--window N] [--threshold PCT] [--threads N]\n"
               "                [--seed N] [--leak-bytes N]\n"
               "  --steps N        training steps in all (10000)\n"
               "  --warmup N       steps before the baseline sample (1000)\n"
               "  --every N        steps between samples after it (1000)\n"
               "  --window N       a sample is the median RSS after each of the last N steps (100)\n"
               "  --threshold PCT  fail when the last sample is PCT%% or more above the baseline (2)\n"
               "  --leak-bytes N   keep N more bytes alive every step: a deliberate leak, to see the check fail (0)\n",
               msg);
  std::exit(2);
}

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--steps") f.steps = std::atoll(value());
    else if (a == "--warmup") f.warmup = std::atoll(value());
    else if (a == "--every") f.every = std::atoll(value());
    else if (a == "--window") f.window = std::atoll(value());
    else if (a == "--threshold") f.threshold = std::atof(value());
    else if (a == "--threads") f.threads = std::atoi(value());
    else if (a == "--seed") f.seed = std::strtoull(value(), nullptr, 10);
    else if (a == "--leak-bytes") f.leak_bytes = std::atoll(value());
    else if (a == "--help" || a == "-h") usage("Trains the MLP bench case for many steps, watching resident memory.");
    else usage(("unknown flag " + a).c_str());
  }
  if (f.warmup < 1 || f.every < 1 || f.steps <= f.warmup || f.window < 1 || f.window > f.warmup ||
      f.window > f.every || f.threads < 1 || !(f.threshold >= 0) || f.leak_bytes < 0)
    usage("bad flag value (need 1 <= warmup < steps, 1 <= window <= warmup and every, threads >= 1, threshold >= 0)");
  return f;
}

// Note [RSS samples]
// One read of resident memory can catch malloc's heaps in a passing state: before Note [Aligned
// blocks from malloc] (src/core/Allocator.cpp) the reads after consecutive steps wandered from
// 66.7 to 70.2 MB in a 68 MB process, more than the 2% threshold. They are constant since, but
// glibc's dynamic mmap and trim thresholds can still move a single read. So a sample is the
// median of the reads after each of the last --window steps: a leak shifts every read, and the
// median, by as much. The window's minimum and maximum are printed beside it.

// Resident set size in bytes: the second field of /proc/self/statm, in pages.
double rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// The step of the next sample (this one's if it is one): the end of the warm-up, then every
// --every steps, and the last step.
int64_t next_sample(int64_t step, const Flags& f) {
  if (step <= f.warmup) return f.warmup;
  const int64_t k = (step - f.warmup + f.every - 1) / f.every;
  return std::min(f.steps, f.warmup + k * f.every);
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = parse(argc, argv);
  set_num_threads(flags.threads);
  manual_seed(flags.seed);
  try {
    bench::MLP net;
    optim::SGD opt(net.parameters(), bench::mlp_sgd_options());
    std::printf("soak_mlp: MLP 784-1024-1024-10, batch %lld, SGD momentum 0.9, %d threads, %lld steps\n",
                static_cast<long long>(bench::MLP::kBatch), flags.threads, static_cast<long long>(flags.steps));
    std::printf("%8s %8s %8s %8s %9s %8s %12s\n", "step", "rss_MB", "min_MB", "max_MB", "seconds", "loss",
                "onednn_prims");
    const auto t0 = std::chrono::steady_clock::now();
    double baseline = 0, last = 0;
    std::vector<double> reads;  // RSS after each step of the current window
    std::vector<Tensor> leaked;  // --leak-bytes
    for (int64_t step = 1; step <= flags.steps; ++step) {
      Tensor x = rand({bench::MLP::kBatch, bench::MLP::kIn});
      Tensor y = randint(0, bench::MLP::kClasses, {bench::MLP::kBatch});
      opt.zero_grad();
      Tensor loss = F::cross_entropy(net.forward(x), y);
      loss.backward();
      opt.step();
      if (flags.leak_bytes) leaked.push_back(ones({flags.leak_bytes}, kUInt8));  // ones: touch the pages
      const double l = loss.item<double>();  // a real loop reads the loss: one sync per step
      if (!std::isfinite(l)) {
        std::fprintf(stderr, "soak_mlp: loss %g at step %lld\n", l, static_cast<long long>(step));
        return 1;
      }
      const int64_t next = next_sample(step, flags);
      if (next - step < flags.window) reads.push_back(rss_bytes());
      if (next != step) continue;
      std::sort(reads.begin(), reads.end());
      last = reads[reads.size() / 2];
      if (step == flags.warmup) baseline = last;
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%8lld %8.1f %8.1f %8.1f %9.1f %8.4f %12zu%s\n", static_cast<long long>(step), last / 1e6,
                  reads.front() / 1e6, reads.back() / 1e6, secs, l, onednn::primitive_cache_size(),
                  step == flags.warmup ? "  (baseline, after warm-up)" : "");
      std::fflush(stdout);
      reads.clear();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double growth = 100.0 * (last - baseline) / baseline;
    const bool ok = growth < flags.threshold;
    std::printf("soak_mlp: %s: RSS %.1f MB after %lld warm-up steps, %.1f MB after %lld steps (%+.2f%%, limit %g%%), "
                "%.1f s\n",
                ok ? "OK" : "FAIL", baseline / 1e6, static_cast<long long>(flags.warmup), last / 1e6,
                static_cast<long long>(flags.steps), growth, flags.threshold, secs);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "soak_mlp: %s\n", e.what());
    return 1;
  }
}
