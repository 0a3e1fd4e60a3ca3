// The reduction kernels: __global__ shells around the bodies of kernels/cuda/ReduceBody.h (a
// block per output or a thread per output, each over one slice of the reduced range; a second
// pass over the slices' partials), and the host function that launches a plan. Deterministic
// (Note [Deterministic reductions]): CUB's BlockReduce combines a block's threads in a fixed
// tree, and partials combine in slice order.
#pragma once

#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/Loops.cuh"
#include "kernels/cuda/ReduceBody.h"

namespace tensor::cuda_kernels {

/// Op::combine as the binary functor CUB takes.
template <class Op>
struct CombineFn {
  using acc_t = typename Op::acc_t;
  __device__ __forceinline__ acc_t operator()(const acc_t& a, const acc_t& b) const { return Op::combine(a, b); }
};

/// Grid (num_outputs, slices): block (o, s) folds slice s of output o, threads striding by the
/// block size; the block's total goes to the output, or to partials[o * slices + s].
template <class Op>
__global__ void __launch_bounds__(kReduceBlockThreads)
    reduce_block_kernel(ReduceDesc d, ReducePlan p, typename Op::acc_t* partials) {
  using BlockReduce = cub::BlockReduce<typename Op::acc_t, kReduceBlockThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  const uint32_t o = blockIdx.x, s = blockIdx.y;
  typename Op::acc_t acc = reduce_slice_of<Op>(d, p, o, s, threadIdx.x, kReduceBlockThreads);
  acc = BlockReduce(tmp).Reduce(acc, CombineFn<Op>{});
  if (threadIdx.x != 0) return;
  if (p.slices == 1) reduce_store<Op>(d, o, acc);
  else partials[uint64_t(o) * p.slices + s] = acc;
}

/// Grid (ceil(num_outputs / kReduceThreadBlock), slices): a thread per (output, slice), folding
/// it element by element; neighbouring threads read neighbouring outputs' elements.
template <class Op>
__global__ void __launch_bounds__(kReduceThreadBlock)
    reduce_thread_kernel(ReduceDesc d, ReducePlan p, typename Op::acc_t* partials) {
  const uint32_t o = blockIdx.x * kReduceThreadBlock + threadIdx.x, s = blockIdx.y;
  if (o >= d.num_outputs) return;
  typename Op::acc_t acc = reduce_slice_of<Op>(d, p, o, s, 0, 1);
  if (p.slices == 1) reduce_store<Op>(d, o, acc);
  else partials[uint64_t(o) * p.slices + s] = acc;
}

/// Second pass, a thread per output: its slices' partials in order.
template <class Op>
__global__ void __launch_bounds__(kReduceThreadBlock)
    partials_thread_kernel(ReduceDesc d, uint32_t slices, const typename Op::acc_t* partials) {
  const uint32_t o = blockIdx.x * kReduceThreadBlock + threadIdx.x;
  if (o >= d.num_outputs) return;
  reduce_store<Op>(d, o, combine_partials<Op>(partials + uint64_t(o) * slices, 0, slices, 1));
}

/// Second pass, a block per output (many slices): threads stride the partials, then a block tree.
template <class Op>
__global__ void __launch_bounds__(kReduceBlockThreads)
    partials_block_kernel(ReduceDesc d, uint32_t slices, const typename Op::acc_t* partials) {
  using BlockReduce = cub::BlockReduce<typename Op::acc_t, kReduceBlockThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  const uint32_t o = blockIdx.x;
  typename Op::acc_t acc =
      combine_partials<Op>(partials + uint64_t(o) * slices, threadIdx.x, slices, kReduceBlockThreads);
  acc = BlockReduce(tmp).Reduce(acc, CombineFn<Op>{});
  if (threadIdx.x == 0) reduce_store<Op>(d, o, acc);
}

/// Launches plan `p` of Op over `d` on `stream`; scratch holds the partials when p.slices > 1.
template <class Op>
ReduceStatus launch_plan(const ReduceDesc& d, const ReducePlan& p, void* scratch, void* stream_ptr) {
  using acc_t = typename Op::acc_t;
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  auto* partials = static_cast<acc_t*>(scratch);
  const uint32_t thread_blocks = (d.num_outputs + kReduceThreadBlock - 1) / kReduceThreadBlock;
  if (p.block_per_output)
    reduce_block_kernel<Op><<<dim3(d.num_outputs, p.slices), kReduceBlockThreads, 0, stream>>>(d, p, partials);
  else
    reduce_thread_kernel<Op><<<dim3(thread_blocks, p.slices), kReduceThreadBlock, 0, stream>>>(d, p, partials);
  if (p.slices > 1) {
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return static_cast<ReduceStatus>(err);
    if (p.slices <= kPartialsPerThread)
      partials_thread_kernel<Op><<<thread_blocks, kReduceThreadBlock, 0, stream>>>(d, p.slices, partials);
    else
      partials_block_kernel<Op><<<d.num_outputs, kReduceBlockThreads, 0, stream>>>(d, p.slices, partials);
  }
  return static_cast<ReduceStatus>(cudaGetLastError());
}

/// The launchers of the reduce ops, one family per .cu (kernels/cuda/ReduceSum.cu,
/// kernels/cuda/ReduceMinMax.cu); launch_reduce picks one.
ReduceStatus launch_sum_prod(bool prod, ScalarType in_t, ScalarType out_t, const ReduceDesc& d, const ReducePlan& p,
                             void* scratch, void* stream);
ReduceStatus launch_minmax_anyall(ReduceKind op, ScalarType in_t, ScalarType out_t, const ReduceDesc& d,
                                  const ReducePlan& p, void* scratch, void* stream);

}  // namespace tensor::cuda_kernels
