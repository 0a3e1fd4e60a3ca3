// Transformer stacks as libtorch's torch::nn::{TransformerEncoder, TransformerDecoderLayer,
// TransformerDecoder, Transformer} (TransformerEncoderLayer and MultiheadAttention are in
// attention.h), plus PyTorch's batch_first / norm_first / layer_norm_eps on the decoder layer.
// Parameter names follow libtorch (layers.0.self_attn.in_proj_weight, norm.weight, ...), so
// state dicts carry over. Composed of the attention, linear and layer-norm modules.
#pragma once

#include <cstdint>
#include <ostream>

#include "tensor/core/Tensor.h"
#include "tensor/nn/any_module.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/attention.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/norm_pool.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

// ---- TransformerDecoderLayer ----

/// nn::TransformerDecoderLayer: self-attention, attention over the encoder's memory, then a
/// feed-forward block, each with a residual connection and LayerNorm.
struct TransformerDecoderLayerOptions {
  TransformerDecoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TENSOR_ARG(int64_t, d_model);
  TENSOR_ARG(int64_t, nhead);
  TENSOR_ARG(int64_t, dim_feedforward) = 2048;
  TENSOR_ARG(double, dropout) = 0.1;
  TENSOR_ARG(TransformerActivation, activation) = kReLU;
  TENSOR_ARG(double, layer_norm_eps) = 1e-5;
  /// Inputs as (N, T, E) instead of (T, N, E).
  TENSOR_ARG(bool, batch_first) = false;
  /// Pre-norm: each block sees norm_k(x) and adds to x.
  TENSOR_ARG(bool, norm_first) = false;
};

/// Children as libtorch: self_attn, dropout1, norm1, multihead_attn, dropout2, norm2,
/// linear1, dropout, linear2, dropout3, norm3. forward(tgt [T, N, E], memory [S, N, E],
/// tgt_mask [T, T], memory_mask [T, S], tgt_key_padding_mask [N, T],
/// memory_key_padding_mask [N, S]) with MultiheadAttention's mask conventions.
class TENSOR_API TransformerDecoderLayerImpl : public Module {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(TransformerDecoderLayerOptions options_);
  void reset();
  void reset_parameters();
  Tensor forward(Tensor tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  void pretty_print(std::ostream& stream) const override;

  TransformerDecoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  Dropout dropout1{nullptr};
  LayerNorm norm1{nullptr};
  MultiheadAttention multihead_attn{nullptr};
  Dropout dropout2{nullptr};
  LayerNorm norm2{nullptr};
  Linear linear1{nullptr};
  Dropout dropout{nullptr};
  Linear linear2{nullptr};
  Dropout dropout3{nullptr};
  LayerNorm norm3{nullptr};
};
TENSOR_MODULE(TransformerDecoderLayer);

// ---- stacks ----

/// nn::TransformerEncoder: num_layers copies of encoder_layer (same initial weights, as
/// libtorch's clone()), then the optional norm.
struct TransformerEncoderOptions {
  /// Copies `encoder_layer` (its options and current parameters) num_layers times.
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  /// Builds the layer from its options.
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& encoder_layer_options, int64_t num_layers)
      : encoder_layer_(TransformerEncoderLayer(encoder_layer_options)), num_layers_(num_layers) {}
  TENSOR_ARG(TransformerEncoderLayer, encoder_layer) = nullptr;
  TENSOR_ARG(int64_t, num_layers);
  /// Applied to the last layer's output (e.g. AnyModule(LayerNorm(...))); empty for none.
  TENSOR_ARG(AnyModule, norm);
};

/// Children: layers (a ModuleList of TransformerEncoderLayer) and norm (when given).
/// forward(src, src_mask, src_key_padding_mask) runs every layer with the same masks.
class TENSOR_API TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : TransformerEncoderImpl(TransformerEncoderOptions(std::move(encoder_layer), num_layers)) {}
  explicit TransformerEncoderImpl(TransformerEncoderOptions options_);
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});
  void reset();
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  TransformerEncoderOptions options;
  ModuleList layers = nullptr;
  AnyModule norm;
};
TENSOR_MODULE(TransformerEncoder);

/// nn::TransformerDecoder: num_layers copies of decoder_layer, then the optional norm.
struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}
  TransformerDecoderOptions(const TransformerDecoderLayerOptions& decoder_layer_options, int64_t num_layers)
      : decoder_layer_(TransformerDecoderLayer(decoder_layer_options)), num_layers_(num_layers) {}
  TENSOR_ARG(TransformerDecoderLayer, decoder_layer) = nullptr;
  TENSOR_ARG(int64_t, num_layers);
  TENSOR_ARG(AnyModule, norm);
};

class TENSOR_API TransformerDecoderImpl : public Module {
 public:
  TransformerDecoderImpl(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : TransformerDecoderImpl(TransformerDecoderOptions(std::move(decoder_layer), num_layers)) {}
  explicit TransformerDecoderImpl(TransformerDecoderOptions options_);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  void pretty_print(std::ostream& stream) const override;

  TransformerDecoderOptions options;
  ModuleList layers{nullptr};
  AnyModule norm;
};
TENSOR_MODULE(TransformerDecoder);

// ---- Transformer ----

/// nn::Transformer: an encoder and a decoder stack, each ending in a LayerNorm.
struct TransformerOptions {
  TransformerOptions() = default;
  TransformerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerOptions(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers)
      : d_model_(d_model),
        nhead_(nhead),
        num_encoder_layers_(num_encoder_layers),
        num_decoder_layers_(num_decoder_layers) {}
  TENSOR_ARG(int64_t, d_model) = 512;
  TENSOR_ARG(int64_t, nhead) = 8;
  TENSOR_ARG(int64_t, num_encoder_layers) = 6;
  TENSOR_ARG(int64_t, num_decoder_layers) = 6;
  TENSOR_ARG(int64_t, dim_feedforward) = 2048;
  TENSOR_ARG(double, dropout) = 0.1;
  TENSOR_ARG(TransformerActivation, activation) = kReLU;
  /// A TransformerEncoder (or any Tensor -> Tensor module) to use instead of the default stack.
  TENSOR_ARG(AnyModule, custom_encoder);
  /// A TransformerDecoder to use instead of the default stack.
  TENSOR_ARG(AnyModule, custom_decoder);
};

/// Children encoder and decoder. forward(src [S, N, E], tgt [T, N, E], masks as the stacks')
/// -> [T, N, E]. Parameters with more than one dim are xavier_uniform_-initialized, as libtorch.
class TENSOR_API TransformerImpl : public Module {
 public:
  explicit TransformerImpl(TransformerOptions options_);
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {}, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  void reset();
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  /// [sz, sz] float mask: 0 on and below the diagonal, -inf above (a causal attn mask).
  static Tensor generate_square_subsequent_mask(int64_t sz);

  TransformerOptions options;
  AnyModule encoder;
  AnyModule decoder;
};
TENSOR_MODULE(Transformer);

}  // namespace tensor::nn
