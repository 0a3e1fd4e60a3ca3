// The fused fast paths of the training step: ReluBackward0's one-pass threshold_backward
// (Note [Fused relu backward]) and the unrolled max pooling of windows inside the input
// (Note [Max pooling fast path]), against float64 reference loops written here.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "grad_test_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::vals;

namespace {
// Bitwise-equal doubles, NaN equal to NaN.
void expect_same(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) EXPECT_TRUE(std::isnan(a[i])) << what << " at " << i;
    else EXPECT_EQ(a[i], b[i]) << what << " at " << i;
  }
}
const double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST(FusedReluBackward, MatchesReferenceWithEdgeValues) {
  // libtorch's rule: grad where relu's output > 0 or is NaN, else 0 (inf grads stay inf, a
  // NaN grad where the output is <= 0 becomes 0).
  std::vector<double> xs = {-2.0, -0.0, 0.0, 1e-30, 3.5, kNaN, kInf, -kInf, 7.0, -1.0, 2.0, 0.5};
  std::vector<double> gs = {1.0, 2.0, 3.0, 4.0, kInf, 5.0, -6.0, kNaN, kNaN, kInf, -kInf, 8.0};
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16}) {
    SCOPED_TRACE(to_string(dt));
    Tensor x = tensor::tensor(xs, dt).view({3, 4}).requires_grad_(true);
    Tensor g = tensor::tensor(gs, dt).view({3, 4});
    Tensor y = relu(x);
    y.backward(g);
    std::vector<double> want(xs.size());
    std::vector<double> xr = vals(x.detach()), gr = vals(g);
    for (size_t i = 0; i < xs.size(); ++i) want[i] = (xr[i] > 0 || std::isnan(xr[i])) ? gr[i] : 0.0;
    expect_same(vals(x.grad()), want, "fused");
    // The differentiable form (create_graph) gives the same values.
    Tensor x2 = x.detach().clone().requires_grad_(true);
    Tensor g2 = g.detach().clone().requires_grad_(true);
    auto gr2 = autograd::grad({relu(x2)}, {x2}, {g2}, true, true);
    ASSERT_TRUE(gr2[0].requires_grad());
    expect_same(vals(gr2[0]), want, "create_graph");
    // Its derivative in the incoming gradient is the same mask.
    auto gg = autograd::grad({gr2[0].sum()}, {g2});
    std::vector<double> mask(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) mask[i] = (xr[i] > 0 || std::isnan(xr[i])) ? 1.0 : 0.0;
    expect_same(vals(gg[0]), mask, "double backward");
  }
}

TEST(FusedReluBackward, NonContiguousAndBroadcastGrad) {
  manual_seed(3);
  // A transposed input and the expanded gradient of sum() (stride 0).
  Tensor base = randn({37, 53}, kFloat32);
  Tensor x = base.t().detach().requires_grad_(true);
  (relu(x) * 1.0).sum().backward();
  std::vector<double> xr = vals(x.detach()), got = vals(x.grad());
  for (size_t i = 0; i < xr.size(); ++i) EXPECT_EQ(got[i], xr[i] > 0 ? 1.0 : 0.0) << i;
  // Large enough to be split across threads.
  Tensor big = randn({64, 32, 28, 28}, kFloat32).requires_grad_(true);
  Tensor gb = randn({64, 32, 28, 28}, kFloat32);
  relu(big).backward(gb);
  Tensor want = where(big.detach().gt(0), gb, zeros_like(gb));
  EXPECT_TRUE(big.grad().equal(want));
}

TEST(FusedReluBackward, GradcheckAndGradgradcheck) {
  manual_seed(4);
  // Away from the kink at 0, where finite differences are exact.
  Tensor x = (rand({4, 5}, kFloat64) + 0.1) * tensor::tensor({1.0, -1.0, 1.0, -1.0, 1.0}, kFloat64);
  x = x.detach().requires_grad_(true);
  auto f = [](const autograd::variable_list& v) { return relu(v[0]) * v[0]; };
  tensor::testing::check("relu*x gradcheck", [&] { return autograd::gradcheck(f, {x}); });
  tensor::testing::check("relu*x gradgradcheck", [&] { return autograd::gradgradcheck(f, {x}); });
}

namespace {
struct Ref {
  std::vector<double> out;
  std::vector<int64_t> idx;
};
// float64 max pooling, no padding, dilation 1: the first maximum wins, NaN wins, the last NaN.
Ref ref_pool(const Tensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
  const int64_t P = x.numel() / (x.size(-2) * x.size(-1)), ih = x.size(-2), iw = x.size(-1);
  const int64_t oh = (ih - kh) / sh + 1, ow = (iw - kw) / sw + 1;
  std::vector<double> xv = vals(x);
  Ref r;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t bi = -1;
        double best = 0;
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx) {
            const int64_t i = (oy * sh + ky) * iw + ox * sw + kx;
            const double v = xv[p * ih * iw + i];
            if (bi < 0 || v > best || std::isnan(v)) bi = i, best = v;
          }
        r.out.push_back(best);
        r.idx.push_back(bi);
      }
  return r;
}
}  // namespace

TEST(FastMaxPool, MatchesReferenceWithTiesNaNAndLayouts) {
  manual_seed(5);
  struct G { int64_t kh, kw, sh, sw; };
  for (G g : {G{2, 2, 2, 2}, G{2, 2, 1, 1}, G{3, 3, 1, 1}, G{3, 3, 2, 2}, G{3, 3, 3, 2}})
    for (ScalarType dt : {kFloat32, kFloat64})
      for (int layout = 0; layout < 3; ++layout) {
        const std::string what = "k" + std::to_string(g.kh) + " s" + std::to_string(g.sh) + "," +
                                 std::to_string(g.sw) + " " + to_string(dt) + " layout " + std::to_string(layout);
        // Integer values give ties; a few NaN and inf.
        Tensor x = randint(-3, 4, {3, 5, 11, 9}).to(dt);
        x.view({-1}).narrow(0, 7, 1).fill_(kNaN);
        x.view({-1}).narrow(0, 100, 1).fill_(kNaN);
        x.view({-1}).narrow(0, 101, 1).fill_(kNaN);
        x.view({-1}).narrow(0, 250, 1).fill_(kInf);
        x.view({-1}).narrow(0, 400, 1).fill_(-kInf);
        if (layout == 1) x = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});  // channels_last
        if (layout == 2) x = x.transpose(2, 3).contiguous().transpose(2, 3);  // strided H, W
        Ref r = ref_pool(x, g.kh, g.kw, g.sh, g.sw);
        auto [v, i] = max_pool2d_with_indices(x, {g.kh, g.kw}, {g.sh, g.sw});
        expect_same(vals(v), r.out, what + " values");
        Tensor ic = i.contiguous();
        std::vector<int64_t> got(ic.data_ptr<int64_t>(), ic.data_ptr<int64_t>() + ic.numel());
        EXPECT_EQ(got, r.idx) << what << " indices";
        ASSERT_EQ(static_cast<int64_t>(r.out.size()), v.numel()) << what;
        if (dt == kFloat64) expect_same(vals(max_pool2d(x, {g.kh, g.kw}, {g.sh, g.sw})), r.out, what + " no indices");
        // Recorded: the gradient lands on the indices.
        Tensor xg = x.detach().requires_grad_(true);
        max_pool2d(xg, {g.kh, g.kw}, {g.sh, g.sw}).sum().backward();
        std::vector<double> want(static_cast<size_t>(x.numel()), 0.0);
        const int64_t plane = x.size(2) * x.size(3), opl = static_cast<int64_t>(r.idx.size()) / 15;
        for (size_t o = 0; o < r.idx.size(); ++o) want[(o / opl) * plane + r.idx[o]] += 1.0;
        expect_same(vals(xg.grad()), want, what + " grad");
      }
}
