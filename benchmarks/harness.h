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

/// The libtorch twin of each case, by name (empty when libtorch is not built in).
using TwinTable = std::map<std::string, std::function<double()>>;
TwinTable torch_cases();
bool torch_available();

}  // namespace bench
