// libtorch's in-place random fills (Note [In-place random fills]): values checked against the
// distributions' closed-form moments and supports on 200,000 draws (tolerances are 6+ standard
// errors, so a correct fill fails with probability far below 1e-6), reproducibility under
// manual_seed, strided targets, and the errors libtorch raises.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <set>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;

namespace {
constexpr int64_t kN = 200000;
double mean_of(const Tensor& t) { return t.to(kFloat64).mean().item<double>(); }
double var_of(const Tensor& t) {
  Tensor d = t.to(kFloat64);
  return (d - d.mean()).pow(2).mean().item<double>();
}
}  // namespace

TEST(RandomFill, UniformAndNormalMoments) {
  manual_seed(1);
  for (ScalarType d : {kFloat32, kFloat64}) {
    Tensor u = empty({kN}, d);
    u.uniform_(2, 5);
    EXPECT_GE(u.min().item<double>(), 2.0);
    EXPECT_LT(u.max().item<double>(), 5.0);
    EXPECT_NEAR(mean_of(u), 3.5, 6 * std::sqrt(0.75 / kN));  // var of U(2,5) = 9/12
    EXPECT_NEAR(var_of(u), 0.75, 0.01);
    Tensor n = empty({kN}, d);
    n.normal_(-1, 3);
    EXPECT_NEAR(mean_of(n), -1.0, 6 * 3 / std::sqrt(double(kN)));
    EXPECT_NEAR(std::sqrt(var_of(n)), 3.0, 0.03);
  }
  Tensor h = empty({1000}, kBFloat16);
  h.uniform_();
  EXPECT_GE(h.min().item<double>(), 0.0);
  EXPECT_LE(h.max().item<double>(), 1.0);
}

TEST(RandomFill, OtherDistributionsMoments) {
  manual_seed(2);
  Tensor e = empty({kN}, kFloat64);
  e.exponential_(4);  // mean 1/4, var 1/16
  EXPECT_GE(e.min().item<double>(), 0.0);
  EXPECT_NEAR(mean_of(e), 0.25, 6 * 0.25 / std::sqrt(double(kN)));
  Tensor ln = empty({kN}, kFloat64);
  ln.log_normal_(0.5, 0.25);  // log is N(0.5, 0.25^2)
  EXPECT_GT(ln.min().item<double>(), 0.0);
  EXPECT_NEAR(mean_of(ln.log()), 0.5, 6 * 0.25 / std::sqrt(double(kN)));
  EXPECT_NEAR(mean_of(ln), std::exp(0.5 + 0.25 * 0.25 / 2), 0.005);
  Tensor c = empty({kN}, kFloat64);
  c.cauchy_(2, 0.5);  // median 2, quartiles 2 -/+ 0.5
  Tensor sorted = std::get<0>(c.sort());
  EXPECT_NEAR(sorted[kN / 2].item<double>(), 2.0, 0.01);
  EXPECT_NEAR(sorted[kN / 4].item<double>(), 1.5, 0.02);
  EXPECT_NEAR(sorted[3 * kN / 4].item<double>(), 2.5, 0.02);
  Tensor g = empty({kN}, kInt64);
  g.geometric_(0.25);  // support 1, 2, ...; mean 1/p = 4; P(1) = p
  EXPECT_EQ(g.min().item<int64_t>(), 1);
  EXPECT_NEAR(mean_of(g), 4.0, 6 * std::sqrt(0.75 / 0.0625 / kN));
  EXPECT_NEAR(mean_of(g.eq(1)), 0.25, 6 * std::sqrt(0.25 * 0.75 / kN));
  Tensor b = empty({kN}, kInt32);
  b.bernoulli_(0.3);
  EXPECT_EQ(b.eq(0).logical_or(b.eq(1)).all().item<bool>(), true);
  EXPECT_NEAR(mean_of(b), 0.3, 6 * std::sqrt(0.21 / kN));
}

TEST(RandomFill, BernoulliWithProbabilityTensorBroadcasts) {
  manual_seed(3);
  Tensor p = tensor::tensor({0.0, 0.5, 1.0}, kFloat64);
  Tensor t = empty({kN / 3, 3}, kFloat32);
  t.bernoulli_(p);  // p broadcasts along rows
  Tensor col = t.mean(std::vector<int64_t>{0});
  EXPECT_EQ(col[0].item<double>(), 0.0);
  EXPECT_NEAR(col[1].item<double>(), 0.5, 6 * std::sqrt(0.25 / (kN / 3)));
  EXPECT_EQ(col[2].item<double>(), 1.0);
  Tensor q = tensor::full({kN}, 0.2, kFloat64);
  Tensor draws = tensor::bernoulli(q);
  EXPECT_EQ(draws.dtype(), kFloat64);
  EXPECT_NEAR(mean_of(draws), 0.2, 6 * std::sqrt(0.16 / kN));
  expect_error([&] { t.bernoulli_(tensor::tensor({0.5, 0.5}, kFloat64)); }, {"expand"});
  expect_error([&] { t.bernoulli_(tensor::tensor({0.5, 1.5, 0.0}, kFloat64)); }, {"bernoulli_", "[0, 1]"});
}

TEST(RandomFill, RandomIntegersCoverTheirRange) {
  manual_seed(4);
  Tensor r = empty({10000}, kInt64);
  r.random_(3, 7);
  std::set<int64_t> seen;
  for (int64_t i = 0; i < r.numel(); ++i) seen.insert(r[i].item<int64_t>());
  EXPECT_EQ(seen, (std::set<int64_t>{3, 4, 5, 6}));
  Tensor f = empty({10000}, kFloat32);
  f.random_(10);
  EXPECT_EQ(f.eq(f.floor()).all().item<bool>(), true);
  EXPECT_GE(f.min().item<double>(), 0.0);
  EXPECT_LE(f.max().item<double>(), 9.0);
  Tensor u8 = empty({20000}, kUInt8);
  u8.random_();  // [0, 255]
  EXPECT_EQ(u8.max().item<int64_t>(), 255);
  EXPECT_EQ(u8.min().item<int64_t>(), 0);
  Tensor bf = empty({20000}, kBFloat16);
  bf.random_();  // [0, 2^8]: every integer there is exact in bfloat16
  EXPECT_LE(bf.max().item<double>(), 256.0);
  EXPECT_EQ(bf.eq(bf.floor()).all().item<bool>(), true);
  expect_error([&] { u8.random_(-1, 5); }, {"random_", "does not fit", "uint8"});
  expect_error([&] { r.random_(5, 5); }, {"random_", "from=5 >= to=5"});
}

TEST(RandomFill, ReproducibleAndWritesStridedTargets) {
  Tensor a = empty({4, 6}, kFloat64), b = empty({4, 6}, kFloat64);
  manual_seed(7);
  a.normal_();
  manual_seed(7);
  b.normal_();
  EXPECT_TRUE(a.equal(b));
  // A transposed view and a strided slice: every element written, the others untouched.
  Tensor base = zeros({6, 4}, kFloat64);
  base.t().uniform_(1, 2);
  EXPECT_GE(base.min().item<double>(), 1.0);
  Tensor z = zeros({3, 8}, kFloat64);
  z.slice(1, 0, 8, 2).exponential_();
  EXPECT_EQ(z.slice(1, 1, 8, 2).abs().sum().item<double>(), 0.0);
  EXPECT_GT(z.slice(1, 0, 8, 2).min().item<double>(), 0.0);
}

TEST(RandomFill, AutogradAndBadInput) {
  Tensor leaf = zeros({3}, dtype(kFloat64).requires_grad(true));
  expect_error([&] { leaf.uniform_(); }, {"uniform_", "leaf Variable that requires grad"});
  {
    NoGradGuard no_grad;  // libtorch's idiom for initialising a parameter
    leaf.normal_(0, 0.02);
  }
  EXPECT_GT(leaf.abs().sum().item<double>(), 0.0);
  // A tensor with history: the fill replaces its values, so their gradient is zero.
  Tensor x = ones({3}, dtype(kFloat64).requires_grad(true));
  Tensor y = x * 2;
  y.bernoulli_(0.5);
  (y * 3 + x).sum().backward();
  tensor::testing::expect_near(tensor::testing::vals(x.grad()), {1.0, 1.0, 1.0}, 0, "x.grad()");
  Tensor i = zeros({3}, kInt64);
  expect_error([&] { i.uniform_(); }, {"uniform_", "floating point", "int64"});
  expect_error([&] { zeros({2}).uniform_(3, 1); }, {"uniform_", "from=3 > to=1"});
  expect_error([&] { zeros({2}).normal_(0, -1); }, {"normal_", "std >= 0.0"});
  expect_error([&] { zeros({2}).exponential_(0); }, {"exponential_", "lambd > 0.0"});
  expect_error([&] { zeros({2}).geometric_(1.0); }, {"geometric_", "(0, 1)"});
  expect_error([&] { zeros({2}, kComplex64).normal_(); }, {"normal_", "complex"});
}
