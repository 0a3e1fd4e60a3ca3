// Reductions, scans and softmax against hand-computed values and float64 reference loops
// written here over data_ptr, for several layouts (contiguous, transposed, sliced, expanded)
// and dtypes, plus NaN rules, empty and 0-dim inputs, meta tensors and error messages.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

using Shape = std::vector<int64_t>;

Shape shape_of(const Tensor& t) { return t.sizes().vec(); }

/// Values of any real tensor as float64, row-major.
std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

std::vector<std::complex<double>> cvalues(const Tensor& t) {
  Tensor c = t.to(kComplex128).contiguous();
  const auto* p = c.data_ptr<complex128>();
  return std::vector<std::complex<double>>(p, p + c.numel());
}

Tensor from_values(const std::vector<double>& v, const Shape& shape, ScalarType t = kFloat64) {
  return tensor::tensor(v, TensorOptions().dtype(kFloat64)).reshape(shape).to(t);
}

bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

void expect_values(const Tensor& got, const Shape& shape, const std::vector<double>& want, double rtol = 1e-6,
                   double atol = 1e-6) {
  ASSERT_EQ(shape_of(got), shape);
  std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_TRUE(close(g[i], want[i], rtol, atol)) << "at " << i << ": got " << g[i] << ", want " << want[i];
}

/// Reference reduction over float64 values: elements of each output in row-major order.
struct RefResult {
  Shape shape;
  std::vector<double> out;
};
RefResult ref_reduce(const std::vector<double>& data, const Shape& sizes, std::vector<int64_t> dims, bool keepdim,
                     const std::function<double(const std::vector<double>&)>& fold) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  std::vector<bool> red(nd, dims.empty());
  for (int64_t d : dims) red[d < 0 ? d + nd : d] = true;
  RefResult r;
  int64_t n_out = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (!red[d]) {
      r.shape.push_back(sizes[d]);
      n_out *= sizes[d];
    } else if (keepdim) {
      r.shape.push_back(1);
    }
  }
  std::vector<std::vector<double>> buckets(n_out);
  std::vector<int64_t> idx(nd, 0);
  for (size_t lin = 0; lin < data.size(); ++lin) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d)
      if (!red[d]) o = o * sizes[d] + idx[d];
    buckets[o].push_back(data[lin]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  for (auto& b : buckets) r.out.push_back(fold(b));
  return r;
}

double fold_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double fold_prod(const std::vector<double>& v) {
  double s = 1;
  for (double x : v) s *= x;
  return s;
}
double fold_max(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  return m;
}
double fold_min(const std::vector<double>& v) {
  double m = kInf;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::min(m, x);
  }
  return m;
}
double fold_argmax(const std::vector<double>& v) {
  size_t bi = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (std::isnan(v[bi])) break;
    if (v[i] > v[bi] || std::isnan(v[i])) bi = i;
  }
  return static_cast<double>(bi);
}
double fold_argmin(const std::vector<double>& v) {
  size_t bi = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (std::isnan(v[bi])) break;
    if (v[i] < v[bi] || std::isnan(v[i])) bi = i;
  }
  return static_cast<double>(bi);
}
std::function<double(const std::vector<double>&)> fold_var(int64_t correction) {
  return [correction](const std::vector<double>& v) {
    double m = fold_sum(v) / static_cast<double>(v.size());
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return s / static_cast<double>(std::max<int64_t>(0, static_cast<int64_t>(v.size()) - correction));
  };
}

/// The same logical values in several memory layouts.
std::vector<std::pair<std::string, Tensor>> layouts(const Tensor& x) {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("contiguous", x);
  // Transposed storage: a permuted contiguous tensor permuted back.
  const int64_t nd = x.dim();
  if (nd >= 2) {
    std::vector<int64_t> rev(nd);
    for (int64_t d = 0; d < nd; ++d) rev[d] = nd - 1 - d;
    out.emplace_back("transposed", x.permute(rev).contiguous().permute(rev));
  }
  // Sliced: every other element of a twice-as-long last dim.
  Shape wide = shape_of(x);
  wide.back() *= 2;
  Tensor big = zeros(wide, TensorOptions().dtype(x.dtype()));
  Tensor sliced = big.slice(nd - 1, 0, std::nullopt, 2);
  sliced.copy_(x);
  out.emplace_back("sliced", sliced);
  return out;
}

const std::vector<std::vector<int64_t>> kDimSets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {2, 0}, {1, 2}, {0, 1, 2}};

}  // namespace

// ---- sum ----

TEST(Reduce, SumHandComputed) {
  Tensor x = tensor::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(x.sum().dim(), 0);
  EXPECT_DOUBLE_EQ(x.sum().item<double>(), 21.0);
  expect_values(x.sum({0}), {3}, {5, 7, 9});
  expect_values(x.sum({1}), {2}, {6, 15});
  expect_values(x.sum({-1}, true), {2, 1}, {6, 15});
  expect_values(x.sum({0, 1}, true), {1, 1}, {21});
  expect_values(tensor::sum(x, {1, 0}), {}, {21});
  expect_values(x.t().sum({0}), {2}, {6, 15});
  EXPECT_EQ(x.sum().dtype(), kFloat32);
}

TEST(Reduce, SumMatchesReferenceAcrossLayoutsAndDtypes) {
  manual_seed(1);
  const Shape shape = {3, 4, 5};
  for (ScalarType t : {kFloat32, kFloat64, kInt32, kInt64, kBool, kFloat16, kBFloat16, kUInt8}) {
    Tensor x = is_floating_point(t) ? randn(shape).to(t) : randint(0, 7, shape).to(t);
    std::vector<double> data = values(x);
    for (auto& [name, v] : layouts(x)) {
      for (const auto& dims : kDimSets) {
        for (bool keep : {false, true}) {
          SCOPED_TRACE(std::string(to_string(t)) + " " + name + " dims " + std::to_string(dims.size()) +
                       (keep ? " keepdim" : ""));
          Tensor got = v.sum(dims, keep);
          EXPECT_EQ(got.dtype(), is_integral(t, true) ? kInt64 : t);
          RefResult want = ref_reduce(data, shape, dims, keep, fold_sum);
          const double tol = (t == kFloat16 || t == kBFloat16) ? 2e-2 : 1e-5;
          expect_values(got, want.shape, want.out, tol, tol);
        }
      }
    }
  }
}

TEST(Reduce, SumExpandedInput) {
  Tensor row = tensor::tensor({1.0, 2.0, 3.0});
  Tensor x = row.expand({4, 3});  // stride 0 along dim 0
  expect_values(x.sum({0}), {3}, {4, 8, 12});
  expect_values(x.sum({1}), {4}, {6, 6, 6, 6});
  EXPECT_DOUBLE_EQ(x.sum().item<double>(), 24.0);
  Tensor col = tensor::tensor({1.0, 2.0}).reshape({2, 1}).expand({2, 5});
  expect_values(col.sum({1}), {2}, {5, 10});
  expect_values(col.sum({0}), {5}, {3, 3, 3, 3, 3});
  Tensor scalar = tensor::tensor({7.0}).reshape({}).expand({1000, 100});
  EXPECT_DOUBLE_EQ(scalar.sum().item<double>(), 700000.0);
}

TEST(Reduce, SumDtypes) {
  Tensor b = tensor::tensor({{true, false}, {true, true}});
  EXPECT_EQ(b.sum().dtype(), kInt64);
  EXPECT_EQ(b.sum().item<int64_t>(), 3);
  Tensor i = tensor::tensor({1, 2, 3}).to(kInt32);
  EXPECT_EQ(i.sum().dtype(), kInt64);
  EXPECT_EQ(i.sum(kInt32).dtype(), kInt32);
  EXPECT_EQ(i.sum(kFloat64).dtype(), kFloat64);
  EXPECT_DOUBLE_EQ(i.sum(kFloat64).item<double>(), 6.0);
  Tensor h = full({1000}, 0.1, TensorOptions().dtype(kFloat16));
  EXPECT_EQ(h.sum().dtype(), kFloat16);
  // Accumulating in half would stall near 256 or so; float accumulation gives ~100 (0.1 in half is 0.0999756).
  EXPECT_NEAR(h.sum().item<double>(), 99.98, 0.1);
  EXPECT_NEAR(h.sum(kFloat32).item<double>(), 99.9756, 1e-3);
  Tensor bf = full({1000}, 0.5, TensorOptions().dtype(kBFloat16));
  EXPECT_EQ(bf.sum().item<double>(), 500.0);
  Tensor f = tensor::tensor({1.5, 2.5});
  EXPECT_EQ(f.sum(kFloat64).dtype(), kFloat64);
  // Integer sums wrap like int64 arithmetic.
  Tensor big = full({2}, std::numeric_limits<int64_t>::max(), TensorOptions().dtype(kInt64));
  EXPECT_EQ(big.sum().item<int64_t>(), -2);
}

TEST(Reduce, SumComplex) {
  Tensor re = tensor::tensor({{1.0, 2.0}, {3.0, 4.0}});
  Tensor im = tensor::tensor({{0.5, -1.0}, {2.0, 0.0}});
  Tensor z = (re.to(kComplex64) + im.to(kComplex64) * Scalar(complex128(0, 1)));
  ASSERT_EQ(z.dtype(), kComplex64);
  auto s = cvalues(z.sum({0}));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NEAR(s[0].real(), 4.0, 1e-6);
  EXPECT_NEAR(s[0].imag(), 2.5, 1e-6);
  EXPECT_NEAR(s[1].real(), 6.0, 1e-6);
  EXPECT_NEAR(s[1].imag(), -1.0, 1e-6);
  auto c = cvalues(z.conj().sum());
  EXPECT_NEAR(c[0].imag(), -1.5, 1e-6);  // the lazy conjugate is honoured
  EXPECT_EQ(z.sum().dtype(), kComplex64);
}

TEST(Reduce, SumFloat32IsAccurate) {
  // 2^24 + more ones: a single float accumulator stops at 16777216.
  const int64_t n = (int64_t(1) << 24) + 1000000;
  Tensor ones_f = ones({n});
  EXPECT_EQ(ones_f.sum().item<double>(), static_cast<double>(n));
  // Random values against a double loop, inner (rows) and outer (columns) reductions.
  manual_seed(3);
  Tensor x = rand({3000, 700});
  std::vector<double> data = values(x);
  RefResult rows = ref_reduce(data, {3000, 700}, {1}, false, fold_sum);
  RefResult cols = ref_reduce(data, {3000, 700}, {0}, false, fold_sum);
  expect_values(x.sum({1}), rows.shape, rows.out, 1e-6, 0);
  expect_values(x.sum({0}), cols.shape, cols.out, 1e-6, 0);
  EXPECT_NEAR(x.sum().item<double>(), fold_sum(data), 1e-6 * fold_sum(data));
  // Large column sum: every column gets 2^24 + 2^20 ones.
  Tensor tall = ones({(int64_t(1) << 24) + (int64_t(1) << 20), 2});
  expect_values(tall.sum({0}), {2}, {17825792.0, 17825792.0}, 0, 0);
}

TEST(Reduce, SumParallelShapes) {
  // Shapes that take each threading path: many rows, one long row, wide columns, narrow
  // columns (threads split the rows), and reductions over outer and inner dims at once.
  manual_seed(4);
  struct Case {
    Shape shape;
    std::vector<int64_t> dims;
  };
  std::vector<Case> cases = {{{512, 300}, {1}},   {{1, 300000}, {1}},     {{300000, 3}, {0}}, {{200, 1000}, {0}},
                             {{2, 70000}, {1}},   {{70, 30, 40}, {0, 2}}, {{40, 30, 70}, {1}}, {{3, 50000, 2}, {1}},
                             {{8, 4096}, {0}}};
  for (const Case& c : cases) {
    Tensor x = randn(c.shape, TensorOptions().dtype(kFloat64));
    std::vector<double> data = values(x);
    RefResult want = ref_reduce(data, c.shape, c.dims, false, fold_sum);
    expect_values(x.sum(c.dims), want.shape, want.out, 1e-9, 1e-9);
    RefResult wmax = ref_reduce(data, c.shape, c.dims, false, fold_max);
    expect_values(x.amax(c.dims), wmax.shape, wmax.out, 0, 0);
    Tensor xf = x.to(kFloat32);
    expect_values(xf.sum(c.dims), want.shape, want.out, 1e-4, 1e-3);
  }
}

TEST(Reduce, SumEmptyAndScalar) {
  Tensor e = zeros({0, 3});
  expect_values(e.sum({0}), {3}, {0, 0, 0});
  expect_values(e.sum({1}), {0}, {});
  EXPECT_EQ(e.sum().item<double>(), 0.0);
  EXPECT_EQ(zeros({0}, TensorOptions().dtype(kInt32)).sum().dtype(), kInt64);
  Tensor s = scalar_tensor(2.5);
  EXPECT_EQ(s.sum().item<double>(), 2.5);
  EXPECT_EQ(s.sum({0}).dim(), 0);
  EXPECT_EQ(s.sum({-1}, true).dim(), 0);
}

// ---- mean, prod ----

TEST(Reduce, Mean) {
  Tensor x = tensor::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 7.0}});
  EXPECT_NEAR(x.mean().item<double>(), 22.0 / 6.0, 1e-6);
  expect_values(x.mean({0}), {3}, {2.5, 3.5, 5});
  expect_values(x.mean({1}, true), {2, 1}, {2, 16.0 / 3.0});
  expect_values(x.t().mean({0}), {2}, {2, 16.0 / 3.0});
  Tensor i = tensor::tensor({1, 2, 4});
  EXPECT_NEAR(i.mean(kFloat64).item<double>(), 7.0 / 3.0, 1e-12);
  Tensor h = tensor::tensor({1.0, 2.0, 4.0}).to(kFloat16);
  EXPECT_EQ(h.mean().dtype(), kFloat16);
  EXPECT_NEAR(h.mean().item<double>(), 7.0 / 3.0, 2e-3);
  EXPECT_TRUE(std::isnan(zeros({0}).mean().item<double>()));
  expect_values(zeros({2, 0}).mean({1}), {2}, {kNaN, kNaN});
  manual_seed(5);
  Tensor r = randn({6, 7, 8});
  std::vector<double> data = values(r);
  for (const auto& dims : kDimSets) {
    RefResult want = ref_reduce(data, {6, 7, 8}, dims, false, [](const std::vector<double>& v) {
      return fold_sum(v) / static_cast<double>(v.size());
    });
    expect_values(r.mean(dims), want.shape, want.out, 1e-5, 1e-6);
  }
}

TEST(Reduce, Prod) {
  Tensor x = tensor::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_DOUBLE_EQ(x.prod().item<double>(), 720.0);
  expect_values(x.prod(0), {3}, {4, 10, 18});
  expect_values(x.prod(-1, true), {2, 1}, {6, 120});
  expect_values(x.t().prod(1), {3}, {4, 10, 18});
  Tensor i = tensor::tensor({{2, 3}, {4, 5}}).to(kInt32);
  EXPECT_EQ(i.prod().dtype(), kInt64);
  EXPECT_EQ(i.prod().item<int64_t>(), 120);
  EXPECT_EQ(i.prod(0, false, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(tensor::tensor({true, true, false}).prod().item<int64_t>(), 0);
  EXPECT_EQ(zeros({0}).prod().item<double>(), 1.0);
  expect_values(zeros({0, 2}).prod(0), {2}, {1, 1});
  manual_seed(6);
  Tensor r = rand({5, 6, 7}) + 0.5;
  for (auto& [name, v] : layouts(r)) {
    for (int64_t d : {0, 1, 2}) {
      SCOPED_TRACE(name);
      RefResult want = ref_reduce(values(r), {5, 6, 7}, {d}, false, fold_prod);
      expect_values(v.prod(d), want.shape, want.out, 1e-5, 0);
    }
  }
}

// ---- max, min, amax, amin, argmax, argmin ----

TEST(Reduce, MaxMinAll) {
  Tensor x = tensor::tensor({{3.0, -1.0, 7.0}, {2.0, 7.0, -5.0}});
  EXPECT_EQ(x.max().dim(), 0);
  EXPECT_EQ(x.max().item<double>(), 7.0);
  EXPECT_EQ(x.min().item<double>(), -5.0);
  EXPECT_EQ(tensor::tensor({3, 9, -2}).max().item<int64_t>(), 9);
  EXPECT_EQ(tensor::tensor({3, 9, -2}).max().dtype(), kInt64);
  EXPECT_EQ(tensor::tensor({false, true}).max().item<bool>(), true);
  EXPECT_EQ(tensor::tensor({false, true}).min().item<bool>(), false);
  EXPECT_EQ(tensor::tensor({1.0, 2.0}).to(kFloat16).max().dtype(), kFloat16);
  // NaN wins, wherever it sits and whatever the vector width.
  for (int64_t n : {1, 5, 40, 1000}) {
    for (int64_t pos : {int64_t(0), n / 2, n - 1}) {
      std::vector<double> d(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) d[k] = static_cast<double>(k);
      d[pos] = kNaN;
      Tensor v = from_values(d, {n}, kFloat32);
      EXPECT_TRUE(std::isnan(v.max().item<double>())) << n << " " << pos;
      EXPECT_TRUE(std::isnan(v.min().item<double>())) << n << " " << pos;
      EXPECT_TRUE(std::isnan(v.to(kFloat64).amax().item<double>()));
    }
  }
  EXPECT_EQ(tensor::tensor({-kInf, -kInf}).max().item<double>(), -kInf);
}

TEST(Reduce, MaxMinDimWithIndices) {
  Tensor x = tensor::tensor({{3.0, 7.0, 7.0, 1.0}, {2.0, 0.0, 9.0, 9.0}, {2.0, 5.0, -1.0, 9.0}});
  auto [v1, i1] = x.max(1);
  expect_values(v1, {3}, {7, 9, 9});
  EXPECT_EQ(i1.dtype(), kInt64);
  expect_values(i1, {3}, {1, 2, 3});  // first index of the max
  auto [v0, i0] = x.max(0, true);
  expect_values(v0, {1, 4}, {3, 7, 9, 9});
  expect_values(i0, {1, 4}, {0, 0, 1, 1});
  auto [m0, j0] = x.min(-2);
  expect_values(m0, {4}, {2, 0, -1, 1});
  expect_values(j0, {4}, {1, 1, 2, 0});
  auto [mt, jt] = x.t().min(1);
  expect_values(mt, {4}, {2, 0, -1, 1});
  expect_values(jt, {4}, {1, 1, 2, 0});
  // NaN: the first NaN is the max and the min.
  Tensor n = tensor::tensor({{1.0, kNaN, 5.0, kNaN}});
  auto [nv, ni] = n.max(1);
  EXPECT_TRUE(std::isnan(nv.item<double>()));
  EXPECT_EQ(ni.item<int64_t>(), 1);
  EXPECT_EQ(std::get<1>(n.min(1)).item<int64_t>(), 1);
  // Size-1 dim and 0-dim input.
  auto [sv, si] = tensor::tensor({{4.0}, {2.0}}).max(1);
  expect_values(sv, {2}, {4, 2});
  expect_values(si, {2}, {0, 0});
  auto [zv, zi] = scalar_tensor(3.0).max(0);
  EXPECT_EQ(zv.dim(), 0);
  EXPECT_EQ(zv.item<double>(), 3.0);
  EXPECT_EQ(zi.item<int64_t>(), 0);
  // Zero-size kept dims are fine.
  auto [ev, ei] = zeros({0, 3}).max(1);
  EXPECT_EQ(shape_of(ev), Shape{0});
  EXPECT_EQ(shape_of(ei), Shape{0});
}

TEST(Reduce, MaxDimMatchesReference) {
  manual_seed(7);
  const Shape shape = {9, 33, 20};
  for (ScalarType t : {kFloat32, kFloat64, kInt32, kFloat16, kBFloat16, kInt8}) {
    Tensor x = is_floating_point(t) ? randn(shape).to(t) : randint(-4, 5, shape).to(t);  // many ties
    std::vector<double> data = values(x);
    for (auto& [name, v] : layouts(x)) {
      for (int64_t d : {0, 1, 2, -1}) {
        SCOPED_TRACE(std::string(to_string(t)) + " " + name + " dim " + std::to_string(d));
        auto [mv, mi] = v.max(d);
        auto [nv, ni] = v.min(d, true);
        RefResult wmax = ref_reduce(data, shape, {d}, false, fold_max);
        RefResult wimax = ref_reduce(data, shape, {d}, false, fold_argmax);
        RefResult wmin = ref_reduce(data, shape, {d}, true, fold_min);
        RefResult wimin = ref_reduce(data, shape, {d}, true, fold_argmin);
        expect_values(mv, wmax.shape, wmax.out, 0, 0);
        expect_values(mi, wimax.shape, wimax.out, 0, 0);
        expect_values(nv, wmin.shape, wmin.out, 0, 0);
        expect_values(ni, wimin.shape, wimin.out, 0, 0);
        expect_values(v.argmax(d), wimax.shape, wimax.out, 0, 0);
        expect_values(v.argmin(d, true), wimin.shape, wimin.out, 0, 0);
      }
    }
  }
}

TEST(Reduce, AmaxAmin) {
  manual_seed(8);
  const Shape shape = {4, 5, 6};
  Tensor x = randn(shape);
  std::vector<double> data = values(x);
  for (auto& [name, v] : layouts(x)) {
    for (const auto& dims : kDimSets) {
      for (bool keep : {false, true}) {
        RefResult wmax = ref_reduce(data, shape, dims, keep, fold_max);
        RefResult wmin = ref_reduce(data, shape, dims, keep, fold_min);
        expect_values(v.amax(dims, keep), wmax.shape, wmax.out, 0, 0);
        expect_values(tensor::amin(v, dims, keep), wmin.shape, wmin.out, 0, 0);
      }
    }
  }
  Tensor i = tensor::tensor({{1, 8}, {9, -3}});
  expect_values(i.amax({0}), {2}, {9, 8});
  expect_values(i.amin(), {}, {-3});
  Tensor nan_col = tensor::tensor({{1.0, 2.0}, {kNaN, 0.0}, {3.0, 1.0}});
  expect_values(nan_col.amax({0}), {2}, {kNaN, 2});
  expect_values(nan_col.amin({1}), {3}, {1, kNaN, 1});
}

TEST(Reduce, Argmax) {
  Tensor x = tensor::tensor({{1.0, 9.0, 3.0}, {9.0, 2.0, 0.0}});
  EXPECT_EQ(x.argmax().dim(), 0);
  EXPECT_EQ(x.argmax().item<int64_t>(), 1);  // first of the two 9s in row-major order
  EXPECT_EQ(x.argmin().item<int64_t>(), 5);
  EXPECT_EQ(shape_of(x.argmax(std::nullopt, true)), (Shape{1, 1}));
  // Flattened positions are logical (row-major), not memory order.
  Tensor t = x.t();  // [[1, 9], [9, 2], [3, 0]]
  EXPECT_EQ(t.argmax().item<int64_t>(), 1);
  EXPECT_EQ(t.argmin().item<int64_t>(), 5);
  expect_values(x.argmax(0), {3}, {1, 0, 0});
  expect_values(x.argmax(1, true), {2, 1}, {1, 0});
  EXPECT_EQ(tensor::tensor({2.0, kNaN, 7.0, kNaN}).argmax().item<int64_t>(), 1);
  EXPECT_EQ(tensor::tensor({2.0, kNaN, 7.0, kNaN}).argmin().item<int64_t>(), 1);
  EXPECT_EQ(scalar_tensor(5.0).argmax().item<int64_t>(), 0);
  EXPECT_EQ(tensor::tensor({3, 1, 3}).argmax().item<int64_t>(), 0);
  // Long row.
  Tensor big = arange(100000).to(kFloat32);
  EXPECT_EQ(big.argmax().item<int64_t>(), 99999);
  EXPECT_EQ(big.argmin().item<int64_t>(), 0);
}

TEST(Reduce, ArgReduceVectorPaths) {
  // float32/float64 rows and columns long enough for the SIMD paths, with ties and NaNs.
  for (ScalarType t : {kFloat32, kFloat64}) {
    for (int64_t n : {16, 40, 1000}) {
      std::vector<double> d(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) d[k] = static_cast<double>((k * 7) % 5);  // 0..4, many ties
      const double first_max = 2, first_min = 0;  // (7k) % 5 is 4 first at k = 2 and 0 at k = 0
      Tensor row = from_values(d, {1, n}, t);
      EXPECT_EQ(row.argmax(1).item<int64_t>(), first_max);
      EXPECT_EQ(row.argmin(1).item<int64_t>(), first_min);
      EXPECT_EQ(std::get<0>(row.max(1)).item<double>(), 4.0);
      // Columns: the same values down dim 0 of a [n, 24] tensor.
      Tensor cols = from_values(d, {n, 1}, t).expand({n, 24}).contiguous();
      expect_values(cols.argmax(0), {24}, std::vector<double>(24, first_max), 0, 0);
      Tensor expanded = from_values(d, {n, 1}, t).expand({n, 24});  // stride 0 along dim 1
      expect_values(expanded.argmax(0), {24}, std::vector<double>(24, first_max), 0, 0);
      expect_values(expanded.amax({0}), {24}, std::vector<double>(24, 4.0), 0, 0);
      expect_values(expanded.argmin(1), {n}, std::vector<double>(static_cast<size_t>(n), 0.0), 0, 0);
      expect_values(std::get<1>(cols.min(0)), {24}, std::vector<double>(24, first_min), 0, 0);
      // Two NaNs: the first wins both ways.
      d[n / 3] = kNaN;
      d[n - 1] = kNaN;
      Tensor nrow = from_values(d, {1, n}, t);
      EXPECT_EQ(nrow.argmax(1).item<int64_t>(), n / 3);
      EXPECT_EQ(nrow.argmin(1).item<int64_t>(), n / 3);
      EXPECT_TRUE(std::isnan(std::get<0>(nrow.max(1)).item<double>()));
      Tensor ncols = from_values(d, {n, 1}, t).expand({n, 24}).contiguous();
      expect_values(ncols.argmax(0), {24}, std::vector<double>(24, static_cast<double>(n / 3)), 0, 0);
      expect_values(std::get<0>(ncols.min(0)), {24}, std::vector<double>(24, kNaN), 0, 0);
      EXPECT_EQ(nrow.argmax().item<int64_t>(), n / 3);
    }
  }
}

// ---- var, std ----

TEST(Reduce, VarStd) {
  Tensor x = tensor::tensor({{1.0, 2.0, 3.0, 4.0}, {2.0, 2.0, 2.0, 10.0}});
  expect_values(x.var({1}), {2}, {5.0 / 3.0, 16.0});  // squared deviations 5 and 48, over 3
  expect_values(x.var({1}, 0), {2}, {1.25, 12.0});
  expect_values(x.std({1}, 0), {2}, {std::sqrt(1.25), std::sqrt(12.0)});
  expect_values(x.var({0}, 1, true), {1, 4}, {0.5, 0, 0.5, 18});
  manual_seed(9);
  const Shape shape = {5, 6, 7};
  Tensor r = randn(shape, TensorOptions().dtype(kFloat64)) * 3 + 1;
  std::vector<double> data = values(r);
  for (auto& [name, v] : layouts(r)) {
    for (const auto& dims : kDimSets) {
      for (int64_t corr : {0, 1, 2}) {
        RefResult want = ref_reduce(data, shape, dims, false, fold_var(corr));
        expect_values(v.var(dims, corr), want.shape, want.out, 1e-10, 1e-12);
        std::vector<double> sd = want.out;
        for (double& s : sd) s = std::sqrt(s);
        expect_values(v.std(dims, corr), want.shape, sd, 1e-10, 1e-12);
      }
    }
  }
  // float32 and half keep their dtype.
  Tensor f = r.to(kFloat32);
  RefResult all = ref_reduce(data, shape, {}, false, fold_var(1));
  EXPECT_EQ(f.var().dtype(), kFloat32);
  EXPECT_NEAR(f.var().item<double>(), all.out[0], 1e-4 * all.out[0]);
  EXPECT_EQ(r.to(kFloat16).std().dtype(), kFloat16);
  EXPECT_NEAR(r.to(kFloat16).var().item<double>(), all.out[0], 1e-2 * all.out[0]);
  // One element with correction 1: 0/0.
  EXPECT_TRUE(std::isnan(tensor::tensor({3.0}).var().item<double>()));
}

TEST(Reduce, VarComplexIsReal) {
  Tensor re = tensor::tensor({1.0, 2.0, 3.0, 6.0});
  Tensor im = tensor::tensor({0.0, -2.0, 1.0, 1.0});
  Tensor z = re.to(kComplex64) + im.to(kComplex64) * Scalar(complex128(0, 1));
  Tensor v = z.var();
  EXPECT_EQ(v.dtype(), kFloat32);
  // By hand: re has mean 3 and squared deviations 4+1+0+9 = 14, im mean 0 and 0+4+1+1 = 6; /3 each.
  EXPECT_NEAR(v.item<double>(), 14.0 / 3.0 + 2.0, 1e-5);
  EXPECT_EQ(z.std().dtype(), kFloat32);
  EXPECT_NEAR(z.std().item<double>(), std::sqrt(14.0 / 3.0 + 2.0), 1e-5);
}

// ---- norm ----

TEST(Reduce, Norm) {
  Tensor x = tensor::tensor({{3.0, -4.0}, {0.0, 12.0}});
  EXPECT_NEAR(x.norm().item<double>(), 13.0, 1e-6);
  expect_values(x.norm(2, {1}), {2}, {5, 12});
  expect_values(x.norm(1, {1}), {2}, {7, 12});
  expect_values(x.norm(0, {1}), {2}, {2, 1});
  expect_values(x.norm(kInf, {0}), {2}, {3, 12});
  expect_values(x.norm(-kInf, {0}), {2}, {0, 4});
  expect_values(x.norm(3, {1}, true), {2, 1}, {std::cbrt(27.0 + 64.0), 12});
  expect_values(tensor::norm(x, 0.5), {}, {std::pow(std::sqrt(3.0) + 2 + 0 + std::sqrt(12.0), 2.0)}, 1e-5);
  manual_seed(10);
  const Shape shape = {4, 5, 6};
  Tensor r = randn(shape, TensorOptions().dtype(kFloat64));
  std::vector<double> data = values(r);
  for (double p : {0.0, 1.0, 2.0, 3.0, 0.5, kInf, -kInf}) {
    for (auto& [name, v] : layouts(r)) {
      for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {1}, {0, 2}}) {
        RefResult want = ref_reduce(data, shape, dims, false, [p](const std::vector<double>& vals) {
          if (p == 0) {
            double c = 0;
            for (double a : vals) c += a != 0;
            return c;
          }
          if (std::isinf(p)) {
            double m = p > 0 ? 0 : kInf;
            for (double a : vals) m = p > 0 ? std::max(m, std::abs(a)) : std::min(m, std::abs(a));
            return m;
          }
          double s = 0;
          for (double a : vals) s += std::pow(std::abs(a), p);
          return std::pow(s, 1 / p);
        });
        expect_values(v.norm(p, dims), want.shape, want.out, 1e-9, 1e-12);
      }
    }
  }
  // Complex: the modulus, real result.
  Tensor z = tensor::tensor({3.0, 0.0}).to(kComplex64) + tensor::tensor({4.0, 1.0}).to(kComplex64) * Scalar(complex128(0, 1));
  EXPECT_EQ(z.norm().dtype(), kFloat32);
  EXPECT_NEAR(z.norm().item<double>(), std::sqrt(26.0), 1e-5);
  EXPECT_NEAR(z.norm(1).item<double>(), 6.0, 1e-5);
  EXPECT_EQ(x.to(kFloat16).norm().dtype(), kFloat16);
  EXPECT_NEAR(x.to(kBFloat16).norm().item<double>(), 13.0, 0.1);
  EXPECT_TRUE(std::isnan(tensor::tensor({1.0, kNaN}).norm().item<double>()));
  EXPECT_TRUE(std::isnan(tensor::tensor({1.0, kNaN}).norm(kInf).item<double>()));
  EXPECT_EQ(zeros({0}).norm().item<double>(), 0.0);
}

// ---- logsumexp ----

TEST(Reduce, Logsumexp) {
  Tensor x = tensor::tensor({{0.0, std::log(3.0)}, {1000.0, 1000.0}, {-kInf, -kInf}, {kInf, 1.0}});
  expect_values(x.logsumexp({1}), {4}, {std::log(4.0), 1000.0 + std::log(2.0), -kInf, kInf});
  expect_values(x.logsumexp({1}, true), {4, 1}, {std::log(4.0), 1000.0 + std::log(2.0), -kInf, kInf});
  Tensor n = tensor::tensor({1.0, kNaN});
  EXPECT_TRUE(std::isnan(n.logsumexp({0}).item<double>()));
  manual_seed(11);
  const Shape shape = {4, 5, 6};
  Tensor r = randn(shape, TensorOptions().dtype(kFloat64)) * 10;
  std::vector<double> data = values(r);
  for (auto& [name, v] : layouts(r)) {
    for (const auto& dims : kDimSets) {
      RefResult want = ref_reduce(data, shape, dims, false, [](const std::vector<double>& vals) {
        double m = fold_max(vals), s = 0;
        for (double a : vals) s += std::exp(a - m);
        return m + std::log(s);
      });
      expect_values(v.logsumexp(dims), want.shape, want.out, 1e-12, 1e-12);
      expect_values(v.to(kFloat32).logsumexp(dims), want.shape, want.out, 1e-5, 1e-5);
    }
  }
  expect_values(zeros({2, 0}).logsumexp({1}), {2}, {-kInf, -kInf});
  EXPECT_EQ(r.to(kBFloat16).logsumexp({0}).dtype(), kBFloat16);
}

// ---- any, all ----

TEST(Reduce, AnyAll) {
  Tensor b = tensor::tensor({{true, false, false}, {false, false, false}});
  EXPECT_TRUE(b.any().item<bool>());
  EXPECT_FALSE(b.all().item<bool>());
  expect_values(b.any(1), {2}, {1, 0});
  expect_values(b.any(0, true), {1, 3}, {1, 0, 0});
  expect_values(b.all(0), {3}, {0, 0, 0});
  expect_values(b.logical_not().all(1), {2}, {0, 1});
  EXPECT_EQ(b.any(1).dtype(), kBool);
  Tensor f = tensor::tensor({{0.0, kNaN}, {0.0, 0.0}, {-1.0, 2.0}});
  expect_values(f.any(1), {3}, {1, 0, 1});  // NaN is nonzero
  expect_values(f.all(1), {3}, {0, 0, 1});
  expect_values(f.t().all(0), {3}, {0, 0, 1});
  EXPECT_TRUE(tensor::tensor({0, 0, 3}).to(kInt16).any().item<bool>());
  EXPECT_FALSE(zeros({0}).any().item<bool>());
  EXPECT_TRUE(zeros({0}).all().item<bool>());
  expect_values(zeros({2, 0}).all(1), {2}, {1, 1});
  Tensor z = tensor::tensor({0.0, 0.0}).to(kComplex64) + tensor::tensor({0.0, 1.0}).to(kComplex64) * Scalar(complex128(0, 1));
  EXPECT_TRUE(z.any().item<bool>());
  EXPECT_FALSE(z.all().item<bool>());
  // Long inputs: the early exit and the threaded paths.
  std::vector<double> d(100000, 0.0);
  EXPECT_FALSE(from_values(d, {100000}, kFloat32).any().item<bool>());
  d[99999] = 1.0;
  Tensor big = from_values(d, {100000}, kFloat32);
  EXPECT_TRUE(big.any().item<bool>());
  EXPECT_FALSE(big.all().item<bool>());
  Tensor wide = ones({3000, 50}).to(kBool);
  EXPECT_TRUE(wide.all().item<bool>());
  expect_values(wide.all(0).to(kFloat64).sum(), {}, {50});
}

// ---- cumsum, cumprod ----

TEST(Reduce, CumsumCumprod) {
  Tensor x = tensor::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  expect_values(x.cumsum(1), {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_values(x.cumsum(0), {2, 3}, {1, 2, 3, 5, 7, 9});
  expect_values(x.cumsum(-1), {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_values(x.cumprod(1), {2, 3}, {1, 2, 6, 4, 20, 120});
  expect_values(x.t().cumsum(0), {3, 2}, {1, 4, 3, 9, 6, 15});
  Tensor i = tensor::tensor({1, 2, 3}).to(kInt32);
  EXPECT_EQ(i.cumsum(0).dtype(), kInt64);
  EXPECT_EQ(i.cumprod(0).dtype(), kInt64);
  EXPECT_EQ(i.cumsum(0, kFloat32).dtype(), kFloat32);
  expect_values(tensor::tensor({true, false, true}).cumsum(0), {3}, {1, 1, 2});
  expect_values(scalar_tensor(4.0).cumsum(0), {}, {4});
  EXPECT_EQ(shape_of(zeros({0, 3}).cumsum(1)), (Shape{0, 3}));
  manual_seed(12);
  const Shape shape = {6, 7, 8};
  Tensor r = randn(shape);
  std::vector<double> data = values(r);
  for (auto& [name, v] : layouts(r)) {
    for (int64_t d : {0, 1, 2}) {
      // Reference: running sum along d.
      std::vector<double> want(data.size());
      const int64_t inner = d == 2 ? 1 : d == 1 ? 8 : 56, R = shape[d], outer = static_cast<int64_t>(data.size()) / (R * inner);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          double s = 0;
          for (int64_t k = 0; k < R; ++k) {
            s += data[(o * R + k) * inner + j];
            want[(o * R + k) * inner + j] = s;
          }
        }
      expect_values(v.cumsum(d), shape, want, 1e-5, 1e-5);
    }
  }
  Tensor h = full({100}, 1.0, TensorOptions().dtype(kFloat16));
  EXPECT_EQ(h.cumsum(0).dtype(), kFloat16);
  EXPECT_EQ(values(h.cumsum(0))[99], 100.0);
}

TEST(Reduce, ScansAndArgsOnThreadedSizes) {
  manual_seed(14);
  const Shape shape = {300, 500};
  Tensor x = randn(shape, TensorOptions().dtype(kFloat64));
  std::vector<double> data = values(x);
  std::vector<double> c0(data.size()), c1(data.size());
  for (int64_t j = 0; j < 500; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 300; ++i) c0[i * 500 + j] = (s += data[i * 500 + j]);
  }
  for (int64_t i = 0; i < 300; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 500; ++j) c1[i * 500 + j] = (s += data[i * 500 + j]);
  }
  expect_values(x.cumsum(0), shape, c0, 1e-12, 1e-12);
  expect_values(x.cumsum(1), shape, c1, 1e-12, 1e-12);
  expect_values(x.to(kFloat32).cumsum(1), shape, c1, 1e-4, 1e-4);
  Tensor near_one = x * 1e-3 + 1;
  std::vector<double> nd = values(near_one), p1(nd.size());
  for (int64_t i = 0; i < 300; ++i) {
    double s = 1;
    for (int64_t j = 0; j < 500; ++j) p1[i * 500 + j] = (s *= nd[i * 500 + j]);
  }
  expect_values(near_one.cumprod(1), shape, p1, 1e-12, 0);
  for (int64_t d : {0, 1}) {
    RefResult am = ref_reduce(data, shape, {d}, false, fold_argmax);
    RefResult an = ref_reduce(data, shape, {d}, false, fold_argmin);
    expect_values(x.argmax(d), am.shape, am.out, 0, 0);
    expect_values(x.to(kFloat32).argmin(d), an.shape, an.out, 0, 0);
    expect_values(x.to(kBFloat16).to(kFloat32).argmax(d), am.shape,
                  ref_reduce(values(x.to(kBFloat16)), shape, {d}, false, fold_argmax).out, 0, 0);
  }
  RefResult prods = ref_reduce(nd, shape, {0}, false, fold_prod);
  expect_values(near_one.prod(0), prods.shape, prods.out, 1e-12, 0);
}

TEST(Reduce, ComplexMeanProdCumsum) {
  Tensor z = tensor::tensor({1.0, 2.0}).to(kComplex128) + tensor::tensor({1.0, -1.0}).to(kComplex128) * Scalar(complex128(0, 1));
  auto m = cvalues(z.mean());
  EXPECT_NEAR(m[0].real(), 1.5, 1e-12);
  EXPECT_NEAR(m[0].imag(), 0.0, 1e-12);
  auto p = cvalues(z.prod());  // (1+i)(2-i) = 3+i
  EXPECT_NEAR(p[0].real(), 3.0, 1e-12);
  EXPECT_NEAR(p[0].imag(), 1.0, 1e-12);
  auto c = cvalues(z.cumsum(0));
  EXPECT_NEAR(c[1].real(), 3.0, 1e-12);
  EXPECT_NEAR(c[1].imag(), 0.0, 1e-12);
  EXPECT_EQ(z.cumprod(0).dtype(), kComplex128);
}

// ---- softmax, log_softmax ----

TEST(Reduce, Softmax) {
  Tensor x = tensor::tensor({{1.0, 2.0, 3.0}, {1000.0, 1000.0, -kInf}});
  const double e1 = std::exp(-2.0), e2 = std::exp(-1.0), s = e1 + e2 + 1;
  expect_values(x.softmax(1), {2, 3}, {e1 / s, e2 / s, 1 / s, 0.5, 0.5, 0});
  expect_values(x.log_softmax(1), {2, 3}, {-2 - std::log(s), -1 - std::log(s), -std::log(s), -std::log(2.0), -std::log(2.0), -kInf});
  Tensor nan_row = tensor::tensor({{1.0, kNaN}, {-kInf, -kInf}});
  expect_values(nan_row.softmax(1), {2, 2}, {kNaN, kNaN, kNaN, kNaN});
  EXPECT_EQ(scalar_tensor(3.0).softmax(0).item<double>(), 1.0);
  EXPECT_EQ(shape_of(zeros({0, 4}).softmax(1)), (Shape{0, 4}));
  // Against a double reference: rows long enough for the vector loops, with tails, along
  // the last, a middle and the first dim, and in several layouts.
  manual_seed(13);
  for (const Shape& shape : {Shape{3, 5, 37}, Shape{2, 4, 1000}, Shape{7, 3, 2}, Shape{4, 2, 10}}) {
    Tensor r = randn(shape, TensorOptions().dtype(kFloat64)) * 4;
    std::vector<double> data = values(r);
    for (auto& [name, v] : layouts(r)) {
      for (int64_t d : {0, 1, 2}) {
        SCOPED_TRACE(name + " dim " + std::to_string(d));
        const int64_t inner = d == 2 ? 1 : d == 1 ? shape[2] : shape[1] * shape[2], R = shape[d];
        const int64_t outer = static_cast<int64_t>(data.size()) / (R * inner);
        std::vector<double> sm(data.size()), lsm(data.size());
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < inner; ++j) {
            double m = -kInf, s = 0;
            for (int64_t k = 0; k < R; ++k) m = std::max(m, data[(o * R + k) * inner + j]);
            for (int64_t k = 0; k < R; ++k) s += std::exp(data[(o * R + k) * inner + j] - m);
            for (int64_t k = 0; k < R; ++k) {
              const double a = data[(o * R + k) * inner + j];
              sm[(o * R + k) * inner + j] = std::exp(a - m) / s;
              lsm[(o * R + k) * inner + j] = a - m - std::log(s);
            }
          }
        expect_values(v.softmax(d), shape, sm, 1e-12, 1e-15);
        expect_values(v.log_softmax(d), shape, lsm, 1e-12, 1e-12);
        expect_values(v.to(kFloat32).softmax(d), shape, sm, 1e-5, 1e-7);
        expect_values(v.to(kFloat32).log_softmax(d), shape, lsm, 1e-5, 1e-5);
      }
    }
  }
  Tensor ex = tensor::tensor({1.0, 2.0}).reshape({2, 1}).expand({2, 3});  // stride 0 along dim 1
  expect_values(ex.softmax(1), {2, 3}, {1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0});
  expect_values(ex.softmax(0), {2, 3}, std::vector<double>{e2 / (1 + e2), e2 / (1 + e2), e2 / (1 + e2),
                                                           1 / (1 + e2), 1 / (1 + e2), 1 / (1 + e2)});
  expect_values(ex.cumsum(1), {2, 3}, {1, 2, 3, 2, 4, 6});
  Tensor h = x.to(kFloat16);
  EXPECT_EQ(h.softmax(1).dtype(), kFloat16);
  EXPECT_NEAR(values(h.softmax(1))[2], 1 / s, 1e-3);
  Tensor i = tensor::tensor({{1, 2}, {3, 3}});
  Tensor si = i.softmax(1, kFloat64);
  EXPECT_EQ(si.dtype(), kFloat64);
  expect_values(si, {2, 2}, {1 / (1 + std::exp(1.0)), std::exp(1.0) / (1 + std::exp(1.0)), 0.5, 0.5}, 1e-12);
  // Rows that sum to one over a big, threaded input.
  Tensor big = randn({300, 2000});
  expect_values(big.softmax(1).sum({1}), {300}, std::vector<double>(300, 1.0), 1e-5, 1e-5);
  expect_values(big.softmax(0).sum({0}), {2000}, std::vector<double>(2000, 1.0), 1e-5, 1e-5);
}

// log_softmax along the last dim in groups of rows (Note [Log-softmax row groups]): row
// counts that leave a part group, rows short enough to group (10, 64, 300 floats) and long
// enough not to (600, and 1500 over two summation blocks), in float32 and float64 and three
// layouts, against a float64 reference loop; special rows inside a group; and the fused
// cross_entropy's per-row value (log_softmax_at) equal to what log_softmax writes.
TEST(Reduce, LogSoftmaxRowGroups) {
  manual_seed(29);
  for (int64_t n : {10, 64, 300, 600, 1500}) {
    const int64_t rows = 37;
    Tensor r = randn({rows, n}, TensorOptions().dtype(kFloat64)) * 6;
    const std::vector<double> data = values(r);
    std::vector<double> want(data.size());
    for (int64_t i = 0; i < rows; ++i) {
      const double* x = data.data() + i * n;
      double m = -kInf, s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, x[k]);
      for (int64_t k = 0; k < n; ++k) s += std::exp(x[k] - m);
      for (int64_t k = 0; k < n; ++k) want[i * n + k] = (x[k] - m) - std::log(s);
    }
    for (auto& [name, v] : layouts(r)) {
      SCOPED_TRACE(name + " n " + std::to_string(n));
      expect_values(v.log_softmax(1), {rows, n}, want, 1e-12, 1e-12);
      expect_values(v.to(kFloat32).log_softmax(1), {rows, n}, want, 1e-5, 1e-5);
    }
  }
  // Rows 0..19 of 64: in the first group a +inf row, an all -inf row, a NaN row and a row with
  // one -inf; the other rows ordinary. torch gives NaN for the first three, -inf for the entry.
  for (ScalarType dt : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dt == kFloat32 ? "float32 special rows" : "float64 special rows");
    Tensor x = tensor::arange(20 * 64, TensorOptions().dtype(kFloat64)).reshape({20, 64}) * 0.01;
    x.select(0, 1).narrow(0, 5, 1).fill_(kInf);
    x.select(0, 2).fill_(-kInf);
    x.select(0, 3).narrow(0, 7, 1).fill_(kNaN);
    x.select(0, 4).narrow(0, 0, 1).fill_(-kInf);
    const std::vector<double> data = values(x);
    std::vector<double> want(data.size());
    for (int64_t i = 0; i < 20; ++i) {
      const double* p = data.data() + i * 64;
      double m = -kInf, s = 0;
      bool nan = false;
      for (int64_t k = 0; k < 64; ++k) nan |= std::isnan(p[k]), m = std::max(m, p[k]);
      for (int64_t k = 0; k < 64; ++k) s += std::exp(p[k] - m);
      for (int64_t k = 0; k < 64; ++k)
        want[i * 64 + k] = nan || std::isinf(m) ? kNaN : (p[k] - m) - std::log(s);
    }
    Tensor got = x.to(dt).log_softmax(1);
    expect_values(got, {20, 64}, want, dt == kFloat32 ? 1e-5 : 1e-12, dt == kFloat32 ? 1e-5 : 1e-12);
    EXPECT_EQ(values(got)[4 * 64], -kInf);
  }
  // Each row's nll_loss through the fused path picks exactly the value log_softmax writes.
  for (int64_t n : {10, 64, 600}) {
    Tensor x = randn({19, n}) * 5;
    Tensor t = tensor::arange(19, TensorOptions().dtype(kInt64)).remainder(n);
    const std::vector<double> lsm = values(x.log_softmax(1));
    const std::vector<double> ce = values(tensor::cross_entropy_loss(x, t, std::nullopt, Reduction::None));
    for (int64_t i = 0; i < 19; ++i) EXPECT_EQ(ce[i], -lsm[i * n + i % n]) << "n " << n << " row " << i;
  }
}

// ---- meta tensors ----

TEST(Reduce, MetaShapesAndDtypes) {
  Tensor m = empty({2, 3, 4}, TensorOptions().dtype(kFloat32).device(kMeta));
  Tensor i = empty({2, 3}, TensorOptions().dtype(kInt32).device(kMeta));
  auto check = [](const Tensor& t, const Shape& shape, ScalarType dt) {
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(shape_of(t), shape);
    EXPECT_EQ(t.dtype(), dt);
  };
  check(m.sum({1}), {2, 4}, kFloat32);
  check(m.sum({1}, true), {2, 1, 4}, kFloat32);
  check(i.sum(), {}, kInt64);
  check(m.mean({0, 2}), {3}, kFloat32);
  check(m.prod(2), {2, 3}, kFloat32);
  check(m.max(), {}, kFloat32);
  auto [v, idx] = m.max(1, true);
  check(v, {2, 1, 4}, kFloat32);
  check(idx, {2, 1, 4}, kInt64);
  check(m.amin({0, 1}), {4}, kFloat32);
  check(m.argmax(), {}, kInt64);
  check(m.argmin(2), {2, 3}, kInt64);
  check(m.var({1}), {2, 4}, kFloat32);
  check(m.std(), {}, kFloat32);
  check(m.norm(2, {2}), {2, 3}, kFloat32);
  check(m.logsumexp({2}), {2, 3}, kFloat32);
  check(m.any(1), {2, 4}, kBool);
  check(i.all(), {}, kBool);
  check(i.cumsum(1), {2, 3}, kInt64);
  check(m.softmax(2), {2, 3, 4}, kFloat32);
  check(m.log_softmax(0, kFloat64), {2, 3, 4}, kFloat64);
}

// ---- errors ----

TEST(Reduce, Errors) {
  Tensor x = zeros({2, 3});
  expect_error([&] { x.sum({2}); }, {"sum()", "dim 2", "[2, 3]"});
  expect_error([&] { x.sum({-3}); }, {"sum()", "dim -3", "[2, 3]"});
  expect_error([&] { x.sum({0, -2}); }, {"sum()", "dim 0", "multiple times", "[2, 3]"});
  expect_error([&] { x.amax({1, 1}); }, {"amax()", "multiple times"});
  expect_error([&] { x.max(5); }, {"max()", "dim 5", "[2, 3]"});
  expect_error([&] { x.cumsum(2); }, {"cumsum()", "dim 2", "[2, 3]"});
  expect_error([&] { x.softmax(-3); }, {"softmax()", "dim -3", "[2, 3]"});
  expect_error([&] { x.argmax(2); }, {"argmax()", "dim 2", "[2, 3]"});
  expect_error([&] { x.prod(7); }, {"prod()", "dim 7"});
  Tensor i = tensor::tensor({1, 2});
  expect_error([&] { i.mean(); },
               {"mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"});
  expect_error([&] { i.mean(kInt32); }, {"mean()", "Optional dtype", "Got: Int"});
  expect_error([&] { i.var(); }, {"var()", "Long"});
  expect_error([&] { i.std(); }, {"std()", "Long"});
  expect_error([&] { i.norm(); }, {"norm()", "Long"});
  expect_error([&] { i.logsumexp({0}); }, {"logsumexp()", "Long"});
  expect_error([&] { i.softmax(0); }, {"softmax()", "Long"});
  expect_error([&] { i.log_softmax(0); }, {"log_softmax()", "Long"});
  expect_error([&] { tensor::tensor({true}).mean(); }, {"mean()", "Got: Bool"});
  Tensor e = zeros({0, 3});
  expect_error([&] { e.max(); }, {"max(): Expected reduction dim to be specified for input.numel() == 0", "[0, 3]"});
  expect_error([&] { e.min(); }, {"min()", "numel() == 0"});
  expect_error([&] { e.max(0); }, {"max(): Expected reduction dim 0 to have non-zero size", "[0, 3]"});
  expect_error([&] { e.amax({0}); }, {"amax()", "dim 0", "non-zero size"});
  expect_error([&] { e.amin(); }, {"amin()", "numel() == 0"});
  expect_error([&] { e.argmax(); }, {"argmax()", "numel() == 0"});
  expect_error([&] { e.argmin(0); }, {"argmin()", "dim 0"});
  expect_error([&] { e.norm(kInf); }, {"norm()", "non-zero size"});
  Tensor z = zeros({2}, TensorOptions().dtype(kComplex64));
  expect_error([&] { z.max(); }, {"max()", "complex"});
  expect_error([&] { z.argmax(); }, {"argmax()", "complex"});
  // Valid calls on the same tensors still work after the errors.
  EXPECT_EQ(shape_of(std::get<0>(e.max(1))), Shape{0});
}

// The vector paths of prod and the 2-norm (Note [Fused 2-norm]) on rows long enough to take
// them (32 elements and up), in float32 and float64, over rows, columns and every dim, on
// sizes that split over threads, against float64 references.
TEST(Reduce, ProdAndNormVectorPaths) {
  manual_seed(12);
  const Shape shape = {37, 300, 41};  // 455K elements: threads split the work
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor near1 = rand(shape, TensorOptions().dtype(dt)) * 0.02 + 0.99;  // products stay finite
    Tensor r = randn(shape, TensorOptions().dtype(dt));
    const std::vector<double> p = values(near1), x = values(r);
    const double tol = dt == kFloat32 ? 1e-5 : 1e-12;
    for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {2}, {1}, {0}, {0, 2}, {1, 2}}) {
      SCOPED_TRACE(::testing::PrintToString(dims) + " " + to_string(dt));
      if (dims.size() == 1) {
        RefResult want = ref_reduce(p, shape, dims, false, fold_prod);
        expect_values(near1.prod(dims[0]), want.shape, want.out, dt == kFloat32 ? 1e-4 : 1e-12, 0);
      }
      RefResult want = ref_reduce(x, shape, dims, false, [](const std::vector<double>& v) {
        double s = 0;
        for (double a : v) s += a * a;
        return std::sqrt(s);
      });
      expect_values(r.norm(2, dims), want.shape, want.out, tol, 0);
      // A transposed layout reduces the same values (the planner reorders the dims).
      expect_values(r.permute({2, 1, 0}).contiguous().permute({2, 1, 0}).norm(2, dims), want.shape, want.out, tol, 0);
    }
  }
  // With autograd the composite records: the gradient of the 2-norm is x / norm.
  Tensor a = tensor::tensor({{3.0, 4.0}, {6.0, 8.0}}).requires_grad_(true);
  Tensor n = a.norm(2, {1});
  expect_values(n.detach(), {2}, {5, 10});
  n.sum().backward();
  expect_values(a.grad(), {2, 2}, {0.6, 0.8, 0.6, 0.8});
  // Special values: NaN propagates, inf gives inf, a zero row gives 0.
  Tensor s = tensor::tensor(std::vector<float>(64, 1.0f)).reshape({2, 32});
  s[0][5] = NAN;
  s[1][7] = INFINITY;
  Tensor sn = s.norm(2, {1});
  EXPECT_TRUE(std::isnan(sn[0].item<double>()));
  EXPECT_TRUE(std::isinf(sn[1].item<double>()));
  EXPECT_EQ(zeros({3, 40}).norm(2, {1}).sum().item<double>(), 0.0);
}
