// Internal: one-pass CPU updates for SGD and Adam(W) on contiguous float32/float64 tensors
// (kernels/cpu/OptimizerKernels.cpp), the CPU kernels of _fused_sgd_ / _fused_adam_
// (src/ops/OptimizerOps.cpp), which src/optim/SGD.cpp and src/optim/Adam.cpp call.
// Note [Fused optimizer steps]
// Written with tensor ops, an Adam step reads and writes the parameter-sized tensors about ten
// times (and allocates temporaries); these loops do it in one pass per parameter with the same
// formulas (kernels/math/Optim.h, which the CUDA kernel runs too), in the parameter's precision,
// threaded above a grain. CUDA's kernel (kernels/cuda/OptimizerKernels.cu) also takes the half
// types, computing in float. The tensor-op form stays as the reference and serves every other
// case (CPU half types, non-contiguous or mixed tensors); tests/test_optim.cpp checks the CPU
// loops against it, tests/test_optimizer_bodies.cpp the kernel bodies against float64 loops.
#pragma once

#include "kernels/Optimizer.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

using kernels::AdamScalars;
using kernels::SGDScalars;

/// True when p, its grad and `state` (defined ones) are contiguous CPU tensors of p's shape and
/// one dtype, float32 or float64.
bool fused_ok(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> state);

/// p and buf (momentum > 0; allocated by the caller) updated in place.
void sgd_fused(const Tensor& p, const Tensor& grad, const Tensor& buf, const SGDScalars& s);
/// p, m, v (and vmax with amsgrad) updated in place.
void adam_fused(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v, const Tensor& vmax,
                const AdamScalars& s);

}  // namespace tensor::cpu
