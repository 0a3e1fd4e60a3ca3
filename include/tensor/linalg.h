// Matrix products: libtorch's mm, bmm, addmm, matmul, linear, dot, outer and einsum. float32 and
// bfloat16 run on oneDNN; float64, integer and complex dtypes on a reference path; float16 is
// computed in float32.
#pragma once

#include <string>
#include <tuple>

#include "tensor/core/Tensor.h"

namespace tensor {

/// [n, k] x [k, m] -> [n, m].
TENSOR_API Tensor mm(const Tensor& a, const Tensor& b);
/// [B, n, k] x [B, k, m] -> [B, n, m].
TENSOR_API Tensor bmm(const Tensor& a, const Tensor& b);
/// beta * self + alpha * (a @ b), with self broadcast to [n, m].
TENSOR_API Tensor addmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
                        const Scalar& alpha = 1);
/// libtorch's matmul: dot for 1-D x 1-D, mv/vm for one 1-D operand (its dim is added then
/// removed), mm for 2-D, and a batched product with broadcast batch dims otherwise.
TENSOR_API Tensor matmul(const Tensor& a, const Tensor& b);
/// x @ weight^T + bias over the last dim of x; weight is [out, in], bias [out] or undefined.
TENSOR_API Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
/// Inner product of two 1-D tensors of the same length (0-dim result).
TENSOR_API Tensor dot(const Tensor& a, const Tensor& b);
/// Outer product: [n] x [m] -> [n, m].
TENSOR_API Tensor outer(const Tensor& a, const Tensor& b);
/// Einstein summation, e.g. einsum("bij,bjk->bik", {a, b}); supports "..." and implicit output.
TENSOR_API Tensor einsum(const std::string& equation, TensorList operands);

/// QR decomposition of the last two dims (any batch dims), A = Q R with Q's columns orthonormal
/// and R upper triangular: mode "reduced" (Q [m, k], R [k, n], k = min(m, n)), "complete" (Q
/// [m, m], R [m, n]) or "r" (R only; Q is empty). Householder reflections in float64 on the
/// CPU; float32 and float64 inputs. Differentiable (first order) in modes "reduced" and
/// "complete" with m <= n; backward raises for mode "r" and for "complete" with m > n, as libtorch.
TENSOR_API std::tuple<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode = "reduced");
/// libtorch's older torch::qr: some = true is mode "reduced", false "complete".
TENSOR_API std::tuple<Tensor, Tensor> qr(const Tensor& A, bool some = true);

namespace linalg {
/// torch::linalg::qr (the same as tensor::linalg_qr).
TENSOR_API std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode = "reduced");
}  // namespace linalg

}  // namespace tensor
