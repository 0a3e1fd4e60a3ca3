// CUDA's fills of rand, randn, randint, arange and linspace, and randperm's sort: the shared
// front end in src/ops/FactoryOps.cpp checked the arguments, allocated a contiguous output on
// the device and reserved the generator's counters (Note [Factory kernels]); this hands the
// output's pointer and the parameters to kernels/cuda/RandomKernels.cu, RangeKernels.cu and
// RandpermKernels.cu.
#include "kernels/cuda/FactoryLaunch.h"
#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"
#include "src/ops/FactoryOps.h"
#include "tensor/ops.h"

namespace tensor::cuda_detail {

namespace {

using cuda_kernels::FactoryLaunch;
using cuda_kernels::LaunchStatus;

FactoryLaunch describe(const char* op, const Tensor& out) {
  TENSOR_CHECK(out.is_cuda() && out.is_contiguous(), "{}: expected a contiguous CUDA output, got {}", op,
               out.describe());
  FactoryLaunch l;
  l.dtype = out.dtype();
  l.n = out.numel();
  l.out = out.data_ptr();
  l.stream = current_stream(out.device().index());
  return l;
}

void finish(const char* op, const Tensor& out, LaunchStatus st) {
  if (st == cuda_kernels::kNoKernelForDtype)
    TENSOR_ERROR("{}: no CUDA kernel for dtype {} (shape {}); make it on the CPU and move it with .to()", op,
                 out.dtype(), detail::shape_str(out.sizes()));
  if (st != 0) throw_cuda_error(op, static_cast<cudaError_t>(st));
}

void random_cuda(const Tensor& out, uint64_t seed, uint64_t base, bool normal) {
  const char* op = normal ? "randn" : "rand";
  cuda::CUDAGuard guard(out.device().index());
  finish(op, out, cuda_kernels::launch_random(describe(op, out), seed, base, normal));
}

void randint_cuda(const Tensor& out, uint64_t seed, uint64_t base, int64_t low, uint64_t range) {
  cuda::CUDAGuard guard(out.device().index());
  finish("randint", out, cuda_kernels::launch_randint(describe("randint", out), seed, base, low, range));
}

void arange_cuda(const Tensor& out, const kernels::ArangeParams& p) {
  cuda::CUDAGuard guard(out.device().index());
  finish("arange", out, cuda_kernels::launch_arange(describe("arange", out), p));
}

void linspace_cuda(const Tensor& out, const kernels::LinspaceParams& p) {
  cuda::CUDAGuard guard(out.device().index());
  finish("linspace", out, cuda_kernels::launch_linspace(describe("linspace", out), p));
}

// randperm's sort (Note [randperm by sorted keys]): one scratch block from the caching
// allocator holds CUB's storage, the sorted keys and the index sequence.
void randperm_cuda(const Tensor& keys, const Tensor& out) {
  TENSOR_CHECK(keys.is_cuda() && out.is_cuda() && keys.is_contiguous() && out.is_contiguous() &&
                   keys.dtype() == kInt64 && out.dtype() == kInt64 && keys.numel() == out.numel(),
               "randperm: expected contiguous int64 CUDA keys and output of one size, got {} and {}", keys.describe(),
               out.describe());
  cuda::CUDAGuard guard(out.device().index());
  const int64_t n = keys.numel();
  const size_t bytes = cuda_kernels::randperm_scratch_bytes(n);
  Tensor scratch = empty({static_cast<int64_t>(bytes)}, TensorOptions(kUInt8).device(out.device()));
  finish("randperm", out,
         cuda_kernels::launch_randperm(keys.data_ptr<int64_t>(), out.data_ptr<int64_t>(), n, scratch.data_ptr(),
                                       bytes, current_stream(out.device().index())));
}

}  // namespace

void register_random_kernels() {
  ops::register_kernel(DispatchKey::CUDA, &random_cuda);
  ops::register_kernel(DispatchKey::CUDA, &randint_cuda);
  ops::register_kernel(DispatchKey::CUDA, &arange_cuda);
  ops::register_kernel(DispatchKey::CUDA, &linspace_cuda);
  ops::register_kernel(DispatchKey::CUDA, &randperm_cuda);
}

}  // namespace tensor::cuda_detail
