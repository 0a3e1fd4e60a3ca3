// Internal: the im2col / col2im op table and its backend kernels (Note [Front ends and backend
// kernels]). What every backend's kernel does, and the geometry it takes: kernels/Fold.h;
// CPU's kernels: kernels/cpu/FoldKernels.h. Each op is the other's gradient (they
// are adjoint linear maps), rows of src/autograd/Derivatives.cpp.
#pragma once

#include "kernels/Fold.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// im2col: (input (N, C, H, W) or (C, H, W), kernel_size, dilation, padding, stride).
using Im2colFn = Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef);
/// col2im: (input (N, C * kh * kw, L) or (C * kh * kw, L), output_size, kernel_size, dilation,
/// padding, stride).
using Col2imFn = Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef);

/// Backend kernels: fill out (contiguous, allocated by the front end) from input (contract:
/// kernels/Fold.h).
using Im2colKernel = void (*)(const Tensor& input, const kernels::FoldGeometry& g, const Tensor& out);
using Col2imKernel = void (*)(const Tensor& input, const kernels::FoldGeometry& g, const Tensor& out);

struct FoldOpDefs {
  dispatch::OpDef<Im2colFn> im2col;
  dispatch::OpDef<Col2imFn> col2im;
};

/// The one table of the fold ops (CPU and Meta front ends; Autograd filled by the rows).
FoldOpDefs& fold_ops();

/// Registers a backend's (CUDA's) kernel.
void register_kernel(DispatchKey backend, Im2colKernel im2col, Col2imKernel col2im);

}  // namespace tensor::ops
