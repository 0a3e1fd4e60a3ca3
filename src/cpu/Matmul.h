// Internal: the matrix-product kernel behind mm, bmm, addmm and linear (src/cpu/Matmul.cpp):
// oneDNN for float32/bfloat16, plain loops otherwise.
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::cpu {
/// out[b] = alpha * (a[b] @ w[b]) + beta * out[b] + bias, for 3-D a [B or 1, n, k], w [B or 1,
/// k, m] (any strides; a batch stride of 0 broadcasts) and a contiguous out [B, n, m]; bias is
/// [m] or undefined. 2-D a, w and out are a batch of one (no unsqueezed views per call). With beta == 0 the old contents of out are ignored (NaN included).
/// float32 and bfloat16 run on oneDNN, float16 in float32, other dtypes on the reference loops.
void matmul(const char* op, const Tensor& a, const Tensor& w, const Tensor& bias, const Tensor& out,
            const Scalar& alpha, const Scalar& beta);
/// The plain-loop reference of the same contract, for any dtype but bool (tests use it too).
void matmul_reference(const char* op, const Tensor& a, const Tensor& w, const Tensor& bias, const Tensor& out,
                      const Scalar& alpha, const Scalar& beta);
}  // namespace tensor::cpu
