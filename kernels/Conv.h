// Internal: the backend-neutral contract of the convolution kernels: the parameters the front
// end (src/ops/ConvOps.cpp) hands every backend's ConvolutionKernel and
// ConvolutionBackwardKernel (src/ops/ConvOps.h, which says what each kernel does). The CPU
// kernels are src/cpu/Conv.h's entries over oneDNN or the loops of kernels/cpu/ConvKernels.h.
// Includes only tensor/core/ArrayRef.h (for DimVector), so any backend's code can include it.
#pragma once

#include <cstdint>

#include "tensor/core/ArrayRef.h"

namespace tensor::kernels {

/// The parameters of one convolution, per spatial dim (Note [Convolution padding] in
/// src/ops/ConvOps.h).
struct ConvParams {
  DimVector stride, pad_l, pad_r, dilation;
  bool transposed = false;
  int64_t groups = 1;
  int64_t spatial() const { return static_cast<int64_t>(stride.size()); }
};

}  // namespace tensor::kernels
