// Gradients against values computed by PyTorch 2.15 (tests/reference/torch_grads.py prints
// them): the complex elementwise formulas under the conjugate Wirtinger convention, and the
// values and gradients of hypot, logaddexp, xlogy and copysign, edge cases included.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <complex>
#include <functional>
#include <string>
#include <vector>

using namespace tensor;
using C = std::complex<double>;

namespace {

Tensor ctensor(const std::vector<C>& v) {
  std::vector<double> re, im;
  for (const C& z : v) {
    re.push_back(z.real());
    im.push_back(z.imag());
  }
  return tensor::tensor(re, kFloat64).to(kComplex128) + tensor::tensor(im, kFloat64).to(kComplex128) * complex128(0, 1);
}

const std::vector<C> kX = {{0.3, 0.2}, {0.7, -0.4}};
const std::vector<C> kZ = {{0.4, -0.1}, {-0.2, 0.6}};
const std::vector<C> kW = {{1, -0.3}, {0.5, 0.2}};

// l = sum(real(y * w) + imag(y * w)), the loss the reference script differentiates.
Tensor loss(const Tensor& y) {
  Tensor p = y * ctensor(kW);
  return (p.real() + p.imag()).sum();
}

void expect_grad(const Tensor& grad, const std::vector<C>& want, const std::string& what) {
  ASSERT_TRUE(grad.defined()) << what;
  Tensor g = grad.contiguous();
  ASSERT_EQ(g.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    C got = g[static_cast<int64_t>(i)].item<complex128>();
    EXPECT_LE(std::abs(got - want[i]), 1e-12 * std::max(1.0, std::abs(want[i])))
        << what << "[" << i << "]: got " << got << ", PyTorch " << want[i];
  }
}

void expect_values(const Tensor& t, const std::vector<double>& want, const std::string& what) {
  Tensor c = t.contiguous();
  ASSERT_EQ(c.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    double got = c[static_cast<int64_t>(i)].item<double>();
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got)) << what << "[" << i << "]: got " << got << ", PyTorch NaN";
    } else if (std::isinf(want[i]) || want[i] == 0) {
      EXPECT_EQ(got, want[i]) << what << "[" << i << "]";
      if (want[i] == 0) EXPECT_EQ(std::signbit(got), std::signbit(want[i])) << what << "[" << i << "]: sign of zero";
    } else {
      EXPECT_NEAR(got, want[i], 1e-12 * std::max(1.0, std::fabs(want[i]))) << what << "[" << i << "]";
    }
  }
}

}  // namespace

// The 14 ops of the complex check (12 of which lacked the conjugate before the derivatives
// table applied it by convention), then the other complex-accepting unary ops.
TEST(TorchReference, ComplexUnaryGradients) {
  using F = std::function<Tensor(const Tensor&)>;
  struct Case { const char* name; F f; std::vector<C> grad; };
  const Case cases[] = {
      {"log", [](const Tensor& x) { return x.log(); }, {{-0.38461538461538497, 4.0769230769230766}, {0.93846153846153846, -0.10769230769230774}}},
      {"sin", [](const Tensor& x) { return x.sin(); }, {{0.60480638088770711, 1.3085082908384567}, {0.65817900424968534, 0.062825187897591464}}},
      {"log2", [](const Tensor& x) { return x.log2(); }, {{-0.5548827080342168, 5.8817567051626973}, {1.3539138076034887, -0.15536715824958064}}},
      {"log10", [](const Tensor& x) { return x.log10(); }, {{-0.16703633919355854, 1.7705851954517191}, {0.4075686676322825, -0.046770174974196374}}},
      {"log1p", [](const Tensor& x) { return x.log1p(); }, {{0.37572254335260108, 1.0578034682080926}, {0.42950819672131141, 0.075409836065573763}}},
      {"expm1", [](const Tensor& x) { return x.expm1(); }, {{1.2746942612365377, 1.5321140705645737}, {1.0630946769443177, 1.1053712899395243}}},
      {"exp2", [](const Tensor& x) { return x.exp2(); }, {{0.74492386816399148, 1.0161845907922211}, {0.66564780064633344, 0.54065553408210343}}},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }, {{1.2902888911189299, -3.1563466342043536}, {-0.48968751571328717, 0.19209114092738261}}},
      {"tan", [](const Tensor& x) { return x.tan(); }, {{0.89482929007188017, 1.2643503591951804}, {0.52508830822971841, 0.8633027930913314}}},
      {"asin", [](const Tensor& x) { return x.asin(); }, {{0.7973456074550771, 1.2809707200648035}, {0.59465555628729727, 0.55731394848929805}}},
      {"acos", [](const Tensor& x) { return x.acos(); }, {{-0.7973456074550771, -1.2809707200648035}, {-0.59465555628729727, -0.55731394848929805}}},
      {"atan", [](const Tensor& x) { return x.atan(); }, {{0.51839914047810898, 1.2973408541498792}, {0.5277310924369748, 0.0033613445378151167}}},
      {"sinh", [](const Tensor& x) { return x.sinh(); }, {{0.79579943394600172, 1.289502552257435}, {0.72063912607582115, 0.55361064896131218}}},
      {"cosh", [](const Tensor& x) { return x.cosh(); }, {{0.47889482729053584, 0.24261151830713823}, {0.34245555086849644, 0.55176064097821198}}},
      {"exp", [](const Tensor& x) { return x.exp(); }, {{1.2746942612365377, 1.5321140705645737}, {1.0630946769443179, 1.1053712899395243}}},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }, {{0.24418265950519188, 1.2049617684850922}, {0.41961771737025394, 0.06141120763614711}}},
      {"cos", [](const Tensor& x) { return x.cos(); }, {{-0.46106195564308872, -0.25724489909604992}, {-0.39326394799586928, -0.42884627804615172}}},
      {"tanh", [](const Tensor& x) { return x.tanh(); }, {{0.5147178639833363, 1.3039006468394219}, {0.53245504997030613, -0.050976364283369865}}},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, {{0.16314184794563175, 0.32594193934050686}, {0.16869623383567989, 0.04645732835790805}}},
      {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }, {{7.1597633136094689, -8.8165680473372756}, {-0.94437869822485199, 0.69349112426035509}}},
      {"square", [](const Tensor& x) { return x.square(); }, {{0.93999999999999995, 0.5}, {0.73999999999999988, 0.97999999999999998}}},
      {"neg", [](const Tensor& x) { return -x; }, {{-0.69999999999999996, -1.3}, {-0.69999999999999996, -0.29999999999999999}}},
      {"abs", [](const Tensor& x) { return x.abs().to(kComplex128); }, {{0.58243520603649057, 0.38829013735766044}, {0.60777019948712141, -0.34729725684978369}}},
  };
  for (const Case& c : cases) {
    Tensor x = ctensor(kX).requires_grad_(true);
    loss(c.f(x)).backward();
    expect_grad(x.grad(), c.grad, c.name);
  }
  // The in-place form records the same row: log2_ on a non-leaf copy of x.
  Tensor x = ctensor(kX).requires_grad_(true);
  Tensor y = x * 1.0;
  y.log2_();
  loss(y).backward();
  expect_grad(x.grad(), cases[2].grad, "log2_");
}

TEST(TorchReference, ComplexBinaryGradients) {
  using F = std::function<Tensor(const Tensor&, const Tensor&)>;
  struct Case { const char* name; F f; std::vector<C> gx, gz; };
  const complex128 alpha(0.5, 0.25);
  const Case cases[] = {
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, {{0.14999999999999999, 0.58999999999999997}, {0.039999999999999994, -0.47999999999999998}}, {{0.46999999999999997, 0.25}, {0.36999999999999994, 0.48999999999999999}}},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, {{2.4117647058823524, 2.6470588235294112}, {-0.80000000000000004, 0.89999999999999991}}, {{-3.1314878892733553, 0.0034602076124566287}, {0.00499999999999968, 1.5350000000000001}}},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); }, {{-0.0021763979297966677, 1.1907089141109108}, {-0.33995316393085778, -0.78088432635236515}}, {{-0.37197188931321268, -1.1682182085445234}, {-0.44763914988819359, 0.41469873358502107}}},
      {"add_alpha", [alpha](const Tensor& a, const Tensor& b) { return tensor::add(a, b, alpha); }, {{0.69999999999999996, 1.3}, {0.69999999999999996, 0.29999999999999999}}, {{0.67500000000000004, 0.47500000000000003}, {0.42499999999999999, -0.024999999999999994}}},
      {"sub_alpha", [alpha](const Tensor& a, const Tensor& b) { return tensor::sub(a, b, alpha); }, {{0.69999999999999996, 1.3}, {0.69999999999999996, 0.29999999999999999}}, {{-0.67500000000000004, -0.47500000000000003}, {-0.42499999999999999, 0.024999999999999994}}},
  };
  for (const Case& c : cases) {
    Tensor x = ctensor(kX).requires_grad_(true), z = ctensor(kZ).requires_grad_(true);
    loss(c.f(x, z)).backward();
    expect_grad(x.grad(), c.gx, std::string(c.name) + " x");
    expect_grad(z.grad(), c.gz, std::string(c.name) + " z");
  }
}

// The four ops added through docs/adding_an_op.md: values and gradients, edge cases included.
TEST(TorchReference, HypotLogaddexpXlogyCopysign) {
  using F = std::function<Tensor(const Tensor&, const Tensor&)>;
  struct Case {
    const char* name;
    F f;
    std::vector<double> a, b, w, value, ga, gb;
  };
  const std::vector<double> A = {0.3, -1.2, 2.0, 0.0}, B = {0.5, 0.7, -1.5, 2.0}, W4 = {1.0, -2.0, 0.5, 3.0},
                            W3 = {1.0, -2.0, 0.5};
  const F hypot = [](const Tensor& a, const Tensor& b) { return tensor::hypot(a, b); };
  const F logaddexp = [](const Tensor& a, const Tensor& b) { return a.logaddexp(b); };
  const F xlogy = [](const Tensor& a, const Tensor& b) { return tensor::xlogy(a, b); };
  const F copysign = [](const Tensor& a, const Tensor& b) { return a.copysign(b); };
  const Case cases[] = {
      {"hypot", hypot, A, B, W4, {0.58309518948452999, 1.3892443989449803, 2.5, 2.0}, {0.51449575542752657, 1.7275578017968669, 0.40000000000000002, 0.0}, {0.85749292571254432, -1.0077420510481725, -0.29999999999999999, 3.0}},
      {"logaddexp", logaddexp, A, B, W4, {1.0981388693815917, 0.83938675828296061, 2.0297504182726205, 2.1269280110429727}, {0.45016600268752216, -0.26021694872599571, 0.48534388462432182, 0.35760876606635267}, {0.54983399731247795, -1.7397830512740042, 0.01465611537567816, 2.6423912339336471}},
      {"xlogy", xlogy, A, B, W4, {-0.20794415416798359, 0.42800993272647891, NAN, 0.0}, {-0.69314718055994529, 0.71334988787746489, NAN, 2.0794415416798357}, {0.59999999999999998, 3.4285714285714288, -0.66666666666666663, 0.0}},
      {"copysign", copysign, A, B, W4, {0.29999999999999999, 1.2, -2.0, 0.0}, {1.0, 2.0, -0.5, 0.0}, {0.0, 0.0, 0.0, 0.0}},
      {"xlogy_zeros", xlogy, {0.0, 0.0, 1.5}, {0.0, 2.0, 0.0}, W3, {0.0, 0.0, -INFINITY}, {0.0, -1.3862943611198906, -INFINITY}, {NAN, -0.0, INFINITY}},
      {"copysign_signed_zero", copysign, A, {-0.0, 0.0, -0.0, -0.0}, W4, {-0.29999999999999999, 1.2, -2.0, -0.0}, {-1.0, 2.0, -0.5, 0.0}, {0.0, 0.0, 0.0, 0.0}},
      {"copysign_signed_zero2", copysign, {0.3, -1.2, 2.0, -0.0}, {0.0, -0.0, 0.0, 0.0}, W4, {0.29999999999999999, -1.2, 2.0, 0.0}, {1.0, -2.0, 0.5, 0.0}, {0.0, 0.0, 0.0, 0.0}},
      {"logaddexp_inf", logaddexp, {-INFINITY, 1000.0, -1000.0}, {-INFINITY, 1000.0, -999.0}, W3, {-INFINITY, 1000.6931471805599, -998.68673831248179}, {NAN, -1.0, 0.13447071068499755}, {NAN, -1.0, 0.36552928931500245}},
  };
  for (const Case& c : cases) {
    Tensor a = tensor::tensor(c.a, kFloat64).requires_grad_(true), b = tensor::tensor(c.b, kFloat64).requires_grad_(true);
    Tensor out = c.f(a, b);
    expect_values(out.detach(), c.value, std::string(c.name) + " value");
    (out * tensor::tensor(c.w, kFloat64)).sum().backward();
    // Zeros are compared by value only for gradients (adding 0.0 turns -0 into +0): the sign of
    // a zero gradient depends on the formula's operation order.
    auto unsign = [](std::vector<double> v) { for (double& x : v) if (x == 0) x = 0.0; return v; };
    expect_values(a.grad().add(0.0), unsign(c.ga), std::string(c.name) + " grad self");
    expect_values(b.grad().add(0.0), unsign(c.gb), std::string(c.name) + " grad other");
  }
}
