// Minimal benchmark harness: warm up, time repetitions, report the median.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
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
struct AddCases {
  explicit AddCases(std::vector<Case> cs) { for (auto& c : cs) cases().push_back(std::move(c)); }
};
struct AddTwins {
  explicit AddTwins(TwinTable t) { for (auto& kv : t) twins()[kv.first] = std::move(kv.second); }
};
bool torch_available();

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
