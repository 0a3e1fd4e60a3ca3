// GradScaler (torch.amp.GradScaler's algorithm) and its two dispatcher ops: hand-computed values
// for unscale, skipped steps, backoff and growth, the state_dict round trip and the misuse errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kernels/AmpMath.h"
#include "src/ops/AllOps.h"
#include "tensor/amp.h"
#include "tensor/tensor.h"

using namespace tensor;
using amp::GradScaler;
using amp::GradScalerOptions;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A parameter with a chosen gradient, in an SGD optimizer with lr 1.
struct OneParam {
  Tensor p = tensor::tensor({1.0f, 2.0f}).requires_grad_(true);
  optim::SGD opt{std::vector<Tensor>{p}, optim::SGDOptions(1.0)};
  void set_grad(float a, float b) { p.mutable_grad() = tensor::tensor({a, b}); }
};

template <class F>
void expect_error_containing(F&& f, const std::string& needle) {
  try {
    f();
    FAIL() << "expected tensor::Error containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}
}  // namespace

// ---- the ops ----

TEST(AmpOps, NonFiniteCheckAndUnscale) {
  Tensor a = tensor::tensor({2.0f, -4.0f, 8.0f});
  Tensor b = tensor::tensor({1.0, 3.0}, TensorOptions(kFloat64));
  Tensor c = tensor::tensor({6.0f, 2.0f}).to(kBFloat16);
  Tensor found = zeros({1});
  Tensor inv = full({1}, 0.5);
  _amp_foreach_non_finite_check_and_unscale_({a, b, c}, found, inv);
  EXPECT_EQ(found.item<float>(), 0.0f);
  EXPECT_TRUE(equal(a, tensor::tensor({1.0f, -2.0f, 4.0f})));
  EXPECT_TRUE(equal(b, tensor::tensor({0.5, 1.5}, TensorOptions(kFloat64))));
  EXPECT_TRUE(equal(c.to(kFloat32), tensor::tensor({3.0f, 1.0f})));
  // inf in one tensor, NaN in a bf16 one, a strided tensor: all unscaled, found_inf set.
  for (Tensor bad : {tensor::tensor({1.0f, kInf}), tensor::tensor({kNaN, 2.0f}).to(kBFloat16)}) {
    Tensor base = tensor::tensor({{4.0f, 8.0f}, {12.0f, 16.0f}});
    Tensor strided = base.t();
    Tensor f = zeros({1});
    _amp_foreach_non_finite_check_and_unscale_({strided, bad}, f, full({1}, 0.25));
    EXPECT_EQ(f.item<float>(), 1.0f);
    EXPECT_TRUE(equal(base, tensor::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}})));
  }
  // found_inf is only ever set, never cleared.
  Tensor f = ones({1});
  _amp_foreach_non_finite_check_and_unscale_({tensor::tensor({1.0f})}, f, full({1}, 1.0));
  EXPECT_EQ(f.item<float>(), 1.0f);
}

TEST(AmpOps, BadArgumentsRaiseNamingTheOp) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  expect_error_containing([] { _amp_foreach_non_finite_check_and_unscale_({ones({2})}, zeros({1}, TensorOptions(kFloat64)), ones({1})); }, op);
  expect_error_containing([] { _amp_foreach_non_finite_check_and_unscale_({ones({2})}, zeros({2}), ones({1})); }, "found_inf");
  expect_error_containing([] { _amp_foreach_non_finite_check_and_unscale_({ones({2}, TensorOptions(kInt32))}, zeros({1}), ones({1})); },
                          "floating point");
  Tensor s = ones({1}), t = zeros({1}, TensorOptions(kInt32));
  expect_error_containing([&] { _amp_update_scale_(s, t.to(kInt64), zeros({1}), 2.0, 0.5, 10); }, "growth_tracker");
  expect_error_containing([&] { _amp_update_scale_(s, t, zeros({1}), 2.0, 0.5, 0); }, "growth_interval");
  // Meta runs the checks alone.
  const TensorOptions meta = TensorOptions().device(Device("meta"));
  EXPECT_NO_THROW(_amp_foreach_non_finite_check_and_unscale_({empty({3}, meta)}, empty({1}, meta), empty({1}, meta)));
  EXPECT_THROW(_amp_foreach_non_finite_check_and_unscale_({empty({3}, meta)}, empty({2}, meta), empty({1}, meta)), Error);
}

TEST(AmpOps, UpdateScaleBacksOffAndGrows) {
  Tensor scale = full({1}, 8.0), tracker = zeros({1}, TensorOptions(kInt32));
  _amp_update_scale_(scale, tracker, ones({1}), 2.0, 0.5, 3);  // overflow: backoff
  EXPECT_EQ(scale.item<float>(), 4.0f);
  EXPECT_EQ(tracker.item<int>(), 0);
  _amp_update_scale_(scale, tracker, zeros({1}), 2.0, 0.5, 3);
  _amp_update_scale_(scale, tracker, zeros({1}), 2.0, 0.5, 3);
  EXPECT_EQ(scale.item<float>(), 4.0f);
  EXPECT_EQ(tracker.item<int>(), 2);
  _amp_update_scale_(scale, tracker, zeros({1}), 2.0, 0.5, 3);  // third clean step: growth
  EXPECT_EQ(scale.item<float>(), 8.0f);
  EXPECT_EQ(tracker.item<int>(), 0);
  // The shared per-element step (kernels/AmpMath.h, also for CUDA) never grows past float32.
  float big = 3e38f;
  int32_t tr = 0;
  amp_math::update_scale(big, tr, 0.0f, 2.0, 0.5, 1);
  EXPECT_EQ(big, 3e38f);
  EXPECT_EQ(tr, 0);
  EXPECT_TRUE(amp_math::non_finite(kInf));
  EXPECT_TRUE(amp_math::non_finite(kNaN));
  EXPECT_FALSE(amp_math::non_finite(std::numeric_limits<float>::max()));
}

TEST(AmpOps, AreListedDispatcherOps) {
  bool unscale = false, update = false;
  for (const auto& op : ops::builtin_ops()) {
    unscale |= std::string(op.name) == "_amp_foreach_non_finite_check_and_unscale_";
    update |= std::string(op.name) == "_amp_update_scale_";
  }
  EXPECT_TRUE(unscale);
  EXPECT_TRUE(update);
}

// ---- GradScaler ----

TEST(GradScaler, ScaleMultipliesByTheScale) {
  GradScaler scaler(GradScalerOptions().init_scale(8.0));
  EXPECT_EQ(scaler.get_scale(), 8.0);
  Tensor loss = tensor::tensor(1.5f);
  EXPECT_NEAR(scaler.scale(loss).item<double>(), 12.0, 0);
  Tensor x = tensor::tensor({1.0f, 2.0f}).requires_grad_(true);
  scaler.scale((x * x).sum()).backward();
  EXPECT_TRUE(equal(x.grad(), tensor::tensor({16.0f, 32.0f})));  // 8 * 2x
}

TEST(GradScaler, UnscaleDividesTheGradientsOnce) {
  OneParam s;
  GradScaler scaler(GradScalerOptions().init_scale(4.0));
  (void)scaler.scale(tensor::tensor(1.0f));
  s.set_grad(4.0f, -8.0f);
  scaler.unscale_(s.opt);
  EXPECT_TRUE(equal(s.p.grad(), tensor::tensor({1.0f, -2.0f})));
  expect_error_containing([&] { scaler.unscale_(s.opt); }, "unscale_() has already been called");
  scaler.step(s.opt);  // does not unscale again
  EXPECT_TRUE(equal(s.p.detach(), tensor::tensor({0.0f, 4.0f})));  // p - 1 * grad
  expect_error_containing([&] { scaler.step(s.opt); }, "step() has already been called");
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 4.0);  // one clean step of 2000: no growth yet
  EXPECT_EQ(scaler.get_growth_tracker(), 1);
  // After update() the optimizer may be unscaled again.
  (void)scaler.scale(tensor::tensor(1.0f));
  s.set_grad(4.0f, 4.0f);
  EXPECT_NO_THROW(scaler.unscale_(s.opt));
}

TEST(GradScaler, AnInfGradientSkipsTheStepAndBacksOff) {
  for (float bad : {kInf, -kInf, kNaN}) {
    OneParam s;
    GradScaler scaler(GradScalerOptions().init_scale(1024.0).backoff_factor(0.25));
    (void)scaler.scale(tensor::tensor(1.0f));
    s.set_grad(bad, 1024.0f);
    Tensor r = scaler.step(s.opt);
    EXPECT_FALSE(r.defined());
    EXPECT_TRUE(equal(s.p.detach(), tensor::tensor({1.0f, 2.0f}))) << "the step must be skipped";
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 256.0);
    EXPECT_EQ(scaler.get_growth_tracker(), 0);
    // The next clean iteration steps with the new scale.
    (void)scaler.scale(tensor::tensor(1.0f));
    s.set_grad(256.0f, 512.0f);
    scaler.step(s.opt);
    EXPECT_TRUE(equal(s.p.detach(), tensor::tensor({0.0f, 0.0f})));
    scaler.update();
  }
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  OneParam s;
  GradScaler scaler(GradScalerOptions().init_scale(2.0).growth_factor(3.0).growth_interval(3));
  const double expected[] = {2.0, 2.0, 6.0, 6.0, 6.0, 18.0};
  for (int i = 0; i < 6; ++i) {
    (void)scaler.scale(tensor::tensor(1.0f));
    s.set_grad(0.0f, 0.0f);
    scaler.step(s.opt);
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), expected[i]) << "after update " << i + 1;
  }
  // An overflow restarts the count.
  (void)scaler.scale(tensor::tensor(1.0f));
  s.set_grad(kInf, 0.0f);
  scaler.step(s.opt);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 9.0);
  EXPECT_EQ(scaler.get_growth_tracker(), 0);
  // update(new_scale) sets it.
  (void)scaler.scale(tensor::tensor(1.0f));
  scaler.update(100.0);
  EXPECT_EQ(scaler.get_scale(), 100.0);
}

TEST(GradScaler, StateDictRoundTrip) {
  OneParam s;
  GradScaler a(GradScalerOptions().init_scale(64.0).growth_interval(5).growth_factor(4.0).backoff_factor(0.125));
  for (int i = 0; i < 3; ++i) {
    (void)a.scale(tensor::tensor(1.0f));
    s.set_grad(i == 0 ? kInf : 1.0f, 1.0f);
    a.step(s.opt);
    a.update();
  }
  EXPECT_EQ(a.get_scale(), 8.0);
  EXPECT_EQ(a.get_growth_tracker(), 2);
  optim::NamedTensors sd = a.state_dict();
  ASSERT_EQ(sd.size(), 5u);
  EXPECT_EQ(sd[0].first, "scale");
  GradScaler b;  // defaults, then loaded
  b.load_state_dict(sd);
  EXPECT_EQ(b.get_scale(), 8.0);
  EXPECT_EQ(b.get_growth_tracker(), 2);
  EXPECT_EQ(b.get_growth_factor(), 4.0);
  EXPECT_EQ(b.get_backoff_factor(), 0.125);
  EXPECT_EQ(b.get_growth_interval(), 5);
  // Both continue the same way: three more clean steps reach the interval of 5.
  for (GradScaler* g : {&a, &b}) {
    OneParam t;
    for (int i = 0; i < 3; ++i) {
      (void)g->scale(tensor::tensor(1.0f));
      t.set_grad(1.0f, 1.0f);
      g->step(t.opt);
      g->update();
    }
    EXPECT_EQ(g->get_scale(), 32.0);
    EXPECT_EQ(g->get_growth_tracker(), 0);
  }
  expect_error_containing([&] { b.load_state_dict({}); }, "empty");
  expect_error_containing([&] { b.load_state_dict({{"scale", scalar_tensor(1.0)}}); }, "growth_factor");
}

TEST(GradScaler, MisuseRaises) {
  OneParam s;
  GradScaler scaler;
  expect_error_containing([&] { scaler.unscale_(s.opt); }, "scale()");
  (void)scaler.scale(tensor::tensor(1.0f));
  expect_error_containing([&] { scaler.update(); }, "no inf checks");
  s.set_grad(1.0f, 1.0f);
  s.p.mutable_grad() = s.p.grad().to(kFloat16);
  expect_error_containing([&] { scaler.unscale_(s.opt); }, "float16 gradients");
  EXPECT_THROW(GradScaler(GradScalerOptions().growth_factor(1.0)), Error);
  EXPECT_THROW(GradScaler(GradScalerOptions().backoff_factor(1.5)), Error);
  EXPECT_THROW(GradScaler(GradScalerOptions().growth_interval(0)), Error);
}

TEST(GradScaler, DisabledIsAPassThrough) {
  OneParam s;
  GradScaler scaler(GradScalerOptions().enabled(false));
  Tensor loss = tensor::tensor(3.0f);
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  EXPECT_EQ(scaler.get_scale(), 1.0);
  s.set_grad(kInf, 1.0f);
  scaler.unscale_(s.opt);
  scaler.step(s.opt);  // steps even with inf: nothing is checked
  EXPECT_TRUE(std::isinf(s.p.detach()[0].item<float>()));
  scaler.update();
  EXPECT_TRUE(scaler.state_dict().empty());
}

// ---- why it exists: float16 gradients that underflow without scaling ----

TEST(GradScaler, KeepsSmallFloat16GradientsFromFlushingToZero) {
  // loss = 1e-6 * sum(linear(x, w)) with x = 1e-3: dloss/dw = 1e-6 * 8 * 1e-3 = 8e-9 per element.
  // In float16 autocast the weight gradient is computed in float16, whose smallest subnormal is
  // 6e-8, so unscaled it flushes to 0; scaled by 65536 it is 5e-4 and survives the unscale.
  Tensor x = full({8, 4}, 1e-3);
  for (bool use_scaler : {false, true}) {
    Tensor w = ones({2, 4}).requires_grad_(true);
    optim::SGD opt({w}, optim::SGDOptions(0.0));
    GradScaler scaler(GradScalerOptions().init_scale(65536.0).enabled(use_scaler));
    Tensor loss;
    {
      autocast::AutocastGuard ac(kCPU, kFloat16);
      Tensor y = linear(x, w);
      EXPECT_EQ(y.dtype(), kFloat16);
      loss = y.to(kFloat32).sum() * 1e-6;
    }
    scaler.scale(loss).backward();
    scaler.unscale_(opt);
    ASSERT_EQ(w.grad().dtype(), kFloat32);
    if (!use_scaler) {
      EXPECT_EQ(w.grad().abs().max().item<float>(), 0.0f) << "expected the float16 gradient to underflow";
    } else {
      EXPECT_TRUE(allclose(w.grad(), full({2, 4}, 8e-9), /*rtol=*/1e-2, /*atol=*/0)) << w.grad();
    }
  }
}
