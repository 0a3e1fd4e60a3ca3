// The profiler: records every dispatched op (forward and backward), memory, user ranges,
// optimizer steps and data loader waits; exports Chrome trace JSON and prints tables
// (docs/profiling.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/export.h"

namespace tensor::profiler {

/// What a Profile records besides op names and times.
class TENSOR_API ProfileOptions {
 public:
  /// Record the shapes and dtypes of each op's tensor arguments.
  ProfileOptions& record_shapes(bool on = true) {
    record_shapes_ = on;
    return *this;
  }
  /// Record allocation and free events and the running total of bytes allocated.
  ProfileOptions& profile_memory(bool on = true) {
    profile_memory_ = on;
    return *this;
  }
  /// Accepted for libtorch's spelling; call stacks are not recorded (docs/profiling.md).
  ProfileOptions& with_stack(bool on = true) {
    with_stack_ = on;
    return *this;
  }
  /// Whether record_shapes is on.
  bool get_record_shapes() const { return record_shapes_; }
  /// Whether profile_memory is on.
  bool get_profile_memory() const { return profile_memory_; }
  /// Whether with_stack was asked for.
  bool get_with_stack() const { return with_stack_; }

 private:
  bool record_shapes_ = false;
  bool profile_memory_ = false;
  bool with_stack_ = false;
};

/// The column table() sorts by (descending).
enum class SortBy { SelfCpuTime, CpuTime, Calls, SelfCpuMemory, CpuMemory };

/// One row of key_averages(): every event of one name, summed.
struct TENSOR_API EventAverage {
  std::string name;
  int64_t calls = 0;
  int64_t self_cpu_ns = 0;   ///< time in the events minus their nested children on the same thread
  int64_t cpu_total_ns = 0;  ///< time in the events, children included
  int64_t self_memory_bytes = 0;  ///< bytes allocated minus freed directly inside the events
  int64_t memory_bytes = 0;       ///< the same, children included
};

/// Where the profiled thread's wall time went (after HTA's temporal breakdown).
struct TENSOR_API Analysis {
  int64_t wall_ns = 0;     ///< from the start of the profile to its end
  int64_t compute_ns = 0;  ///< self time of ops other than copies and communication
  int64_t copy_ns = 0;     ///< self time of copy_, _to_copy, clone, contiguous
  int64_t comm_ns = 0;     ///< self time of ops of the distributed category (c10d::, distributed::)
  int64_t idle_ns = 0;     ///< wall time outside every top-level event
  std::vector<EventAverage> top_ops;  ///< the ops with the most self time, most first
  /// A short printable report.
  std::string to_string() const;
};

namespace detail {
struct Session;
struct ThreadBuffer;
}  // namespace detail

/// Records while it lives (or until stop()); one Profile at a time per process. Ops run on the
/// constructing thread, in backward (and its reentrant threads), in data loader workers and on
/// any thread that opens a RecordFunction are recorded.
class TENSOR_API Profile {
 public:
  /// Starts recording; throws tensor::Error when another Profile is recording.
  explicit Profile(ProfileOptions options = ProfileOptions());
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  /// Marks the end of one iteration: closes the range ProfilerStep#N and opens #N+1.
  void step();
  /// Stops recording (export_chrome_trace, table, key_averages and analysis stop it too).
  void stop();
  /// Writes Chrome trace JSON (opens in Perfetto and chrome://tracing); throws on I/O errors.
  void export_chrome_trace(const std::string& path);
  /// The trace as a string (what export_chrome_trace writes).
  std::string chrome_trace();
  /// Per-name sums of every recorded event, sorted by `sort_by`.
  std::vector<EventAverage> key_averages(SortBy sort_by = SortBy::SelfCpuTime);
  /// key_averages as a table, libtorch's key_averages().table(); row_limit < 0: every row.
  std::string table(SortBy sort_by = SortBy::SelfCpuTime, int64_t row_limit = -1);
  /// Compute / copy / communication / idle shares of this thread's wall time, and the top ops.
  Analysis analysis(size_t top_n = 10);

 private:
  std::shared_ptr<detail::Session> session_;
};

/// A user range: recorded from construction to destruction when a Profile is recording, on
/// whichever thread it runs (also inside custom ops and backward functions).
class TENSOR_API RecordFunction {
 public:
  explicit RecordFunction(std::string_view name);
  ~RecordFunction();
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  std::shared_ptr<detail::ThreadBuffer> buffer_;  // null when nothing was recorded
};

}  // namespace tensor::profiler
