// Behaviour that programs ported from libtorch rely on (issue 24), tested in libtorch's
// spelling: binary_cross_entropy's gradient at p = 0 and 1.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

using namespace tensor;

namespace {

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
#define EXPECT_ERROR_HAS(stmt, text) EXPECT_NE(error_of([&] { stmt; }).find(text), std::string::npos) << error_of([&] { stmt; })

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
std::vector<int64_t> ints(const Tensor& t) {
  Tensor c = t.to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
std::vector<int64_t> shape(const Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

}  // namespace

// ---- binary_cross_entropy at p = 0 and 1 ----
TEST(PortedOps, BinaryCrossEntropyGradientIsClampedAsLibtorch) {
  Tensor p = tensor::tensor({1.0, 0.0, 0.5}, kFloat64).requires_grad_(true);
  Tensor y = tensor::tensor({0.0, 1.0, 1.0}, kFloat64);
  Tensor l = tensor::binary_cross_entropy(p, y);
  // Each log clamps at -100: (100 + 100 + log 2) / 3.
  EXPECT_NEAR(l.item<double>(), (200 + std::log(2.0)) / 3, 1e-12);
  l.backward();
  // (p - y) / max((1 - p) p, 1e-12) / n: +-1e12 / 3 and (0.5 - 1) / 0.25 / 3, the values
  // libtorch gives (3.33e11, -3.33e11, -0.667, issue 24).
  std::vector<double> g = values(p.grad());
  EXPECT_NEAR(g[0], 1e12 / 3, 1.0);
  EXPECT_NEAR(g[1], -1e12 / 3, 1.0);
  EXPECT_NEAR(g[2], -2.0 / 3, 1e-12);
  // The nn spelling, float32, sum reduction, weight, and the target's gradient (-logit(p)).
  namespace F = tensor::nn::functional;
  Tensor p32 = tensor::tensor({1.0f, 0.0f, 0.25f}).requires_grad_(true);
  Tensor t = tensor::tensor({0.0f, 1.0f, 0.5f}).requires_grad_(true);
  Tensor w = tensor::tensor({1.0f, 2.0f, 4.0f});
  F::binary_cross_entropy(p32, t, F::BinaryCrossEntropyFuncOptions().weight(w).reduction(tensor::kSum)).backward();
  std::vector<double> g32 = values(p32.grad());
  EXPECT_TRUE(std::isfinite(g32[0]) && std::isfinite(g32[1]));
  EXPECT_NEAR(g32[0], 1e12, 1e6);
  EXPECT_NEAR(g32[1], -2e12, 2e6);
  EXPECT_NEAR(g32[2], 4 * (0.25 - 0.5) / (0.75 * 0.25), 1e-5);
  EXPECT_NEAR(values(t.grad())[2], 4 * (std::log(0.75) - std::log(0.25)), 1e-5);
  // Away from the ends the gradient is the derivative: first and second order checks.
  auto f = [](const autograd::variable_list& v) { return tensor::binary_cross_entropy(v[0], v[1]); };
  Tensor pp = (tensor::rand({3, 4}, kFloat64) * 0.8 + 0.1).requires_grad_(true);
  Tensor tt = tensor::rand({3, 4}, kFloat64).requires_grad_(true);
  EXPECT_TRUE(autograd::gradcheck(f, {pp, tt}));
  EXPECT_TRUE(autograd::gradgradcheck(f, {pp, tt}));
}
