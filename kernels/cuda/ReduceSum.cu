// sum and prod on CUDA: every real input dtype into its own dtype, bool and the integers into
// int64, float16/bfloat16 into float32 (the output dtypes of kernels/Reduce.h's contract). Also
// the entry point launch_reduce, which hands the other ops to kernels/cuda/ReduceMinMax.cu.
#include "kernels/cuda/ReduceKernels.cuh"

namespace tensor::cuda_kernels {

namespace {

template <bool kProd>
ReduceStatus sum_prod(ScalarType in_t, ScalarType out_t, const ReduceDesc& d, const ReducePlan& p, void* scratch,
                      void* stream) {
  constexpr unsigned kAll = 1u | 2u | 4u | 8u;
  return dispatch_real<kAll>(in_t, [&](auto tag) -> ReduceStatus {
    using T = typename decltype(tag)::type;
    if (out_t == in_t) return launch_plan<SumProdOp<T, T, kProd>>(d, p, scratch, stream);
    if constexpr (is_int_like_v<T> && !std::is_same_v<T, int64_t>) {
      if (out_t == ScalarType::Int64) return launch_plan<SumProdOp<T, int64_t, kProd>>(d, p, scratch, stream);
    }
    if constexpr (math::is_half_v<T>) {
      if (out_t == ScalarType::Float) return launch_plan<SumProdOp<T, float, kProd>>(d, p, scratch, stream);
    }
    return kReduceNoKernel;
  });
}

}  // namespace

ReduceStatus launch_sum_prod(bool prod, ScalarType in_t, ScalarType out_t, const ReduceDesc& d, const ReducePlan& p,
                             void* scratch, void* stream) {
  return prod ? sum_prod<true>(in_t, out_t, d, p, scratch, stream) : sum_prod<false>(in_t, out_t, d, p, scratch, stream);
}

ReduceStatus launch_reduce(ReduceKind op, ScalarType in_t, ScalarType out_t, const ReduceDesc& d,
                           const ReducePlan& plan, void* scratch, void* stream) {
  if (op == ReduceKind::Sum || op == ReduceKind::Prod)
    return launch_sum_prod(op == ReduceKind::Prod, in_t, out_t, d, plan, scratch, stream);
  return launch_minmax_anyall(op, in_t, out_t, d, plan, scratch, stream);
}

}  // namespace tensor::cuda_kernels
