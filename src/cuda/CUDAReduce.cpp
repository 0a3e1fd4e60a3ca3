// The CUDA kernels of the reductions, scans and softmax (contracts: kernels/Reduce.h):
// describe the tensors as plain data for kernels/cuda/ReduceBody.h, split what exceeds 32-bit
// indexing, allocate the partials' scratch, and call kernels/cuda/Reduce*.cu's launchers.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "kernels/Reduce.h"
#include "kernels/cuda/ReduceBody.h"
#include "src/core/Check.h"
#include "src/cuda/CUDARuntime.h"
#include "src/ops/ReduceOps.h"
#include "tensor/ops.h"

namespace tensor::cuda_detail {

namespace {

namespace ck = cuda_kernels;
using ck::DescStatus;
using ck::ReduceDim;
using ck::ReduceKind;
using kernels::ReduceOp;

static_assert(int(ReduceOp::Sum) == int(ReduceKind::Sum) && int(ReduceOp::Prod) == int(ReduceKind::Prod) &&
                  int(ReduceOp::Max) == int(ReduceKind::Max) && int(ReduceOp::Min) == int(ReduceKind::Min) &&
                  int(ReduceOp::Any) == int(ReduceKind::Any) && int(ReduceOp::All) == int(ReduceKind::All),
              "ReduceKind mirrors kernels::ReduceOp");

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Any: return "any";
    case ReduceOp::All: return "all";
  }
  return "reduce";
}

/// What one reduction call launches: the op (a reduce op, or argmax/argmin), dtypes, stream.
struct Job {
  const char* name = "";
  bool arg = false;
  bool is_max = false;  // arg only
  ReduceKind kind = ReduceKind::Sum;
  ScalarType in_t = kFloat32, out_t = kFloat32;  // out_t: the values' dtype (arg: in_t)
  Device device = Device(kCUDA);
  cudaStream_t stream = nullptr;
  std::string shape;  // of the input, for messages
};

void check_status(const Job& job, ck::ReduceStatus st) {
  if (st == ck::kReduceNoKernel)
    TENSOR_ERROR("{}: no CUDA kernel for dtype {} yet (input shape {}); use .cpu()", job.name, job.in_t, job.shape);
  if (st != 0) throw_cuda_error(job.name, static_cast<cudaError_t>(st));
}

/// in's dims with byte strides of in, out (values) and out2 (indices); either output may be
/// undefined. The outputs have in's shape without the reduced dims, or with them as size 1.
std::vector<ReduceDim> describe(const Tensor& in, uint64_t mask, const Tensor& out, const Tensor& out2) {
  const Tensor& ref = out2.defined() ? out2 : out;
  const int64_t nd = in.dim();
  const bool keep = ref.dim() == nd;
  std::vector<ReduceDim> dims;
  int64_t j = 0;
  for (int64_t d = 0; d < nd; ++d) {
    ReduceDim r;
    r.size = in.size(d);
    r.in = in.stride(d) * in.element_size();
    r.reduced = (mask >> d) & 1;
    TENSOR_INTERNAL_ASSERT(r.in >= 0);
    if (!r.reduced) {
      if (out.defined()) r.out = out.stride(j) * out.element_size();
      if (out2.defined()) r.out2 = out2.stride(j) * out2.element_size();
    }
    if (!r.reduced || keep) ++j;
    dims.push_back(r);
  }
  return dims;
}

bool fits_dims(const std::vector<ReduceDim>& dims) {
  ck::ReduceDesc d;
  bool rows;
  return ck::make_reduce_desc(dims.data(), static_cast<int>(dims.size()), nullptr, nullptr, nullptr, d, rows) !=
         DescStatus::TooManyDims;
}

void launch_desc(const Job& job, const ck::ReduceDesc& d, bool rows) {
  const ck::ReducePlan plan = ck::plan_reduce(d.num_outputs, d.num_reduce, rows);
  const uint64_t bytes = ck::reduce_scratch_bytes(d, plan);
  Tensor scratch;  // freed on return: the caching allocator reuses it in this stream's order
  if (bytes > 0) scratch = empty({static_cast<int64_t>(bytes)}, TensorOptions(kUInt8).device(job.device));
  void* sp = bytes > 0 ? scratch.data_ptr() : nullptr;
  check_status(job, job.arg ? ck::launch_arg_reduce(job.is_max, job.in_t, d, plan, sp, job.stream)
                            : ck::launch_reduce(job.kind, job.in_t, job.out_t, d, plan, sp, job.stream));
}

/// Runs `job` over `dims` within 32-bit indexing (ck::run_within_limits splits it); false when
/// an argmax/argmin's single reduced range exceeds it (the caller falls back).
bool run(const Job& job, const std::vector<ReduceDim>& dims, const char* in, char* out, char* out2) {
  std::vector<Tensor> pairs;  // partial results of split ranges; freed in stream order on return
  auto pair = [&]() -> char* {
    pairs.push_back(empty({2}, TensorOptions(job.out_t).device(job.device)));
    return static_cast<char*>(pairs.back().data_ptr());
  };
  auto leaf = [&](const ck::ReduceDesc& d, bool rows, bool second) {
    Job j = job;
    if (second) j.in_t = job.out_t;  // a pair of partial results, in the output's dtype
    launch_desc(j, d, rows);
  };
  return ck::run_within_limits(dims.data(), static_cast<int>(dims.size()), in, out, out2, job.arg,
                               static_cast<int64_t>(element_size(job.out_t)), leaf, pair);
}

Job make_job(const char* name, const Tensor& in, ScalarType out_t) {
  Job job;
  job.name = name;
  job.in_t = in.dtype();
  job.out_t = out_t;
  job.device = in.device();
  job.stream = current_stream(in.device().index());
  job.shape = detail::shape_str(in.sizes());
  return job;
}

/// `in`, or a contiguous copy where its dims do not merge into 8 kept and 8 reduced ones.
Tensor mergeable(const char* name, const Tensor& in, uint64_t mask, const Tensor& out, const Tensor& out2) {
  if (fits_dims(describe(in, mask, out, out2))) return in;
  Tensor c = in.contiguous();
  TENSOR_CHECK(fits_dims(describe(c, mask, out, out2)),
               "{}: CUDA reductions support at most 8 kept and 8 reduced dims that cannot be merged (input {})", name,
               in.describe());
  return c;
}

void reduce_kernel(ReduceOp op, const Tensor& in_arg, uint64_t mask, const Tensor& out) {
  TENSOR_INTERNAL_ASSERT(in_arg.numel() > 0 && out.numel() > 0);
  cuda::CUDAGuard guard(in_arg.device().index());
  Job job = make_job(op_name(op), in_arg, out.dtype());
  job.kind = static_cast<ReduceKind>(op);
  const Tensor in = mergeable(job.name, in_arg, mask, out, Tensor());
  run(job, describe(in, mask, out, Tensor()), static_cast<const char*>(in.data_ptr()),
      static_cast<char*>(out.data_ptr()), nullptr);
}

void arg_reduce_kernel(bool is_max, const Tensor& in_arg, int64_t dim, const Tensor& values, const Tensor& indices) {
  TENSOR_INTERNAL_ASSERT(in_arg.numel() > 0 && indices.dtype() == kInt64);
  cuda::CUDAGuard guard(in_arg.device().index());
  Job job = make_job(is_max ? "max" : "min", in_arg, in_arg.dtype());
  job.arg = true;
  job.is_max = is_max;
  const uint64_t mask = in_arg.dim() == 0 ? 0 : uint64_t(1) << dim;
  const Tensor in = mergeable(job.name, in_arg, mask, values, indices);
  const bool done = run(job, describe(in, mask, values, indices), static_cast<const char*>(in.data_ptr()),
                        values.defined() ? static_cast<char*>(values.data_ptr()) : nullptr,
                        static_cast<char*>(indices.data_ptr()));
  if (done) return;
  // A single reduced range beyond 32-bit indexing (over 2^31 elements or 4 GiB): the CPU kernel
  // through the public ops, on a copy (rare; correct rather than fast).
  Tensor v, i;
  std::tie(v, i) = is_max ? tensor::max(in.cpu(), dim, true) : tensor::min(in.cpu(), dim, true);
  indices.copy_(i.reshape(indices.sizes()));
  if (values.defined()) values.copy_(v.reshape(values.sizes()));
}

/// Sizes of `t` around `dim`: (outer, size(dim), inner); 0-dim tensors are 1, 1, 1.
void split_at(const Tensor& t, int64_t dim, int64_t& outer, int64_t& R, int64_t& inner) {
  outer = 1, R = 1, inner = 1;
  for (int64_t d = 0; d < t.dim(); ++d) (d < dim ? outer : d == dim ? R : inner) *= t.size(d);
}

/// Calls launch(in, out, outer_chunk) over chunks of `outer` whose columns (outer * inner) and
/// rows fit 32-bit grid and index arithmetic.
template <class F>
void for_each_outer_chunk(const char* name, const Tensor& in, const Tensor& out, int64_t dim, const F& launch) {
  int64_t outer, R, inner;
  split_at(in, dim, outer, R, inner);
  TENSOR_CHECK(R <= INT32_MAX && inner <= INT32_MAX,
               "{}: on CUDA the scanned dim and the dims after it must each hold fewer than 2^31 elements (input {})",
               name, in.describe());
  const int64_t per = std::max<int64_t>(1, INT32_MAX / inner), row_bytes = R * inner * in.element_size();
  const char* ip = static_cast<const char*>(in.data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  for (int64_t o = 0; o < outer; o += per)
    launch(ip + o * row_bytes, op + o * row_bytes, std::min(per, outer - o), R, inner);
}

void cumulative_kernel(bool is_prod, const Tensor& in, int64_t dim, const Tensor& out) {
  TENSOR_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous() && in.dtype() == out.dtype());
  cuda::CUDAGuard guard(in.device().index());
  Job job = make_job(is_prod ? "cumprod" : "cumsum", in, in.dtype());
  for_each_outer_chunk(job.name, in, out, dim, [&](const void* i, void* o, int64_t outer, int64_t R, int64_t inner) {
    check_status(job, ck::launch_cumulative(is_prod, in.dtype(), i, o, outer, R, inner, job.stream));
  });
}

void softmax_kernel(const Tensor& in, int64_t dim, bool log, const Tensor& out) {
  TENSOR_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous() && in.dtype() == out.dtype());
  cuda::CUDAGuard guard(in.device().index());
  Job job = make_job(log ? "log_softmax" : "softmax", in, in.dtype());
  for_each_outer_chunk(job.name, in, out, dim, [&](const void* i, void* o, int64_t outer, int64_t R, int64_t inner) {
    check_status(job, ck::launch_softmax(log, in.dtype(), i, o, outer, R, inner, job.stream));
  });
}

}  // namespace

void register_reduce_kernels() {
  ops::register_kernel(DispatchKey::CUDA, &reduce_kernel);
  ops::register_kernel(DispatchKey::CUDA, &arg_reduce_kernel);
  ops::register_kernel(DispatchKey::CUDA, &cumulative_kernel);
  ops::register_kernel(DispatchKey::CUDA, &softmax_kernel);
}

}  // namespace tensor::cuda_detail
