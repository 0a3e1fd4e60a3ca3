// Internal: dispatcher tables of attention: the fused CPU kernel (libtorch's
// _scaled_dot_product_flash_attention_for_cpu and its backward; front ends in
// src/ops/AttentionOps.cpp, kernels in kernels/cpu/FlashAttentionKernels.cpp) and the public
// composite scaled_dot_product_attention that picks a backend (src/nn/Attention.cpp,
// Note [SDPA backend selection]).
#pragma once

#include <optional>
#include <tuple>

#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// (query [B, H, L, E], key [B, H, S, E], value [B, H, S, Ev], dropout_p, is_causal, attn_mask
/// (undefined = none), scale) -> (output [B, H, L, Ev], logsumexp [B, H, L]).
using FlashAttnFn = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, double, bool,
                                               const Tensor&, std::optional<double>);
/// (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask, scale)
/// -> (grad_query, grad_key, grad_value).
using FlashAttnBwdFn = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                          const Tensor&, const Tensor&, double, bool, const Tensor&,
                                                          std::optional<double>);
/// scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale).
using SdpaFn = Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, bool,
                      std::optional<double>);

struct AttentionOpDefs {
  dispatch::OpDef<FlashAttnFn> flash;
  dispatch::OpDef<FlashAttnBwdFn> flash_backward;
};

/// The one table of the fused attention ops.
AttentionOpDefs& attention_ops();
/// The composite public op (defined in src/nn/Attention.cpp).
dispatch::OpDef<SdpaFn>& scaled_dot_product_attention_op();

}  // namespace tensor::ops
