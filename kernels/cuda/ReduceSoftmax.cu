// softmax and log_softmax on CUDA (float32, float64) along the middle dim of a contiguous
// (outer, R, inner) tensor, max-subtracted through the online logsumexp of kernels/math
// (Note [Online logsumexp]): one pass folds (max, sum of exp(x - max)), a second writes. Rows
// (inner == 1) take a block each, a warp-sized one for short rows; columns a thread each.
#include "kernels/cuda/ReduceKernels.cuh"

namespace tensor::cuda_kernels {

namespace {

template <class T>
struct LseCombine {
  __device__ __forceinline__ SoftmaxState<T> operator()(const SoftmaxState<T>& a, const SoftmaxState<T>& b) const {
    return math::logsumexp_combine(a, b);
  }
};

template <class T, int kThreads>
__global__ void __launch_bounds__(kThreads) softmax_rows_kernel(const T* in, T* out, uint32_t R, bool log) {
  using BlockReduce = cub::BlockReduce<SoftmaxState<T>, kThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ SoftmaxState<T> row;
  const uint64_t base = uint64_t(blockIdx.x) * R;
  const T* x = in + base;
  SoftmaxState<T> s = softmax_fold(x, threadIdx.x, R, kThreads, 1);
  s = BlockReduce(tmp).Reduce(s, LseCombine<T>{});
  if (threadIdx.x == 0) row = softmax_finish(s);
  __syncthreads();
  const SoftmaxState<T> st = row;
  for (uint32_t r = threadIdx.x; r < R; r += kThreads) out[base + r] = softmax_value(x[r], st, log);
}

constexpr int kColumnThreads = 128;

template <class T>
__global__ void __launch_bounds__(kColumnThreads)
    softmax_columns_kernel(const T* in, T* out, uint32_t columns, uint32_t R, uint32_t inner, bool log) {
  const uint32_t c = blockIdx.x * kColumnThreads + threadIdx.x;
  if (c >= columns) return;
  const uint64_t base = uint64_t(c / inner) * R * inner + c % inner;
  const SoftmaxState<T> st = softmax_finish(softmax_fold(in + base, 0, R, 1, inner));
  for (uint32_t r = 0; r < R; ++r) out[base + uint64_t(r) * inner] = softmax_value(in[base + uint64_t(r) * inner], st, log);
}

template <class T>
ReduceStatus softmax(const T* in, T* out, int64_t outer, int64_t R, int64_t inner, bool log, cudaStream_t stream) {
  const uint32_t r32 = static_cast<uint32_t>(R);
  if (inner == 1) {
    const uint32_t rows = static_cast<uint32_t>(outer);
    if (R <= 256) softmax_rows_kernel<T, 32><<<rows, 32, 0, stream>>>(in, out, r32, log);
    else softmax_rows_kernel<T, 256><<<rows, 256, 0, stream>>>(in, out, r32, log);
  } else {
    const uint32_t columns = static_cast<uint32_t>(outer * inner);
    softmax_columns_kernel<T><<<(columns + kColumnThreads - 1) / kColumnThreads, kColumnThreads, 0, stream>>>(
        in, out, columns, r32, static_cast<uint32_t>(inner), log);
  }
  return static_cast<ReduceStatus>(cudaGetLastError());
}

}  // namespace

ReduceStatus launch_softmax(bool log, ScalarType t, const void* in, void* out, int64_t outer, int64_t R, int64_t inner,
                            void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (t == ScalarType::Float)
    return softmax(static_cast<const float*>(in), static_cast<float*>(out), outer, R, inner, log, s);
  if (t == ScalarType::Double)
    return softmax(static_cast<const double*>(in), static_cast<double*>(out), outer, R, inner, log, s);
  return kReduceNoKernel;
}

}  // namespace tensor::cuda_kernels
