// max, min (NaN-propagating, into the input's dtype), any and all (into bool) on CUDA, for
// every real input dtype.
#include "kernels/cuda/ReduceKernels.cuh"

namespace tensor::cuda_kernels {

namespace {

template <template <class, bool> class Op, bool kFlag>
ReduceStatus launch_op(ScalarType in_t, const ReduceDesc& d, const ReducePlan& p, void* scratch, void* stream) {
  constexpr unsigned kAll = 1u | 2u | 4u | 8u;
  return dispatch_real<kAll>(in_t, [&](auto tag) -> ReduceStatus {
    using T = typename decltype(tag)::type;
    return launch_plan<Op<T, kFlag>>(d, p, scratch, stream);
  });
}

}  // namespace

ReduceStatus launch_minmax_anyall(ReduceKind op, ScalarType in_t, ScalarType out_t, const ReduceDesc& d,
                                  const ReducePlan& p, void* scratch, void* stream) {
  switch (op) {
    case ReduceKind::Max:
      return out_t == in_t ? launch_op<MinMaxOp, true>(in_t, d, p, scratch, stream) : kReduceNoKernel;
    case ReduceKind::Min:
      return out_t == in_t ? launch_op<MinMaxOp, false>(in_t, d, p, scratch, stream) : kReduceNoKernel;
    case ReduceKind::Any:
      return out_t == ScalarType::Bool ? launch_op<AnyAllOp, true>(in_t, d, p, scratch, stream) : kReduceNoKernel;
    case ReduceKind::All:
      return out_t == ScalarType::Bool ? launch_op<AnyAllOp, false>(in_t, d, p, scratch, stream) : kReduceNoKernel;
    default: return kReduceNoKernel;
  }
}

}  // namespace tensor::cuda_kernels
