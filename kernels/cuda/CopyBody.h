// The functor of CUDA's copy_ and fill_ kernels (kernels/cuda/CopyKernels.cu): the identity on
// the input's opmath value. The elementwise bodies (kernels/cuda/ElementwiseBody.h) convert on
// load and math::cast converts on store, so one launch of this functor is a copy with any
// conversion between real dtypes, any strides and a broadcast source; with the input a scalar
// argument, it is a fill.
#pragma once

#include "kernels/math/Macros.h"

namespace tensor::cuda_kernels {

struct CopyFn {
  template <class T>
  TENSOR_HD_INLINE T operator()(T v) const {
    return v;
  }
};

}  // namespace tensor::cuda_kernels
