// Internal: the profiler's hooks into the rest of the library (autograd engine, allocator,
// optimizer, data loader) and its recording primitives (src/profiler/Profiler.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/core/ScalarType.h"
#include "tensor/core/Storage.h"
#include "tensor/core/Tensor.h"
#include "tensor/profiler/profiler.h"

namespace tensor::autograd {
class Node;
}

namespace tensor::profiler::detail {

// Note [Profiler off costs one branch]
// Ops reach the profiler only through the Profiler dispatch key, which is in a thread's
// included set only while a Profile records, so dispatch is unchanged when it is off. The other
// hooks (node creation, the engine's per-node step, the allocator, optimizer steps, data loader
// waits) test one of the two relaxed atomic flags below, a load and a predictable branch.
extern std::atomic<bool> g_active;  // a Profile is recording
extern std::atomic<bool> g_memory;  // ... with profile_memory
inline bool active() { return g_active.load(std::memory_order_relaxed); }
inline bool memory_active() { return g_memory.load(std::memory_order_relaxed); }

enum class Kind : uint8_t { Op, Backward, User, Optimizer, DataLoader, Step, Alloc, Free };

struct Event {
  std::string name;
  Kind kind = Kind::Op;
  int32_t depth = 0;    // open events below it on its thread
  int64_t start_ns = 0;  // since the profile started
  int64_t dur_ns = 0;
  int64_t self_ns = 0;  // dur_ns minus the nested events' durations
  int64_t seq = -1;     // autograd sequence number: of the node an op recorded, or a backward node's
  int64_t bytes = 0;    // Alloc/Free: +-bytes; else bytes allocated minus freed directly inside
  int64_t total_bytes = 0;  // Op etc.: the same with nested events
  std::vector<std::vector<int64_t>> shapes;  // record_shapes: one per tensor argument
  std::vector<ScalarType> dtypes;
};

struct OpenEvent {
  Event ev;
  const void* op = nullptr;  // the op's table (Op events): Note [One event per op call]
  int64_t child_ns = 0;
  int64_t child_bytes = 0;
};

/// One thread's events in one profile. Only its thread writes `stack`; `events` is appended
/// under `mu` and read by the profile when it stops.
struct ThreadBuffer {
  std::mutex mu;
  int32_t index = 0;   // order of registration
  int64_t os_tid = 0;  // gettid()
  std::string thread_name;
  std::deque<Event> events;  // a deque: appending never moves the events already filed
  std::vector<OpenEvent> stack;
  bool record_shapes = false;
  bool profile_memory = false;
  std::chrono::steady_clock::time_point t0;  // the profile's start
};

/// This thread's buffer in the recording profile (registered on first use), or nullptr when
/// none records. Turns this thread's Profiler dispatch key on or off to match.
ThreadBuffer* thread_buffer();
/// The shared owner of thread_buffer() (RecordFunction keeps it to close its range).
std::shared_ptr<ThreadBuffer> thread_buffer_shared();
/// Nanoseconds since b's profile started.
inline int64_t now_ns(const ThreadBuffer* b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - b->t0).count();
}

/// Opens an event on b's stack (its start is now).
Event& open(ThreadBuffer* b, std::string name, Kind kind);
/// Closes the innermost open event of b and files it.
void close(ThreadBuffer* b);

/// RAII open/close of a named range when a profile records (optimizer steps, data loader waits).
class ScopedRange {
 public:
  ScopedRange(Kind kind, const char* name);
  ScopedRange(Kind kind, std::string name);
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  ThreadBuffer* b_ = nullptr;
};

/// Called by Node's constructor while a profile records: the innermost open op recorded it.
void on_node_created(uint64_t seq);
/// AccumulateGrad nodes are made lazily inside the op that first uses a leaf; they are not that
/// op's node, so this undoes on_node_created for them.
void on_accumulate_grad_created(uint64_t seq);
/// Runs n.apply(inputs) for the engine; while a profile records, as one backward event named
/// as the node and carrying its sequence number.
std::vector<Tensor> apply_node(autograd::Node& n, std::vector<Tensor>&& inputs);

/// Wraps a fresh CPU allocation so its free is recorded too (profile_memory).
DataPtr on_alloc(DataPtr d, size_t nbytes);

/// Installs the Profiler-key kernels of every built-in op and the custom-op fallback
/// (src/profiler/ProfilerOps.cpp).
void install_op_kernels();

}  // namespace tensor::profiler::detail
