// optim: SGD (momentum, dampening, Nesterov, weight decay, maximize), Adam (L2, amsgrad) and
// AdamW (decoupled decay) against trajectories computed here in plain float64 arithmetic from
// the torch.optim formulas; parameter groups, zero_grad, step hooks, closures, the state_dict
// round trip, the lr schedulers' sequences, and small models whose loss falls.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::vals;
namespace F = tensor::nn::functional;
using tensor::testing::expect_error;

namespace {

// f(x) = sum_i c_i x_i^2, so df/dx_i = 2 c_i x_i: real backward passes feed the optimizers.
const std::vector<double> kC = {1.0, 0.5, 3.0};
const std::vector<double> kX0 = {1.5, -2.0, 0.25};

Tensor make_param(ScalarType dt = kFloat64) { return tensor::tensor(kX0, kFloat64).to(dt).requires_grad_(true); }

void backward_quadratic(const Tensor& x) {
  Tensor c = tensor::tensor(kC, kFloat64).to(x.dtype());
  (c * x * x).sum().backward();
}

template <typename Opt>
std::vector<std::vector<double>> run(Opt& opt, const Tensor& x, int steps) {
  std::vector<std::vector<double>> traj;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    backward_quadratic(x);
    opt.step();
    traj.push_back(vals(x));
  }
  return traj;
}

void expect_traj(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t s = 0; s < got.size(); ++s)
    for (size_t i = 0; i < got[s].size(); ++i)
      EXPECT_NEAR(got[s][i], want[s][i], tol * (1 + std::fabs(want[s][i]))) << what << " step " << s + 1 << " elem " << i;
}

// torch.optim.SGD on the quadratic, element by element.
std::vector<std::vector<double>> sgd_ref(double lr, double momentum, double dampening, double wd, bool nesterov,
                                         bool maximize, int steps) {
  std::vector<double> x = kX0, buf(3, 0.0);
  std::vector<std::vector<double>> traj;
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < 3; ++i) {
      double d = 2 * kC[i] * x[i];
      if (maximize) d = -d;
      d += wd * x[i];
      if (momentum != 0) {
        buf[i] = s == 0 ? d : momentum * buf[i] + (1 - dampening) * d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      x[i] -= lr * d;
    }
    traj.push_back(x);
  }
  return traj;
}

// torch.optim.Adam / AdamW on the quadratic, element by element, written with bias-corrected
// moments m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t): x -= lr m_hat / (sqrt(v_hat) + eps).
std::vector<std::vector<double>> adam_ref(double lr, double b1, double b2, double eps, double wd, bool amsgrad,
                                          bool decoupled, int steps, std::vector<double> x = kX0,
                                          const std::vector<std::vector<double>>& grads = {}) {
  const size_t n = x.size();
  std::vector<double> m(n, 0), v(n, 0), vmax(n, 0);
  std::vector<std::vector<double>> traj;
  for (int s = 0; s < steps; ++s) {
    const double t = s + 1;
    for (size_t i = 0; i < n; ++i) {
      double g = grads.empty() ? 2 * kC[i] * x[i] : grads[s][i];
      if (decoupled) x[i] *= 1 - lr * wd;
      else g += wd * x[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      vmax[i] = std::max(vmax[i], v[i]);
      double m_hat = m[i] / (1 - std::pow(b1, t));
      double v_hat = (amsgrad ? vmax[i] : v[i]) / (1 - std::pow(b2, t));
      x[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
    traj.push_back(x);
  }
  return traj;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SGD

TEST(OptimSGD, PlainStep) {
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(0.1));
  auto traj = run(opt, x, 3);
  // By hand: x <- x - 0.1 * 2 c x = (1 - 0.2 c) x.
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(traj[0][i], kX0[i] * (1 - 0.2 * kC[i]));
  expect_traj(traj, sgd_ref(0.1, 0, 0, 0, false, false, 3), 1e-15, "sgd");
}

TEST(OptimSGD, MomentumDampeningWeightDecay) {
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(0.05).momentum(0.9).dampening(0.1).weight_decay(0.01));
  expect_traj(run(opt, x, 6), sgd_ref(0.05, 0.9, 0.1, 0.01, false, false, 6), 1e-14, "sgd momentum");
  // The momentum buffer is the state, after 6 steps.
  auto sd = opt.state_dict();
  bool found = false;
  for (auto& [k, v] : sd) found = found || k == "state.0.momentum_buffer";
  EXPECT_TRUE(found);
}

TEST(OptimSGD, NesterovAndMaximize) {
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(0.05).momentum(0.8).nesterov(true));
  expect_traj(run(opt, x, 5), sgd_ref(0.05, 0.8, 0, 0, true, false, 5), 1e-14, "sgd nesterov");
  Tensor y = make_param();
  optim::SGD up({y}, optim::SGDOptions(0.01).momentum(0.5).maximize(true).weight_decay(0.1));
  expect_traj(run(up, y, 4), sgd_ref(0.01, 0.5, 0, 0.1, false, true, 4), 1e-14, "sgd maximize");
  expect_error([] { Tensor p = make_param(); optim::SGD bad({p}, optim::SGDOptions(0.1).nesterov(true)); },
               {"SGD", "Nesterov", "momentum"});
  expect_error([] { Tensor p = make_param(); optim::SGD bad({p}, optim::SGDOptions(-1)); }, {"SGD", "learning rate", "-1"});
}

TEST(OptimSGD, Float32Parameters) {
  Tensor x = make_param(kFloat32);
  optim::SGD opt({x}, optim::SGDOptions(0.05).momentum(0.9));
  expect_traj(run(opt, x, 5), sgd_ref(0.05, 0.9, 0, 0, false, false, 5), 1e-6, "sgd float32");
  EXPECT_EQ(x.dtype(), kFloat32);
}

// ---------------------------------------------------------------------------------------------
// Adam / AdamW

TEST(OptimAdam, ThreeStepsOnXSquared) {
  // f(x) = x^2 from x = 1.5, lr 0.1, default betas and eps.
  Tensor x = tensor::tensor({1.5}, kFloat64).requires_grad_(true);
  optim::Adam opt({x}, optim::AdamOptions(0.1));
  std::vector<double> got;
  for (int s = 0; s < 3; ++s) {
    opt.zero_grad();
    (x * x).sum().backward();
    opt.step();
    got.push_back(x.item<double>());
  }
  // Step 1 by hand: m_hat = g, v_hat = g^2, so x1 = x0 - lr * g / (|g| + eps) with g = 3.
  EXPECT_NEAR(got[0], 1.5 - 0.1 * 3.0 / (3.0 + 1e-8), 1e-15);
  // Steps 2 and 3 from the recursion, in plain arithmetic.
  double xr = 1.5, m = 0, v = 0;
  std::vector<double> want;
  for (int t = 1; t <= 3; ++t) {
    double g = 2 * xr;
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    xr -= 0.1 * (m / (1 - std::pow(0.9, t))) / (std::sqrt(v / (1 - std::pow(0.999, t))) + 1e-8);
    want.push_back(xr);
  }
  for (int s = 0; s < 3; ++s) EXPECT_NEAR(got[s], want[s], 1e-14) << "step " << s + 1;
  // Worked out on paper for step 2: m = 0.9 * 0.3 + 0.1 * 2.8 = 0.55, v = 0.999 * 0.009 + 0.001 * 7.84
  // = 0.016831; x2 = x1 - 0.1 * (0.55 / 0.19) / sqrt(0.016831 / 0.001999) ~= 1.300240.
  EXPECT_NEAR(got[1], 1.4 - 0.1 * (0.55 / 0.19) / std::sqrt(0.016831 / 0.001999), 1e-8);
  // The state: step 3, m and v as in the recursion.
  auto sd = opt.state_dict();
  for (auto& [k, t] : sd) {
    if (k == "state.0.step") EXPECT_EQ(t.item<int64_t>(), 3);
    if (k == "state.0.exp_avg") EXPECT_NEAR(t.item<double>(), m, 1e-15);
    if (k == "state.0.exp_avg_sq") EXPECT_NEAR(t.item<double>(), v, 1e-15);
  }
}

TEST(OptimAdam, WeightDecayAndVectors) {
  Tensor x = make_param();
  optim::Adam opt({x}, optim::AdamOptions(0.05).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.1));
  expect_traj(run(opt, x, 5), adam_ref(0.05, 0.8, 0.99, 1e-6, 0.1, false, false, 5), 1e-13, "adam wd");
}

TEST(OptimAdam, AmsgradUsesTheRunningMax) {
  // Gradients set by hand so that v falls (10 then 0.1): AMSGrad keeps dividing by the max.
  const std::vector<std::vector<double>> grads = {{10.0, -1.0}, {0.1, -1.0}, {0.1, -1.0}, {0.2, 0.5}};
  auto drive = [&](bool amsgrad) {
    Tensor x = tensor::tensor({1.0, 2.0}, kFloat64).requires_grad_(true);
    optim::Adam opt({x}, optim::AdamOptions(0.1).betas({0.9, 0.9}).amsgrad(amsgrad));
    std::vector<std::vector<double>> traj;
    for (const auto& g : grads) {
      x.mutable_grad() = tensor::tensor(g, kFloat64);
      opt.step();
      traj.push_back(vals(x));
    }
    return traj;
  };
  auto with = drive(true), without = drive(false);
  expect_traj(with, adam_ref(0.1, 0.9, 0.9, 1e-8, 0, true, false, 4, {1.0, 2.0}, grads), 1e-13, "amsgrad");
  expect_traj(without, adam_ref(0.1, 0.9, 0.9, 1e-8, 0, false, false, 4, {1.0, 2.0}, grads), 1e-13, "adam");
  // v1 = 10 > v2 = 9.001: from step 2 on the two differ in the first element.
  EXPECT_NE(with[1][0], without[1][0]);
}

TEST(OptimAdam, AdamWDecouplesWeightDecay) {
  Tensor x = make_param(), y = make_param();
  optim::AdamW adamw({x}, optim::AdamWOptions(0.05).weight_decay(0.3));
  optim::Adam adam({y}, optim::AdamOptions(0.05).weight_decay(0.3));
  auto tw = run(adamw, x, 5), ta = run(adam, y, 5);
  expect_traj(tw, adam_ref(0.05, 0.9, 0.999, 1e-8, 0.3, false, true, 5), 1e-13, "adamw");
  expect_traj(ta, adam_ref(0.05, 0.9, 0.999, 1e-8, 0.3, false, false, 5), 1e-13, "adam l2");
  EXPECT_NE(tw[4][0], ta[4][0]);
  // Step 1 of AdamW by hand: x1 = x0 (1 - lr wd) - lr g / (|g| + eps).
  Tensor z = tensor::tensor({2.0}, kFloat64).requires_grad_(true);
  optim::AdamW one({z}, optim::AdamWOptions(0.1).weight_decay(0.5));
  (z * z).sum().backward();
  one.step();
  EXPECT_NEAR(z.item<double>(), 2.0 * (1 - 0.05) - 0.1 * 4.0 / (4.0 + 1e-8), 1e-15);
  // AdamW + amsgrad.
  Tensor a = make_param();
  optim::AdamW ams({a}, optim::AdamWOptions(0.05).amsgrad(true));
  expect_traj(run(ams, a, 5), adam_ref(0.05, 0.9, 0.999, 1e-8, 0.01, true, true, 5), 1e-13, "adamw amsgrad");
  expect_error([] { Tensor p = make_param(); optim::Adam bad({p}, optim::AdamOptions(0.1).betas({1.0, 0.9})); },
               {"Adam", "beta", "index 0"});
}

TEST(OptimAdam, SkipsParametersWithoutGrad) {
  Tensor x = make_param(), y = make_param();
  optim::Adam opt({x, y}, optim::AdamOptions(0.1));
  backward_quadratic(x);
  opt.step();
  EXPECT_EQ(vals(y), kX0);
  EXPECT_NE(vals(x), kX0);
  EXPECT_EQ(opt.state().size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// The one-pass CPU kernels (contiguous float32/float64) against the tensor-op form, which
// non-contiguous parameters take (Note [Fused optimizer steps]).

namespace {
template <typename MakeOpt>
void compare_fused_and_reference(ScalarType dt, const MakeOpt& make_opt, const std::string& what) {
  manual_seed(30);
  Tensor init = tensor::randn({3, 4}, kFloat64);
  Tensor coef = tensor::rand({3, 4}, kFloat64) + 0.5;
  Tensor fused = init.to(dt).clone().requires_grad_(true);
  // Same values, column-major: a non-contiguous leaf.
  Tensor ref = init.to(dt).t().contiguous().t().detach().requires_grad_(true);
  ASSERT_FALSE(ref.is_contiguous());
  auto of = make_opt(fused);
  auto orf = make_opt(ref);
  for (int s = 0; s < 6; ++s) {
    for (auto* pair : {&of, &orf}) (*pair)->zero_grad();
    (coef.to(dt) * fused * fused).sum().backward();
    (coef.to(dt) * ref * ref).sum().backward();
    of->step();
    orf->step();
  }
  std::vector<double> a = vals(fused), b = vals(ref);
  const double tol = dt == kFloat64 ? 1e-13 : 2e-6;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol * (1 + std::fabs(b[i]))) << what << " elem " << i;
  EXPECT_NE(a, vals(init)) << what << " did not move";
}
}  // namespace

TEST(OptimFused, MatchesTensorOpForm) {
  for (ScalarType dt : {kFloat64, kFloat32}) {
    std::string d = dt == kFloat64 ? " float64" : " float32";
    compare_fused_and_reference(dt, [](Tensor p) {
      return std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions(0.05));
    }, "sgd" + d);
    compare_fused_and_reference(dt, [](Tensor p) {
      return std::make_unique<optim::SGD>(std::vector<Tensor>{p},
                                          optim::SGDOptions(0.05).momentum(0.9).dampening(0.2).weight_decay(0.01));
    }, "sgd momentum" + d);
    compare_fused_and_reference(dt, [](Tensor p) {
      return std::make_unique<optim::SGD>(std::vector<Tensor>{p},
                                          optim::SGDOptions(0.05).momentum(0.7).nesterov(true).maximize(true));
    }, "sgd nesterov maximize" + d);
    compare_fused_and_reference(dt, [](Tensor p) {
      return std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions(0.05).weight_decay(0.1));
    }, "adam l2" + d);
    compare_fused_and_reference(dt, [](Tensor p) {
      return std::make_unique<optim::Adam>(std::vector<Tensor>{p},
                                           optim::AdamOptions(0.05).amsgrad(true).maximize(true).betas({0.8, 0.9}));
    }, "adam amsgrad maximize" + d);
    compare_fused_and_reference(dt, [](Tensor p) {
      return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, optim::AdamWOptions(0.05).weight_decay(0.2));
    }, "adamw" + d);
  }
  // The in-place writes are visible to autograd's version check.
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(0.1));
  Tensor y = x * x;  // saves x
  backward_quadratic(x);
  uint32_t before = x._version();
  opt.step();
  EXPECT_GT(x._version(), before);
  EXPECT_THROW(y.sum().backward(), tensor::Error);
}

// ---------------------------------------------------------------------------------------------
// Optimizer base

TEST(OptimBase, ParamGroups) {
  Tensor a = make_param(), b = make_param();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(optim::SGDOptions(0.5)));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);  // filled from the defaults
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.5);
  EXPECT_EQ(opt.size(), 2u);
  backward_quadratic(a);
  backward_quadratic(b);
  opt.step();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(vals(a)[i], kX0[i] * (1 - 0.2 * kC[i]));
    EXPECT_DOUBLE_EQ(vals(b)[i], kX0[i] * (1 - 1.0 * kC[i]));
  }
  // Changing a group's options through a cast, and adding a group later.
  static_cast<optim::SGDOptions&>(opt.param_groups()[0].options()).lr(0.0);
  Tensor c = make_param();
  opt.add_param_group(optim::OptimizerParamGroup({c}));
  EXPECT_EQ(opt.param_groups()[2].options().get_lr(), 0.1);
  opt.zero_grad();
  backward_quadratic(a);
  backward_quadratic(c);
  std::vector<double> a_before = vals(a);
  opt.step();
  EXPECT_EQ(vals(a), a_before);  // lr 0
  EXPECT_DOUBLE_EQ(vals(c)[0], kX0[0] * (1 - 0.2 * kC[0]));
  expect_error([&] { opt.add_param_group(optim::OptimizerParamGroup({a})); }, {"more than one parameter group"});
  expect_error([&] { opt.add_param_group(optim::OptimizerParamGroup({a * 2})); }, {"non-leaf"});
}

TEST(OptimBase, ZeroGrad) {
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(0.1));
  backward_quadratic(x);
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(vals(x.grad()), std::vector<double>(3, 0.0));
  backward_quadratic(x);
  opt.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  // A step with no gradients changes nothing.
  opt.step();
  EXPECT_EQ(vals(x), kX0);
}

TEST(OptimBase, StepHooksOrderAndRemoval) {
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(0.1));
  std::vector<std::string> log;
  auto h1 = opt.register_step_pre_hook([&](optim::Optimizer& o) {
    EXPECT_EQ(&o, &opt);
    log.push_back("pre1 x0=" + std::to_string(vals(x)[0]));
  });
  auto h2 = opt.register_step_pre_hook([&](optim::Optimizer&) { log.push_back("pre2"); });
  auto h3 = opt.register_step_post_hook([&](optim::Optimizer&) { log.push_back("post x0=" + std::to_string(vals(x)[0])); });
  backward_quadratic(x);
  opt.step();
  std::vector<std::string> want = {"pre1 x0=" + std::to_string(1.5), "pre2", "post x0=" + std::to_string(1.5 * 0.8)};
  EXPECT_EQ(log, want);
  h1.remove();
  h1.remove();  // twice is harmless
  log.clear();
  opt.step();
  EXPECT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0], "pre2");
  // A hook that removes itself while running.
  optim::RemovableHandle self;
  int calls = 0;
  self = opt.register_step_post_hook([&](optim::Optimizer&) { ++calls; self.remove(); });
  opt.step();
  opt.step();
  EXPECT_EQ(calls, 1);
  // Handles outliving the optimizer.
  optim::RemovableHandle late;
  {
    optim::SGD tmp({make_param()}, optim::SGDOptions(0.1));
    late = tmp.register_step_pre_hook([](optim::Optimizer&) {});
  }
  late.remove();
  (void)h2;
  (void)h3;
}

TEST(OptimBase, Closure) {
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(0.1));
  int evals = 0;
  Tensor loss = opt.step([&] {
    ++evals;
    opt.zero_grad();
    Tensor c = tensor::tensor(kC, kFloat64);
    Tensor l = (c * x * x).sum();
    l.backward();
    return l;
  });
  EXPECT_EQ(evals, 1);
  double want = 0;
  for (size_t i = 0; i < 3; ++i) want += kC[i] * kX0[i] * kX0[i];
  EXPECT_DOUBLE_EQ(loss.item<double>(), want);
  EXPECT_DOUBLE_EQ(vals(x)[1], kX0[1] * (1 - 0.2 * kC[1]));
  // The closure records even when the caller is under no-grad.
  {
    NoGradGuard ng;
    opt.step([&] {
      opt.zero_grad();
      Tensor l = (x * x).sum();
      EXPECT_TRUE(l.requires_grad());
      l.backward();
      return l;
    });
  }
}

TEST(OptimBase, StateDictRoundTrip) {
  manual_seed(20);
  auto make_model = [] { return nn::Linear(3, 2); };
  nn::Linear a = make_model(), b = make_model();
  b->load_state_dict(a->state_dict());
  Tensor in = tensor::randn({4, 3});
  auto loss_of = [&](nn::Linear& m) { return (m(in) * m(in)).sum(); };
  optim::Adam oa(a->parameters(), optim::AdamOptions(0.05).amsgrad(true));
  for (int s = 0; s < 2; ++s) {
    oa.zero_grad();
    loss_of(a).backward();
    oa.step();
  }
  oa.param_groups()[0].options().set_lr(0.02);
  optim::NamedTensors sd = oa.state_dict();
  std::vector<std::string> keys;
  for (auto& kv : sd) keys.push_back(kv.first);
  std::vector<std::string> want = {"param_groups.0.params", "param_groups.0.lr", "param_groups.0.betas.0",
                                   "param_groups.0.betas.1", "param_groups.0.eps", "param_groups.0.weight_decay",
                                   "param_groups.0.amsgrad", "param_groups.0.maximize", "state.0.step",
                                   "state.0.exp_avg", "state.0.exp_avg_sq", "state.0.max_exp_avg_sq", "state.1.step",
                                   "state.1.exp_avg", "state.1.exp_avg_sq", "state.1.max_exp_avg_sq"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(vals(sd[0].second), (std::vector<double>{0, 1}));
  EXPECT_DOUBLE_EQ(sd[1].second.item<double>(), 0.02);
  EXPECT_EQ(sd[8].second.item<int64_t>(), 2);
  // A fresh optimizer on b (same values as a) restored from the dict continues exactly like a.
  b->load_state_dict(a->state_dict());
  optim::Adam ob(b->parameters(), optim::AdamOptions(0.5));
  ob.load_state_dict(sd);
  EXPECT_DOUBLE_EQ(ob.param_groups()[0].options().get_lr(), 0.02);
  EXPECT_TRUE(static_cast<optim::AdamOptions&>(ob.param_groups()[0].options()).amsgrad());
  // The loaded state is a copy, not shared with the source.
  EXPECT_FALSE(ob.state_dict()[9].second.is_same(sd[9].second));
  for (int s = 0; s < 2; ++s) {
    oa.zero_grad();
    ob.zero_grad();
    loss_of(a).backward();
    loss_of(b).backward();
    oa.step();
    ob.step();
  }
  EXPECT_EQ(vals(a->weight), vals(b->weight));
  EXPECT_EQ(vals(a->bias), vals(b->bias));
  // Layout mismatches are refused before anything changes.
  optim::Adam wrong({tensor::zeros({2}).requires_grad_(true)}, optim::AdamOptions(0.1));
  expect_error([&] { wrong.load_state_dict(sd); }, {"load_state_dict", "state.1", "1 parameters"});
  EXPECT_DOUBLE_EQ(wrong.param_groups()[0].options().get_lr(), 0.1);
  optim::SGD sgd(a->parameters(), optim::SGDOptions(0.1));
  expect_error([&] { sgd.load_state_dict(sd); }, {"SGD", "betas.0"});
  expect_error([&] { ob.load_state_dict({{"foo", tensor::zeros({1})}}); }, {"unexpected key", "foo"});
}

// ---------------------------------------------------------------------------------------------
// Schedulers (Note [Scheduler timing]: libtorch C++'s step() computes at the count before it
// advances, one step behind Python). The StepLR and ReduceLROnPlateauScheduler sequences below
// are also what libtorch prints for the same scenarios (1.13.1 and 2.15 for StepLR, 2.15 for
// ReduceLROnPlateauScheduler, which 1.13 lacks), except where Note [ReduceLROnPlateau in max mode]
// says otherwise.

namespace {
double lr_of(optim::Optimizer& opt, size_t g = 0) { return opt.param_groups()[g].options().get_lr(); }

// The lr each of `steps` optimizer steps uses when sched.step() follows every optimizer step;
// outside(s) runs before optimizer step s (to change the lr from outside).
template <typename Sched>
std::vector<double> lrs_used(optim::Optimizer& opt, Sched& sched, int steps,
                             const std::function<void(int)>& outside = [](int) {}) {
  std::vector<double> used;
  for (int s = 1; s <= steps; ++s) {
    outside(s);
    used.push_back(lr_of(opt));
    opt.step();
    sched.step();
  }
  return used;
}
}  // namespace

TEST(OptimSchedulers, StepLRDecaysOneStepAfterPython) {
  // step_size 5: the 6th sched.step() finds the count at 5 and decays, so optimizer steps 1..6
  // use 1, steps 7..11 use 0.1 and step 12 uses 0.1 * 0.1 (Python: 1 for steps 1..5, 0.1 from
  // step 6, 0.01 from step 11).
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(1.0));
  optim::StepLR sched(opt, 5, 0.1);
  EXPECT_EQ(sched.get_last_lr(), std::vector<double>{1.0});
  EXPECT_EQ(sched.last_epoch(), 0);
  const double a = 0.1, b = 0.1 * 0.1;  // 0.010000000000000002, as libtorch's recursive product
  EXPECT_EQ(lrs_used(opt, sched, 12), (std::vector<double>{1, 1, 1, 1, 1, 1, a, a, a, a, a, b}));
  EXPECT_EQ(sched.last_epoch(), 12);
  EXPECT_EQ(sched.get_last_lr(), std::vector<double>{b});
}

TEST(OptimSchedulers, StepLRSmallStepSizes) {
  Tensor x = make_param();
  {
    // step_size 1: the first step() (count 0) changes nothing, then every step() decays.
    optim::SGD opt({x}, optim::SGDOptions(1.0));
    optim::StepLR sched(opt, 1, 0.5);
    EXPECT_EQ(lrs_used(opt, sched, 5), (std::vector<double>{1, 1, 0.5, 0.25, 0.125}));
  }
  {
    optim::SGD opt({x}, optim::SGDOptions(1.0));
    optim::StepLR sched(opt, 2, 0.5);
    EXPECT_EQ(lrs_used(opt, sched, 8), (std::vector<double>{1, 1, 1, 0.5, 0.5, 0.25, 0.25, 0.125}));
  }
  // After n steps the lr is base * gamma^((n - 1) / step_size), in float64 (floor division).
  for (unsigned size : {1u, 3u, 4u, 7u}) {
    optim::SGD opt({x}, optim::SGDOptions(0.8));
    optim::StepLR sched(opt, size, 0.7);
    for (int n = 1; n <= 30; ++n) {
      sched.step();
      double want = 0.8 * std::pow(0.7, (n - 1) / static_cast<int>(size));
      EXPECT_NEAR(lr_of(opt), want, 1e-15 * want) << "step_size " << size << " after " << n << " steps";
      EXPECT_EQ(sched.last_epoch(), n);
    }
  }
}

TEST(OptimSchedulers, StepLRKeepsAnLrSetFromOutside) {
  // StepLR multiplies the groups' current lr, so an lr set between steps carries: 0.3 set before
  // optimizer step 4 is decayed by the 4th step() (count 3).
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(1.0));
  optim::StepLR sched(opt, 3, 0.5);
  auto outside = [&](int s) {
    if (s == 4) opt.param_groups()[0].options().set_lr(0.3);
  };
  EXPECT_EQ(lrs_used(opt, sched, 10, outside),
            (std::vector<double>{1, 1, 1, 0.3, 0.3 * 0.5, 0.15, 0.15, 0.15 * 0.5, 0.075, 0.075}));
}

TEST(OptimSchedulers, CosineAnnealingLROnTheLibtorchTiming) {
  Tensor x = make_param(), y = make_param();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{x});
  groups.emplace_back(std::vector<Tensor>{y}, std::make_unique<optim::AdamOptions>(optim::AdamOptions(0.5)));
  optim::Adam opt(groups, optim::AdamOptions(0.1));
  const int64_t T = 4;
  const double eta = 0.01;
  optim::CosineAnnealingLR sched(opt, T, eta);
  // The first step() computes count 0 and keeps the base lrs exactly.
  sched.step();
  EXPECT_EQ(lr_of(opt, 0), 0.1);
  EXPECT_EQ(lr_of(opt, 1), 0.5);
  // After n steps: the closed form eta + (base - eta)(1 + cos(pi (n - 1) / T)) / 2, which
  // PyTorch's recursive form reproduces; eta itself after T + 1 steps, rising again after.
  for (int n = 2; n <= 13; ++n) {
    sched.step();
    EXPECT_EQ(sched.last_epoch(), n);
    for (size_t g = 0; g < 2; ++g) {
      double base = g == 0 ? 0.1 : 0.5;
      double want = eta + (base - eta) * (1 + std::cos(M_PI * (n - 1) / T)) / 2;
      EXPECT_NEAR(lr_of(opt, g), want, 1e-12) << "after " << n << " steps, group " << g;
      EXPECT_EQ(sched.get_last_lr()[g], lr_of(opt, g));
    }
    if (n == T + 1) EXPECT_NEAR(lr_of(opt, 1), eta, 1e-15);
  }
  expect_error([&] { optim::CosineAnnealingLR bad(opt, 0); }, {"CosineAnnealingLR", "T_max"});
  expect_error([&] { optim::StepLR bad(opt, 0); }, {"StepLR", "step_size"});
}

TEST(OptimSchedulers, CosineAnnealingLRKeepsAnLrSetFromOutside) {
  // The recursive form scales the distance to eta_min by (1 + cos(pi e / T)) / (1 + cos(pi (e - 1)
  // / T)) at count e, so an lr set from outside decays from where it was put.
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(1.0));
  const int64_t T = 6;
  const double eta = 0.1;
  optim::CosineAnnealingLR sched(opt, T, eta);
  for (int n = 1; n <= 3; ++n) sched.step();  // counts 0, 1, 2
  opt.param_groups()[0].options().set_lr(2.0);
  double want = 2.0;
  for (int e = 3; e <= 5; ++e) {
    sched.step();
    want = eta + (want - eta) * (1 + std::cos(M_PI * e / T)) / (1 + std::cos(M_PI * (e - 1) / T));
    EXPECT_NEAR(lr_of(opt), want, 1e-12) << "count " << e;
  }
}

TEST(OptimSchedulers, StepLRChainedWithCosine) {
  // Both multiply the current lr (cosine with eta_min 0), so stepping both after every optimizer
  // step composes: after n steps 0.5^((n - 1) / 2) (1 + cos(pi (n - 1) / T)) / 2, up to count T.
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(1.0));
  const int64_t T = 6;
  optim::StepLR step(opt, 2, 0.5);
  optim::CosineAnnealingLR cosine(opt, T);
  for (int n = 1; n <= T + 1; ++n) {
    opt.step();
    step.step();
    cosine.step();
    double want = std::pow(0.5, (n - 1) / 2) * (1 + std::cos(M_PI * (n - 1) / T)) / 2;
    EXPECT_NEAR(lr_of(opt), want, 1e-15) << "after " << n << " steps";
  }
}

TEST(OptimSchedulers, GroupsAddedAfterTheSchedulerAreRefused) {
  Tensor x = make_param(), y = make_param();
  optim::SGD opt({x}, optim::SGDOptions(1.0));
  optim::CosineAnnealingLR cosine(opt, 4);
  optim::ReduceLROnPlateauScheduler plateau(opt, optim::ReduceLROnPlateauScheduler::min, 0.5, 0);
  optim::StepLR step(opt, 1, 0.5);
  cosine.step();
  opt.add_param_group(optim::OptimizerParamGroup({y}));
  expect_error([&] { cosine.step(); }, {"CosineAnnealingLR", "2 parameter groups", "had 1"});
  plateau.step(1.0f);  // an improvement: no reduction, nothing to check yet
  expect_error([&] { plateau.step(2.0f); }, {"ReduceLROnPlateauScheduler", "2 parameter groups", "had 1"});
  // StepLR works from the current lrs alone and handles the new group, as libtorch's.
  step.step();
  step.step();
  EXPECT_EQ(lr_of(opt, 0), 0.5);
  EXPECT_EQ(lr_of(opt, 1), 0.5);
}

// ReduceLROnPlateauScheduler: the lr after each step(metric), worked by hand from the rules
// (best starts at FLT_MAX in min mode; a metric is bad unless it beats best by the threshold; the
// (patience + 1)th bad one in a row multiplies the lr by factor, then `cooldown` steps reset the
// bad count). All but the max-mode cases are also libtorch 2.15's output.

namespace {
using Plateau = optim::ReduceLROnPlateauScheduler;

std::vector<double> plateau_lrs(const std::vector<float>& metrics, Plateau::SchedulerMode mode, float factor,
                                int patience, double threshold, Plateau::ThresholdMode tmode, int cooldown,
                                const std::vector<float>& min_lr = {}, double eps = 1e-8) {
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(1.0));
  Plateau sched(opt, mode, factor, patience, threshold, tmode, cooldown, min_lr, eps);
  std::vector<double> lrs;
  for (float m : metrics) {
    sched.step(m);
    lrs.push_back(lr_of(opt));
  }
  return lrs;
}
}  // namespace

TEST(OptimSchedulers, ReduceLROnPlateauPatienceAndCooldown) {
  // patience 2, cooldown 1: 1.0 and 0.9 improve; 0.9 x3 are bad 1, 2, 3 -> halve at the 5th
  // step; the 6th is bad but in cooldown (count reset); 0.95 x2 bad 1, 2; 0.8 improves; 0.8 x3
  // bad 1, 2, 3 -> halve at the 12th; the 13th is in cooldown.
  EXPECT_EQ(plateau_lrs({1.0f, 0.9f, 0.9f, 0.9f, 0.9f, 0.9f, 0.95f, 0.95f, 0.8f, 0.8f, 0.8f, 0.8f, 0.8f}, Plateau::min,
                        0.5f, 2, 1e-4, Plateau::rel, 1),
            (std::vector<double>{1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25}));
}

TEST(OptimSchedulers, ReduceLROnPlateauThresholds) {
  // rel 0.1: an improvement must go below best * 0.9. 0.95 > 0.9 bad; 0.89 < 0.9 improves (best
  // 0.89); 0.85 > 0.801 bad; 0.79 < 0.801 improves.
  EXPECT_EQ(plateau_lrs({1.0f, 0.95f, 0.89f, 0.85f, 0.79f}, Plateau::min, 0.5f, 0, 0.1, Plateau::rel, 0),
            (std::vector<double>{1, 0.5, 0.5, 0.25, 0.25}));
  // abs 0.05, patience 1: below best - 0.05. 0.96 bad 1; 0.97 bad 2 -> halve; 0.94 < 0.95
  // improves; 0.93, 0.92 bad 1, 2 -> halve; 0.9 < 0.89? no, bad 1.
  EXPECT_EQ(plateau_lrs({1.0f, 0.96f, 0.97f, 0.94f, 0.93f, 0.92f, 0.9f}, Plateau::min, 0.5f, 1, 0.05, Plateau::abs, 0),
            (std::vector<double>{1, 1, 0.5, 0.5, 0.5, 0.25, 0.25}));
  // A NaN metric is never an improvement.
  EXPECT_EQ(plateau_lrs({1.0f, NAN, 0.5f}, Plateau::min, 0.5f, 0, 1e-4, Plateau::rel, 0),
            (std::vector<double>{1, 0.5, 0.5}));
  // max rel: above best * 1.0001.
  EXPECT_EQ(plateau_lrs({0.5f, 0.6f, 0.6f, 0.7f}, Plateau::max, 0.5f, 0, 1e-4, Plateau::rel, 0),
            (std::vector<double>{1, 1, 0.5, 0.5}));
}

TEST(OptimSchedulers, ReduceLROnPlateauMaxModeFollowsPython) {
  // Note [ReduceLROnPlateau in max mode]. Negative accuracies-like metrics that keep rising: the
  // first improves on lowest(), -0.5 and -0.2 improve, -0.3 is bad. libtorch 2.15 starts from
  // FLT_MIN > 0 and gives 0.5 0.25 0.125 0.0625.
  EXPECT_EQ(plateau_lrs({-1.0f, -0.5f, -0.2f, -0.3f}, Plateau::max, 0.5f, 0, 1e-4, Plateau::rel, 0),
            (std::vector<double>{1, 1, 1, 0.5}));
  // abs 0.1: above best + 0.1. 1.05 bad; 1.2 improves; 1.25 bad; 1.4 improves. libtorch 2.15
  // tests best * 0.1 and never reduces: 1 1 1 1 1.
  EXPECT_EQ(plateau_lrs({1.0f, 1.05f, 1.2f, 1.25f, 1.4f}, Plateau::max, 0.5f, 0, 0.1, Plateau::abs, 0),
            (std::vector<double>{1, 0.5, 0.5, 0.25, 0.25}));
}

TEST(OptimSchedulers, ReduceLROnPlateauFloatsMinLrAndEps) {
  // factor and min_lr are floats, as in libtorch: 1 * double(0.1f) = 0.10000000149011612.
  const double f = static_cast<double>(0.1f);
  EXPECT_EQ(plateau_lrs({1.0f, 1.0f, 1.0f}, Plateau::min, 0.1f, 0, 1e-4, Plateau::rel, 0),
            (std::vector<double>{1, f, f * f}));
  // min_lr 0.3 clamps the second halving at double(0.3f) = 0.30000001192092896.
  const double floor = static_cast<double>(0.3f);
  EXPECT_EQ(plateau_lrs({1.0f, 1.0f, 1.0f, 1.0f}, Plateau::min, 0.5f, 0, 1e-4, Plateau::rel, 0, {0.3f}),
            (std::vector<double>{1, 0.5, floor, floor}));
  // eps 0.2: 0.5 -> 0.25 changes by 0.25 > 0.2; 0.25 -> 0.125 by 0.125, skipped.
  EXPECT_EQ(plateau_lrs({1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, Plateau::min, 0.5f, 0, 1e-4, Plateau::rel, 0, {}, 0.2),
            (std::vector<double>{1, 0.5, 0.25, 0.25, 0.25}));
  // Two groups, each with its own min_lr.
  Tensor x = make_param(), y = make_param();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{x});
  groups.emplace_back(std::vector<Tensor>{y}, std::make_unique<optim::SGDOptions>(0.5));
  optim::SGD opt(groups, optim::SGDOptions(1.0));
  Plateau sched(opt, Plateau::min, 0.5f, 0, 1e-4, Plateau::rel, 0, {0.2f, 0.05f});
  std::vector<std::vector<double>> got;
  for (int i = 0; i < 4; ++i) {
    sched.step(1.0f);
    got.push_back({lr_of(opt, 0), lr_of(opt, 1)});
  }
  EXPECT_EQ(got, (std::vector<std::vector<double>>{{1, 0.5}, {0.5, 0.25}, {0.25, 0.125}, {double(0.2f), 0.0625}}));
}

TEST(OptimSchedulers, ReduceLROnPlateauVerboseAndErrors) {
  Tensor x = make_param();
  optim::SGD opt({x}, optim::SGDOptions(1.0));
  Plateau sched(opt, Plateau::min, 0.5f, 0, 1e-4, Plateau::rel, 0, {}, 1e-8, /*verbose=*/true);
  ::testing::internal::CaptureStdout();
  sched.step(1.0f);
  sched.step(1.0f);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "Epoch 2: reducing learning rate of group 0 to 0.5\n");
  EXPECT_EQ(std::cout.precision(), 6);  // put back (libtorch leaves it at 4)
  expect_error([&] { Plateau bad(opt, Plateau::min, 1.0f); }, {"ReduceLROnPlateauScheduler", "factor", "< 1"});
  expect_error([&] { Plateau bad(opt, Plateau::min, 0.5f, 1, 1e-4, Plateau::rel, 0, {0.1f, 0.2f}); },
               {"ReduceLROnPlateauScheduler", "2 min_lr values for 1 parameter groups"});
}

// ---------------------------------------------------------------------------------------------
// End to end

TEST(OptimEndToEnd, MLPClassifierLossFalls) {
  manual_seed(21);
  // XOR of the signs of two coordinates: not linearly separable, so the hidden layer must learn.
  const int64_t n = 256;
  Tensor X = tensor::rand({n, 2}) * 2 - 1;
  Tensor Y = (X.select(1, 0) * X.select(1, 1)).gt(0).to(kInt64);
  nn::Sequential model(nn::Linear(2, 16), nn::Tanh(), nn::Linear(16, 2));
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.05));
  float first = 0, last = 0;
  for (int it = 0; it < 300; ++it) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model(X), Y);
    loss.backward();
    opt.step();
    if (it == 0) first = loss.item<float>();
    last = loss.item<float>();
  }
  EXPECT_NEAR(first, std::log(2.0f), 0.15f);
  EXPECT_LT(last, 0.25f * first);
  Tensor pred = model(X).argmax(1);
  double acc = pred.eq(Y).to(kFloat64).mean().item<double>();
  EXPECT_GT(acc, 0.93);
}

TEST(OptimEndToEnd, LinearRegressionWithSGDMomentumAndStepLR) {
  manual_seed(22);
  Tensor X = tensor::randn({128, 3});
  Tensor w_true = tensor::tensor({{2.0f, -1.0f, 0.5f}});
  Tensor y = F::linear(X, w_true, tensor::tensor({0.3f}));
  nn::Linear fc(3, 1);
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::StepLR sched(opt, 50, 0.5);
  double first = 0, last = 0;
  for (int it = 0; it < 200; ++it) {
    opt.zero_grad();
    Tensor loss = F::mse_loss(fc(X), y);
    loss.backward();
    nn::utils::clip_grad_norm_(fc->parameters(), 10.0);
    opt.step();
    sched.step();
    if (it == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, 1e-6 * first);
  std::vector<double> w = vals(fc->weight);
  EXPECT_NEAR(w[0], 2.0, 1e-3);
  EXPECT_NEAR(w[1], -1.0, 1e-3);
  EXPECT_NEAR(w[2], 0.5, 1e-3);
  EXPECT_NEAR(fc->bias.item<double>(), 0.3, 1e-3);
}
