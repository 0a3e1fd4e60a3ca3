// scaled_dot_product_attention, MultiheadAttention and TransformerEncoderLayer
// (include/tensor/nn/attention.h), composed of public differentiable ops.
#include "tensor/nn/attention.h"

#include <cmath>
#include <limits>
#include <ostream>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/linalg.h"
#include "tensor/nn/functional.h"
#include "tensor/nn/init.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace F = functional;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A mask as an additive float tensor of `dtype`: bool masks become 0 / -inf (`masked_when` is
// the bool value that means "do not attend": false for SDPA, true for MultiheadAttention).
Tensor additive_mask(const Tensor& mask, ScalarType dtype, bool masked_when, const char* op, const char* what) {
  if (mask.scalar_type() == kBool) {
    Tensor blocked = masked_when ? mask : mask.logical_not();
    return zeros(mask.sizes(), TensorOptions().dtype(dtype).device(mask.device())).masked_fill(blocked, kNegInf);
  }
  TENSOR_CHECK(is_floating_point(mask.scalar_type()), "{}: {} must be bool or floating point, got {}", op, what,
               mask.describe());
  return mask.scalar_type() == dtype ? mask : mask.to(dtype);
}

// Note [Attention math path]
// The scores are (q * scale) @ k^T, softmax over the keys: libtorch 1.13's MultiheadAttention
// math (PyTorch 2's SDPA math path scales q and k by sqrt(scale) each; the difference is
// rounding only). Scaling q rather than the scores touches L * E elements instead of L * S.
// No fused kernel yet: the [.., L, S] score matrix is materialized, as libtorch 1.13 does.
// Returns (output, attention weights after dropout).
std::tuple<Tensor, Tensor> attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& additive,
                                     double dropout_p, double scale) {
  Tensor scores = matmul(q.mul(scale), k.transpose(-2, -1));
  if (additive.defined()) scores = scores.add(additive);
  Tensor weights = tensor::softmax(scores, -1);
  if (dropout_p > 0) weights = F::dropout(weights, F::DropoutFuncOptions().p(dropout_p).training(true));
  return {matmul(weights, v), weights};
}

}  // namespace

namespace functional {

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  constexpr const char* op = "scaled_dot_product_attention";
  TENSOR_CHECK(query.defined() && key.defined() && value.defined(), "{}: query, key and value must be defined", op);
  TENSOR_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
               "{}: query, key and value need at least 2 dims, got query {}, key {}, value {}", op, query.describe(),
               key.describe(), value.describe());
  TENSOR_CHECK(is_floating_point(query.scalar_type()) && key.scalar_type() == query.scalar_type() &&
                   value.scalar_type() == query.scalar_type(),
               "{}: query, key and value must share one floating dtype, got query {}, key {}, value {}", op,
               query.describe(), key.describe(), value.describe());
  TENSOR_CHECK(query.size(-1) == key.size(-1) && key.size(-2) == value.size(-2),
               "{}: expected query [..., L, E], key [..., S, E], value [..., S, Ev], got query {}, key {}, value {}", op,
               query.describe(), key.describe(), value.describe());
  TENSOR_CHECK(dropout_p >= 0 && dropout_p < 1, "{}: dropout_p must be in [0, 1), got {}", op, dropout_p);
  TENSOR_CHECK(!(is_causal && attn_mask.defined()), "{}: pass either attn_mask or is_causal, not both", op);
  const int64_t L = query.size(-2), S = key.size(-2);
  Tensor additive;
  if (is_causal) {
    // Query i attends to keys 0..i (top-left aligned, as PyTorch's tril mask).
    Tensor allowed = ge(arange(L, TensorOptions().dtype(kInt64)).unsqueeze(1),
                        arange(S, TensorOptions().dtype(kInt64)).unsqueeze(0));
    additive = additive_mask(allowed.to(query.device()), query.scalar_type(), /*masked_when=*/false, op, "the mask");
  } else if (attn_mask.defined()) {
    additive = additive_mask(attn_mask, query.scalar_type(), /*masked_when=*/false, op, "attn_mask");
  }
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));
  return std::get<0>(attention(query, key, value, additive, dropout_p, s));
}

}  // namespace functional

// ---- MultiheadAttention ----

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_)
    : Module("tensor::nn::MultiheadAttention"), options(options_) {
  reset();
}

void MultiheadAttentionImpl::reset() {
  const int64_t E = options.embed_dim(), H = options.num_heads();
  TENSOR_CHECK(E > 0 && H > 0 && E % H == 0,
               "MultiheadAttention: embed_dim ({}) must be positive and divisible by num_heads ({})", E, H);
  TENSOR_CHECK(options.dropout() >= 0 && options.dropout() < 1, "MultiheadAttention: dropout must be in [0, 1), got {}",
               options.dropout());
  head_dim = E / H;
  for (const char* p : {"in_proj_weight", "in_proj_bias"})
    if (parameters_.contains(p)) parameters_.erase(p);
  in_proj_weight = register_parameter("in_proj_weight", tensor::empty({3 * E, E}));
  in_proj_bias = options.bias() ? register_parameter("in_proj_bias", tensor::empty({3 * E}))
                                : register_parameter("in_proj_bias", Tensor(), /*requires_grad=*/false);
  Linear proj(LinearOptions(E, E).bias(options.bias()));
  if (children_.contains("out_proj")) replace_module("out_proj", proj);
  else register_module("out_proj", proj);
  out_proj = proj;
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  // As libtorch's _reset_parameters: out_proj keeps Linear's weight init, biases are zero.
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::constant_(in_proj_bias, 0.);
  if (out_proj->bias.defined()) init::constant_(out_proj->bias, 0.);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                           const Tensor& key_padding_mask, bool need_weights,
                                                           const Tensor& attn_mask, bool average_attn_weights) {
  constexpr const char* op = "MultiheadAttention";
  const int64_t E = options.embed_dim(), H = options.num_heads();
  TENSOR_CHECK(query.defined() && key.defined() && value.defined(), "{}: query, key and value must be defined", op);
  TENSOR_CHECK(query.dim() == key.dim() && key.dim() == value.dim() && (query.dim() == 2 || query.dim() == 3),
               "{}: expected query, key and value all 3-D (batched) or all 2-D (unbatched), got query {}, key {}, "
               "value {}",
               op, query.describe(), key.describe(), value.describe());
  TENSOR_CHECK(query.size(-1) == E && key.size(-1) == E && value.size(-1) == E,
               "{}: the last dim of query, key and value must be embed_dim = {}, got query {}, key {}, value {}", op, E,
               query.describe(), key.describe(), value.describe());
  const bool batched = query.dim() == 3;
  // Work in (L, N, E).
  auto to_lne = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(1);
    return options.batch_first() ? t.transpose(0, 1) : t;
  };
  Tensor q = to_lne(query), k = to_lne(key), v = to_lne(value);
  const int64_t L = q.size(0), N = q.size(1), S = k.size(0);
  TENSOR_CHECK(k.size(1) == N && v.size(1) == N && v.size(0) == S,
               "{}: key and value must have the query's batch size and one length, got query {}, key {}, value {}", op,
               query.describe(), key.describe(), value.describe());

  // In-projection: one linear for self-attention (the common case), three otherwise.
  Tensor qp, kp, vp;
  if (query.is_same(key) && key.is_same(value)) {
    auto qkv = tensor::linear(q, in_proj_weight, in_proj_bias).chunk(3, -1);
    qp = qkv[0], kp = qkv[1], vp = qkv[2];
  } else {
    auto w = in_proj_weight.chunk(3, 0);
    std::vector<Tensor> b(3);
    if (in_proj_bias.defined()) b = in_proj_bias.chunk(3, 0);
    qp = tensor::linear(q, w[0], b[0]);
    kp = tensor::linear(k, w[1], b[1]);
    vp = tensor::linear(v, w[2], b[2]);
  }
  // (L, N, E) -> (N, H, L, head_dim).
  auto heads = [&](const Tensor& t, int64_t len) { return t.reshape({len, N, H, head_dim}).permute({1, 2, 0, 3}); };
  qp = heads(qp, L), kp = heads(kp, S), vp = heads(vp, S);

  const ScalarType dtype = query.scalar_type();
  Tensor additive;
  if (attn_mask.defined()) {
    Tensor m = additive_mask(attn_mask, dtype, /*masked_when=*/true, op, "attn_mask");
    if (m.dim() == 2) {
      TENSOR_CHECK(m.size(0) == L && m.size(1) == S, "{}: a 2-D attn_mask must be [L, S] = [{}, {}], got {}", op, L, S,
                   attn_mask.describe());
    } else {
      TENSOR_CHECK(m.dim() == 3 && m.size(0) == N * H && m.size(1) == L && m.size(2) == S,
                   "{}: a 3-D attn_mask must be [N * num_heads, L, S] = [{}, {}, {}], got {}", op, N * H, L, S,
                   attn_mask.describe());
      m = m.reshape({N, H, L, S});
    }
    additive = m;
  }
  if (key_padding_mask.defined()) {
    const bool ok = batched ? (key_padding_mask.dim() == 2 && key_padding_mask.size(0) == N && key_padding_mask.size(1) == S)
                            : (key_padding_mask.dim() == 1 && key_padding_mask.size(0) == S);
    TENSOR_CHECK(ok, "{}: key_padding_mask must be [N, S] = [{}, {}] ([S] unbatched), got {}", op, N, S,
                 key_padding_mask.describe());
    Tensor m = additive_mask(key_padding_mask, dtype, /*masked_when=*/true, op, "key_padding_mask").reshape({N, 1, 1, S});
    additive = additive.defined() ? additive.add(m) : m;
  }

  const double p = is_training() ? options.dropout() : 0.0;
  auto [out, weights] = attention(qp, kp, vp, additive, p, 1.0 / std::sqrt(static_cast<double>(head_dim)));
  // (N, H, L, hd) -> (L, N, E) -> out_proj.
  out = out_proj(out.permute({2, 0, 1, 3}).reshape({L, N, E}));
  if (!batched) out = out.squeeze(1);
  else if (options.batch_first()) out = out.transpose(0, 1);

  Tensor w;
  if (need_weights) {
    w = average_attn_weights ? weights.mean({1}) : weights;
    if (!batched) w = w.squeeze(0);
  }
  return {out, w};
}

void MultiheadAttentionImpl::pretty_print(std::ostream& stream) const { stream << "tensor::nn::MultiheadAttention"; }

// ---- TransformerEncoderLayer ----

Tensor TransformerActivation::operator()(const Tensor& x) const {
  switch (kind_) {
    case Kind::ReLU: return tensor::relu(x);
    case Kind::GELU: return F::gelu(x);
    case Kind::Function: return function_(x);
  }
  return x;
}

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(TransformerEncoderLayerOptions options_)
    : Module("tensor::nn::TransformerEncoderLayer"), options(std::move(options_)) {
  reset();
}

void TransformerEncoderLayerImpl::reset() {
  const int64_t d = options.d_model();
  TENSOR_CHECK(options.dim_feedforward() > 0, "TransformerEncoderLayer: dim_feedforward must be positive, got {}",
               options.dim_feedforward());
  auto put = [this](const std::string& name, auto holder) {
    if (children_.contains(name)) replace_module(name, holder);
    else register_module(name, holder);
    return holder;
  };
  self_attn = put("self_attn", MultiheadAttention(MultiheadAttentionOptions(d, options.nhead())
                                                      .dropout(options.dropout())
                                                      .batch_first(options.batch_first())));
  linear1 = put("linear1", Linear(d, options.dim_feedforward()));
  dropout = put("dropout", Dropout(options.dropout()));
  linear2 = put("linear2", Linear(options.dim_feedforward(), d));
  norm1 = put("norm1", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  norm2 = put("norm2", LayerNorm(LayerNormOptions({d}).eps(options.layer_norm_eps())));
  dropout1 = put("dropout1", Dropout(options.dropout()));
  dropout2 = put("dropout2", Dropout(options.dropout()));
}

void TransformerEncoderLayerImpl::reset_parameters() {
  self_attn->reset_parameters();
  linear1->reset_parameters();
  linear2->reset_parameters();
  norm1->reset_parameters();
  norm2->reset_parameters();
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask) {
  auto sa_block = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, src_key_padding_mask, /*need_weights=*/false, src_mask)));
  };
  auto ff_block = [&](const Tensor& x) {
    return dropout2(linear2(dropout(options.activation()(linear1(x)))));
  };
  Tensor x = src;
  if (options.norm_first()) {
    x = x.add(sa_block(norm1(x)));
    x = x.add(ff_block(norm2(x)));
  } else {
    x = norm1(x.add(sa_block(x)));
    x = norm2(x.add(ff_block(x)));
  }
  return x;
}

void TransformerEncoderLayerImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::TransformerEncoderLayer";
}

}  // namespace tensor::nn
