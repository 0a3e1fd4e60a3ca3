// sort, argsort and topk (src/ops/SortOps.cpp, src/autograd/nodes/MultiOutput.cpp): hand-computed
// orders with ties, NaN and infinities; every dim (negative too), non-contiguous inputs, integer
// and bool dtypes and large rows against an independent float64 reference (std::stable_sort with
// a NaN-aware comparator); gradcheck and gradgradcheck of the values; errors.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::check;
using tensor::testing::expect_error;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<double> values_of(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

std::vector<int64_t> ints_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), kInt64);
  Tensor c = t.contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// Equal as sequences, NaN equal to NaN.
void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i << ": " << got[i];
    else EXPECT_EQ(got[i], want[i]) << what << " at " << i;
  }
}

// NaN ranks above every number (libtorch's order).
bool less_nan_last(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

/// Reference: the first k of the stable order of each slice of `x` along d, as (values,
/// indices) laid out like tensor's results: shape of x with size k at d, row-major.
struct Ref {
  std::vector<double> values;
  std::vector<int64_t> indices;
};
Ref reference(const Tensor& x, int64_t d, int64_t k, bool descending) {
  const int64_t nd = x.dim();
  if (d < 0) d += nd;
  // Slices as rows: move d last (a contiguous float64 copy).
  Tensor rows = x.to(kFloat64).transpose(d, nd - 1).contiguous();
  const int64_t n = x.size(d), count = n == 0 ? 0 : rows.numel() / n;
  const double* p = rows.data_ptr<double>();
  std::vector<double> rv;
  std::vector<int64_t> ri;
  for (int64_t r = 0; r < count; ++r) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    const double* row = p + r * n;
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      return descending ? less_nan_last(row[b], row[a]) : less_nan_last(row[a], row[b]);
    });
    for (int64_t j = 0; j < k; ++j) {
      rv.push_back(row[idx[j]]);
      ri.push_back(idx[j]);
    }
  }
  // Back from the "d last" layout to x's layout with size k at d.
  std::vector<int64_t> moved(x.sizes().begin(), x.sizes().end());
  std::swap(moved[d], moved[nd - 1]);
  moved[nd - 1] = k;
  Tensor v = tensor::tensor(rv, kFloat64).reshape(moved).transpose(d, nd - 1).contiguous();
  Tensor i = tensor::tensor(ri).reshape(moved).transpose(d, nd - 1).contiguous();
  return {values_of(v), ints_of(i)};
}

void expect_matches(const std::tuple<Tensor, Tensor>& got, const Ref& want, const std::string& what) {
  expect_same(values_of(std::get<0>(got)), want.values, what + " values");
  EXPECT_EQ(ints_of(std::get<1>(got)), want.indices) << what << " indices";
}

void check_all_dims(const Tensor& x, const std::string& name) {
  for (int64_t d = -x.dim(); d < x.dim(); ++d) {
    const int64_t dd = d < 0 ? d + x.dim() : d, n = x.size(dd);
    const std::string at = name + " dim " + std::to_string(d);
    for (bool desc : {false, true}) {
      auto r = tensor::sort(x, d, desc);
      EXPECT_EQ(std::get<0>(r).dtype(), x.dtype()) << at;
      EXPECT_EQ(std::get<0>(r).sizes(), x.sizes()) << at;
      expect_matches(r, reference(x, d, n, desc), at + (desc ? " sort desc" : " sort"));
      EXPECT_EQ(ints_of(tensor::argsort(x, d, desc)), reference(x, d, n, desc).indices) << at << " argsort";
      if (x.dtype() == kBool) continue;
      // Small k (k * 8 <= n) takes the heap scan, larger k the full sort.
      for (int64_t k : {int64_t{0}, std::min<int64_t>(1, n), std::min<int64_t>(3, n), n / 2, n - 1, n}) {
        if (k < 0) continue;
        auto t = tensor::topk(x, k, d, /*largest=*/desc);
        EXPECT_EQ(std::get<0>(t).size(dd), k);
        expect_matches(t, reference(x, d, k, desc), at + " topk k=" + std::to_string(k) + (desc ? " largest" : " smallest"));
      }
    }
  }
}

// Many ties: integers in [-3, 3] stored as float64.
Tensor tied(std::vector<int64_t> shape, unsigned seed) {
  manual_seed(seed);
  return tensor::randint(-3, 4, shape, kFloat64);
}

}  // namespace

TEST(SortOps, HandComputedWithTiesNanAndInfinities) {
  // positions:              0    1   2  3  4    5     6     7    8
  Tensor x = tensor::tensor(std::vector<double>{3, kNaN, 1, 2, 1, kNaN, -kInf, kInf, 0}, kFloat64);
  auto [v, i] = tensor::sort(x);
  expect_same(values_of(v), {-kInf, 0, 1, 1, 2, 3, kInf, kNaN, kNaN}, "ascending");
  EXPECT_EQ(ints_of(i), (std::vector<int64_t>{6, 8, 2, 4, 3, 0, 7, 1, 5}));
  auto [vd, id] = tensor::sort(x, 0, /*descending=*/true);
  expect_same(values_of(vd), {kNaN, kNaN, kInf, 3, 2, 1, 1, 0, -kInf}, "descending");
  EXPECT_EQ(ints_of(id), (std::vector<int64_t>{1, 5, 7, 0, 3, 2, 4, 8, 6}));
  EXPECT_EQ(ints_of(tensor::argsort(x, -1, true)), ints_of(id));

  auto [tv, ti] = tensor::topk(x, 3);
  expect_same(values_of(tv), {kNaN, kNaN, kInf}, "topk largest");
  EXPECT_EQ(ints_of(ti), (std::vector<int64_t>{1, 5, 7}));
  auto [sv, si] = tensor::topk(x, 4, 0, /*largest=*/false);
  expect_same(values_of(sv), {-kInf, 0, 1, 1}, "topk smallest");
  EXPECT_EQ(ints_of(si), (std::vector<int64_t>{6, 8, 2, 4}));
  auto [sv8, si8] = tensor::topk(x, 8, 0, false);
  expect_same(values_of(sv8), {-kInf, 0, 1, 1, 2, 3, kInf, kNaN}, "topk smallest reaching the NaNs");
  EXPECT_EQ(ints_of(si8), (std::vector<int64_t>{6, 8, 2, 4, 3, 0, 7, 1}));

  // float32, 2-D along rows.
  Tensor m = tensor::tensor({{2.f, -1.f, 2.f}, {0.5f, 7.f, -3.f}});
  auto [mv, mi] = tensor::sort(m, 1, true);
  EXPECT_EQ(mv.dtype(), kFloat32);
  expect_same(values_of(mv), {2, 2, -1, 7, 0.5, -3}, "method sort");
  EXPECT_EQ(ints_of(mi), (std::vector<int64_t>{0, 2, 1, 1, 0, 2}));
  auto [kv, ki] = tensor::topk(m, 1, 0);
  expect_same(values_of(kv), {2, 7, 2}, "method topk along dim 0");
  EXPECT_EQ(ints_of(ki), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(ints_of(tensor::argsort(m, 0)), (std::vector<int64_t>{1, 0, 1, 0, 1, 0}));
  // libtorch's stable overload: same result.
  auto [s2v, s2i] = tensor::sort(m, /*stable=*/true, 1, true);
  EXPECT_TRUE(tensor::equal(s2v, mv));
  EXPECT_TRUE(tensor::equal(s2i, mi));
  auto [s3v, s3i] = tensor::sort(m, std::optional<bool>(false), -1, false);
  expect_same(values_of(s3v), {-1, 2, 2, -3, 0.5, 7}, "stable overload ascending");
  EXPECT_EQ(ints_of(s3i), (std::vector<int64_t>{1, 0, 2, 2, 0, 1}));
}

TEST(SortOps, MethodSpellings) {
  Tensor m = tensor::tensor({{2.f, -1.f, 2.f}, {0.5f, 7.f, -3.f}});
  auto [v, i] = m.sort(1, true);
  expect_same(values_of(v), {2, 2, -1, 7, 0.5, -3}, "method sort");
  EXPECT_EQ(ints_of(i), (std::vector<int64_t>{0, 2, 1, 1, 0, 2}));
  auto [sv, si] = m.sort(/*stable=*/true, 0, false);
  expect_same(values_of(sv), {0.5, -1, -3, 2, 7, 2}, "method stable sort");
  EXPECT_EQ(ints_of(si), (std::vector<int64_t>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(ints_of(m.argsort(0)), ints_of(si));
  auto [kv, ki] = m.topk(2, -1, /*largest=*/false);
  expect_same(values_of(kv), {-1, 2, -3, 0.5}, "method topk");
  EXPECT_EQ(ints_of(ki), (std::vector<int64_t>{1, 0, 2, 0}));
  // libtorch's overload rules: sort(true) picks the dim overload (dim = 1), as it does there.
  EXPECT_TRUE(tensor::equal(std::get<1>(m.sort(true)), std::get<1>(m.sort(1, false))));
}

TEST(SortOps, StableTiesAndSignedZeros) {
  // -0.0 == 0.0: equal keys keep input order, both ways.
  Tensor x = tensor::tensor(std::vector<double>{0.0, -0.0, 1, 0.0, 1, -0.0}, kFloat64);
  EXPECT_EQ(ints_of(std::get<1>(tensor::sort(x))), (std::vector<int64_t>{0, 1, 3, 5, 2, 4}));
  EXPECT_EQ(ints_of(std::get<1>(tensor::sort(x, 0, true))), (std::vector<int64_t>{2, 4, 0, 1, 3, 5}));
  EXPECT_EQ(ints_of(std::get<1>(tensor::topk(x, 3))), (std::vector<int64_t>{2, 4, 0}));
  EXPECT_EQ(ints_of(std::get<1>(tensor::topk(x, 2, 0, false))), (std::vector<int64_t>{0, 1}));
}

TEST(SortOps, EveryDimWithTies) {
  check_all_dims(tied({4, 5, 6}, 1), "float64 [4,5,6]");
  check_all_dims(tied({7, 3}, 2).to(kFloat32), "float32 [7,3]");
  check_all_dims(tied({1, 9}, 3), "float64 [1,9]");
  check_all_dims(tied({3, 40}, 10), "float64 [3,40]");
}

TEST(SortOps, NonContiguousInputs) {
  Tensor base = tied({6, 5, 8}, 4);
  Tensor tr = base.transpose(0, 2);
  ASSERT_FALSE(tr.is_contiguous());
  check_all_dims(tr, "transposed");
  Tensor sl = base.slice(2, 1, 8, 3).slice(0, 1, 5);  // strided along the last dim
  ASSERT_FALSE(sl.is_contiguous());
  check_all_dims(sl, "sliced");
  Tensor ex = tensor::tensor(std::vector<double>{2, -1, 2}, kFloat64).view({3, 1}).expand({3, 4});  // stride 0
  check_all_dims(ex, "expanded");
}

TEST(SortOps, NanAndInfinityInRows) {
  manual_seed(5);
  Tensor x = tied({5, 12}, 5);
  Tensor r = tensor::rand({5, 12}, kFloat64);
  x = tensor::where(r.lt(0.2), tensor::full({}, kNaN, kFloat64), x);
  x = tensor::where(r.gt(0.9), tensor::full({}, kInf, kFloat64), x);
  x = tensor::where(r.gt(0.8).logical_and(r.le(0.9)), tensor::full({}, -kInf, kFloat64), x);
  ASSERT_TRUE(x.isnan().any().item<bool>());
  // Long rows too, so that small k runs the heap scan (and its block skipping) over NaNs and
  // infinities.
  Tensor r2 = tensor::rand({3, 300}, kFloat64);
  Tensor y = tensor::where(r2.lt(0.3), tensor::full({}, kNaN, kFloat64), tied({3, 300}, 11));
  y = tensor::where(r2.gt(0.9), tensor::full({}, -kInf, kFloat64), y);
  check_all_dims(y, "long rows with NaN");
  check_all_dims(x, "with NaN/inf");
  check_all_dims(x.to(kFloat32), "float32 with NaN/inf");
  check_all_dims(x.to(kFloat16), "float16 with NaN/inf");
  check_all_dims(x.to(kBFloat16), "bfloat16 with NaN/inf");
}

TEST(SortOps, IntegerAndBoolDtypes) {
  Tensor x = tied({4, 6}, 6);
  for (ScalarType t : {kInt64, kInt32, kInt16, kInt8}) check_all_dims(x.to(t), std::string("dtype ") + to_string(t));
  check_all_dims((x + 3).to(kUInt8), "uint8");
  Tensor b = x.gt(0);
  check_all_dims(b, "bool");
  auto [bv, bi] = tensor::sort(tensor::tensor(std::vector<int64_t>{1, 0, 1, 0}).to(kBool));
  EXPECT_EQ(bv.dtype(), kBool);
  expect_same(values_of(bv), {0, 0, 1, 1}, "bool sort");
  EXPECT_EQ(ints_of(bi), (std::vector<int64_t>{1, 3, 0, 2}));
  // int64 beyond float precision keeps exact order.
  const int64_t big = (int64_t{1} << 60);
  Tensor li = tensor::tensor(std::vector<int64_t>{big + 1, big, big + 2, -big});
  auto [lv, lidx] = tensor::sort(li, 0, true);
  EXPECT_EQ(ints_of(lv), (std::vector<int64_t>{big + 2, big + 1, big, -big}));
  EXPECT_EQ(ints_of(lidx), (std::vector<int64_t>{2, 0, 1, 3}));
}

TEST(SortOps, EdgeShapes) {
  // 0-dim: the element itself, index 0.
  auto [v0, i0] = tensor::sort(tensor::scalar_tensor(2.5, kFloat64));
  EXPECT_EQ(v0.dim(), 0);
  EXPECT_EQ(v0.item<double>(), 2.5);
  EXPECT_EQ(i0.item<int64_t>(), 0);
  auto [t0, ti0] = tensor::topk(tensor::scalar_tensor(-1.0, kFloat64), 1);
  EXPECT_EQ(t0.item<double>(), -1.0);
  EXPECT_EQ(ti0.item<int64_t>(), 0);
  // Empty inputs: shapes kept.
  Tensor e = tensor::zeros({0, 3}, kFloat32);
  auto [ev, ei] = tensor::sort(e, 0);
  EXPECT_EQ(ev.sizes(), e.sizes());
  EXPECT_EQ(ei.sizes(), e.sizes());
  auto [kv, ki] = tensor::topk(tensor::zeros({3, 0}), 0);
  EXPECT_EQ(kv.sizes(), (std::vector<int64_t>{3, 0}));
  // k = 0 on a non-empty dim.
  auto [zv, zi] = tensor::topk(tied({3, 4}, 7), 0, 1);
  EXPECT_EQ(zv.sizes(), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(zi.dtype(), kInt64);
}

TEST(SortOps, LargeRandomRowsAgainstStdSort) {
  // Rows long enough to run in parallel; float32 keys (mostly distinct, some ties from rounding).
  manual_seed(8);
  Tensor x = tensor::randn({48, 3000}, kFloat32);
  auto [v, i] = tensor::sort(x, 1);
  Tensor xc = x.contiguous();
  const float* p = xc.data_ptr<float>();
  const std::vector<int64_t> idx = ints_of(i);
  const std::vector<double> vals = values_of(v);
  for (int64_t r = 0; r < 48; ++r) {
    std::vector<float> row(p + r * 3000, p + (r + 1) * 3000);
    std::vector<float> want = row;
    std::sort(want.begin(), want.end());
    for (int64_t j = 0; j < 3000; ++j) {
      ASSERT_EQ(static_cast<float>(vals[r * 3000 + j]), want[j]) << "row " << r << " pos " << j;
      ASSERT_EQ(row[idx[r * 3000 + j]], want[j]) << "index of row " << r << " pos " << j;
    }
  }
  expect_matches(tensor::topk(x, 10, 1), reference(x, 1, 10, true), "large topk largest");
  expect_matches(tensor::topk(x, 2999, 1, false), reference(x, 1, 2999, false), "large topk near n");
  expect_matches(tensor::sort(x.t(), 0, true), reference(x.t(), 0, 3000, true), "large transposed desc");
}

TEST(SortOps, Gradients) {
  manual_seed(9);
  using F = std::function<Tensor(const autograd::variable_list&)>;
  // Distinct values, so that the order does not flip within the finite-difference step.
  auto distinct = [](std::vector<int64_t> shape, bool transposed) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    Tensor perm = tensor::randperm(n).to(kFloat64) * 0.37 - 2;
    Tensor t = transposed ? perm.reshape({shape[1], shape[0]}).t() : perm.reshape(shape);
    return t.detach().requires_grad_(true);
  };
  for (bool tr : {false, true}) {
    Tensor x = distinct({4, 5}, tr);
    for (int64_t d : {0, 1, -1}) {
      for (bool desc : {false, true}) {
        const std::string at = std::string(tr ? "transposed " : "") + "dim " + std::to_string(d) + (desc ? " desc" : "");
        F fs = [d, desc](const autograd::variable_list& in) { return std::get<0>(tensor::sort(in[0], d, desc)); };
        check("sort " + at + " gradcheck", [&] { return autograd::gradcheck(fs, {x}, 1e-6, 1e-5, 1e-3); });
        check("sort " + at + " gradgradcheck", [&] { return autograd::gradgradcheck(fs, {x}, 1e-6, 1e-5, 1e-3); });
        F ft = [d, desc](const autograd::variable_list& in) { return std::get<0>(tensor::topk(in[0], 2, d, desc)); };
        check("topk " + at + " gradcheck", [&] { return autograd::gradcheck(ft, {x}, 1e-6, 1e-5, 1e-3); });
        check("topk " + at + " gradgradcheck", [&] { return autograd::gradgradcheck(ft, {x}, 1e-6, 1e-5, 1e-3); });
      }
    }
  }
  // Hand-computed routing: the gradient of the values lands on the selected positions.
  Tensor x = tensor::tensor(std::vector<double>{0.5, 3, -1, 2}, kFloat64).requires_grad_(true);
  auto [v, i] = tensor::topk(x, 2);
  EXPECT_FALSE(i.requires_grad());
  (v * tensor::tensor(std::vector<double>{10, 100}, kFloat64)).sum().backward();
  expect_same(values_of(x.grad()), {0, 10, 0, 100}, "topk grad");
  Tensor y = tensor::tensor(std::vector<double>{0.5, 3, -1, 2}, kFloat64).requires_grad_(true);
  auto [sv, si] = tensor::sort(y);
  (sv * tensor::tensor(std::vector<double>{1, 2, 3, 4}, kFloat64)).sum().backward();
  expect_same(values_of(y.grad()), {2, 4, 1, 3}, "sort grad");
  EXPECT_FALSE(tensor::argsort(y).requires_grad());
}

TEST(SortOps, Errors) {
  Tensor x = tensor::zeros({2, 3});
  expect_error([&] { tensor::topk(x, 4, 1); }, {"topk()", "k out of range", "k = 4", "[2, 3]", "size 3"});
  expect_error([&] { tensor::topk(x, -1); }, {"topk()", "k out of range", "k = -1"});
  expect_error([&] { tensor::topk(x, 1, 2); }, {"topk()", "dim 2", "[2, 3]"});
  expect_error([&] { tensor::sort(x, -3); }, {"sort()", "dim -3", "[2, 3]"});
  expect_error([&] { tensor::argsort(x, 5); }, {"sort()", "dim 5"});
  Tensor c = tensor::zeros({2, 3}, kComplex64);
  expect_error([&] { tensor::sort(c); }, {"sort()", "complex", "[2, 3]"});
  expect_error([&] { tensor::topk(c, 1); }, {"topk()", "complex", "[2, 3]"});
  expect_error([&] { tensor::argsort(c); }, {"sort()", "complex"});
  expect_error([&] { tensor::topk(x.gt(0), 1); }, {"topk()", "bool", "[2, 3]"});
}

// sort's and topk's Meta instances are their front ends alone (Note [Front ends and backend
// kernels]): the outputs' shapes and dtypes, the same checks, and no data touched.
TEST(SortOps, MetaShapesWithoutData) {
  const TensorOptions meta = TensorOptions(kFloat32).device(kMeta);
  Tensor big = tensor::empty({100000, 100000}, meta);
  Tensor i = tensor::empty({2, 3, 4}, TensorOptions(kInt32).device(kMeta));
  auto expect_meta = [](const Tensor& t, const std::vector<int64_t>& sizes, ScalarType dt, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(t.sizes().vec(), sizes);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_THROW(t.data_ptr(), tensor::Error);
  };
  auto [v, ix] = big.sort(0, true);
  expect_meta(v, {100000, 100000}, kFloat32, "sort values");
  expect_meta(ix, {100000, 100000}, kInt64, "sort indices");
  auto [tv, ti] = tensor::topk(i, 2, 1);
  expect_meta(tv, {2, 2, 4}, kInt32, "topk values");
  expect_meta(ti, {2, 2, 4}, kInt64, "topk indices");
  auto [bv, bi] = big.topk(5);
  expect_meta(bv, {100000, 5}, kFloat32, "topk last dim");
  expect_meta(bi, {100000, 5}, kInt64, "topk last dim indices");
  expect_meta(tensor::argsort(i, -1), {2, 3, 4}, kInt64, "argsort");
  expect_meta(std::get<0>(tensor::empty({}, meta).sort()), {}, kFloat32, "sort 0-dim");
  // The same checks as on the CPU.
  expect_error([&] { tensor::topk(big, 100001, 1); }, {"topk()", "k out of range", "k = 100001"});
  expect_error([&] { tensor::sort(i, 3); }, {"sort()", "dim 3", "[2, 3, 4]"});
  expect_error([&] { tensor::sort(tensor::empty({2}, TensorOptions(kComplex64).device(kMeta))); }, {"sort()", "complex"});
  expect_error([&] { tensor::topk(tensor::empty({2}, TensorOptions(kBool).device(kMeta)), 1); }, {"topk()", "bool"});
}
