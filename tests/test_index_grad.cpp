// Derivatives of the indexing and joining ops (their rows in src/autograd/Derivatives.cpp, the
// in-place kernels in src/autograd/IndexFormulas.cpp): gather, scatter, scatter_add, index_add_,
// masked_fill, cat, stack and the in-place variants, checked by finite differences to first and
// second order (also in complex128) and against hand-computed values.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::vals;
using F = std::function<Tensor(const autograd::variable_list&)>;

namespace {
// A float64 leaf requiring grad; `transposed` gives it column-major strides (same shape).
Tensor input(IntArrayRef shape, bool transposed = false) {
  Tensor u = tensor::rand(shape, kFloat64) * 2 - 1;
  if (transposed) u = u.t().contiguous().t();
  return u.detach().requires_grad_(true);
}
using tensor::testing::check;
void check_both(const std::string& what, const F& f, const autograd::variable_list& in) {
  EXPECT_TRUE(f(in).requires_grad()) << what << " records nothing";
  check(what + " gradcheck", [&] { return autograd::gradcheck(f, in); });
  check(what + " gradgradcheck", [&] { return autograd::gradgradcheck(f, in); });
}
const char* layout(bool transposed) { return transposed ? " transposed" : " contiguous"; }
}  // namespace

TEST(IndexGrad, Gather) {
  manual_seed(1);
  // Repeated indices along the gathered dim (1 and 0 twice in rows of dim 0).
  Tensor i0 = tensor::tensor({{0, 2, 1, 0}, {2, 2, 0, 1}});  // dim 0 of a [3, 4]
  Tensor i1 = tensor::tensor({{3, 3, 0}, {1, 0, 1}, {2, 2, 2}});  // dim 1 of a [3, 4]
  for (bool tr : {false, true}) {
    Tensor x = input({3, 4}, tr);
    check_both(std::string("gather dim 0") + layout(tr), [&](const auto& in) { return in[0].gather(0, i0); }, {x});
    check_both(std::string("gather dim 1") + layout(tr), [&](const auto& in) { return in[0].gather(1, i1); }, {x});
    check_both(std::string("gather dim -1") + layout(tr), [&](const auto& in) { return gather(in[0], -1, i1); }, {x});
    check_both(std::string("gather dim -2") + layout(tr), [&](const auto& in) { return in[0].gather(-2, i0); }, {x});
  }
  // A transposed (non-contiguous) index.
  Tensor x = input({3, 4});
  Tensor it = tensor::tensor({{0, 1, 3}, {3, 3, 2}}).t();  // [3, 2]
  check_both("gather transposed index", [&](const auto& in) { return in[0].gather(1, it); }, {x});
  // 0-dim self.
  Tensor s = input({});
  check_both("gather 0-dim", [&](const auto& in) { return in[0].gather(0, tensor::tensor({0, 0, 0})); }, {s});
}

TEST(IndexGrad, GatherAccumulatesAtRepeatedIndices) {
  Tensor x = tensor::tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_(true);
  Tensor y = x.gather(0, tensor::tensor({0, 0, 2, 0}));
  EXPECT_EQ(y.grad_fn()->name(), "GatherBackward0");
  (y * tensor::tensor({1.0, 10.0, 100.0, 1000.0}, kFloat64)).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{1011.0, 0.0, 100.0}));

  // 2-D, dim 1: out[i][j] = x[i][idx[i][j]].
  Tensor x2 = tensor::tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat64).requires_grad_(true);
  Tensor y2 = x2.gather(1, tensor::tensor({{1, 1, 1}, {0, 1, 0}}));
  EXPECT_EQ(vals(y2), (std::vector<double>{2, 2, 2, 3, 4, 3}));
  y2.sum().backward();
  EXPECT_EQ(vals(x2.grad()), (std::vector<double>{0, 3, 2, 1}));
}

TEST(IndexGrad, Scatter) {
  manual_seed(2);
  // Unique target positions per column / row (scatter's gradient is only defined for those).
  Tensor i0 = tensor::tensor({{2, 0, 1, 1}, {0, 1, 2, 0}});  // into dim 0 of [3, 4]
  Tensor i1 = tensor::tensor({{3, 0}, {1, 2}, {0, 3}});  // into dim 1 of [3, 4]
  for (bool tr : {false, true}) {
    Tensor x = input({3, 4}, tr);
    Tensor src0 = input({2, 4}, tr), src1 = input({3, 2}, tr);
    check_both(std::string("scatter dim 0") + layout(tr),
               [&](const auto& in) { return in[0].scatter(0, i0, in[1]); }, {x, src0});
    check_both(std::string("scatter dim -1") + layout(tr),
               [&](const auto& in) { return scatter(in[0], -1, i1, in[1]); }, {x, src1});
  }
  Tensor x = input({3, 4});
  // src larger than index: only its leading index-shaped block is read.
  Tensor big = input({3, 5});
  check_both("scatter src larger than index", [&](const auto& in) { return in[0].scatter(0, i0, in[1]); }, {x, big});
  // Only self / only src requiring grad.
  Tensor c = tensor::rand({2, 4}, kFloat64);
  check_both("scatter self only", [&](const auto& in) { return in[0].scatter(0, i0, c); }, {x});
  Tensor base = tensor::rand({3, 4}, kFloat64);
  check_both("scatter src only", [&](const auto& in) { return base.scatter(0, i0, in[0]); }, {input({2, 4})});
  // Scalar value: the overwritten positions get no gradient.
  check_both("scatter value", [&](const auto& in) { return in[0].scatter(1, i1, Scalar(2.5)); }, {x});
}

TEST(IndexGrad, ScatterAdd) {
  manual_seed(3);
  // Repeated target positions: all of them accumulate.
  Tensor i0 = tensor::tensor({{2, 2, 1, 0}, {2, 1, 2, 0}, {0, 2, 2, 0}});  // into dim 0 of [3, 4]
  Tensor i1 = tensor::tensor({{3, 3, 3}, {1, 1, 0}});  // into dim 1 of [3, 4] (rows 0, 1)
  for (bool tr : {false, true}) {
    Tensor x = input({3, 4}, tr);
    Tensor src0 = input({3, 4}, tr), src1 = input({2, 3}, tr);
    check_both(std::string("scatter_add dim 0") + layout(tr),
               [&](const auto& in) { return in[0].scatter_add(0, i0, in[1]); }, {x, src0});
    check_both(std::string("scatter_add dim -1") + layout(tr),
               [&](const auto& in) { return scatter_add(in[0], -1, i1, in[1]); }, {x, src1});
  }
  // src larger than index in both dims.
  Tensor x = input({3, 4}), big = input({4, 5});
  check_both("scatter_add src larger than index", [&](const auto& in) { return in[0].scatter_add(1, i1, in[1]); },
             {x, big});
}

TEST(IndexGrad, ScatterAddHandValues) {
  Tensor x = zeros({3}, kFloat64).requires_grad_(true);
  Tensor src = tensor::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64).requires_grad_(true);
  Tensor idx = tensor::tensor({0, 0, 2, 0});  // reads src[0..3] only
  Tensor y = x.scatter_add(0, idx, src);
  EXPECT_EQ(vals(y), (std::vector<double>{7, 0, 3}));
  (y * tensor::tensor({1.0, 10.0, 100.0}, kFloat64)).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{1, 10, 100}));
  EXPECT_EQ(vals(src.grad()), (std::vector<double>{1, 1, 100, 1, 0}));
}

TEST(IndexGrad, MaskedFill) {
  manual_seed(4);
  Tensor row_mask = tensor::tensor({true, false, true, false});  // broadcast over rows
  Tensor full_mask = tensor::tensor({{true, false, false, true}, {false, false, true, true}, {true, true, false, false}});
  for (bool tr : {false, true}) {
    Tensor x = input({3, 4}, tr);
    check_both(std::string("masked_fill") + layout(tr),
               [&](const auto& in) { return in[0].masked_fill(full_mask, 1.5); }, {x});
    check_both(std::string("masked_fill broadcast mask") + layout(tr),
               [&](const auto& in) { return masked_fill(in[0], row_mask, -2.0); }, {x});
  }
  // The mask broadcasts self up: the output is [3, 4], self's gradient is summed back to [4].
  Tensor v = input({4});
  Tensor y = v.masked_fill(full_mask, 0.0);
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 4}));
  check_both("masked_fill self broadcast", [&](const auto& in) { return in[0].masked_fill(full_mask, 0.0); }, {v});
  Tensor w = tensor::tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).requires_grad_(true);
  w.masked_fill(full_mask, 0.0).sum().backward();
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{1, 2, 2, 1}));
}

TEST(IndexGrad, Cat) {
  manual_seed(5);
  for (bool tr : {false, true}) {
    Tensor a = input({2, 3}, tr), b = input({2, 1}, tr), c = input({2, 4}, tr);
    check_both(std::string("cat dim 1") + layout(tr), [](const auto& in) { return cat({in[0], in[1], in[2]}, 1); },
               {a, b, c});
    check_both(std::string("cat dim -1") + layout(tr), [](const auto& in) { return cat({in[0], in[1], in[2]}, -1); },
               {a, b, c});
    Tensor p = input({3, 2}, tr), q = input({1, 2}, tr), r = input({2, 2}, tr);
    check_both(std::string("cat dim 0") + layout(tr), [](const auto& in) { return cat({in[0], in[1], in[2]}, 0); },
               {p, q, r});
  }
  // Some inputs not requiring grad; a legacy [0]-shaped empty input is skipped.
  Tensor a = input({2, 3}), c = input({2, 2});
  Tensor k = tensor::rand({2, 1}, kFloat64);
  Tensor legacy = zeros({0}, kFloat64);
  check_both("cat mixed requires_grad", [&](const auto& in) { return cat({k, in[0], legacy, in[1]}, 1); }, {a, c});

  // Hand values: each input gets its slab of the gradient.
  Tensor x = tensor::tensor({{1.0, 2.0}}, kFloat64).requires_grad_(true);
  Tensor y = tensor::tensor({{3.0}}, kFloat64).requires_grad_(true);
  Tensor e = zeros({0}, kFloat64).requires_grad_(true);
  Tensor out = cat({x, e, y}, -1);
  EXPECT_EQ(out.grad_fn()->name(), "CatBackward0");
  (out * tensor::tensor({{10.0, 20.0, 30.0}}, kFloat64)).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{10, 20}));
  EXPECT_EQ(vals(y.grad()), (std::vector<double>{30}));
  EXPECT_FALSE(e.grad().defined());
}

TEST(IndexGrad, Stack) {
  manual_seed(6);
  for (bool tr : {false, true}) {
    Tensor a = input({2, 3}, tr), b = input({2, 3}, tr), c = input({2, 3}, tr);
    for (int64_t d : {0, 1, 2, -1, -3}) {
      check_both("stack dim " + std::to_string(d) + layout(tr),
                 [d](const auto& in) { return stack({in[0], in[1], in[2]}, d); }, {a, b, c});
    }
  }
  Tensor a = tensor::tensor({1.0, 2.0}, kFloat64).requires_grad_(true);
  Tensor b = tensor::tensor({3.0, 4.0}, kFloat64).requires_grad_(true);
  Tensor s = stack({a, b}, 1);  // [[1, 3], [2, 4]]
  EXPECT_EQ(s.grad_fn()->name(), "StackBackward0");
  (s * tensor::tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat64)).sum().backward();
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{1, 3}));
  EXPECT_EQ(vals(b.grad()), (std::vector<double>{2, 4}));
}

// In-place variants on non-leaf tensors match the functional ops, values and gradients.
TEST(IndexGrad, InplaceMatchesFunctional) {
  manual_seed(7);
  Tensor is = tensor::tensor({{2, 0, 1, 1}, {0, 1, 2, 0}});  // unique per column (scatter_)
  Tensor ia = tensor::tensor({{2, 2, 1, 0}, {2, 1, 2, 0}});  // repeated (scatter_add_)
  Tensor ii = tensor::tensor({2, 0, 2});                     // index_add_ along dim 0
  Tensor mask = tensor::tensor({true, false, false, true});
  for (bool tr : {false, true}) {
    Tensor x = input({3, 4}, tr), src = input({2, 4}, tr), isrc = input({3, 4}, tr);
    struct Case {
      std::string name;
      F inplace, functional;
      autograd::variable_list in;
    };
    std::vector<Case> cases = {
        {"scatter_", [&](const auto& in) { Tensor t = in[0] * 1; t.scatter_(0, is, in[1]); return t; },
         [&](const auto& in) { return in[0].scatter(0, is, in[1]); }, {x, src}},
        {"scatter_add_", [&](const auto& in) { Tensor t = in[0] * 1; t.scatter_add_(-2, ia, in[1]); return t; },
         [&](const auto& in) { return in[0].scatter_add(-2, ia, in[1]); }, {x, src}},
        {"index_add_", [&](const auto& in) { Tensor t = in[0] * 1; t.index_add_(0, ii, in[1], 0.5); return t; },
         [&](const auto& in) { return in[0].index_add(0, ii, in[1], 0.5); }, {x, isrc}},
        {"masked_fill_", [&](const auto& in) { Tensor t = in[0] * 1; t.masked_fill_(mask, 3.0); return t; },
         [&](const auto& in) { return in[0].masked_fill(mask, 3.0); }, {x}},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + layout(tr));
      Tensor yi = c.inplace(c.in), yf = c.functional(c.in);
      ASSERT_TRUE(yi.requires_grad());
      EXPECT_TRUE(allclose(yi, yf));
      Tensor w = tensor::rand(yf.sizes(), kFloat64);
      auto gi = autograd::grad({yi}, c.in, {w});
      auto gf = autograd::grad({yf}, c.in, {w});
      for (size_t k = 0; k < gi.size(); ++k) EXPECT_TRUE(allclose(gi[k], gf[k])) << "input " << k;
      check_both(c.name + layout(tr), c.inplace, c.in);
    }
  }
  // Only src requires grad: self (a plain tensor) starts recording at the write.
  Tensor src = input({2, 4});
  Tensor t = zeros({3, 4}, kFloat64);
  t.scatter_add_(0, ia, src);
  EXPECT_TRUE(t.requires_grad());
  EXPECT_FALSE(t.is_leaf());
  t.sum().backward();
  EXPECT_EQ(vals(src.grad()), std::vector<double>(8, 1.0));
  // A chain of in-place writes.
  Tensor x = input({3, 4});
  check_both("scatter_add_ then masked_fill_", [&](const auto& in) {
    Tensor u = in[0] * 2;
    u.scatter_add_(0, ia, in[1]);
    u.masked_fill_(mask, 0.0);
    return u;
  }, {x, src});
}

TEST(IndexGrad, InplaceOnLeafRequiringGradThrows) {
  Tensor x = zeros({3, 4}, kFloat64).requires_grad_(true);
  Tensor src = tensor::rand({2, 4}, kFloat64);
  Tensor idx = tensor::tensor({{0, 1, 2, 0}, {1, 2, 0, 1}});
  EXPECT_THROW(x.scatter_(0, idx, src), tensor::Error);
  EXPECT_THROW(x.scatter_add_(0, idx, src), tensor::Error);
  EXPECT_THROW(x.index_add_(0, tensor::tensor({0, 2}), src), tensor::Error);
  EXPECT_THROW(x.masked_fill_(tensor::tensor({true, false, true, false}), 1.0), tensor::Error);
  // Nothing was written.
  EXPECT_EQ(vals(x), std::vector<double>(12, 0.0));
  // Under NoGradGuard it is allowed.
  {
    NoGradGuard ng;
    x.scatter_add_(0, idx, src);
  }
  EXPECT_TRUE(x.is_leaf());
}

TEST(IndexGrad, SavedIndexModifiedInPlaceIsDetected) {
  Tensor x = input({3});
  Tensor idx = tensor::tensor({0, 2});
  Tensor y = x.gather(0, idx);
  idx.add_(0);
  EXPECT_THROW(y.sum().backward(), tensor::Error);
}

TEST(IndexGrad, EmptyIndex) {
  manual_seed(8);
  // An empty index writes nothing: self's gradient passes through, src gets zeros.
  Tensor x = input({3, 4}), src = input({2, 4});
  Tensor idx = zeros({0, 4}, kInt64);
  check("scatter_add empty index gradcheck",
        [&] { return autograd::gradcheck([&](const auto& in) { return in[0].scatter_add(0, idx, in[1]); }, {x, src}); });
  check("scatter empty index gradcheck",
        [&] { return autograd::gradcheck([&](const auto& in) { return in[0].scatter(0, idx, in[1]); }, {x, src}); });
  auto g = autograd::grad({x.scatter_add(0, idx, src).sum()}, {x, src});
  EXPECT_EQ(vals(g[0]), std::vector<double>(12, 1.0));
  EXPECT_EQ(vals(g[1]), std::vector<double>(8, 0.0));
}

// The rows of the table apply the conjugate Wirtinger convention (Note [Recording template]):
// complex128 inputs, first and second order, with complex alpha and fill values.
TEST(IndexGrad, ComplexRows) {
  manual_seed(9);
  auto cinput = [](IntArrayRef shape) {
    Tensor re = tensor::rand(shape, kFloat64) * 2 - 1, im = tensor::rand(shape, kFloat64) * 2 - 1;
    return (re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).detach().requires_grad_(true);
  };
  Tensor ig = tensor::tensor({{0, 2, 1, 0}, {2, 2, 0, 1}});  // gather along dim 0 of [3, 4] (repeats)
  Tensor is = tensor::tensor({{2, 0, 1, 1}, {0, 1, 2, 0}});  // unique per column (scatter)
  Tensor ii = tensor::tensor({2, 0, 2});
  Tensor mask = tensor::tensor({true, false, false, true});
  const complex128 alpha(0.5, -1.5);
  struct Case {
    std::string name;
    F f;
    autograd::variable_list in;
  };
  Tensor x = cinput({3, 4}), src = cinput({2, 4}), isrc = cinput({3, 4}), y = cinput({3, 2}), z = cinput({3, 4});
  const std::vector<Case> cases = {
      {"gather", [&](const auto& in) { return in[0].gather(0, ig); }, {x}},
      {"index_select", [&](const auto& in) { return in[0].index_select(1, tensor::tensor({3, 0, 3})); }, {x}},
      {"scatter", [&](const auto& in) { return in[0].scatter(0, is, in[1]); }, {x, src}},
      {"scatter_add", [&](const auto& in) { return in[0].scatter_add(0, is, in[1]); }, {x, src}},
      {"index_add complex alpha", [&](const auto& in) { return in[0].index_add(0, ii, in[1], alpha); }, {x, isrc}},
      {"masked_fill complex value", [&](const auto& in) { return in[0].masked_fill(mask, alpha); }, {x}},
      {"cat", [](const auto& in) { return cat({in[0], in[1]}, 1); }, {x, y}},
      {"stack", [](const auto& in) { return stack({in[0], in[1]}, -1); }, {x, z}},
      // A holomorphic op after the row: the conjugates must compose.
      {"gather then exp", [&](const auto& in) { return (in[0].gather(0, ig) * alpha).exp(); }, {x}},
  };
  for (const Case& c : cases) check_both("complex " + c.name, c.f, c.in);
  // Hand value: index_add's src gradient is grad * conj(alpha).
  Tensor s = cinput({3});
  Tensor g = autograd::grad({zeros({3}, kComplex128).index_add(0, tensor::tensor({0, 1, 2}), s, alpha)}, {s},
                            {ones({3}, kComplex128)})[0];
  EXPECT_TRUE(allclose(g, full({3}, std::conj(alpha), kComplex128)));
}

// index_add_ (hand-written) follows the same convention as the index_add row: src's gradient is
// grad * conj(alpha).
TEST(IndexGrad, InplaceIndexAddComplexAlpha) {
  manual_seed(10);
  auto cinput = [](IntArrayRef shape) {
    Tensor re = tensor::rand(shape, kFloat64) * 2 - 1, im = tensor::rand(shape, kFloat64) * 2 - 1;
    return (re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).detach().requires_grad_(true);
  };
  const complex128 alpha(0.5, -1.5);
  Tensor ii = tensor::tensor({2, 0, 2});
  F f = [&](const auto& in) {
    Tensor t = in[0] * 1;
    t.index_add_(0, ii, in[1], alpha);
    return t;
  };
  check_both("complex index_add_", f, {cinput({3, 4}), cinput({3, 4})});
  Tensor s = cinput({3});
  Tensor t = zeros({3}, kComplex128);
  t.index_add_(0, tensor::tensor({0, 1, 2}), s, alpha);
  Tensor g = autograd::grad({t}, {s}, {ones({3}, kComplex128)})[0];
  EXPECT_TRUE(allclose(g, full({3}, std::conj(alpha), kComplex128)));
}
