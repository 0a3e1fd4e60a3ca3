// Minimal benchmark harness: warm up, time repetitions, report the median.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bench {

/// Median seconds per call of fn, after `warmup` calls, over `reps` timed batches of `inner` calls.
inline double median_seconds(const std::function<void()>& fn, int reps = 15, int inner = 1, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) fn();
    auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(t1 - t0).count() / inner);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

/// One benchmark case: `ours` returns seconds per call of libtensor.
struct Case {
  std::string name;
  std::string unit;   // how the figure is shown: "us", "ms", "GB/s" or "GFLOP/s"
  double work = 0;    // bytes (GB/s) or floating point operations (GFLOP/s) per call
  std::string goal;   // the TARGETS.md goal, for the table
  std::function<double()> ours;
  // Optional, after `ours` so that the five-field registrations keep compiling (Note [Case work]).
  double flops = 0;   // floating point operations per call: share of the FMA peak
  double bytes = 0;   // bytes read + written per call: share of the streaming bandwidth
  std::string area;   // empty: AddCases names it after the file, bench_<area>.cpp
  bool no_limit = false;  // its limit is not measured (file I/O, bf16 math): no share
  // Bytes/s that the case's bytes are held against instead of the CPU streaming bandwidth:
  // the GPU cases give the device copy bandwidth, measured once in the run (bench_cuda.cpp).
  std::function<double()> device_bandwidth;
  bool sweep = false;  // one of the per-op sweep's cases: run by `bench_ops --sweep` only


  /// Declares the FLOPs of one call (a compute-bound case).
  Case with_flops(double f) && { flops = f; return std::move(*this); }
  /// Declares the bytes one call reads and writes (a memory-bound case).
  Case with_bytes(double b) && { bytes = b; return std::move(*this); }
  /// Marks a case whose limit the run does not measure: no share (Note [Case work]).
  Case without_limit() && { no_limit = true; return std::move(*this); }
  /// Holds the case's bytes against `bps()` (bytes/s, limit "device_copy") instead of the stream.
  Case with_device_bandwidth(std::function<double()> bps) && {
    device_bandwidth = std::move(bps);
    return std::move(*this);
  }

  /// Marks a case of the per-op sweep (Note [Op sweep] in sweep_ops.h).
  Case in_sweep() && { sweep = true; return std::move(*this); }

  /// FLOPs per call, declared or implied by a GFLOP/s unit; 0 when not declared.
  double flops_per_call() const { return no_limit ? 0 : flops > 0 ? flops : unit == "GFLOP/s" ? work : 0; }
  /// Bytes per call, declared or implied by a GB/s unit; 0 when not declared.
  double bytes_per_call() const { return no_limit ? 0 : bytes > 0 ? bytes : unit == "GB/s" ? work : 0; }
};

// Note [Case work]
// The report (bench_ops --json, scripts/bench_report.py) gives each case its share of the
// hardware limit measured in the same run: FLOPs per call against the FMA peak for
// compute-bound cases, bytes per call against the streaming bandwidth for memory-bound ones.
// A GFLOP/s or GB/s case already declares its work through `work`; a case shown in ms or us
// declares it with `Case{...}.with_flops(f)` or `.with_bytes(b)`. Bytes count each array read
// or written once (what a single streaming pass must move), so the share is a lower bound on
// how busy memory was. A case that declares nothing has no share (null in the JSON), which is
// right for mixed workloads such as data loading. A case whose figure is work but whose limit
// the run does not measure says `.without_limit()`: files written or read (the disk and the
// kernel, not memory, bound them) and bf16 math (AMX or AVX-512 BF16 units, not fp32 FMAs).

/// Thrown by a case that cannot run on this machine (a GPU case without a device): bench_ops
/// prints the reason in the case's row and goes on; nothing failed.
struct Skipped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Note [Benchmark registry]
// Each area keeps its cases in its own bench_<area>.cpp and its libtorch twins in
// torch_<area>.cpp (built only when libtorch is found); both register at static-init time, so
// adding an area touches no shared file. Cases print in registration order within a file.
inline std::vector<Case>& cases() {
  static std::vector<Case> c;
  return c;
}
/// The libtorch twin of each case, by name (empty when libtorch is not built in).
using TwinTable = std::map<std::string, std::function<double()>>;
inline TwinTable& twins() {
  static TwinTable t;
  return t;
}
/// The area of bench_<area>.cpp, from a source path (the whole file name when it has another form).
inline std::string area_of_file(const char* path) {
  const char* base = std::strrchr(path, '/');
  std::string name = base ? base + 1 : path;
  if (name.rfind("bench_", 0) == 0) name = name.substr(6);
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}
struct AddCases {
  /// `file` defaults to the registering file (evaluated at the call site), which names the area.
  explicit AddCases(std::vector<Case> cs, const char* file = __builtin_FILE()) {
    for (auto& c : cs) {
      if (c.area.empty()) c.area = area_of_file(file);
      cases().push_back(std::move(c));
    }
  }
};
struct AddTwins {
  explicit AddTwins(TwinTable t) { for (auto& kv : t) twins()[kv.first] = std::move(kv.second); }
};
bool torch_available();
/// The libtorch version the twins were compiled against ("1.13.0"), or "" without libtorch.
std::string torch_version();

/// Data a libtensor case loads once and its libtorch twin reuses (the twin runs right after):
/// float32 images and int64 labels, row-major.
struct SharedDataset {
  std::vector<float> train_images, test_images;
  std::vector<int64_t> train_labels, test_labels;
  int64_t rows = 0, cols = 0;
};
inline SharedDataset& shared_dataset() {
  static SharedDataset d;
  return d;
}

}  // namespace bench
