// CUDA device queries and error conversion. Without a GPU (or driver) every query
// reports zero devices and everything that needs one throws a clear tensor::Error.
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"

namespace tensor {

namespace {
// The device count never changes within a process (CUDA_VISIBLE_DEVICES is read once by the
// driver), so it is queried once. Function-local statics make the first call thread-safe.
struct DeviceQuery {
  int count = 0;
  cudaError_t err = cudaSuccess;
};

const DeviceQuery& device_query() {
  static const DeviceQuery q = [] {
    DeviceQuery r;
    int n = 0;
    r.err = cudaGetDeviceCount(&n);
    if (r.err != cudaSuccess) {
      (void)cudaGetLastError();  // no driver or no device is an answer, not an error
      n = 0;
    }
    r.count = n;
    return r;
  }();
  return q;
}

[[noreturn]] void throw_unavailable(const char* op) {
  const DeviceQuery& q = device_query();
  std::string why = q.err == cudaSuccess ? std::string("0 devices")
                                         : fmt::format("{}", cudaGetErrorString(q.err));
  TENSOR_ERROR("{}: no CUDA device is available (cudaGetDeviceCount: {}); use CPU tensors (kCPU)", op,
               why);
}

}  // namespace

namespace cuda_detail {

void check_index(const char* op, int index) {
  int n = device_query().count;
  if (n == 0) throw_unavailable(op);
  TENSOR_CHECK(index >= -1 && index < n, "{}: CUDA device index {} is out of range ({} CUDA device{} visible)", op,
               index, n, n == 1 ? " is" : "s are");
}

int get_device() {
  int d = 0;
  TENSOR_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void throw_cuda_error(const char* api, cudaError_t err) {
  (void)cudaGetLastError();  // clear the non-sticky error so later calls do not report it again
  const char* paren = std::strchr(api, '(');
  std::string name = paren ? std::string(api, paren) : std::string(api);
  TENSOR_ERROR("{} failed: {} ({})", name, cudaGetErrorString(err), cudaGetErrorName(err));
}

void check_available(const char* op, Device device) {
  TENSOR_CHECK(device.is_cuda(), "{}: expected a CUDA device, got {}", op, device.str());
  check_index(op, device.index());
}

int resolve_device(const char* op, Device device) {
  check_available(op, device);
  return device.has_index() ? device.index() : get_device();
}

int device_count() { return device_query().count; }
cudaError_t device_query_error() { return device_query().err; }

void set_device(int index) {
  check_index("cuda::set_device", index);
  TENSOR_CHECK(index >= 0, "cuda::set_device: expected a device index >= 0, got {}", index);
  if (get_device() != index) TENSOR_CUDA_CHECK(cudaSetDevice(index));
}

void synchronize(int device) {
  check_index("cuda::synchronize", device);
  if (device < 0) {
    TENSOR_CUDA_CHECK(cudaDeviceSynchronize());
    return;
  }
  int cur = get_device();
  if (cur != device) TENSOR_CUDA_CHECK(cudaSetDevice(device));
  cudaError_t err = cudaDeviceSynchronize();
  if (cur != device) (void)cudaSetDevice(cur);
  if (err != cudaSuccess) throw_cuda_error("cudaDeviceSynchronize", err);
}

}  // namespace cuda_detail


}  // namespace tensor
