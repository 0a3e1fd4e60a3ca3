// MultiheadAttention's libtorch options kdim / vdim, add_bias_kv and add_zero_attn (and
// F::multi_head_attention_forward): parameter names, shapes and init as libtorch; output and
// head-averaged / per-head weights against a float64 reference written here from plain ops in
// libtorch's step order and layout ([N * H, L, S] bmm, raw masks widened by zero columns and
// applied with masked_fill); every option alone and combined, batch_first both ways, unbatched,
// bool / float / 2-D / 3-D masks; gradcheck and gradgradcheck w.r.t. the inputs and the new
// parameters; shape errors.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace tensor;
using tensor::testing::vals;
namespace F = tensor::nn::functional;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;

namespace {

const TensorOptions f64 = TensorOptions().dtype(kFloat64);
const TensorOptions b8 = TensorOptions().dtype(kBool);
const double kInf = std::numeric_limits<double>::infinity();

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  auto g = vals(got), w = vals(want);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << what << " at " << i;
}

// The module's parameters, split the way libtorch's functional reads them.
struct Params {
  Tensor wq, wk, wv, bq, bk, bv, bias_k, bias_v, wo, bo;
};
Params params_of(const nn::MultiheadAttentionImpl& m) {
  const int64_t E = m.options.embed_dim();
  Params p;
  if (m._qkv_same_embed_dim) {
    p.wq = m.in_proj_weight.slice(0, 0, E), p.wk = m.in_proj_weight.slice(0, E, 2 * E);
    p.wv = m.in_proj_weight.slice(0, 2 * E, 3 * E);
  } else {
    p.wq = m.q_proj_weight, p.wk = m.k_proj_weight, p.wv = m.v_proj_weight;
  }
  if (m.in_proj_bias.defined())
    p.bq = m.in_proj_bias.slice(0, 0, E), p.bk = m.in_proj_bias.slice(0, E, 2 * E),
    p.bv = m.in_proj_bias.slice(0, 2 * E, 3 * E);
  p.bias_k = m.bias_k, p.bias_v = m.bias_v, p.wo = m.out_proj->weight, p.bo = m.out_proj->bias;
  return p;
}

Tensor lin(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y = matmul(x, w.t());
  return b.defined() ? y + b : y;
}

// A mask widened by one column of zeros (false / 0.0) on its last dim, as libtorch pads.
Tensor pad_col(const Tensor& m) {
  if (!m.defined()) return m;
  std::vector<int64_t> shape(m.sizes().begin(), m.sizes().end());
  shape.back() = 1;
  return cat({m, zeros(shape, TensorOptions().dtype(m.scalar_type()))}, -1);
}

struct Ref {
  Tensor out, weights;  // out [L, N, E], weights [N, H, L, S'] (per head)
};

// libtorch 1.13's multi_head_attention_forward, step by step in float64 with its own layout:
// project, scale q, append bias_k / bias_v (masks +1 column), split heads as [N * H, S, hd],
// append zero attention (masks +1 column), bmm, masks (bool: masked_fill -inf; float: added),
// softmax, bmm, merge heads, out projection. query [L, N, E], key [S, N, kdim], value [S, N, vdim].
Ref reference(const Params& p, int64_t H, bool add_zero_attn, const Tensor& query, const Tensor& key,
               const Tensor& value, Tensor kpm, Tensor am) {
  const int64_t L = query.size(0), N = query.size(1), E = p.wq.size(0), hd = E / H;
  Tensor q = lin(query, p.wq, p.bq) * (1.0 / std::sqrt(double(hd)));
  Tensor k = lin(key, p.wk, p.bk), v = lin(value, p.wv, p.bv);
  if (p.bias_k.defined()) {
    k = cat({k, p.bias_k.expand({1, N, E})}, 0);
    v = cat({v, p.bias_v.expand({1, N, E})}, 0);
    am = pad_col(am), kpm = pad_col(kpm);
  }
  q = q.contiguous().view({L, N * H, hd}).transpose(0, 1);
  k = k.contiguous().view({-1, N * H, hd}).transpose(0, 1);
  v = v.contiguous().view({-1, N * H, hd}).transpose(0, 1);
  if (add_zero_attn) {
    k = cat({k, zeros({N * H, 1, hd}, f64)}, 1);
    v = cat({v, zeros({N * H, 1, hd}, f64)}, 1);
    am = pad_col(am), kpm = pad_col(kpm);
  }
  const int64_t S = k.size(1);
  Tensor s = q.bmm(k.transpose(1, 2));  // [N * H, L, S]
  if (am.defined()) {
    Tensor a = am.dim() == 2 ? am.unsqueeze(0) : am;
    s = am.scalar_type() == kBool ? s.masked_fill(a.expand(s.sizes()), -kInf) : s + a;
  }
  if (kpm.defined()) {
    Tensor s4 = s.view({N, H, L, S});
    Tensor m = kpm.view({N, 1, 1, S});
    s4 = kpm.scalar_type() == kBool ? s4.masked_fill(m.expand(s4.sizes()), -kInf) : s4 + m;
    s = s4.reshape({N * H, L, S});
  }
  Tensor w = softmax(s, -1);
  Tensor o = w.bmm(v).transpose(0, 1).contiguous().view({L, N, E});
  return {lin(o, p.wo, p.bo), w.view({N, H, L, S})};
}

void randomize(nn::Module& m) {
  NoGradGuard g;
  for (auto& p : m.parameters()) p.copy_(randn(p.sizes(), TensorOptions().dtype(p.scalar_type())) * 0.5);
}

struct Config {
  const char* name;
  int64_t kdim, vdim;
  bool bias_kv, zero_attn, bias;
};
const Config kConfigs[] = {
    {"plain", 6, 6, false, false, true},         {"kdim/vdim", 4, 3, false, false, true},
    {"kdim only", 5, 6, false, false, true},     {"add_bias_kv", 6, 6, true, false, true},
    {"add_zero_attn", 6, 6, false, true, true},  {"bias_kv+zero_attn", 6, 6, true, true, true},
    {"all", 4, 3, true, true, true},             {"all, no bias", 4, 3, true, true, false},
};

nn::MultiheadAttention make(const Config& c, bool batch_first, int64_t E = 6, int64_t H = 2) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(E, H)
                               .kdim(c.kdim)
                               .vdim(c.vdim)
                               .add_bias_kv(c.bias_kv)
                               .add_zero_attn(c.zero_attn)
                               .bias(c.bias)
                               .batch_first(batch_first));
  m->to(kFloat64);
  randomize(*m);
  return m;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> named_shapes(nn::Module& m) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> r;
  for (auto& kv : m.named_parameters())
    r.emplace_back(kv.key(), std::vector<int64_t>(kv.value().sizes().begin(), kv.value().sizes().end()));
  return r;
}

}  // namespace

// Names, shapes and order as libtorch 1.13's named_parameters() (checked once against
// torch::nn::MultiheadAttention): own parameters in registration order, then out_proj.
TEST(MultiheadAttentionOptions, NamedParametersAsLibtorch) {
  using NS = std::vector<std::pair<std::string, std::vector<int64_t>>>;
  nn::MultiheadAttention plain(nn::MultiheadAttentionOptions(8, 2));
  EXPECT_TRUE(plain->_qkv_same_embed_dim);
  EXPECT_EQ(named_shapes(*plain), (NS{{"in_proj_weight", {24, 8}},
                                      {"in_proj_bias", {24}},
                                      {"out_proj.weight", {8, 8}},
                                      {"out_proj.bias", {8}}}));
  nn::MultiheadAttention kv(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(3));
  EXPECT_FALSE(kv->_qkv_same_embed_dim);
  EXPECT_FALSE(kv->in_proj_weight.defined());
  EXPECT_EQ(named_shapes(*kv), (NS{{"q_proj_weight", {8, 8}},
                                   {"k_proj_weight", {8, 5}},
                                   {"v_proj_weight", {8, 3}},
                                   {"in_proj_bias", {24}},
                                   {"out_proj.weight", {8, 8}},
                                   {"out_proj.bias", {8}}}));
  // vdim alone differing is enough for separate weights.
  nn::MultiheadAttention vonly(nn::MultiheadAttentionOptions(8, 2).vdim(4));
  EXPECT_EQ(named_shapes(*vonly)[1], (NS::value_type{"k_proj_weight", {8, 8}}));
  nn::MultiheadAttention bkv(nn::MultiheadAttentionOptions(8, 2).add_bias_kv(true).add_zero_attn(true));
  EXPECT_EQ(named_shapes(*bkv), (NS{{"in_proj_weight", {24, 8}},
                                    {"in_proj_bias", {24}},
                                    {"bias_k", {1, 1, 8}},
                                    {"bias_v", {1, 1, 8}},
                                    {"out_proj.weight", {8, 8}},
                                    {"out_proj.bias", {8}}}));
  nn::MultiheadAttention all(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(3).add_bias_kv(true).bias(false));
  EXPECT_EQ(named_shapes(*all), (NS{{"q_proj_weight", {8, 8}},
                                    {"k_proj_weight", {8, 5}},
                                    {"v_proj_weight", {8, 3}},
                                    {"bias_k", {1, 1, 8}},
                                    {"bias_v", {1, 1, 8}},
                                    {"out_proj.weight", {8, 8}}}));
  // add_zero_attn has no parameters.
  EXPECT_EQ(nn::MultiheadAttention(nn::MultiheadAttentionOptions(8, 2).add_zero_attn(true))->parameters().size(), 4u);

  // The state dict ports by name into a module of the same options, and reset() with changed
  // options re-registers in libtorch's order.
  nn::MultiheadAttention all2(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(3).add_bias_kv(true).bias(false));
  all2->load_state_dict(all->state_dict());
  expect_near(all2->k_proj_weight, all->k_proj_weight, 0, "ported k_proj_weight");
  expect_near(all2->bias_v, all->bias_v, 0, "ported bias_v");
  plain->options.kdim(5).add_bias_kv(true);
  plain->reset();
  EXPECT_EQ(named_shapes(*plain), (NS{{"q_proj_weight", {8, 8}},
                                      {"k_proj_weight", {8, 5}},
                                      {"v_proj_weight", {8, 8}},
                                      {"in_proj_bias", {24}},
                                      {"bias_k", {1, 1, 8}},
                                      {"bias_v", {1, 1, 8}},
                                      {"out_proj.weight", {8, 8}},
                                      {"out_proj.bias", {8}}}));
  EXPECT_FALSE(plain->in_proj_weight.defined());
}

// _reset_parameters: xavier_uniform_ projection weights, xavier_normal_ bias_k / bias_v (fans
// E and E for a [1, 1, E] tensor: std 1 / sqrt(E)), zero biases.
TEST(MultiheadAttentionOptions, InitAsLibtorch) {
  manual_seed(40);
  const int64_t E = 512, kd = 128, vd = 64;
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(E, 8).kdim(kd).vdim(vd).add_bias_kv(true));
  auto check_uniform = [](const Tensor& w, double fan_sum, const char* what) {
    const double a = std::sqrt(6.0 / fan_sum);
    const double mx = w.abs().max().item<double>();
    EXPECT_LE(mx, a) << what;
    EXPECT_GT(mx, 0.95 * a) << what;
    EXPECT_NEAR(w.pow(2).mean().item<double>(), a * a / 3, 0.05 * a * a / 3) << what;
  };
  check_uniform(m->q_proj_weight, E + E, "q_proj_weight");
  check_uniform(m->k_proj_weight, E + kd, "k_proj_weight");
  check_uniform(m->v_proj_weight, E + vd, "v_proj_weight");
  for (const Tensor& b : {m->bias_k, m->bias_v}) {
    // 512 normal samples: the variance estimate is within ~6% (1 sigma); allow 25%.
    EXPECT_NEAR(b.pow(2).mean().item<double>(), 1.0 / E, 0.25 / E);
    EXPECT_GT(b.abs().max().item<double>(), 2.0 / std::sqrt(double(E)));  // normal tails, not uniform
  }
  EXPECT_FALSE(m->bias_k.is_same(m->bias_v));
  EXPECT_GT((m->bias_k - m->bias_v).abs().max().item<double>(), 0.0);
  EXPECT_EQ(m->in_proj_bias.abs().max().item<double>(), 0.0);
  EXPECT_EQ(m->out_proj->bias.abs().max().item<double>(), 0.0);
  // out_proj.weight keeps Linear's U(-1/sqrt(E), 1/sqrt(E)).
  EXPECT_LE(m->out_proj->weight.abs().max().item<double>(), 1 / std::sqrt(double(E)));
}

// Every option alone and combined, batch_first both ways, with no mask, bool masks (2-D
// attn_mask, key_padding_mask) and float masks (3-D per-head attn_mask, float key padding).
TEST(MultiheadAttentionOptions, MatchesLibtorchFormula) {
  manual_seed(41);
  const int64_t L = 3, S = 4, N = 2, H = 2, E = 6;
  for (const Config& c : kConfigs)
    for (bool bf : {false, true}) {
      nn::MultiheadAttention m = make(c, bf);
      const Params p = params_of(*m);
      Tensor q = randn({L, N, E}, f64), k = randn({S, N, c.kdim}, f64), v = randn({S, N, c.vdim}, f64);
      // Non-contiguous inputs either way: batch_first gets transposed views of the (L, N, E)
      // data, sequence-first a (L, N, E) view of (N, L, E) storage.
      auto as_input = [&](const Tensor& t) {
        return bf ? t.transpose(0, 1) : t.transpose(0, 1).contiguous().transpose(0, 1);
      };
      auto out_lne = [&](const Tensor& t) { return bf ? t.transpose(0, 1) : t; };
      Tensor qi = as_input(q), ki = as_input(k), vi = as_input(v);
      ASSERT_FALSE(qi.is_contiguous());

      Tensor am_b = zeros({L, S}, b8), kpm_b = zeros({N, S}, b8);
      am_b.index_put_({0, 1}, true);
      am_b.index_put_({2, 3}, true);
      kpm_b.index_put_({1, 0}, true);
      kpm_b.index_put_({1, 2}, true);
      Tensor am_f = randn({N * H, L, S}, f64), kpm_f = randn({N, S}, f64);
      struct Case {
        const char* name;
        Tensor kpm, am;
      };
      for (const Case& mc : {Case{"no mask", Tensor(), Tensor()}, Case{"bool masks", kpm_b, am_b},
                             Case{"float masks", kpm_f, am_f}}) {
        const std::string what = std::string(c.name) + (bf ? ", batch_first, " : ", ") + mc.name;
        Ref r = reference(p, H, c.zero_attn, q, k, v, mc.kpm, mc.am);
        const int64_t S2 = S + c.bias_kv + c.zero_attn;
        auto [out, w] = m(qi, ki, vi, mc.kpm, true, mc.am);
        EXPECT_EQ(w.sizes(), IntArrayRef({N, L, S2})) << what;
        expect_near(out_lne(out), r.out, 1e-12, what + " output");
        expect_near(w, r.weights.mean({1}), 1e-12, what + " averaged weights");
        auto [out2, wh] = m(qi, ki, vi, mc.kpm, true, mc.am, /*average_attn_weights=*/false);
        expect_near(wh, r.weights, 1e-12, what + " per-head weights");
        expect_near(out2, out, 0, what + " output without averaging");
      }
    }
}

// Self-attention (one fused projection when kdim == vdim == E) and unbatched inputs.
TEST(MultiheadAttentionOptions, SelfAttentionAndUnbatched) {
  manual_seed(42);
  for (const Config& c : kConfigs) {
    if (c.kdim != 6 || c.vdim != 6) continue;
    for (bool bf : {false, true}) {
      nn::MultiheadAttention m = make(c, bf);
      Tensor x = randn({3, 2, 6}, f64);
      Tensor xi = bf ? x.transpose(0, 1) : x;
      Ref r = reference(params_of(*m), 2, c.zero_attn, x, x, x, Tensor(), Tensor());
      auto [out, w] = m(xi, xi, xi);
      expect_near(bf ? out.transpose(0, 1) : out, r.out, 1e-12, std::string(c.name) + " self-attention");
      expect_near(w, r.weights.mean({1}), 1e-12, std::string(c.name) + " self-attention weights");
    }
  }
  nn::MultiheadAttention m = make(kConfigs[6], /*batch_first=*/true);  // all options
  Tensor q = randn({3, 6}, f64), k = randn({5, 4}, f64), v = randn({5, 3}, f64);
  Tensor kpm = zeros({5}, b8);
  kpm.index_put_({1}, true);
  Tensor am = randn({3, 5}, f64);
  Ref r = reference(params_of(*m), 2, true, q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), kpm.unsqueeze(0), am);
  auto [out, w] = m(q, k, v, kpm, true, am);
  expect_near(out, r.out.squeeze(1), 1e-12, "unbatched output");
  expect_near(w, r.weights.mean({1}).squeeze(0), 1e-12, "unbatched weights");
}

// The appended bias / zero keys are never masked: a batch item whose keys are all padding
// still attends to them (finite output) instead of giving NaN.
TEST(MultiheadAttentionOptions, AppendedKeysStayVisible) {
  manual_seed(43);
  const int64_t L = 2, S = 3, N = 2;
  Tensor q = randn({L, N, 6}, f64), k = randn({S, N, 6}, f64), v = randn({S, N, 6}, f64);
  Tensor kpm = zeros({N, S}, b8);
  kpm.select(0, 1).fill_(true);
  {
    nn::MultiheadAttention m = make(kConfigs[4], false);  // add_zero_attn
    auto [out, w] = m(q, k, v, kpm);
    EXPECT_FALSE(isnan(out).any().item<bool>());
    // Item 1 puts all its weight on the zero key, whose value is 0: the attention output is 0
    // and the module output is out_proj's bias.
    expect_near(w.select(0, 1).select(1, S), ones({L}, f64), 1e-15, "all weight on the zero key");
    expect_near(out.select(1, 1), m->out_proj->bias.unsqueeze(0).expand({L, 6}), 1e-13, "zero-attn output");
  }
  {
    nn::MultiheadAttention m = make(kConfigs[3], false);  // add_bias_kv
    auto [out, w] = m(q, k, v, kpm);
    expect_near(w.select(0, 1).select(1, S), ones({L}, f64), 1e-15, "all weight on bias_k");
    // out = out_proj(bias_v projected as a value: bias_v itself, since it is appended after
    // the projection).
    Tensor want = lin(m->bias_v.reshape({1, 6}), m->out_proj->weight, m->out_proj->bias).expand({L, 6});
    expect_near(out.select(1, 1), want, 1e-13, "bias_kv output");
  }
}

// The functional with separate projection weights, the same as the module.
TEST(MultiheadAttentionOptions, FunctionalMatchesModule) {
  manual_seed(44);
  nn::MultiheadAttention m = make(kConfigs[6], false);
  m->eval();
  Tensor q = randn({3, 2, 6}, f64), k = randn({4, 2, 4}, f64), v = randn({4, 2, 3}, f64);
  Tensor am = randn({3, 4}, f64);
  auto o = F::MultiheadAttentionForwardFuncOptions(6, 2, Tensor(), m->in_proj_bias, m->bias_k, m->bias_v, true, 0.0,
                                                   m->out_proj->weight, m->out_proj->bias)
               .attn_mask(am)
               .use_separate_proj_weight(true)
               .q_proj_weight(m->q_proj_weight)
               .k_proj_weight(m->k_proj_weight)
               .v_proj_weight(m->v_proj_weight);
  auto [fo, fw] = F::multi_head_attention_forward(q, k, v, o);
  auto [mo, mw] = m(q, k, v, Tensor(), true, am);
  expect_near(fo, mo, 0, "functional output");
  expect_near(fw, mw, 0, "functional weights");
  Ref r = reference(params_of(*m), 2, true, q, k, v, Tensor(), am);
  expect_near(fo, r.out, 1e-12, "functional vs reference");
  EXPECT_FALSE(std::get<1>(F::multi_head_attention_forward(q, k, v, o.need_weights(false))).defined());
}

// float32 runs the same path (tolerance of float32 rounding).
TEST(MultiheadAttentionOptions, Float32) {
  manual_seed(45);
  nn::MultiheadAttention m = make(kConfigs[6], true);
  Tensor q = randn({2, 3, 6}, f64), k = randn({2, 5, 4}, f64), v = randn({2, 5, 3}, f64);
  Tensor kpm = zeros({2, 5}, b8);
  kpm.index_put_({0, 4}, true);
  auto [o64, w64] = m(q, k, v, kpm);
  m->to(kFloat32);
  auto [o32, w32] = m(q.to(kFloat32), k.to(kFloat32), v.to(kFloat32), kpm);
  EXPECT_EQ(o32.scalar_type(), kFloat32);
  expect_near(o32, o64, 2e-5, "float32 output");
  expect_near(w32, w64, 2e-5, "float32 weights");
}

TEST(MultiheadAttentionOptions, Gradcheck) {
  manual_seed(46);
  nn::MultiheadAttention m = make(kConfigs[6], false);  // kdim 4, vdim 3, bias_kv, zero_attn
  Tensor q = randn({3, 2, 6}, f64).requires_grad_(), k = randn({2, 2, 4}, f64).requires_grad_(),
         v = randn({2, 2, 3}, f64).requires_grad_();
  auto leaf = [](const Tensor& t) { return t.detach().clone().requires_grad_(); };
  Tensor wq = leaf(m->q_proj_weight), wk = leaf(m->k_proj_weight), wv = leaf(m->v_proj_weight),
         b = leaf(m->in_proj_bias), bk = leaf(m->bias_k), bv = leaf(m->bias_v), wo = leaf(m->out_proj->weight);
  Tensor am = randn({3, 2}, f64);
  Tensor kpm = zeros({2, 2}, b8);
  kpm.index_put_({1, 0}, true);
  auto f = [&](const variable_list& in) {
    // Swap the module's handles for the checked inputs (forward reads the members).
    m->q_proj_weight = in[3], m->k_proj_weight = in[4], m->v_proj_weight = in[5];
    m->in_proj_bias = in[6], m->bias_k = in[7], m->bias_v = in[8], m->out_proj->weight = in[9];
    auto [o, att] = m(in[0], in[1], in[2], kpm, true, am);
    return o.sum().add(att.mul(att).sum()).reshape({1}).add(o.reshape({-1}));
  };
  check("mha options gradcheck", [&] { return autograd::gradcheck(f, {q, k, v, wq, wk, wv, b, bk, bv, wo}); });
  // batch_first, per-head weights, float 3-D mask.
  nn::MultiheadAttention bfm = make(kConfigs[5], true);  // bias_kv + zero_attn, kdim = vdim = E
  Tensor am3 = randn({4, 3, 2}, f64);
  Tensor bk2 = leaf(bfm->bias_k), bv2 = leaf(bfm->bias_v), w2 = leaf(bfm->in_proj_weight);
  Tensor qb = randn({2, 3, 6}, f64).requires_grad_(), kb = randn({2, 2, 6}, f64).requires_grad_();
  auto g = [&](const variable_list& in) {
    bfm->bias_k = in[2], bfm->bias_v = in[3], bfm->in_proj_weight = in[4];
    auto [o, att] = bfm(in[0], in[1], in[1], Tensor(), true, am3, false);
    return cat({o.reshape({-1}), att.reshape({-1})});
  };
  check("mha options batch_first gradcheck", [&] { return autograd::gradcheck(g, {qb, kb, bk2, bv2, w2}); });
  // Second derivatives through the bias / zero keys and the separate projections.
  auto f2 = [&](const variable_list& in) {
    m->k_proj_weight = in[2], m->bias_k = in[3], m->bias_v = in[4];
    return std::get<0>(m(in[0], in[1], v, kpm));
  };
  check("mha options gradgradcheck", [&] { return autograd::gradgradcheck(f2, {q, k, wk, bk, bv}); });
}

TEST(MultiheadAttentionOptions, Errors) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(6, 2).kdim(4).vdim(3).add_bias_kv(true));
  Tensor q = randn({3, 2, 6}), k = randn({5, 2, 4}), v = randn({5, 2, 3});
  // key with the wrong kdim / value with the wrong vdim: op, weight and both shapes named.
  expect_error([&] { m(q, randn({5, 2, 6}), v); },
               {"MultiheadAttention", "k_proj_weight", "kdim", "[5, 2, 6]", "[6, 4]"});
  expect_error([&] { m(q, k, randn({5, 2, 4})); }, {"MultiheadAttention", "v_proj_weight", "[5, 2, 4]", "[6, 3]"});
  expect_error([&] { m(randn({3, 2, 4}), k, v); }, {"MultiheadAttention", "embed_dim", "[3, 2, 4]"});
  // A module without kdim fed a key of another width says kdim needs separate weights.
  nn::MultiheadAttention plain(6, 2);
  expect_error([&] { plain(q, k, k); }, {"MultiheadAttention", "in_proj_weight", "[5, 2, 4]", "kdim"});
  // Masks keep the user-facing S (the appended key is added inside).
  expect_error([&] { m(q, k, v, zeros({2, 6}, b8)); }, {"MultiheadAttention", "key_padding_mask", "[2, 5]"});
  expect_error([&] { m(q, k, v, Tensor(), true, zeros({3, 6}, b8)); }, {"MultiheadAttention", "attn_mask", "[3, 5]"});
  expect_error([&] { m(q, randn({4, 2, 4}), v); }, {"MultiheadAttention", "one length"});
  expect_error([&] { nn::MultiheadAttention(nn::MultiheadAttentionOptions(6, 2).kdim(0)); }, {"kdim"});
  // Functional: bias_k without bias_v, a bias_k of the wrong shape.
  auto o = F::MultiheadAttentionForwardFuncOptions(6, 2, randn({18, 6}), Tensor(), randn({1, 1, 6}), Tensor(), false,
                                                   0.0, randn({6, 6}), Tensor());
  expect_error([&] { F::multi_head_attention_forward(q, q, q, o); },
               {"multi_head_attention_forward", "bias_k", "bias_v", "undefined"});
  expect_error([&] { F::multi_head_attention_forward(q, q, q, o.bias_v(randn({1, 2, 6}))); },
               {"multi_head_attention_forward", "[1, 1, 6]", "[1, 2, 6]"});
  expect_error([&] { F::multi_head_attention_forward(q, q, q, o.bias_k(Tensor()).bias_v(Tensor()).in_proj_weight(randn({12, 6}))); },
               {"multi_head_attention_forward", "in_proj_weight", "[12, 6]"});
}
