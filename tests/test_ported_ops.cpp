// Ops that programs ported from libtorch call (issue 24), tested in libtorch's spelling:
// the in-place shape ops and detach_, multinomial, min/max of two tensors, constant_pad_nd,
// reflection_pad1d/2d, unique_dim, QR, diag, the new_* factories, is_inference, and binary_cross_entropy's
// gradient at p = 0 and 1. Reference values are hand-computed or come
// from float64 loops here; QR is checked by its defining properties and LAPACK's sign rule.
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

// ---- in-place shape ops ----
TEST(PortedOps, InPlaceShapeOpsChangeTheTensorItself) {
  Tensor x = tensor::arange(6, kFloat64).reshape({2, 3});
  Tensor alias = x;  // another handle to the same tensor sees the change, as in libtorch
  Tensor& r = x.unsqueeze_(0);
  EXPECT_EQ(&r, &x);
  EXPECT_EQ(shape(alias), (std::vector<int64_t>{1, 2, 3}));
  x.unsqueeze_(-1);
  EXPECT_EQ(shape(x), (std::vector<int64_t>{1, 2, 3, 1}));
  x.squeeze_(-1);
  EXPECT_EQ(shape(x), (std::vector<int64_t>{1, 2, 3}));
  x.squeeze_(1);  // size 2: unchanged, as squeeze(dim)
  EXPECT_EQ(shape(x), (std::vector<int64_t>{1, 2, 3}));
  x.squeeze_();
  EXPECT_EQ(shape(x), (std::vector<int64_t>{2, 3}));
  x.t_();
  EXPECT_EQ(shape(x), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(std::vector<int64_t>(x.strides().begin(), x.strides().end()), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(x), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  x.transpose_(0, 1);
  EXPECT_EQ(values(x), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  Tensor y = zeros({1, 4, 1, 1});
  y.squeeze_({0, 2});
  EXPECT_EQ(shape(y), (std::vector<int64_t>{4, 1}));
  y.squeeze_(IntArrayRef{});  // no dims: nothing to do
  EXPECT_EQ(shape(y), (std::vector<int64_t>{4, 1}));
  // On a non-contiguous view: the geometry composes with the view's strides.
  Tensor base = tensor::arange(12, kFloat64).reshape({3, 4});
  Tensor v = base.slice(1, 0, 4, 2);  // [3, 2], strides (4, 2)
  v.t_().unsqueeze_(1);
  EXPECT_EQ(shape(v), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(values(v), (std::vector<double>{0, 4, 8, 2, 6, 10}));
  EXPECT_ERROR_HAS(zeros({2, 2, 2}).t_(), "t_");
  EXPECT_ERROR_HAS(zeros({2, 2}).unsqueeze_(3), "unsqueeze");
  EXPECT_ERROR_HAS(zeros({2, 1}).squeeze_({1, -1}), "multiple times");
}

TEST(PortedOps, InPlaceShapeOpsFollowLibtorchAutograd) {
  Tensor w = ones({2, 3}, kFloat64).requires_grad_(true);
  // A leaf that requires grad: refused with grad mode on, allowed under NoGradGuard.
  EXPECT_ERROR_HAS(w.unsqueeze_(0), "leaf Variable that requires grad");
  EXPECT_ERROR_HAS(w.t_(), "leaf Variable that requires grad");
  {
    NoGradGuard g;
    Tensor w2 = ones({2, 3}, kFloat64).requires_grad_(true);
    w2.unsqueeze_(0);
    EXPECT_EQ(shape(w2), (std::vector<int64_t>{1, 2, 3}));
    EXPECT_TRUE(w2.is_leaf());
  }
  // A non-leaf: recorded, so backward undoes the shape change (libtorch: UnsqueezeBackward1).
  Tensor nl = w * 2;
  nl.t_();
  nl.unsqueeze_(0);
  EXPECT_EQ(shape(nl), (std::vector<int64_t>{1, 3, 2}));
  ASSERT_TRUE(nl.grad_fn());
  EXPECT_NE(nl.grad_fn()->name().find("Unsqueeze"), std::string::npos) << nl.grad_fn()->name();
  (nl * tensor::arange(6, kFloat64).reshape({1, 3, 2})).sum().backward();
  // nl[0][i][j] = 2 w[j][i] meets the factor 2 i + j, so w[a][b] gets 2 (2 b + a).
  EXPECT_EQ(values(w.grad()), (std::vector<double>{0, 4, 8, 2, 6, 10}));
  // A view of a leaf that requires grad is refused too.
  Tensor w3 = ones({2, 3}, kFloat64).requires_grad_(true);
  EXPECT_ERROR_HAS(w3.select(0, 0).unsqueeze_(0), "view of a leaf Variable");
}

TEST(PortedOps, DetachInPlace) {
  Tensor w = ones({3}, kFloat64).requires_grad_(true);
  Tensor y = w * 2;
  Tensor alias = y;
  tensor::detach_(y);
  EXPECT_FALSE(alias.requires_grad());
  EXPECT_TRUE(alias.is_leaf());
  EXPECT_FALSE(alias.grad_fn());
  EXPECT_EQ(values(alias), (std::vector<double>{2, 2, 2}));
  // A leaf: stops requiring grad (libtorch's detach_ on a leaf).
  Tensor w2 = ones({2}, kFloat64).requires_grad_(true);
  tensor::detach_(w2);
  EXPECT_FALSE(w2.requires_grad());
  // Detached values no longer reach w's graph: w * (detached y) gives w the plain factor.
  (w * y).sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{2, 2, 2}));
  // A view of a tensor that requires grad: refused, as libtorch ("use detach() instead").
  Tensor z = w * 3;
  Tensor zv = z.slice(0, 0, 2);
  EXPECT_ERROR_HAS(tensor::detach_(zv), "Can't detach views in-place");
  // A view of a tensor that does not require grad may be detached (nothing to disagree on).
  Tensor plain = tensor::zeros({3}), pv = plain.slice(0, 0, 2);
  EXPECT_NO_THROW(tensor::detach_(pv));
}

// ---- multinomial ----
TEST(PortedOps, MultinomialWithReplacementFollowsTheWeights) {
  manual_seed(7);
  // Unnormalized weights (libtorch normalizes); category 1 has weight 0 and is never drawn.
  Tensor w = tensor::tensor({2.0, 0.0, 1.0, 5.0}, kFloat64);
  const int64_t n = 40000;
  Tensor s = tensor::multinomial(w, n, /*replacement=*/true);
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(shape(s), (std::vector<int64_t>{n}));
  std::vector<double> count(4, 0);
  for (int64_t c : ints(s)) count[static_cast<size_t>(c)] += 1;
  const std::vector<double> p = {0.25, 0.0, 0.125, 0.625};
  for (size_t c = 0; c < 4; ++c) {
    // 5 standard deviations of a binomial count.
    const double sd = std::sqrt(n * p[c] * (1 - p[c]));
    EXPECT_NEAR(count[c], n * p[c], 5 * sd + 1e-9) << "category " << c;
  }
  // 2-D: one row of samples per row of weights, and the method spelling.
  Tensor w2 = tensor::tensor({{0.0, 1.0, 0.0}, {1.0, 0.0, 0.0}}, kFloat32);
  Tensor s2 = tensor::multinomial(w2, 5, true);
  EXPECT_EQ(shape(s2), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(ints(s2), (std::vector<int64_t>{1, 1, 1, 1, 1, 0, 0, 0, 0, 0}));
  // The same seed gives the same draws.
  manual_seed(3);
  Tensor a = tensor::multinomial(w, 20, true);
  manual_seed(3);
  EXPECT_TRUE(tensor::multinomial(w, 20, true).equal(a));
}

TEST(PortedOps, MultinomialWithoutReplacement) {
  manual_seed(11);
  Tensor w = tensor::tensor({{1.0, 0.0, 3.0, 2.0, 0.5}, {0.0, 0.0, 1.0, 1.0, 1.0}}, kFloat64);
  for (int rep = 0; rep < 50; ++rep) {
    Tensor s = tensor::multinomial(w, 3);
    ASSERT_EQ(shape(s), (std::vector<int64_t>{2, 3}));
    std::vector<int64_t> v = ints(s);
    std::set<int64_t> row0(v.begin(), v.begin() + 3), row1(v.begin() + 3, v.end());
    EXPECT_EQ(row0.size(), 3u);  // distinct
    EXPECT_EQ(row0.count(1), 0u);  // zero weight never drawn
    EXPECT_EQ(row1, (std::set<int64_t>{2, 3, 4}));  // the only three positive categories
  }
  // First draw frequencies: category k first with probability w_k / sum (sequential draws).
  Tensor w1 = tensor::tensor({1.0, 3.0}, kFloat64);
  int first1 = 0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) first1 += tensor::multinomial(w1, 2)[0].item<int64_t>() == 1;
  EXPECT_NEAR(first1, 0.75 * trials, 5 * std::sqrt(trials * 0.75 * 0.25));
}

TEST(PortedOps, MultinomialRejectsBadDistributions) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  EXPECT_ERROR_HAS(tensor::multinomial(tensor::tensor({1.0, -0.5}), 1), "probability entry < 0");
  EXPECT_ERROR_HAS(tensor::multinomial(tensor::tensor({1.0, inf}), 1), "infinity or NaN");
  EXPECT_ERROR_HAS(tensor::multinomial(tensor::tensor({nan, 1.0}), 1), "infinity or NaN");
  EXPECT_ERROR_HAS(tensor::multinomial(tensor::tensor({{1.0, 1.0}, {0.0, 0.0}}), 1), "sum of probabilities <= 0");
  EXPECT_ERROR_HAS(tensor::multinomial(tensor::tensor({1.0, 1.0}), 3), "without replacement");
  EXPECT_ERROR_HAS(tensor::multinomial(tensor::tensor({1.0, 0.0, 0.0}), 2), "not enough non-negative category");
  EXPECT_ERROR_HAS(tensor::multinomial(tensor::tensor({1.0, 1.0}), 0, true), "n_sample <= 0");
  EXPECT_ERROR_HAS(tensor::multinomial(zeros({2, 2, 2}), 1), "1 or 2 dim");
  EXPECT_ERROR_HAS(tensor::multinomial(tensor::tensor({1, 2}), 1), "floating-point");
}

// ---- min / max of two tensors ----
TEST(PortedOps, BinaryMinMaxAreMinimumMaximum) {
  const double nan = std::nan("");
  Tensor a = tensor::tensor({1.0, nan, 3.0, -2.0}, kFloat64);
  Tensor b = tensor::tensor({2.0, 1.0, nan, -5.0}, kFloat64);
  std::vector<double> mx = values(tensor::max(a, b)), mn = values(tensor::min(a, b));
  EXPECT_EQ(mx[0], 2.0);
  EXPECT_TRUE(std::isnan(mx[1]) && std::isnan(mx[2]));  // NaN propagates, as libtorch
  EXPECT_EQ(mx[3], -2.0);
  EXPECT_EQ(mn[0], 1.0);
  EXPECT_TRUE(std::isnan(mn[1]) && std::isnan(mn[2]));
  EXPECT_EQ(mn[3], -5.0);
  // Broadcast, non-contiguous, integer.
  Tensor m = tensor::arange(6).reshape({2, 3}).t();  // [3, 2], transposed
  EXPECT_EQ(ints(tensor::min(m, tensor::tensor({2, 1}))), (std::vector<int64_t>{0, 1, 1, 1, 2, 1}));
  EXPECT_EQ(ints(tensor::max(m, tensor::tensor({2, 1}))), (std::vector<int64_t>{2, 3, 2, 4, 2, 5}));
  // Gradients: to the larger (smaller) input, split at ties, as maximum's.
  Tensor x = tensor::tensor({1.0, 4.0, 2.0}, kFloat64).requires_grad_(true);
  Tensor y = tensor::tensor({3.0, 0.0, 2.0}, kFloat64).requires_grad_(true);
  tensor::max(x, y).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 0.5}));
  EXPECT_EQ(values(y.grad()), (std::vector<double>{1, 0, 0.5}));
  // The reductions keep their meaning.
  EXPECT_EQ(std::get<1>(tensor::max(tensor::tensor({1.0, 5.0, 2.0}), 0)).item<int64_t>(), 1);
}

// ---- padding ----
TEST(PortedOps, ConstantPadNd) {
  Tensor x = tensor::tensor({{1., 2., 3.}, {4., 5., 6.}}, kFloat64);
  // Last dim: 1 before, crop 1 after; dim 0: none before, 1 after.
  Tensor p = tensor::constant_pad_nd(x, {1, -1, 0, 1}, 7);
  EXPECT_EQ(shape(p), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values(p), (std::vector<double>{7, 1, 2, 7, 4, 5, 7, 7, 7}));
  EXPECT_EQ(values(tensor::constant_pad_nd(x, {0, 0})), values(x));
  EXPECT_EQ(tensor::constant_pad_nd(tensor::tensor({1, 2}), {1, 1}).dtype(), kInt64);
  // Non-contiguous input, and a gradient that is the un-padded (cropped) part of grad.
  Tensor a = tensor::arange(6, kFloat64).reshape({3, 2}).t().detach().requires_grad_(true);  // [2, 3] transposed
  Tensor q = tensor::constant_pad_nd(a, {-1, 2, 1, 0}, -1.0);
  EXPECT_EQ(shape(q), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values(q), (std::vector<double>{-1, -1, -1, -1, 2, 4, -1, -1, 3, 5, -1, -1}));
  (q * tensor::arange(12, kFloat64).reshape({3, 4})).sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{0, 4, 5, 0, 8, 9}));
  EXPECT_TRUE(autograd::gradcheck([](const autograd::variable_list& v) { return tensor::constant_pad_nd(v[0], {2, 1, -1, 1}, 0.5); },
                                  {tensor::randn({3, 4}, kFloat64).requires_grad_(true)}));
  EXPECT_ERROR_HAS(tensor::constant_pad_nd(x, {1, 2, 3}), "must be even");
  EXPECT_ERROR_HAS(tensor::constant_pad_nd(x, {1, 1, 1, 1, 1, 1}), "no more than twice");
  EXPECT_ERROR_HAS(tensor::constant_pad_nd(x, {-2, -2}), "negative output size");
}

TEST(PortedOps, ReflectionPad) {
  Tensor x = tensor::arange(12, kFloat64).reshape({1, 3, 4});
  Tensor p = tensor::reflection_pad2d(x, {2, 1, 1, 2});  // left, right, top, bottom
  ASSERT_EQ(shape(p), (std::vector<int64_t>{1, 6, 7}));
  // Reference: a float64 loop mirroring without the edge.
  auto mirror = [](int64_t i, int64_t n) { i = i < 0 ? -i : i; return i >= n ? 2 * (n - 1) - i : i; };
  std::vector<double> ref;
  for (int64_t i = -1; i < 3 + 2; ++i)
    for (int64_t j = -2; j < 4 + 1; ++j) ref.push_back(static_cast<double>(mirror(i, 3) * 4 + mirror(j, 4)));
  EXPECT_EQ(values(p), ref);
  // The same as the module-level F::pad(kReflect).
  namespace F = tensor::nn::functional;
  Tensor batch = tensor::randn({2, 2, 3, 4}, kFloat64);
  EXPECT_TRUE(tensor::reflection_pad2d(batch, {1, 2, 2, 0})
                  .equal(F::pad(batch, F::PadFuncOptions({1, 2, 2, 0}).mode(tensor::kReflect))));
  EXPECT_TRUE(tensor::reflection_pad1d(tensor::tensor({{1., 2., 3.}}), {2, 1})
                  .equal(tensor::tensor({{3., 2., 1., 2., 3., 2.}})));
  // Non-contiguous input and its gradient check.
  Tensor t = tensor::randn({2, 4, 3}, kFloat64).transpose(1, 2).detach().requires_grad_(true);
  EXPECT_TRUE(autograd::gradcheck([](const autograd::variable_list& v) { return tensor::reflection_pad2d(v[0], {1, 2, 2, 1}); },
                                  {t}));
  EXPECT_ERROR_HAS(tensor::reflection_pad2d(x, {4, 0, 0, 0}), "less than the corresponding input dimension");
  EXPECT_ERROR_HAS(tensor::reflection_pad2d(tensor::zeros({4}), {1, 1, 1, 1}), "3D or 4D");
  EXPECT_ERROR_HAS(tensor::reflection_pad2d(x, {1, 1}), "padding size is expected to be 4");
}

// ---- unique_dim ----
TEST(PortedOps, UniqueDim) {
  Tensor u = tensor::tensor({{1, 0, 1}, {0, 2, 0}, {1, 0, 1}, {0, 1, 0}});
  auto [o, inv, cnt] = tensor::unique_dim(u, 0, true, true, true);
  // Distinct rows in lexicographic order: [0, 1, 0] < [0, 2, 0] < [1, 0, 1] (twice).
  EXPECT_EQ(shape(o), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(ints(o), (std::vector<int64_t>{0, 1, 0, 0, 2, 0, 1, 0, 1}));
  EXPECT_EQ(ints(inv), (std::vector<int64_t>{2, 1, 2, 0}));
  EXPECT_EQ(ints(cnt), (std::vector<int64_t>{1, 1, 2}));
  auto [o1, inv1, cnt1] = tensor::unique_dim(u, 1, true, true, true);
  EXPECT_EQ(shape(o1), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(ints(o1), (std::vector<int64_t>{0, 1, 2, 0, 0, 1, 1, 0}));
  EXPECT_EQ(ints(inv1), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(ints(cnt1), (std::vector<int64_t>{1, 2}));
  // Without inverse and counts: empty; float rows and a negative dim.
  auto [o2, inv2, cnt2] = tensor::unique_dim(tensor::tensor({{0.5, -1.0}, {0.5, -1.0}}, kFloat64), -2);
  EXPECT_EQ(values(o2), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(inv2.numel(), 0);
  EXPECT_EQ(cnt2.numel(), 0);
  EXPECT_ERROR_HAS(tensor::unique_dim(u, 2), "out of range");
}

// ---- QR ----
TEST(PortedOps, QrFactorsWithLapacksSigns) {
  Tensor A = tensor::tensor({{2.0, -1.0, 0.5}, {1.0, 3.0, -2.0}, {-4.0, 0.25, 1.0}, {0.5, 2.0, 3.0}}, kFloat64);
  auto [Q, R] = tensor::linalg::qr(A);
  ASSERT_EQ(shape(Q), (std::vector<int64_t>{4, 3}));
  ASSERT_EQ(shape(R), (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(Q.mm(R).allclose(A, 1e-12, 1e-12));
  EXPECT_TRUE(Q.t().mm(Q).allclose(tensor::eye(3, kFloat64), 1e-12, 1e-12));
  EXPECT_TRUE(R.equal(R.triu()));
  // LAPACK's sign rule (dlarfg): each reflection sends the column to -sign(x0) ||x||, so
  // R[0][0] = -||A[:, 0]|| here (A[0][0] > 0), and R is unique given the signs of its diagonal:
  // it equals the Cholesky factor of A^T A with those signs applied row by row.
  std::vector<double> r = values(R);
  EXPECT_NEAR(r[0], -std::sqrt(4 + 1 + 16 + 0.25), 1e-12);
  Tensor AtA = A.t().mm(A);
  EXPECT_TRUE(R.t().mm(R).allclose(AtA, 1e-12, 1e-12));
  // Complete mode of a wide matrix, torch::qr(some = false), the method, and batches.
  auto [Qc, Rc] = tensor::qr(A.t(), /*some=*/false);
  EXPECT_EQ(shape(Qc), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(shape(Rc), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(Qc.mm(Rc).allclose(A.t(), 1e-12, 1e-12));
  auto [Qt, Rt] = tensor::qr(A);
  EXPECT_TRUE(Qt.equal(Q) && Rt.equal(R));
  Tensor B = tensor::randn({2, 3, 5, 4}, kFloat32);
  auto [Qb, Rb] = tensor::linalg_qr(B, "complete");
  EXPECT_EQ(shape(Qb), (std::vector<int64_t>{2, 3, 5, 5}));
  EXPECT_EQ(Qb.dtype(), kFloat32);
  EXPECT_TRUE(tensor::matmul(Qb, Rb).allclose(B, 1e-4, 1e-5));
  auto [Qr, Rr] = tensor::linalg_qr(B, "r");
  EXPECT_EQ(Qr.numel(), 0);
  EXPECT_TRUE(Rr.equal(std::get<1>(tensor::linalg_qr(B))));
}

TEST(PortedOps, QrRejectsBadInput) {
  EXPECT_ERROR_HAS(tensor::linalg_qr(tensor::zeros({3})), "at least 2 dimensions");
  EXPECT_ERROR_HAS(tensor::linalg_qr(tensor::zeros({2, 2}), "full"), "unrecognized mode");
  EXPECT_ERROR_HAS(tensor::linalg_qr(tensor::zeros({2, 2}, kInt64)), "float32 or float64");
}

// QR's backward (Note [QR backward]); the op table gradient-checks it on tall, square, wide and
// batched inputs. Here a value by hand: R[0][0] = -sign(a00) * ||A[:, 0]|| (Householder's sign),
// so its gradient is -sign(a00) * A[:, 0] / ||A[:, 0]|| in column 0 and zero elsewhere.
TEST(PortedOps, QrBackward) {
  Tensor a = tensor::tensor({{3., 1., 2.}, {-4., 0.5, 1.}, {0., 2., -1.}, {12., 1., 1.}}, kFloat64).requires_grad_(true);
  auto [Q, R] = tensor::linalg_qr(a);
  R[0][0].backward();
  Tensor want = tensor::zeros({4, 3}, kFloat64);
  want.select(1, 0).copy_(tensor::tensor({3., -4., 0., 12.}, kFloat64) / -13.);
  EXPECT_TRUE(a.grad().allclose(want, 1e-12, 1e-12)) << a.grad();
  // libtorch's refusals, raised by backward: mode "r" has no Q, and complete Q of a tall input
  // is not determined by it.
  Tensor b = tensor::randn({4, 3}, kFloat64).requires_grad_(true);
  EXPECT_ERROR_HAS(std::get<1>(tensor::linalg_qr(b, "r")).sum().backward(), "mode 'r'");
  EXPECT_ERROR_HAS(std::get<0>(tensor::linalg_qr(b, "complete")).sum().backward(), "not differentiable");
  // A wide input in complete mode is differentiable (Q is m x m, as reduced).
  Tensor w = tensor::randn({2, 4}, kFloat64).requires_grad_(true);
  EXPECT_NO_THROW(std::get<1>(tensor::linalg_qr(w, "complete")).sum().backward());
  EXPECT_EQ(w.grad().sizes(), (std::vector<int64_t>{2, 4}));
}

// ---- diag ----
TEST(PortedOps, Diag) {
  Tensor v = tensor::tensor({1., 2.}, kFloat64);
  EXPECT_EQ(values(tensor::diag(v)), (std::vector<double>{1, 0, 0, 2}));
  EXPECT_EQ(values(tensor::diag(v, -1)), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 2, 0}));
  EXPECT_EQ(values(tensor::diag(v, 2)), (std::vector<double>{0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0}));
  Tensor m = tensor::arange(12, kFloat64).reshape({3, 4});
  EXPECT_EQ(values(tensor::diag(m)), (std::vector<double>{0, 5, 10}));
  EXPECT_EQ(values(tensor::diag(m, 1)), (std::vector<double>{1, 6, 11}));
  EXPECT_EQ(values(tensor::diag(m.t(), -1)), (std::vector<double>{1, 6, 11}));  // non-contiguous
  // A copy, not a view (libtorch's diag).
  Tensor d = tensor::diag(m);
  d.fill_(-1);
  EXPECT_EQ(m[1][1].item<double>(), 5);
  auto f1 = [](const autograd::variable_list& in) { return tensor::diag(in[0], 1); };
  EXPECT_TRUE(autograd::gradcheck(f1, {tensor::randn({3}, kFloat64).requires_grad_(true)}));
  auto f2 = [](const autograd::variable_list& in) { return tensor::diag(in[0], -1); };
  EXPECT_TRUE(autograd::gradcheck(f2, {tensor::randn({4, 3}, kFloat64).t().detach().requires_grad_(true)}));
  EXPECT_ERROR_HAS(tensor::diag(tensor::zeros({2, 2, 2})), "1-D or 2-D");
}

// ---- new_* factories and the method spellings ----
TEST(PortedOps, NewFactoriesTakeTheTensorsDtypeAndDevice) {
  Tensor x = tensor::zeros({2}, kFloat64);
  Tensor z = x.new_zeros({2, 3});
  EXPECT_EQ(z.dtype(), kFloat64);
  EXPECT_EQ(shape(z), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(z), std::vector<double>(6, 0.0));
  EXPECT_EQ(values(x.new_ones({2})), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(x.new_full({3}, 2.5)), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(x.new_empty({4}).dtype(), kFloat64);
  EXPECT_EQ(x.new_zeros({1}, kInt32).dtype(), kInt32);  // options override
  EXPECT_EQ(tensor::zeros({1}, kInt64).new_full({1}, 3).dtype(), kInt64);
  EXPECT_TRUE(x.new_zeros({1}).device().is_cpu());
  EXPECT_FALSE(x.new_zeros({1}).requires_grad());
}

TEST(PortedOps, MethodSpellings) {
  Tensor a = tensor::tensor({1.0, 5.0, -2.0}, kFloat64), b = tensor::tensor({3.0, 4.0, -2.0}, kFloat64);
  EXPECT_EQ(values(a.min(b)), (std::vector<double>{1, 4, -2}));
  EXPECT_EQ(values(a.max(b)), (std::vector<double>{3, 5, -2}));
  EXPECT_TRUE(a.diag(1).equal(tensor::diag(a, 1)));
  Tensor m = tensor::arange(6, kFloat64).reshape({2, 3});
  auto [q, r] = m.t().qr();
  auto [q2, r2] = tensor::qr(m.t());
  EXPECT_TRUE(q.equal(q2) && r.equal(r2));
  manual_seed(5);
  Tensor s1 = tensor::tensor({0.0, 1.0, 1.0}).multinomial(2);
  manual_seed(5);
  EXPECT_TRUE(s1.equal(tensor::multinomial(tensor::tensor({0.0, 1.0, 1.0}), 2)));
  Tensor w = tensor::ones({2}, kFloat64).requires_grad_(true);
  Tensor y = w * 2;
  Tensor& same = y.detach_();
  EXPECT_EQ(&same, &y);
  EXPECT_FALSE(y.requires_grad());
}

TEST(PortedOps, IsInference) {
  Tensor normal = tensor::ones({2});
  EXPECT_FALSE(normal.is_inference());
  EXPECT_FALSE(InferenceMode::is_enabled());
  Tensor inf;
  {
    InferenceMode guard;
    EXPECT_TRUE(InferenceMode::is_enabled());
    inf = tensor::ones({2, 2}) * 2;
    EXPECT_TRUE(inf.is_inference());
    EXPECT_FALSE(normal.is_inference());
    {
      InferenceMode off(false);
      EXPECT_FALSE(tensor::ones({1}).is_inference());
    }
    EXPECT_TRUE(tensor::ones({1}).is_inference());
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE(inf.is_inference());
  EXPECT_TRUE(inf[0].is_inference());  // views share the inference memory
  EXPECT_FALSE((inf + 1).is_inference());
}

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
