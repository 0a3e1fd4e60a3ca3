// Attention: nn::functional::scaled_dot_product_attention (PyTorch 2's signature) with its
// backends (nn::attention::SDPBackend, sdpa_kernel), libtorch's fused CPU attention op,
// nn::MultiheadAttention and nn::TransformerEncoderLayer, as libtorch's torch::nn modules
// (plus PyTorch's batch_first / norm_first options).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <tuple>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/norm_pool.h"
#include "tensor/nn/pimpl.h"


namespace tensor {

/// libtorch's fused CPU attention: query [B, H, L, E], key [B, H, S, E], value [B, H, S, Ev]
/// (float32, float64, bfloat16 or float16; any strides) -> (output [B, H, L, Ev], logsumexp
/// [B, H, L] in float32, float64 for float64 inputs). Flash-style tiling: O(L + S) memory, the
/// [L, S] scores never exist (docs/attention.md). attn_mask (bool: true = attend, or floating,
/// added) broadcasts to [B, H, L, S] and gets no gradient; dropout_p must be 0.
TENSOR_API std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu(
    const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p = 0.0, bool is_causal = false,
    const std::optional<Tensor>& attn_mask = std::nullopt, std::optional<double> scale = std::nullopt);

/// The fused backward of _scaled_dot_product_flash_attention_for_cpu from grad_out and the
/// forward's inputs and outputs: (grad_query, grad_key, grad_value), recomputing the attention
/// probabilities tile by tile.
TENSOR_API std::tuple<Tensor, Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& out,
    const Tensor& logsumexp, double dropout_p, bool is_causal, const std::optional<Tensor>& attn_mask = std::nullopt,
    std::optional<double> scale = std::nullopt);

}  // namespace tensor

namespace tensor::nn::attention {

/// The implementations of scaled_dot_product_attention, with libtorch's values. On CPU: Flash
/// (the fused kernel) and Math; EfficientAttention and CuDNN are CUDA kernels (not built here).
enum class SDPBackend : int8_t { Error = -1, Math = 0, Flash = 1, EfficientAttention = 2, CuDNN = 3 };

/// RAII guard restricting scaled_dot_product_attention to `backends` on this thread until it is
/// destroyed (then the previous set is restored): `sdpa_kernel guard({SDPBackend::Flash});`.
/// When no allowed backend can run the inputs, the call throws tensor::Error saying why.
class TENSOR_API sdpa_kernel {
 public:
  sdpa_kernel(const std::vector<SDPBackend>& backends);  // NOLINT(google-explicit-constructor)
  sdpa_kernel(SDPBackend backend);                        // NOLINT(google-explicit-constructor)
  ~sdpa_kernel();
  sdpa_kernel(const sdpa_kernel&) = delete;
  sdpa_kernel& operator=(const sdpa_kernel&) = delete;

 private:
  uint32_t previous_;
};

/// The backends scaled_dot_product_attention may use now on this thread (all by default).
TENSOR_API std::vector<SDPBackend> allowed_sdp_backends();

/// The backend scaled_dot_product_attention picks for these arguments (libtorch's
/// _fused_sdp_choice), or throws tensor::Error as the call would.
TENSOR_API SDPBackend _fused_sdp_choice(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                        std::optional<double> scale = std::nullopt);

}  // namespace tensor::nn::attention

namespace tensor::nn {

namespace functional {

/// softmax(query @ key^T * scale + mask) @ value. query [..., L, E], key [..., S, E], value
/// [..., S, Ev] (leading dims broadcast) -> [..., L, Ev]. Runs the fused kernel
/// (_scaled_dot_product_flash_attention_for_cpu) where it applies and the math path otherwise
/// (rules: docs/attention.md, restricted by nn::attention::sdpa_kernel).
/// attn_mask broadcasts to [..., L, S]: a bool mask says where to attend (true = attend), a
/// floating mask is added to the scores. is_causal masks keys after the query's position
/// (not together with attn_mask). dropout_p drops attention weights (always, as PyTorch's
/// functional: pass 0 in eval). scale defaults to 1 / sqrt(E). A row with every key masked
/// gives NaN, as PyTorch's math path.
TENSOR_API Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                               const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                               bool is_causal = false, std::optional<double> scale = std::nullopt);

/// Options of multi_head_attention_forward, as libtorch's (static_k / static_v are not
/// supported). The projections are in_proj_weight [3E, E] or, with use_separate_proj_weight,
/// q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim]; in_proj_bias [3E] or
/// undefined. bias_k / bias_v [1, 1, E] (both or neither) are appended to the projected keys
/// and values; add_zero_attn appends a zero key and value per head after that. The masks keep
/// their user-facing [.., S] shapes and are padded with a zero (attend) column per appended key.
struct TENSOR_API MultiheadAttentionForwardFuncOptions {
  MultiheadAttentionForwardFuncOptions(int64_t embed_dim_to_check, int64_t num_heads, Tensor in_proj_weight,
                                       Tensor in_proj_bias, Tensor bias_k, Tensor bias_v, bool add_zero_attn,
                                       double dropout_p, Tensor out_proj_weight, Tensor out_proj_bias);
  TENSOR_ARG(int64_t, embed_dim_to_check);
  TENSOR_ARG(int64_t, num_heads);
  TENSOR_ARG(Tensor, in_proj_weight);
  TENSOR_ARG(Tensor, in_proj_bias);
  TENSOR_ARG(Tensor, bias_k);
  TENSOR_ARG(Tensor, bias_v);
  TENSOR_ARG(bool, add_zero_attn);
  TENSOR_ARG(double, dropout_p);
  TENSOR_ARG(Tensor, out_proj_weight);
  TENSOR_ARG(Tensor, out_proj_bias);
  /// Dropout applies only when training.
  TENSOR_ARG(bool, training) = true;
  TENSOR_ARG(Tensor, key_padding_mask) = {};
  TENSOR_ARG(bool, need_weights) = true;
  TENSOR_ARG(Tensor, attn_mask) = {};
  TENSOR_ARG(bool, use_separate_proj_weight) = false;
  TENSOR_ARG(Tensor, q_proj_weight) = {};
  TENSOR_ARG(Tensor, k_proj_weight) = {};
  TENSOR_ARG(Tensor, v_proj_weight) = {};
  TENSOR_ARG(bool, average_attn_weights) = true;
};

/// libtorch's F::multi_head_attention_forward: query [L, N, E], key [S, N, kdim], value
/// [S, N, vdim] (or 2-D unbatched), masks as nn::MultiheadAttention's. Returns (output
/// [L, N, E], weights [N, L, S'] averaged over heads or [N, num_heads, L, S'], or undefined
/// without need_weights), S' = S plus one per bias_kv / zero_attn key.
TENSOR_API std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key,
                                                                   const Tensor& value,
                                                                   const MultiheadAttentionForwardFuncOptions& options);

}  // namespace functional

// ---- MultiheadAttention ----

/// nn::MultiheadAttention: embed_dim split over num_heads heads.
struct MultiheadAttentionOptions {
  /// kdim and vdim default to embed_dim, as libtorch.
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  TENSOR_ARG(int64_t, embed_dim);
  TENSOR_ARG(int64_t, num_heads);
  /// Features of key and value; either != embed_dim gives separate q/k/v_proj_weight.
  TENSOR_ARG(int64_t, kdim);
  TENSOR_ARG(int64_t, vdim);
  /// Dropout on the attention weights (training only).
  TENSOR_ARG(double, dropout) = 0.0;
  /// in_proj_bias and out_proj.bias.
  TENSOR_ARG(bool, bias) = true;
  /// Learned bias_k / bias_v [1, 1, E] appended to the key and value sequences.
  TENSOR_ARG(bool, add_bias_kv) = false;
  /// A zero key and value appended per head (after bias_kv).
  TENSOR_ARG(bool, add_zero_attn) = false;
  /// Inputs and output as (N, L, E) instead of libtorch's (L, N, E).
  TENSOR_ARG(bool, batch_first) = false;
};

/// Parameters as libtorch, in its registration order: in_proj_weight [3E, E] when kdim == vdim
/// == embed_dim, else q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim]
/// (xavier_uniform_); in_proj_bias [3E] (zeros); bias_k, bias_v [1, 1, E] with add_bias_kv
/// (xavier_normal_); out_proj = Linear(E, E) with its bias zeroed. query [L, N, E], key
/// [S, N, kdim], value [S, N, vdim] (or 2-D unbatched; [N, L, E] with batch_first).
/// key_padding_mask [N, S]: bool true = ignore that key, or floating (added). attn_mask [L, S]
/// or [N * num_heads, L, S]: bool true = not allowed to attend, or floating (added). Returns
/// (output [L, N, E], weights): the weights are [N, L, S'] averaged over heads (or
/// [N, num_heads, L, S']) when need_weights, else undefined; S' counts the bias_kv and
/// zero_attn keys.
class TENSOR_API MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  void reset();
  void reset_parameters();
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true);
  void pretty_print(std::ostream& stream) const override;

  MultiheadAttentionOptions options;
  /// kdim == vdim == embed_dim: one in_proj_weight, else q/k/v_proj_weight.
  bool _qkv_same_embed_dim = true;
  /// Undefined unless _qkv_same_embed_dim.
  Tensor in_proj_weight;
  /// Undefined without bias.
  Tensor in_proj_bias;
  /// Undefined without add_bias_kv.
  Tensor bias_k;
  Tensor bias_v;
  Linear out_proj{nullptr};
  /// Undefined when _qkv_same_embed_dim.
  Tensor q_proj_weight;
  Tensor k_proj_weight;
  Tensor v_proj_weight;
  int64_t head_dim = 0;
};
TENSOR_MODULE(MultiheadAttention);

// ---- TransformerEncoderLayer ----

/// The feed-forward activation of a transformer layer: kReLU, kGELU or any Tensor -> Tensor.
class TENSOR_API TransformerActivation {
 public:
  /* implicit */ TransformerActivation(enumtype::kReLU) : kind_(Kind::ReLU) {}
  /* implicit */ TransformerActivation(enumtype::kGELU) : kind_(Kind::GELU) {}
  /* implicit */ TransformerActivation(std::function<Tensor(const Tensor&)> f)
      : kind_(Kind::Function), function_(std::move(f)) {}
  Tensor operator()(const Tensor& x) const;
  bool is_relu() const { return kind_ == Kind::ReLU; }
  bool is_gelu() const { return kind_ == Kind::GELU; }

 private:
  enum class Kind { ReLU, GELU, Function } kind_;
  std::function<Tensor(const Tensor&)> function_;
};

/// nn::TransformerEncoderLayer: self-attention then a feed-forward block, each with a residual
/// connection and LayerNorm (after the residual, or before the block with norm_first).
struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TENSOR_ARG(int64_t, d_model);
  TENSOR_ARG(int64_t, nhead);
  TENSOR_ARG(int64_t, dim_feedforward) = 2048;
  TENSOR_ARG(double, dropout) = 0.1;
  TENSOR_ARG(TransformerActivation, activation) = kReLU;
  TENSOR_ARG(double, layer_norm_eps) = 1e-5;
  /// Inputs as (N, S, E) instead of (S, N, E).
  TENSOR_ARG(bool, batch_first) = false;
  /// Pre-norm: x + sa(norm1(x)), then x + ff(norm2(x)).
  TENSOR_ARG(bool, norm_first) = false;
};

/// Children as libtorch: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2.
/// forward(src [S, N, E], src_mask [S, S] or [N * nhead, S, S], src_key_padding_mask [N, S])
/// with MultiheadAttention's mask conventions.
class TENSOR_API TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(TransformerEncoderLayerOptions options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});
  void pretty_print(std::ostream& stream) const override;

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr};
  Dropout dropout{nullptr};
  Linear linear2{nullptr};
  LayerNorm norm1{nullptr};
  LayerNorm norm2{nullptr};
  Dropout dropout1{nullptr};
  Dropout dropout2{nullptr};
};
TENSOR_MODULE(TransformerEncoderLayer);

}  // namespace tensor::nn
