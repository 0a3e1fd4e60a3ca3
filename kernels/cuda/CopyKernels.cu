// copy_ and fill_ on the device: one elementwise launch of CopyFn per (output dtype, input
// dtype) pair of the real dtypes, on the engine's vectorized or strided path (Note [CUDA
// copy_ on the device] in src/cuda/CUDACopy.cpp).
#include "kernels/cuda/CopyBody.h"
#include "kernels/cuda/ElementwiseLaunch.h"
#include "kernels/cuda/Loops.cuh"

namespace tensor::cuda_kernels {

namespace {
constexpr unsigned kAllReal = 1u | 2u | 4u | 8u;
}  // namespace

LaunchStatus launch_copy(const ElementwiseLaunch& l) {
  return dispatch_real<kAllReal>(l.out_dtype, [&](auto out_tag) -> LaunchStatus {
    using out_t = typename decltype(out_tag)::type;
    return dispatch_real<kAllReal>(l.dtype, [&](auto in_tag) -> LaunchStatus {
      using in_t = typename decltype(in_tag)::type;
      return launch<out_t, in_t, 1>(l, CopyFn{});
    });
  });
}

}  // namespace tensor::cuda_kernels
