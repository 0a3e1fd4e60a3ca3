// The fused CPU losses (Note [Fused CPU losses] in kernels/cpu/LossKernels.h): nll_loss,
// cross_entropy, huber_loss, multi_margin_loss and binary_cross_entropy_with_logits run as one
// kernel where nothing records a gradient. Their values are checked against PyTorch's
// (tests/reference/torch_nn_port_ref.h, the inputs of tests/test_port_nn.cpp), against float64
// loops written here from the losses' definitions, and against the composite path (taken for a
// weight that requires grad; for huber_loss, with a broadcast target; for cross_entropy, with
// an input that requires grad) on sizes that split over threads; invalid targets still raise
// the composite's errors. With autograd each is a Function whose backward is one pass (Notes
// [Huber loss Function], [nll_loss Function], [Multi-margin loss Function]): gradchecked,
// gradgradchecked, and its gradient checked against float64 loops and the composite's.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <omp.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/port_util.h"
#include "tests/reference/torch_nn_port_ref.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::det;
using tensor::testing::vals;

namespace {

void expect_values(const Tensor& got, const std::vector<double>& want, double rtol, const std::string& what) {
  const std::vector<double> g = vals(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
      continue;
    }
    EXPECT_NEAR(g[i], want[i], rtol * std::max(1.0, std::fabs(want[i]))) << what << " at " << i;
  }
}

/// The loss through the composite: the same call with the input requiring grad (it records).
template <class F>
Tensor composite(const Tensor& x, const F& f) {
  return f(x.detach().requires_grad_(true)).detach();
}

const int64_t kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

std::vector<double> reduce_ref(const std::vector<double>& per, int64_t r, double denom) {
  if (r == Reduction::None) return per;
  double s = 0;
  for (double v : per) s += v;
  return {r == Reduction::Mean ? s / denom : s};
}

}  // namespace

TEST(FusedLosses, MatchPyTorchWithoutRecording) {
  using namespace torch_ref;
  NoGradGuard no_grad;
  Tensor inp = det({4, 5}, 11, -2, 2), tgt = det({4, 5}, 12, -2, 2);
  const std::vector<double>* hub[3] = {&huber_none_out, &huber_mean_out, &huber_sum_out};
  for (int k = 0; k < 3; ++k)
    expect_values(tensor::huber_loss(inp, tgt, kReductions[k], 0.7), *hub[k], 1e-12, "huber_loss " + std::to_string(k));

  Tensor logp = tensor::log_softmax(det({4, 5}, 16, -2, 2), 1);
  Tensor nt = tensor::tensor({int64_t{1}, int64_t{4}, int64_t{-100}, int64_t{0}});
  expect_values(tensor::nll_loss(logp, nt, det({5}, 35, 0.5, 1.5), Reduction::Mean, -100), nll_weight_ignore_out, 1e-12,
                "nll_loss weight ignore_index");
  Tensor t4 = tensor::tensor({int64_t{1}, int64_t{4}, int64_t{2}, int64_t{0}});
  expect_values(tensor::nll_loss(logp, t4, {}, Reduction::Sum), nll_sum_out, 1e-12, "nll_loss sum");

  Tensor mt = tensor::tensor({int64_t{2}, int64_t{0}, int64_t{4}, int64_t{1}});
  Tensor mx = det({4, 5}, 29, -1, 1);
  expect_values(tensor::multi_margin_loss(mx, mt), multi_margin_p1_out, 1e-12, "multi_margin_loss p1");
  expect_values(tensor::multi_margin_loss(mx, mt, 2, 0.7, det({5}, 30, 0.5, 1.5), Reduction::None),
                multi_margin_p2_w_out, 1e-12, "multi_margin_loss p2 weight");
}

TEST(FusedLosses, NllLossMatchesReferenceAndComposite) {
  manual_seed(3);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const int64_t N = 3000, C = 40;  // N x C over the threading grain
    Tensor logp = tensor::log_softmax(randn({N, C}, dt), 1);
    Tensor t = randint(0, C, {N}, kInt64);
    t.index_put_({tensor::arange(0, N, 7)}, tensor::tensor({int64_t{-1}}));  // ignored rows
    Tensor w = rand({C}, dt) + 0.5;
    const Tensor lp64 = logp.to(kFloat64).contiguous(), w64 = w.to(kFloat64).contiguous();
    const double tol = dt == kFloat32 ? 2e-6 : 1e-12;
    for (bool weighted : {false, true})
      for (int64_t r : kReductions) {
        const std::string what = std::string("nll_loss ") + to_string(dt) + (weighted ? " weighted " : " ") +
                                 std::to_string(r);
        auto f = [&](const Tensor& x) { return tensor::nll_loss(x, t, weighted ? w : Tensor(), r, -1); };
        std::vector<double> per;
        double wsum = 0;
        for (int64_t n = 0; n < N; ++n) {
          const int64_t c = t[n].item<int64_t>();
          const double wn = c == -1 ? 0.0 : weighted ? w64[c].item<double>() : 1.0;
          per.push_back(c == -1 ? 0.0 : -lp64[n][c].item<double>() * wn);
          wsum += wn;
        }
        Tensor got = f(logp);
        EXPECT_FALSE(got.requires_grad()) << what;
        expect_values(got, reduce_ref(per, r, wsum), tol, what);
        // The composite: a weight that requires grad (ones for the unweighted loss).
        Tensor wc = (weighted ? w : ones({C}, dt)).detach().requires_grad_(true);
        expect_values(got, vals(tensor::nll_loss(logp, t, wc, r, -1).detach()), tol, what + " vs composite");
      }
  }
  // Every target ignored: the mean is 0 / 0 = NaN, as libtorch.
  Tensor all_ignored = tensor::nll_loss(zeros({2, 3}), tensor::tensor({int64_t{-100}, int64_t{-100}}));
  EXPECT_TRUE(std::isnan(all_ignored.item<double>()));
  // An out-of-range target raises the composite's message.
  EXPECT_THROW(
      {
        try {
          tensor::nll_loss(zeros({2, 3}), tensor::tensor({int64_t{1}, int64_t{3}}));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("out of bounds"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

TEST(FusedLosses, CrossEntropyMatchesReferenceAndComposite) {
  namespace F = tensor::nn::functional;
  manual_seed(8);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    // [N, C] over the threading grain, then rows shorter than a vector and a ragged width; the
    // big one comes transposed (not contiguous).
    for (auto [N, C] : {std::pair<int64_t, int64_t>{3000, 40}, {64, 10}, {5, 37}}) {
      Tensor x = (randn({C, N}, dt) * 3).t();
      Tensor t = randint(0, C, {N}, kInt64);
      t.index_put_({tensor::arange(0, N, 7)}, tensor::tensor({int64_t{-1}}));  // ignored rows
      Tensor w = rand({C}, dt) + 0.5;
      const Tensor x64 = x.to(kFloat64).contiguous(), w64 = w.to(kFloat64).contiguous();
      const std::vector<double> xv = vals(x64);
      const double tol = dt == kFloat32 ? 2e-6 : 1e-12;
      for (bool weighted : {false, true})
        for (int64_t r : kReductions) {
          const std::string what = std::string("cross_entropy ") + to_string(dt) + " " + std::to_string(N) + "x" +
                                   std::to_string(C) + (weighted ? " weighted " : " ") + std::to_string(r);
          auto opts = F::CrossEntropyFuncOptions().ignore_index(-1);
          if (weighted) opts = opts.weight(w);
          if (r == Reduction::None) opts = opts.reduction(tensor::kNone);
          if (r == Reduction::Sum) opts = opts.reduction(tensor::kSum);
          // -w_c (x_c - logsumexp(x)) per row, in double.
          std::vector<double> per;
          double wsum = 0;
          for (int64_t n = 0; n < N; ++n) {
            const int64_t c = t[n].item<int64_t>();
            const double* row = xv.data() + n * C;
            double m = row[0], s = 0;
            for (int64_t k = 1; k < C; ++k) m = std::max(m, row[k]);
            for (int64_t k = 0; k < C; ++k) s += std::exp(row[k] - m);
            const double wn = c == -1 ? 0.0 : weighted ? w64[c].item<double>() : 1.0;
            per.push_back(c == -1 ? 0.0 : -(row[c] - m - std::log(s)) * wn);
            wsum += wn;
          }
          Tensor got = F::cross_entropy(x, t, opts);
          EXPECT_FALSE(got.requires_grad()) << what;
          expect_values(got, reduce_ref(per, r, wsum), tol, what);
          // The composite (Note [Fused cross_entropy]'s Function): the input requires grad.
          expect_values(got, vals(composite(x, [&](const Tensor& xi) { return F::cross_entropy(xi, t, opts); })), tol,
                        what + " vs composite");
        }
    }
  }
  // Every target ignored: the mean is 0 / 0 = NaN, as libtorch.
  Tensor all_ignored = F::cross_entropy(zeros({2, 3}), tensor::tensor({int64_t{-100}, int64_t{-100}}));
  EXPECT_TRUE(std::isnan(all_ignored.item<double>()));
  // A NaN logit makes its row's loss NaN, and only that row's.
  Tensor xn = zeros({2, 3});
  xn.index_put_({0, 2}, std::nan(""));
  Tensor per_row = F::cross_entropy(xn, tensor::tensor({int64_t{0}, int64_t{1}}),
                                    F::CrossEntropyFuncOptions().reduction(tensor::kNone));
  EXPECT_TRUE(std::isnan(per_row[0].item<double>()));
  EXPECT_NEAR(per_row[1].item<double>(), std::log(3.0), 1e-6);
  // An out-of-range target raises the composite's message.
  EXPECT_THROW(
      {
        try {
          F::cross_entropy(zeros({2, 3}), tensor::tensor({int64_t{1}, int64_t{3}}));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("out of bounds"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

TEST(FusedLosses, ReducedLossesInsideAnOpenMPTeam) {
  // Under the grain a fused loss sums its rows in one chunk, inline: called from thread 1 of a
  // user's OpenMP team, it must still fill its single partial sum (it once indexed the
  // partials by the thread's number).
  namespace F = tensor::nn::functional;
  manual_seed(9);
  Tensor x = randn({6, 5}), t = tensor::tensor({int64_t{0}, int64_t{4}, int64_t{2}, int64_t{1}, int64_t{3}, int64_t{0}});
  const auto sum = F::CrossEntropyFuncOptions().reduction(tensor::kSum);
  const double want_ce = F::cross_entropy(x, t, sum).item<double>();
  const double want_mm = tensor::multi_margin_loss(x, t, 1, 1.0, {}, Reduction::Sum).item<double>();
  ASSERT_GT(want_ce, 0.0);
  ASSERT_GT(want_mm, 0.0);
  double got_ce[2] = {0, 0}, got_mm[2] = {0, 0};
  int team = 0;
#pragma omp parallel num_threads(2)
  {
    const int id = omp_get_thread_num();
    if (id == 0) team = omp_get_num_threads();
    got_ce[id] = F::cross_entropy(x, t, sum).item<double>();
    got_mm[id] = tensor::multi_margin_loss(x, t, 1, 1.0, {}, Reduction::Sum).item<double>();
  }
  ASSERT_EQ(team, 2);
  for (int id = 0; id < 2; ++id) {
    EXPECT_DOUBLE_EQ(got_ce[id], want_ce) << "thread " << id;
    EXPECT_DOUBLE_EQ(got_mm[id], want_mm) << "thread " << id;
  }
}

TEST(FusedLosses, BceWithLogitsInsideAnOpenMPTeam) {
  // As above, for the element sum of binary_cross_entropy_with_logits (parallel_sum).
  manual_seed(10);
  Tensor x = randn({64, 70}) * 3, t = rand({64, 70});
  const double want = tensor::binary_cross_entropy_with_logits(x, t, {}, {}, Reduction::Sum).item<double>();
  ASSERT_GT(want, 0.0);
  double got[2] = {0, 0};
  int team = 0;
#pragma omp parallel num_threads(2)
  {
    const int id = omp_get_thread_num();
    if (id == 0) team = omp_get_num_threads();
    got[id] = tensor::binary_cross_entropy_with_logits(x, t, {}, {}, Reduction::Sum).item<double>();
  }
  ASSERT_EQ(team, 2);
  for (int id = 0; id < 2; ++id) EXPECT_DOUBLE_EQ(got[id], want) << "thread " << id;
}

namespace {

// log(1 + e^-x), written per sign so that neither exponential overflows.
double softplus_neg_ref(double x) { return x >= 0 ? std::log1p(std::exp(-x)) : -x + std::log1p(std::exp(x)); }

// binary_cross_entropy_with_logits per element in float64 from its definition:
// -w (l t log(sigmoid(x)) + (1 - t) log(1 - sigmoid(x))), l the pos_weight, where
// -log(sigmoid(x)) = log(1 + e^-x) and -log(1 - sigmoid(x)) = x + log(1 + e^-x).
std::vector<double> bce_logits_ref(const std::vector<double>& x, const std::vector<double>& t,
                                   const std::vector<double>* w, const std::vector<double>* pw) {
  std::vector<double> out;
  for (size_t i = 0; i < x.size(); ++i) {
    const double l = pw ? (*pw)[i] : 1.0, sp = softplus_neg_ref(x[i]);
    const double v = l * t[i] * sp + (1 - t[i]) * (x[i] + sp);
    out.push_back(w ? (*w)[i] * v : v);
  }
  return out;
}

}  // namespace

// binary_cross_entropy_with_logits without recording is one kernel: against a float64 loop and
// the composite (the same call with an input that requires grad), with and without weight and
// pos_weight, on a transposed input over the threading grain whose logits include +-100 and
// +-1e4 (their targets 0, 1/2 or 1, so that (1 - t) x is exact and the float64 loop is a fair
// reference). A broadcast weight or pos_weight takes the composite, checked against the loop.
TEST(FusedLosses, BceWithLogitsMatchesReferenceAndComposite) {
  manual_seed(11);
  const int64_t R = 67, C = 131;  // 8777 elements: two threads
  for (ScalarType dt : {kFloat32, kFloat64}) {
    std::vector<double> xs = vals(randn({C, R}, kFloat64) * 3), ts = vals(rand({C, R}, kFloat64));
    const double big[] = {100, -100, 1e4, -1e4};
    for (size_t k = 0; k < 4; ++k)
      for (size_t j = 0; j < 3; ++j) {
        xs[k * 1000 + j * 7] = big[k];
        ts[k * 1000 + j * 7] = 0.5 * static_cast<double>(j);
      }
    // x is [R, C], the transpose of a contiguous [C, R] tensor.
    Tensor x = tensor::tensor(xs, TensorOptions(dt)).reshape({C, R}).t();
    Tensor t = tensor::tensor(ts, TensorOptions(dt)).reshape({C, R}).t().contiguous();
    ASSERT_FALSE(x.is_contiguous());
    Tensor w = rand({R, C}, dt) + 0.5, pw = rand({R, C}, dt) * 2 + 0.1;
    const std::vector<double> xv = vals(x), tv = vals(t), wv = vals(w), pwv = vals(pw);
    const double tol = dt == kFloat32 ? 2e-5 : 1e-12;
    for (int variant = 0; variant < 4; ++variant) {
      const bool use_w = variant & 1, use_pw = variant & 2;
      const std::vector<double> per = bce_logits_ref(xv, tv, use_w ? &wv : nullptr, use_pw ? &pwv : nullptr);
      for (int64_t r : kReductions) {
        const std::string what = std::string("bce_with_logits ") + to_string(dt) + " w " + std::to_string(use_w) +
                                 " pw " + std::to_string(use_pw) + " r " + std::to_string(r);
        auto f = [&](const Tensor& a) {
          return tensor::binary_cross_entropy_with_logits(a, t, use_w ? std::optional<Tensor>(w) : std::nullopt,
                                                          use_pw ? std::optional<Tensor>(pw) : std::nullopt, r);
        };
        Tensor got = f(x);
        EXPECT_EQ(got.dtype(), dt) << what;
        const std::vector<int64_t> want_shape =
            r == Reduction::None ? std::vector<int64_t>{R, C} : std::vector<int64_t>{};
        EXPECT_EQ(got.sizes().vec(), want_shape) << what;
        expect_values(got, reduce_ref(per, r, static_cast<double>(per.size())), tol, what);
        expect_values(got, vals(composite(x, f)), tol, what + " vs composite");
      }
    }
    // Broadcast weight and pos_weight (one per column) take the composite.
    Tensor wc = rand({C}, dt) + 0.5, pwc = rand({C}, dt) * 2 + 0.1;
    const std::vector<double> wcv = vals(wc.expand({R, C})), pwcv = vals(pwc.expand({R, C}));
    const std::vector<double> per = bce_logits_ref(xv, tv, &wcv, &pwcv);
    for (int64_t r : kReductions)
      expect_values(tensor::binary_cross_entropy_with_logits(x, t, wc, pwc, r),
                    reduce_ref(per, r, static_cast<double>(per.size())), tol,
                    std::string("bce_with_logits broadcast ") + to_string(dt) + " " + std::to_string(r));
  }
}

TEST(FusedLosses, BceWithLogitsPropagatesNaN) {
  // 37 elements: NaN inside the vector loop's lanes (index 1) and in its scalar tail (35).
  const double nan = std::nan("");
  std::vector<double> xs, ts;
  for (int i = 0; i < 37; ++i) {
    xs.push_back(i == 1 || i == 35 ? nan : 0.37 * i - 6.0);
    ts.push_back((i % 5) * 0.25);
  }
  const std::vector<double> want = bce_logits_ref(xs, ts, nullptr, nullptr);
  ASSERT_TRUE(std::isnan(want[1]) && std::isnan(want[35]) && !std::isnan(want[0]));
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor x = tensor::tensor(xs, TensorOptions(dt)), t = tensor::tensor(ts, TensorOptions(dt));
    auto f = [&](const Tensor& a, int64_t r) { return tensor::binary_cross_entropy_with_logits(a, t, {}, {}, r); };
    expect_values(f(x, Reduction::None), want, 1e-6, std::string("bce_with_logits NaN none ") + to_string(dt));
    for (int64_t r : {Reduction::Mean, Reduction::Sum}) {
      EXPECT_TRUE(std::isnan(f(x, r).item<double>())) << to_string(dt) << " " << r;
      EXPECT_TRUE(std::isnan(composite(x, [&](const Tensor& a) { return f(a, r); }).item<double>()))
          << to_string(dt) << " " << r;
    }
  }
}

TEST(FusedLosses, HuberLossMatchesReferenceAndComposite) {
  manual_seed(4);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor x = randn({301, 257}, dt) * 2, y = randn({301, 257}, dt) * 2;  // over the threading grain
    const double delta = 1.3;
    const std::vector<double> xv = vals(x), yv = vals(y);
    std::vector<double> per;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double d = std::fabs(xv[i] - yv[i]);
      per.push_back(d < delta ? 0.5 * d * d : delta * (d - 0.5 * delta));
    }
    const double tol = dt == kFloat32 ? 2e-6 : 1e-12;
    for (int64_t r : kReductions) {
      const std::string what = std::string("huber_loss ") + to_string(dt) + " " + std::to_string(r);
      auto f = [&](const Tensor& a) { return tensor::huber_loss(a, y, r, delta); };
      Tensor got = f(x);
      expect_values(got, reduce_ref(per, r, static_cast<double>(per.size())), tol, what);
      // The composite: a broadcast target takes it (a same-shape one with autograd takes the
      // Function of Note [Huber loss Function], whose forward is the fused kernel).
      expect_values(got, vals(tensor::huber_loss(x, y.unsqueeze(0), r, delta)), tol, what + " vs composite");
    }
    // A strided input is read through a contiguous copy.
    expect_values(tensor::huber_loss(x.t(), y.t(), Reduction::Sum, delta), vals(tensor::huber_loss(x, y, Reduction::Sum, delta)),
                  tol, "huber_loss transposed");
  }
}

// smooth_l1_loss (beta > 0) runs the Huber kernel in its own formula: against a float64 loop,
// the composite (a broadcast target) and itself on transposed inputs; with autograd it is the
// Huber Function (Note [Huber loss Function]): gradcheck, gradgradcheck, and the gradient on a
// same-shape target against the composite's.
TEST(FusedLosses, SmoothL1LossMatchesReferenceCompositeAndGradients) {
  using autograd::variable_list;
  manual_seed(8);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor x = randn({301, 257}, dt) * 2, y = randn({301, 257}, dt) * 2;
    const double beta = 0.7;
    const std::vector<double> xv = vals(x), yv = vals(y);
    std::vector<double> per;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double d = std::fabs(xv[i] - yv[i]);
      per.push_back(d < beta ? 0.5 * d * d / beta : d - 0.5 * beta);
    }
    const double tol = dt == kFloat32 ? 2e-6 : 1e-12;
    for (int64_t r : kReductions) {
      const std::string what = std::string("smooth_l1_loss ") + to_string(dt) + " " + std::to_string(r);
      Tensor got = tensor::smooth_l1_loss(x, y, r, beta);
      expect_values(got, reduce_ref(per, r, static_cast<double>(per.size())), tol, what);
      expect_values(got, vals(tensor::smooth_l1_loss(x, y.unsqueeze(0), r, beta)), tol, what + " vs composite");
    }
    expect_values(tensor::smooth_l1_loss(x.t(), y.t(), Reduction::Sum, beta),
                  vals(tensor::smooth_l1_loss(x, y, Reduction::Sum, beta)), tol, "smooth_l1_loss transposed");
  }
  Tensor x = det({3, 4}, 61, -2, 2).requires_grad_(true), t = det({3, 4}, 62, -2, 2).requires_grad_(true);
  for (int64_t r : kReductions) {
    auto fn = [r](const variable_list& in) { return tensor::smooth_l1_loss(in[0], in[1], r, 0.9); };
    tensor::testing::check("smooth_l1 gradcheck " + std::to_string(r), [&] { return autograd::gradcheck(fn, {x, t}); });
    tensor::testing::check("smooth_l1 gradgradcheck " + std::to_string(r),
                           [&] { return autograd::gradgradcheck(fn, {x, t}); });
  }
  Tensor row = det({1, 4}, 63, -2, 2);
  Tensor xf = x.detach().requires_grad_(true), xc = x.detach().requires_grad_(true);
  Tensor lf = tensor::smooth_l1_loss(xf, row.expand({3, 4}).contiguous(), Reduction::Mean, 0.9);
  EXPECT_EQ(lf.grad_fn()->name(), "CppNode");
  lf.backward();
  tensor::smooth_l1_loss(xc, row, Reduction::Mean, 0.9).backward();
  expect_values(xf.grad(), vals(xc.grad()), 1e-12, "smooth_l1 Function vs composite gradient");
}

TEST(FusedLosses, MultiMarginLossMatchesReferenceAndComposite) {
  manual_seed(5);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const int64_t N = 700, C = 90;
    Tensor x = randn({N, C}, dt);
    Tensor t = randint(0, C, {N}, kInt64);
    Tensor w = rand({C}, dt) + 0.5;
    const std::vector<double> xv = vals(x), wv = vals(w);
    const double tol = dt == kFloat32 ? 2e-6 : 1e-12;
    for (int64_t p : {1, 2})
      for (bool weighted : {false, true})
        for (int64_t r : kReductions) {
          const double margin = 0.8;
          const std::string what = std::string("multi_margin_loss ") + to_string(dt) + " p" + std::to_string(p) +
                                   (weighted ? " weighted " : " ") + std::to_string(r);
          std::vector<double> per;
          for (int64_t n = 0; n < N; ++n) {
            const int64_t y = t[n].item<int64_t>();
            double s = 0;
            for (int64_t c = 0; c < C; ++c) {
              if (c == y) continue;
              const double m = std::max(0.0, margin - xv[static_cast<size_t>(n * C + y)] + xv[static_cast<size_t>(n * C + c)]);
              s += (p == 2 ? m * m : m) * (weighted ? wv[static_cast<size_t>(y)] : 1.0);
            }
            per.push_back(s / static_cast<double>(C));
          }
          auto f = [&](const Tensor& a) { return tensor::multi_margin_loss(a, t, p, margin, weighted ? w : Tensor(), r); };
          Tensor got = f(x);
          expect_values(got, reduce_ref(per, r, static_cast<double>(N)), tol, what);
          // The composite: a weight that requires grad (ones for the unweighted loss).
          Tensor wc = (weighted ? w : ones({C}, dt)).detach().requires_grad_(true);
          expect_values(got, vals(tensor::multi_margin_loss(x, t, p, margin, wc, r).detach()), tol,
                        what + " vs composite");
        }
  }
  EXPECT_THROW(tensor::multi_margin_loss(zeros({2, 3}), tensor::tensor({int64_t{0}, int64_t{5}})), Error);
}

// With autograd, huber_loss of same-shape inputs is a Function (Note [Huber loss Function]):
// its gradients, first and second, against finite differences, and against the composite's
// (a broadcast target takes the composite) on the same values.
TEST(FusedLosses, HuberLossFunctionGradients) {
  using autograd::variable_list;
  Tensor x = det({3, 4}, 21, -2, 2).requires_grad_(true), t = det({3, 4}, 22, -2, 2).requires_grad_(true);
  for (int64_t r : kReductions) {
    auto fn = [r](const variable_list& in) { return tensor::huber_loss(in[0], in[1], r, 0.9); };
    tensor::testing::check("huber gradcheck " + std::to_string(r), [&] { return autograd::gradcheck(fn, {x, t}); });
    tensor::testing::check("huber gradgradcheck " + std::to_string(r),
                           [&] { return autograd::gradgradcheck(fn, {x, t}); });
  }
  // Same values through the composite: a [1, 4] target row against the [3, 4] target's first row.
  Tensor row = det({1, 4}, 23, -2, 2);
  Tensor xf = x.detach().requires_grad_(true), xc = x.detach().requires_grad_(true);
  tensor::huber_loss(xf, row.expand({3, 4}).contiguous(), Reduction::Mean, 0.9).backward();
  tensor::huber_loss(xc, row, Reduction::Mean, 0.9).backward();
  expect_values(xf.grad(), vals(xc.grad()), 1e-12, "huber Function vs composite gradient");
}

namespace {

std::vector<int64_t> ints(const Tensor& t) {
  const Tensor c = t.contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// The incoming gradient of a loss: one value per row without a reduction, else a scalar.
Tensor incoming(int64_t r, int64_t n, ScalarType dt) {
  return r == Reduction::None ? randn({n}, dt) : tensor::full({}, 1.7, TensorOptions(dt));
}

}  // namespace

// With autograd, nll_loss of [N, C] and [C] inputs is a Function (Note [nll_loss Function]):
// its gradients, first and second, against finite differences, every reduction, with and
// without a weight, with an ignored target; then its one-pass backward on a transposed
// (non-contiguous) input over the threading grain against a float64 loop of the definition and
// against the composite's gradient (a weight that requires grad takes the composite).
TEST(FusedLosses, NllLossFunctionGradients) {
  using autograd::variable_list;
  using tensor::testing::check;
  Tensor x = det({4, 5}, 41, -2, 2).requires_grad_(true);
  Tensor t = tensor::tensor({int64_t{1}, int64_t{4}, int64_t{-100}, int64_t{0}});
  Tensor w = det({5}, 42, 0.5, 1.5);
  for (int64_t r : kReductions)
    for (bool weighted : {false, true}) {
      const std::string what = "nll_loss " + std::to_string(r) + (weighted ? " weighted" : "");
      auto fn = [&, r, weighted](const variable_list& in) {
        return tensor::nll_loss(in[0], t, weighted ? w : Tensor(), r, -100);
      };
      check(what + " gradcheck", [&] { return autograd::gradcheck(fn, {x}); });
      check(what + " gradgradcheck", [&] { return autograd::gradgradcheck(fn, {x}); });
    }
  Tensor x1 = det({5}, 43, -2, 2).requires_grad_(true);
  Tensor t1 = tensor::tensor(int64_t{3});
  for (int64_t r : kReductions) {
    auto fn = [&, r](const variable_list& in) { return tensor::nll_loss(in[0], t1, w, r, -100); };
    check("nll_loss 1-d gradcheck " + std::to_string(r), [&] { return autograd::gradcheck(fn, {x1}); });
    check("nll_loss 1-d gradgradcheck " + std::to_string(r), [&] { return autograd::gradgradcheck(fn, {x1}); });
  }

  manual_seed(6);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const int64_t N = 3000, C = 40;
    const Tensor xt = randn({C, N}, dt).t();  // [N, C], not contiguous
    Tensor tg = randint(0, C, {N}, kInt64);
    tg.index_put_({tensor::arange(0, N, 7)}, tensor::tensor({int64_t{-1}}));
    const Tensor wt = rand({C}, dt) + 0.5;
    const std::vector<int64_t> tv = ints(tg);
    const std::vector<double> wv = vals(wt);
    const double tol = dt == kFloat32 ? 2e-6 : 1e-12;
    for (bool weighted : {false, true})
      for (int64_t r : kReductions) {
        const std::string what = std::string("nll_loss backward ") + to_string(dt) + (weighted ? " weighted " : " ") +
                                 std::to_string(r);
        const Tensor go = incoming(r, N, dt);
        const std::vector<double> gv = vals(go);
        Tensor xa = xt.detach().requires_grad_(true);
        Tensor loss = tensor::nll_loss(xa, tg, weighted ? wt : Tensor(), r, -1);
        EXPECT_EQ(loss.grad_fn()->name(), "CppNode") << what;  // the Function, one node
        loss.backward(go);
        double wsum = 0;
        for (int64_t n = 0; n < N; ++n) wsum += tv[n] == -1 ? 0.0 : weighted ? wv[tv[n]] : 1.0;
        std::vector<double> want(static_cast<size_t>(N * C), 0.0);
        for (int64_t n = 0; n < N; ++n) {
          if (tv[n] == -1) continue;
          const double g = r == Reduction::None ? gv[n] : r == Reduction::Mean ? gv[0] / wsum : gv[0];
          want[static_cast<size_t>(n * C + tv[n])] = -(weighted ? wv[tv[n]] : 1.0) * g;
        }
        expect_values(xa.grad(), want, tol, what);
        Tensor xb = xt.detach().requires_grad_(true);
        Tensor wc = (weighted ? wt : ones({C}, dt)).detach().requires_grad_(true);
        tensor::nll_loss(xb, tg, wc, r, -1).backward(go);
        expect_values(xa.grad(), vals(xb.grad()), tol, what + " vs composite");
      }
  }
  // A mean over only ignored targets: the loss is NaN, its gradient zero (libtorch's kernel).
  Tensor xi = zeros({2, 3}).requires_grad_(true);
  Tensor li = tensor::nll_loss(xi, tensor::tensor({int64_t{-100}, int64_t{-100}}));
  EXPECT_TRUE(std::isnan(li.item<double>()));
  li.backward();
  expect_values(xi.grad(), std::vector<double>(6, 0.0), 0, "nll_loss all ignored gradient");
}

// With autograd, multi_margin_loss is a Function (Note [Multi-margin loss Function]): its
// gradients, first and second, against finite differences for p 1 and 2, with and without a
// weight, every reduction, 2-d and 1-d inputs; then its one-pass backward on a transposed input
// over the threading grain against a float64 loop of the derivative and against the
// composite's gradient (a weight that requires grad takes the composite).
TEST(FusedLosses, MultiMarginLossFunctionGradients) {
  using autograd::variable_list;
  using tensor::testing::check;
  Tensor x = det({4, 5}, 51, -2, 2).requires_grad_(true);
  Tensor t = tensor::tensor({int64_t{2}, int64_t{0}, int64_t{4}, int64_t{1}});
  Tensor w = det({5}, 52, 0.5, 1.5);
  for (int64_t p : {1, 2})
    for (int64_t r : kReductions)
      for (bool weighted : {false, true}) {
        const std::string what =
            "multi_margin p" + std::to_string(p) + " " + std::to_string(r) + (weighted ? " weighted" : "");
        auto fn = [&, p, r, weighted](const variable_list& in) {
          return tensor::multi_margin_loss(in[0], t, p, 0.7, weighted ? w : Tensor(), r);
        };
        check(what + " gradcheck", [&] { return autograd::gradcheck(fn, {x}); });
        check(what + " gradgradcheck", [&] { return autograd::gradgradcheck(fn, {x}); });
      }
  Tensor x1 = det({5}, 53, -2, 2).requires_grad_(true);
  for (int64_t r : kReductions) {
    auto fn = [&, r](const variable_list& in) { return tensor::multi_margin_loss(in[0], tensor::tensor(int64_t{1}), 2, 1.0, w, r); };
    check("multi_margin 1-d gradcheck " + std::to_string(r), [&] { return autograd::gradcheck(fn, {x1}); });
    check("multi_margin 1-d gradgradcheck " + std::to_string(r), [&] { return autograd::gradgradcheck(fn, {x1}); });
  }

  manual_seed(7);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const int64_t N = 700, C = 90;
    const Tensor xt = randn({C, N}, dt).t();  // [N, C], not contiguous
    const Tensor tg = randint(0, C, {N}, kInt64);
    const Tensor wt = rand({C}, dt) + 0.5;
    const std::vector<int64_t> tv = ints(tg);
    const std::vector<double> xv = vals(xt), wv = vals(wt);
    const double tol = dt == kFloat32 ? 2e-6 : 1e-12, margin = 0.8;
    for (int64_t p : {1, 2})
      for (bool weighted : {false, true})
        for (int64_t r : kReductions) {
          const std::string what = std::string("multi_margin backward ") + to_string(dt) + " p" + std::to_string(p) +
                                   (weighted ? " weighted " : " ") + std::to_string(r);
          const Tensor go = incoming(r, N, dt);
          const std::vector<double> gv = vals(go);
          Tensor xa = xt.detach().requires_grad_(true);
          Tensor loss = tensor::multi_margin_loss(xa, tg, p, margin, weighted ? wt : Tensor(), r);
          EXPECT_EQ(loss.grad_fn()->name(), "CppNode") << what;  // the Function, one node
          loss.backward(go);
          std::vector<double> want(static_cast<size_t>(N * C), 0.0);
          for (int64_t n = 0; n < N; ++n) {
            const int64_t y = tv[n];
            const double g = r == Reduction::None ? gv[n] : r == Reduction::Mean ? gv[0] / N : gv[0];
            const double s = g * (weighted ? wv[y] : 1.0) / C;
            for (int64_t c = 0; c < C; ++c) {
              if (c == y) continue;
              const double m = margin - xv[static_cast<size_t>(n * C + y)] + xv[static_cast<size_t>(n * C + c)];
              const double d = m > 0 ? (p == 2 ? 2 * m * s : s) : 0.0;
              want[static_cast<size_t>(n * C + c)] = d;
              want[static_cast<size_t>(n * C + y)] -= d;
            }
          }
          expect_values(xa.grad(), want, tol, what);
          Tensor xb = xt.detach().requires_grad_(true);
          Tensor wc = (weighted ? wt : ones({C}, dt)).detach().requires_grad_(true);
          tensor::multi_margin_loss(xb, tg, p, margin, wc, r).backward(go);
          expect_values(xa.grad(), vals(xb.grad()), tol, what + " vs composite");
        }
  }
}
