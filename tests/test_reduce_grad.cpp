// Derivatives of the reductions, scans and softmax (rows in src/autograd/Derivatives.cpp,
// manual formulas in src/autograd/ReduceFormulas.cpp):
// first and second order gradient checks in float64 on contiguous and non-contiguous inputs,
// keepdim true and false, negative and multiple dims, plus hand-computed values (ties, zeros,
// index routing) and the non-differentiable parts (indices, integer inputs).
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace tensor;
using autograd::variable_list;
using F = std::function<Tensor(const variable_list&)>;

namespace {

// Uniform in [lo, hi]; `noncontig` lays the data out transposed (2-d) or permuted (3-d).
Tensor input(std::vector<int64_t> shape, double lo, double hi, bool noncontig, bool random_sign = false) {
  std::vector<int64_t> rev(shape.rbegin(), shape.rend());
  Tensor u = tensor::rand(noncontig ? IntArrayRef(rev) : IntArrayRef(shape), kFloat64) * (hi - lo) + lo;
  if (random_sign) u = u * (tensor::rand(u.sizes(), kFloat64).gt(0.5).to(kFloat64) * 2 - 1);
  if (noncontig) {
    std::vector<int64_t> perm;
    for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) perm.push_back(i);
    u = u.permute(perm);
    EXPECT_FALSE(u.is_contiguous());
  }
  return u.detach().requires_grad_(true);
}

Tensor vec(const std::vector<double>& v, std::vector<int64_t> shape) {
  return tensor::tensor(v, kFloat64).reshape(shape).detach().requires_grad_(true);
}

using tensor::testing::check;

void check_both(const std::string& name, const F& f, const Tensor& x, bool second = true) {
  SCOPED_TRACE(name);
  Tensor y = f({x});
  EXPECT_TRUE(y.requires_grad()) << name << " records nothing";
  check(name + " gradcheck", [&] { return autograd::gradcheck(f, {x}, 1e-6, 1e-5, 1e-3); });
  if (second) check(name + " gradgradcheck", [&] { return autograd::gradgradcheck(f, {x}, 1e-6, 1e-5, 1e-3); });
}

std::string tag(const std::string& op, bool keepdim, bool noncontig) {
  return op + (keepdim ? " keepdim" : "") + (noncontig ? " noncontiguous" : " contiguous");
}

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().contiguous().to(kFloat64);
  std::vector<double> v;
  Tensor flat = c.reshape({c.numel()});
  for (int64_t i = 0; i < c.numel(); ++i) v.push_back(flat[i].item<double>());
  return v;
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

Tensor grad_of(const Tensor& y, const Tensor& x) {
  return autograd::grad({y.sum()}, {x})[0];
}

}  // namespace

TEST(ReduceGrad, Prod) {
  manual_seed(21);
  for (bool nc : {false, true}) {
    Tensor x2 = input({3, 4}, 0.5, 1.5, nc, /*random_sign=*/true);
    check_both(tag("prod all", false, nc), [](const variable_list& v) { return v[0].prod(); }, x2);
    for (bool kd : {false, true}) {
      check_both(tag("prod dim 1", kd, nc), [kd](const variable_list& v) { return v[0].prod(1, kd); }, x2);
      check_both(tag("prod dim -2", kd, nc), [kd](const variable_list& v) { return v[0].prod(-2, kd); }, x2);
    }
  }
  // Output dtype argument: float32 input, float64 product; the gradient comes back as float32.
  Tensor xf = tensor::tensor({2.0, 3.0, 4.0}, kFloat32).requires_grad_(true);
  Tensor y = xf.prod(kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  Tensor gx = grad_of(y, xf);
  EXPECT_EQ(gx.dtype(), kFloat32);
  expect_values(gx, {12, 8, 6}, 1e-6);
}

TEST(ReduceGrad, ProdWithZeros) {
  // One, two and three zeros in a slice: the gradient is the product of the other elements,
  // exact to second order.
  const std::vector<std::vector<double>> rows = {
      {2, 0, 3, 0.5}, {0, 1.5, 0, -2}, {0, 0, 0, 3}, {0, 1, 2, 3}};
  for (const auto& r : rows) {
    Tensor x = vec(r, {4});
    std::string name = "prod zeros";
    for (double d : r) name += " " + std::to_string(d);
    check_both(name + " all", [](const variable_list& v) { return v[0].prod(); }, x);
    check_both(name + " dim", [](const variable_list& v) { return v[0].prod(0, true); }, x);
    Tensor g = grad_of(x.prod(), x);
    std::vector<double> want;
    for (size_t i = 0; i < r.size(); ++i) {
      double p = 1;
      for (size_t j = 0; j < r.size(); ++j)
        if (j != i) p *= r[j];
      want.push_back(p);
    }
    expect_values(g, want);
  }
  // Slices with different zero counts in one tensor, reduced along a dim of a transposed input.
  Tensor x = vec({2, 0, 3, 0.5, 0, 1.5, 0, -2, 1.1, -0.7, 1.3, 0.9}, {3, 4}).detach().t().contiguous().t();
  x.requires_grad_(true);
  for (bool kd : {false, true})
    check_both(tag("prod zeros dim 1", kd, true), [kd](const variable_list& v) { return v[0].prod(-1, kd); }, x);
}

TEST(ReduceGrad, MaxMinAmaxAmin) {
  manual_seed(22);
  for (bool nc : {false, true}) {
    Tensor x2 = input({3, 4}, -1, 1, nc);
    Tensor x3 = input({2, 3, 4}, -1, 1, nc);
    check_both(tag("max all", false, nc), [](const variable_list& v) { return v[0].max(); }, x2);
    check_both(tag("min all", false, nc), [](const variable_list& v) { return v[0].min(); }, x3);
    for (bool kd : {false, true}) {
      check_both(tag("max dim -1", kd, nc), [kd](const variable_list& v) { return std::get<0>(tensor::max(v[0], -1, kd)); }, x2);
      check_both(tag("max dim 1", kd, nc), [kd](const variable_list& v) { return std::get<0>(tensor::max(v[0], 1, kd)); }, x3);
      check_both(tag("min dim 0", kd, nc), [kd](const variable_list& v) { return std::get<0>(tensor::min(v[0], 0, kd)); }, x2);
      check_both(tag("min dim -2", kd, nc), [kd](const variable_list& v) { return std::get<0>(tensor::min(v[0], -2, kd)); }, x3);
      check_both(tag("amax all", kd, nc), [kd](const variable_list& v) { return v[0].amax({}, kd); }, x2);
      check_both(tag("amax -1", kd, nc), [kd](const variable_list& v) { return v[0].amax({-1}, kd); }, x2);
      check_both(tag("amax 0,-1", kd, nc), [kd](const variable_list& v) { return v[0].amax({0, -1}, kd); }, x3);
      check_both(tag("amax -1,0", kd, nc), [kd](const variable_list& v) { return v[0].amax({-1, 0}, kd); }, x3);
      check_both(tag("amin 1", kd, nc), [kd](const variable_list& v) { return v[0].amin({1}, kd); }, x3);
      check_both(tag("amin -2", kd, nc), [kd](const variable_list& v) { return v[0].amin({-2}, kd); }, x2);
    }
  }
}

TEST(ReduceGrad, MaxDimRoutesToIndex) {
  Tensor x = vec({1, 5, 2, 7, 3, 7}, {2, 3});  // row 1 has a tie; the returned index gets it all
  auto [v, idx] = tensor::max(x, 1);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_FALSE(idx.requires_grad());
  EXPECT_EQ(v.grad_fn()->name(), "MaxBackward0");
  Tensor g = autograd::grad({v}, {x}, {tensor::tensor({10.0, 20.0}, kFloat64)})[0];
  std::vector<double> want(6, 0);
  want[1] = 10;
  want[3 + idx[1].item<int64_t>()] = 20;
  expect_values(g, want);
  EXPECT_TRUE(idx[1].item<int64_t>() == 0 || idx[1].item<int64_t>() == 2);

  auto [mv, midx] = tensor::min(x, 0, /*keepdim=*/true);
  Tensor gm = autograd::grad({mv}, {x}, {tensor::tensor({1.0, 2.0, 3.0}, kFloat64).reshape({1, 3})})[0];
  expect_values(gm, {1, 0, 3, 0, 2, 0});
}

TEST(ReduceGrad, TiesSplitEvenly) {
  Tensor x = vec({1, 3, 3, 2, 3, 0}, {2, 3});
  // amax over dim 1: row 0 ties twice at 3, row 1 has one 3.
  Tensor a = x.amax({1});
  EXPECT_EQ(a.grad_fn()->name(), "AmaxBackward0");
  expect_values(grad_of(a, x), {0, 0.5, 0.5, 0, 1, 0});
  // max over everything: three elements equal 3.
  expect_values(grad_of(x.max(), x), {0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 0});
  // amin over both dims with keepdim: one 0.
  expect_values(grad_of(x.amin({0, 1}, true), x), {0, 0, 0, 0, 0, 1});
  expect_values(grad_of(x.min(), x), {0, 0, 0, 0, 0, 1});
  // A NaN maximum sends the gradient to the NaN elements.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor xn = vec({1, nan, 2}, {3});
  expect_values(grad_of(xn.max(), xn), {0, 1, 0});
}

TEST(ReduceGrad, Logsumexp) {
  manual_seed(23);
  for (bool nc : {false, true}) {
    Tensor x2 = input({3, 4}, -2, 2, nc);
    Tensor x3 = input({2, 3, 4}, -2, 2, nc);
    for (bool kd : {false, true}) {
      check_both(tag("logsumexp -1", kd, nc), [kd](const variable_list& v) { return v[0].logsumexp({-1}, kd); }, x2);
      check_both(tag("logsumexp all", kd, nc), [kd](const variable_list& v) { return v[0].logsumexp({}, kd); }, x2);
      check_both(tag("logsumexp 2,0", kd, nc), [kd](const variable_list& v) { return v[0].logsumexp({2, 0}, kd); }, x3);
    }
  }
  // d logsumexp / dx = softmax(x).
  Tensor x = vec({0.0, std::log(3.0)}, {2});
  expect_values(grad_of(x.logsumexp({0}), x), {0.25, 0.75});
}

TEST(ReduceGrad, VarStd) {
  manual_seed(24);
  for (bool nc : {false, true}) {
    Tensor x2 = input({3, 4}, -1, 1, nc);
    Tensor x3 = input({2, 3, 4}, -1, 1, nc);
    for (bool kd : {false, true}) {
      for (int64_t c : {0, 1, 2}) {
        const std::string cs = " correction " + std::to_string(c);
        check_both(tag("var all" + cs, kd, nc), [kd, c](const variable_list& v) { return v[0].var({}, c, kd); }, x2);
        check_both(tag("var -1" + cs, kd, nc), [kd, c](const variable_list& v) { return v[0].var({-1}, c, kd); }, x2);
        check_both(tag("var 0,2" + cs, kd, nc), [kd, c](const variable_list& v) { return v[0].var({0, 2}, c, kd); }, x3);
        check_both(tag("std all" + cs, kd, nc), [kd, c](const variable_list& v) { return v[0].std({}, c, kd); }, x2);
        check_both(tag("std 0" + cs, kd, nc), [kd, c](const variable_list& v) { return v[0].std({0}, c, kd); }, x2);
        check_both(tag("std -1,-3" + cs, kd, nc), [kd, c](const variable_list& v) { return v[0].std({-1, -3}, c, kd); }, x3);
      }
    }
  }
  // var of [1, 2, 3, 6] (mean 3): d/dx = 2 (x - 3) / 3.
  Tensor x = vec({1, 2, 3, 6}, {4});
  expect_values(grad_of(x.var(), x), {-4.0 / 3, -2.0 / 3, 0, 2});
  // std = sqrt(14 / 3); d/dx = (x - 3) / (3 std).
  const double s = std::sqrt(14.0 / 3);
  expect_values(grad_of(x.std(), x), {-2 / (3 * s), -1 / (3 * s), 0, 3 / (3 * s)});
  // A constant slice has std 0: its gradient is taken as 0 (PyTorch), not NaN.
  Tensor c = vec({2, 2, 2, 1, 3, 5}, {2, 3});
  expect_values(grad_of(c.std({1}), c), {0, 0, 0, -0.5, 0, 0.5});
}

TEST(ReduceGrad, Norm) {
  manual_seed(25);
  const double inf = std::numeric_limits<double>::infinity();
  for (bool nc : {false, true}) {
    Tensor x2 = input({3, 4}, 0.2, 1.2, nc, /*random_sign=*/true);
    Tensor x3 = input({2, 3, 4}, 0.2, 1.2, nc, /*random_sign=*/true);
    for (double p : {2.0, 1.0, inf, -inf, 3.0, 1.5, 0.5, 4.0}) {
      for (bool kd : {false, true}) {
        const std::string ps = " p=" + std::to_string(p);
        check_both(tag("norm all" + ps, kd, nc), [kd, p](const variable_list& v) { return v[0].norm(p, {}, kd); }, x2);
        check_both(tag("norm -1" + ps, kd, nc), [kd, p](const variable_list& v) { return v[0].norm(p, {-1}, kd); }, x2);
        check_both(tag("norm 0,2" + ps, kd, nc), [kd, p](const variable_list& v) { return v[0].norm(p, {0, 2}, kd); }, x3);
      }
    }
  }
  // p = 2: x / |x|; a zero vector gets 0 (not NaN).
  Tensor x = vec({3, -4, 0, 0}, {2, 2});
  expect_values(grad_of(x.norm(2, {1}), x), {0.6, -0.8, 0, 0});
  // p = 1: sign(x).
  expect_values(grad_of(x.norm(1, {1}), x), {1, -1, 0, 0});
  // p = inf: the largest |x| (ties split), with its sign.
  Tensor t = vec({3, -3, 1}, {3});
  expect_values(grad_of(t.norm(inf), t), {0.5, -0.5, 0});
  // p = 0 counts nonzeros: zero gradient.
  Tensor n0 = t.norm(0);
  EXPECT_TRUE(n0.requires_grad());
  expect_values(grad_of(n0, t), {0, 0, 0});
  // p = 3: x |x| / norm^2.
  Tensor y = vec({1, 2}, {2});
  const double n3 = std::cbrt(9.0);
  expect_values(grad_of(y.norm(3), y), {1 / (n3 * n3), 4 / (n3 * n3)});
}

TEST(ReduceGrad, CumsumCumprod) {
  manual_seed(26);
  for (bool nc : {false, true}) {
    Tensor x2 = input({3, 4}, -1, 1, nc);
    Tensor p2 = input({3, 4}, 0.5, 1.5, nc, /*random_sign=*/true);
    Tensor p3 = input({2, 3, 4}, 0.5, 1.5, nc, /*random_sign=*/true);
    check_both(tag("cumsum -1", false, nc), [](const variable_list& v) { return v[0].cumsum(-1); }, x2);
    check_both(tag("cumsum 0", false, nc), [](const variable_list& v) { return v[0].cumsum(0); }, x2);
    check_both(tag("cumprod 1", false, nc), [](const variable_list& v) { return v[0].cumprod(1); }, p2);
    check_both(tag("cumprod -2", false, nc), [](const variable_list& v) { return v[0].cumprod(-2); }, p3);
    check_both(tag("cumprod 2", false, nc), [](const variable_list& v) { return v[0].cumprod(2); }, p3);
  }
  // cumsum: the gradient of x_i sums the weights of outputs k >= i.
  Tensor x = vec({1, 2, 3}, {3});
  Tensor g = autograd::grad({x.cumsum(0)}, {x}, {tensor::tensor({1.0, 10.0, 100.0}, kFloat64)})[0];
  expect_values(g, {111, 110, 100});
  // cumsum with an output dtype: float32 input gets a float32 gradient.
  Tensor xf = tensor::tensor({1.0, 2.0}, kFloat32).requires_grad_(true);
  Tensor gf = grad_of(xf.cumsum(0, kFloat64), xf);
  EXPECT_EQ(gf.dtype(), kFloat32);
  expect_values(gf, {2, 1}, 1e-6);
  // cumprod: [a, ab, abc] -> d/da = 1 + b + bc, d/db = a + ac, d/dc = ab.
  Tensor c = vec({2, 3, 5}, {3});
  expect_values(grad_of(c.cumprod(0), c), {1 + 3 + 15, 2 + 10, 6});
}

TEST(ReduceGrad, CumprodWithZeros) {
  // Zeros in the scan: exact O(n^2) path (first and second order).
  const std::vector<std::vector<double>> rows = {{2, 0, 3, 0.5}, {0, 1.5, 0, -2}, {1.2, -0.8, 1.5, 0}, {0, 0, 2, 3}};
  for (const auto& r : rows) {
    Tensor x = vec(r, {4});
    std::string name = "cumprod zeros";
    for (double d : r) name += " " + std::to_string(d);
    check_both(name, [](const variable_list& v) { return v[0].cumprod(0); }, x);
    // Brute force: d(sum_k out_k)/dx_i = sum_{k>=i} prod_{j<=k, j!=i} x_j.
    std::vector<double> want;
    for (size_t i = 0; i < r.size(); ++i) {
      double s = 0;
      for (size_t k = i; k < r.size(); ++k) {
        double p = 1;
        for (size_t j = 0; j <= k; ++j)
          if (j != i) p *= r[j];
        s += p;
      }
      want.push_back(s);
    }
    expect_values(grad_of(x.cumprod(0), x), want);
  }
  Tensor x = vec({2, 0, 3, 0.5, 0, 1.5, 0, -2, 1.1, -0.7, 1.3, 0.9}, {3, 4}).detach().t().contiguous().t();
  x.requires_grad_(true);
  check_both("cumprod zeros 2-d dim 1", [](const variable_list& v) { return v[0].cumprod(1); }, x);
  check_both("cumprod zeros 2-d dim 0", [](const variable_list& v) { return v[0].cumprod(0); }, x);
}

TEST(ReduceGrad, SoftmaxLogSoftmax) {
  manual_seed(27);
  for (bool nc : {false, true}) {
    Tensor x2 = input({3, 4}, -2, 2, nc);
    Tensor x3 = input({2, 3, 4}, -2, 2, nc);
    check_both(tag("softmax -1", false, nc), [](const variable_list& v) { return v[0].softmax(-1); }, x2);
    check_both(tag("softmax 0", false, nc), [](const variable_list& v) { return v[0].softmax(0); }, x2);
    check_both(tag("softmax 1 3-d", false, nc), [](const variable_list& v) { return v[0].softmax(1); }, x3);
    check_both(tag("log_softmax 1", false, nc), [](const variable_list& v) { return v[0].log_softmax(1); }, x2);
    check_both(tag("log_softmax -2", false, nc), [](const variable_list& v) { return v[0].log_softmax(-2); }, x2);
    check_both(tag("log_softmax -3 3-d", false, nc), [](const variable_list& v) { return v[0].log_softmax(-3); }, x3);
  }
  // softmax([0, log 3]) = [1/4, 3/4]; with weights w = [1, 0]: grad = y * (w - y.w) = [3/16, -3/16].
  Tensor x = vec({0.0, std::log(3.0)}, {2});
  Tensor y = x.softmax(0);
  EXPECT_EQ(y.grad_fn()->name(), "SoftmaxBackward0");
  Tensor g = autograd::grad({y}, {x}, {tensor::tensor({1.0, 0.0}, kFloat64)})[0];
  expect_values(g, {3.0 / 16, -3.0 / 16});
  // log_softmax: grad = w - softmax * sum(w) = [1 - 1/4, -3/4].
  Tensor gl = autograd::grad({x.log_softmax(0)}, {x}, {tensor::tensor({1.0, 0.0}, kFloat64)})[0];
  expect_values(gl, {0.75, -0.75});
  // softmax of a row sums to 1: the gradient of its sum is 0.
  Tensor r = vec({0.3, -1.2, 2.0}, {3});
  expect_values(grad_of(r.softmax(0), r), {0, 0, 0});
}

// The complex-accepting reductions, first and second order (Note [Recording template]): prod,
// cumsum and cumprod are holomorphic rows (the template applies the conjugate); var, std and
// norm map complex to real and write their own conjugates. Contiguous and transposed inputs,
// slices with zeros, and a real input reduced into a complex dtype.
TEST(ReduceGrad, ComplexFirstAndSecondOrder) {
  manual_seed(28);
  const double inf = std::numeric_limits<double>::infinity();
  auto cinput = [](std::vector<int64_t> shape, bool noncontig) {
    Tensor re = input(shape, 0.5, 1.5, noncontig, /*random_sign=*/true).detach();
    Tensor im = input(shape, -0.5, 0.5, noncontig).detach();
    return (re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).detach().requires_grad_(true);
  };
  std::vector<std::pair<std::string, F>> cases = {
      {"prod all", [](const variable_list& v) { return v[0].prod(); }},
      {"prod dim 1", [](const variable_list& v) { return v[0].prod(1); }},
      {"prod dim -2 keepdim", [](const variable_list& v) { return v[0].prod(-2, true); }},
      {"cumsum 1", [](const variable_list& v) { return v[0].cumsum(1); }},
      {"cumsum -2", [](const variable_list& v) { return v[0].cumsum(-2); }},
      {"cumprod 1", [](const variable_list& v) { return v[0].cumprod(1); }},
      {"cumprod 0", [](const variable_list& v) { return v[0].cumprod(0); }},
      {"var all", [](const variable_list& v) { return v[0].var(); }},
      {"var 1 keepdim", [](const variable_list& v) { return v[0].var({1}, 1, true); }},
      {"var 0 correction 0", [](const variable_list& v) { return v[0].var({0}, 0, false); }},
      {"std all", [](const variable_list& v) { return v[0].std(); }},
      {"std -1 keepdim", [](const variable_list& v) { return v[0].std({-1}, 1, true); }},
      {"std 0 correction 2", [](const variable_list& v) { return v[0].std({0}, 2, false); }},
  };
  for (double p : {2.0, 1.0, inf, -inf, 3.0, 1.5, 0.5}) {
    const std::string ps = " p=" + std::to_string(p);
    cases.push_back({"norm all" + ps, [p](const variable_list& v) { return v[0].norm(p); }});
    cases.push_back({"norm 1 keepdim" + ps, [p](const variable_list& v) { return v[0].norm(p, {1}, true); }});
  }
  for (bool nc : {false, true})
    for (const auto& [name, f] : cases) check_both("complex " + name + (nc ? " noncontiguous" : ""), f, cinput({3, 4}, nc));
  // Zeros (0 + 0i) in the slices: prod's and cumprod's exact paths.
  Tensor z = cinput({3, 4}, false).detach();
  z = z * tensor::tensor({1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0}, kFloat64).reshape({3, 4});
  z.requires_grad_(true);
  check_both("complex prod zeros dim 1", [](const variable_list& v) { return v[0].prod(1); }, z);
  check_both("complex prod zeros all", [](const variable_list& v) { return v[0].select(0, 0).prod(); }, z);
  check_both("complex cumprod zeros dim 1", [](const variable_list& v) { return v[0].cumprod(1); }, z);
  // A real input reduced into a complex dtype: the gradient comes back real.
  Tensor r = input({3, 4}, 0.5, 1.5, false, /*random_sign=*/true);
  check_both("real prod into complex", [](const variable_list& v) { return v[0].prod(1, false, kComplex128) * complex128(1, 2); }, r);
  check_both("real cumsum into complex", [](const variable_list& v) { return v[0].cumsum(0, kComplex128) * complex128(1, 2); }, r);
  check_both("real cumprod into complex", [](const variable_list& v) { return v[0].cumprod(1, kComplex128) * complex128(1, 2); }, r);
  EXPECT_EQ(grad_of((r.prod(1, false, kComplex128) * complex128(1, 2)).real(), r).dtype(), kFloat64);
}

TEST(ReduceGrad, ZeroDimInputs) {
  Tensor s = tensor::tensor(1.7, kFloat64).requires_grad_(true);
  ASSERT_EQ(s.dim(), 0);
  const std::pair<const char*, F> cases[] = {
      {"prod", [](const variable_list& v) { return v[0].prod() * v[0]; }},
      {"prod dim", [](const variable_list& v) { return v[0].prod(0, true) * v[0]; }},
      {"max", [](const variable_list& v) { return v[0].max() * v[0]; }},
      {"max dim", [](const variable_list& v) { return std::get<0>(tensor::max(v[0], -1)) * v[0]; }},
      {"amin", [](const variable_list& v) { return v[0].amin({0}, true) * v[0]; }},
      {"logsumexp", [](const variable_list& v) { return v[0].logsumexp({0}) * v[0]; }},
      {"norm", [](const variable_list& v) { return v[0].norm(3) * v[0]; }},
      {"cumsum", [](const variable_list& v) { return v[0].cumsum(0) * v[0]; }},
      {"cumprod", [](const variable_list& v) { return v[0].cumprod(-1) * v[0]; }},
      {"softmax", [](const variable_list& v) { return v[0].softmax(0) * v[0]; }},
      {"log_softmax", [](const variable_list& v) { return v[0].log_softmax(0) * v[0]; }},
  };
  for (const auto& [name, f] : cases) check_both(std::string("0-dim ") + name, f, s);
}

TEST(ReduceGrad, NonDifferentiableParts) {
  // Integer inputs never record (they cannot require grad); indices of max/min never require grad.
  Tensor i = tensor::tensor(std::vector<int64_t>{1, 2, 3});
  EXPECT_FALSE(i.prod().requires_grad());
  EXPECT_FALSE(i.cumsum(0).requires_grad());
  Tensor x = vec({1, 2, 3, 4}, {2, 2});
  EXPECT_FALSE(std::get<1>(tensor::min(x, 0)).requires_grad());
  EXPECT_FALSE(x.argmax().requires_grad());
  // Under NoGradGuard nothing records.
  {
    NoGradGuard ng;
    EXPECT_FALSE(x.softmax(0).requires_grad());
    EXPECT_FALSE(x.var().requires_grad());
  }
  // Node names.
  EXPECT_EQ(x.prod().grad_fn()->name(), "ProdBackward0");
  EXPECT_EQ(x.prod(1).grad_fn()->name(), "ProdBackward1");
  EXPECT_EQ(x.var({0}).grad_fn()->name(), "VarBackward0");
  EXPECT_EQ(x.std({0}).grad_fn()->name(), "StdBackward0");
  EXPECT_EQ(x.norm().grad_fn()->name(), "NormBackward1");
  EXPECT_EQ(x.logsumexp({1}).grad_fn()->name(), "LogsumexpBackward0");
  EXPECT_EQ(x.cumsum(1).grad_fn()->name(), "CumsumBackward0");
  EXPECT_EQ(x.cumprod(1).grad_fn()->name(), "CumprodBackward0");
  EXPECT_EQ(x.log_softmax(1).grad_fn()->name(), "LogSoftmaxBackward0");
  EXPECT_EQ(x.min().grad_fn()->name(), "MinBackward1");
  EXPECT_EQ(x.amin({}).grad_fn()->name(), "AminBackward0");
  // backward() through a chain of reductions reaches the leaf.
  Tensor y = x.softmax(1).cumsum(0).logsumexp({0, 1}) + x.norm(2, {0}).amax({}) + x.std() * x.prod();
  y.backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().sizes(), x.sizes());
}
