// Note [Gradient layout contract]: when AccumulateGrad may take the first gradient as it is, and
// when it must copy. Every case checks the values (by hand) and that a later in-place change to
// one tensor (a leaf's .grad(), the caller's seed, a stashed hook argument) leaves the others alone.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <complex>
#include <vector>

using namespace tensor;

namespace {
std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().vec(); }
}  // namespace

// Two leaves whose gradients are views of one buffer (AddBackward passes the same tensor to both
// ViewBackwards): each view is the only handle of its TensorImpl, but they share storage.
// libtorch 1.13 steals both and a.grad, b.grad alias (pytorch/pytorch#34082); here they must not.
TEST(GradLayout, LeavesReachedThroughViewsOfOneBufferOwnSeparateGrads) {
  Tensor a = zeros({2, 3}, kFloat64).requires_grad_(true);
  Tensor b = zeros({2, 3}, kFloat64).requires_grad_(true);
  auto loss = [&] { return ((a.view({6}) + b.view({6})) * 2).sum(); };
  loss().backward();
  EXPECT_TRUE(a.grad().equal(full({2, 3}, 2.0, kFloat64)));
  EXPECT_TRUE(b.grad().equal(full({2, 3}, 2.0, kFloat64)));
  // A second backward accumulates in place into a.grad: that must not leak into b.grad.
  loss().backward();
  EXPECT_TRUE(a.grad().equal(full({2, 3}, 4.0, kFloat64)));
  EXPECT_TRUE(b.grad().equal(full({2, 3}, 4.0, kFloat64)));
  a.mutable_grad().add_(100);
  EXPECT_TRUE(b.grad().equal(full({2, 3}, 4.0, kFloat64)));
}

// The caller's seed reaches the leaf as a view (ViewBackward reshapes it): .grad() must not share
// the caller's storage (libtorch 1.13 does, pytorch/pytorch#34082).
TEST(GradLayout, SeedReachingLeafAsViewIsCopied) {
  Tensor a = zeros({2, 3}, kFloat64).requires_grad_(true);
  Tensor seed = arange(6, kFloat64);
  a.view({6}).backward(seed);
  seed.add_(5);
  EXPECT_TRUE(a.grad().equal(arange(6, kFloat64).reshape({2, 3})));
  // And the other way round: changing .grad() leaves the seed alone.
  a.mutable_grad().mul_(0);
  EXPECT_TRUE(seed.equal(arange(6, kFloat64) + 5));
}

// A hook on an intermediate keeps its argument; the leaf then receives a view of it.
TEST(GradLayout, HookStashedGradientIsNotSharedWithLeaf) {
  Tensor a = zeros({2, 3}, kFloat64).requires_grad_(true);
  Tensor y = a.view({6});
  Tensor stash;
  y.register_hook([&](Tensor g) {
    stash = g;
    return Tensor();
  });
  (y * 3).sum().backward();
  ASSERT_TRUE(stash.defined());
  stash.add_(1);
  EXPECT_TRUE(a.grad().equal(full({2, 3}, 3.0, kFloat64)));
  EXPECT_TRUE(stash.equal(full({6}, 4.0, kFloat64)));
}

// retain_grad on an intermediate copies, so the leaf may take the engine's buffer; the two stay
// independent.
TEST(GradLayout, RetainedIntermediateGradIsIndependentOfLeafGrad) {
  Tensor a = zeros({6}, kFloat64).requires_grad_(true);
  Tensor y = a + 0;  // AddBackward passes the retained gradient itself on to the leaf
  y.retain_grad();
  (y * 3).sum().backward();
  Tensor yg = y.grad();
  yg.add_(1);
  EXPECT_TRUE(a.grad().equal(full({6}, 3.0, kFloat64)));
  EXPECT_TRUE(y.grad().equal(full({6}, 4.0, kFloat64)));
}

// With create_graph the first gradient is still a copy of the caller's seed, laid out as the
// leaf (libtorch: clone_obey_contract), and it stays differentiable.
TEST(GradLayout, CreateGraphGradIsACopyOfTheSeed) {
  Tensor x = tensor::tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_(true);
  Tensor seed = tensor::tensor({1.0, 1.0, 1.0}, kFloat64);
  x.backward(seed, std::nullopt, /*create_graph=*/true);
  seed.mul_(7);
  EXPECT_TRUE(x.grad().equal(ones({3}, kFloat64)));
  x.mutable_grad() = Tensor();
  // d/dx sum(x^3) = 3x^2 recorded with history; its gradient is 6x.
  Tensor xt = arange(6, kFloat64).reshape({2, 3}).t().detach().requires_grad_(true);
  (xt * xt * xt).sum().backward({}, true, true);
  EXPECT_EQ(strides_of(xt.grad()), strides_of(xt));
  EXPECT_TRUE(xt.grad().detach().allclose(xt.detach() * xt.detach() * 3));
  ASSERT_TRUE(xt.grad().requires_grad());
  auto gg = autograd::grad({xt.grad().sum()}, {xt});
  EXPECT_TRUE(gg[0].allclose(xt.detach() * 6));
  // As in libtorch, a gradient made with create_graph reaches its own leaf through its history
  // (grad -> MulBackward -> AccumulateGrad -> leaf -> grad): a reference cycle, which PyTorch's
  // backward() documentation tells users to break by resetting .grad, as here.
  xt.mutable_grad() = Tensor();
}

// sum() hands back an expanded (stride-0) gradient: it must be materialized, so that in-place
// accumulation writes each element once.
TEST(GradLayout, ExpandedGradientIsMaterialized) {
  Tensor a = zeros({3}, kFloat64).requires_grad_(true);
  a.sum().backward();
  EXPECT_EQ(strides_of(a.grad()), (std::vector<int64_t>{1}));
  a.sum().backward();
  EXPECT_TRUE(a.grad().equal(full({3}, 2.0, kFloat64)));
  // A size-1 dim with stride 0 (an expand of a {1, 3} buffer).
  Tensor b = zeros({1, 3}, kFloat64).requires_grad_(true);
  b.backward(tensor::tensor({1.0, 2.0, 3.0}, kFloat64).view({1, 3}).expand({1, 3}));
  b.mutable_grad().add_(1);
  EXPECT_TRUE(b.grad().equal(tensor::tensor({2.0, 3.0, 4.0}, kFloat64).view({1, 3})));
}

TEST(GradLayout, ZeroElementLeaf) {
  Tensor a = zeros({0, 3}, kFloat64).requires_grad_(true);
  (a * 2).sum().backward();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().sizes().vec(), (std::vector<int64_t>{0, 3}));
  (a * 2).sum().backward();
  EXPECT_EQ(a.grad().numel(), 0);
  // A transposed empty leaf.
  Tensor b = zeros({3, 0}, kFloat64).t().detach().requires_grad_(true);
  (b * 2).sum().backward();
  EXPECT_EQ(b.grad().sizes().vec(), (std::vector<int64_t>{0, 3}));
}

// Half-precision leaves: the gradient has the leaf's dtype whether it arrives in it or is cast.
TEST(GradLayout, HalfAndBFloat16Leaves) {
  for (ScalarType dt : {kFloat16, kBFloat16}) {
    Tensor a = tensor::tensor({1.0, 2.0, 3.0}, dt).requires_grad_(true);
    (a.to(kFloat32) * 2).sum().backward();
    EXPECT_EQ(a.grad().dtype(), dt);
    EXPECT_TRUE(a.grad().to(kFloat64).equal(full({3}, 2.0, kFloat64)));
    (a * a).sum().backward();  // + 2a
    EXPECT_TRUE(a.grad().to(kFloat64).equal(tensor::tensor({4.0, 6.0, 8.0}, kFloat64)));
    // A transposed half leaf keeps its layout.
    Tensor t = ones({2, 3}, dt).t().detach().requires_grad_(true);
    (t * 3).sum().backward();
    EXPECT_EQ(strides_of(t.grad()), strides_of(t));
    EXPECT_TRUE(t.grad().to(kFloat64).equal(full({3, 2}, 3.0, kFloat64)));
  }
}

// A complex leaf reached through conj(): the lazily conjugated gradient is materialized.
TEST(GradLayout, ConjugatedGradientIsResolved) {
  auto cplx = [](std::vector<double> re, std::vector<double> im) {
    return tensor::tensor(re, kFloat64).to(kComplex128) + tensor::tensor(im, kFloat64).to(kComplex128) * std::complex<double>(0, 1);
  };
  Tensor z = zeros({2}, kComplex128).requires_grad_(true);
  Tensor seed = cplx({1.0, 3.0}, {2.0, -1.0});
  z.conj().backward(seed);  // ConjBackward hands back seed.conj(), a lazy view of the seed
  EXPECT_FALSE(z.grad().is_conj());
  seed.mul_(2);
  EXPECT_TRUE(z.grad().real().equal(tensor::tensor({1.0, 3.0}, kFloat64)));
  EXPECT_TRUE(z.grad().imag().equal(tensor::tensor({-2.0, 1.0}, kFloat64)));
}

// autograd::grad hands gradients back without touching .grad(); the leaf's accumulator is not run.
TEST(GradLayout, AutogradGradDoesNotStealOrAccumulate) {
  Tensor a = zeros({2, 3}, kFloat64).requires_grad_(true);
  Tensor y = a.view({6}) * 4;
  auto g = autograd::grad({y.sum()}, {a}, {}, true);
  EXPECT_FALSE(a.grad().defined());
  EXPECT_TRUE(g[0].equal(full({2, 3}, 4.0, kFloat64)));
  y.sum().backward();
  g[0].add_(1);
  EXPECT_TRUE(a.grad().equal(full({2, 3}, 4.0, kFloat64)));
}

// retain_grad on a view of a leaf: libtorch gives the view its gradient (3 everywhere here).
TEST(GradLayout, RetainGradOnAViewOfALeaf) {
  Tensor a = zeros({2, 3}, kFloat64).requires_grad_(true);
  Tensor y = a.view({6});
  y.retain_grad();
  (y * 3).sum().backward();
  ASSERT_TRUE(y.grad().defined());
  EXPECT_TRUE(y.grad().equal(full({6}, 3.0, kFloat64)));
  EXPECT_TRUE(a.grad().equal(full({2, 3}, 3.0, kFloat64)));
}
