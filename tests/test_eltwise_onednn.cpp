// GELU, which ran on oneDNN's eltwise primitive (Note [oneDNN eltwise]) and now runs the Highway
// loop of Note [Vector gelu] on contiguous float32 tensors, strided ones the scalar formula; all
// against float64 values of the definition computed here.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>

using namespace tensor;

namespace {

double gelu_ref(double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }

/// Max |got - gelu(x)| / (atol + rtol |gelu(x)|) over all elements, x and got any layout.
void expect_gelu(const Tensor& got, const Tensor& x, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), x.sizes().vec()) << what;
  Tensor g = got.to(kFloat64).contiguous(), xd = x.to(kFloat64).contiguous();
  const double* pg = g.data_ptr<double>();
  const double* px = xd.data_ptr<double>();
  int64_t bad = 0;
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double want = gelu_ref(px[i]);
    if (!(std::abs(pg[i] - want) <= 1e-6 + 2e-6 * std::abs(want))) {
      if (bad++ < 5) ADD_FAILURE() << what << ": x=" << px[i] << " got " << pg[i] << " want " << want;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace

TEST(EltwiseOneDNN, GeluFloat32MatchesDefinition) {
  manual_seed(11);
  // Large enough for the oneDNN path; wide range incl. tails where erf saturates.
  Tensor x = randn({333, 129}) * 4;
  expect_gelu(gelu(x), x, "gelu contiguous");
  expect_gelu(x.gelu(), x, "Tensor::gelu");
  // Hand-checked points: gelu(0) = 0, gelu(1) = 0.8413447460685429, gelu(-1) = -0.15865525393145707.
  Tensor pts = zeros({2048});
  pts[1].fill_(1.0);
  pts[2].fill_(-1.0);
  Tensor gp = gelu(pts);
  EXPECT_EQ(gp[0].item<float>(), 0.0f);
  EXPECT_NEAR(gp[1].item<float>(), 0.8413447460685429, 1e-6);
  EXPECT_NEAR(gp[2].item<float>(), -0.15865525393145707, 1e-6);
}

TEST(EltwiseOneDNN, GeluInplaceOutStridedAndSmall) {
  manual_seed(12);
  Tensor x = randn({64, 100}) * 3;
  Tensor y = x.clone();
  y.gelu_();
  expect_gelu(y, x, "gelu_ in place");
  Tensor out = empty({64, 100});
  gelu_out(out, x);  // (out, input) order
  expect_gelu(out, x, "gelu_out");
  // Non-contiguous input (loops), a broadcast view, and a small tensor below the threshold.
  Tensor xt = (randn({80, 70}) * 3).t();
  expect_gelu(gelu(xt), xt, "gelu transposed");
  Tensor xb = randn({1, 300}).expand({50, 300});
  expect_gelu(gelu(xb), xb, "gelu broadcast view");
  Tensor xs = randn({7, 5}) * 3;
  expect_gelu(gelu(xs), xs, "gelu small");
  // Special values as the float64 loops give them: gelu(inf) = inf, nan stays nan, and
  // gelu(-inf) = -inf * 0 = nan by the formula (as libtorch's CPU kernel).
  Tensor sp = zeros({4096});
  sp[0].fill_(INFINITY);
  sp[1].fill_(-INFINITY);
  sp[2].fill_(NAN);
  Tensor gs = gelu(sp);
  EXPECT_EQ(gs[0].item<float>(), INFINITY);
  const double loops_minus_inf = gelu(sp.to(kFloat64))[1].item<double>();
  EXPECT_TRUE(std::isnan(loops_minus_inf));
  EXPECT_TRUE(std::isnan(gs[1].item<float>()));
  EXPECT_TRUE(std::isnan(gs[2].item<float>()));
}

TEST(EltwiseOneDNN, GeluBackwardUnchanged) {
  // The derivative does not go through oneDNN, but a float32 forward on the new path must still
  // feed autograd: d/dx gelu(x) = Phi(x) + x phi(x).
  manual_seed(13);
  Tensor x = (randn({4096}) * 2).requires_grad_(true);
  gelu(x).sum().backward();
  Tensor xd = x.detach().to(kFloat64), g = x.grad().to(kFloat64);
  for (int64_t i = 0; i < 4096; i += 97) {
    const double v = xd[i].item<double>();
    const double want = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
    EXPECT_NEAR(g[i].item<double>(), want, 1e-5) << "x=" << v;
  }
}

TEST(EltwiseOneDNN, GeluTanhWithoutGradMatchesFormula) {
  // nn::functional::gelu(approximate="tanh") runs oneDNN's gelu_tanh when no gradient is
  // recorded, the composed formula otherwise; both against the float64 formula.
  namespace F = nn::functional;
  manual_seed(14);
  const double k = std::sqrt(2.0 / M_PI);
  auto want = [&](double v) { return 0.5 * v * (1 + std::tanh(k * (v + 0.044715 * v * v * v))); };
  auto check = [&](const Tensor& got, const Tensor& x, const std::string& what) {
    Tensor g = got.to(kFloat64).contiguous(), xd = x.to(kFloat64).contiguous();
    int64_t bad = 0;
    for (int64_t i = 0; i < g.numel(); ++i) {
      const double w = want(xd.data_ptr<double>()[i]), v = g.data_ptr<double>()[i];
      if (!(std::abs(v - w) <= 1e-6 + 2e-6 * std::abs(w)) && bad++ < 5) ADD_FAILURE() << what << " at " << i;
    }
    EXPECT_EQ(bad, 0) << what;
  };
  const auto opts = F::GELUFuncOptions().approximate("tanh");
  Tensor x = randn({50, 90}) * 4;
  check(F::gelu(x, opts), x, "gelu tanh no grad");
  {
    NoGradGuard g;
    Tensor xr = x.clone().requires_grad_(true);
    check(F::gelu(xr, opts), x, "gelu tanh under no_grad");
  }
  Tensor xt = (randn({70, 80}) * 4).t();
  check(F::gelu(xt, opts), xt, "gelu tanh transposed");
  // With a gradient to record, the composed formula keeps autograd.
  Tensor xr = x.clone().requires_grad_(true);
  Tensor y = F::gelu(xr, opts);
  EXPECT_TRUE(y.requires_grad());
  check(y.detach(), x, "gelu tanh with grad");
  y.sum().backward();
  EXPECT_TRUE(xr.grad().defined());
}

TEST(EltwiseOneDNN, TanhSigmoidFloat32MatchDefinition) {
  // tanh of contiguous float32 tensors >= 1024 elements runs oneDNN's eltwise, sigmoid the
  // Highway loop at 72K elements (oneDNN's before); against the float64 definitions, plus the
  // limits and nan.
  manual_seed(15);
  Tensor x = randn({300, 240}) * 6;
  Tensor xd = x.to(kFloat64);
  Tensor th = tensor::tanh(x).to(kFloat64), sg = tensor::sigmoid(x).to(kFloat64);
  int64_t bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = xd.data_ptr<double>()[i];
    const double t = std::tanh(v), s = 1.0 / (1.0 + std::exp(-v));
    if (!(std::abs(th.data_ptr<double>()[i] - t) <= 1e-6 + 2e-6 * std::abs(t)) && bad++ < 5) ADD_FAILURE() << "tanh x=" << v;
    if (!(std::abs(sg.data_ptr<double>()[i] - s) <= 1e-6 + 2e-6 * std::abs(s)) && bad++ < 5) ADD_FAILURE() << "sigmoid x=" << v;
  }
  EXPECT_EQ(bad, 0);
  Tensor sp = zeros({4096});
  sp[0].fill_(INFINITY);
  sp[1].fill_(-INFINITY);
  sp[2].fill_(NAN);
  Tensor ts = tensor::tanh(sp), ss = tensor::sigmoid(sp);
  EXPECT_EQ(ts[0].item<float>(), 1.0f);
  EXPECT_EQ(ts[1].item<float>(), -1.0f);
  EXPECT_TRUE(std::isnan(ts[2].item<float>()));
  EXPECT_EQ(ts[3].item<float>(), 0.0f);
  EXPECT_EQ(ss[0].item<float>(), 1.0f);
  EXPECT_EQ(ss[1].item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(ss[2].item<float>()));
  EXPECT_EQ(ss[3].item<float>(), 0.5f);
  // In place.
  Tensor y = x.clone();
  y.tanh_();
  EXPECT_TRUE(y.allclose(tensor::tanh(x)));
}

// float32 sigmoid runs the Highway loop at every size (Note [oneDNN eltwise], Note [Sigmoid and
// silu edges]), which keeps the subnormal results of x in [-88.7, -87] that oneDNN's logistic
// flushes to 0: each against 1 / (1 + exp(-x)) in float64 (rounded to float, within 2 ulp of
// the subnormal spacing), at 4K elements and at 1M (threaded; it took oneDNN from 64K before),
// contiguous and strided (the scalar loop). Below -88.73 exp(-x) overflows a float and the
// result is 0, as torch's.
TEST(EltwiseOneDNN, SigmoidKeepsSubnormalTail) {
  for (int64_t n : {int64_t(4096), int64_t(1) << 20}) {
    Tensor x = tensor::linspace(-90.0, -80.0, n, TensorOptions(kFloat32));
    for (bool strided : {false, true}) {
      Tensor in = strided ? x.reshape({2, n / 2}).t() : x;
      Tensor got = sigmoid(in).contiguous().to(kFloat64);
      Tensor xd = in.contiguous().to(kFloat64);
      const double* gp = got.data_ptr<double>();
      const double* xp = xd.data_ptr<double>();
      int64_t bad = 0, tail = 0, zero = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double v = xp[i], g = gp[i];
        if (v < -88.73) {
          ++zero;
          if (g != 0.0 && bad++ < 5) ADD_FAILURE() << "n=" << n << " x=" << v << " got " << g << " want 0";
          continue;
        }
        const double want = static_cast<float>(1.0 / (1.0 + std::exp(-v)));
        if (v < -88.70 && g == 0.0) continue;  // exp(-x) overflows a float from 88.7228 on
        if (v <= -87.0) {
          ++tail;
          if (!(g > 0.0) && bad++ < 5) ADD_FAILURE() << "n=" << n << " x=" << v << " got 0";
        }
        if (!(std::abs(g - want) <= 2 * 0x1p-149 + 4e-7 * want) && bad++ < 5)
          ADD_FAILURE() << "n=" << n << " strided=" << strided << " x=" << v << " got " << g << " want " << want;
      }
      EXPECT_GT(tail, n / 10);
      EXPECT_GT(zero, n / 10);
      EXPECT_EQ(bad, 0);
    }
  }
}

// silu's tail the same way (Note [Sigmoid and silu edges]): x / (1 + exp(-x)) is a normal float
// down to -88.72 (-5.3e-37 at -88), which the vector loop flushed to 0 below -80 before; past
// -88.73 exp(-x) overflows a float and the result is -0, as the scalar x * sigmoid(x).
TEST(EltwiseOneDNN, SiluKeepsTail) {
  for (int64_t n : {int64_t(4096), int64_t(1) << 20}) {
    Tensor x = tensor::linspace(-90.0, -70.0, n, TensorOptions(kFloat32));
    for (bool strided : {false, true}) {
      Tensor in = strided ? x.reshape({2, n / 2}).t() : x;
      Tensor got = silu(in).contiguous().to(kFloat64);
      Tensor xd = in.contiguous().to(kFloat64);
      const double* gp = got.data_ptr<double>();
      const double* xp = xd.data_ptr<double>();
      int64_t bad = 0, tail = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double v = xp[i], g = gp[i];
        if (v < -88.73) {
          if (g != 0.0 && bad++ < 5) ADD_FAILURE() << "n=" << n << " x=" << v << " got " << g << " want 0";
          continue;
        }
        if (v < -88.70 && g == 0.0) continue;  // exp(-x) overflows a float from 88.7228 on
        const double want = static_cast<float>(v / (1.0 + std::exp(-v)));
        if (v <= -80.0) ++tail;
        if (!(std::abs(g - want) <= 6e-7 * std::abs(want)) && bad++ < 5)
          ADD_FAILURE() << "n=" << n << " strided=" << strided << " x=" << v << " got " << g << " want " << want;
      }
      EXPECT_GT(tail, n / 3);
      EXPECT_EQ(bad, 0);
    }
  }
}
