// CUDA device queries, guards and error conversion. Without a GPU (or driver) every query
// reports zero devices and everything that needs one throws a clear tensor::Error.
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "src/core/Check.h"
#include "src/cuda/CUDAHooks.h"
#include "src/cuda/CUDAKernels.h"
#include "tensor/cuda/cuda.h"

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
  TENSOR_ERROR("{}: CUDA tensor requested but no CUDA device is available (cudaGetDeviceCount: {}); use kCPU", op,
               why);
}

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
}  // namespace

namespace cuda_detail {

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

}  // namespace cuda_detail

namespace cuda {

bool is_available() { return device_query().count > 0; }

int device_count() { return device_query().count; }

int current_device() {
  check_index("cuda::current_device", -1);
  return get_device();
}

void set_device(int index) {
  check_index("cuda::set_device", index);
  TENSOR_CHECK(index >= 0, "cuda::set_device: expected a device index >= 0, got {}", index);
  if (get_device() != index) TENSOR_CUDA_CHECK(cudaSetDevice(index));
}

void synchronize() {
  check_index("cuda::synchronize", -1);
  TENSOR_CUDA_CHECK(cudaDeviceSynchronize());
}

// index -1 keeps the current device. prev_ stays -1 unless the device was changed, so the
// destructor only undoes what the constructor did.
CUDAGuard::CUDAGuard(int index) {
  check_index("cuda::CUDAGuard", index);
  if (index < 0) return;
  int cur = get_device();
  if (cur != index) {
    TENSOR_CUDA_CHECK(cudaSetDevice(index));
    prev_ = cur;
  }
}

CUDAGuard::~CUDAGuard() {
  if (prev_ >= 0 && cudaSetDevice(prev_) != cudaSuccess) (void)cudaGetLastError();  // never throw from a destructor
}

}  // namespace cuda

}  // namespace tensor
