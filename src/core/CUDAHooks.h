// Internal: what libtensor (CPU-only) calls into the CUDA backend for (Note [CUDA hooks]).
// libtensor_cuda implements it (src/cuda/CUDAHooksImpl.cpp); src/core/CUDAHooks.cpp holds the
// loader and the stand-in used without it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/core/Device.h"
#include "tensor/core/Storage.h"
#include "tensor/core/Tensor.h"
#include "tensor/cuda/cuda.h"

namespace tensor::cuda_detail {

// Note [CUDA hooks]
// libtensor.so is CPU-only: it links no CUDA library, so a program that never touches CUDA loads
// none (libtorch splits libtorch_cpu and libtorch_cuda the same way). Everything the core needs
// from CUDA goes through one CUDAHooks object. The first call of hooks() looks for the CUDA
// backend: linked in statically (libtensor_cuda.a defines tensor_cuda_hooks, which libtensor
// references weakly), else libtensor_cuda.so.N beside libtensor.so (or $TENSOR_CUDA_LIBRARY),
// opened with dlopen. Its entry point registers the CUDA kernels into the dispatcher and returns
// the real hooks; without it, a stand-in reports no devices and raises a tensor::Error naming
// why (built without CUDA, or the library failed to load) for anything that needs one. A CUDA
// tensor can only be made through the hooks' allocator, so the kernels are registered before
// the first one exists.
class CUDAHooks {
 public:
  virtual ~CUDAHooks() = default;

  /// Devices visible (0 without a driver or device). Never throws.
  virtual int device_count() = 0;
  /// Why CUDA cannot be used, or "" when the backend loaded (then device_count says the rest).
  virtual const char* unavailable_reason() = 0;
  virtual int current_device() = 0;
  virtual void set_device(int index) = 0;
  /// Waits for all work on `device` (-1: the current one).
  virtual void synchronize(int device) = 0;
  /// Throws tensor::Error naming `op` unless `device` is a usable CUDA device.
  virtual void check_available(const char* op, Device device) = 0;

  /// The caching device allocator, and the pinned (page-locked) host allocator.
  virtual Allocator* allocator() = 0;
  virtual Allocator* host_allocator() = 0;
  virtual cuda::MemoryStats memory_stats(int device) = 0;
  virtual void reset_peak_memory_stats(int device) = 0;
  virtual void empty_cache() = 0;
  /// The block behind `ptr` (a CUDA allocation) is not reused until the work queued on `stream`
  /// so far has finished (Note [record_stream] in src/cuda).
  virtual void record_stream(void* ptr, int device, cuda::StreamId stream) = 0;

  /// copy_ and fill_ where a CUDA tensor is involved (the CUDA kernels of src/ops/CopyOps.cpp).
  virtual void copy_kernel(const Tensor& dst, const Tensor& src, bool non_blocking) = 0;
  virtual void fill_kernel(const Tensor& self, const Scalar& value) = 0;

  // Streams (cuda::Stream is a device index and a cudaStream_t as an integer; 0 is the legacy
  // default stream) and events (an opaque cudaEvent_t, created lazily on record).
  virtual cuda::StreamId current_stream(int device) = 0;
  virtual void set_current_stream(int device, cuda::StreamId stream) = 0;
  virtual cuda::StreamId stream_from_pool(int device, bool high_priority) = 0;
  virtual bool stream_query(int device, cuda::StreamId stream) = 0;
  virtual void stream_synchronize(int device, cuda::StreamId stream) = 0;
  virtual int stream_priority(int device, cuda::StreamId stream) = 0;
  virtual void* event_create(int device, bool enable_timing, bool blocking) = 0;
  virtual void event_destroy(void* event, int device) = 0;
  virtual void event_record(void* event, int device, cuda::StreamId stream) = 0;
  virtual bool event_query(void* event, int device) = 0;
  virtual void event_synchronize(void* event, int device) = 0;
  /// `stream` (of `stream_device`, which may differ from the event's) waits on the device, the
  /// host does not block, for the work `event` recorded.
  virtual void event_block(void* event, int stream_device, cuda::StreamId stream) = 0;
  virtual float event_elapsed_ms(void* start, void* end, int device) = 0;
};

/// The CUDA backend's hooks: loads it on first use (Note [CUDA hooks]).
TENSOR_API CUDAHooks& hooks();

/// The hooks when the backend was already looked for, else null (without loading it).
CUDAHooks* hooks_if_loaded();

/// CUDA's kernels of copy_ and fill_ (src/ops/CopyOps.cpp's table holds their addresses).
inline void hooked_copy_kernel(const Tensor& dst, const Tensor& src, bool non_blocking) {
  hooks().copy_kernel(dst, src, non_blocking);
}
inline void hooked_fill_kernel(const Tensor& self, const Scalar& value) { hooks().fill_kernel(self, value); }

}  // namespace tensor::cuda_detail
