// max(dim) / min(dim) with indices, argmax and argmin on CUDA, for every real dtype: NaN wins
// and ties go to the lower index (math::arg_combine), in any combine order.
#include "kernels/cuda/ReduceKernels.cuh"

namespace tensor::cuda_kernels {

ReduceStatus launch_arg_reduce(bool is_max, ScalarType t, const ReduceDesc& d, const ReducePlan& p, void* scratch,
                               void* stream) {
  constexpr unsigned kAll = 1u | 2u | 4u | 8u;
  return dispatch_real<kAll>(t, [&](auto tag) -> ReduceStatus {
    using T = typename decltype(tag)::type;
    return is_max ? launch_plan<ArgOp<T, true>>(d, p, scratch, stream)
                  : launch_plan<ArgOp<T, false>>(d, p, scratch, stream);
  });
}

}  // namespace tensor::cuda_kernels
