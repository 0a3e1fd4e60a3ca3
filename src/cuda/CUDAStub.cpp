// CPU-only build: CUDA entry points report no devices, and anything that needs a device
// raises a clear tensor::Error instead of crashing.
#include "src/core/Check.h"
#include "src/cuda/CUDAHooks.h"
#include "tensor/cuda/cuda.h"

namespace tensor {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  TENSOR_ERROR("{}: libtensor was built without CUDA (nvcc was not found at configure time); "
               "use CPU tensors or rebuild on a machine with the CUDA toolkit", what);
}
class NoCudaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t, Device) override { no_cuda("CUDA allocation"); }
};
}  // namespace

Allocator* cuda_allocator() {
  static NoCudaAllocator a;
  return &a;
}

namespace cuda_detail {
void check_available(const char* op, Device) { no_cuda(op); }
void copy_bytes(void*, Device, const void*, Device, size_t, bool) { no_cuda("copy to or from CUDA"); }
void fill_bytes(void*, Device, const void*, size_t, size_t) { no_cuda("fill on CUDA"); }
void copy_kernel(const Tensor&, const Tensor&, bool) { no_cuda("copy_ to or from CUDA"); }
void fill_kernel(const Tensor&, const Scalar&) { no_cuda("fill_ on CUDA"); }
}  // namespace cuda_detail

namespace cuda {
bool is_available() { return false; }
int device_count() { return 0; }
int current_device() { no_cuda("cuda::current_device"); }
void set_device(int) { no_cuda("cuda::set_device"); }
void synchronize() { no_cuda("cuda::synchronize"); }
CUDAGuard::CUDAGuard(int) { no_cuda("cuda::CUDAGuard"); }
CUDAGuard::~CUDAGuard() = default;
MemoryStats memory_stats(int) { return {}; }
void empty_cache() {}
}  // namespace cuda

}  // namespace tensor
