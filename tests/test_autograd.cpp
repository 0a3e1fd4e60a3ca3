// Autograd engine: the seed's worked example, accumulation, retain_graph, grad(), hooks,
// grad mode, in-place rules, deep graphs and threads.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <thread>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::error_of;

TEST(Autograd, SeedWorkedExampleFloat64) {
  Tensor x = tensor::tensor({0.5, 0.75}, dtype(kFloat64).requires_grad(true));
  Tensor y = tensor::log(x[0] * x[1]) * tensor::sin(x[1]);
  y.backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_NEAR(x.grad()[0].item<double>(), 1.3632775200466682, 1e-12);
  EXPECT_NEAR(x.grad()[1].item<double>(), 0.19118983333660755, 1e-12);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward0");
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
}

TEST(Autograd, SeedWorkedExampleFloat32AndSeedGradient) {
  Tensor x = tensor::tensor({0.5, 0.75}, tensor::requires_grad());
  Tensor y = tensor::log(x[0] * x[1]) * tensor::sin(x[1]);
  y.backward(tensor::tensor(2.0), /*retain_graph=*/true);
  EXPECT_NEAR(x.grad()[0].item<float>(), 2 * 1.3633f, 2e-4);
  EXPECT_NEAR(x.grad()[1].item<float>(), 2 * 0.1912f, 2e-4);
  // With retain_graph the graph can run again and gradients accumulate.
  y.backward(tensor::tensor(2.0));
  EXPECT_NEAR(x.grad()[0].item<float>(), 4 * 1.3633f, 4e-4);
  // Without it, a third run fails clearly.
  std::string msg = error_of([&] { y.backward(); });
  EXPECT_NE(msg.find("backward through the graph a second time"), std::string::npos) << msg;
  x.mutable_grad() = Tensor();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, SharedInputGradientsAreSummed) {
  Tensor x = tensor::tensor({3.0}, dtype(kFloat64).requires_grad(true));
  Tensor y = x * x + x.exp() + x;  // dy/dx = 2x + e^x + 1
  y.sum().backward();
  EXPECT_NEAR(x.grad()[0].item<double>(), 6 + std::exp(3.0) + 1, 1e-12);
}

TEST(Autograd, BroadcastGradientsReduceToInputShape) {
  Tensor a = tensor::ones({3, 4}, dtype(kFloat64).requires_grad(true));
  Tensor b = tensor::tensor({1.0, 2.0, 3.0, 4.0}, dtype(kFloat64).requires_grad(true));
  (a * b).sum().backward();
  EXPECT_EQ(b.grad().sizes(), IntArrayRef({4}));
  EXPECT_NEAR(b.grad()[2].item<double>(), 3.0, 1e-12);   // sum over 3 rows of a (ones)
  EXPECT_NEAR(a.grad()[1][3].item<double>(), 4.0, 1e-12);
  Tensor s = tensor::tensor(2.0, dtype(kFloat64).requires_grad(true));
  (a * s).sum().backward();
  EXPECT_EQ(s.grad().dim(), 0);
  EXPECT_NEAR(s.grad().item<double>(), 12.0, 1e-12);
}

TEST(Autograd, MixedDtypeGradientsKeepInputDtype) {
  Tensor a = tensor::ones({2}, dtype(kFloat32).requires_grad(true));
  Tensor b = tensor::ones({2}, dtype(kFloat64).requires_grad(true));
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat64);
}

TEST(Autograd, DtypeConversionRoutesGradientBack) {
  Tensor x = tensor::tensor({1.5, -2.0}, dtype(kFloat64).requires_grad(true));
  Tensor y = x.to(kFloat32) * 3;
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward1");  // libtorch's mul.Scalar
  y.sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  EXPECT_NEAR(x.grad()[1].item<double>(), 3.0, 1e-12);
}

TEST(Autograd, GradFunctionAndDoubleBackward) {
  Tensor x = tensor::tensor({1.5}, dtype(kFloat64).requires_grad(true));
  Tensor y = x * x * x;  // y' = 3x^2, y'' = 6x
  auto g = autograd::grad({y.sum()}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true);
  EXPECT_NEAR(g[0].item<double>(), 3 * 1.5 * 1.5, 1e-12);
  EXPECT_FALSE(x.grad().defined());  // grad() does not accumulate
  auto g2 = autograd::grad({g[0].sum()}, {x});
  EXPECT_NEAR(g2[0].item<double>(), 6 * 1.5, 1e-12);
  Tensor unused = tensor::ones({1}, dtype(kFloat64).requires_grad(true));
  Tensor z = (x * 2).sum();
  EXPECT_NE(error_of([&] { autograd::grad({z}, {unused}, {}, true); }).find("not have been used"), std::string::npos);
  auto g3 = autograd::grad({z}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  EXPECT_NEAR(g3[0].item<double>(), 2.0, 1e-12);
  EXPECT_FALSE(g3[1].defined());
}

TEST(Autograd, RecurrentLoopAccumulatesSharedWeights) {
  // h = tanh(x[t] * w + h * u + b) over 20 steps, elementwise weights shared by every step.
  manual_seed(0);
  Tensor xs = tensor::randn({20, 3}, kFloat64);
  Tensor w = tensor::randn({3}, kFloat64).requires_grad_(), u = (tensor::randn({3}, kFloat64) * 0.5).requires_grad_();
  Tensor b = tensor::randn({3}, kFloat64).requires_grad_();
  auto rnn = [&](const autograd::variable_list& p) {
    Tensor h = tensor::zeros({3}, kFloat64);
    for (int64_t t = 0; t < 20; ++t) h = tensor::tanh(xs[t] * p[0] + h * p[1] + p[2]);
    return h.sum();
  };
  EXPECT_TRUE(autograd::gradcheck(rnn, {w, u, b}));
  Tensor loss = rnn({w, u, b});
  loss.backward();
  EXPECT_TRUE(w.grad().defined() && u.grad().defined() && b.grad().defined());
}

TEST(Autograd, DeepChainNeitherRecursesNorOverflows) {
  Tensor x = tensor::ones({1}, dtype(kFloat64).requires_grad(true));
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0000001;
  y.sum().backward();
  EXPECT_NEAR(x.grad()[0].item<double>(), std::pow(1.0000001, 100000), 1e-9);
  y = Tensor();  // tearing down 100,000 nodes must not overflow the stack either
}

TEST(Autograd, NoGradAndDetach) {
  Tensor x = tensor::ones({2}, dtype(kFloat64).requires_grad(true));
  {
    NoGradGuard guard;
    EXPECT_FALSE(autograd::GradMode::is_enabled());
    EXPECT_FALSE((x * 2).requires_grad());
  }
  {
    InferenceMode guard;
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_TRUE(autograd::GradMode::is_enabled());
  EXPECT_TRUE((x * 2).requires_grad());
  EXPECT_FALSE((x * 2).detach().requires_grad());
  EXPECT_FALSE((x > 0).requires_grad());  // bool outputs are not differentiable
  // Grad mode is thread-local.
  bool other = true;
  {
    NoGradGuard guard;
    std::thread t([&] { other = autograd::GradMode::is_enabled(); });
    t.join();
  }
  EXPECT_TRUE(other);
}

TEST(Autograd, HooksAndRetainGrad) {
  Tensor x = tensor::tensor({1.0, 2.0}, dtype(kFloat64).requires_grad(true));
  x.register_hook([](Tensor g) { return g * 2; });
  Tensor y = x * 3;
  y.retain_grad();
  Tensor z = y * y;
  int seen = 0;
  y.register_hook([&](Tensor g) { ++seen; return Tensor(); });
  z.sum().backward();
  EXPECT_EQ(seen, 1);
  EXPECT_NEAR(y.grad()[1].item<double>(), 2 * 6.0, 1e-12);            // dz/dy = 2y
  EXPECT_NEAR(x.grad()[1].item<double>(), 2 * (2 * 6.0 * 3), 1e-12);   // doubled by the leaf hook
}

TEST(Autograd, InPlaceRules) {
  Tensor leaf = tensor::ones({2}, dtype(kFloat64).requires_grad(true));
  std::string m1 = error_of([&] { leaf.add_(1); });
  EXPECT_NE(m1.find("leaf Variable that requires grad"), std::string::npos) << m1;
  {
    NoGradGuard g;
    leaf.add_(1);  // allowed without recording
  }
  Tensor a = leaf * 1;
  Tensor b = a.exp();   // saves its output
  Tensor c = a * a;     // saves a
  a.add_(1);            // bumps a's version
  std::string m2 = error_of([&] { c.sum().backward(); });
  EXPECT_NE(m2.find("modified by an inplace operation"), std::string::npos) << m2;
  EXPECT_NE(m2.find("version"), std::string::npos);
  // In-place on a non-leaf is recorded: d/dx of (x*2 then mul_ by x) = 4x.
  Tensor x = tensor::tensor({3.0}, dtype(kFloat64).requires_grad(true));
  Tensor y = x * 2;
  y.mul_(x);
  y.sum().backward();
  EXPECT_NEAR(x.grad()[0].item<double>(), 12.0, 1e-12);
  std::string m3 = error_of([&] { x[0].add_(1); });
  EXPECT_NE(m3.find("view of a leaf Variable"), std::string::npos) << m3;
}

TEST(Autograd, IndexPutRecordsTheWrite) {
  Tensor x = tensor::ones({2, 3}, dtype(kFloat64).requires_grad(true));
  Tensor v = tensor::tensor({{10.0}, {20.0}}, dtype(kFloat64).requires_grad(true));
  Tensor y = x * 1;
  y.index_put_({Slice(), tensor::tensor({0, 2})}, v);  // columns 0 and 2 take v (broadcast)
  EXPECT_NEAR(y[1][2].item<double>(), 20.0, 1e-12);
  Tensor w = tensor::arange(6, kFloat64).view({2, 3});
  (y * w).sum().backward();
  EXPECT_NEAR(x.grad()[0][1].item<double>(), 1.0, 1e-12);  // untouched column: w
  EXPECT_NEAR(x.grad()[0][0].item<double>(), 0.0, 1e-12);  // overwritten: no gradient
  EXPECT_NEAR(v.grad()[1][0].item<double>(), 3.0 + 5.0, 1e-12);  // w[1][0] + w[1][2]
  Tensor leaf = tensor::ones({3}, dtype(kFloat64).requires_grad(true));
  EXPECT_NE(error_of([&] { leaf.index_put_({tensor::tensor({0})}, 2.0); }).find("leaf Variable"), std::string::npos);
}

TEST(Autograd, InPlaceThroughViewsRebasesTheBase) {
  Tensor x = tensor::tensor({1.0, 2.0, 3.0, 4.0}, dtype(kFloat64).requires_grad(true));
  Tensor y = x * 2;
  y[1].mul_(3);                                 // y1 = 6 x1
  y.slice(0, 2, 4).add_(x.slice(0, 0, 2));      // y2 += x0, y3 += x1
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  EXPECT_NEAR(y[1].item<double>(), 12.0, 1e-12);
  EXPECT_NEAR(y[3].item<double>(), 10.0, 1e-12);
  y.sum().backward();
  EXPECT_NEAR(x.grad()[0].item<double>(), 3.0, 1e-12);
  EXPECT_NEAR(x.grad()[1].item<double>(), 7.0, 1e-12);
  EXPECT_NEAR(x.grad()[2].item<double>(), 2.0, 1e-12);
  EXPECT_NEAR(x.grad()[3].item<double>(), 2.0, 1e-12);
  // A function that writes through a view of an intermediate, against finite differences.
  Tensor a = tensor::rand({3, 4}, kFloat64).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck(
      [](const autograd::variable_list& v) {
        Tensor t = v[0] * 1;
        t.narrow(1, 1, 2).add_(v[0].narrow(1, 0, 2).square());
        t.t()[0].mul_(v[0].select(1, 3));
        t.narrow(1, 3, 1).exp_();  // saves its output: last write, so the version still matches
        return t.square();
      },
      {a}));
}

TEST(Autograd, ErrorCases) {
  Tensor x = tensor::ones({3}, dtype(kFloat64).requires_grad(true));
  std::string m1 = error_of([&] { (x * 2).backward(); });
  EXPECT_NE(m1.find("scalar outputs"), std::string::npos) << m1;
  std::string m2 = error_of([&] { tensor::ones({2}).sum().backward(); });
  EXPECT_NE(m2.find("does not require grad"), std::string::npos) << m2;
  std::string m3 = error_of([&] { tensor::ones({2}, kInt64).requires_grad_(); });
  EXPECT_NE(m3.find("floating point"), std::string::npos) << m3;
  std::string m4 = error_of([&] { Tensor o = tensor::empty({3}, kFloat64); tensor::exp_out(o, x); });
  EXPECT_NE(m4.find("out="), std::string::npos) << m4;
}

TEST(Autograd, IndependentGraphsOnTwoThreads) {
  auto work = [](double v, double* out) {
    Tensor x = tensor::full({4}, v, dtype(kFloat64).requires_grad(true));
    Tensor y = x;
    for (int i = 0; i < 200; ++i) y = tensor::sin(y) + x;
    y.sum().backward();
    *out = x.grad().sum().item<double>();
  };
  double r1 = 0, r2 = 0, s1 = 0, s2 = 0;
  work(0.3, &s1);
  work(0.7, &s2);
  std::thread t1(work, 0.3, &r1), t2(work, 0.7, &r2);
  t1.join();
  t2.join();
  EXPECT_EQ(r1, s1);
  EXPECT_EQ(r2, s2);
}

TEST(Autograd, AnomalyModeReportsNaN) {
  autograd::AnomalyMode::set_enabled(true);
  Tensor x = tensor::tensor({-1.0}, dtype(kFloat64).requires_grad(true));
  Tensor y = tensor::sqrt(x);  // NaN forward and backward
  std::string m = error_of([&] { y.sum().backward(); });
  autograd::AnomalyMode::set_enabled(false);
  EXPECT_NE(m.find("NaN"), std::string::npos) << m;
  EXPECT_NE(m.find("SqrtBackward0"), std::string::npos) << m;
}

namespace {
// The API.md example: y = a * a with a hand-written backward.
struct Square : tensor::autograd::Function<Square> {
  static Tensor forward(tensor::autograd::AutogradContext* ctx, Tensor a) {
    ctx->save_for_backward({a});
    return a * a;
  }
  static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                  tensor::autograd::variable_list g) {
    auto a = ctx->get_saved_variables()[0];
    return {2 * a * g[0]};
  }
};
// Two tensor inputs, a non-tensor argument, saved_data and needs_input_grad.
struct ScaledMul : tensor::autograd::Function<ScaledMul> {
  static Tensor forward(tensor::autograd::AutogradContext* ctx, Tensor a, double s, Tensor b) {
    ctx->saved_data["s"] = s;
    ctx->save_for_backward({a, b});
    return a * b * s;
  }
  static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                  tensor::autograd::variable_list g) {
    auto saved = ctx->get_saved_variables();
    double s = ctx->saved_data["s"].to_double();
    Tensor ga = ctx->needs_input_grad(0) ? g[0] * saved[1] * s : Tensor();
    Tensor gb = ctx->needs_input_grad(1) ? g[0] * saved[0] * s : Tensor();
    return {ga, Tensor(), gb};  // one entry per forward argument
  }
};
}  // namespace

TEST(Autograd, CustomFunctionMatchesBuiltIn) {
  Tensor x = tensor::tensor({1.5, -2.0}, dtype(kFloat64).requires_grad(true));
  Tensor z = Square::apply(x);
  EXPECT_EQ(z.grad_fn()->name(), "CppNode");
  z.sum().backward();
  EXPECT_NEAR(x.grad()[0].item<double>(), 3.0, 1e-12);
  EXPECT_NEAR(x.grad()[1].item<double>(), -4.0, 1e-12);
  EXPECT_TRUE(autograd::gradcheck([](const autograd::variable_list& v) { return Square::apply(v[0]).sin(); }, {x}));
  Tensor a = tensor::tensor({2.0}, dtype(kFloat64).requires_grad(true));
  Tensor b = tensor::tensor({5.0}, kFloat64);  // no grad
  ScaledMul::apply(a, 3.0, b).sum().backward();
  EXPECT_NEAR(a.grad()[0].item<double>(), 15.0, 1e-12);
  EXPECT_TRUE(autograd::gradcheck(
      [](const autograd::variable_list& v) { return ScaledMul::apply(v[0], 0.5, v[1]); },
      {tensor::rand({3}, kFloat64).requires_grad_(), tensor::rand({3}, kFloat64).requires_grad_()}));
  // Saved tensors are version-checked.
  Tensor c = x * 1;
  Tensor w = Square::apply(c);
  c.add_(1);
  EXPECT_NE(error_of([&] { w.sum().backward(); }).find("modified by an inplace operation"), std::string::npos);
}

TEST(Autograd, CheckpointRecomputesAndMatches) {
  manual_seed(3);
  Tensor x = tensor::randn({4}, kFloat64).requires_grad_();
  Tensor w = tensor::randn({4}, kFloat64).requires_grad_();
  auto block = [](const autograd::variable_list& in) {
    Tensor h = tensor::tanh(in[0] * in[1]);
    return autograd::variable_list{tensor::sigmoid(h * h + in[0])};
  };
  int calls = 0;
  auto counted = [&](const autograd::variable_list& in) { ++calls; return block(in); };
  Tensor y = autograd::checkpoint(counted, {x, w})[0];
  EXPECT_EQ(calls, 1);
  y.sum().backward();
  EXPECT_EQ(calls, 2);  // recomputed in backward
  Tensor gx = x.grad().clone(), gw = w.grad().clone();
  x.mutable_grad() = Tensor();
  w.mutable_grad() = Tensor();
  block({x, w})[0].sum().backward();
  EXPECT_TRUE(gx.allclose(x.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(gw.allclose(w.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(autograd::gradcheck([&](const autograd::variable_list& v) { return autograd::checkpoint(block, v)[0]; },
                                  {x, w}));
}

TEST(Autograd, CheckpointReplaysRandomNumbers) {
  // A dropout-like mask drawn inside the checkpointed block must be the same in the recompute,
  // and the recompute must not move the program's generator.
  manual_seed(4);
  Tensor x = tensor::randn({64}, kFloat64).requires_grad_();
  Tensor mask_seen;
  auto block = [&](const autograd::variable_list& in) {
    Tensor mask = (tensor::rand({64}, kFloat64) > 0.5).to(kFloat64);
    mask_seen = mask;
    return autograd::variable_list{in[0] * in[0] * mask};
  };
  Tensor y = autograd::checkpoint(block, {x})[0];
  Tensor forward_mask = mask_seen;
  Tensor after_forward = tensor::rand({3}, kFloat64);  // the program's next draw
  manual_seed(4);
  tensor::randn({64}, kFloat64);
  tensor::rand({64}, kFloat64);
  Tensor expected_next = tensor::rand({3}, kFloat64);
  ASSERT_TRUE(after_forward.equal(expected_next));
  Tensor before = tensor::rand({3}, kFloat64);  // generator position before backward
  manual_seed(4);
  tensor::randn({64}, kFloat64);
  tensor::rand({64}, kFloat64);
  tensor::rand({3}, kFloat64);
  y.sum().backward();  // recomputes the block
  EXPECT_TRUE(mask_seen.equal(forward_mask)) << "the recompute drew a different mask";
  EXPECT_TRUE(x.grad().equal(x.detach() * 2 * forward_mask));
  EXPECT_TRUE(tensor::rand({3}, kFloat64).equal(before)) << "the recompute moved the generator";
}

TEST(Autograd, CopyAndClampInPlaceRecord) {
  manual_seed(5);
  // copy_ from a tensor that requires grad: the destination's history is the copy, the source
  // gets the gradient (summed over broadcast dims, cast to its dtype).
  Tensor src = tensor::randn({3}, kFloat64).requires_grad_();
  Tensor dst = tensor::zeros({2, 3}, kFloat64) * 1;  // a non-leaf
  dst.copy_(src);
  (dst * dst).sum().backward();
  EXPECT_TRUE(src.grad().allclose(src.detach() * 4, 1e-12, 1e-12));
  Tensor s32 = tensor::randn({3}, kFloat32).requires_grad_();
  Tensor d64 = tensor::zeros({3}, kFloat64).requires_grad_() * 1;
  d64.copy_(s32);
  d64.sum().backward();
  EXPECT_EQ(s32.grad().dtype(), kFloat32);
  EXPECT_TRUE(s32.grad().equal(tensor::ones({3}, kFloat32)));
  // The overwritten values get no gradient; in-place on a leaf that requires grad raises.
  Tensor x = tensor::randn({3}, kFloat64).requires_grad_();
  Tensor y = x * 2;
  y.copy_(src.detach());
  EXPECT_EQ(y.grad_fn()->name(), "CopyBackwards");
  EXPECT_THROW(x.copy_(src), Error);
  // clamp_ records like clamp: the gradient passes where min <= x <= max.
  Tensor v = tensor::tensor({-2.0, -0.5, 0.5, 2.0}, kFloat64).requires_grad_();
  Tensor w = v * 1;
  w.clamp_(-1.0, 1.0);
  (w * 3).sum().backward();
  EXPECT_TRUE(v.grad().equal(tensor::tensor({0.0, 3.0, 3.0, 0.0}, kFloat64)));
  EXPECT_TRUE(w.detach().equal(tensor::tensor({-1.0, -0.5, 0.5, 1.0}, kFloat64)));
  EXPECT_TRUE(autograd::gradcheck([](const autograd::variable_list& in) { Tensor t = in[0] * 1; t.clamp_(-0.3, 0.4); return t; },
                                  {tensor::randn({6}, kFloat64).requires_grad_()}));
  // Without recording (no grad mode), copy_ into a leaf is allowed, as in libtorch's init code.
  {
    NoGradGuard g;
    x.copy_(src);
  }
  EXPECT_TRUE(x.detach().equal(src.detach()));
}

// Note [Gradient layout contract]: .grad() takes the leaf's strides (values checked by hand),
// and a gradient is never shared with the caller or with another leaf.
TEST(Autograd, GradFollowsLeafLayoutAndOwnsItsData) {
  auto strides = [](const Tensor& t) { return t.strides().vec(); };
  // A transposed leaf: d/dx sum(x * 2) = 2 everywhere, laid out like x.
  Tensor x = arange(12, kFloat64).reshape({3, 4}).t().detach().requires_grad_(true);
  (x * 2).sum().backward();
  EXPECT_EQ(strides(x.grad()), strides(x));
  EXPECT_TRUE(x.grad().equal(full({4, 3}, 2.0, kFloat64)));
  // A second backward accumulates into the same layout: 2 + 3 * x^2 ... d/dx sum(x^3) = 3x^2.
  (x * x * x).sum().backward();
  EXPECT_EQ(strides(x.grad()), strides(x));
  EXPECT_TRUE(x.grad().allclose(x.detach() * x.detach() * 3 + 2));
  // A channels-last (permuted) leaf: d/dy sum(y^2) = 2y, with y's strides.
  Tensor y = randn({2, 3, 4, 5}, kFloat64).permute({0, 2, 3, 1}).detach().requires_grad_(true);
  (y * y).sum().backward();
  EXPECT_EQ(strides(y.grad()), strides(y));
  EXPECT_TRUE(y.grad().allclose(y.detach() * 2));
  // A leaf that is not dense (every other column) gets a row-major gradient.
  Tensor z = randn({3, 8}, kFloat64).slice(1, 0, 8, 2).detach().requires_grad_(true);
  z.sum().backward();
  EXPECT_TRUE(z.grad().is_contiguous());
  EXPECT_TRUE(z.grad().equal(ones({3, 4}, kFloat64)));
  // The caller's gradient is copied, not kept: changing it afterwards leaves .grad() alone.
  Tensor leaf = zeros({3}, kFloat64).requires_grad_(true);
  Tensor seed = tensor::tensor({1.0, 2.0, 3.0}, kFloat64);
  leaf.backward(seed);
  seed.mul_(10);
  EXPECT_TRUE(leaf.grad().equal(tensor::tensor({1.0, 2.0, 3.0}, kFloat64)));
  // Two leaves reached by the same gradient tensor (a + b passes it to both) own separate data.
  Tensor a = zeros({4}, kFloat64).requires_grad_(true), b = zeros({4}, kFloat64).requires_grad_(true);
  (a + b).sum().backward();
  a.mutable_grad().add_(5);
  EXPECT_TRUE(b.grad().equal(ones({4}, kFloat64)));
  EXPECT_TRUE(a.grad().equal(full({4}, 6.0, kFloat64)));
}

// A custom Function's backward is held to libtorch's rules (validate_outputs and CppNode::apply):
// one entry per forward argument, a gradient of the input's shape (a broadcast one is summed
// down), dtype (cast) and device, nothing for a non-tensor argument.
namespace {
struct GradOfShape : autograd::Function<GradOfShape> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor a, int64_t rows) {
    ctx->saved_data["rows"] = rows;
    return a * 2;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    const int64_t rows = ctx->saved_data["rows"].toInt();
    if (rows == -1) return {g[0]};                                // too few entries
    if (rows == -2) return {g[0] * 2, ones({1})};                 // a gradient for the int argument
    if (rows == -3) return {g[0].to(kFloat64) * 2, Tensor(), Tensor()};  // float64 for float32; extra undefined
    if (rows == -4) return {ones({5}), Tensor()};                 // a shape that is not compatible
    return {(g[0] * 2).expand({rows, g[0].size(0)}), Tensor()};   // broadcast: summed down to [3]
  }
};
}  // namespace

TEST(Autograd, CustomFunctionGradientsAreValidated) {
  auto run = [](int64_t mode) {
    Tensor x = tensor::tensor({1.0, 2.0, 3.0}).requires_grad_(true);
    GradOfShape::apply(x, mode).sum().backward();
    return x.grad();
  };
  // Broadcast [4, 3] gradient of 2s summed to [3]: 8 each.
  Tensor g = run(4);
  EXPECT_EQ(g.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_TRUE(g.equal(full({3}, 8.0)));
  // float64 gradient cast to the float32 input's dtype; trailing undefined entries are fine.
  Tensor gd = run(-3);
  EXPECT_EQ(gd.dtype(), kFloat32);
  EXPECT_TRUE(gd.equal(full({3}, 2.0)));
  tensor::testing::expect_error([&] { run(-4); }, {"CppNode", "invalid gradient at index 0", "[5]", "[3]"});
  tensor::testing::expect_error([&] { run(-1); }, {"incorrect number of gradients", "expected 2, got 1"});
  tensor::testing::expect_error([&] { run(-2); }, {"defined at position 2", "not a Tensor"});
}

TEST(Autograd, MutableGradOfARetainedNonLeafIsItsGrad) {
  Tensor x = tensor::tensor({1.0, 2.0}, kFloat64).requires_grad_(true);
  Tensor y = x * 3;
  y.retain_grad();
  (y * y).sum().backward(Tensor(), /*retain_graph=*/true);
  EXPECT_TRUE(y.grad().equal(tensor::tensor({6.0, 12.0}, kFloat64)));  // d/dy sum(y^2) = 2y
  EXPECT_TRUE(y.mutable_grad().equal(y.grad()));
  y.mutable_grad().zero_();  // libtorch's way to reset it in place
  EXPECT_TRUE(y.grad().equal(zeros({2}, kFloat64)));
  y.mutable_grad() = Tensor();  // or to drop it: the next backward starts afresh
  (y * y).sum().backward();
  EXPECT_TRUE(y.grad().equal(tensor::tensor({6.0, 12.0}, kFloat64)));
}

// libtorch names a node after the overload recorded: a Scalar operand, or a reduction over every
// element, has its own node name (users print and test these).
TEST(Autograd, NodeNamesFollowLibtorchOverloads) {
  Tensor x = randn({2, 3}).requires_grad_(true);
  EXPECT_EQ((x + 2).grad_fn()->name(), "AddBackward1");
  EXPECT_EQ((x - 2).grad_fn()->name(), "SubBackward1");
  EXPECT_EQ((x * 2).grad_fn()->name(), "MulBackward1");
  EXPECT_EQ((x / 2).grad_fn()->name(), "DivBackward1");
  EXPECT_EQ((x + x).grad_fn()->name(), "AddBackward0");
  EXPECT_EQ((x * x).grad_fn()->name(), "MulBackward0");
  // pow numbers its overloads the other way round: Tensor_Scalar 0, Tensor_Tensor 1, Scalar 2.
  EXPECT_EQ(x.pow(2).grad_fn()->name(), "PowBackward0");
  EXPECT_EQ(x.pow(x).grad_fn()->name(), "PowBackward1");
  EXPECT_EQ(tensor::pow(2.0, x).grad_fn()->name(), "PowBackward2");
  Tensor p = x * 1;
  p.pow_(3);
  EXPECT_EQ(p.grad_fn()->name(), "PowBackward0");
  EXPECT_EQ(x.sum().grad_fn()->name(), "SumBackward0");
  EXPECT_EQ(x.sum(0).grad_fn()->name(), "SumBackward1");
  EXPECT_EQ(x.mean().grad_fn()->name(), "MeanBackward0");
  EXPECT_EQ(x.mean(1).grad_fn()->name(), "MeanBackward1");
  EXPECT_EQ(x.prod().grad_fn()->name(), "ProdBackward0");
  EXPECT_EQ(x.prod(1).grad_fn()->name(), "ProdBackward1");
  Tensor y = x * 1;
  y.mul_(2);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward1");
}
