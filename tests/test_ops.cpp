// The elementwise op table (Note [Op table]): every unary and binary op against a float64
// reference loop, over dtypes and over contiguous, transposed, sliced, expanded, zero-size,
// 0-dim and broadcast inputs.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/op_table.h"
#include "tests/test_util.h"

using namespace tensor;
using namespace tensor::optable;
using tensor::testing::expect_error;

namespace {

// Random values in [lo, hi) of dtype t (integers: whole numbers in range; uint8 clamps at 0).
Tensor make_input(IntArrayRef shape, ScalarType t, double lo, double hi) {
  Tensor u = tensor::rand(shape, kFloat64) * (hi - lo) + lo;
  if (is_integral(t, false)) {
    if (t == kUInt8) u = u.clamp(0, std::nullopt);
    u = u.floor();
    if (lo > 0) u = u.clamp(std::ceil(lo), std::nullopt);
  }
  return u.to(t);
}

// Reads any tensor as a flat vector of doubles (row-major over its logical shape).
std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

double tol_for(ScalarType t) {
  switch (t) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat32: return 2e-6;
    case kFloat64: return 1e-12;
    default: return 0;
  }
}

// Expected values rounded into dtype t, as the kernel must produce them.
std::vector<double> round_to(const std::vector<double>& v, ScalarType t) {
  if (v.empty()) return v;
  Tensor x = tensor::tensor(v, kFloat64);
  return values(x.to(t));
}

void expect_close(const Tensor& out, const std::vector<double>& want, ScalarType t, const std::string& what) {
  std::vector<double> got = values(out);
  ASSERT_EQ(got.size(), want.size()) << what;
  double tol = tol_for(t);
  for (size_t i = 0; i < got.size(); ++i) {
    double w = want[i], g = got[i];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << what << " at " << i;
      continue;
    }
    double err = std::fabs(g - w), bound = tol * std::max(1.0, std::fabs(w));
    if (is_integral(t, true)) bound = 0;
    ASSERT_LE(err, bound) << what << " at " << i << ": got " << g << ", want " << w;
  }
}

// The layouts each op is tested on; every one holds logical shape [3, 5] unless noted.
struct Layout {
  const char* name;
  std::function<Tensor(ScalarType, double, double)> make;
};
std::vector<Layout> layouts() {
  return {
      {"contiguous", [](ScalarType t, double lo, double hi) { return make_input({3, 5}, t, lo, hi); }},
      {"transposed", [](ScalarType t, double lo, double hi) { return make_input({5, 3}, t, lo, hi).t(); }},
      {"sliced", [](ScalarType t, double lo, double hi) { return make_input({3, 10}, t, lo, hi).slice(1, 0, 10, 2); }},
      {"expanded", [](ScalarType t, double lo, double hi) { return make_input({1, 5}, t, lo, hi).expand({3, 5}); }},
      {"zero_size", [](ScalarType t, double lo, double hi) { return make_input({0, 5}, t, lo, hi); }},
      {"zero_dim", [](ScalarType t, double lo, double hi) { return make_input({}, t, lo, hi); }},
      {"large", [](ScalarType t, double lo, double hi) { return make_input({300, 257}, t, lo, hi); }},
  };
}

}  // namespace

TEST(OpTable, Unary) {
  manual_seed(1);
  for (const auto& c : unary_cases())
    for (ScalarType t : c.dtypes)
      for (const auto& l : layouts()) {
        std::string what = c.name + " " + to_string(t) + " " + l.name;
        Tensor a = l.make(t, c.lo, c.hi);
        Tensor out = c.fn(a);
        ASSERT_EQ(out.sizes(), a.sizes()) << what;
        ScalarType ot = out.dtype();
        if (is_floating_point(t) && !c.bool_out) EXPECT_EQ(ot, t) << what;
        std::vector<double> want;
        for (double x : values(a)) want.push_back(c.ref(x));
        expect_close(out, round_to(want, ot), ot, what);
      }
}

TEST(OpTable, UnaryIntegerInputsPromoteToFloat) {
  Tensor a = tensor::tensor({1, 2, 3});
  Tensor e = tensor::exp(a);
  EXPECT_EQ(e.dtype(), kFloat32);
  EXPECT_NEAR(e[2].item<double>(), std::exp(3.0), 1e-5);
  EXPECT_EQ(tensor::sqrt(tensor::tensor({4}, kInt32)).dtype(), kFloat32);
  EXPECT_EQ(tensor::abs(tensor::tensor({-4}, kInt32)).dtype(), kInt32);
}

TEST(OpTable, Binary) {
  manual_seed(2);
  for (const auto& c : binary_cases())
    for (ScalarType t : c.dtypes)
      for (const auto& la : layouts())
        for (const char* lb : {"same", "broadcast_row", "scalar"}) {
          std::string what = c.name + " " + to_string(t) + " " + la.name + " with " + lb;
          Tensor a = la.make(t, c.lo, c.hi);
          Tensor b;
          if (std::string(lb) == "same") b = make_input(a.sizes(), t, c.blo, c.bhi).t().contiguous().t();
          else if (std::string(lb) == "broadcast_row") b = make_input({a.dim() ? a.size(-1) : 1}, t, c.blo, c.bhi);
          else b = make_input({}, t, c.blo, c.bhi);
          if (std::string(lb) == "same" && a.dim() < 2) b = make_input(a.sizes(), t, c.blo, c.bhi);
          Tensor out = c.fn(a, b);
          std::vector<int64_t> shape = broadcast_shapes(a.sizes(), b.sizes());
          ASSERT_EQ(out.sizes(), IntArrayRef(shape)) << what;
          ScalarType ot = c.bool_out ? kBool : t;
          EXPECT_EQ(out.dtype(), ot) << what;
          std::vector<double> va = values(a.expand(shape)), vb = values(b.expand(shape)), want;
          for (size_t i = 0; i < va.size(); ++i) want.push_back(c.ref(va[i], vb[i]));
          expect_close(out, round_to(want, ot), is_integral(t, true) || c.bool_out ? kInt64 : t, what);
        }
}

TEST(OpTable, InplaceAndOutFormsMatchFunctional) {
  manual_seed(3);
  Tensor a = tensor::rand({4, 6}), b = tensor::rand({6});
  Tensor want = a * b;
  Tensor x = a.clone();
  x.mul_(b);
  EXPECT_TRUE(x.equal(want));
  Tensor out = tensor::empty({4, 6});
  tensor::mul_out(out, a, b);
  EXPECT_TRUE(out.equal(want));
  // out= of the wrong shape is resized; out= of a wider dtype receives the cast result.
  Tensor o2 = tensor::empty({1});
  tensor::add_out(o2, a, b);
  EXPECT_EQ(o2.sizes(), IntArrayRef({4, 6}));
  Tensor o3 = tensor::empty({4, 6}, kFloat64);
  tensor::exp_out(o3, a);
  EXPECT_TRUE(o3.allclose(tensor::exp(a.to(kFloat64)), 1e-6, 1e-6));
  // In-place on a transposed view writes through to the base.
  Tensor base = tensor::zeros({3, 2});
  Tensor v = base.t();
  v.add_(tensor::tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(base[2][1].item<float>(), 3.0f);
  Tensor y = a.clone();
  y.exp_();
  EXPECT_TRUE(y.allclose(tensor::exp(a)));
}

TEST(OpTable, ClampAndWhere) {
  Tensor a = tensor::tensor({-2.0, -0.5, 0.5, 2.0, NAN});
  Tensor c = a.clamp(-1, 1);
  EXPECT_EQ(c[0].item<float>(), -1.0f);
  EXPECT_EQ(c[1].item<float>(), -0.5f);
  EXPECT_EQ(c[3].item<float>(), 1.0f);
  EXPECT_TRUE(std::isnan(c[4].item<float>()));
  EXPECT_EQ(tensor::clamp(tensor::tensor({1, 5, 9}), 2, 6)[2].item<int64_t>(), 6);
  EXPECT_EQ(tensor::clamp(tensor::tensor({1, 5, 9}), 2.5).dtype(), kFloat32);
  Tensor cond = tensor::tensor({true, false, true});
  Tensor w = tensor::where(cond, tensor::tensor({1.0, 2.0, 3.0}), tensor::tensor({10, 20, 30}));
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_EQ(w[1].item<float>(), 20.0f);
  EXPECT_EQ(tensor::where(cond.view({3, 1}), 1.0, tensor::zeros({4})).sizes(), IntArrayRef({3, 4}));
}

TEST(TypePromotion, MatchesPyTorchTable) {
  struct P { ScalarType a, b, want; };
  // Entries from torch.promote_types.
  const P table[] = {
      {kUInt8, kInt8, kInt16}, {kBool, kBool, kBool}, {kHalf, kBFloat16, kFloat}, {kInt64, kHalf, kHalf},
      {kComplex64, kDouble, kComplex128}, {kUInt8, kBool, kUInt8}, {kInt32, kInt64, kInt64}, {kInt8, kInt16, kInt16},
      {kUInt8, kInt64, kInt64}, {kBFloat16, kInt32, kBFloat16}, {kComplex64, kHalf, kComplex64}, {kFloat, kDouble, kDouble},
      {kBool, kComplex128, kComplex128}, {kInt16, kFloat, kFloat},
  };
  for (const P& p : table) {
    EXPECT_EQ(promote_types(p.a, p.b), p.want) << to_string(p.a) << " + " << to_string(p.b);
    EXPECT_EQ(promote_types(p.b, p.a), p.want);
    Tensor x = tensor::ones({2}, p.a), y = tensor::ones({2}, p.b);
    EXPECT_EQ((x.logical_or(y)).dtype(), kBool);
    if (p.want != kBool) EXPECT_EQ((x * y).dtype(), p.want) << to_string(p.a) << " * " << to_string(p.b);
  }
}

TEST(TypePromotion, ScalarsAndZeroDimAreWeak) {
  Tensor i32 = tensor::ones({2}, kInt32), f16 = tensor::ones({2}, kHalf), u8 = tensor::ones({2}, kUInt8);
  Tensor b = tensor::ones({2}, kBool);
  EXPECT_EQ((i32 + 2.5).dtype(), kFloat32);        // int tensor + float scalar -> default float
  EXPECT_EQ((f16 + 2.5).dtype(), kHalf);           // float16 tensor keeps its precision
  EXPECT_EQ((i32 + 2).dtype(), kInt32);            // int scalar does not widen
  EXPECT_EQ((u8 + 1000).dtype(), kUInt8);
  EXPECT_EQ((b + 1).dtype(), kInt64);              // bool + int scalar -> int64
  EXPECT_EQ((b + true).dtype(), kBool);
  EXPECT_EQ((f16 * complex64(1, 1)).dtype(), kComplex64);
  Tensor zd64 = tensor::scalar_tensor(1.0, kFloat64), zi64 = tensor::scalar_tensor(1, kInt64);
  EXPECT_EQ((tensor::ones({2}) + zd64).dtype(), kFloat32);    // 0-dim of same category is weak
  EXPECT_EQ((tensor::ones({2}, kInt8) + zi64).dtype(), kInt8);
  EXPECT_EQ((i32 + zd64).dtype(), kFloat64);                  // higher category wins, keeps its dtype
  EXPECT_EQ((zd64 + zi64).dtype(), kFloat64);
  EXPECT_EQ(result_type(i32, Scalar(1.5)), kFloat32);
}

TEST(Errors, MessagesNameOpAndShapes) {
  expect_error([] { tensor::ones({2, 3}) + tensor::ones({4}); }, {"add", "[2, 3]", "[4]"});
  expect_error([] { tensor::ones({2, 3}).mul_(tensor::ones({4, 2, 3})); }, {"mul", "[2, 3]", "[4, 2, 3]"});
  expect_error([] { tensor::ones({2}, kInt64).add_(tensor::ones({2})); }, {"add", "float32", "int64"});
  expect_error([] { tensor::ones({2}, kFloat32).bitwise_and(tensor::ones({2})); }, {"bitwise_and", "float32"});
  expect_error([] { tensor::remainder(tensor::ones({2}, kInt64), tensor::zeros({2}, kInt64)); }, {"remainder", "division by zero"});
  expect_error([] { -tensor::ones({2}, kBool); }, {"neg", "bool"});
  expect_error([] { tensor::ones({2, 3}).view({4}); }, {"view", "[4]", "6"});
  expect_error([] { tensor::ones({2, 3}).transpose(0, 5); }, {"transpose", "dim 5", "2 dims"});
  expect_error([] { tensor::ones({2, 3}).select(1, 3); }, {"select", "index 3", "[2, 3]"});
  expect_error([] { tensor::ones({2, 3}).expand({3, 3}); }, {"expand", "[2, 3]"});
  expect_error([] { tensor::ones({2}).data_ptr<int64_t>(); }, {"data_ptr", "int64", "float32"});
  expect_error([] { tensor::ones({2, 3}).item<float>(); }, {"item", "[2, 3]"});
  expect_error([] { tensor::empty({2}, TensorOptions().device(kCUDA)); }, {"CUDA"});
  expect_error([] { Device("tpu:0"); }, {"tpu"});
}

TEST(OpTable, UnarySpecialValuesMatchTheCLibrary) {
  // Long enough that the SIMD body (not only the tail) sees every special value.
  std::vector<double> specials = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e30, -1e30, 1e-30, 89.0, -89.0,
                                  -104.0, 710.0, -746.0, 1e5, -1e5, 0.5, -1.0, -2.0};
  std::vector<double> in;
  for (int rep = 0; rep < 4; ++rep) in.insert(in.end(), specials.begin(), specials.end());
  for (const auto& c : unary_cases()) {
    for (ScalarType t : {kFloat32, kFloat64}) {
      if (std::find(c.dtypes.begin(), c.dtypes.end(), t) == c.dtypes.end()) continue;
      Tensor a = tensor::tensor(in, kFloat64).to(t);
      std::vector<double> got = values(c.fn(a)), x = values(a), want;
      for (double v : x) want.push_back(c.ref(v));
      std::vector<double> want_t = round_to(want, t);
      for (size_t i = 0; i < got.size(); ++i) {
        std::string what = c.name + " " + to_string(t) + " at x=" + std::to_string(x[i]);
        if (std::isnan(want_t[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << what << " got " << got[i];
        } else if (std::isinf(want_t[i])) {
          EXPECT_EQ(got[i], want_t[i]) << what;
        } else {
          EXPECT_NEAR(got[i], want_t[i], 4 * tol_for(t) * std::max(1.0, std::fabs(want_t[i]))) << what;
        }
      }
    }
  }
}

TEST(OpTable, ComplexAgainstStdComplex) {
  // complex64 results against std::complex<double> references, on a transposed input.
  using C = std::complex<double>;
  struct U { const char* name; std::function<Tensor(const Tensor&)> fn; std::function<C(C)> ref; };
  const U unary[] = {
      {"neg", [](auto& a) { return -a; }, [](C z) { return -z; }},
      {"exp", [](auto& a) { return a.exp(); }, [](C z) { return std::exp(z); }},
      {"log", [](auto& a) { return a.log(); }, [](C z) { return std::log(z); }},
      {"sqrt", [](auto& a) { return a.sqrt(); }, [](C z) { return std::sqrt(z); }},
      {"sin", [](auto& a) { return a.sin(); }, [](C z) { return std::sin(z); }},
      {"cos", [](auto& a) { return a.cos(); }, [](C z) { return std::cos(z); }},
      {"tanh", [](auto& a) { return a.tanh(); }, [](C z) { return std::tanh(z); }},
      {"reciprocal", [](auto& a) { return a.reciprocal(); }, [](C z) { return 1.0 / z; }},
      {"square", [](auto& a) { return a.square(); }, [](C z) { return z * z; }},
  };
  manual_seed(5);
  Tensor re = tensor::rand({4, 3}, kFloat64) * 2 - 1, im = tensor::rand({4, 3}, kFloat64) * 2 - 1;
  Tensor z = (re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).to(kComplex64).t();
  Tensor z128 = z.to(kComplex128).contiguous();
  const complex128* pz = z128.data_ptr<complex128>();
  for (const U& u : unary) {
    Tensor out = u.fn(z);
    ASSERT_EQ(out.dtype(), kComplex64) << u.name;
    Tensor o = out.to(kComplex128).contiguous();
    const complex128* po = o.data_ptr<complex128>();
    for (int64_t i = 0; i < o.numel(); ++i) {
      C want = u.ref(pz[i]);
      EXPECT_LE(std::abs(po[i] - want), 1e-5 * std::max(1.0, std::abs(want))) << u.name << " at " << i;
    }
  }
  Tensor a = tensor::abs(z);
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_NEAR(a[1][2].item<double>(), std::abs(z[1][2].item<complex128>()), 1e-6);
  // Binary ops with broadcasting against a complex row and a real scalar.
  Tensor row = z[0];
  Tensor prod = z * row, quot = z / row, sum = z + 2.0;
  Tensor p = prod.to(kComplex128).contiguous(), q = quot.to(kComplex128).contiguous(), s = sum.to(kComplex128).contiguous();
  Tensor r128 = row.to(kComplex128).contiguous();
  ASSERT_EQ(z.sizes(), IntArrayRef({3, 4}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      C x = pz[i * 4 + j], y = r128.data_ptr<complex128>()[j];
      EXPECT_LE(std::abs(p.data_ptr<complex128>()[i * 4 + j] - x * y), 1e-5);
      EXPECT_LE(std::abs(q.data_ptr<complex128>()[i * 4 + j] - x / y), 1e-4 * std::max(1.0, std::abs(x / y)));
      EXPECT_LE(std::abs(s.data_ptr<complex128>()[i * 4 + j] - (x + 2.0)), 1e-6);
    }
  EXPECT_TRUE((z == z).all().item<bool>());
  EXPECT_THROW(z < z, tensor::Error);  // complex numbers are unordered
}
