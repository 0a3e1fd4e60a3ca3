// Internal: the CPU loops of im2col and col2im (kernels/cpu/FoldKernels.cpp); each does what
// its backend-neutral contract in kernels/Fold.h says.
#pragma once

#include "kernels/Fold.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

// The contract's geometry, under the name the CPU code uses.
using kernels::FoldGeometry;

/// CPU's Im2colKernel: out = the columns of image.
void im2col(const Tensor& image, const FoldGeometry& g, const Tensor& out);
/// CPU's Col2imKernel: out = the sum of cols' blocks into the image.
void col2im(const Tensor& cols, const FoldGeometry& g, const Tensor& out);

}  // namespace tensor::cpu
