// Derivatives of the convolutions (src/autograd/ConvFormulas.cpp): gradcheck in float64 of
// conv1d/2d/3d and conv_transpose1d/2d/3d with bias, groups, stride, dilation and every
// padding form, on contiguous, non-contiguous and channels-last inputs; gradgradcheck through
// the differentiable backward (create_graph); the oneDNN backward (float32, bfloat16, float16)
// against float64; only the gradients that are needed.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/grad_test_util.h"

using namespace tensor;
using autograd::variable_list;
using F = std::function<Tensor(const variable_list&)>;
using tensor::testing::check;

namespace {

Tensor leaf(std::vector<int64_t> shape, ScalarType t = kFloat64) {
  return randn(shape, t).detach().requires_grad_(true);
}

/// A (N, C, spatial...) tensor with the same values laid out channels-last.
Tensor channels_last(const Tensor& t) {
  std::vector<int64_t> to{0}, back{0, t.dim() - 1};
  for (int64_t d = 2; d < t.dim(); ++d) to.push_back(d);
  to.push_back(1);
  for (int64_t d = 1; d < t.dim() - 1; ++d) back.push_back(d);
  return t.permute(to).contiguous().permute(back);
}

/// One case: the op as a function of (input, weight[, bias]) and the shapes of those.
struct GradCase {
  std::string name;
  std::vector<int64_t> x, w;
  int64_t bias = 0;  // bias length, 0 for none
  std::function<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&)> op;
  bool second = true;  // run gradgradcheck too
};

std::vector<GradCase> cases() {
  using B = std::optional<Tensor>;
  return {
      {"conv1d stride 2 pad 1 dilation 2", {2, 2, 9}, {3, 2, 3}, 3,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv1d(x, w, b, 2, 1, 2); }},
      {"conv1d groups 2 same", {1, 4, 7}, {2, 2, 4}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv1d(x, w, b, 1, "same", 1, 2); }},
      {"conv1d unbatched", {3, 6}, {2, 3, 2}, 0,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv1d(x, w, b); }},
      {"conv2d basic", {2, 3, 5, 4}, {2, 3, 3, 3}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv2d(x, w, b, 1, 1); }},
      {"conv2d stride per-dim pad dilation", {1, 2, 7, 6}, {3, 2, 3, 2}, 3,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv2d(x, w, b, {2, 1}, {1, 0}, {1, 2}); }},
      {"conv2d stride 2 unused tail", {2, 2, 6, 6}, {2, 2, 3, 3}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv2d(x, w, b, 2, 0); }},
      {"conv2d groups 2", {2, 4, 4, 5}, {4, 2, 2, 3}, 4,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv2d(x, w, b, 1, 1, 1, 2); }},
      {"conv2d depthwise", {1, 3, 5, 5}, {3, 1, 3, 3}, 3,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv2d(x, w, b, 2, 1, 1, 3); }},
      {"conv2d same even kernel dilation 2", {1, 2, 5, 6}, {2, 2, 2, 3}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv2d(x, w, b, 1, "same", 2); }},
      {"conv2d valid unbatched", {2, 5, 4}, {3, 2, 2, 2}, 3,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv2d(x, w, b, 1, "valid"); }},
      {"conv3d stride pad groups", {1, 2, 4, 5, 4}, {2, 1, 2, 3, 2}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv3d(x, w, b, {2, 1, 1}, {1, 1, 0}, 1, 2); }},
      {"conv3d dilation", {1, 1, 5, 4, 5}, {2, 1, 2, 2, 2}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv3d(x, w, b, 1, 0, {2, 1, 2}); }},
      {"conv_transpose2d basic", {2, 2, 3, 4}, {2, 3, 3, 3}, 3,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv_transpose2d(x, w, b); }},
      {"conv_transpose2d stride 2 pad 1 output_padding 1", {1, 3, 3, 3}, {3, 2, 3, 3}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv_transpose2d(x, w, b, 2, 1, 1); }},
      {"conv_transpose2d output_padding > padding", {1, 2, 3, 2}, {2, 2, 2, 2}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv_transpose2d(x, w, b, 3, 0, {2, 1}); }},
      {"conv_transpose2d groups dilation", {2, 4, 3, 3}, {4, 1, 2, 3}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv_transpose2d(x, w, b, {1, 2}, {0, 1}, 0, 2, {2, 1}); }},
      {"conv_transpose2d unbatched", {2, 3, 3}, {2, 2, 2, 2}, 0,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv_transpose2d(x, w, b, 2); }},
      {"conv_transpose1d", {2, 2, 5}, {2, 3, 3}, 3,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv_transpose1d(x, w, b, 2, 1, 1); }},
      {"conv_transpose3d", {1, 2, 2, 3, 2}, {2, 2, 2, 2, 2}, 2,
       [](const Tensor& x, const Tensor& w, const B& b) { return conv_transpose3d(x, w, b, {2, 1, 1}, 0, {1, 0, 0}); },
       false},
  };
}

F as_fn(const GradCase& c) {
  return [c](const variable_list& in) {
    return c.op(in[0], in[1], in.size() > 2 ? std::optional<Tensor>(in[2]) : std::nullopt);
  };
}

variable_list inputs_of(const GradCase& c) {
  variable_list in{leaf(c.x), leaf(c.w)};
  if (c.bias) in.push_back(leaf({c.bias}));
  return in;
}

}  // namespace

TEST(ConvGradcheck, FirstOrder) {
  manual_seed(10);
  for (const GradCase& c : cases()) {
    SCOPED_TRACE(c.name);
    variable_list in = inputs_of(c);
    EXPECT_TRUE(as_fn(c)(in).requires_grad());
    if (c.x.size() == c.w.size()) EXPECT_EQ(as_fn(c)(in).grad_fn()->name(), "ConvolutionBackward0");
    check(c.name + " gradcheck", [&] { return autograd::gradcheck(as_fn(c), in); });
  }
}

TEST(ConvGradcheck, NonContiguousAndChannelsLast) {
  manual_seed(11);
  for (const GradCase& c : cases()) {
    if (c.x.size() != c.w.size()) continue;  // batched only
    SCOPED_TRACE(c.name);
    variable_list in = inputs_of(c);
    // The input as a transposed view, and as channels-last.
    F transposed_view = [c](const variable_list& v) {
      Tensor x = v[0].transpose(-1, -2).contiguous().transpose(-1, -2);
      return c.op(x, v[1], v.size() > 2 ? std::optional<Tensor>(v[2]) : std::nullopt);
    };
    F cl = [c](const variable_list& v) {
      return c.op(channels_last(v[0]), channels_last(v[1]), v.size() > 2 ? std::optional<Tensor>(v[2]) : std::nullopt);
    };
    check(c.name + " transposed view", [&] { return autograd::gradcheck(transposed_view, in); });
    check(c.name + " channels-last", [&] { return autograd::gradcheck(cl, in); });
  }
}

TEST(ConvGradcheck, SecondOrder) {
  manual_seed(12);
  for (const GradCase& c : cases()) {
    if (!c.second) continue;
    SCOPED_TRACE(c.name);
    check(c.name + " gradgradcheck", [&] { return autograd::gradgradcheck(as_fn(c), inputs_of(c)); });
  }
}

TEST(ConvGradcheck, OnlyNeededGradients) {
  manual_seed(13);
  Tensor x = randn({2, 3, 6, 6}, kFloat64), w = leaf({4, 3, 3, 3}), b = randn({4}, kFloat64);
  conv2d(x, w, b, 1, 1).sum().backward();
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  // d(sum y)/dw[o, c, i, j] = sum over batch and output positions of the input window.
  Tensor expect = zeros({4, 3, 3, 3}, kFloat64);
  Tensor xp = zeros({2, 3, 8, 8}, kFloat64);
  xp.slice(2, 1, 7).slice(3, 1, 7).copy_(x);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j)
      expect.select(2, i).select(2, j).copy_(xp.slice(2, i, i + 6).slice(3, j, j + 6).sum({0, 2, 3}).expand({4, 3}));
  EXPECT_TRUE(w.grad().allclose(expect, 1e-12, 1e-12));
  // Only the input.
  Tensor xi = leaf({2, 3, 6, 6});
  conv2d(xi, w.detach(), {}, 2).sum().backward();
  EXPECT_TRUE(xi.grad().defined());
}

// ---- the oneDNN backward against float64 ----

namespace {
/// A fixed, non-uniform upstream gradient shaped like y (the same values for every dtype).
Tensor upstream(const Tensor& y) {
  return (arange(y.numel(), kFloat64) * 0.37).sin().reshape(y.sizes()).to(y.dtype());
}

struct Grads {
  Tensor y, gx, gw, gb;
};
Grads run(const GradCase& c, const variable_list& in64, ScalarType t, bool cl, bool create_graph = false) {
  Tensor x = in64[0].detach().to(t), w = in64[1].detach().to(t);
  if (cl) {
    x = channels_last(x);
    w = channels_last(w);
  }
  x.requires_grad_(true);
  w.requires_grad_(true);
  Tensor b = in64.size() > 2 ? in64[2].detach().to(t).requires_grad_(true) : Tensor();
  Tensor y = c.op(x, w, b.defined() ? std::optional<Tensor>(b) : std::nullopt);
  // A non-uniform upstream gradient.
  Tensor g = upstream(y);
  variable_list wrt{x, w};
  if (b.defined()) wrt.push_back(b);
  variable_list gr = autograd::grad({y}, wrt, {g}, true, create_graph);
  return {y, gr[0], gr[1], b.defined() ? gr[2] : Tensor()};
}
}  // namespace

namespace {
/// Max |a - b| relative to max |b| (and 1).
double rel_err(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  if (a.sizes() != b.sizes()) return 1e9;
  Tensor d = (a.detach().to(kFloat64) - b.detach().to(kFloat64)).abs().max();
  double scale = std::max(1.0, b.detach().to(kFloat64).abs().max().item<double>());
  return d.item<double>() / scale;
}

void compare(const Grads& got, const Grads& ref, double tol) {
  EXPECT_LT(rel_err(got.y, ref.y), tol) << "output";
  EXPECT_LT(rel_err(got.gx, ref.gx), tol) << "grad_input";
  EXPECT_LT(rel_err(got.gw, ref.gw), tol) << "grad_weight";
  if (ref.gb.defined()) EXPECT_LT(rel_err(got.gb, ref.gb), tol) << "grad_bias";
}
}  // namespace

TEST(ConvBackward, Float32MatchesFloat64) {
  manual_seed(14);
  for (const GradCase& c : cases()) {
    SCOPED_TRACE(c.name);
    variable_list in = inputs_of(c);
    Grads ref = run(c, in, kFloat64, false);
    compare(run(c, in, kFloat32, false), ref, 1e-5);
    if (c.x.size() == c.w.size()) {
      SCOPED_TRACE("channels-last");
      Grads cl = run(c, in, kFloat32, true);
      compare(cl, ref, 1e-5);
    }
  }
}

TEST(ConvBackward, DifferentiablePathMatchesFastPath) {
  // create_graph computes the gradients with convolutions (Note [Convolution backward]); on
  // float32 they run on oneDNN too, with negative right padding where the sizes need it.
  manual_seed(15);
  for (const GradCase& c : cases()) {
    SCOPED_TRACE(c.name);
    variable_list in = inputs_of(c);
    compare(run(c, in, kFloat32, false, /*create_graph=*/true), run(c, in, kFloat32, false), 1e-5);
    compare(run(c, in, kFloat64, false, /*create_graph=*/true), run(c, in, kFloat64, false), 1e-12);
  }
}

TEST(ConvBackward, BFloat16AndFloat16) {
  manual_seed(16);
  for (const GradCase& c : cases()) {
    SCOPED_TRACE(c.name);
    variable_list in = inputs_of(c);
    // Inputs rounded to bf16 first, so both sides see the same numbers.
    variable_list rounded;
    for (const Tensor& t : in) rounded.push_back(t.detach().to(kBFloat16).to(kFloat64).requires_grad_(true));
    Grads ref = run(c, rounded, kFloat32, false);
    Grads bf = run(c, rounded, kBFloat16, false);
    EXPECT_EQ(bf.gw.dtype(), kBFloat16);
    compare(bf, ref, 2e-2);
    Grads h = run(c, rounded, kFloat16, false);
    EXPECT_EQ(h.gx.dtype(), kFloat16);
    compare(h, ref, 3e-3);
  }
}

TEST(ConvBackward, TrainingLoopAccumulates) {
  manual_seed(17);
  Tensor x = randn({4, 3, 10, 10}), w = leaf({8, 3, 3, 3}, kFloat32), b = leaf({8}, kFloat32);
  for (int i = 0; i < 3; ++i) conv2d(x, w, b, 1, 1).pow(2).mean().backward();
  Tensor w1 = w.detach().clone().requires_grad_(true), b1 = b.detach().clone().requires_grad_(true);
  conv2d(x, w1, b1, 1, 1).pow(2).mean().backward();
  EXPECT_TRUE(w.grad().allclose(w1.grad() * 3, 1e-5, 1e-6));
  EXPECT_TRUE(b.grad().allclose(b1.grad() * 3, 1e-5, 1e-6));
}

TEST(ConvBackward, DoubleBackwardFloat32MatchesFloat64) {
  // Second derivatives on oneDNN: the convolutions recorded by the differentiable backward run
  // their own backward on the fast path, including negative right padding (trimmed tails).
  manual_seed(18);
  for (const GradCase& c : cases()) {
    SCOPED_TRACE(c.name);
    variable_list in = inputs_of(c);
    auto second = [&](ScalarType t) {
      Tensor x = in[0].detach().to(t).requires_grad_(true), w = in[1].detach().to(t).requires_grad_(true);
      Tensor y = c.op(x, w, std::nullopt);
      variable_list g = autograd::grad({y}, {x, w}, {upstream(y)}, true, /*create_graph=*/true);
      Tensor loss = (g[0] * g[0]).sum() + (g[1] * g[1]).sum() + (g[0].sum() * y.sum());
      loss.backward();
      return std::make_pair(x.grad(), w.grad());
    };
    auto [gx64, gw64] = second(kFloat64);
    auto [gx32, gw32] = second(kFloat32);
    EXPECT_LT(rel_err(gx32, gx64), 1e-4);
    EXPECT_LT(rel_err(gw32, gw64), 1e-4);
  }
}
