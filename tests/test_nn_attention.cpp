// Attention: scaled_dot_product_attention against a float64 loop (bool / float / causal masks,
// custom scale, broadcast and non-contiguous inputs, dropout statistics), gradcheck and
// gradgradcheck; MultiheadAttention against a float64 per-head reference written from the
// formulas (masks, head-averaged weights, batch_first, unbatched), its initialization and
// gradcheck; TransformerEncoderLayer (post- and pre-norm) against a composed reference, and
// dropout off in eval.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace tensor;
using tensor::testing::vals;
using tensor::testing::expect_near;
namespace F = tensor::nn::functional;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;

namespace {

const TensorOptions f64 = TensorOptions().dtype(kFloat64);

// softmax(q k^T * scale + add) v for one [L, E] x [S, E] x [S, Ev] problem; add[i][j] = -inf
// blocks. Also returns the weights [L, S].
void attend_ref(const double* q, const double* k, const double* v, int64_t L, int64_t S, int64_t E, int64_t Ev,
                double scale, const std::vector<double>& add, double* out, double* weights) {
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> s(S);
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < S; ++j) {
      double d = 0;
      for (int64_t e = 0; e < E; ++e) d += q[i * E + e] * k[j * E + e];
      s[j] = d * scale + (add.empty() ? 0.0 : add[i * S + j]);
      mx = std::max(mx, s[j]);
    }
    double z = 0;
    for (int64_t j = 0; j < S; ++j) z += (s[j] = std::exp(s[j] - mx));
    for (int64_t j = 0; j < S; ++j) s[j] /= z;
    for (int64_t c = 0; c < Ev; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < S; ++j) acc += s[j] * v[j * Ev + c];
      out[i * Ev + c] = acc;
    }
    if (weights)
      for (int64_t j = 0; j < S; ++j) weights[i * S + j] = s[j];
  }
}

// SDPA reference over a batch of B problems (q [B, L, E], k [B, S, E], v [B, S, Ev]).
std::vector<double> sdpa_ref(const Tensor& q, const Tensor& k, const Tensor& v, const std::vector<double>& add,
                             double scale) {
  const int64_t B = q.size(0), L = q.size(1), E = q.size(2), S = k.size(1), Ev = v.size(2);
  auto qv = vals(q), kv = vals(k), vv = vals(v);
  std::vector<double> out(B * L * Ev);
  for (int64_t b = 0; b < B; ++b)
    attend_ref(&qv[b * L * E], &kv[b * S * E], &vv[b * S * Ev], L, S, E, Ev, scale, add, &out[b * L * Ev], nullptr);
  return out;
}

}  // namespace

TEST(SDPA, MatchesFloat64Loop) {
  manual_seed(10);
  const int64_t B = 2, H = 3, L = 4, S = 6, E = 5, Ev = 7;
  Tensor q = randn({B, H, L, E}, f64), k = randn({B, H, S, E}, f64), v = randn({B, H, S, Ev}, f64);
  Tensor y = F::scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(y.sizes(), IntArrayRef({B, H, L, Ev}));
  expect_near(vals(y),
              sdpa_ref(q.reshape({B * H, L, E}), k.reshape({B * H, S, E}), v.reshape({B * H, S, Ev}), {},
                       1 / std::sqrt(5.0)),
              1e-12, "plain");
  // Custom scale.
  expect_near(vals(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, 0.3)),
              sdpa_ref(q.reshape({B * H, L, E}), k.reshape({B * H, S, E}), v.reshape({B * H, S, Ev}), {}, 0.3), 1e-12,
              "scale");
  // float32 against the same loop.
  expect_near(vals(F::scaled_dot_product_attention(q.to(kFloat32), k.to(kFloat32), v.to(kFloat32))),
              vals(y), 1e-5, "float32");
}

TEST(SDPA, MasksAndCausal) {
  manual_seed(11);
  const int64_t L = 4, S = 6, E = 3;
  Tensor q = randn({2, L, E}, f64), k = randn({2, S, E}, f64), v = randn({2, S, E}, f64);
  const double sc = 1 / std::sqrt(3.0), inf = std::numeric_limits<double>::infinity();
  // Bool: true = attend. Every row keeps at least one key.
  Tensor allowed = gt(rand({L, S}), 0.4);
  allowed.select(1, 0).fill_(true);
  auto av = vals(allowed);
  std::vector<double> add(L * S);
  for (int64_t i = 0; i < L * S; ++i) add[i] = av[i] != 0 ? 0.0 : -inf;
  expect_near(vals(F::scaled_dot_product_attention(q, k, v, allowed)), sdpa_ref(q, k, v, add, sc), 1e-12, "bool mask");
  // Float: added to the scores (broadcast over the batch).
  Tensor fm = randn({L, S}, f64);
  expect_near(vals(F::scaled_dot_product_attention(q, k, v, fm)), sdpa_ref(q, k, v, vals(fm), sc), 1e-12,
              "float mask");
  // Causal (top-left aligned): key j visible to query i iff j <= i.
  std::vector<double> causal(L * S);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) causal[i * S + j] = j <= i ? 0.0 : -inf;
  Tensor yc = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  expect_near(vals(yc), sdpa_ref(q, k, v, causal, sc), 1e-12, "causal");
  // Query 0 sees only key 0: its output is exactly v[0].
  expect_near(vals(yc.select(1, 0)), vals(v.select(1, 0)), 1e-14, "causal row 0");
}

TEST(SDPA, BroadcastAndNonContiguous) {
  manual_seed(12);
  // key/value shared across the batch (leading dim 1), query a transposed view.
  Tensor qt = randn({4, 3, 5}, f64).transpose(0, 1);  // [3, 4, 5], non-contiguous
  Tensor k = randn({1, 6, 5}, f64), v = randn({1, 6, 2}, f64);
  ASSERT_FALSE(qt.is_contiguous());
  Tensor y = F::scaled_dot_product_attention(qt, k, v);
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 4, 2}));
  expect_near(vals(y), sdpa_ref(qt.contiguous(), k.expand({3, 6, 5}), v.expand({3, 6, 2}), {}, 1 / std::sqrt(5.0)),
              1e-12, "broadcast");
  // Unbatched 2-D.
  expect_near(vals(F::scaled_dot_product_attention(qt.select(0, 1), k.select(0, 0), v.select(0, 0))),
              vals(y.select(0, 1)), 1e-14, "2-D");
}

TEST(SDPA, DropoutKeepsExpectation) {
  manual_seed(13);
  // With v = 1 every output element is (sum of kept weights) / (1 - p): mean 1 over many rows.
  Tensor q = randn({64, 16, 8}), k = randn({64, 32, 8}), v = ones({64, 32, 4});
  Tensor y = F::scaled_dot_product_attention(q, k, v, {}, 0.5);
  const double mean = y.mean().item<double>();
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_GT((y - 1).abs().max().item<double>(), 0.1);  // really dropped something
  expect_near(vals(F::scaled_dot_product_attention(q, k, v)), std::vector<double>(64 * 16 * 4, 1.0), 1e-5, "no dropout");
}

TEST(SDPA, Gradcheck) {
  manual_seed(14);
  Tensor q = randn({2, 3, 4}, f64).requires_grad_(), k = randn({2, 5, 4}, f64).requires_grad_(),
         v = randn({2, 5, 3}, f64).requires_grad_(), m = randn({3, 5}, f64).requires_grad_();
  check("sdpa gradcheck", [&] {
    return autograd::gradcheck([](const variable_list& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2]); },
                               {q, k, v});
  });
  check("sdpa float mask gradcheck", [&] {
    return autograd::gradcheck(
        [](const variable_list& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); },
        {q, k, v, m});
  });
  check("sdpa causal gradcheck", [&] {
    return autograd::gradcheck(
        [](const variable_list& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); },
        {q, k, v});
  });
  check("sdpa gradgradcheck", [&] {
    return autograd::gradgradcheck(
        [](const variable_list& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); },
        {q, k, v});
  });
}

TEST(SDPA, Errors) {
  Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 3});
  expect_error([&] { F::scaled_dot_product_attention(q, randn({2, 5, 3}), v); }, {"scaled_dot_product_attention"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v.to(kFloat64)); }, {"dtype"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, ones({3, 5}), 0.0, true); }, {"not both"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, ones({3, 5}, TensorOptions().dtype(kInt64))); },
               {"attn_mask"});
  expect_error([&] { F::scaled_dot_product_attention(randn({4}), k, v); }, {"at least 2 dims"});
}

namespace {

// MultiheadAttention reference from the formulas, per batch item and head, in float64.
// q [L, N, E], k/v [S, N, E]; add_for(n, h) gives the [L, S] additive mask (or empty).
struct MHARef {
  std::vector<double> out;      // [L, N, E]
  std::vector<double> weights;  // [N, L, S], averaged over heads
};
MHARef mha_ref(nn::MultiheadAttentionImpl& m, const Tensor& q, const Tensor& k, const Tensor& v,
               const std::function<std::vector<double>(int64_t, int64_t)>& add_for) {
  const int64_t L = q.size(0), N = q.size(1), E = q.size(2), S = k.size(0), H = m.options.num_heads(), hd = E / H;
  auto W = vals(m.in_proj_weight), bvec = m.in_proj_bias.defined() ? vals(m.in_proj_bias) : std::vector<double>(3 * E);
  auto Wo = vals(m.out_proj->weight), bo = m.out_proj->bias.defined() ? vals(m.out_proj->bias) : std::vector<double>(E);
  auto qv = vals(q), kv = vals(k), vv = vals(v);
  auto proj = [&](const std::vector<double>& x, int64_t len, int64_t n, int64_t which, int64_t h) {
    std::vector<double> r(len * hd);  // [len, hd]
    for (int64_t t = 0; t < len; ++t)
      for (int64_t d = 0; d < hd; ++d) {
        const int64_t row = which * E + h * hd + d;
        double acc = bvec[row];
        for (int64_t e = 0; e < E; ++e) acc += W[row * E + e] * x[(t * N + n) * E + e];
        r[t * hd + d] = acc;
      }
    return r;
  };
  MHARef ref{std::vector<double>(L * N * E), std::vector<double>(N * L * S, 0.0)};
  std::vector<double> concat(L * N * E);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h) {
      auto qh = proj(qv, L, n, 0, h), kh = proj(kv, S, n, 1, h), vh = proj(vv, S, n, 2, h);
      std::vector<double> o(L * hd), w(L * S);
      attend_ref(qh.data(), kh.data(), vh.data(), L, S, hd, hd, 1 / std::sqrt(double(hd)), add_for(n, h), o.data(),
                 w.data());
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t d = 0; d < hd; ++d) concat[(i * N + n) * E + h * hd + d] = o[i * hd + d];
        for (int64_t j = 0; j < S; ++j) ref.weights[(n * L + i) * S + j] += w[i * S + j] / H;
      }
    }
  for (int64_t t = 0; t < L * N; ++t)
    for (int64_t e = 0; e < E; ++e) {
      double acc = bo[e];
      for (int64_t f = 0; f < E; ++f) acc += Wo[e * E + f] * concat[t * E + f];
      ref.out[t * E + e] = acc;
    }
  return ref;
}

void randomize(nn::Module& m) {
  NoGradGuard g;
  for (auto& p : m.parameters()) p.copy_(randn(p.sizes(), TensorOptions().dtype(p.scalar_type())) * 0.5);
}

}  // namespace

TEST(MultiheadAttention, MatchesPerHeadReference) {
  manual_seed(20);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(6, 2));
  mha->to(kFloat64);
  randomize(*mha);
  const int64_t L = 3, S = 5, N = 2;
  Tensor q = randn({L, N, 6}, f64), k = randn({S, N, 6}, f64), v = randn({S, N, 6}, f64);
  auto [out, w] = mha(q, k, v);
  auto none = [](int64_t, int64_t) { return std::vector<double>(); };
  MHARef ref = mha_ref(*mha, q, k, v, none);
  EXPECT_EQ(out.sizes(), IntArrayRef({L, N, 6}));
  EXPECT_EQ(w.sizes(), IntArrayRef({N, L, S}));
  expect_near(vals(out), ref.out, 1e-12, "mha out");
  expect_near(vals(w), ref.weights, 1e-12, "mha averaged weights");

  // Self-attention (one fused in-projection) against the same reference.
  auto [so, sw] = mha(q, q, q);
  MHARef sref = mha_ref(*mha, q, q, q, none);
  expect_near(vals(so), sref.out, 1e-12, "self-attention");

  // Per-head weights, and no weights.
  auto [o2, wh] = mha(q, k, v, Tensor(), true, Tensor(), /*average_attn_weights=*/false);
  EXPECT_EQ(wh.sizes(), IntArrayRef({N, 2, L, S}));
  expect_near(vals(wh.mean({1})), ref.weights, 1e-12, "per-head weights average");
  EXPECT_FALSE(std::get<1>(mha(q, k, v, Tensor(), false)).defined());

  // batch_first: same parameters, (N, L, E) in and out.
  nn::MultiheadAttention bf(nn::MultiheadAttentionOptions(6, 2).batch_first(true));
  bf->to(kFloat64);
  bf->load_state_dict(mha->state_dict());
  auto [ob, wb] = bf(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1));
  expect_near(vals(ob.transpose(0, 1)), ref.out, 1e-12, "batch_first");
  expect_near(vals(wb), ref.weights, 1e-12, "batch_first weights");

  // Unbatched (L, E).
  auto [ou, wu] = mha(q.select(1, 1), k.select(1, 1), v.select(1, 1));
  expect_near(vals(ou), vals(out.select(1, 1)), 1e-12, "unbatched");
  expect_near(vals(wu), vals(w.select(0, 1)), 1e-12, "unbatched weights");
}

TEST(MultiheadAttention, Masks) {
  manual_seed(21);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(4, 2));
  mha->to(kFloat64);
  randomize(*mha);
  const int64_t L = 3, S = 4, N = 2, H = 2;
  const double inf = std::numeric_limits<double>::infinity();
  Tensor q = randn({L, N, 4}, f64), k = randn({S, N, 4}, f64), v = randn({S, N, 4}, f64);
  // attn_mask bool [L, S]: true = blocked. key_padding_mask bool [N, S]: true = padding.
  Tensor am = zeros({L, S}, TensorOptions().dtype(kBool));
  am.index_put_({0, 2}, true) ;
  am.index_put_({1, 3}, true);
  Tensor kpm = zeros({N, S}, TensorOptions().dtype(kBool));
  kpm.index_put_({1, 1}, true);
  auto add_for = [&](int64_t n, int64_t) {
    std::vector<double> a(L * S, 0.0);
    auto amv = vals(am), kv = vals(kpm);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j)
        if (amv[i * S + j] != 0 || kv[n * S + j] != 0) a[i * S + j] = -inf;
    return a;
  };
  auto [out, w] = mha(q, k, v, kpm, true, am);
  MHARef ref = mha_ref(*mha, q, k, v, add_for);
  expect_near(vals(out), ref.out, 1e-12, "bool masks");
  expect_near(vals(w), ref.weights, 1e-12, "bool mask weights");
  EXPECT_EQ(w.index({1, 0, 1}).item<double>(), 0.0);  // a padded key gets no weight

  // Float masks: 3-D attn_mask [N * H, L, S] per head plus a float key_padding_mask.
  Tensor am3 = randn({N * H, L, S}, f64), kpf = randn({N, S}, f64);
  auto a3 = vals(am3), kf = vals(kpf);
  auto add3 = [&](int64_t n, int64_t h) {
    std::vector<double> a(L * S);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) a[i * S + j] = a3[((n * H + h) * L + i) * S + j] + kf[n * S + j];
    return a;
  };
  auto [o3, w3] = mha(q, k, v, kpf, true, am3);
  MHARef ref3 = mha_ref(*mha, q, k, v, add3);
  expect_near(vals(o3), ref3.out, 1e-12, "float masks");
  expect_near(vals(w3), ref3.weights, 1e-12, "float mask weights");

  expect_error([&] { mha(q, k, v, Tensor(), true, zeros({L, L})); }, {"attn_mask"});
  expect_error([&] { mha(q, k, v, zeros({N, L})); }, {"key_padding_mask"});
  expect_error([&] { mha(q, randn({S, N, 5}, f64), v); }, {"embed_dim"});
  expect_error([&] { nn::MultiheadAttention(6, 4); }, {"divisible"});
}

TEST(MultiheadAttention, InitAndStructure) {
  manual_seed(22);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(64, 4));
  std::vector<std::string> names;
  for (auto& kv : mha->named_parameters()) names.push_back(kv.key());
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(mha->in_proj_weight.sizes(), IntArrayRef({192, 64}));
  // xavier_uniform_: U(-a, a) with a = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / 256).
  const double a = std::sqrt(6.0 / 256.0);
  EXPECT_LE(mha->in_proj_weight.abs().max().item<double>(), a);
  EXPECT_GT(mha->in_proj_weight.abs().max().item<double>(), 0.9 * a);
  EXPECT_NEAR(mha->in_proj_weight.pow(2).mean().item<double>(), a * a / 3, 0.1 * a * a / 3);
  EXPECT_EQ(mha->in_proj_bias.abs().max().item<double>(), 0.0);
  EXPECT_EQ(mha->out_proj->bias.abs().max().item<double>(), 0.0);
  // out_proj.weight keeps Linear's U(-1/sqrt(64), 1/sqrt(64)).
  EXPECT_LE(mha->out_proj->weight.abs().max().item<double>(), 1 / 8.0);
  nn::MultiheadAttention nb(nn::MultiheadAttentionOptions(8, 2).bias(false));
  EXPECT_EQ(nb->parameters().size(), 2u);
  std::ostringstream s;
  s << *mha;
  EXPECT_NE(s.str().find("tensor::nn::MultiheadAttention(\n  (out_proj): tensor::nn::Linear(in_features=64, out_features=64, bias=true)\n)"),
            std::string::npos)
      << s.str();
}

TEST(MultiheadAttention, Gradcheck) {
  manual_seed(23);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(4, 2));
  mha->to(kFloat64);
  randomize(*mha);
  Tensor q = randn({3, 2, 4}, f64).requires_grad_(), k = randn({2, 2, 4}, f64).requires_grad_(),
         v = randn({2, 2, 4}, f64).requires_grad_();
  Tensor w = mha->in_proj_weight.detach().clone().requires_grad_(), b = mha->in_proj_bias.detach().clone().requires_grad_(),
         wo = mha->out_proj->weight.detach().clone().requires_grad_();
  Tensor am = randn({3, 2}, f64);
  auto f = [&](const variable_list& in) {
    // Swap the module's handles for the checked inputs (forward reads the members).
    mha->in_proj_weight = in[3];
    mha->in_proj_bias = in[4];
    mha->out_proj->weight = in[5];
    auto [o, att] = mha(in[0], in[1], in[2], Tensor(), true, am);
    return o.sum().add(att.mul(att).sum()).reshape({1}).add(o.reshape({-1}));
  };
  check("mha gradcheck", [&] { return autograd::gradcheck(f, {q, k, v, w, b, wo}); });
  // Second derivatives w.r.t. the inputs and the in-projection (bool key padding mask).
  Tensor kpm = zeros({2, 2}, TensorOptions().dtype(kBool));
  kpm.index_put_({1, 0}, true);
  auto f2 = [&](const variable_list& in) {
    mha->in_proj_weight = in[2];
    return std::get<0>(mha(in[0], in[1], in[1], kpm));
  };
  check("mha gradgradcheck", [&] { return autograd::gradgradcheck(f2, {q, k, w}); });
}

namespace {

// Post- or pre-norm encoder layer composed from the MHA reference and public ops (dropout 0).
std::vector<double> encoder_ref(nn::TransformerEncoderLayerImpl& layer, const Tensor& x, const Tensor& src_mask) {
  auto add_for = [&](int64_t, int64_t) {
    if (!src_mask.defined()) return std::vector<double>();
    return vals(src_mask);
  };
  auto ln = [](const Tensor& t, nn::LayerNormImpl& n) {
    return tensor::layer_norm(t, {t.size(-1)}, n.weight, n.bias, n.options.eps());
  };
  auto sa = [&](const Tensor& t) {
    MHARef r = mha_ref(*layer.self_attn, t, t, t, add_for);
    return tensor::tensor(r.out, f64).reshape(t.sizes());
  };
  auto ff = [&](const Tensor& t) {
    return tensor::linear(tensor::relu(tensor::linear(t, layer.linear1->weight, layer.linear1->bias)),
                          layer.linear2->weight, layer.linear2->bias);
  };
  Tensor y;
  if (layer.options.norm_first()) {
    y = x + sa(ln(x, *layer.norm1));
    y = y + ff(ln(y, *layer.norm2));
  } else {
    y = ln(x + sa(x), *layer.norm1);
    y = ln(y + ff(y), *layer.norm2);
  }
  return vals(y);
}

}  // namespace

TEST(TransformerEncoderLayer, PostAndPreNormMatchComposedReference) {
  manual_seed(30);
  const double inf = std::numeric_limits<double>::infinity();
  for (bool norm_first : {false, true}) {
    nn::TransformerEncoderLayer layer(
        nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).norm_first(norm_first));
    layer->to(kFloat64);
    randomize(*layer);
    Tensor x = randn({5, 3, 8}, f64);
    NoGradGuard g;
    expect_near(vals(layer(x)), encoder_ref(*layer, x, Tensor()), 1e-10, norm_first ? "pre-norm" : "post-norm");
    // Causal float mask.
    Tensor m = zeros({5, 5}, f64);
    for (int i = 0; i < 5; ++i)
      for (int j = i + 1; j < 5; ++j) m.index_put_({i, j}, -inf);
    expect_near(vals(layer(x, m)), encoder_ref(*layer, x, m), 1e-10, "masked");
  }
}

TEST(TransformerEncoderLayer, DropoutOnlyInTraining) {
  manual_seed(31);
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.5));
  nn::TransformerEncoderLayer nodrop(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  nodrop->load_state_dict(layer->state_dict());
  Tensor x = randn({4, 2, 8});
  Tensor a = layer(x), b = layer(x);
  EXPECT_GT((a - b).abs().max().item<double>(), 1e-3);  // training: random masks differ
  layer->eval();
  nodrop->eval();
  expect_near(vals(layer(x)), vals(nodrop(x)), 1e-6, "eval = no dropout");
  expect_near(vals(layer(x)), vals(layer(x)), 0, "eval deterministic");
}

TEST(TransformerEncoderLayer, StructureGeluBatchFirstAndBackward) {
  manual_seed(32);
  nn::TransformerEncoderLayer layer(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).activation(kGELU).batch_first(true));
  std::vector<std::string> children;
  for (auto& kv : layer->named_children()) children.push_back(kv.key());
  EXPECT_EQ(children, (std::vector<std::string>{"self_attn", "linear1", "dropout", "linear2", "norm1", "norm2",
                                                "dropout1", "dropout2"}));
  EXPECT_EQ(layer->parameters().size(), 12u);
  Tensor x = randn({2, 5, 8}).requires_grad_();
  Tensor y = layer(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 5, 8}));
  // batch_first = the sequence-first layer on the transposed input (GELU activation).
  nn::TransformerEncoderLayer sf(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).activation(kGELU));
  sf->load_state_dict(layer->state_dict());
  expect_near(vals(sf(x.transpose(0, 1)).transpose(0, 1)), vals(y), 1e-5, "batch_first");
  // A custom activation and a padding mask run; gradients reach every parameter.
  y.pow(2).sum().backward();
  for (auto& p : layer->parameters()) EXPECT_TRUE(p.grad().defined());
  EXPECT_TRUE(x.grad().defined());
  nn::TransformerEncoderLayer custom(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).activation(
      std::function<Tensor(const Tensor&)>([](const Tensor& t) { return tensor::tanh(t); })));
  Tensor kpm = zeros({5, 2}, TensorOptions().dtype(kBool));
  kpm.index_put_({0, 1}, true);
  EXPECT_EQ(custom(randn({2, 5, 8}), Tensor(), kpm).sizes(), IntArrayRef({2, 5, 8}));
}
