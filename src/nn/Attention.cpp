// scaled_dot_product_attention, MultiheadAttention and TransformerEncoderLayer
// (include/tensor/nn/attention.h), composed of public differentiable ops.
#include "tensor/nn/attention.h"

#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "src/core/Check.h"
#include "src/ops/AttentionOps.h"
#include "src/dispatch/BackendKernels.h"
#include "src/ops/CompositeOps.h"
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
// The [.., L, S] score matrix is materialized: MultiheadAttention (which returns the weights)
// and scaled_dot_product_attention's Math backend use it; the fused kernel does not
// (Note [Flash attention on CPU]).
// Returns (output, attention weights after dropout).
std::tuple<Tensor, Tensor> attention_math(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& additive,
                                     double dropout_p, double scale) {
  Tensor scores = matmul(q.mul(scale), k.transpose(-2, -1));
  if (additive.defined()) scores = scores.add(additive);
  Tensor weights = tensor::softmax(scores, -1);
  if (dropout_p > 0) weights = F::dropout(weights, F::DropoutFuncOptions().p(dropout_p).training(true));
  return {matmul(weights, v), weights};
}

}  // namespace

// ---- scaled_dot_product_attention: backends and selection ----

namespace attention {
namespace {

uint32_t bit(SDPBackend b) { return 1u << static_cast<int>(b); }
constexpr uint32_t kAllBackends = 0xF;  // Math, Flash, EfficientAttention, CuDNN
// Per thread, so that a guard in one thread does not change another's calls.
thread_local uint32_t t_allowed = kAllBackends;

const char* backend_name(SDPBackend b) {
  switch (b) {
    case SDPBackend::Math: return "Math";
    case SDPBackend::Flash: return "Flash";
    case SDPBackend::EfficientAttention: return "EfficientAttention";
    case SDPBackend::CuDNN: return "CuDNN";
    case SDPBackend::Error: break;
  }
  return "Error";
}

}  // namespace

sdpa_kernel::sdpa_kernel(const std::vector<SDPBackend>& backends) : previous_(t_allowed) {
  uint32_t m = 0;
  for (SDPBackend b : backends) {
    TENSOR_CHECK(b != SDPBackend::Error, "sdpa_kernel: SDPBackend::Error is not a backend");
    m |= bit(b);
  }
  TENSOR_CHECK(m != 0, "sdpa_kernel: expected at least one backend, got an empty list");
  t_allowed = m;
}
sdpa_kernel::sdpa_kernel(SDPBackend backend) : sdpa_kernel(std::vector<SDPBackend>{backend}) {}
sdpa_kernel::~sdpa_kernel() { t_allowed = previous_; }

std::vector<SDPBackend> allowed_sdp_backends() {
  std::vector<SDPBackend> r;
  for (SDPBackend b : {SDPBackend::Math, SDPBackend::Flash, SDPBackend::EfficientAttention, SDPBackend::CuDNN})
    if (t_allowed & bit(b)) r.push_back(b);
  return r;
}

}  // namespace attention

namespace {

using attention::SDPBackend;
constexpr const char* kSdpa = "scaled_dot_product_attention";

// The checks every backend shares (libtorch's, before it picks a kernel).
void check_sdpa(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                double dropout_p, bool is_causal) {
  constexpr const char* op = kSdpa;
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
}

// Why the fused CPU kernel cannot run these inputs ("" when it can). Note [SDPA backend selection].
std::string flash_blocker(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double dropout_p) {
  if (!(q.is_cpu() || q.is_meta()) || !(k.is_cpu() || k.is_meta()) || !(v.is_cpu() || v.is_meta()))
    return "it is a CPU kernel and the inputs are not on the CPU";
  const ScalarType t = q.scalar_type();
  if (!(t == kFloat32 || t == kFloat64 || t == kBFloat16 || t == kFloat16))
    return fmt::format("it supports float32, float64, bfloat16 and float16, not {}", t);
  if (q.dim() != k.dim() || q.dim() != v.dim() || q.dim() > 4)
    return "it needs query, key and value of one rank, at most 4 ([B, H, L, E])";
  for (int64_t i = 0; i + 2 < q.dim(); ++i)
    if (k.size(i) != q.size(i) || v.size(i) != q.size(i))
      return "it does not broadcast the leading (batch, head) dims of query, key and value";
  if (dropout_p > 0) return "it does not support dropout (dropout_p > 0)";
  if (mask.defined()) {
    // The output keeps query's leading dims: a mask that would enlarge them goes to Math.
    if (mask.dim() > q.dim()) return "attn_mask has more dims than query";
    for (int64_t i = 1; i <= mask.dim(); ++i) {
      const int64_t m = mask.size(-i), f = i == 1 ? k.size(-2) : q.size(-i);
      if (m != f && m != 1) return "attn_mask does not broadcast to [..., L, S] with query's leading dims";
    }
  }
  if (mask.defined() && mask.requires_grad() && GradMode::is_enabled())
    return "it gives no gradient for attn_mask, which requires grad";
  return "";
}

// Note [SDPA backend selection]
// As libtorch on CPU: the fused kernel (Flash) when it can run the inputs (flash_blocker), else
// the math composite. sdpa_kernel's guard narrows the candidates; when none of the allowed ones
// applies, the error lists each with its reason. EfficientAttention and CuDNN are CUDA kernels
// that this library does not have, so they never apply. The fused op records its own node
// (src/autograd/nodes/MultiOutput.cpp): its backward is the fused backward, and a differentiable
// math formula under create_graph, so the choice does not depend on the order of derivatives.
SDPBackend choose(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double dropout_p,
                  bool is_causal) {
  const uint32_t allowed = attention::t_allowed;
  const std::string flash = flash_blocker(q, k, v, mask, dropout_p);
  if ((allowed & attention::bit(SDPBackend::Flash)) && flash.empty()) return SDPBackend::Flash;
  if (allowed & attention::bit(SDPBackend::Math)) return SDPBackend::Math;
  std::string why;
  for (SDPBackend b : attention::allowed_sdp_backends()) {
    const std::string reason = b == SDPBackend::Flash ? flash : "a CUDA kernel that this library does not have";
    why += fmt::format("; {}: {}", attention::backend_name(b), reason);
  }
  TENSOR_CHECK(false,
               "{}: no allowed backend can run query {}, key {}, value {}, attn_mask {} (dropout_p {}, is_causal "
               "{}){}",
               kSdpa, q.describe(), k.describe(), v.describe(), mask.defined() ? mask.describe() : "none", dropout_p,
               is_causal, why);
  return SDPBackend::Error;
}

Tensor math_sdpa(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                 double dropout_p, bool is_causal, double s) {
  constexpr const char* op = kSdpa;
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
  return std::get<0>(attention_math(query, key, value, additive, dropout_p, s));
}

// The composite public op (Note [SDPA backend selection]).
Tensor sdpa(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask, double dropout_p,
            bool is_causal, std::optional<double> scale) {
  check_sdpa(query, key, value, attn_mask, dropout_p, is_causal);
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));
  if (choose(query, key, value, attn_mask, dropout_p, is_causal) == SDPBackend::Math)
    return math_sdpa(query, key, value, attn_mask, dropout_p, is_causal, s);
  // The fused op takes [B, H, L, E]: lower ranks gain leading 1s (the mask broadcasts from the right).
  auto four_d = [](const Tensor& t) {
    Tensor r = t;
    while (r.dim() < 4) r = r.unsqueeze(0);
    return r;
  };
  Tensor out = std::get<0>(ops::attention_ops().flash(four_d(query), four_d(key), four_d(value), 0.0, is_causal,
                                                      attn_mask, s));
  if (query.dim() == 4) return out;
  std::vector<int64_t> shape(query.sizes().begin(), query.sizes().end());
  shape.back() = value.size(-1);
  return out.view(shape);
}

}  // namespace

namespace attention {

SDPBackend _fused_sdp_choice(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                             double dropout_p, bool is_causal, std::optional<double> /*scale*/) {
  check_sdpa(query, key, value, attn_mask, dropout_p, is_causal);
  return choose(query, key, value, attn_mask, dropout_p, is_causal);
}

}  // namespace attention

namespace functional {

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  return ops::scaled_dot_product_attention_op()(query, key, value, attn_mask, dropout_p, is_causal, scale);
}

}  // namespace functional

// ---- multi_head_attention_forward ----

namespace functional {

MultiheadAttentionForwardFuncOptions::MultiheadAttentionForwardFuncOptions(
    int64_t embed_dim_to_check, int64_t num_heads, Tensor in_proj_weight, Tensor in_proj_bias, Tensor bias_k,
    Tensor bias_v, bool add_zero_attn, double dropout_p, Tensor out_proj_weight, Tensor out_proj_bias)
    : embed_dim_to_check_(embed_dim_to_check),
      num_heads_(num_heads),
      in_proj_weight_(std::move(in_proj_weight)),
      in_proj_bias_(std::move(in_proj_bias)),
      bias_k_(std::move(bias_k)),
      bias_v_(std::move(bias_v)),
      add_zero_attn_(add_zero_attn),
      dropout_p_(dropout_p),
      out_proj_weight_(std::move(out_proj_weight)),
      out_proj_bias_(std::move(out_proj_bias)) {}

}  // namespace functional

namespace {

// The [.., S] mask widened by `extra` zero columns: the appended bias_kv / zero_attn keys are
// attended by every query (libtorch pads bool masks with false and float masks with 0; on the
// additive form both are 0).
Tensor pad_keys(const Tensor& additive, int64_t extra) {
  if (extra == 0) return additive;
  std::vector<int64_t> shape(additive.sizes().begin(), additive.sizes().end());
  shape.back() = extra;
  return cat({additive, zeros(shape, TensorOptions().dtype(additive.scalar_type()).device(additive.device()))}, -1);
}

// Note [MultiheadAttention forward]
// libtorch 1.13's multi_head_attention_forward (Python's semantics where the C++ port is
// narrower: 3-D attn_mask, unbatched inputs, kdim != vdim), in the order: in-projection (fused
// for self-attention), bias_k / bias_v appended as one more key / value, then a zero key / value per
// head, the masks widened by as many zero (attend) columns, then softmax(q k^T / sqrt(hd)
// + mask) v and out_proj. `op` names the caller in errors (the module or the functional).
std::tuple<Tensor, Tensor> mha_forward(const char* op, const Tensor& query, const Tensor& key, const Tensor& value,
                                       const F::MultiheadAttentionForwardFuncOptions& o) {
  const int64_t E = o.embed_dim_to_check(), H = o.num_heads();
  TENSOR_CHECK(query.defined() && key.defined() && value.defined(), "{}: query, key and value must be defined", op);
  TENSOR_CHECK(query.dim() == key.dim() && key.dim() == value.dim() && (query.dim() == 2 || query.dim() == 3),
               "{}: expected query, key and value all 3-D (batched) or all 2-D (unbatched), got query {}, key {}, "
               "value {}",
               op, query.describe(), key.describe(), value.describe());
  TENSOR_CHECK(H > 0 && E % H == 0, "{}: embed_dim ({}) must be divisible by num_heads ({})", op, E, H);
  TENSOR_CHECK(query.size(-1) == E, "{}: the last dim of query must be embed_dim = {}, got query {}", op, E,
               query.describe());
  const bool batched = query.dim() == 3;
  // Work in (L, N, E).
  auto seq_first = [&](const Tensor& t) { return batched ? t : t.unsqueeze(1); };
  Tensor q = seq_first(query), k = seq_first(key), v = seq_first(value);
  const int64_t L = q.size(0), N = q.size(1), S = k.size(0), hd = E / H;
  TENSOR_CHECK(k.size(1) == N && v.size(1) == N && v.size(0) == S,
               "{}: key and value must have the query's batch size and one length, got query {}, key {}, value {}", op,
               query.describe(), key.describe(), value.describe());
  const Tensor& bias = o.in_proj_bias();
  TENSOR_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == 3 * E),
               "{}: in_proj_bias must be [3 * embed_dim] = [{}], got {}", op, 3 * E, bias.describe());

  // In-projection: one linear for self-attention (the common case), three otherwise.
  Tensor qp, kp, vp;
  std::vector<Tensor> b(3);
  if (bias.defined()) b = bias.chunk(3, 0);
  if (!o.use_separate_proj_weight()) {
    const Tensor& w = o.in_proj_weight();
    TENSOR_CHECK(w.defined() && w.dim() == 2 && w.size(0) == 3 * E && w.size(1) == E,
                 "{}: in_proj_weight must be [3 * embed_dim, embed_dim] = [{}, {}], got {}", op, 3 * E, E,
                 w.describe());
    TENSOR_CHECK(key.size(-1) == E && value.size(-1) == E,
                 "{}: with one in_proj_weight {} the last dim of key and value must be embed_dim = {} (kdim / vdim "
                 "need separate projection weights), got key {}, value {}",
                 op, w.describe(), E, key.describe(), value.describe());
    if (query.is_same(key) && key.is_same(value)) {
      auto qkv = tensor::linear(q, w, bias).chunk(3, -1);
      qp = qkv[0], kp = qkv[1], vp = qkv[2];
    } else {
      auto ws = w.chunk(3, 0);
      qp = tensor::linear(q, ws[0], b[0]);
      kp = tensor::linear(k, ws[1], b[1]);
      vp = tensor::linear(v, ws[2], b[2]);
    }
  } else {
    auto check_w = [&](const Tensor& w, const char* wname, const Tensor& x, const char* xname, const char* dname) {
      TENSOR_CHECK(w.defined() && w.dim() == 2 && w.size(0) == E && w.size(1) == x.size(-1),
                   "{}: {} must be [embed_dim, {}] = [{}, {}] for {} {}, got {} {}", op, wname, dname, E, x.size(-1),
                   xname, x.describe(), wname, w.describe());
    };
    check_w(o.q_proj_weight(), "q_proj_weight", query, "query", "embed_dim");
    check_w(o.k_proj_weight(), "k_proj_weight", key, "key", "kdim");
    check_w(o.v_proj_weight(), "v_proj_weight", value, "value", "vdim");
    qp = tensor::linear(q, o.q_proj_weight(), b[0]);
    kp = tensor::linear(k, o.k_proj_weight(), b[1]);
    vp = tensor::linear(v, o.v_proj_weight(), b[2]);
  }

  // bias_k / bias_v: one more key and value, the same for every batch item.
  const Tensor &bk = o.bias_k(), &bv = o.bias_v();
  TENSOR_CHECK(bk.defined() == bv.defined(), "{}: bias_k and bias_v must be both defined or both undefined, got {}, {}",
               op, bk.describe(), bv.describe());
  int64_t extra = 0;
  if (bk.defined()) {
    for (const Tensor* t : {&bk, &bv})
      TENSOR_CHECK(t->dim() == 3 && t->size(0) == 1 && t->size(1) == 1 && t->size(2) == E,
                   "{}: bias_k and bias_v must be [1, 1, embed_dim] = [1, 1, {}], got bias_k {}, bias_v {}", op, E,
                   bk.describe(), bv.describe());
    kp = cat({kp, bk.expand({1, N, E})}, 0);
    vp = cat({vp, bv.expand({1, N, E})}, 0);
    ++extra;
  }
  // (S, N, E) -> (N, H, S, hd).
  auto heads = [&](const Tensor& t) { return t.reshape({t.size(0), N, H, hd}).permute({1, 2, 0, 3}); };
  qp = heads(qp), kp = heads(kp), vp = heads(vp);
  if (o.add_zero_attn()) {
    Tensor z = zeros({N, H, 1, hd}, TensorOptions().dtype(kp.scalar_type()).device(kp.device()));
    kp = cat({kp, z}, 2);
    vp = cat({vp, z}, 2);
    ++extra;
  }

  const ScalarType dtype = query.scalar_type();
  Tensor additive;
  if (o.attn_mask().defined()) {
    const Tensor& am = o.attn_mask();
    Tensor m = additive_mask(am, dtype, /*masked_when=*/true, op, "attn_mask");
    if (m.dim() == 2) {
      TENSOR_CHECK(m.size(0) == L && m.size(1) == S, "{}: a 2-D attn_mask must be [L, S] = [{}, {}], got {}", op, L, S,
                   am.describe());
    } else {
      TENSOR_CHECK(m.dim() == 3 && m.size(0) == N * H && m.size(1) == L && m.size(2) == S,
                   "{}: a 3-D attn_mask must be [N * num_heads, L, S] = [{}, {}, {}], got {}", op, N * H, L, S,
                   am.describe());
      m = m.reshape({N, H, L, S});
    }
    additive = pad_keys(m, extra);
  }
  if (o.key_padding_mask().defined()) {
    const Tensor& kpm = o.key_padding_mask();
    const bool ok = batched ? (kpm.dim() == 2 && kpm.size(0) == N && kpm.size(1) == S)
                            : (kpm.dim() == 1 && kpm.size(0) == S);
    TENSOR_CHECK(ok, "{}: key_padding_mask must be [N, S] = [{}, {}] ([S] unbatched), got {}", op, N, S,
                 kpm.describe());
    Tensor m = pad_keys(additive_mask(kpm, dtype, /*masked_when=*/true, op, "key_padding_mask").reshape({N, 1, 1, S}),
                        extra);
    additive = additive.defined() ? additive.add(m) : m;
  }

  const double p = o.training() ? o.dropout_p() : 0.0;
  TENSOR_CHECK(p >= 0 && p < 1, "{}: dropout must be in [0, 1), got {}", op, p);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  // Without need_weights the [N, H, L, S] weights are not returned: scaled_dot_product_attention
  // then picks the fused kernel where it applies (Note [SDPA backend selection]), as libtorch 2.
  Tensor out, weights;
  if (o.need_weights()) std::tie(out, weights) = attention_math(qp, kp, vp, additive, p, scale);
  else out = F::scaled_dot_product_attention(qp, kp, vp, additive, p, false, scale);
  // (N, H, L, hd) -> (L, N, E) -> out_proj.
  out = tensor::linear(out.permute({2, 0, 1, 3}).reshape({L, N, E}), o.out_proj_weight(), o.out_proj_bias());
  if (!batched) out = out.squeeze(1);

  Tensor w;
  if (o.need_weights()) {
    w = o.average_attn_weights() ? weights.mean({1}) : weights;
    if (!batched) w = w.squeeze(0);
  }
  return {out, w};
}

}  // namespace

namespace functional {

std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        const MultiheadAttentionForwardFuncOptions& options) {
  return mha_forward("multi_head_attention_forward", query, key, value, options);
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
  TENSOR_CHECK(options.kdim() > 0 && options.vdim() > 0, "MultiheadAttention: kdim ({}) and vdim ({}) must be positive",
               options.kdim(), options.vdim());
  TENSOR_CHECK(options.dropout() >= 0 && options.dropout() < 1, "MultiheadAttention: dropout must be in [0, 1), got {}",
               options.dropout());
  head_dim = E / H;
  _qkv_same_embed_dim = options.kdim() == E && options.vdim() == E;
  // Re-registered from scratch so that a reset with other options gets libtorch's order.
  for (const char* p : {"in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                        "bias_v"})
    if (parameters_.contains(p)) parameters_.erase(p);
  // libtorch's order: the projection weights (the unused ones registered undefined, so that
  // they are not listed), in_proj_bias, then bias_k / bias_v; out_proj is a child, listed after.
  if (_qkv_same_embed_dim) {
    in_proj_weight = register_parameter("in_proj_weight", tensor::empty({3 * E, E}));
    for (const char* p : {"q_proj_weight", "k_proj_weight", "v_proj_weight"})
      register_parameter(p, Tensor(), /*requires_grad=*/false);
    q_proj_weight = k_proj_weight = v_proj_weight = Tensor();
  } else {
    q_proj_weight = register_parameter("q_proj_weight", tensor::empty({E, E}));
    k_proj_weight = register_parameter("k_proj_weight", tensor::empty({E, options.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", tensor::empty({E, options.vdim()}));
    in_proj_weight = register_parameter("in_proj_weight", Tensor(), /*requires_grad=*/false);
  }
  in_proj_bias = options.bias() ? register_parameter("in_proj_bias", tensor::empty({3 * E}))
                                : register_parameter("in_proj_bias", Tensor(), /*requires_grad=*/false);
  Linear proj(LinearOptions(E, E).bias(options.bias()));
  if (children_.contains("out_proj")) replace_module("out_proj", proj);
  else register_module("out_proj", proj);
  out_proj = proj;
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", tensor::empty({1, 1, E}));
    bias_v = register_parameter("bias_v", tensor::empty({1, 1, E}));
  } else {
    bias_k = bias_v = Tensor();
  }
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  // As libtorch's _reset_parameters: out_proj keeps Linear's weight init, biases are zero.
  if (_qkv_same_embed_dim) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) init::constant_(in_proj_bias, 0.);
  if (out_proj->bias.defined()) init::constant_(out_proj->bias, 0.);
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                           const Tensor& key_padding_mask, bool need_weights,
                                                           const Tensor& attn_mask, bool average_attn_weights) {
  constexpr const char* op = "MultiheadAttention";
  TENSOR_CHECK(query.defined() && key.defined() && value.defined(), "{}: query, key and value must be defined", op);
  auto o = F::MultiheadAttentionForwardFuncOptions(options.embed_dim(), options.num_heads(), in_proj_weight,
                                                   in_proj_bias, bias_k, bias_v, options.add_zero_attn(),
                                                   options.dropout(), out_proj->weight, out_proj->bias)
               .training(is_training())
               .key_padding_mask(key_padding_mask)
               .need_weights(need_weights)
               .attn_mask(attn_mask)
               .use_separate_proj_weight(!_qkv_same_embed_dim)
               .q_proj_weight(q_proj_weight)
               .k_proj_weight(k_proj_weight)
               .v_proj_weight(v_proj_weight)
               .average_attn_weights(average_attn_weights);
  if (!(options.batch_first() && query.dim() == 3 && key.dim() == 3 && value.dim() == 3)) return mha_forward(op, query, key, value, o);
  // batch_first: (N, L, E) <-> (L, N, E); self-attention stays one tensor (one fused projection).
  Tensor q = query.transpose(0, 1);
  const bool self = query.is_same(key) && key.is_same(value);
  Tensor k = self ? q : key.transpose(0, 1), v = self ? q : value.transpose(0, 1);
  auto [out, w] = mha_forward(op, q, k, v, o);
  return {out.transpose(0, 1), w};
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

namespace tensor::ops {
TENSOR_COMPOSITE_OP(scaled_dot_product_attention, SdpaFn, nn::sdpa)
}  // namespace tensor::ops
