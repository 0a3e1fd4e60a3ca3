// libtensor_cuda's entry point: the real CUDAHooks (Note [CUDA hooks] in src/core/CUDAHooks.h).
#include "src/core/CUDAHooks.h"

#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"
#include "src/cuda/CUDAStream.h"
#if defined(TENSOR_WITH_NCCL)
#include "src/distributed/nccl/NCCLGroup.h"
#endif

#define TENSOR_CUDA_EXPORT __attribute__((visibility("default")))

namespace tensor::cuda_detail {
namespace {

class CUDAHooksImpl final : public CUDAHooks {
 public:
  int device_count() override { return cuda_detail::device_count(); }
  const char* unavailable_reason() override { return ""; }
  int current_device() override {
    check_index("cuda::current_device", -1);
    return get_device();
  }
  void set_device(int index) override { cuda_detail::set_device(index); }
  void synchronize(int device) override { cuda_detail::synchronize(device); }
  void check_available(const char* op, Device device) override { cuda_detail::check_available(op, device); }

  Allocator* allocator() override { return device_allocator(); }
  Allocator* host_allocator() override { return pinned_host_allocator(); }
  cuda::MemoryStats memory_stats(int device) override { return cuda_detail::memory_stats(device); }
  void reset_peak_memory_stats(int device) override { cuda_detail::reset_peak_memory_stats(device); }
  void empty_cache() override { cuda_detail::empty_cache(); }
  void record_stream(void* ptr, int device, cuda::StreamId stream) override {
    cuda_detail::record_stream(ptr, device, as_stream(stream));
  }

  void copy_kernel(const Tensor& dst, const Tensor& src, bool non_blocking) override {
    cuda_detail::copy_kernel(dst, src, non_blocking);
  }
  void fill_kernel(const Tensor& self, const Scalar& value) override { cuda_detail::fill_kernel(self, value); }

  cuda::StreamId current_stream(int device) override { return current_stream_id(device); }
  void set_current_stream(int device, cuda::StreamId stream) override {
    cuda_detail::set_current_stream(device, stream);
  }
  cuda::StreamId stream_from_pool(int device, bool high_priority) override {
    return cuda_detail::stream_from_pool(device, high_priority);
  }
  bool stream_query(int device, cuda::StreamId stream) override { return cuda_detail::stream_query(device, stream); }
  void stream_synchronize(int device, cuda::StreamId stream) override {
    cuda_detail::stream_synchronize(device, stream);
  }
  int stream_priority(int device, cuda::StreamId stream) override {
    return cuda_detail::stream_priority(device, stream);
  }
  void* event_create(int device, bool enable_timing, bool blocking) override {
    return cuda_detail::event_create(device, enable_timing, blocking);
  }
  void event_destroy(void* event, int device) override { cuda_detail::event_destroy(event, device); }
  void event_record(void* event, int device, cuda::StreamId stream) override {
    cuda_detail::event_record(event, device, stream);
  }
  bool event_query(void* event, int device) override { return cuda_detail::event_query(event, device); }
  void event_synchronize(void* event, int device) override { cuda_detail::event_synchronize(event, device); }
  void event_block(void* event, int device, cuda::StreamId stream) override {
    cuda_detail::event_block(event, device, stream);
  }
  float event_elapsed_ms(void* start, void* end, int device) override {
    return cuda_detail::event_elapsed_ms(start, end, device);
  }
};

}  // namespace
}  // namespace tensor::cuda_detail

// Called once by libtensor's hooks() (under its static-initialization lock): registers the
// kernels, then hands out the hooks. Nothing here may call back into tensor::cuda::*.
extern "C" TENSOR_CUDA_EXPORT tensor::cuda_detail::CUDAHooks* tensor_cuda_hooks() {
  static tensor::cuda_detail::CUDAHooks* const h = [] {
    tensor::cuda_detail::register_cuda_kernels();
#if defined(TENSOR_WITH_NCCL)
    tensor::distributed::register_nccl();
#endif
    return new tensor::cuda_detail::CUDAHooksImpl();  // never destroyed: storages may die at exit
  }();
  return h;
}
