// Internal: the fused (flash-style) attention kernels on CPU (kernels/cpu/FlashAttentionKernels.cpp),
// called by the front ends of _scaled_dot_product_flash_attention_for_cpu and its backward
// (src/ops/AttentionOps.cpp) after their checks. Note [Flash attention on CPU] says how they tile.
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// Query / key rows per tile. Exposed so that tests can pick sizes that are not multiples.
constexpr int64_t kFlashBlockQ = 64;
constexpr int64_t kFlashBlockK = 64;

/// q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev] (any strides, one dtype: float32, float64 or
/// bfloat16); mask undefined or an additive mask of the opmath dtype (float64 for float64 inputs,
/// else float32) with the sizes [B, H, L, S] (any strides: broadcast dims have stride 0).
/// Fills out [B, H, L, Ev] and lse [B, H, L] (opmath dtype), both contiguous: lse is the
/// log-sum-exp of each row of the scaled, masked scores.
void flash_attention_kernel(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                            double scale, const Tensor& out, const Tensor& lse);

/// The gradients of flash_attention_kernel from grad_out [B, H, L, Ev] (any strides), the
/// forward's inputs, out and lse. Fills grad_q, grad_k, grad_v (contiguous, the inputs' sizes).
void flash_attention_backward_kernel(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                                     double scale, const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v);

}  // namespace tensor::cpu
