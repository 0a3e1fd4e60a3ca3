// cumsum and cumprod on CUDA along the middle dim of a contiguous (outer, R, inner) tensor, for
// every real dtype: inner == 1 scans each row with one block (CUB's BlockScan over tiles, the
// running total carried by a prefix callback); inner > 1 scans each column with one thread,
// neighbouring threads reading neighbouring elements (ReduceBody.h's scan_column).
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/ReduceKernels.cuh"

namespace tensor::cuda_kernels {

namespace {

constexpr int kScanThreads = 256;

template <class Op>
struct ScanCombine {
  using acc_t = typename Op::acc_t;
  __device__ __forceinline__ acc_t operator()(const acc_t& a, const acc_t& b) const { return Op::combine(a, b); }
};

// The running total of the tiles before the current one; CUB calls it from the first warp with
// the tile's total and applies the returned value as the tile's prefix.
template <class Op>
struct RunningPrefix {
  using acc_t = typename Op::acc_t;
  acc_t total;
  __device__ __forceinline__ acc_t operator()(acc_t tile_total) {
    const acc_t before = total;
    total = Op::combine(total, tile_total);
    return before;
  }
};

template <class T, bool kProd>
__global__ void __launch_bounds__(kScanThreads) scan_rows_kernel(const T* in, T* out, uint32_t R) {
  using Op = ScanOp<T, kProd>;
  using BlockScan = cub::BlockScan<typename Op::acc_t, kScanThreads>;
  __shared__ typename BlockScan::TempStorage tmp;
  const uint64_t base = uint64_t(blockIdx.x) * R;
  RunningPrefix<Op> prefix{Op::identity()};
  for (uint32_t t = 0; t < R; t += kScanThreads) {
    const uint32_t r = t + threadIdx.x;
    typename Op::acc_t v = r < R ? Op::load(in[base + r]) : Op::identity();
    BlockScan(tmp).InclusiveScan(v, v, ScanCombine<Op>{}, prefix);
    __syncthreads();  // tmp is reused by the next tile
    if (r < R) out[base + r] = Op::project(v);
  }
}

template <class T, bool kProd>
__global__ void __launch_bounds__(kScanThreads)
    scan_columns_kernel(const T* in, T* out, uint32_t columns, uint32_t R, uint32_t inner) {
  const uint32_t c = blockIdx.x * kScanThreads + threadIdx.x;
  if (c < columns) scan_column<T, kProd>(in, out, c, R, inner);
}

template <class T, bool kProd>
ReduceStatus scan(const T* in, T* out, int64_t outer, int64_t R, int64_t inner, cudaStream_t stream) {
  if (inner == 1) {
    scan_rows_kernel<T, kProd><<<static_cast<uint32_t>(outer), kScanThreads, 0, stream>>>(in, out,
                                                                                          static_cast<uint32_t>(R));
  } else {
    const uint32_t columns = static_cast<uint32_t>(outer * inner);
    scan_columns_kernel<T, kProd><<<(columns + kScanThreads - 1) / kScanThreads, kScanThreads, 0, stream>>>(
        in, out, columns, static_cast<uint32_t>(R), static_cast<uint32_t>(inner));
  }
  return static_cast<ReduceStatus>(cudaGetLastError());
}

}  // namespace

ReduceStatus launch_cumulative(bool is_prod, ScalarType t, const void* in, void* out, int64_t outer, int64_t R,
                               int64_t inner, void* stream) {
  constexpr unsigned kAll = 1u | 2u | 4u | 8u;
  return dispatch_real<kAll>(t, [&](auto tag) -> ReduceStatus {
    using T = typename decltype(tag)::type;
    const T* i = static_cast<const T*>(in);
    T* o = static_cast<T*>(out);
    auto s = static_cast<cudaStream_t>(stream);
    return is_prod ? scan<T, true>(i, o, outer, R, inner, s) : scan<T, false>(i, o, outer, R, inner, s);
  });
}

}  // namespace tensor::cuda_kernels
