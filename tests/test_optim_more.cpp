// optim::RMSprop, Adagrad and LBFGS: trajectories against libtorch 1.13's (the numbers in
// tests/reference/libtorch_optim_ref.h, printed by tests/reference/libtorch_optim.cpp on the same
// problems) and, for RMSprop and Adagrad, against float64 loops written here from the update
// formulas; parameter groups, zero_grad, the state round trip through tensor::save/load (a
// resumed run matches the uninterrupted one bit for bit), and the errors for bad options.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/reference/libtorch_optim_ref.h"
#include "tests/temp_dir_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;
using tensor::testing::vals;
using Rows = std::vector<std::vector<double>>;

namespace {

// The problems of tests/reference/libtorch_optim.cpp, with the same starting points.
const std::vector<double> kRosen0 = {-1.5, 2.0};
const std::vector<double> kX = {0.5, -1.0, 2.0, 1.5, 0.25, -0.5, -0.75, 1.25, 0.0, 2.0, -0.5, 1.0, 0.1, 0.9, -1.2};
const std::vector<double> kY = {1.0, -0.5, 0.25, 2.0, -1.5, 0.75, 3.0, 0.0, -0.2, 1.1};
const std::vector<double> kW0 = {0.1, -0.2, 0.3, -0.4, 0.5, 0.05};
const std::vector<double> kB0 = {0.2, -0.1};

Tensor leaf(const std::vector<double>& v, std::vector<int64_t> shape, ScalarType dt = kFloat64) {
  return tensor::tensor(v, kFloat64).reshape(shape).to(dt).requires_grad_(true);
}

// f = (1 - x0)^2 + 100 (x1 - x0^2)^2.
Tensor rosen_loss(const Tensor& x) {
  Tensor a = 1 - x[0];
  Tensor b = x[1] - x[0] * x[0];
  return a * a + 100 * b * b;
}

// f = mean((X W^T + b - Y)^2).
Tensor linreg_loss(const Tensor& W, const Tensor& b) {
  Tensor X = tensor::tensor(kX, kFloat64).reshape({5, 3}).to(W.dtype());
  Tensor Y = tensor::tensor(kY, kFloat64).reshape({5, 2}).to(W.dtype());
  Tensor r = X.matmul(W.t()) + b - Y;
  return (r * r).mean();
}

struct Problem {
  std::vector<Tensor> params;
  bool rosen;
  Tensor loss() const { return rosen ? rosen_loss(params[0]) : linreg_loss(params[0], params[1]); }
};

Problem rosen(ScalarType dt = kFloat64) { return {{leaf(kRosen0, {2}, dt)}, true}; }
Problem linreg(ScalarType dt = kFloat64) { return {{leaf(kW0, {2, 3}, dt), leaf(kB0, {2}, dt)}, false}; }

std::vector<double> flat(const std::vector<Tensor>& ps) {
  std::vector<double> out;
  for (const auto& p : ps) {
    auto v = vals(p);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// `steps` plain steps (zero_grad, backward, step), as the generator runs them.
Rows run(optim::Optimizer& opt, const Problem& pb, int steps) {
  Rows rows;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    pb.loss().backward();
    opt.step();
    rows.push_back(flat(pb.params));
  }
  return rows;
}

void expect_rows(const Rows& got, const Rows& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t s = 0; s < got.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size()) << what;
    for (size_t i = 0; i < got[s].size(); ++i)
      EXPECT_NEAR(got[s][i], want[s][i], rtol * (1 + std::fabs(want[s][i])))
          << what << " step " << s + 1 << " elem " << i;
  }
}

// Rosenbrock's gradient, by hand.
std::vector<double> rosen_grad(const std::vector<double>& x) {
  return {-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] * x[0]), 200 * (x[1] - x[0] * x[0])};
}

// RMSprop on Rosenbrock, element by element from the update formulas in float64.
Rows rmsprop_ref(double lr, double alpha, double eps, double wd, double momentum, bool centered, int steps) {
  std::vector<double> x = kRosen0, v(2, 0), m(2, 0), buf(2, 0);
  Rows rows;
  for (int s = 0; s < steps; ++s) {
    auto g = rosen_grad(x);
    for (size_t i = 0; i < 2; ++i) {
      double gi = g[i] + wd * x[i];
      v[i] = alpha * v[i] + (1 - alpha) * gi * gi;
      double var = v[i];
      if (centered) {
        m[i] = alpha * m[i] + (1 - alpha) * gi;
        var -= m[i] * m[i];
      }
      double u = gi / (std::sqrt(var) + eps);
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + u;
        u = buf[i];
      }
      x[i] -= lr * u;
    }
    rows.push_back(x);
  }
  return rows;
}

// Adagrad on Rosenbrock, element by element from the update formulas in float64.
Rows adagrad_ref(double lr, double lr_decay, double wd, double init, double eps, int steps) {
  std::vector<double> x = kRosen0, sum(2, init);
  Rows rows;
  for (int s = 0; s < steps; ++s) {
    auto g = rosen_grad(x);
    const double clr = lr / (1 + s * lr_decay);
    for (size_t i = 0; i < 2; ++i) {
      double gi = g[i] + wd * x[i];
      sum[i] += gi * gi;
      x[i] -= clr * gi / (std::sqrt(sum[i]) + eps);
    }
    rows.push_back(x);
  }
  return rows;
}

// Every element bit for bit (NaN never expected).
void expect_bitwise(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(vals(a[i]), vals(b[i])) << what << " param " << i;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// RMSprop

// On Rosenbrock the RMSprop and Adagrad runs were bit-identical to libtorch's when written (the
// updates use its operation order); on linreg the gradients differ in the last bits (the matmul's
// summation order), hence the tolerance. float32: the gradients' float32 rounding differs the
// same way, and the normalized updates carry it to below 1e-6.
TEST(OptimRMSprop, MatchesLibtorch) {
  struct Case {
    const char* name;
    Problem pb;
    optim::RMSpropOptions o;
    const Rows& want;
  };
  std::vector<Case> cases = {
      {"plain", rosen(), optim::RMSpropOptions(0.01), libtorch_ref::rmsprop_plain},
      {"momentum", rosen(), optim::RMSpropOptions(0.01).momentum(0.9), libtorch_ref::rmsprop_momentum},
      {"centered", rosen(), optim::RMSpropOptions(0.01).centered(true), libtorch_ref::rmsprop_centered},
      {"all", rosen(), optim::RMSpropOptions(0.005).alpha(0.9).eps(1e-6).momentum(0.5).centered(true).weight_decay(0.1),
       libtorch_ref::rmsprop_all},
      {"linreg", linreg(), optim::RMSpropOptions(0.02).momentum(0.3).weight_decay(0.05), libtorch_ref::rmsprop_linreg},
  };
  for (auto& c : cases) {
    optim::RMSprop opt(c.pb.params, c.o);
    expect_rows(run(opt, c.pb, 20), c.want, 1e-13, c.name);
  }
  // float32 parameters: float32 arithmetic throughout, as libtorch's.
  Problem pb = linreg(kFloat32);
  optim::RMSprop opt(pb.params, optim::RMSpropOptions(0.02).centered(true).momentum(0.9));
  expect_rows(run(opt, pb, 20), libtorch_ref::rmsprop_float32, 1e-6, "float32");
}

TEST(OptimRMSprop, MatchesFloat64Formulas) {
  struct Case {
    double lr, alpha, eps, wd, momentum;
    bool centered;
  };
  for (const Case& c : {Case{0.01, 0.99, 1e-8, 0, 0, false}, Case{0.01, 0.99, 1e-8, 0, 0.9, false},
                        Case{0.01, 0.99, 1e-8, 0, 0, true}, Case{0.005, 0.9, 1e-6, 0.1, 0.5, true}}) {
    Problem pb = rosen();
    optim::RMSprop opt(pb.params, optim::RMSpropOptions(c.lr)
                                      .alpha(c.alpha)
                                      .eps(c.eps)
                                      .weight_decay(c.wd)
                                      .momentum(c.momentum)
                                      .centered(c.centered));
    expect_rows(run(opt, pb, 20), rmsprop_ref(c.lr, c.alpha, c.eps, c.wd, c.momentum, c.centered, 20), 1e-12,
                "momentum " + std::to_string(c.momentum) + " centered " + std::to_string(c.centered));
  }
}

TEST(OptimRMSprop, ParamGroupsAndState) {
  Problem pb = linreg();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{pb.params[0]}, std::make_unique<optim::RMSpropOptions>(
                                                             optim::RMSpropOptions(0.03).momentum(0.9).centered(true)));
  groups.emplace_back(std::vector<Tensor>{pb.params[1]});
  optim::RMSprop opt(groups, optim::RMSpropOptions(0.01).weight_decay(0.2));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  // The second group took the defaults.
  EXPECT_DOUBLE_EQ(static_cast<optim::RMSpropOptions&>(opt.param_groups()[1].options()).weight_decay(), 0.2);
  expect_rows(run(opt, pb, 20), libtorch_ref::rmsprop_groups, 1e-13, "groups");
  // State: the buffers each group's options call for, nothing more.
  std::vector<std::string> keys;
  for (auto& kv : opt.state_dict()) keys.push_back(kv.first);
  std::vector<std::string> want = {"param_groups.0.params",
                                   "param_groups.0.lr",
                                   "param_groups.0.alpha",
                                   "param_groups.0.eps",
                                   "param_groups.0.weight_decay",
                                   "param_groups.0.momentum",
                                   "param_groups.0.centered",
                                   "state.0.step",
                                   "state.0.square_avg",
                                   "state.0.momentum_buffer",
                                   "state.0.grad_avg",
                                   "param_groups.1.params",
                                   "param_groups.1.lr",
                                   "param_groups.1.alpha",
                                   "param_groups.1.eps",
                                   "param_groups.1.weight_decay",
                                   "param_groups.1.momentum",
                                   "param_groups.1.centered",
                                   "state.1.step",
                                   "state.1.square_avg"};
  EXPECT_EQ(keys, want);
  auto& st = static_cast<optim::RMSpropParamState&>(*opt.state().at(pb.params[1].unsafeGetTensorImpl()));
  EXPECT_EQ(st.step(), 20);
  EXPECT_FALSE(st.momentum_buffer().defined());
}

// ---------------------------------------------------------------------------------------------
// Adagrad

TEST(OptimAdagrad, MatchesLibtorch) {
  struct Case {
    const char* name;
    Problem pb;
    optim::AdagradOptions o;
    const Rows& want;
  };
  std::vector<Case> cases = {
      {"plain", rosen(), optim::AdagradOptions(0.1), libtorch_ref::adagrad_plain},
      {"decay_init", rosen(), optim::AdagradOptions(0.1).lr_decay(0.1).initial_accumulator_value(0.5),
       libtorch_ref::adagrad_decay_init},
      {"wd_eps", rosen(), optim::AdagradOptions(0.05).weight_decay(0.1).eps(1e-3), libtorch_ref::adagrad_wd_eps},
      {"linreg", linreg(), optim::AdagradOptions(0.2).lr_decay(0.05).initial_accumulator_value(0.1),
       libtorch_ref::adagrad_linreg},
  };
  for (auto& c : cases) {
    optim::Adagrad opt(c.pb.params, c.o);
    expect_rows(run(opt, c.pb, 20), c.want, 1e-13, c.name);
  }
  Problem pb = linreg(kFloat32);
  optim::Adagrad opt(pb.params, optim::AdagradOptions(0.2).weight_decay(0.01));
  expect_rows(run(opt, pb, 20), libtorch_ref::adagrad_float32, 1e-6, "float32");
}

TEST(OptimAdagrad, MatchesFloat64Formulas) {
  struct Case {
    double lr, lr_decay, wd, init, eps;
  };
  for (const Case& c : {Case{0.1, 0, 0, 0, 1e-10}, Case{0.1, 0.1, 0, 0.5, 1e-10}, Case{0.05, 0, 0.1, 0, 1e-3},
                        Case{0.3, 0.2, 0.05, 0.25, 1e-6}}) {
    Problem pb = rosen();
    optim::Adagrad opt(pb.params, optim::AdagradOptions(c.lr)
                                      .lr_decay(c.lr_decay)
                                      .weight_decay(c.wd)
                                      .initial_accumulator_value(c.init)
                                      .eps(c.eps));
    expect_rows(run(opt, pb, 20), adagrad_ref(c.lr, c.lr_decay, c.wd, c.init, c.eps, 20), 1e-12,
                "lr_decay " + std::to_string(c.lr_decay) + " init " + std::to_string(c.init));
  }
}

TEST(OptimAdagrad, ParamGroupsAndInitialState) {
  Problem pb = linreg();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{pb.params[0]},
                      std::make_unique<optim::AdagradOptions>(
                          optim::AdagradOptions(0.3).lr_decay(0.2).initial_accumulator_value(0.25)));
  groups.emplace_back(std::vector<Tensor>{pb.params[1]});
  optim::Adagrad opt(groups, optim::AdagradOptions(0.1).weight_decay(0.1).initial_accumulator_value(0.25));
  // As libtorch, every sum exists (at the initial value) before the first step.
  auto sd = opt.state_dict();
  std::vector<std::string> keys;
  for (auto& kv : sd) keys.push_back(kv.first);
  std::vector<std::string> want = {"param_groups.0.params",
                                   "param_groups.0.lr",
                                   "param_groups.0.lr_decay",
                                   "param_groups.0.weight_decay",
                                   "param_groups.0.initial_accumulator_value",
                                   "param_groups.0.eps",
                                   "state.0.step",
                                   "state.0.sum",
                                   "param_groups.1.params",
                                   "param_groups.1.lr",
                                   "param_groups.1.lr_decay",
                                   "param_groups.1.weight_decay",
                                   "param_groups.1.initial_accumulator_value",
                                   "param_groups.1.eps",
                                   "state.1.step",
                                   "state.1.sum"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(vals(sd[7].second), std::vector<double>(6, 0.25));
  expect_rows(run(opt, pb, 20), libtorch_ref::adagrad_groups, 1e-13, "groups");

  // Note [Adagrad's initial accumulator per group]: a group's own initial value is used (where
  // libtorch would take the defaults'), and a group added later gets its state on its first step.
  Tensor a = tensor::tensor({1.0}, kFloat64).requires_grad_(true);
  Tensor b = tensor::tensor({1.0}, kFloat64).requires_grad_(true);
  optim::Adagrad two({a}, optim::AdagradOptions(1.0));
  two.add_param_group(optim::OptimizerParamGroup(
      {b}, std::make_unique<optim::AdagradOptions>(optim::AdagradOptions(1.0).initial_accumulator_value(3.0))));
  EXPECT_EQ(two.state().count(b.unsafeGetTensorImpl()), 0u);
  (a + b).sum().backward();
  two.step();
  // g = 1: a -= 1 / (sqrt(0 + 1) + eps), b -= 1 / (sqrt(3 + 1) + eps), eps = 1e-10.
  EXPECT_DOUBLE_EQ(vals(a)[0], 1 - 1 / (1 + 1e-10));
  EXPECT_DOUBLE_EQ(vals(b)[0], 1 - 1 / (2 + 1e-10));
}

// ---------------------------------------------------------------------------------------------
// LBFGS

namespace {

// `steps` calls of step(closure); checks the parameters, the returned losses, the closure's
// calls and the state's counters against libtorch's: values to rtol for the first `tight_steps`
// steps, to loose_rtol after.
void lbfgs_check(const std::string& what, Problem pb, optim::LBFGSOptions o, const Rows& want, const Rows& want_info,
                 double rtol, size_t tight_steps = SIZE_MAX, double loose_rtol = 0) {
  optim::LBFGS opt(pb.params, o);
  int64_t calls = 0;
  auto closure = [&] {
    ++calls;
    opt.zero_grad();
    Tensor loss = pb.loss();
    loss.backward();
    return loss;
  };
  Rows rows;
  for (size_t s = 0; s < want.size(); ++s) {
    calls = 0;
    const double loss = opt.step(closure).item<double>();
    rows.push_back(flat(pb.params));
    auto& st = static_cast<optim::LBFGSParamState&>(*opt.state().at(pb.params[0].unsafeGetTensorImpl()));
    const auto& w = want_info[s];
    const double tol = s < tight_steps ? rtol : loose_rtol;
    EXPECT_NEAR(loss, w[0], tol * (1 + std::fabs(w[0]))) << what << " step " << s + 1;
    EXPECT_EQ(calls, static_cast<int64_t>(w[1])) << what << " step " << s + 1;
    EXPECT_EQ(st.func_evals(), static_cast<int64_t>(w[2])) << what << " step " << s + 1;
    EXPECT_EQ(st.n_iter(), static_cast<int64_t>(w[3])) << what << " step " << s + 1;
  }
  for (size_t s = 0; s < rows.size(); ++s)
    expect_rows({rows[s]}, {want[s]}, s < tight_steps ? rtol : loose_rtol, what + " step " + std::to_string(s + 1));
}

}  // namespace

TEST(OptimLBFGS, FixedStepMatchesLibtorch) {
  lbfgs_check("rosen_fixed", rosen(), optim::LBFGSOptions(0.05).max_iter(4), libtorch_ref::lbfgs_rosen_fixed,
              libtorch_ref::lbfgs_rosen_fixed_info, 1e-12);
  // max_eval 2 < max_iter 3: each step() stops after its second evaluation.
  lbfgs_check("linreg_fixed", linreg(), optim::LBFGSOptions(0.5).max_iter(3).max_eval(2),
              libtorch_ref::lbfgs_linreg_fixed, libtorch_ref::lbfgs_linreg_fixed_info, 1e-12);
}

TEST(OptimLBFGS, StrongWolfeMatchesLibtorch) {
  // history_size 3 < the iterations: the oldest pairs are dropped. The two runs take the same
  // path (every evaluation count agrees) but not the same bits: from the 5th iteration on, a
  // 2-element dot product (y.s) rounds differently in libtorch (its BLAS ddot contracts into an
  // FMA), and Rosenbrock's curved valley amplifies that ulp some 30-fold per step, to 1e-7 by
  // step 8. Steps 1-3 hold to 1e-11.
  lbfgs_check("rosen_wolfe", rosen(), optim::LBFGSOptions(1).max_iter(5).history_size(3).line_search_fn("strong_wolfe"),
              libtorch_ref::lbfgs_rosen_wolfe, libtorch_ref::lbfgs_rosen_wolfe_info, 1e-11, 3, 1e-6);
  // The defaults (max_iter 20, max_eval 25): converges in three steps.
  lbfgs_check("rosen_wolfe_default", rosen(), optim::LBFGSOptions(1).line_search_fn("strong_wolfe"),
              libtorch_ref::lbfgs_rosen_wolfe_default, libtorch_ref::lbfgs_rosen_wolfe_default_info, 1e-10);
  // Two parameters flattened into one vector; the third step finds no descent direction left.
  lbfgs_check("linreg_wolfe", linreg(), optim::LBFGSOptions(1).max_iter(10).line_search_fn("strong_wolfe"),
              libtorch_ref::lbfgs_linreg_wolfe, libtorch_ref::lbfgs_linreg_wolfe_info, 1e-10);
}

TEST(OptimLBFGS, OptionsAndErrors) {
  Problem pb = rosen();
  optim::LBFGS opt(pb.params, optim::LBFGSOptions().max_iter(8));
  // An unset max_eval becomes max_iter * 5 / 4 in the group and the defaults, as libtorch.
  const auto& o = static_cast<const optim::LBFGSOptions&>(opt.param_groups()[0].options());
  EXPECT_EQ(o.max_eval(), std::optional<int64_t>(10));
  EXPECT_EQ(static_cast<const optim::LBFGSOptions&>(opt.defaults()).max_eval(), std::optional<int64_t>(10));
  EXPECT_DOUBLE_EQ(o.lr(), 1.0);
  EXPECT_EQ(o.history_size(), 100);
  EXPECT_FALSE(o.line_search_fn().has_value());
  // The closure is required (through the base class, where step's argument may be omitted).
  optim::Optimizer& base = opt;
  expect_error([&] { base.step(); }, {"LBFGS requires closure to be passed"});
  expect_error([&] { optim::LBFGS bad(pb.params, optim::LBFGSOptions().line_search_fn("backtracking")); },
               {"LBFGS", "only 'strong_wolfe' is supported", "backtracking"});
  expect_error([&] { optim::LBFGS bad(pb.params, optim::LBFGSOptions().history_size(0)); },
               {"LBFGS", "history_size", "0"});
  expect_error([&] { optim::LBFGS bad(pb.params, optim::LBFGSOptions(-1)); }, {"LBFGS", "Invalid learning rate", "-1"});
  Tensor w = tensor::zeros({2}, kFloat64).requires_grad_(true);
  std::vector<optim::OptimizerParamGroup> groups = {optim::OptimizerParamGroup({pb.params[0]}),
                                                    optim::OptimizerParamGroup({w})};
  expect_error([&] { optim::LBFGS bad(groups); },
               {"LBFGS doesn't support per-parameter options (parameter groups)", "2 groups"});
  expect_error(
      [&] {
        optim::LBFGS bad({pb.params[0], tensor::zeros({2}, kFloat32).requires_grad_(true)});
      },
      {"LBFGS", "share one dtype"});
  // zero_grad clears what the closure left.
  opt.step([&] {
    opt.zero_grad();
    Tensor l = rosen_loss(pb.params[0]);
    l.backward();
    return l;
  });
  EXPECT_TRUE(pb.params[0].grad().defined());
  opt.zero_grad();
  EXPECT_FALSE(pb.params[0].grad().defined());
}

TEST(OptimLBFGS, StopsAtOnceWhenTheGradientIsBelowTolerance) {
  // At Rosenbrock's minimum (1, 1) the gradient is 0: one evaluation, no iteration, no move.
  Tensor x = leaf({1.0, 1.0}, {2});
  optim::LBFGS opt({x}, optim::LBFGSOptions().line_search_fn("strong_wolfe"));
  int calls = 0;
  Tensor loss = opt.step([&] {
    ++calls;
    opt.zero_grad();
    Tensor l = rosen_loss(x);
    l.backward();
    return l;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(loss.item<double>(), 0.0);
  EXPECT_EQ(vals(x), (std::vector<double>{1.0, 1.0}));
  auto& st = static_cast<optim::LBFGSParamState&>(*opt.state().at(x.unsafeGetTensorImpl()));
  EXPECT_EQ(st.func_evals(), 1);
  EXPECT_EQ(st.n_iter(), 0);
}

// ---------------------------------------------------------------------------------------------
// State through tensor::save / tensor::load: a run saved after k steps and resumed in a fresh
// optimizer over fresh parameters ends bit for bit where the uninterrupted run does.

namespace {

// Copies of pb's parameters (values only) as fresh leaves.
Problem copy_of(const Problem& pb) {
  Problem out{{}, pb.rosen};
  for (const Tensor& p : pb.params) out.params.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

template <typename Opt, typename Options>
void resume_check(const std::string& what, Problem pb, Options o, int k, int more, bool closure_steps) {
  Problem ref = copy_of(pb);
  Opt a(ref.params, o);
  Opt b(pb.params, o);
  auto do_step = [&](Opt& opt, const Problem& p) {
    auto closure = [&] {
      opt.zero_grad();
      Tensor l = p.loss();
      l.backward();
      return l;
    };
    if (closure_steps) {
      opt.step(closure);
    } else {
      closure();
      static_cast<optim::Optimizer&>(opt).step();
    }
  };
  for (int s = 0; s < k + more; ++s) do_step(a, ref);
  for (int s = 0; s < k; ++s) do_step(b, pb);
  const std::string path = tensor::testing::temp_path(what + ".safetensors");
  tensor::save(b, path);
  Problem resumed = copy_of(pb);
  // Different options: the file's hyperparameters replace them.
  Opt c(resumed.params, Options(123.0));
  tensor::load(c, path);
  for (int s = 0; s < more; ++s) do_step(c, resumed);
  expect_bitwise(resumed.params, ref.params, what);
  // And the uninterrupted one moved (the check would be empty otherwise).
  EXPECT_NE(flat(ref.params), flat(copy_of(pb).params)) << what;
}

}  // namespace

TEST(OptimStateRoundTrip, RMSpropAdagradLBFGSResumeBitForBit) {
  resume_check<optim::RMSprop>("rmsprop", linreg(),
                               optim::RMSpropOptions(0.01).momentum(0.9).centered(true).weight_decay(0.1), 5, 7, false);
  resume_check<optim::RMSprop>("rmsprop_f32", linreg(kFloat32), optim::RMSpropOptions(0.01).momentum(0.5), 3, 4, false);
  resume_check<optim::Adagrad>("adagrad", linreg(),
                               optim::AdagradOptions(0.1).lr_decay(0.05).initial_accumulator_value(0.2), 5, 7, false);
  resume_check<optim::Adagrad>("adagrad_f32", rosen(kFloat32), optim::AdagradOptions(0.1).weight_decay(0.1), 3, 4,
                               false);
  // LBFGS's flat state and history (history_size 3 is reached before the save), with and
  // without the line search, and in float32 (t and prev_loss stay float64 in the file).
  resume_check<optim::LBFGS>("lbfgs_wolfe", rosen(),
                             optim::LBFGSOptions(1).max_iter(5).history_size(3).line_search_fn("strong_wolfe"), 3, 3,
                             true);
  resume_check<optim::LBFGS>("lbfgs_fixed", linreg(), optim::LBFGSOptions(0.5).max_iter(3), 2, 3, true);
  resume_check<optim::LBFGS>("lbfgs_f32", rosen(kFloat32),
                             optim::LBFGSOptions(1).max_iter(4).line_search_fn("strong_wolfe"), 2, 2, true);
}

TEST(OptimStateRoundTrip, LBFGSStateDictLayout) {
  Problem pb = linreg();
  optim::LBFGS opt(pb.params, optim::LBFGSOptions(1).max_iter(4).history_size(2).line_search_fn("strong_wolfe"));
  opt.step([&] {
    opt.zero_grad();
    Tensor l = pb.loss();
    l.backward();
    return l;
  });
  std::vector<std::string> keys;
  for (auto& kv : opt.state_dict()) keys.push_back(kv.first);
  std::vector<std::string> want = {"param_groups.0.params",
                                   "param_groups.0.lr",
                                   "param_groups.0.max_iter",
                                   "param_groups.0.max_eval",
                                   "param_groups.0.tolerance_grad",
                                   "param_groups.0.tolerance_change",
                                   "param_groups.0.history_size",
                                   "param_groups.0.line_search_fn",
                                   "state.0.func_evals",
                                   "state.0.n_iter",
                                   "state.0.t",
                                   "state.0.prev_loss",
                                   "state.0.d",
                                   "state.0.H_diag",
                                   "state.0.prev_flat_grad",
                                   "state.0.old_dirs.0",
                                   "state.0.old_dirs.1",
                                   "state.0.old_stps.0",
                                   "state.0.old_stps.1",
                                   "state.0.ro.0",
                                   "state.0.ro.1"};
  EXPECT_EQ(keys, want);
  auto sd = opt.state_dict();
  EXPECT_EQ(sd[12].second.sizes(), (std::vector<int64_t>{8}));  // d spans W (6) and b (2)
  EXPECT_EQ(sd[10].second.dtype(), kFloat64);
  // A history entry out of range of the lists is refused at the next step, not read.
  optim::LBFGS other(copy_of(pb).params, optim::LBFGSOptions(1));
  optim::NamedTensors broken;
  for (auto& kv : sd)
    if (kv.first != "state.0.ro.1") broken.push_back(kv);
  other.load_state_dict(broken);
  expect_error([&] { other.step([&] { return tensor::zeros({}); }); }, {"LBFGS", "history", "differ"});
}

// ---------------------------------------------------------------------------------------------
// Errors for bad options: libtorch's messages, prefixed with the optimizer's name.

TEST(OptimMoreErrors, InvalidOptions) {
  Tensor x = tensor::zeros({2}, kFloat64).requires_grad_(true);
  expect_error([&] { optim::RMSprop o({x}, optim::RMSpropOptions(-0.1)); }, {"RMSprop", "Invalid learning rate: -0.1"});
  expect_error([&] { optim::RMSprop o({x}, optim::RMSpropOptions().eps(-1)); },
               {"RMSprop", "Invalid epsilon value: -1"});
  expect_error([&] { optim::RMSprop o({x}, optim::RMSpropOptions().momentum(-0.5)); },
               {"RMSprop", "Invalid momentum value: -0.5"});
  expect_error([&] { optim::RMSprop o({x}, optim::RMSpropOptions().weight_decay(-2)); },
               {"RMSprop", "Invalid weight_decay value: -2"});
  expect_error([&] { optim::RMSprop o({x}, optim::RMSpropOptions().alpha(-0.9)); },
               {"RMSprop", "Invalid alpha value: -0.9"});
  expect_error([&] { optim::Adagrad o({x}, optim::AdagradOptions(-1)); }, {"Adagrad", "Invalid learning rate: -1"});
  expect_error([&] { optim::Adagrad o({x}, optim::AdagradOptions().lr_decay(-0.1)); },
               {"Adagrad", "Invalid lr_decay value: -0.1"});
  expect_error([&] { optim::Adagrad o({x}, optim::AdagradOptions().weight_decay(-3)); },
               {"Adagrad", "Invalid weight_decay value: -3"});
  expect_error([&] { optim::Adagrad o({x}, optim::AdagradOptions().initial_accumulator_value(-1)); },
               {"Adagrad", "Invalid initial_accumulator_value value: -1"});
  expect_error([&] { optim::Adagrad o({x}, optim::AdagradOptions().eps(-1e-3)); },
               {"Adagrad", "Invalid epsilon value: -0.001"});
  // A group's options changed after construction are checked at the step.
  optim::RMSprop r({x}, optim::RMSpropOptions());
  static_cast<optim::RMSpropOptions&>(r.param_groups()[0].options()).alpha(-1);
  (x * x).sum().backward();
  expect_error([&] { r.step(); }, {"RMSprop", "Invalid alpha value: -1"});
  // Loading another optimizer's dict names the hyperparameter it lacks.
  optim::Adagrad ag({x}, optim::AdagradOptions());
  expect_error([&] { ag.load_state_dict(r.state_dict()); }, {"AdagradOptions", "alpha"});
}
