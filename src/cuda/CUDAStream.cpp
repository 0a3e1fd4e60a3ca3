// Streams, the per-thread current stream, the stream pool and events.
#include "src/cuda/CUDAStream.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"

namespace tensor::cuda_detail {

// Note [CUDA streams]
// As libtorch: each thread has a current stream per device, the legacy default stream (id 0)
// until a StreamGuard or setCurrentCUDAStream changes it, and every kernel, copy and allocation
// is ordered on it. Pool streams are created once per device (kPoolSize of each priority,
// non-blocking with respect to the default stream) and handed out round-robin; they are never
// destroyed, so a Stream value stays valid for the whole process.
namespace {

constexpr int kMaxDevices = 64;
constexpr int kPoolSize = 32;

struct DevicePool {
  std::once_flag once;
  std::array<cudaStream_t, kPoolSize> low{};
  std::array<cudaStream_t, kPoolSize> high{};
  std::atomic<unsigned> next_low{0};
  std::atomic<unsigned> next_high{0};
};

DevicePool& pool(int device) {
  static std::array<DevicePool, kMaxDevices>* pools = new std::array<DevicePool, kMaxDevices>();  // never freed
  return (*pools)[device];
}

thread_local std::array<cuda::StreamId, kMaxDevices> t_current{};

int checked_device(const char* op, int device) {
  check_index(op, device);
  int d = device < 0 ? get_device() : device;
  TENSOR_CHECK(d < kMaxDevices, "{}: device index {} exceeds the {} devices libtensor supports", op, d, kMaxDevices);
  return d;
}

// Runs `f` with `device` current, restoring the previous device.
template <class F>
auto on_device(int device, F&& f) {
  int cur = get_device();
  if (cur != device) TENSOR_CUDA_CHECK(cudaSetDevice(device));
  struct Restore {
    int cur, dev;
    ~Restore() {
      if (cur != dev) (void)cudaSetDevice(cur);
    }
  } restore{cur, device};
  return f();
}

}  // namespace

cudaStream_t current_stream(int device) { return as_stream(t_current[device < 0 ? get_device() : device]); }

cuda::StreamId current_stream_id(int device) {
  return t_current[checked_device("cuda::getCurrentCUDAStream", device)];
}

void set_current_stream(int device, cuda::StreamId stream) {
  int d = checked_device("cuda::setCurrentCUDAStream", device);
  // A Stream built by hand may pair a handle with the wrong device; every launch on it would
  // then fail far from here. Id 0 means the default stream of whichever device is current.
  if (stream != 0) {
    int owner = -1;
    TENSOR_CUDA_CHECK(cudaStreamGetDevice(as_stream(stream), &owner));
    TENSOR_CHECK(owner == d, "cuda::setCurrentCUDAStream: the stream belongs to cuda:{}, not cuda:{}", owner, d);
  }
  t_current[d] = stream;
}

cuda::StreamId stream_from_pool(int device, bool high_priority) {
  int d = checked_device("cuda::getStreamFromPool", device);
  DevicePool& p = pool(d);
  std::call_once(p.once, [&] {
    on_device(d, [&] {
      int least = 0, greatest = 0;
      TENSOR_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      for (int i = 0; i < kPoolSize; ++i) {
        TENSOR_CUDA_CHECK(cudaStreamCreateWithPriority(&p.low[i], cudaStreamNonBlocking, least));
        TENSOR_CUDA_CHECK(cudaStreamCreateWithPriority(&p.high[i], cudaStreamNonBlocking, greatest));
      }
      return 0;
    });
  });
  unsigned i = (high_priority ? p.next_high : p.next_low).fetch_add(1, std::memory_order_relaxed) % kPoolSize;
  return as_id(high_priority ? p.high[i] : p.low[i]);
}

bool stream_query(int device, cuda::StreamId stream) {
  int d = checked_device("cuda::Stream::query", device);
  return on_device(d, [&] {
    cudaError_t err = cudaStreamQuery(as_stream(stream));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    TENSOR_CUDA_CHECK(err);
    return true;
  });
}

void stream_synchronize(int device, cuda::StreamId stream) {
  int d = checked_device("cuda::Stream::synchronize", device);
  on_device(d, [&] {
    TENSOR_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
    return 0;
  });
}

int stream_priority(int device, cuda::StreamId stream) {
  int d = checked_device("cuda::Stream::priority", device);
  return on_device(d, [&] {
    int prio = 0;
    TENSOR_CUDA_CHECK(cudaStreamGetPriority(as_stream(stream), &prio));
    return prio;
  });
}

void* event_create(int device, bool enable_timing, bool blocking) {
  int d = checked_device("cuda::Event::record", device);
  return on_device(d, [&] {
    unsigned flags = (enable_timing ? 0u : cudaEventDisableTiming) | (blocking ? cudaEventBlockingSync : 0u);
    cudaEvent_t e = nullptr;
    TENSOR_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
    return static_cast<void*>(e);
  });
}

void event_destroy(void* event, int device) {
  // Called from destructors: never throws; a failure leaves the runtime's error slot clear.
  int cur = 0;
  if (cudaGetDevice(&cur) != cudaSuccess) cur = device;
  if (cur != device) (void)cudaSetDevice(device);
  if (cudaEventDestroy(static_cast<cudaEvent_t>(event)) != cudaSuccess) (void)cudaGetLastError();
  if (cur != device) (void)cudaSetDevice(cur);
}

void event_record(void* event, int device, cuda::StreamId stream) {
  on_device(device, [&] {
    TENSOR_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), as_stream(stream)));
    return 0;
  });
}

bool event_query(void* event, int device) {
  return on_device(device, [&] {
    cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    TENSOR_CUDA_CHECK(err);
    return true;
  });
}

void event_synchronize(void* event, int device) {
  on_device(device, [&] {
    TENSOR_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
    return 0;
  });
}

void event_block(void* event, int stream_device, cuda::StreamId stream) {
  on_device(checked_device("cuda::Event::block", stream_device), [&] {
    TENSOR_CUDA_CHECK(cudaStreamWaitEvent(as_stream(stream), static_cast<cudaEvent_t>(event), 0));
    return 0;
  });
}

float event_elapsed_ms(void* start, void* end, int device) {
  return on_device(device, [&] {
    float ms = 0;
    cudaError_t err = cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      TENSOR_ERROR("cuda::Event::elapsed_time: both events must have completed (synchronize the later one first)");
    }
    TENSOR_CUDA_CHECK(err);
    return ms;
  });
}

}  // namespace tensor::cuda_detail
