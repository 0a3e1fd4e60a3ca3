// Transformer stacks (include/tensor/nn/transformer.h) composed of the attention, linear and
// layer-norm modules.
#include "tensor/nn/transformer.h"

#include <limits>
#include <ostream>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/init.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace {

// libtorch clones the prototype layer: the copies start from its parameters and buffers.
void copy_state(Module& dst, const Module& src) {
  NoGradGuard no_grad;
  auto dp = dst.named_parameters();
  for (const auto& item : src.named_parameters()) dp[item.key()].copy_(item.value());
  auto db = dst.named_buffers();
  for (const auto& item : src.named_buffers())
    if (item.value().defined()) db[item.key()].copy_(item.value());
}

template <typename Holder>
Holder put(Module& m, OrderedDict<std::string, std::shared_ptr<Module>>& children, const std::string& name,
           Holder holder) {
  if (children.contains(name)) m.replace_module(name, holder);
  else m.register_module(name, holder);
  return holder;
}

}  // namespace

// ---- TransformerDecoderLayer ----

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(TransformerDecoderLayerOptions options_)
    : Module("tensor::nn::TransformerDecoderLayer"), options(std::move(options_)) {
  reset();
}

void TransformerDecoderLayerImpl::reset() {
  const int64_t d = options.d_model();
  TENSOR_CHECK(options.dim_feedforward() > 0, "TransformerDecoderLayer: dim_feedforward must be positive, got {}",
               options.dim_feedforward());
  auto attn = [&] {
    return MultiheadAttention(
        MultiheadAttentionOptions(d, options.nhead()).dropout(options.dropout()).batch_first(options.batch_first()));
  };
  auto norm = [&] { return LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())); };
  self_attn = put(*this, children_, "self_attn", attn());
  dropout1 = put(*this, children_, "dropout1", Dropout(options.dropout()));
  norm1 = put(*this, children_, "norm1", norm());
  multihead_attn = put(*this, children_, "multihead_attn", attn());
  dropout2 = put(*this, children_, "dropout2", Dropout(options.dropout()));
  norm2 = put(*this, children_, "norm2", norm());
  linear1 = put(*this, children_, "linear1", Linear(d, options.dim_feedforward()));
  dropout = put(*this, children_, "dropout", Dropout(options.dropout()));
  linear2 = put(*this, children_, "linear2", Linear(options.dim_feedforward(), d));
  dropout3 = put(*this, children_, "dropout3", Dropout(options.dropout()));
  norm3 = put(*this, children_, "norm3", norm());
}

void TransformerDecoderLayerImpl::reset_parameters() {
  self_attn->reset_parameters();
  norm1->reset_parameters();
  multihead_attn->reset_parameters();
  norm2->reset_parameters();
  linear1->reset_parameters();
  linear2->reset_parameters();
  norm3->reset_parameters();
}

Tensor TransformerDecoderLayerImpl::forward(Tensor tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask) {
  TENSOR_CHECK(tgt.defined() && memory.defined(), "TransformerDecoderLayer: tgt and memory must be defined");
  auto sa_block = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, tgt_key_padding_mask, /*need_weights=*/false, tgt_mask)));
  };
  auto mha_block = [&](const Tensor& x) {
    return dropout2(
        std::get<0>(multihead_attn(x, memory, memory, memory_key_padding_mask, /*need_weights=*/false, memory_mask)));
  };
  auto ff_block = [&](const Tensor& x) { return dropout3(linear2(dropout(options.activation()(linear1(x))))); };
  Tensor x = std::move(tgt);
  if (options.norm_first()) {
    x = x + sa_block(norm1(x));
    x = x + mha_block(norm2(x));
    x = x + ff_block(norm3(x));
  } else {
    x = norm1(x + sa_block(x));
    x = norm2(x + mha_block(x));
    x = norm3(x + ff_block(x));
  }
  return x;
}

void TransformerDecoderLayerImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::TransformerDecoderLayer";
}

// ---- TransformerEncoder ----

TransformerEncoderImpl::TransformerEncoderImpl(TransformerEncoderOptions options_)
    : Module("tensor::nn::TransformerEncoder"), options(std::move(options_)) {
  reset();
}

void TransformerEncoderImpl::reset() {
  TENSOR_CHECK(!options.encoder_layer().is_empty(), "TransformerEncoder: encoder_layer must be given");
  TENSOR_CHECK(options.num_layers() > 0, "TransformerEncoder: num_layers must be positive, got {}",
               options.num_layers());
  layers = put(*this, children_, "layers", ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) {
    TransformerEncoderLayer layer(options.encoder_layer()->options);
    copy_state(*layer, *options.encoder_layer());
    layers->push_back(layer);
  }
  norm = options.norm();
  if (!norm.is_empty()) {
    if (children_.contains("norm")) replace_module("norm", norm.ptr());
    else register_module("norm", norm.ptr());
  }
}

void TransformerEncoderImpl::reset_parameters() {
  for (size_t i = 0; i < layers->size(); ++i) layers->at<TransformerEncoderLayerImpl>(i).reset_parameters();
  if (!norm.is_empty())
    if (auto ln = norm.ptr<LayerNormImpl>()) ln->reset_parameters();
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask) {
  Tensor x = src;
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->at<TransformerEncoderLayerImpl>(i).forward(x, src_mask, src_key_padding_mask);
  if (!norm.is_empty()) x = norm.forward(x);
  return x;
}

void TransformerEncoderImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::TransformerEncoder(num_layers=" << options.num_layers() << ")";
}

// ---- TransformerDecoder ----

TransformerDecoderImpl::TransformerDecoderImpl(TransformerDecoderOptions options_)
    : Module("tensor::nn::TransformerDecoder"), options(std::move(options_)) {
  reset();
}

void TransformerDecoderImpl::reset() {
  TENSOR_CHECK(!options.decoder_layer().is_empty(), "TransformerDecoder: decoder_layer must be given");
  TENSOR_CHECK(options.num_layers() > 0, "TransformerDecoder: num_layers must be positive, got {}",
               options.num_layers());
  layers = put(*this, children_, "layers", ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) {
    TransformerDecoderLayer layer(options.decoder_layer()->options);
    copy_state(*layer, *options.decoder_layer());
    layers->push_back(layer);
  }
  norm = options.norm();
  if (!norm.is_empty()) {
    if (children_.contains("norm")) replace_module("norm", norm.ptr());
    else register_module("norm", norm.ptr());
  }
}

void TransformerDecoderImpl::reset_parameters() {
  for (size_t i = 0; i < layers->size(); ++i) layers->at<TransformerDecoderLayerImpl>(i).reset_parameters();
  if (!norm.is_empty())
    if (auto ln = norm.ptr<LayerNormImpl>()) ln->reset_parameters();
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask) {
  Tensor x = tgt;
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->at<TransformerDecoderLayerImpl>(i).forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                                           memory_key_padding_mask);
  if (!norm.is_empty()) x = norm.forward(x);
  return x;
}

void TransformerDecoderImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::TransformerDecoder(num_layers=" << options.num_layers() << ")";
}

// ---- Transformer ----

TransformerImpl::TransformerImpl(TransformerOptions options_)
    : Module("tensor::nn::Transformer"), options(std::move(options_)) {
  reset();
}

void TransformerImpl::reset() {
  const int64_t d = options.d_model();
  if (options.custom_encoder().is_empty()) {
    encoder = AnyModule(TransformerEncoder(
        TransformerEncoderOptions(TransformerEncoderLayerOptions(d, options.nhead())
                                      .dim_feedforward(options.dim_feedforward())
                                      .dropout(options.dropout())
                                      .activation(options.activation()),
                                  options.num_encoder_layers())
            .norm(AnyModule(LayerNorm(LayerNormOptions({d}))))));
  } else {
    encoder = options.custom_encoder();
  }
  if (options.custom_decoder().is_empty()) {
    decoder = AnyModule(TransformerDecoder(
        TransformerDecoderOptions(TransformerDecoderLayerOptions(d, options.nhead())
                                      .dim_feedforward(options.dim_feedforward())
                                      .dropout(options.dropout())
                                      .activation(options.activation()),
                                  options.num_decoder_layers())
            .norm(AnyModule(LayerNorm(LayerNormOptions({d}))))));
  } else {
    decoder = options.custom_decoder();
  }
  for (const char* n : {"encoder", "decoder"})
    if (children_.contains(n)) unregister_module(n);
  register_module("encoder", encoder.ptr());
  register_module("decoder", decoder.ptr());
  reset_parameters();
}

void TransformerImpl::reset_parameters() {
  for (Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask) {
  TENSOR_CHECK(src.defined() && tgt.defined() && src.dim() == tgt.dim() && (src.dim() == 2 || src.dim() == 3),
               "Transformer: src and tgt must both be 3-d [S, N, E] / [T, N, E] (or both 2-d unbatched), got src {} "
               "and tgt {}",
               src.defined() ? src.describe() : std::string("undefined"),
               tgt.defined() ? tgt.describe() : std::string("undefined"));
  TENSOR_CHECK(src.dim() == 2 || src.size(1) == tgt.size(1),
               "Transformer: the batch number of src and tgt must be equal, got src {} and tgt {}", src.describe(),
               tgt.describe());
  TENSOR_CHECK(src.size(-1) == options.d_model() && tgt.size(-1) == options.d_model(),
               "Transformer: the feature number of src and tgt must be equal to d_model = {}, got src {} and tgt {}",
               options.d_model(), src.describe(), tgt.describe());
  Tensor memory = encoder.forward(src, src_mask, src_key_padding_mask);
  return decoder.forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
}

void TransformerImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Transformer(d_model=" << options.d_model() << ", nhead=" << options.nhead() << ")";
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz) {
  TENSOR_CHECK(sz >= 0, "Transformer::generate_square_subsequent_mask: size must be non-negative, got {}", sz);
  return tensor::triu(tensor::full({sz, sz}, -std::numeric_limits<float>::infinity()), 1);
}

}  // namespace tensor::nn
