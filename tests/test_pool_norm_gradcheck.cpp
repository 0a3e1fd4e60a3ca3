// Derivatives of pooling and normalization (src/autograd/PoolNormFormulas.cpp): first and
// second order gradient checks in float64 on contiguous, strided and channels-last inputs;
// the fast backward (oneDNN / loops, no create_graph) against the differentiable composite
// (create_graph) in float32 and float64; hand-computed gradients (max pooling ties, average
// pooling spread); running statistics get no gradient.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

#include <string>
#include <vector>

using namespace tensor;
using tensor::testing::vals;
using autograd::variable_list;
using F = std::function<Tensor(const variable_list&)>;
using tensor::testing::check;

namespace {

enum class Layout { Contiguous, Strided, ChannelsLast };

Tensor input(std::vector<int64_t> shape, Layout l = Layout::Contiguous, ScalarType dt = kFloat64) {
  Tensor t;
  if (l == Layout::ChannelsLast && shape.size() == 4) {
    t = randn({shape[0], shape[2], shape[3], shape[1]}, dtype(dt)).permute({0, 3, 1, 2});
  } else if (l == Layout::Strided) {
    std::vector<int64_t> big = shape;
    big.back() *= 2;
    t = randn(big, dtype(dt)).slice(static_cast<int64_t>(shape.size()) - 1, 0, big.back(), 2);
  } else {
    t = randn(shape, dtype(dt));
  }
  return t.detach().requires_grad_(true);
}

const char* name(Layout l) { return l == Layout::Contiguous ? "contiguous" : l == Layout::Strided ? "strided" : "channels-last"; }

void check_both(const std::string& what, const F& f, const variable_list& in, bool second = true) {
  SCOPED_TRACE(what);
  EXPECT_TRUE(f(in).requires_grad()) << what << " records nothing";
  check(what + " gradcheck", [&] { return autograd::gradcheck(f, in, 1e-6, 1e-5, 1e-3); });
  if (second) check(what + " gradgradcheck", [&] { return autograd::gradgradcheck(f, in, 1e-6, 1e-5, 1e-3); });
}

void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  std::vector<double> x = vals(a), y = vals(b);
  int bad = 0;
  for (size_t i = 0; i < x.size() && bad < 5; ++i)
    if (std::abs(x[i] - y[i]) > tol * (1 + std::abs(y[i]))) {
      ADD_FAILURE() << what << ": at " << i << " " << x[i] << " vs " << y[i];
      ++bad;
    }
}

}  // namespace

TEST(PoolNormGrad, MaxPool2d) {
  manual_seed(11);
  for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast}) {
    Tensor x = input({2, 3, 6, 5}, l);
    std::string s = name(l);
    check_both("max_pool2d k2 " + s, [](const variable_list& v) { return max_pool2d(v[0], {2}); }, {x});
    check_both("max_pool2d k3 s2 p1 ceil " + s,
               [](const variable_list& v) { return max_pool2d(v[0], {3}, {2}, {1}, {1}, true); }, {x});
    check_both("max_pool2d k(3,2) s1 dilation 2 " + s,
               [](const variable_list& v) { return max_pool2d(v[0], {3, 2}, {1}, {1, 0}, {2, 1}); }, {x});
    check_both("max_pool2d_with_indices " + s,
               [](const variable_list& v) { return std::get<0>(max_pool2d_with_indices(v[0], {2}, {1})); }, {x});
  }
  Tensor u = input({3, 5, 5});
  check_both("max_pool2d unbatched", [](const variable_list& v) { return max_pool2d(v[0], {2}, {1}); }, {u});
}

TEST(PoolNormGrad, MaxPoolTiesGoToTheReturnedIndex) {
  // One window of equal values: the whole gradient goes to the first (the returned index).
  Tensor x = ones({1, 1, 2, 2}, kFloat64).requires_grad_(true);
  Tensor y = max_pool2d(x, {2});
  y.sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{1, 0, 0, 0}));
  // Overlapping windows send several gradients to one input.
  Tensor z = tensor::tensor({0.0, 0.0, 0.0, 0.0, 9.0, 0.0, 0.0, 0.0, 0.0}, dtype(kFloat64)).view({1, 3, 3}).requires_grad_(true);
  max_pool2d(z, {2}, {1}).sum().backward();
  EXPECT_EQ(vals(z.grad()), (std::vector<double>{0, 0, 0, 0, 4, 0, 0, 0, 0}));
}

TEST(PoolNormGrad, AvgPool2d) {
  manual_seed(12);
  for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast}) {
    Tensor x = input({2, 3, 6, 5}, l);
    std::string s = name(l);
    for (bool cip : {true, false}) {
      std::string c = cip ? " include_pad " : " exclude_pad ";
      check_both("avg_pool2d k3 s2 p1" + c + s,
                 [cip](const variable_list& v) { return avg_pool2d(v[0], {3}, {2}, {1}, false, cip); }, {x});
      check_both("avg_pool2d k3 s2 p1 ceil" + c + s,
                 [cip](const variable_list& v) { return avg_pool2d(v[0], {3}, {2}, {1}, true, cip); }, {x});
    }
    check_both("avg_pool2d divisor 5 " + s,
               [](const variable_list& v) { return avg_pool2d(v[0], {2, 3}, {1, 2}, {1, 0}, true, true, 5); }, {x});
  }
  // Hand-computed: each input under one 2x2 window gets 1/4 of its gradient.
  Tensor h = ones({1, 1, 2, 4}, kFloat64).requires_grad_(true);
  (avg_pool2d(h, {2}) * tensor::tensor({4.0, 8.0}, dtype(kFloat64)).view({1, 1, 1, 2})).sum().backward();
  EXPECT_EQ(vals(h.grad()), (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2}));
}

TEST(PoolNormGrad, AdaptiveAvgPool2d) {
  manual_seed(13);
  for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast}) {
    Tensor x = input({2, 3, 7, 5}, l);
    std::string s = name(l);
    check_both("adaptive 3x2 " + s, [](const variable_list& v) { return adaptive_avg_pool2d(v[0], {3, 2}); }, {x});
    check_both("adaptive 1x1 " + s, [](const variable_list& v) { return adaptive_avg_pool2d(v[0], {1, 1}); }, {x});
    check_both("adaptive 9x6 " + s, [](const variable_list& v) { return adaptive_avg_pool2d(v[0], {9, 6}); }, {x});
  }
}

TEST(PoolNormGrad, BatchNorm) {
  manual_seed(14);
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{5, 3}, {2, 3, 4}, {2, 3, 3, 4}, {2, 2, 2, 2, 3}})
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast}) {
      Tensor x = input(shape, l);
      const int64_t c = shape[1];
      Tensor w = (rand({c}, kFloat64) + 0.5).requires_grad_(true), b = randn({c}, kFloat64).requires_grad_(true);
      Tensor rm = randn({c}, kFloat64), rv = rand({c}, kFloat64) + 0.5;
      std::string s = std::to_string(shape.size()) + "-d " + name(l);
      check_both("batch_norm train affine " + s,
                 [](const variable_list& v) { return batch_norm(v[0], v[1], v[2], {}, {}, true, 0.1, 1e-5); }, {x, w, b});
      check_both("batch_norm train " + s,
                 [](const variable_list& v) { return batch_norm(v[0], {}, {}, {}, {}, true, 0.1, 1e-5); }, {x});
      check_both("batch_norm eval affine " + s,
                 [rm, rv](const variable_list& v) { return batch_norm(v[0], v[1], v[2], rm, rv, false, 0.1, 1e-5); },
                 {x, w, b});
    }
}

TEST(PoolNormGrad, RunningStatsGetNoGradient) {
  Tensor x = randn({4, 3, 2}, kFloat64).requires_grad_(true);
  Tensor w = ones({3}, kFloat64).requires_grad_(true);
  Tensor rm = zeros({3}, kFloat64), rv = ones({3}, kFloat64);
  Tensor y = batch_norm(x, w, {}, rm, rv, true, 0.1, 1e-5);
  EXPECT_FALSE(rm.requires_grad());
  EXPECT_EQ(std::string(y.grad_fn()->name()), "NativeBatchNormBackward0");
  (y * y).sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(rm.grad().defined());
  // sum over a channel of a normalized output is 0 whatever x: its gradient vanishes.
  Tensor x2 = randn({4, 3, 2}, kFloat64).requires_grad_(true);
  batch_norm(x2, {}, {}, {}, {}, true, 0.1, 1e-5).sum().backward();
  for (double g : vals(x2.grad())) EXPECT_NEAR(g, 0, 1e-12);
}

TEST(PoolNormGrad, LayerNorm) {
  manual_seed(15);
  struct C {
    std::vector<int64_t> shape, ns;
  };
  for (const C& c : std::vector<C>{{{4, 6}, {6}}, {{2, 3, 4}, {3, 4}}, {{3, 5}, {3, 5}}, {{2, 3, 2, 4}, {4}}})
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast}) {
      Tensor x = input(c.shape, l);
      Tensor w = (rand(c.ns, kFloat64) + 0.5).requires_grad_(true), b = randn(c.ns, kFloat64).requires_grad_(true);
      std::string s = std::to_string(c.shape.size()) + "-d over " + std::to_string(c.ns.size()) + " " + name(l);
      std::vector<int64_t> ns = c.ns;
      check_both("layer_norm affine " + s,
                 [ns](const variable_list& v) { return layer_norm(v[0], ns, v[1], v[2], 1e-5); }, {x, w, b});
      check_both("layer_norm " + s, [ns](const variable_list& v) { return layer_norm(v[0], ns); }, {x});
    }
}

TEST(PoolNormGrad, GroupNorm) {
  manual_seed(16);
  struct C {
    std::vector<int64_t> shape;
    int64_t groups;
  };
  for (const C& c : std::vector<C>{{{2, 6, 3}, 3}, {{2, 4, 3, 2}, 2}, {{3, 4}, 2}, {{2, 3, 4}, 1}, {{1, 3, 5}, 3}})
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast}) {
      Tensor x = input(c.shape, l);
      const int64_t ch = c.shape[1], gr = c.groups;
      Tensor w = (rand({ch}, kFloat64) + 0.5).requires_grad_(true), b = randn({ch}, kFloat64).requires_grad_(true);
      std::string s = std::to_string(c.shape.size()) + "-d groups " + std::to_string(gr) + " " + name(l);
      check_both("group_norm affine " + s,
                 [gr](const variable_list& v) { return group_norm(v[0], gr, v[1], v[2], 1e-5); }, {x, w, b});
      check_both("group_norm " + s, [gr](const variable_list& v) { return group_norm(v[0], gr); }, {x});
    }
}

// The fast backward (no create_graph: oneDNN or the loops, from the saved statistics) and the
// differentiable composite (create_graph) are two implementations of one formula.
TEST(PoolNormGrad, FastBackwardMatchesComposite) {
  manual_seed(17);
  for (ScalarType dt : {kFloat64, kFloat32, kBFloat16}) {
    const double tol = dt == kFloat64 ? 1e-10 : dt == kFloat32 ? 1e-4 : 5e-2;
    for (Layout l : {Layout::Contiguous, Layout::ChannelsLast}) {
      const std::string what = std::string(to_string(dt)) + " " + name(l);
      Tensor x = input({4, 3, 5, 6}, l, dt);
      Tensor w = (rand({3}, dtype(dt)) + 0.5).requires_grad_(true), b = randn({3}, dtype(dt)).requires_grad_(true);
      Tensor g = randn({4, 3, 5, 6}, dtype(dt));
      Tensor rm = zeros({3}), rv = ones({3});
      auto compare = [&](const std::string& op, const std::function<Tensor()>& f, std::vector<Tensor> in) {
        auto fast = autograd::grad({f()}, in, {g}, false, false);
        auto slow = autograd::grad({f()}, in, {g}, false, true);
        for (size_t i = 0; i < in.size(); ++i) expect_close(fast[i], slow[i], tol, op + " " + what + " input " + std::to_string(i));
      };
      compare("batch_norm train", [&] { return batch_norm(x, w, b, {}, {}, true, 0.1, 1e-5); }, {x, w, b});
      compare("batch_norm eval", [&] { return batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5); }, {x, w, b});
      compare("layer_norm", [&] { return layer_norm(x, {5, 6}, Tensor(), Tensor()) * 2; }, {x});
      Tensor wl = (rand({6}, dtype(dt)) + 0.5).requires_grad_(true), bl = randn({6}, dtype(dt)).requires_grad_(true);
      compare("layer_norm affine", [&] { return layer_norm(x, {6}, wl, bl); }, {x, wl, bl});
      compare("group_norm", [&] { return group_norm(x, 3, w, b); }, {x, w, b});
    }
  }
}

TEST(PoolNormGrad, Float32GradientsMatchFloat64) {
  manual_seed(18);
  Tensor x64 = randn({4, 6, 7, 7}, kFloat64);
  Tensor g64 = randn({4, 6, 3, 3}, kFloat64);
  auto grad_of = [&](ScalarType dt, const std::function<Tensor(const Tensor&)>& f, const Tensor& gout) {
    Tensor x = x64.to(dt).requires_grad_(true);
    return autograd::grad({f(x)}, {x}, {gout.to(dt)})[0];
  };
  auto mp = [](const Tensor& x) { return max_pool2d(x, {3}, {2}); };
  auto ap = [](const Tensor& x) { return avg_pool2d(x, {3}, {2}, {1}, true, false); };
  auto ad = [](const Tensor& x) { return adaptive_avg_pool2d(x, {3, 3}); };
  expect_close(grad_of(kFloat32, mp, g64), grad_of(kFloat64, mp, g64), 1e-6, "max_pool2d float32");
  Tensor ga = randn({4, 6, 4, 4}, kFloat64);
  expect_close(grad_of(kFloat32, ap, ga), grad_of(kFloat64, ap, ga), 1e-6, "avg_pool2d float32");
  expect_close(grad_of(kFloat32, ad, g64), grad_of(kFloat64, ad, g64), 1e-6, "adaptive float32");
  Tensor gn = randn({4, 6, 7, 7}, kFloat64);
  auto bn = [](const Tensor& x) { return batch_norm(x, {}, {}, {}, {}, true, 0.1, 1e-5); };
  auto ln = [](const Tensor& x) { return layer_norm(x, {7, 7}); };
  auto gnf = [](const Tensor& x) { return group_norm(x, 2); };
  expect_close(grad_of(kFloat32, bn, gn), grad_of(kFloat64, bn, gn), 1e-4, "batch_norm float32");
  expect_close(grad_of(kFloat32, ln, gn), grad_of(kFloat64, ln, gn), 1e-4, "layer_norm float32");
  expect_close(grad_of(kFloat32, gnf, gn), grad_of(kFloat64, gnf, gn), 1e-4, "group_norm float32");
}
