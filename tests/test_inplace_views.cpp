// In-place ops through views (Note [In-place on views] in src/autograd/nodes/Views.cpp):
// CopySlices over contiguous and non-contiguous bases, bases that start requiring grad,
// chains of views, stale views after writes through other views, double backward, and
// PyTorch's errors.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <functional>
#include <string>

#include "grad_test_util.h"
#include "tests/test_util.h"

using namespace tensor;
using autograd::variable_list;
using tensor::testing::error_of;
using tensor::testing::expect_error;
using tensor::testing::multi_output_view_error;

namespace {
TensorOptions f64() { return TensorOptions(kFloat64); }

// A base that is not contiguous and is no view of a recorded tensor: made in no-grad mode
// (so it has no base of its own) from a transposed buffer.
Tensor transposed_buffer(int64_t r, int64_t c) {
  NoGradGuard g;
  return zeros({c, r}, f64()).t();
}
Tensor strided_buffer(int64_t n) {
  NoGradGuard g;
  return zeros({2 * n}, f64()).slice(0, 0, 2 * n, 2);
}

void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(a.detach().allclose(b.detach(), 1e-12, 1e-12)) << what << "\n got " << a << "\n want " << b;
}
}  // namespace

TEST(InplaceViews, ContiguousBaseHandValues) {
  Tensor x = tensor::tensor({1.0, 2.0, 3.0, 4.0}, f64().requires_grad(true));
  Tensor y = x * 1;
  y.narrow(0, 1, 2).mul_(x.narrow(0, 2, 2));  // y = [x0, x1 x2, x2 x3, x3]
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  expect_close(y, tensor::tensor({1.0, 6.0, 12.0, 4.0}, kFloat64), "values");
  y.sum().backward();
  // d/dx0 = 1, d/dx1 = x2, d/dx2 = x1 + x3, d/dx3 = x2 + 1
  expect_close(x.grad(), tensor::tensor({1.0, 3.0, 6.0, 4.0}, kFloat64), "x.grad");
}

TEST(InplaceViews, BaseThatDoesNotRequireGradCopy) {
  Tensor x = tensor::tensor({2.0, -1.0}, f64().requires_grad(true));
  Tensor buf = zeros({5}, f64());
  Tensor v = buf.narrow(0, 1, 2);
  EXPECT_FALSE(buf.requires_grad());
  v.copy_(x);
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_FALSE(buf.is_leaf());
  EXPECT_EQ(buf.grad_fn()->name(), "CopySlices");
  EXPECT_TRUE(v.requires_grad());
  expect_close(buf, tensor::tensor({0.0, 2.0, -1.0, 0.0, 0.0}, kFloat64), "buf");
  Tensor w = tensor::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64);
  ((buf * w).sum() + (v * v).sum()).backward();
  // through buf: w[1:3]; through the view: 2 x
  expect_close(x.grad(), tensor::tensor({2.0 + 4.0, 3.0 - 2.0}, kFloat64), "x.grad");
}

TEST(InplaceViews, BaseThatDoesNotRequireGradMulAdd) {
  Tensor x = tensor::tensor({3.0, 5.0}, f64().requires_grad(true));
  Tensor buf = tensor::tensor({1.0, 2.0, 4.0, 8.0}, kFloat64);
  buf.narrow(0, 2, 2).mul_(x);           // buf = [1, 2, 4 x0, 8 x1]
  buf.narrow(0, 0, 2).add_(x, /*alpha=*/2);  // buf = [1 + 2 x0, 2 + 2 x1, 4 x0, 8 x1]
  expect_close(buf, tensor::tensor({7.0, 12.0, 12.0, 40.0}, kFloat64), "buf");
  Tensor w = tensor::tensor({1.0, 10.0, 100.0, 1000.0}, kFloat64);
  (buf * w).sum().backward();
  expect_close(x.grad(), tensor::tensor({2.0 * 1 + 4.0 * 100, 2.0 * 10 + 8.0 * 1000}, kFloat64), "x.grad");
  // A unary op on a view of a plain tensor records nothing.
  Tensor p = tensor::tensor({1.0, 2.0}, kFloat64);
  p.narrow(0, 0, 1).exp_();
  EXPECT_FALSE(p.requires_grad());
}

TEST(InplaceViews, TransposedBase) {
  Tensor buf = transposed_buffer(3, 4);  // 3 x 4, strides (1, 3)
  ASSERT_FALSE(buf.is_contiguous());
  Tensor x = tensor::rand({3, 2}, kFloat64).requires_grad_();
  Tensor s = tensor::rand({3, 2}, kFloat64).requires_grad_();
  Tensor v = buf.narrow(1, 1, 2);
  v.copy_(x);
  v.mul_(s);  // buf[:, 1:3] = x * s
  Tensor c = tensor::arange(12, kFloat64).view({3, 4}) + 1;
  (buf * c).sum().backward();
  Tensor cv = c.narrow(1, 1, 2);
  expect_close(x.grad(), cv * s.detach(), "x.grad");
  expect_close(s.grad(), cv * x.detach(), "s.grad");
  // Untouched columns stay zero; the written ones hold x * s.
  expect_close(buf.narrow(1, 1, 2), x.detach() * s.detach(), "buf[:, 1:3]");
  EXPECT_EQ(buf.narrow(1, 0, 1).abs().sum().item<double>(), 0.0);
}

TEST(InplaceViews, TransposedAndStridedBasesGradcheck) {
  Tensor a = tensor::rand({3, 2}, kFloat64).requires_grad_();
  Tensor b = tensor::rand({2}, kFloat64).requires_grad_();
  auto transposed = [](const variable_list& in) {
    Tensor buf = transposed_buffer(3, 4);
    buf.narrow(1, 1, 2).copy_(in[0]);
    buf.select(0, 1).mul_(in[1].sum());       // overlaps the copied region
    buf.t().narrow(0, 2, 2).mul_(in[0].t().exp());  // a view through a transpose of the base
    return buf.sin();
  };
  tensor::testing::check("transposed gradcheck", [&] { return autograd::gradcheck(transposed, {a, b}); });
  tensor::testing::check("transposed gradgradcheck", [&] { return autograd::gradgradcheck(transposed, {a, b}); });
  Tensor c = tensor::rand({3}, kFloat64).requires_grad_();
  auto strided = [](const variable_list& in) {
    Tensor buf = strided_buffer(5);  // 5 elements, stride 2
    buf.slice(0, 1, 4).copy_(in[0]);
    buf.slice(0, 0, 5, 2).mul_(in[0].square());  // elements 0, 2, 4
    return buf * buf;
  };
  tensor::testing::check("strided gradcheck", [&] { return autograd::gradcheck(strided, {c}); });
  tensor::testing::check("strided gradgradcheck", [&] { return autograd::gradgradcheck(strided, {c}); });
}

TEST(InplaceViews, RecordedNonContiguousBase) {
  // The root base is a recorded, non-contiguous tensor: a transposed leaf's view is rebased
  // through its own base, so take the base from an op that keeps a transposed layout if the
  // library does, and from an explicit non-contiguous clone-and-copy otherwise.
  Tensor a = tensor::rand({4, 3}, kFloat64).requires_grad_();
  Tensor b = tensor::rand({3}, kFloat64).requires_grad_();
  auto fn = [](const variable_list& in) {
    Tensor base = transposed_buffer(3, 4);
    base.narrow(0, 0, 3).copy_(in[0].t() * 2);  // full-extent view: base now has CopySlices history
    base.select(1, 2).mul_(in[1]);
    base.narrow(1, 0, 2).narrow(0, 1, 2).add_(in[0].narrow(0, 0, 2).narrow(1, 0, 2).t());  // a view of a view
    return base.square();
  };
  tensor::testing::check("gradcheck", [&] { return autograd::gradcheck(fn, {a, b}); });
  tensor::testing::check("gradgradcheck", [&] { return autograd::gradgradcheck(fn, {a, b}); });
}

TEST(InplaceViews, ContiguousBaseGradcheckAndGradgradcheck) {
  Tensor a = tensor::rand({3, 4}, kFloat64).requires_grad_();
  Tensor b = tensor::rand({2}, kFloat64).requires_grad_();
  auto fn = [](const variable_list& in) {
    Tensor t = in[0] * 1;
    t.narrow(1, 1, 2).mul_(in[1]);
    t[2].add_(t[0].detach() * 0 + in[0][1].square());
    t.narrow(1, 3, 1).sin_();
    t.narrow(0, 1, 2).narrow(1, 2, 2).div_(in[1] + 2);  // view of a view; saves its output: the last write
    return t.tanh();
  };
  tensor::testing::check("gradcheck", [&] { return autograd::gradcheck(fn, {a, b}); });
  tensor::testing::check("gradgradcheck", [&] { return autograd::gradgradcheck(fn, {a, b}); });
}

TEST(InplaceViews, ChainOfViewsHandValues) {
  Tensor x = tensor::arange(16, kFloat64).view({4, 4}).requires_grad_();
  Tensor y = x * 1;
  Tensor v = y.narrow(0, 1, 2).t().select(0, 3);  // y[1:3, 3]
  v.mul_(tensor::tensor({2.0, 3.0}, kFloat64));
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(y[1][3].item<double>(), 14.0);
  EXPECT_EQ(y[2][3].item<double>(), 33.0);
  Tensor w = tensor::rand({4, 4}, kFloat64);
  (y * w).sum().backward();
  Tensor want = w.clone();
  want[1][3].mul_(2);
  want[2][3].mul_(3);
  expect_close(x.grad(), want, "x.grad");
}

TEST(InplaceViews, OverlappingViewsInSequence) {
  // Views made before any write: the second write must see the first one's result, and a
  // view read after both writes reads the final values (Note [In-place on views]).
  Tensor x = tensor::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, f64().requires_grad(true));
  Tensor y = x * 1;
  Tensor v1 = y.narrow(0, 0, 4);
  Tensor v2 = y.narrow(0, 2, 4);
  v1.mul_(2);
  v2.mul_(3);
  expect_close(y, tensor::tensor({2.0, 4.0, 18.0, 24.0, 15.0, 18.0}, kFloat64), "y");
  Tensor w = tensor::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat64);
  Tensor u = tensor::tensor({10.0, 20.0, 30.0, 40.0}, kFloat64);
  ((y * w).sum() + (v1 * u).sum()).backward();
  Tensor c = tensor::tensor({2.0, 2.0, 6.0, 6.0, 3.0, 3.0}, kFloat64);
  Tensor uu = tensor::tensor({10.0, 20.0, 30.0, 40.0, 0.0, 0.0}, kFloat64);
  expect_close(x.grad(), c * (w + uu), "x.grad");
  // Against finite differences, with data-dependent writes into overlapping views.
  Tensor a = tensor::rand({6}, kFloat64).requires_grad_();
  auto fn = [](const variable_list& in) {
    Tensor t = in[0] * 1;
    Tensor p = t.narrow(0, 0, 4), q = t.narrow(0, 2, 4), r = t.slice(0, 1, 6, 2);
    p.mul_(in[0].narrow(0, 2, 4));
    q.add_(p.clone().square());  // square saves its input: give it a copy the next write leaves alone
    r.mul_(q.narrow(0, 0, 3).clone());  // r and q share memory: the kernel needs a copy
    return t + p.sum();
  };
  tensor::testing::check("gradcheck", [&] { return autograd::gradcheck(fn, {a}); });
  tensor::testing::check("gradgradcheck", [&] { return autograd::gradgradcheck(fn, {a}); });
}

TEST(InplaceViews, OtherViewOfAPlainBaseStartsRequiringGrad) {
  Tensor x = tensor::tensor({7.0, 9.0}, f64().requires_grad(true));
  Tensor buf = zeros({4}, f64());
  Tensor v1 = buf.narrow(0, 0, 2);
  Tensor v2 = buf.narrow(0, 1, 2);
  EXPECT_FALSE(v2.requires_grad());
  v1.copy_(x);
  EXPECT_TRUE(v2.requires_grad());  // its base now requires grad
  EXPECT_FALSE(v2.is_leaf());
  Tensor w = tensor::tensor({5.0, 11.0}, kFloat64);
  (v2 * w).sum().backward();  // v2 = [x1, 0]
  expect_close(x.grad(), tensor::tensor({0.0, 5.0}, kFloat64), "x.grad");
}

TEST(InplaceViews, CopyIntoViewBroadcastAndDtype) {
  Tensor row = tensor::rand({3}, kFloat32).requires_grad_();
  Tensor buf = zeros({4, 3}, f64());
  buf.narrow(0, 1, 2).copy_(row);  // broadcast over 2 rows, float32 -> float64
  Tensor w = tensor::rand({4, 3}, kFloat64);
  (buf * w).sum().backward();
  EXPECT_EQ(row.grad().dtype(), kFloat32);
  EXPECT_TRUE(row.grad().to(kFloat64).allclose(w.narrow(0, 1, 2).sum(0), 1e-6, 1e-6)) << row.grad();
  Tensor a = tensor::rand({3}, kFloat64).requires_grad_();
  auto fn = [](const variable_list& in) {
    Tensor t = transposed_buffer(4, 3);
    t.narrow(0, 1, 2).copy_(in[0]);
    t.select(1, 0).copy_(in[0].sum().expand({4}));
    return t.square();
  };
  tensor::testing::check("gradcheck", [&] { return autograd::gradcheck(fn, {a}); });
  tensor::testing::check("gradgradcheck", [&] { return autograd::gradgradcheck(fn, {a}); });
}

TEST(InplaceViews, Errors) {
  Tensor leaf = tensor::rand({4}, kFloat64).requires_grad_();
  std::string m1 = error_of([&] { leaf.mul_(2); });
  EXPECT_NE(m1.find("a leaf Variable that requires grad"), std::string::npos) << m1;
  std::string m2 = error_of([&] { leaf.narrow(0, 1, 2).add_(1); });
  EXPECT_NE(m2.find("view of a leaf Variable that requires grad"), std::string::npos) << m2;
  // A view of a plain tensor that later became a leaf requiring grad.
  Tensor plain = zeros({4}, f64());
  Tensor pv = plain.narrow(0, 0, 2);
  plain.requires_grad_();
  EXPECT_TRUE(pv.requires_grad());
  std::string m2b = error_of([&] { pv.copy_(leaf.narrow(0, 0, 2)); });
  EXPECT_NE(m2b.find("a view of a leaf Variable"), std::string::npos) << m2b;
  // A view made in no-grad mode, written with grad mode on.
  Tensor y = leaf * 1;
  Tensor nv;
  {
    NoGradGuard g;
    nv = y.narrow(0, 0, 2);
  }
  std::string m3 = error_of([&] { nv.mul_(leaf.narrow(0, 2, 2)); });
  EXPECT_NE(m3.find("this view was created in no-grad mode"), std::string::npos) << m3;
  // Writing through a view whose elements share memory.
  Tensor e = leaf.narrow(0, 0, 1) * 1;
  std::string m4 = error_of([&] { e.expand({3}).add_(leaf.narrow(0, 0, 3)); });
  EXPECT_NE(m4.find("more than one element of the written-to tensor"), std::string::npos) << m4;
  // A view saved for backward, then its base modified in place: backward names the versions.
  Tensor z = leaf * 1;
  Tensor sv = z.narrow(0, 0, 2);
  Tensor out = (sv * sv).sum();
  z.add_(1);
  std::string m5 = error_of([&] { out.backward(); });
  EXPECT_NE(m5.find("modified by an inplace operation"), std::string::npos) << m5;
  EXPECT_NE(m5.find("version"), std::string::npos) << m5;
  // The same through another view of the base.
  Tensor z2 = leaf * 1;
  Tensor sv2 = z2.narrow(0, 0, 2);
  Tensor out2 = sv2.exp().sum() + (sv2 * sv2).sum();
  z2.narrow(0, 1, 2).mul_(3);
  std::string m6 = error_of([&] { out2.backward(); });
  EXPECT_NE(m6.find("modified by an inplace operation"), std::string::npos) << m6;
}

TEST(InplaceViews, Complex128Gradcheck) {
  auto crandn = [](int64_t n) {
    return tensor::randn({n}, kFloat64).to(kComplex128) + tensor::randn({n}, kFloat64).to(kComplex128) * complex128(0, 1);
  };
  Tensor a = crandn(3).requires_grad_();
  Tensor b = crandn(2).requires_grad_();
  auto fn = [](const variable_list& in) {
    Tensor t = in[0] * 1;
    t.narrow(0, 1, 2).mul_(in[1]);
    Tensor buf = zeros({4}, TensorOptions(kComplex128));
    buf.narrow(0, 0, 3).copy_(t);
    buf.narrow(0, 2, 2).mul_(in[1].square());
    return buf;
  };
  tensor::testing::check("complex gradcheck", [&] { return autograd::gradcheck(fn, {a, b}); });
}

// ---- Note [Saved views]: no reference cycle through a saved view's base ----
namespace {
// A float64 tensor whose storage counts its own destruction, so a test can tell that the
// tensor (and whatever graph owned it) was really freed.
void count_free(void* data, void* counter) {
  std::free(data);
  ++*static_cast<int*>(counter);
}
Tensor counted_zeros(int64_t n, int* freed) {
  void* p = std::calloc(static_cast<size_t>(n), sizeof(double));
  auto st = make_intrusive<StorageImpl>(DataPtr{p, freed, &count_free}, static_cast<size_t>(n) * sizeof(double),
                                        Device(kCPU));
  auto impl = make_intrusive<TensorImpl>(std::move(st), kFloat64, Device(kCPU));
  impl->set_sizes_and_strides({n}, {1}, 0);
  return Tensor(std::move(impl));
}
}  // namespace

TEST(InplaceViews, ViewWrittenWithAnotherViewOfTheSameBaseIsFreed) {
  for (int mode = 0; mode < 3; ++mode) {  // 0: no backward, 1: backward, 2: backward with retain_graph twice
    int freed = 0;
    std::weak_ptr<autograd::Node> cs, mul;
    Tensor x = tensor::tensor({1.0, 2.0, 3.0, 4.0}, f64().requires_grad(true));
    {
      Tensor y = counted_zeros(4, &freed);
      y.copy_(x * 1);
      y.narrow(0, 0, 2).mul_(y.narrow(0, 2, 2));  // y = [x0 x2, x1 x3, x2, x3]
      ASSERT_EQ(y.grad_fn()->name(), "CopySlices");
      cs = y.grad_fn();
      mul = y.grad_fn()->next_edges()[0].function;  // the copy_ node (y's history before the write)
      expect_close(y, tensor::tensor({3.0, 8.0, 3.0, 4.0}, kFloat64), "values");
      if (mode == 1) y.sum().backward();
      if (mode == 2) {
        y.sum().backward({}, /*retain_graph=*/true);
        y.sum().backward();
      }
    }
    EXPECT_EQ(freed, 1) << "mode " << mode << ": y's storage leaked";
    EXPECT_TRUE(cs.expired()) << "mode " << mode << ": the CopySlices node leaked";
    EXPECT_TRUE(mul.expired()) << "mode " << mode;
    if (mode > 0)  // d/dx0 = x2, d/dx1 = x3, d/dx2 = x0 + 1, d/dx3 = x1 + 1 (times 2 with two backwards)
      expect_close(x.grad(), tensor::tensor({3.0, 4.0, 2.0, 3.0}, kFloat64) * double(mode), "x.grad");
  }
}

TEST(InplaceViews, SavedViewKeepsItsHistoryForDoubleBackward) {
  // The saved operand is an alias without its base (Note [Saved views]); its history must still
  // reach x for the second order.
  Tensor a = tensor::rand({5}, kFloat64).requires_grad_();
  auto mul_fn = [](const variable_list& in) {
    Tensor t = in[0] * 1;
    t.narrow(0, 0, 2).mul_(t.narrow(0, 3, 2));
    return t;
  };
  auto div_fn = [](const variable_list& in) {  // div saves the operand and the output
    Tensor t = in[0] + 1;
    t.narrow(0, 1, 2).div_(t.narrow(0, 3, 2));
    return t;
  };
  using Fn = std::function<Tensor(const variable_list&)>;
  for (const Fn& fn : {Fn(mul_fn), Fn(div_fn)}) {
    tensor::testing::check("gradcheck", [&] { return autograd::gradcheck(fn, {a}); });
    tensor::testing::check("gradgradcheck", [&] { return autograd::gradgradcheck(fn, {a}); });
  }
  Tensor x = tensor::tensor({2.0, 3.0, 5.0, 7.0}, f64().requires_grad(true));
  Tensor y = x * 1;
  y.narrow(0, 0, 2).mul_(y.narrow(0, 2, 2));  // y = [x0 x2, x1 x3, x2, x3]
  Tensor g = autograd::grad({(y * y).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  // d/dx0 of sum y^2 = 2 x0 x2^2; its derivative by x2 is 4 x0 x2 = 40.
  expect_close(g, tensor::tensor({2 * 2.0 * 25, 2 * 3.0 * 49, 2 * 5.0 * 4 + 2 * 5.0, 2 * 7.0 * 9 + 2 * 7.0}, kFloat64),
               "first order");
  Tensor gg = autograd::grad({g.select(0, 0)}, {x})[0];
  expect_close(gg, tensor::tensor({50.0, 0.0, 40.0, 0.0}, kFloat64), "second order");
}

TEST(InplaceViews, SimplerPatternsAreFreed) {
  Tensor w = tensor::tensor({2.0, 3.0}, f64().requires_grad(true));
  auto run = [&](int pattern, bool do_backward) {
    int freed = 0;
    std::weak_ptr<autograd::Node> node;
    {
      Tensor buf = counted_zeros(4, &freed);
      Tensor other_view = buf.narrow(0, 1, 3);  // a live sibling view, made stale by the write
      if (pattern == 0) {
        buf.narrow(0, 1, 2).copy_(w);  // plain base, operand is a leaf
      } else if (pattern == 1) {
        buf.copy_(tensor::cat({w, w}));  // a base with history
        buf.narrow(0, 1, 2).mul_(w);     // in place on a view, non-view operand
      } else if (pattern == 3) {
        buf.fill_(1.0);
        buf.copy_(buf * w.sum());  // saves buf, then gives it a history (backward raises: buf changed)
        do_backward = false;
      } else {
        buf.narrow(0, 0, 2).copy_(w);
        buf.narrow(0, 2, 2).add_(buf.narrow(0, 0, 2).exp());  // then a view of it, read into another
      }
      node = buf.grad_fn();
      EXPECT_TRUE(other_view.requires_grad());
      if (do_backward) (buf.sum() + other_view.sum()).backward();
    }
    EXPECT_EQ(freed, 1) << "pattern " << pattern << " backward " << do_backward;
    EXPECT_TRUE(node.expired()) << "pattern " << pattern << " backward " << do_backward;
  };
  for (int p = 0; p < 4; ++p) {
    run(p, false);
    run(p, true);
  }
}

// ---- Note [Multi-output views] ----
TEST(InplaceViews, MultiOutputViewsRaiseWhenTheirBaseRequiresGrad) {
  Tensor leaf = tensor::rand({6}, kFloat64).requires_grad_();
  Tensor y = leaf * 1;
  std::vector<Tensor> parts = y.split(2);
  expect_error([&] { parts[0].mul_(2); }, {multi_output_view_error("SplitBackward0", 0)});
  expect_error([&] { y.chunk(3)[2].copy_(leaf.narrow(0, 0, 2)); }, {multi_output_view_error("SplitBackward0", 2)});
  expect_error([&] { tensor::split(y, std::vector<int64_t>{1, 5}, 0)[1].add_(1); },
               {multi_output_view_error("SplitWithSizesBackward0", 1)});
  // A view of a piece inherits it; the leaf's own pieces raise it too (before the leaf error).
  expect_error([&] { parts[1].narrow(0, 1, 1).sub_(1); }, {multi_output_view_error("SplitBackward0", 1)});
  expect_error([&] { leaf.split(3)[1].mul_(2); }, {multi_output_view_error("SplitBackward0", 1)});
  // Nothing was written, and the pieces still work out of place.
  Tensor before = y.detach().clone();
  (parts[0] * 2 + parts[2]).sum().backward();
  expect_close(leaf.grad(), tensor::tensor({2.0, 2.0, 0.0, 0.0, 1.0, 1.0}, kFloat64), "leaf.grad");
  expect_close(y, before, "y unchanged");
  // Without recording (no grad mode), or on a base that does not require grad, writes work.
  {
    NoGradGuard g;
    y.split(2)[1].fill_(5.0);
  }
  EXPECT_EQ(y[3].item<double>(), 5.0);
  Tensor plain = zeros({4}, f64());
  std::vector<Tensor> pp = plain.chunk(2);
  pp[0].add_(1.0);
  Tensor w = tensor::tensor({3.0, 4.0}, f64().requires_grad(true));
  pp[1].mul_(0.0).add_(w);  // the base starts requiring grad through CopySlices
  expect_close(plain, tensor::tensor({1.0, 1.0, 3.0, 4.0}, kFloat64), "plain");
  (plain * plain).sum().backward();
  expect_close(w.grad(), tensor::tensor({6.0, 8.0}, kFloat64), "w.grad");
}

TEST(InplaceViews, SavedLeafViewReachesItsOwnAccumulator) {
  // A view that was made a leaf requiring grad is saved as an alias (Note [Saved views]) that
  // shares its AccumulateGrad, so second-order gradients still reach it.
  Tensor buf = tensor::tensor({3.0, 5.0, 7.0}, kFloat64);
  Tensor v = buf.narrow(0, 1, 2);
  v.requires_grad_();
  Tensor g = autograd::grad({(v * v * v).sum()}, {v}, {}, std::nullopt, /*create_graph=*/true)[0];
  expect_close(g, tensor::tensor({75.0, 147.0}, kFloat64), "3 v^2");
  Tensor gg = autograd::grad({g.sum()}, {v})[0];
  expect_close(gg, tensor::tensor({30.0, 42.0}, kFloat64), "6 v");
}
