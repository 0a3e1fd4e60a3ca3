// CUDA's kernels of GradScaler's ops (_amp_foreach_non_finite_check_and_unscale_,
// _amp_update_scale_): the front end in src/amp/AmpOps.cpp checked devices and dtypes and made
// the gradients contiguous; these queue the kernels on the current stream.
#include "kernels/cuda/AmpLaunch.h"
#include "src/amp/AmpOps.h"
#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"

namespace tensor::cuda_detail {

namespace {

void check_launch(const char* op, const Tensor& t, cuda_kernels::LaunchStatus st) {
  if (st == cuda_kernels::kNoKernelForDtype) TENSOR_ERROR("{}: no CUDA kernel for {}", op, t.describe());
  if (st != 0) throw_cuda_error(op, static_cast<cudaError_t>(st));
}

void amp_unscale(TensorList grads, const Tensor& found_inf, const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  const int device = found_inf.device().index();
  cuda::CUDAGuard guard(device);
  void* stream = current_stream(device);
  for (const Tensor& g : grads) {
    check_launch(op, g,
                 cuda_kernels::launch_amp_unscale(g.dtype(), g.data_ptr(), g.numel(), found_inf.data_ptr<float>(),
                                                  inv_scale.data_ptr<float>(), stream));
    g.unsafeGetTensorImpl()->bump_version();
  }
  found_inf.unsafeGetTensorImpl()->bump_version();
}

void amp_update_scale(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                      double growth_factor, double backoff_factor, int64_t growth_interval) {
  const int device = scale.device().index();
  cuda::CUDAGuard guard(device);
  check_launch("_amp_update_scale_", scale,
               cuda_kernels::launch_amp_update_scale(scale.data_ptr<float>(), growth_tracker.data_ptr<int32_t>(),
                                                     found_inf.data_ptr<float>(), growth_factor, backoff_factor,
                                                     growth_interval, current_stream(device)));
  scale.unsafeGetTensorImpl()->bump_version();
  growth_tracker.unsafeGetTensorImpl()->bump_version();
}

}  // namespace

void register_amp_kernels() { ops::register_kernel(DispatchKey::CUDA, ops::AmpKernels{&amp_unscale, &amp_update_scale}); }

}  // namespace tensor::cuda_detail
