// tril/triu (and tril_/triu_) on CUDA: src/ops/RearrangeOps.h's TriangleKernel. The kept
// triangle is a copy (copy_'s device kernel takes any layout); the dropped one is zeroed in
// place on a contiguous tensor by kernels/cuda/TriangleKernels.cu.
#include <algorithm>

#include "kernels/cuda/RearrangeLaunch.h"
#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"
#include "src/ops/RearrangeOps.h"
#include "tensor/ops.h"

namespace tensor::cuda_detail {

namespace {

// Zeroes the dropped triangle of contiguous t (at least 2-D) on its device.
void zero_triangle(const Tensor& t, int64_t diagonal, bool lower) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  if (t.numel() == 0) return;
  // Beyond these bounds every element is kept or every one dropped: the clamp changes nothing
  // and keeps row + diagonal in range.
  diagonal = std::clamp<int64_t>(diagonal, -rows, cols);
  const int device = t.device().index();
  cuda::CUDAGuard guard(device);
  const int st = cuda_kernels::launch_zero_triangle(t.data_ptr(), t.element_size(), t.numel() / cols, rows, cols,
                                                    diagonal, lower, current_stream(device));
  if (st == cuda_kernels::kNoKernelForDtype)
    TENSOR_ERROR("{}: no CUDA kernel for dtype {} (shape {})", lower ? "tril" : "triu", t.dtype(),
                 detail::shape_str(t.sizes()));
  if (st != 0) throw_cuda_error(lower ? "tril" : "triu", static_cast<cudaError_t>(st));
}

// out defined: out (contiguous, self's shape) = self's kept triangle; otherwise self's dropped
// triangle is zeroed in place (through a contiguous copy when self is strided).
void triangle_kernel(const Tensor& self, const Tensor& out, int64_t diagonal, bool lower) {
  if (out.defined()) {
    copy_kernel(out, self, /*non_blocking=*/false);
    zero_triangle(out, diagonal, lower);
    return;
  }
  if (self.is_contiguous()) {
    zero_triangle(self, diagonal, lower);
    return;
  }
  Tensor tmp = empty(self.sizes(), self.options());
  copy_kernel(tmp, self, false);
  zero_triangle(tmp, diagonal, lower);
  copy_kernel(self, tmp, false);
}

}  // namespace

void register_rearrange_kernels() { ops::register_kernel(DispatchKey::CUDA, &triangle_kernel); }

}  // namespace tensor::cuda_detail
