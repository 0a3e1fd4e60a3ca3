// CUDA's fused optimizer steps (_fused_sgd_, _fused_adam_): the front end in
// src/ops/OptimizerOps.cpp checked the tensors and that they are contiguous, of one floating
// dtype and device; this hands their pointers to kernels/cuda/OptimizerKernels.cu.
#include "kernels/cuda/OptimizerLaunch.h"
#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"
#include "src/ops/OptimizerOps.h"

namespace tensor::cuda_detail {

namespace {

using cuda_kernels::FusedOptimLaunch;
using cuda_kernels::LaunchStatus;

FusedOptimLaunch describe(const char* op, const Tensor& p, const Tensor& grad, std::initializer_list<Tensor> state) {
  TENSOR_CHECK(p.is_cuda(), "{}: expected a CUDA parameter, got {}", op, p.describe());
  FusedOptimLaunch l;
  l.dtype = p.dtype();
  l.n = p.numel();
  l.param = p.data_ptr();
  l.grad = grad.data_ptr();
  int k = 0;
  for (const Tensor& t : state) l.state[k++] = t.defined() ? t.data_ptr() : nullptr;
  l.stream = current_stream(p.device().index());
  return l;
}

void finish(const char* op, const Tensor& p, LaunchStatus st, std::initializer_list<Tensor> written) {
  if (st == cuda_kernels::kNoKernelForDtype)
    TENSOR_ERROR("{}: no CUDA kernel for dtype {} (shape {})", op, p.dtype(), detail::shape_str(p.sizes()));
  if (st != 0) throw_cuda_error(op, static_cast<cudaError_t>(st));
  // The kernel writes through raw pointers, past the ops that bump version counters; autograd
  // must still see that these tensors changed.
  for (const Tensor& t : written)
    if (t.defined()) t.unsafeGetTensorImpl()->bump_version();
}

void fused_sgd(const Tensor& p, const Tensor& grad, const Tensor& buf, const kernels::SGDScalars& s) {
  cuda::CUDAGuard guard(p.device().index());
  FusedOptimLaunch l = describe("_fused_sgd_", p, grad, {buf});
  finish("_fused_sgd_", p, cuda_kernels::launch_fused_sgd(l, s), {p, buf});
}

void fused_adam(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v, const Tensor& vmax,
                const kernels::AdamScalars& s) {
  cuda::CUDAGuard guard(p.device().index());
  FusedOptimLaunch l = describe("_fused_adam_", p, grad, {m, v, vmax});
  finish("_fused_adam_", p, cuda_kernels::launch_fused_adam(l, s), {p, m, v, vmax});
}

}  // namespace

void register_optimizer_kernels() {
  ops::register_kernel(DispatchKey::CUDA, &fused_sgd);
  ops::register_kernel(DispatchKey::CUDA, &fused_adam);
}

}  // namespace tensor::cuda_detail
