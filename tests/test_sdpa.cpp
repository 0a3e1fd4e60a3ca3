// Fused attention (_scaled_dot_product_flash_attention_for_cpu, docs/attention.md): the fused
// path and the math path of scaled_dot_product_attention against a float64 reference loop,
// forward and backward (full-matrix formulas, independent of the tiling), for causal masks,
// bool / float / broadcast masks, L != S, non-contiguous inputs, sizes that are not multiples
// of the tile, float32, bfloat16 and float16; backend selection, the sdpa_kernel guard and its
// error, meta tensors, and bad arguments.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "kernels/cpu/FlashAttentionKernels.h"
#include "tests/test_util.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace tensor;
using tensor::testing::expect_error;
using tensor::testing::expect_near;
using tensor::testing::vals;
namespace F = tensor::nn::functional;
using tensor::nn::attention::SDPBackend;
using tensor::nn::attention::sdpa_kernel;

namespace {

const TensorOptions f64 = TensorOptions().dtype(kFloat64);
constexpr double kInf = std::numeric_limits<double>::infinity();

// Reference results for q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev], an additive mask
// broadcast to [B, H, L, S] (or undefined) and the output's gradient g.
struct Ref {
  std::vector<double> out, gq, gk, gv;
};

Ref reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& additive, bool causal, double scale,
              const Tensor& g) {
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3), S = k.size(2), Ev = v.size(3);
  const auto Q = vals(q), K = vals(k), V = vals(v), G = vals(g);
  const auto M = additive.defined() ? vals(additive.expand({B, H, L, S})) : std::vector<double>();
  Ref r{std::vector<double>(B * H * L * Ev), std::vector<double>(B * H * L * E), std::vector<double>(B * H * S * E),
        std::vector<double>(B * H * S * Ev)};
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const double *q0 = &Q[bh * L * E], *k0 = &K[bh * S * E], *v0 = &V[bh * S * Ev], *g0 = &G[bh * L * Ev];
    std::vector<double> P(L * S), dS(L * S);
    for (int64_t i = 0; i < L; ++i) {
      double mx = -kInf;
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e) s += q0[i * E + e] * k0[j * E + e];
        s = s * scale + (M.empty() ? 0.0 : M[(bh * L + i) * S + j]);
        if (causal && j > i) s = -kInf;
        P[i * S + j] = s;
        mx = std::max(mx, s);
      }
      double z = 0;
      for (int64_t j = 0; j < S; ++j) z += (P[i * S + j] = std::exp(P[i * S + j] - mx));
      for (int64_t j = 0; j < S; ++j) P[i * S + j] /= z;
      for (int64_t c = 0; c < Ev; ++c) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j) o += P[i * S + j] * v0[j * Ev + c];
        r.out[(bh * L + i) * Ev + c] = o;
      }
      // dP = g V^T, dS = P * (dP - sum_j P dP)
      double D = 0;
      for (int64_t j = 0; j < S; ++j) {
        double dp = 0;
        for (int64_t c = 0; c < Ev; ++c) dp += g0[i * Ev + c] * v0[j * Ev + c];
        dS[i * S + j] = dp;
        D += P[i * S + j] * dp;
      }
      for (int64_t j = 0; j < S; ++j) dS[i * S + j] = P[i * S + j] * (dS[i * S + j] - D);
    }
    for (int64_t i = 0; i < L; ++i)
      for (int64_t e = 0; e < E; ++e) {
        double a = 0;
        for (int64_t j = 0; j < S; ++j) a += dS[i * S + j] * k0[j * E + e];
        r.gq[(bh * L + i) * E + e] = a * scale;
      }
    for (int64_t j = 0; j < S; ++j) {
      for (int64_t e = 0; e < E; ++e) {
        double a = 0;
        for (int64_t i = 0; i < L; ++i) a += dS[i * S + j] * q0[i * E + e];
        r.gk[(bh * S + j) * E + e] = a * scale;
      }
      for (int64_t c = 0; c < Ev; ++c) {
        double a = 0;
        for (int64_t i = 0; i < L; ++i) a += P[i * S + j] * g0[i * Ev + c];
        r.gv[(bh * S + j) * Ev + c] = a;
      }
    }
  }
  return r;
}

struct Result {
  Tensor out, gq, gk, gv;
  std::string node;
};

// scaled_dot_product_attention restricted to `backend`, with the gradients of sum(out * g).
Result run(SDPBackend backend, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
        std::optional<double> scale, const Tensor& g) {
  sdpa_kernel guard({backend});
  Tensor ql = q.detach().requires_grad_(), kl = k.detach().requires_grad_(), vl = v.detach().requires_grad_();
  Result r;
  r.out = F::scaled_dot_product_attention(ql, kl, vl, mask, 0.0, causal, scale);
  r.node = r.out.grad_fn() ? r.out.grad_fn()->name() : "";
  r.out.backward(g);
  r.gq = ql.grad(), r.gk = kl.grad(), r.gv = vl.grad();
  return r;
}

const char* kFlashNode = "ScaledDotProductFlashAttentionForCpuBackward0";

// Fused and math paths against the reference, in float64 (and the fused one again in float32).
void check_case(const std::string& what, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                const Tensor& additive, bool causal, std::optional<double> scale = std::nullopt) {
  SCOPED_TRACE(what);
  const double sc = scale.value_or(1 / std::sqrt(static_cast<double>(q.size(-1))));
  std::vector<int64_t> osz(q.sizes().begin(), q.sizes().end());
  osz.back() = v.size(-1);
  Tensor g = randn(osz, f64);
  const Ref ref = reference(q.contiguous(), k.contiguous(), v.contiguous(), additive, causal, sc, g);
  for (SDPBackend b : {SDPBackend::Flash, SDPBackend::Math}) {
    const std::string name = what + (b == SDPBackend::Flash ? " (flash)" : " (math)");
    Result r = run(b, q, k, v, mask, causal, scale, g);
    if (b == SDPBackend::Flash) EXPECT_EQ(r.node, kFlashNode) << name;
    else EXPECT_NE(r.node, kFlashNode) << name;
    expect_near(vals(r.out), ref.out, 1e-10, name + " out");
    expect_near(vals(r.gq), ref.gq, 1e-10, name + " grad q");
    expect_near(vals(r.gk), ref.gk, 1e-10, name + " grad k");
    expect_near(vals(r.gv), ref.gv, 1e-10, name + " grad v");
  }
  // float32 through the fused kernel: float accumulation.
  Tensor m32 = mask.defined() && mask.is_floating_point() ? mask.to(kFloat32) : mask;
  Result r = run(SDPBackend::Flash, q.to(kFloat32), k.to(kFloat32), v.to(kFloat32), m32, causal, scale,
              g.to(kFloat32));
  expect_near(vals(r.out), ref.out, 2e-5, what + " float32 out");
  expect_near(vals(r.gq), ref.gq, 1e-4, what + " float32 grad q");
  expect_near(vals(r.gk), ref.gk, 1e-4, what + " float32 grad k");
  expect_near(vals(r.gv), ref.gv, 1e-4, what + " float32 grad v");
}

}  // namespace

// Sizes that are not multiples of the 64 x 64 tile, and span several tiles.
constexpr int64_t kL = 70, kS = 131;
static_assert(kL % cpu::kFlashBlockQ != 0 && kS % cpu::kFlashBlockK != 0 && kS > 2 * cpu::kFlashBlockK);

TEST(FlashAttention, PlainAndScale) {
  manual_seed(1);
  Tensor q = randn({2, 3, kL, 16}, f64), k = randn({2, 3, kS, 16}, f64), v = randn({2, 3, kS, 24}, f64);
  check_case("plain", q, k, v, {}, {}, false);
  // A large scale makes the running max move between key tiles (the rescaling path).
  check_case("scale 2.5", q, k, v, {}, {}, false, 2.5);
}

TEST(FlashAttention, CausalLqNotLk) {
  manual_seed(2);
  for (auto [L, S] : {std::pair<int64_t, int64_t>{kL, kS}, {kS, kL}, {kS, kS}}) {
    Tensor q = randn({1, 2, L, 8}, f64), k = randn({1, 2, S, 8}, f64), v = randn({1, 2, S, 5}, f64);
    check_case("causal L=" + std::to_string(L) + " S=" + std::to_string(S), q, k, v, {}, {}, true);
  }
}

TEST(FlashAttention, BoolAndFloatMasksBroadcast) {
  manual_seed(3);
  const int64_t B = 2, H = 2, E = 8;
  Tensor q = randn({B, H, kL, E}, f64), k = randn({B, H, kS, E}, f64), v = randn({B, H, kS, E}, f64);
  // Bool [L, S] (true = attend), every row keeps key 100 (in the second tile).
  Tensor allowed = gt(rand({kL, kS}), 0.5);
  allowed.select(1, 100).fill_(true);
  Tensor add = zeros({kL, kS}, f64).masked_fill(allowed.logical_not(), -kInf);
  check_case("bool [L, S]", q, k, v, allowed, add, false);
  // Bool [B, 1, L, S].
  Tensor allowed4 = gt(rand({B, 1, kL, kS}), 0.3);
  allowed4.select(3, 0).fill_(true);
  check_case("bool [B, 1, L, S]", q, k, v, allowed4, zeros({B, 1, kL, kS}, f64).masked_fill(allowed4.logical_not(), -kInf),
             false);
  // Float, full and broadcast over batch and queries.
  Tensor full = randn({B, H, kL, kS}, f64);
  check_case("float [B, H, L, S]", q, k, v, full, full, false);
  Tensor bc = randn({1, H, 1, kS}, f64);
  check_case("float [1, H, 1, S]", q, k, v, bc, bc, false);
}

TEST(FlashAttention, NonContiguousInputs) {
  manual_seed(4);
  // [B, L, H, E] transposed to [B, H, L, E], as after a head split; v a strided slice.
  Tensor q = randn({2, kL, 3, 8}, f64).transpose(1, 2);
  Tensor k = randn({2, kS, 3, 8}, f64).transpose(1, 2);
  Tensor v = randn({2, 3, kS, 12}, f64).slice(3, 0, 12, 2);
  ASSERT_FALSE(q.is_contiguous() || k.is_contiguous() || v.is_contiguous());
  check_case("transposed q/k, strided v", q, k, v, {}, {}, true);
  // 3-D inputs [N, L, E]: the composite views them as [1, N, L, E] and still fuses.
  Tensor q3 = randn({3, kL, 8}, f64), k3 = randn({3, kS, 8}, f64), v3 = randn({3, kS, 4}, f64);
  EXPECT_EQ(nn::attention::_fused_sdp_choice(q3, k3, v3), SDPBackend::Flash);
  Tensor g = randn({3, kL, 4}, f64);
  Result r = run(SDPBackend::Flash, q3, k3, v3, {}, false, std::nullopt, g);
  EXPECT_EQ(r.out.sizes(), IntArrayRef({3, kL, 4}));
  const Ref ref = reference(q3.unsqueeze(0), k3.unsqueeze(0), v3.unsqueeze(0), {}, false, 1 / std::sqrt(8.0),
                            g.unsqueeze(0));
  expect_near(vals(r.out), ref.out, 1e-10, "3-D out");
  expect_near(vals(r.gk), ref.gk, 1e-10, "3-D grad k");
}

TEST(FlashAttention, ReducedPrecision) {
  manual_seed(5);
  Tensor q = randn({1, 2, kL, 32}, f64), k = randn({1, 2, kS, 32}, f64), v = randn({1, 2, kS, 32}, f64);
  Tensor g = randn({1, 2, kL, 32}, f64);
  for (ScalarType t : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(t == kBFloat16 ? "bfloat16" : "float16");
    // The reference sees the rounded inputs, so the tolerance covers the output's rounding and
    // the float accumulation only.
    Tensor qr = q.to(t), kr = k.to(t), vr = v.to(t), gr = g.to(t);
    const Ref ref = reference(qr.to(kFloat64), kr.to(kFloat64), vr.to(kFloat64), {}, true, 1 / std::sqrt(32.0),
                              gr.to(kFloat64));
    const double tol = t == kBFloat16 ? 2e-2 : 4e-3;
    Result r = run(SDPBackend::Flash, qr, kr, vr, {}, true, std::nullopt, gr);
    EXPECT_EQ(r.out.scalar_type(), t);
    EXPECT_EQ(r.gq.scalar_type(), t);
    expect_near(vals(r.out), ref.out, tol, "out");
    expect_near(vals(r.gq), ref.gq, tol, "grad q");
    expect_near(vals(r.gk), ref.gk, tol, "grad k");
    expect_near(vals(r.gv), ref.gv, tol, "grad v");
    // The logsumexp is float32.
    auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(qr, kr, vr, 0.0, true);
    EXPECT_EQ(lse.scalar_type(), kFloat32);
  }
}

TEST(FlashAttention, LogSumExpAndDirectBackward) {
  manual_seed(6);
  Tensor q = randn({1, 1, 5, 4}, f64), k = randn({1, 1, 9, 4}, f64), v = randn({1, 1, 9, 3}, f64);
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, std::nullopt, 0.5);
  EXPECT_EQ(lse.sizes(), IntArrayRef({1, 1, 5}));
  // lse[i] = log sum_j exp(0.5 * q_i . k_j)
  Tensor s = matmul(q, k.transpose(-2, -1)) * 0.5;
  expect_near(vals(lse), vals(s.exp().sum({-1}).log()), 1e-12, "lse");
  Tensor g = randn({1, 1, 5, 3}, f64);
  auto [gq, gk, gv] = _scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, out, lse, 0.0, false,
                                                                          std::nullopt, 0.5);
  const Ref ref = reference(q, k, v, {}, false, 0.5, g);
  expect_near(vals(gq), ref.gq, 1e-12, "grad q");
  expect_near(vals(gk), ref.gk, 1e-12, "grad k");
  expect_near(vals(gv), ref.gv, 1e-12, "grad v");
}

TEST(FlashAttention, FullyMaskedRowIsNaNAsMath) {
  Tensor q = randn({1, 1, 3, 4}, f64), k = randn({1, 1, 5, 4}, f64), v = randn({1, 1, 5, 2}, f64);
  Tensor allowed = ones({3, 5}, TensorOptions(kBool));
  allowed.select(0, 1).fill_(false);  // query 1 sees no key
  for (SDPBackend b : {SDPBackend::Flash, SDPBackend::Math}) {
    sdpa_kernel guard(b);
    auto o = vals(F::scaled_dot_product_attention(q, k, v, allowed));
    EXPECT_TRUE(std::isnan(o[2]) && std::isnan(o[3])) << static_cast<int>(b);
    EXPECT_FALSE(std::isnan(o[0]) || std::isnan(o[4])) << static_cast<int>(b);
  }
}

TEST(FlashAttention, DoubleBackwardMatchesMath) {
  manual_seed(7);
  Tensor q = randn({1, 2, 6, 3}, f64), k = randn({1, 2, 7, 3}, f64), v = randn({1, 2, 7, 2}, f64);
  std::vector<std::vector<double>> results;
  for (SDPBackend b : {SDPBackend::Flash, SDPBackend::Math}) {
    sdpa_kernel guard(b);
    Tensor ql = q.detach().requires_grad_(), kl = k.detach().requires_grad_(), vl = v.detach().requires_grad_();
    Tensor out = F::scaled_dot_product_attention(ql, kl, vl, {}, 0.0, true);
    auto gs = autograd::grad({out.pow(2).sum()}, {ql, kl, vl}, {}, std::nullopt, /*create_graph=*/true);
    Tensor h = (gs[0].sin().sum() + gs[1].pow(2).sum() + gs[2].sum());
    auto gg = autograd::grad({h}, {ql, kl, vl});
    results.push_back(vals(cat({gg[0].flatten(), gg[1].flatten(), gg[2].flatten()})));
  }
  expect_near(results[0], results[1], 1e-10, "second derivatives");
}

TEST(SDPASelection, RulesAndGuard) {
  Tensor q = randn({1, 2, 4, 8}), k = randn({1, 2, 5, 8}), v = randn({1, 2, 5, 8});
  using nn::attention::_fused_sdp_choice;
  using nn::attention::allowed_sdp_backends;
  EXPECT_EQ(allowed_sdp_backends().size(), 4u);
  EXPECT_EQ(_fused_sdp_choice(q, k, v), SDPBackend::Flash);
  EXPECT_EQ(_fused_sdp_choice(q.to(kBFloat16), k.to(kBFloat16), v.to(kBFloat16)), SDPBackend::Flash);
  // Dropout, broadcast leading dims, a mask that requires grad, 5-D: math.
  EXPECT_EQ(_fused_sdp_choice(q, k, v, {}, 0.1), SDPBackend::Math);
  EXPECT_EQ(_fused_sdp_choice(q, k.expand({1, 2, 5, 8}).select(1, 0).unsqueeze(1), v), SDPBackend::Math);
  Tensor m = zeros({4, 5}).requires_grad_();
  EXPECT_EQ(_fused_sdp_choice(q, k, v, m), SDPBackend::Math);
  {
    NoGradGuard no_grad;
    EXPECT_EQ(_fused_sdp_choice(q, k, v, m), SDPBackend::Flash);
  }
  // The mask's gradient comes from the math path.
  F::scaled_dot_product_attention(q, k, v, m).sum().backward();
  ASSERT_TRUE(m.grad().defined());
  // A mask's gradient is dS summed over (B, H): each softmax row's sums to 0, and is not 0.
  expect_near(vals(m.grad().sum({1})), std::vector<double>(4, 0.0), 1e-5, "mask grad rows");
  EXPECT_GT(m.grad().abs().sum().item<double>(), 0.1);
  EXPECT_EQ(_fused_sdp_choice(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)), SDPBackend::Math);
  // A mask that enlarges the output's leading dims (3-D q, 4-D mask): math, which broadcasts.
  Tensor q3 = q.select(0, 0), k3 = k.select(0, 0), v3 = v.select(0, 0), m4 = randn({3, 2, 4, 5});
  EXPECT_EQ(_fused_sdp_choice(q3, k3, v3, m4), SDPBackend::Math);
  EXPECT_EQ(F::scaled_dot_product_attention(q3, k3, v3, m4).sizes(), IntArrayRef({3, 2, 4, 8}));
  EXPECT_EQ(_fused_sdp_choice(q3, k3, v3, m4.select(0, 1)), SDPBackend::Flash);
  {
    sdpa_kernel guard({SDPBackend::Math});
    EXPECT_EQ(_fused_sdp_choice(q, k, v), SDPBackend::Math);
    ASSERT_EQ(allowed_sdp_backends().size(), 1u);
    {
      sdpa_kernel inner({SDPBackend::Flash, SDPBackend::CuDNN});
      EXPECT_EQ(_fused_sdp_choice(q, k, v), SDPBackend::Flash);
    }
    EXPECT_EQ(allowed_sdp_backends(), std::vector<SDPBackend>{SDPBackend::Math});
  }
  EXPECT_EQ(allowed_sdp_backends().size(), 4u);
  // Only Flash allowed, and it cannot run dropout: the error says why.
  {
    sdpa_kernel guard(SDPBackend::Flash);
    expect_error([&] { F::scaled_dot_product_attention(q, k, v, {}, 0.2); },
                 {"scaled_dot_product_attention", "no allowed backend", "[1, 2, 4, 8]", "float32", "Flash", "dropout"});
  }
  {
    sdpa_kernel guard({SDPBackend::EfficientAttention, SDPBackend::CuDNN});
    expect_error([&] { F::scaled_dot_product_attention(q, k, v); },
                 {"scaled_dot_product_attention", "EfficientAttention", "CuDNN", "CUDA"});
  }
  expect_error([&] { sdpa_kernel guard(std::vector<SDPBackend>{}); }, {"sdpa_kernel", "at least one backend"});
  EXPECT_EQ(allowed_sdp_backends().size(), 4u);
}

TEST(FlashAttention, MetaTensors) {
  const TensorOptions meta = TensorOptions().device(kMeta);
  Tensor q = empty({2, 3, 100, 16}, meta), k = empty({2, 3, 7, 16}, meta), v = empty({2, 3, 7, 5}, meta);
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true);
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 100, 5}));
  EXPECT_EQ(lse.sizes(), IntArrayRef({2, 3, 100}));
  EXPECT_EQ(lse.scalar_type(), kFloat32);
  EXPECT_EQ(F::scaled_dot_product_attention(q, k, v).sizes(), IntArrayRef({2, 3, 100, 5}));
  auto [gq, gk, gv] = _scaled_dot_product_flash_attention_for_cpu_backward(empty({2, 3, 100, 5}, meta), q, k, v, out,
                                                                          lse, 0.0, true);
  EXPECT_EQ(gk.sizes(), k.sizes());
  EXPECT_EQ(gv.sizes(), v.sizes());
}

TEST(FlashAttention, EmptyKeysGiveZeros) {
  Tensor q = randn({1, 1, 3, 4}), k = randn({1, 1, 0, 4}), v = randn({1, 1, 0, 2});
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v);
  expect_near(vals(out), std::vector<double>(6, 0.0), 0, "out");
  expect_near(vals(out), vals(F::scaled_dot_product_attention(q, k, v.to(kFloat32))), 0, "as math");
}

TEST(FlashAttention, BadArguments) {
  const char* op = "_scaled_dot_product_flash_attention_for_cpu";
  Tensor q = randn({1, 2, 4, 8}), k = randn({1, 2, 5, 8}), v = randn({1, 2, 5, 3});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q.select(0, 0), k, v); }, {op, "4-D", "[2, 4, 8]"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, randn({1, 2, 5, 7}), v); },
               {op, "[1, 2, 5, 7]", "[1, 2, 4, 8]"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, randn({1, 2, 6, 3})); }, {op, "[1, 2, 6, 3]"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, randn({2, 2, 5, 3})); },
               {op, "no broadcasting"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k.to(kFloat64), v); }, {op, "float64", "float32"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q.to(kInt32), k.to(kInt32), v.to(kInt32)); },
               {op, "int32"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.1); }, {op, "dropout_p"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, zeros({3, 5})); },
               {op, "attn_mask", "[3, 5]", "does not broadcast", "[1, 2, 4, 5]"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, zeros({4, 5}, TensorOptions(kInt64))); },
               {op, "bool or floating"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true, ones({4, 5}, TensorOptions(kBool))); },
               {op, "is_causal"});
  Tensor m = zeros({4, 5}).requires_grad_();
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, m); },
               {op, "requires grad", "math backend"});
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v);
  const char* bop = "_scaled_dot_product_flash_attention_for_cpu_backward";
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu_backward(randn({1, 2, 4, 2}), q, k, v, out, lse, 0.0, false); },
               {bop, "grad_out", "[1, 2, 4, 2]"});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu_backward(out, q, k, v, out, lse.select(2, 0), 0.0, false); },
               {bop, "logsumexp", "[1, 2]"});
  // The composite's own checks.
  expect_error([&] { F::scaled_dot_product_attention(q, k, randn({1, 2, 6, 3})); },
               {"scaled_dot_product_attention", "[1, 2, 6, 3]"});
}

// MultiheadAttention without need_weights goes through scaled_dot_product_attention (fused on
// CPU); with need_weights it keeps the math path, which returns the weights. Same outputs.
TEST(FlashAttention, MultiheadAttentionWithoutWeightsFuses) {
  manual_seed(8);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(16, 2));
  Tensor x = randn({kL, 2, 16});
  Tensor mask = gt(rand({kL, kL}), 0.8);  // true = not allowed (MultiheadAttention's convention)
  mask.select(1, 0).fill_(false);
  auto [o1, w1] = mha->forward(x, x, x, {}, /*need_weights=*/true, mask);
  Tensor o2;
  {
    sdpa_kernel guard(SDPBackend::Flash);  // the call below must be able to run fused
    Tensor w2;
    std::tie(o2, w2) = mha->forward(x, x, x, {}, /*need_weights=*/false, mask);
    EXPECT_FALSE(w2.defined());
  }
  EXPECT_TRUE(w1.defined());
  expect_near(vals(o2), vals(o1), 1e-5, "MultiheadAttention output");
}

// One (batch, head) pair and two threads: the backward splits into a pass over key blocks and
// one over query blocks (Note [Flash attention on CPU]).
TEST(FlashAttention, SplitBackwardWithFewHeads) {
  manual_seed(9);
  const int before = get_num_threads();
  set_num_threads(2);
  Tensor q = randn({1, 1, kS, 16}, f64), k = randn({1, 1, kS + 7, 16}, f64), v = randn({1, 1, kS + 7, 8}, f64);
  check_case("one head, causal", q, k, v, {}, {}, true);
  Tensor m = randn({kS, kS + 7}, f64);
  check_case("one head, float mask", q, k, v, m, m, false);
  set_num_threads(before);
}

// One query (decoding) over many keys, and many queries over one key; a head dim of 1.
TEST(FlashAttention, DegenerateLengths) {
  manual_seed(10);
  check_case("L = 1", randn({2, 2, 1, 16}, f64), randn({2, 2, 200, 16}, f64), randn({2, 2, 200, 3}, f64), {}, {}, false);
  check_case("S = 1", randn({1, 2, 90, 4}, f64), randn({1, 2, 1, 4}, f64), randn({1, 2, 1, 33}, f64), {}, {}, true);
  check_case("E = 1", randn({1, 1, 65, 1}, f64), randn({1, 1, 65, 1}, f64), randn({1, 1, 65, 1}, f64), {}, {}, false);
}
