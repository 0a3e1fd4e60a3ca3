// CUDA devices, streams, events and the caching allocator's statistics. The CUDA backend is a
// library of its own (libtensor_cuda), loaded on the first call here or the first CUDA tensor;
// without it, or without a device, the queries report no devices and everything else throws a
// clear tensor::Error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/core/Device.h"
#include "tensor/export.h"

namespace tensor::cuda {

/// True when the CUDA backend is present and at least one device is visible.
TENSOR_API bool is_available();
/// Number of visible CUDA devices (0 without CUDA).
TENSOR_API int device_count();
/// The current device of this thread.
TENSOR_API int current_device();
/// Sets the current device of this thread.
TENSOR_API void set_device(int index);
/// Waits for all work on `device` (-1: the current device).
TENSOR_API void synchronize(int device = -1);

/// Sets the current device for a scope (-1: keeps it) and restores the device that was current
/// at construction on exit.
class TENSOR_API CUDAGuard {
 public:
  explicit CUDAGuard(int index);
  ~CUDAGuard();
  CUDAGuard(const CUDAGuard&) = delete;
  CUDAGuard& operator=(const CUDAGuard&) = delete;

 private:
  int prev_ = -1;
};

/// A cudaStream_t as an integer (0: the device's legacy default stream), so that public headers
/// need no CUDA header.
using StreamId = uintptr_t;

/// A CUDA stream of one device (libtorch's CUDAStream). Work is ordered on the current stream
/// of its device; streams from the pool run concurrently with the default stream.
class TENSOR_API Stream {
 public:
  Stream(int device_index, StreamId id) : device_(device_index), id_(id) {}
  int device_index() const { return device_; }
  Device device() const { return Device(kCUDA, static_cast<int8_t>(device_)); }
  StreamId id() const { return id_; }
  /// The cudaStream_t, for calls into CUDA libraries.
  void* stream() const { return reinterpret_cast<void*>(id_); }
  /// True when all work queued on the stream has finished.
  bool query() const;
  /// Blocks the host until all work queued on the stream has finished.
  void synchronize() const;
  /// The stream's priority (lower numbers run first).
  int priority() const;
  bool operator==(const Stream& o) const { return device_ == o.device_ && id_ == o.id_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }

 private:
  int device_;
  StreamId id_;
};

/// The current stream of `device` (-1: the current device) on this thread.
TENSOR_API Stream getCurrentCUDAStream(int device = -1);
/// The legacy default stream of `device`.
TENSOR_API Stream getDefaultCUDAStream(int device = -1);
/// A stream from the device's pool (round-robin over a fixed set, as libtorch's).
TENSOR_API Stream getStreamFromPool(bool high_priority = false, int device = -1);
/// Makes `stream` the current stream of its device on this thread.
TENSOR_API void setCurrentCUDAStream(Stream stream);
/// Snake-case spellings of the three above.
inline Stream current_stream(int device = -1) { return getCurrentCUDAStream(device); }
inline Stream default_stream(int device = -1) { return getDefaultCUDAStream(device); }
inline Stream get_stream_from_pool(bool high_priority = false, int device = -1) {
  return getStreamFromPool(high_priority, device);
}

/// Makes a stream (and its device) current for a scope; on exit restores that device's previous
/// stream, then the previous device (libtorch's CUDAStreamGuard).
class TENSOR_API StreamGuard {
 public:
  explicit StreamGuard(Stream stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int prev_device_;
  Stream prev_stream_;  // the previous current stream of the guarded stream's device
};

/// A CUDA event (libtorch's CUDAEvent): created on first record, on the recording stream's device.
class TENSOR_API Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false)
      : timing_(enable_timing), blocking_(blocking) {}
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;

  /// Records the work queued so far on `stream` (the current stream by default).
  void record();
  void record(const Stream& stream);
  /// `stream` waits on the device for the recorded work; the host does not block. A no-op
  /// before the first record.
  void block(const Stream& stream);
  /// True when the recorded work has finished (or nothing was recorded).
  bool query() const;
  /// Blocks the host until the recorded work has finished.
  void synchronize() const;
  /// Milliseconds between this event and `end` (both recorded, with enable_timing).
  float elapsed_time(const Event& end) const;
  bool is_created() const { return event_ != nullptr; }
  int device_index() const { return device_; }

 private:
  void* event_ = nullptr;
  int device_ = -1;
  bool timing_;
  bool blocking_;
};

/// Caching allocator statistics for one device.
struct MemoryStats {
  size_t allocated_bytes = 0;        ///< bytes in live blocks
  size_t reserved_bytes = 0;         ///< bytes held from cudaMalloc (live + cached)
  size_t peak_allocated_bytes = 0;
  size_t peak_reserved_bytes = 0;
  size_t num_alloc_calls = 0;        ///< requests served
  size_t num_cuda_malloc_calls = 0;  ///< requests that reached cudaMalloc
  size_t num_ooms = 0;               ///< out-of-memory errors raised (after freeing the cache and retrying)
};
/// Statistics of the caching allocator on `device` (-1: the current device).
TENSOR_API MemoryStats memory_stats(int device = -1);
/// Resets the peak statistics of `device` to the current values.
TENSOR_API void reset_peak_memory_stats(int device = -1);
/// Returns cached, unused device blocks (and cached pinned host blocks) to the driver, after
/// waiting for the work that blocks freed with record_stream were waiting for.
TENSOR_API void empty_cache();

}  // namespace tensor::cuda
