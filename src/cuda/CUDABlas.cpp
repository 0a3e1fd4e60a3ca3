// mm, bmm, addmm and linear on CUDA: the MatmulKernel contract (src/ops/LinalgOps.h) on
// cuBLASLt. The layout decision is plan_matmul (src/cuda/CUDABlas.h, Note [cuBLASLt matmul
// layout]); this file turns a plan into descriptors, picks an algorithm and runs it on the
// current stream.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "src/core/Check.h"
#include "src/cuda/CUDABlas.h"
#include "src/cuda/CUDARuntime.h"
#include "src/ops/LinalgOps.h"
#include "tensor/ops.h"

namespace tensor::cuda_detail {
namespace {

using detail::shape_str;

/// "<op>: cuBLASLt <api> failed: <status string> (<status name>) for <shapes> <dtype>".
[[noreturn]] void throw_blas_error(const char* op, const char* api, cublasStatus_t st, const Tensor& a,
                                   const Tensor& w) {
  TENSOR_ERROR("{}: cuBLASLt {} failed: {} ({}) for {} @ {} of dtype {}", op, api, cublasLtGetStatusString(st),
               cublasLtGetStatusName(st), shape_str(a.sizes()), shape_str(w.sizes()), a.scalar_type());
}

#define TENSOR_BLAS_CHECK(api, expr)                                                                \
  do {                                                                                              \
    const cublasStatus_t tensor_blas_st_ = (expr);                                                  \
    if (tensor_blas_st_ != CUBLAS_STATUS_SUCCESS) throw_blas_error(op, api, tensor_blas_st_, a, w); \
  } while (0)

// Note [cuBLASLt handles and workspaces]
// One cuBLASLt handle per device, created on first use with that device current, shared by all
// threads. cuBLAS's handles hold per-handle state (the stream, the workspace, the math mode),
// which is why libtorch keeps one per thread; a cuBLASLt call takes its stream and workspace as
// arguments and the matmul's settings live in per-call descriptors, so nothing on the handle
// changes between calls and the library is thread safe with a shared handle. Handles are never
// destroyed (as in libtorch): at exit the CUDA runtime may already be gone.
// The workspace (split-K and stream-K algorithms need one) is a block of the caching allocator
// per (device, stream), allocated while that stream is current, so the block belongs to it and
// is only ever used by work ordered on it (Note [CUDA caching allocator]); it is kept for the
// life of the process. Its size is libtorch's per-arch choice (blas_workspace_bytes: 32 MiB
// from Hopper on), or CUBLASLT_WORKSPACE_SIZE in KiB, as libtorch reads it.
struct DeviceBlas {
  std::once_flag once;
  cublasLtHandle_t handle = nullptr;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  uint64_t workspace_bytes = 0;
};

DeviceBlas& device_blas(int device) {
  static std::vector<std::unique_ptr<DeviceBlas>>* all = [] {
    auto* v = new std::vector<std::unique_ptr<DeviceBlas>>();  // never destroyed (the note above)
    for (int d = 0; d < device_count(); ++d) v->push_back(std::make_unique<DeviceBlas>());
    return v;
  }();
  return *(*all)[static_cast<size_t>(device)];
}

uint64_t workspace_bytes_for(int device) {
  if (const char* e = std::getenv("CUBLASLT_WORKSPACE_SIZE")) {
    char* end = nullptr;
    const unsigned long long kib = std::strtoull(e, &end, 10);
    if (end != e && *end == '\0') return static_cast<uint64_t>(kib) * 1024;
  }
  int major = 0;
  TENSOR_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return blas_workspace_bytes(major);
}

/// The device's handle (created on first use; `device` is current).
DeviceBlas& blas_for(int device) {
  DeviceBlas& b = device_blas(device);
  std::call_once(b.once, [&] {
    b.workspace_bytes = workspace_bytes_for(device);
    b.status = cublasLtCreate(&b.handle);
  });
  return b;
}

/// The workspace of (device, stream): a caching-allocator block owned by `stream`.
void* workspace_for(int device, cudaStream_t stream, uint64_t bytes) {
  if (bytes == 0) return nullptr;
  // Both never destroyed: a matmul may run while static objects are being destroyed at exit.
  static auto* mu = new std::mutex();
  static auto* blocks = new std::map<std::pair<int, cudaStream_t>, void*>();
  std::lock_guard<std::mutex> lock(*mu);
  void*& block = (*blocks)[{device, stream}];
  if (block == nullptr) block = device_allocator()->allocate(bytes, Device(kCUDA, static_cast<int8_t>(device))).data;
  return block;
}

struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDeleter>;

/// cuBLASLt's types for a dtype: (data type, compute type, scale type). Only the four dtypes
/// the kernel accepts reach here.
struct BlasTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};
BlasTypes blas_types(ScalarType t) {
  switch (t) {
    case ScalarType::Double:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    case ScalarType::Half:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case ScalarType::BFloat16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    // float32 in plain fp32: libtorch's default does not allow TF32 for matmul.
    default:
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
  }
}

MatrixView view_of(const Tensor& t) {
  MatrixView v;
  const bool batched = t.dim() == 3;
  v.batch = batched ? t.size(0) : 1;
  v.batch_stride = batched ? t.stride(0) : 0;
  v.rows = t.size(-2);
  v.cols = t.size(-1);
  v.row_stride = t.stride(-2);
  v.col_stride = t.stride(-1);
  return v;
}

/// A copy of t that plan_matmul reads without another copy: contiguous, and a broadcast batch
/// stays broadcast (one matrix is copied, not the expanded batch).
Tensor packed(const Tensor& t) {
  if (t.dim() == 3 && (t.size(0) == 1 || t.stride(0) == 0)) return t.select(0, 0).contiguous().unsqueeze(0);
  return t.contiguous();
}

Layout make_layout(const char* op, const Tensor& a, const Tensor& w, cudaDataType_t type, int64_t rows, int64_t cols,
                   int64_t ld, int64_t batch, int64_t batch_stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  TENSOR_BLAS_CHECK("cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                                                             static_cast<uint64_t>(cols), ld));
  Layout l(raw);
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    TENSOR_BLAS_CHECK("cublasLtMatrixLayoutSetAttribute",
                      cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    TENSOR_BLAS_CHECK("cublasLtMatrixLayoutSetAttribute",
                      cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                                       sizeof batch_stride));
  }
  return l;
}

template <class T>
void set_desc(const char* op, const Tensor& a, const Tensor& w, cublasLtMatmulDesc_t d,
              cublasLtMatmulDescAttributes_t attr, const T& value) {
  TENSOR_BLAS_CHECK("cublasLtMatmulDescSetAttribute", cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof value));
}

void set_pref(const char* op, const Tensor& a, const Tensor& w, cublasLtMatmulPreference_t p,
              cublasLtMatmulPreferenceAttributes_t attr, uint64_t value) {
  TENSOR_BLAS_CHECK("cublasLtMatmulPreferenceSetAttribute",
                    cublasLtMatmulPreferenceSetAttribute(p, attr, &value, sizeof value));
}
void set_pref(const char* op, const Tensor& a, const Tensor& w, cublasLtMatmulPreference_t p,
              cublasLtMatmulPreferenceAttributes_t attr, uint32_t value) {
  TENSOR_BLAS_CHECK("cublasLtMatmulPreferenceSetAttribute",
                    cublasLtMatmulPreferenceSetAttribute(p, attr, &value, sizeof value));
}

uint32_t align_of(const void* p) { return blas_alignment(reinterpret_cast<uintptr_t>(p)); }

/// Runs the plan: out = alpha * a @ w + beta * out (+ bias through the epilogue). Returns
/// whether the bias was added: false when the plan has no epilogue, or when cuBLASLt has no
/// algorithm with it for this case (then the caller adds the bias after the product).
bool run_plan(const char* op, const MatmulPlan& p, const Tensor& a, const Tensor& w, const Tensor& bias,
              const Tensor& out, const Scalar& alpha, const Scalar& beta, int device) {
  const BlasTypes ty = blas_types(out.scalar_type());
  DeviceBlas& blas = blas_for(device);
  if (blas.status != CUBLAS_STATUS_SUCCESS) throw_blas_error(op, "cublasLtCreate", blas.status, a, w);
  const cudaStream_t stream = current_stream(device);
  void* workspace = workspace_for(device, stream, blas.workspace_bytes);

  cublasLtMatmulDesc_t raw_desc = nullptr;
  TENSOR_BLAS_CHECK("cublasLtMatmulDescCreate", cublasLtMatmulDescCreate(&raw_desc, ty.compute, ty.scale));
  MatmulDesc desc(raw_desc);
  set_desc(op, a, w, raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, p.A.transpose ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(op, a, w, raw_desc, CUBLASLT_MATMUL_DESC_TRANSB, p.B.transpose ? CUBLAS_OP_T : CUBLAS_OP_N);
  if (p.bias_epilogue) {
    set_desc(op, a, w, raw_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    set_desc(op, a, w, raw_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias.data_ptr()));
  }
  // A is w's memory, B is a's (Note [cuBLASLt matmul layout]); C and D are out.
  Layout la = make_layout(op, a, w, ty.data, p.A.rows, p.A.cols, p.A.ld, p.batch, p.A.batch_stride);
  Layout lb = make_layout(op, a, w, ty.data, p.B.rows, p.B.cols, p.B.ld, p.batch, p.B.batch_stride);
  Layout ld = make_layout(op, a, w, ty.data, p.m, p.n, p.ldd, p.batch, p.d_batch_stride);

  cublasLtMatmulPreference_t raw_pref = nullptr;
  TENSOR_BLAS_CHECK("cublasLtMatmulPreferenceCreate", cublasLtMatmulPreferenceCreate(&raw_pref));
  Preference pref(raw_pref);
  set_pref(op, a, w, raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, blas.workspace_bytes);
  // The heuristic assumes 256-byte aligned matrices unless told (a slice's pointer may not be).
  set_pref(op, a, w, raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_of(w.data_ptr()));
  set_pref(op, a, w, raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_of(a.data_ptr()));
  set_pref(op, a, w, raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_of(out.data_ptr()));
  set_pref(op, a, w, raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_of(out.data_ptr()));

  cublasLtMatmulHeuristicResult_t heuristic = {};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(blas.handle, raw_desc, la.get(), lb.get(), ld.get(), ld.get(),
                                                     raw_pref, 1, &heuristic, &found);
  bool bias_done = p.bias_epilogue;
  if (p.bias_epilogue && (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0))) {
    // No kernel with the bias epilogue for this case: the plain product, and the caller adds it.
    bias_done = false;
    set_desc(op, a, w, raw_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
    st = cublasLtMatmulAlgoGetHeuristic(blas.handle, raw_desc, la.get(), lb.get(), ld.get(), ld.get(), raw_pref, 1,
                                        &heuristic, &found);
  }
  TENSOR_BLAS_CHECK("cublasLtMatmulAlgoGetHeuristic", st);
  if (found == 0) throw_blas_error(op, "cublasLtMatmulAlgoGetHeuristic", CUBLAS_STATUS_NOT_SUPPORTED, a, w);

  const double alpha_d = alpha.to_double(), beta_d = beta.to_double();
  const float alpha_f = static_cast<float>(alpha_d), beta_f = static_cast<float>(beta_d);
  const bool dbl = ty.scale == CUDA_R_64F;
  const void* alpha_p = dbl ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta_p = dbl ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  // With beta == 0 cuBLASLt does not read C: out's old contents (NaN included) are ignored.
  TENSOR_BLAS_CHECK("cublasLtMatmul",
                    cublasLtMatmul(blas.handle, raw_desc, alpha_p, w.data_ptr(), la.get(), a.data_ptr(), lb.get(),
                                   beta_p, out.data_ptr(), ld.get(), out.data_ptr(), ld.get(), &heuristic.algo,
                                   workspace, blas.workspace_bytes, stream));
  return bias_done;
}

#undef TENSOR_BLAS_CHECK

bool supported(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::Half || t == ScalarType::BFloat16;
}

/// The CUDA MatmulKernel: out[b] = alpha * (a[b] @ w[b]) + beta * out[b] + bias.
void matmul_kernel(const char* op, const Tensor& a_in, const Tensor& w_in, const Tensor& bias_in, const Tensor& out,
                   const Scalar& alpha, const Scalar& beta) {
  const ScalarType t = out.scalar_type();
  TENSOR_CHECK(supported(t) && a_in.scalar_type() == t && w_in.scalar_type() == t,
               "{}: no CUDA matmul for dtype {} (shapes {} and {}, dtypes {} and {}); CUDA supports float32, "
               "float64, float16 and bfloat16 (use .cpu() for other dtypes)",
               op, t, shape_str(a_in.sizes()), shape_str(w_in.sizes()), a_in.scalar_type(), w_in.scalar_type());
  TENSOR_CHECK(!alpha.is_complex() && !beta.is_complex(), "{}: complex alpha or beta on dtype {}", op, t);
  const Device dev = out.device();
  TENSOR_CHECK(a_in.device() == dev && w_in.device() == dev && (!bias_in.defined() || bias_in.device() == dev),
               "{}: expected every operand on {}, but got a on {}, w on {}{}", op, dev.str(), a_in.device().str(),
               w_in.device().str(), bias_in.defined() ? ", bias on " + bias_in.device().str() : std::string());
  TENSOR_CHECK(!bias_in.defined() || bias_in.scalar_type() == t, "{}: expected a bias of dtype {}, but got {}", op, t,
               bias_in.defined() ? bias_in.scalar_type() : ScalarType::Undefined);
  TENSOR_INTERNAL_ASSERT(out.is_contiguous() && (a_in.dim() == 2 || a_in.dim() == 3) && a_in.dim() == w_in.dim());
  TENSOR_CHECK(out.dim() != 3 || out.size(0) <= INT32_MAX, "{}: a batch of {} matrices exceeds cuBLASLt's int32 count",
               op, out.size(0));
  if (out.numel() == 0) return;
  const int device = dev.index();
  cuda::CUDAGuard guard(device);
  Tensor o = out;  // the handle is const, the data is written

  if (a_in.size(-1) == 0) {
    // An empty inner dim: the product is zero (cuBLASLt rejects k = 0).
    if (beta.to_double() == 0)
      o.zero_();
    else
      o.mul_(beta);
    if (bias_in.defined()) o.add_(bias_in);
    return;
  }

  const int64_t out_batch = out.dim() == 3 ? out.size(0) : 1;
  const int64_t bias_stride = bias_in.defined() && bias_in.dim() > 0 ? bias_in.stride(-1) : 1;
  Tensor a = a_in, w = w_in;
  MatmulPlan p = plan_matmul(view_of(a), view_of(w), out_batch, bias_in.defined(), bias_stride);
  if (p.needs_copy()) {
    if (p.B.needs_copy) a = packed(a);
    if (p.A.needs_copy) w = packed(w);
    p = plan_matmul(view_of(a), view_of(w), out_batch, bias_in.defined(), bias_stride);
    TENSOR_INTERNAL_ASSERT(!p.needs_copy());
  }
  const Tensor bias = p.bias_needs_copy ? bias_in.contiguous() : bias_in;
  const bool bias_done = run_plan(op, p, a, w, bias, out, alpha, beta, device);
  if (bias_in.defined() && !bias_done) o.add_(bias);
}

}  // namespace

void register_blas_kernels() { ops::register_kernel(DispatchKey::CUDA, &matmul_kernel); }

}  // namespace tensor::cuda_detail
