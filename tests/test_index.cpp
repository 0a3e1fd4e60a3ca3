// Indexing and joining ops: index_select, gather, scatter(_add), index_add, masked_fill,
// masked_select, nonzero, where(cond), cat, stack, split, chunk, Tensor::index, index_put_.
// Values are checked against hand-computed results or reference loops over row-major copies.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::vals;
using tensor::indexing::TensorIndex;
using tensor::testing::expect_error;
using tensor::testing::random_tensor;

namespace {

// Row-major values of any tensor (any layout), as double / int64.
std::vector<int64_t> ivals(const Tensor& t) {
  Tensor c = t.to(kInt64).contiguous();
  const int64_t* p = c.numel() ? c.data_ptr<int64_t>() : nullptr;
  return std::vector<int64_t>(p, p + c.numel());
}
std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

Tensor random_index(int64_t n, int64_t high, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(0, high - 1);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return tensor::tensor(v);
}

// arange(12) as [3, 4]: x[i][j] = 4i + j.
Tensor grid34(ScalarType t = kInt64) { return arange(12).reshape({3, 4}).to(t); }

const ScalarType kAllTypes[] = {kBool, kInt64, kFloat32, kFloat64, kFloat16};
// What a value v (from an int64 arange) reads back as in dtype t.
double as_dtype(double v, ScalarType t) { return t == kBool ? (v != 0 ? 1.0 : 0.0) : v; }

}  // namespace

// ---------------------------------------------------------------- index_select

TEST(IndexSelect, ContiguousAllDims) {
  Tensor x = grid34();
  Tensor r0 = x.index_select(0, tensor::tensor({2, 0}));
  EXPECT_EQ(shape(r0), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(ivals(r0), (std::vector<int64_t>{8, 9, 10, 11, 0, 1, 2, 3}));
  Tensor r1 = index_select(x, 1, tensor::tensor({3, 1, 1}));
  EXPECT_EQ(ivals(r1), (std::vector<int64_t>{3, 1, 1, 7, 5, 5, 11, 9, 9}));
  Tensor rn = x.index_select(-1, tensor::tensor({0}));
  EXPECT_EQ(shape(rn), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(ivals(rn), (std::vector<int64_t>{0, 4, 8}));
  // int32 indices and a 0-dim index are accepted, as PyTorch.
  Tensor r32 = x.index_select(0, tensor::tensor({1}).to(kInt32));
  EXPECT_EQ(ivals(r32), (std::vector<int64_t>{4, 5, 6, 7}));
  Tensor r0d = x.index_select(1, scalar_tensor(2));
  EXPECT_EQ(shape(r0d), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(ivals(r0d), (std::vector<int64_t>{2, 6, 10}));
}

TEST(IndexSelect, NonContiguousInputs) {
  Tensor x = grid34();
  Tensor xt = x.t();  // [[0,4,8],[1,5,9],[2,6,10],[3,7,11]]
  EXPECT_EQ(ivals(xt.index_select(0, tensor::tensor({1, 3}))), (std::vector<int64_t>{1, 5, 9, 3, 7, 11}));
  EXPECT_EQ(ivals(xt.index_select(1, tensor::tensor({2}))), (std::vector<int64_t>{8, 9, 10, 11}));
  Tensor xs = x.slice(1, 0, 4, 2);  // [[0,2],[4,6],[8,10]]
  EXPECT_EQ(ivals(xs.index_select(0, tensor::tensor({1}))), (std::vector<int64_t>{4, 6}));
  Tensor xe = tensor::tensor({1, 2, 3}).expand({2, 3});
  EXPECT_EQ(ivals(xe.index_select(0, tensor::tensor({1, 1, 0}))), (std::vector<int64_t>{1, 2, 3, 1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(ivals(xe.index_select(1, tensor::tensor({2, 0}))), (std::vector<int64_t>{3, 1, 3, 1}));
  // A strided index tensor.
  Tensor idx = tensor::tensor({2, 9, 0, 9}).slice(0, 0, 4, 2);  // [2, 0]
  EXPECT_EQ(ivals(x.index_select(0, idx)), (std::vector<int64_t>{8, 9, 10, 11, 0, 1, 2, 3}));
}

TEST(IndexSelect, Dtypes) {
  for (ScalarType t : kAllTypes) {
    Tensor x = grid34(t);
    Tensor r = x.index_select(1, tensor::tensor({3, 0}));
    EXPECT_EQ(r.dtype(), t);
    std::vector<double> want = {3, 0, 7, 4, 11, 8};
    for (auto& v : want) v = as_dtype(v, t);
    EXPECT_EQ(vals(r), want) << to_string(t);
  }
}

TEST(IndexSelect, LargeMatchesReference) {
  // Big enough for the parallel paths (contiguous memcpy rows and the strided loop).
  Tensor x = random_tensor({300, 257}, 1, -10.0, 10.0);
  Tensor idx = random_index(200, 300, 2);
  std::vector<double> xv = vals(x);
  std::vector<int64_t> iv = ivals(idx);
  std::vector<double> r0 = vals(x.index_select(0, idx));
  for (int64_t i = 0; i < 200; ++i)
    for (int64_t j = 0; j < 257; ++j) ASSERT_EQ(r0[i * 257 + j], xv[iv[i] * 257 + j]);
  // Along the columns of the transposed view: [257, 300] indexed on dim 1.
  std::vector<double> r1 = vals(x.t().index_select(1, idx));
  for (int64_t j = 0; j < 257; ++j)
    for (int64_t i = 0; i < 200; ++i) ASSERT_EQ(r1[j * 200 + i], xv[iv[i] * 257 + j]);
}

TEST(IndexSelect, ZeroSizeAndZeroDim) {
  Tensor x = grid34();
  Tensor r = x.index_select(0, empty({0}, TensorOptions(kInt64)));
  EXPECT_EQ(shape(r), (std::vector<int64_t>{0, 4}));
  Tensor e = empty({0, 4});
  EXPECT_EQ(shape(e.index_select(1, tensor::tensor({3, 3}))), (std::vector<int64_t>{0, 2}));
  Tensor s = scalar_tensor(5.0);
  Tensor rs = s.index_select(0, tensor::tensor({0}));
  EXPECT_EQ(rs.dim(), 0);
  EXPECT_EQ(rs.item<double>(), 5.0);
}

TEST(IndexSelect, Errors) {
  Tensor x = zeros({2, 3});
  expect_error(
      [&] {
        x.index_select(1, tensor::tensor({0, 3}));
      },
      {"index_select", "index 3", "dim 1", "size 3", "[2, 3]"});
  expect_error([&] { x.index_select(0, tensor::tensor({-1})); }, {"index_select", "index -1", "dim 0"});
  expect_error([&] { x.index_select(0, tensor::tensor({0.0})); }, {"index_select", "int64", "float32"});
  expect_error([&] { x.index_select(0, zeros({1, 1}, TensorOptions(kInt64))); }, {"index_select", "1-D", "[1, 1]"});
  expect_error([&] { x.index_select(2, tensor::tensor({0})); }, {"index_select", "dim 2"});
  expect_error([&] { empty({0, 3}).index_select(0, tensor::tensor({0})); }, {"index_select", "index 0", "size 0"});
}

// ---------------------------------------------------------------- gather

TEST(Gather, HandValues) {
  Tensor t = tensor::tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(ivals(t.gather(1, tensor::tensor({{0, 0}, {1, 0}}))), (std::vector<int64_t>{1, 1, 4, 3}));
  EXPECT_EQ(ivals(gather(t, 0, tensor::tensor({{1, 0}, {0, 0}}))), (std::vector<int64_t>{3, 2, 1, 2}));
  // An index smaller than self along the other dims, and a negative dim.
  Tensor x = grid34();
  Tensor r = x.gather(-1, tensor::tensor({{3}, {0}}));
  EXPECT_EQ(shape(r), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{3, 4}));
  // 0-dim self and index.
  EXPECT_EQ(scalar_tensor(7).gather(0, scalar_tensor(0)).item<int64_t>(), 7);
}

TEST(Gather, ReferenceOnNonContiguous) {
  // self [4, 5, 6] viewed through a permute; index [3, 5, 2] along each dim in turn.
  Tensor base = random_tensor({6, 4, 5}, 3, -10.0, 10.0);
  Tensor self = base.permute({1, 2, 0});  // [4, 5, 6], non-contiguous
  std::vector<double> sv = vals(self);
  const int64_t S[3] = {4, 5, 6};
  for (int64_t dim = 0; dim < 3; ++dim) {
    std::vector<int64_t> ishape = {3, 4, 2};
    Tensor idx = random_index(24, S[dim], 10 + static_cast<unsigned>(dim)).reshape(ishape);
    std::vector<int64_t> iv = ivals(idx);
    Tensor r = self.gather(dim - 3, idx);  // negative dim
    EXPECT_EQ(shape(r), ishape);
    std::vector<double> rv = vals(r);
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t b = 0; b < 4; ++b)
        for (int64_t c = 0; c < 2; ++c) {
          int64_t p[3] = {a, b, c};
          p[dim] = iv[(a * 4 + b) * 2 + c];
          ASSERT_EQ(rv[(a * 4 + b) * 2 + c], sv[(p[0] * 5 + p[1]) * 6 + p[2]]);
        }
  }
  // An expanded index (stride 0) gives the same as its materialized copy.
  Tensor eidx = tensor::tensor({{2}, {0}, {1}}).expand({3, 4});
  EXPECT_EQ(vals(grid34().gather(1, eidx)), vals(grid34().gather(1, eidx.contiguous())));
}

TEST(Gather, DtypesAndZeroSize) {
  for (ScalarType t : kAllTypes) {
    Tensor r = grid34(t).gather(0, tensor::tensor({{2, 0, 1, 0}}));
    std::vector<double> want = {8, 1, 6, 3};
    for (auto& v : want) v = as_dtype(v, t);
    EXPECT_EQ(vals(r), want) << to_string(t);
    EXPECT_EQ(r.dtype(), t);
  }
  Tensor r = grid34().gather(1, empty({3, 0}, TensorOptions(kInt64)));
  EXPECT_EQ(shape(r), (std::vector<int64_t>{3, 0}));
}

TEST(Gather, Errors) {
  Tensor x = grid34();
  expect_error([&] { x.gather(1, tensor::tensor({{0, 4}})); }, {"gather", "index 4", "dim 1", "size 4", "[3, 4]"});
  expect_error([&] { x.gather(0, tensor::tensor({{0}}).to(kInt32)); }, {"gather", "int64", "int32"});
  expect_error([&] { x.gather(0, tensor::tensor({0})); }, {"gather", "same number of dims", "[1]", "[3, 4]"});
  expect_error([&] { x.gather(0, zeros({1, 5}, TensorOptions(kInt64))); }, {"gather", "[1, 5]", "[3, 4]"});
}

// ---------------------------------------------------------------- scatter, scatter_add

TEST(Scatter, DocExamples) {
  Tensor src = arange(1, 11).reshape({2, 5});
  Tensor index = tensor::tensor({{0, 1, 2, 0}});
  Tensor z = zeros({3, 5}, TensorOptions(kInt64));
  uint32_t v0 = z._version();
  Tensor& same = z.scatter_(0, index, src);
  EXPECT_TRUE(same.is_same(z));
  EXPECT_GT(z._version(), v0);
  EXPECT_EQ(ivals(z), (std::vector<int64_t>{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}));
  // Functional form leaves self alone.
  Tensor z2 = zeros({3, 5}, TensorOptions(kInt64));
  Tensor r = z2.scatter(1, tensor::tensor({{0, 1, 2}, {0, 1, 4}}), src);
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{1, 2, 3, 0, 0, 6, 7, 0, 0, 8, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ivals(z2), std::vector<int64_t>(15, 0));
  // Scalar value.
  Tensor s = zeros({2, 4}).scatter(1, tensor::tensor({{2}, {3}}), 1.5);
  EXPECT_EQ(vals(s), (std::vector<double>{0, 0, 1.5, 0, 0, 0, 0, 1.5}));
  EXPECT_EQ(s.dtype(), kFloat32);
}

TEST(Scatter, AddAndDtypes) {
  Tensor src = ones({2, 5});
  Tensor index = tensor::tensor({{0, 1, 2, 0, 0}, {1, 2, 0, 0, 1}});
  Tensor z = zeros({3, 5});
  z.scatter_add_(0, index, src);
  EXPECT_EQ(vals(z), (std::vector<double>{1, 0, 1, 2, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0}));
  // Duplicates accumulate; float16 accumulates in float.
  Tensor h = zeros({3}, TensorOptions(kFloat16));
  Tensor hr = h.scatter_add(0, tensor::tensor({0, 0, 2, 0}), tensor::tensor({0.5, 0.25, 1.0, 2.0}).to(kFloat16));
  EXPECT_EQ(vals(hr), (std::vector<double>{2.75, 0, 1}));
  Tensor b =
      zeros({4}, TensorOptions(kBool)).scatter_add(0, tensor::tensor({1, 1, 3}), tensor::tensor({true, false, false}));
  EXPECT_EQ(vals(b), (std::vector<double>{0, 1, 0, 0}));
  Tensor d = zeros({2}, TensorOptions(kFloat64))
                 .scatter_add(0, tensor::tensor({1, 1}), tensor::tensor({1.25, 2.0}, dtype(kFloat64)));
  EXPECT_EQ(vals(d), (std::vector<double>{0, 3.25}));
  for (ScalarType t : kAllTypes) {
    Tensor r = zeros({2, 2}, TensorOptions(t)).scatter(1, tensor::tensor({{1}, {0}}), ones({2, 1}, TensorOptions(t)));
    EXPECT_EQ(vals(r), (std::vector<double>{0, 1, 1, 0})) << to_string(t);
  }
}

TEST(Scatter, NonContiguousSelfAndSrc) {
  // Writing through a transposed view lands in the base tensor.
  Tensor base = zeros({3, 2});
  Tensor view = base.t();                                                                // [2, 3]
  Tensor src = tensor::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).t().contiguous().t();  // non-contiguous [2, 3]
  view.scatter_(1, tensor::tensor({{2, 0}, {1, 1}}), src);
  // view = [[2, 0, 1], [0, 5, 0]] -> base = view^T.
  EXPECT_EQ(vals(base), (std::vector<double>{2, 0, 0, 5, 1, 0}));
  // Reference loop over a random 3-D case with a sliced src larger than the index.
  Tensor self = zeros({4, 3, 5}, TensorOptions(kFloat64));
  Tensor big_src = random_tensor({4, 6, 5}, 7, -10.0, 10.0).slice(1, 0, 6, 2);  // [4, 3, 5], strided
  Tensor idx = random_index(4 * 2 * 5, 3, 8).reshape({4, 2, 5});
  Tensor r = self.scatter_add(1, idx, big_src);
  std::vector<double> want(60, 0.0), sv = vals(big_src);
  std::vector<int64_t> iv = ivals(idx);
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 5; ++c) want[(a * 3 + iv[(a * 2 + b) * 5 + c]) * 5 + c] += sv[(a * 3 + b) * 5 + c];
  std::vector<double> got = vals(r);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12);
}

TEST(Scatter, Errors) {
  Tensor z = zeros({2, 3});
  expect_error(
      [&] {
        z.scatter_(1, tensor::tensor({{0, 3}}), ones({1, 2}));
      },
      {"scatter_", "index 3", "dim 1", "size 3", "[2, 3]"});
  EXPECT_EQ(vals(z), std::vector<double>(6, 0.0));  // nothing written before the check failed
  expect_error(
      [&] {
        z.scatter_(0, tensor::tensor({{0}}), ones({1, 1}, TensorOptions(kFloat64)));
      },
      {"scatter_", "float32", "float64"});
  expect_error(
      [&] {
        z.scatter_add(0, tensor::tensor({{0}}), ones({1, 1}, TensorOptions(kFloat64)));
      },
      {"scatter_add", "float32", "float64"});
  expect_error([&] { z.scatter_(0, tensor::tensor({{0, 0, 0}}), ones({1, 2})); }, {"scatter_", "[1, 3]", "[1, 2]"});
  expect_error([&] { z.scatter_(0, tensor::tensor({{0}}).to(kInt32), ones({1, 1})); }, {"scatter_", "int64", "int32"});
  Tensor e = zeros({3}).expand({2, 3});
  expect_error([&] { e.scatter_(0, tensor::tensor({{0}}), ones({1, 1})); }, {"scatter_", "single memory location"});
  // An empty index writes nothing.
  z.scatter_(0, empty({0}, TensorOptions(kInt64)), ones({2}));
  EXPECT_EQ(vals(z), std::vector<double>(6, 0.0));
}

// ---------------------------------------------------------------- index_add

TEST(IndexAdd, DocExampleAndAlpha) {
  Tensor x = ones({5, 3});
  Tensor t = tensor::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}, {7.0, 8.0, 9.0}});
  Tensor index = tensor::tensor({0, 4, 2});
  uint32_t v0 = x._version();
  x.index_add_(0, index, t);
  EXPECT_GT(x._version(), v0);
  EXPECT_EQ(vals(x), (std::vector<double>{2, 3, 4, 1, 1, 1, 8, 9, 10, 1, 1, 1, 5, 6, 7}));
  Tensor y = ones({5, 3}).index_add(0, index.to(kInt32), t, 2);
  EXPECT_EQ(vals(y), (std::vector<double>{3, 5, 7, 1, 1, 1, 15, 17, 19, 1, 1, 1, 9, 11, 13}));
  // Duplicates accumulate; dim 1 with a negative dim; integer self with an integer alpha.
  Tensor z =
      zeros({2, 3}, TensorOptions(kInt64)).index_add(-1, tensor::tensor({1, 1}), tensor::tensor({{1, 2}, {3, 4}}), 3);
  EXPECT_EQ(ivals(z), (std::vector<int64_t>{0, 9, 0, 0, 21, 0}));
  // Transposed source and float16.
  Tensor h = zeros({2, 2}, TensorOptions(kFloat16));
  h.index_add_(0, tensor::tensor({1, 0}), tensor::tensor({{1.0, 2.0}, {3.0, 4.0}}).to(kFloat16).t());
  EXPECT_EQ(vals(h), (std::vector<double>{2, 4, 1, 3}));
}

// The block path (Note [index_add by rows]): contiguous float32/float64 self and source, a
// middle dim with outer and inner blocks, duplicate indices, alpha, int32 and strided indices,
// against a float64 loop; a transposed source takes the general path and must agree too.
TEST(IndexAdd, ContiguousBlocksMatchALoop) {
  for (ScalarType t : {kFloat32, kFloat64})
    for (bool strided_index : {false, true})
      for (bool transposed_source : {false, true}) {
        Tensor self = tensor::testing::random_input({3, 5, 7}, t, -2, 2, 31);
        Tensor src = tensor::testing::random_input({3, 4, 7}, t, -2, 2, 32);
        if (transposed_source) src = src.transpose(0, 2).contiguous().transpose(0, 2);
        Tensor idx = tensor::tensor({4, 0, 4, 2});  // 4 twice
        if (strided_index) idx = tensor::tensor({4, 9, 0, 9, 4, 9, 2, 9}).slice(0, 0, 8, 2);
        const Tensor idx32 = idx.to(kInt32);
        const double alpha = 0.5;
        Tensor want = self.to(kFloat64).clone();  // a copy: to() of float64 is self
        const Tensor s64 = src.to(kFloat64).contiguous();
        for (int64_t o = 0; o < 3; ++o)
          for (int64_t b = 0; b < 4; ++b)
            for (int64_t j = 0; j < 7; ++j) {
              const int64_t r = idx[b].item<int64_t>();
              want[o][r][j] = want[o][r][j].item<double>() + alpha * s64[o][b][j].item<double>();
            }
        const double tol = t == kFloat32 ? 1e-6 : 1e-14;
        EXPECT_TRUE(allclose(self.index_add(1, idx, src, alpha).to(kFloat64), want, tol, tol)) << to_string(t);
        Tensor inplace = self.clone();
        inplace.index_add_(1, idx32, src, alpha);
        EXPECT_TRUE(allclose(inplace.to(kFloat64), want, tol, tol)) << to_string(t) << " int32 index, in place";
      }
}

TEST(IndexAdd, Errors) {
  Tensor x = zeros({3, 2}, TensorOptions(kInt64));
  expect_error(
      [&] {
        x.index_add_(0, tensor::tensor({3}), ones({1, 2}, TensorOptions(kInt64)));
      },
      {"index_add_", "index 3", "dim 0", "size 3", "[3, 2]"});
  expect_error([&] { x.index_add_(0, tensor::tensor({0}), ones({1, 2})); }, {"index_add_", "int64", "float32"});
  expect_error(
      [&] {
        x.index_add_(0, tensor::tensor({0}), ones({1, 2}, TensorOptions(kInt64)), 0.5);
      },
      {"index_add_", "alpha"});
  expect_error(
      [&] {
        x.index_add_(0, tensor::tensor({0, 1}), ones({1, 2}, TensorOptions(kInt64)));
      },
      {"index_add_", "number of indices (2)"});
  expect_error(
      [&] {
        x.index_add_(0, tensor::tensor({0}), ones({1, 3}, TensorOptions(kInt64)));
      },
      {"index_add_", "[1, 3]", "[3, 2]"});
  EXPECT_EQ(ivals(x), std::vector<int64_t>(6, 0));
}

// ---------------------------------------------------------------- masked_fill, masked_select

TEST(MaskedFill, BroadcastAndDtypes) {
  Tensor x = tensor::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor mask = tensor::tensor({true, false, true});
  EXPECT_EQ(vals(x.masked_fill(mask, -1)), (std::vector<double>{-1, 2, -1, -1, 5, -1}));
  EXPECT_EQ(vals(x), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // Out of place broadcasts self too.
  Tensor r =
      masked_fill(tensor::tensor({1.0, 2.0, 3.0}), tensor::tensor({{true, false, false}, {false, false, true}}), 0);
  EXPECT_EQ(shape(r), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vals(r), (std::vector<double>{0, 2, 3, 1, 2, 0}));
  // In place through a transposed view.
  Tensor base = zeros({3, 2});
  Tensor v = base.t();
  uint32_t v0 = base._version();
  v.masked_fill_(tensor::tensor({{true, false, false}, {false, true, true}}), 7);
  EXPECT_GT(base._version(), v0);
  EXPECT_EQ(vals(base), (std::vector<double>{7, 0, 0, 7, 0, 7}));
  for (ScalarType t : kAllTypes) {
    Tensor y = zeros({2, 2}, TensorOptions(t)).masked_fill(tensor::tensor({{false, true}, {true, false}}), 1);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(vals(y), (std::vector<double>{0, 1, 1, 0})) << to_string(t);
  }
  EXPECT_EQ(vals(zeros({2}, TensorOptions(kFloat16)).masked_fill(tensor::tensor({true, false}), 0.5)),
            (std::vector<double>{0.5, 0}));
  // Large, for the parallel loop.
  Tensor big = zeros({200, 300});
  std::vector<int64_t> mod3(300);
  for (int64_t j = 0; j < 300; ++j) mod3[j] = j % 3;
  Tensor bm = tensor::tensor(mod3).eq(0);
  std::vector<double> bv = vals(big.masked_fill(bm, 2.0));
  for (int64_t i = 0; i < 200; ++i)
    for (int64_t j = 0; j < 300; ++j) ASSERT_EQ(bv[i * 300 + j], j % 3 == 0 ? 2.0 : 0.0);
  // Zero-size.
  EXPECT_EQ(shape(empty({0, 3}).masked_fill(mask, 1)), (std::vector<int64_t>{0, 3}));
}

// Out of place reads self once into the fresh output (no copy first): both operands broadcast,
// non-contiguous and lazily conjugated inputs, and a mask that is self itself.
TEST(MaskedFill, OutOfPlaceFromStridedBroadcastAndConjInputs) {
  Tensor self = tensor::tensor({10.0, 20.0, 30.0}).view({3, 1});
  Tensor mask = tensor::tensor({true, false, false, true, false, true, true, false}).view({2, 1, 4});
  Tensor r = self.masked_fill(mask, -1);
  ASSERT_EQ(shape(r), (std::vector<int64_t>{2, 3, 4}));
  std::vector<double> rv = vals(r);
  const bool mv[8] = {true, false, false, true, false, true, true, false};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_EQ(rv[(b * 3 + i) * 4 + j], mv[b * 4 + j] ? -1.0 : 10.0 * (i + 1));
  // A transposed self.
  Tensor t = tensor::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).t();
  EXPECT_EQ(vals(t.masked_fill(tensor::tensor({true, false}), 0)), (std::vector<double>{0, 4, 0, 5, 0, 6}));
  // A lazily conjugated complex self: the output holds conj(self) where the mask is false.
  Tensor z = tensor::tensor({1.0, 2.0}, kFloat64).to(kComplex128) +
             tensor::tensor({3.0, -4.0}, kFloat64).to(kComplex128) * std::complex<double>(0, 1);
  Tensor c = z.conj().masked_fill(tensor::tensor({false, true}), 9);
  EXPECT_FALSE(c.is_conj());
  EXPECT_EQ(vals(c.real()), (std::vector<double>{1, 9}));
  EXPECT_EQ(vals(c.imag()), (std::vector<double>{-3, 0}));
  // The mask is self (a bool tensor): self is left alone.
  Tensor bsel = tensor::tensor({true, false, true});
  Tensor br = bsel.masked_fill(bsel, false);
  EXPECT_EQ(vals(br), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(vals(bsel), (std::vector<double>{1, 0, 1}));
}

TEST(MaskedFill, Errors) {
  Tensor x = zeros({2, 3});
  expect_error([&] { x.masked_fill(tensor::tensor({1, 0, 1}), 1); }, {"masked_fill", "bool", "int64"});
  expect_error(
      [&] {
        x.masked_fill_(ones({2, 2, 3}, TensorOptions(kBool)), 1);
      },
      {"masked_fill_", "[2, 2, 3]", "[2, 3]"});
  expect_error([&] { x.masked_fill(ones({4}, TensorOptions(kBool)), 1); }, {"masked_fill", "[4]", "[2, 3]"});
}

TEST(MaskedSelect, Values) {
  Tensor x = tensor::tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor r = x.masked_select(tensor::tensor({{true, false, true}, {false, true, false}}));
  EXPECT_EQ(shape(r), (std::vector<int64_t>{3}));
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(ivals(masked_select(x, tensor::tensor({false, true, true}))), (std::vector<int64_t>{2, 3, 5, 6}));
  EXPECT_EQ(ivals(x.t().masked_select(tensor::tensor({{true, false}, {false, true}, {true, true}}))),
            (std::vector<int64_t>{1, 5, 3, 6}));
  // Self broadcast against a bigger mask.
  EXPECT_EQ(ivals(tensor::tensor({7, 8}).masked_select(tensor::tensor({{true, false}, {true, true}}))),
            (std::vector<int64_t>{7, 7, 8}));
  Tensor h = tensor::tensor({0.5, 1.5}).to(kFloat16).masked_select(tensor::tensor({false, true}));
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(vals(h), (std::vector<double>{1.5}));
  EXPECT_EQ(shape(empty({0, 3}).masked_select(ones({3}, TensorOptions(kBool)))), (std::vector<int64_t>{0}));
  expect_error([&] { x.masked_select(tensor::tensor({1, 0, 1})); }, {"masked_select", "bool"});
  expect_error(
      [&] {
        empty({2, 3}, TensorOptions(kMeta)).masked_select(ones({3}, TensorOptions(kBool).device(kMeta)));
      },
      {"masked_select", "meta"});
}

// ---------------------------------------------------------------- nonzero, where

TEST(Nonzero, Values) {
  Tensor x = tensor::tensor({{0, 1, 0}, {2, 0, 3}});
  Tensor nz = x.nonzero();
  EXPECT_EQ(nz.dtype(), kInt64);
  EXPECT_EQ(shape(nz), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ivals(nz), (std::vector<int64_t>{0, 1, 1, 0, 1, 2}));
  EXPECT_EQ(ivals(nonzero(x.t())), (std::vector<int64_t>{0, 1, 1, 0, 2, 1}));
  EXPECT_EQ(shape(scalar_tensor(5).nonzero()), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(shape(scalar_tensor(0).nonzero()), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(shape(empty({0, 3}).nonzero()), (std::vector<int64_t>{0, 2}));
  // NaN is nonzero, -0.0 is zero.
  Tensor f = tensor::tensor({0.0, -0.0, std::numeric_limits<double>::quiet_NaN(), 1.5});
  EXPECT_EQ(ivals(f.nonzero()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ivals(tensor::tensor({false, true, true}).nonzero()), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ivals(tensor::tensor({0.0, 2.0}).to(kFloat16).nonzero()), (std::vector<int64_t>{1}));
  expect_error([&] { empty({2}, TensorOptions(kMeta)).nonzero(); }, {"nonzero", "meta"});
}

TEST(Nonzero, WhereSingleArgument) {
  std::vector<Tensor> w = where(tensor::tensor({{true, false}, {false, true}, {true, true}}));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(ivals(w[0]), (std::vector<int64_t>{0, 1, 2, 2}));
  EXPECT_EQ(ivals(w[1]), (std::vector<int64_t>{0, 1, 0, 1}));
  std::vector<Tensor> w0 = where(scalar_tensor(true));
  ASSERT_EQ(w0.size(), 1u);
  EXPECT_EQ(ivals(w0[0]), (std::vector<int64_t>{0}));
}

// ---------------------------------------------------------------- cat, stack

TEST(Cat, ValuesAndPromotion) {
  Tensor a = tensor::tensor({{1, 2}, {3, 4}});
  Tensor b = tensor::tensor({{5.5, 6.5}});
  Tensor r = cat({a, b}, 0);
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_EQ(shape(r), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(vals(r), (std::vector<double>{1, 2, 3, 4, 5.5, 6.5}));
  Tensor c = tensor::tensor({{7}, {8}});
  EXPECT_EQ(ivals(cat({a, c}, 1)), (std::vector<int64_t>{1, 2, 7, 3, 4, 8}));
  EXPECT_EQ(ivals(cat({a, c}, -1)), (std::vector<int64_t>{1, 2, 7, 3, 4, 8}));
  // Non-contiguous inputs: a transpose, an expand, a strided slice.
  Tensor t = a.t();                                        // [[1,3],[2,4]]
  Tensor e = tensor::tensor({9, 10}).expand({2, 2});       // [[9,10],[9,10]]
  Tensor s = arange(8).reshape({2, 4}).slice(1, 0, 4, 2);  // [[0,2],[4,6]]
  EXPECT_EQ(ivals(cat({t, e, s}, 1)), (std::vector<int64_t>{1, 3, 9, 10, 0, 2, 2, 4, 9, 10, 4, 6}));
  EXPECT_EQ(ivals(cat({t, e, s}, 0)), (std::vector<int64_t>{1, 3, 2, 4, 9, 10, 9, 10, 0, 2, 4, 6}));
  // bool + int64 -> int64; float16 stays float16.
  EXPECT_EQ(cat({tensor::tensor({true}), tensor::tensor({2})}).dtype(), kInt64);
  Tensor h = cat({ones({1}, TensorOptions(kFloat16)), zeros({2}, TensorOptions(kFloat16))});
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(vals(h), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(cat({ones({1}, TensorOptions(kFloat16)), zeros({1}, TensorOptions(kFloat64))}).dtype(), kFloat64);
}

TEST(Cat, EmptyAndLegacy) {
  Tensor a = tensor::tensor({{1, 2}, {3, 4}});
  // Legacy [0] tensors are skipped whatever the rank of the others.
  Tensor r = cat({empty({0}, TensorOptions(kInt64)), a, empty({0}, TensorOptions(kInt64))}, 1);
  EXPECT_EQ(shape(r), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivals(r), (std::vector<int64_t>{1, 2, 3, 4}));
  // Zero-size pieces along the cat dim.
  EXPECT_EQ(ivals(cat({empty({2, 0}, TensorOptions(kInt64)), a}, 1)), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(shape(cat({empty({0, 3}), empty({0, 3})}, 1)), (std::vector<int64_t>{0, 6}));
  EXPECT_EQ(shape(cat({empty({0}), empty({0})})), (std::vector<int64_t>{0}));
  Tensor m = cat({empty({2, 3}, TensorOptions(kMeta)), empty({2, 5}, TensorOptions(kMeta))}, 1);
  EXPECT_TRUE(m.is_meta());
  EXPECT_EQ(shape(m), (std::vector<int64_t>{2, 8}));
}

TEST(Cat, LargeMatchesReference) {
  Tensor a = random_tensor({64, 300}, 4, -10.0, 10.0), b = random_tensor({64, 212}, 5, -10.0, 10.0);
  std::vector<double> av = vals(a), bv = vals(b), rv = vals(cat({a, b}, 1));
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 300; ++j) ASSERT_EQ(rv[i * 512 + j], av[i * 300 + j]);
    for (int64_t j = 0; j < 212; ++j) ASSERT_EQ(rv[i * 512 + 300 + j], bv[i * 212 + j]);
  }
}

TEST(Cat, Errors) {
  expect_error([&] { cat({scalar_tensor(1), scalar_tensor(2)}); }, {"cat", "zero-dimensional", "position 0"});
  expect_error(
      [&] {
        cat({zeros({2, 3}), zeros({2, 4})}, 0);
      },
      {"cat", "dim 0", "expected size 3 but got size 4", "tensor number 1", "[2, 3]", "[2, 4]"});
  expect_error([&] { cat({zeros({2, 3}), zeros({2})}, 0); }, {"cat", "same number of dims", "[2, 3]", "[2]"});
  expect_error([&] { cat({zeros({2, 3})}, 2); }, {"cat", "dim 2"});
  expect_error([&] { cat(std::vector<Tensor>{}); }, {"cat", "non-empty"});
}

TEST(Stack, Values) {
  Tensor a = tensor::tensor({1, 2}), b = tensor::tensor({3, 4});
  Tensor r0 = stack({a, b});
  EXPECT_EQ(shape(r0), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivals(r0), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(ivals(stack({a, b}, 1)), (std::vector<int64_t>{1, 3, 2, 4}));
  EXPECT_EQ(ivals(stack({a, b}, -1)), (std::vector<int64_t>{1, 3, 2, 4}));
  Tensor s = stack({scalar_tensor(1.0), scalar_tensor(2.0)});
  EXPECT_EQ(shape(s), (std::vector<int64_t>{2}));
  Tensor x = grid34();
  Tensor st = stack({x.t(), x.t()}, 1);  // [4, 2, 3]
  EXPECT_EQ(shape(st), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(ivals(st.select(0, 1)), (std::vector<int64_t>{1, 5, 9, 1, 5, 9}));
  EXPECT_EQ(shape(stack({empty({0}), empty({0})})), (std::vector<int64_t>{2, 0}));
  expect_error([&] { stack({zeros({2, 3}), zeros({2, 4})}); }, {"stack", "[2, 3]", "[2, 4]", "entry 1"});
  expect_error([&] { stack({zeros({2})}, 2); }, {"stack", "dim 2"});
}

// ---------------------------------------------------------------- split, chunk

TEST(Split, ViewsAndSizes) {
  Tensor x = arange(5);
  std::vector<Tensor> p = x.split(2);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(ivals(p[0]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ivals(p[2]), (std::vector<int64_t>{4}));
  p[1].fill_(-1);  // views share storage
  EXPECT_EQ(ivals(x), (std::vector<int64_t>{0, 1, -1, -1, 4}));
  std::vector<Tensor> q = split(arange(5), std::vector<int64_t>{1, 0, 4});
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(shape(q[1]), (std::vector<int64_t>{0}));
  EXPECT_EQ(ivals(q[2]), (std::vector<int64_t>{1, 2, 3, 4}));
  std::vector<Tensor> cols = grid34().split(3, -1);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(ivals(cols[1]), (std::vector<int64_t>{3, 7, 11}));
  EXPECT_EQ(arange(3).split(5).size(), 1u);
  EXPECT_EQ(empty({0}).split(2).size(), 1u);
  EXPECT_EQ(empty({0}).split(0).size(), 1u);
  expect_error([&] { arange(5).split(0); }, {"split", "size 5"});
  expect_error([&] { split(arange(5), std::vector<int64_t>{2, 2}); }, {"split", "sum to 4", "size 5"});
  expect_error([&] { scalar_tensor(1).split(1); }, {"split", "0-dim"});
}

TEST(Split, Chunk) {
  std::vector<Tensor> c = arange(5).chunk(3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(shape(c[0]), (std::vector<int64_t>{2}));
  EXPECT_EQ(ivals(c[2]), (std::vector<int64_t>{4}));
  // As PyTorch, chunk may return fewer pieces than asked.
  EXPECT_EQ(arange(6).chunk(4).size(), 3u);
  std::vector<Tensor> rows = chunk(grid34(), 3, 0);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(ivals(rows[1]), (std::vector<int64_t>{4, 5, 6, 7}));
  std::vector<Tensor> e = empty({0, 2}).chunk(3);
  EXPECT_EQ(e.size(), 3u);
  expect_error([&] { arange(5).chunk(0); }, {"chunk", "greater than 0"});
}

// ---------------------------------------------------------------- Tensor::index (basic)

namespace {
// x[i][j][k] = 12i + 4j + k.
Tensor grid234() { return arange(24).reshape({2, 3, 4}); }
}  // namespace

TEST(Index, BasicViews) {
  Tensor x = grid234();
  Tensor a = x.index({1});
  EXPECT_EQ(shape(a), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ivals(a)[0], 12);
  EXPECT_EQ(a.data_ptr<int64_t>(), x.data_ptr<int64_t>() + 12);  // a view
  EXPECT_EQ(ivals(x.index({Slice(), 1})), (std::vector<int64_t>{4, 5, 6, 7, 16, 17, 18, 19}));
  EXPECT_EQ(ivals(x.index({Ellipsis, 2})), (std::vector<int64_t>{2, 6, 10, 14, 18, 22}));
  EXPECT_EQ(ivals(x.index({"...", -1})), (std::vector<int64_t>{3, 7, 11, 15, 19, 23}));
  EXPECT_EQ(shape(x.index({None, 0})), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(shape(x.index({Slice(), None, Ellipsis, None})), (std::vector<int64_t>{2, 1, 3, 4, 1}));
  Tensor b = x.index({0, Slice(1, std::nullopt, 2)});
  EXPECT_EQ(shape(b), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(ivals(b), (std::vector<int64_t>{4, 5, 6, 7}));
  Tensor c = x.index({Slice(), Slice(-2), Slice(std::nullopt, std::nullopt, 3)});
  EXPECT_EQ(shape(c), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(ivals(c), (std::vector<int64_t>{4, 7, 8, 11, 16, 19, 20, 23}));
  EXPECT_EQ(x.index({1, 2, 3}).dim(), 0);
  EXPECT_EQ(x.index({1, 2, 3}).item<int64_t>(), 23);
  EXPECT_EQ(x.index({-1, -3, -4}).item<int64_t>(), 12);
  // A 0-dim integer tensor behaves as an integer (still a view).
  Tensor d = x.index({scalar_tensor(1)});
  EXPECT_EQ(d.data_ptr<int64_t>(), x.data_ptr<int64_t>() + 12);
  // Ellipsis alone gives a new view of the whole tensor; writes through it reach x.
  Tensor all = x.index({Ellipsis});
  EXPECT_FALSE(all.is_same(x));
  all.index({0, 0, 0}).fill_(100);
  EXPECT_EQ(ivals(x)[0], 100);
  // Views of a transposed tensor.
  EXPECT_EQ(ivals(grid34().t().index({Slice(1, 3), 2})), (std::vector<int64_t>{9, 10}));
}

TEST(Index, BasicErrors) {
  Tensor x = grid234();
  expect_error([&] { x.index({2}); }, {"index", "index 2", "dim 0", "size 2"});
  expect_error([&] { x.index({Slice(), -4}); }, {"index", "index -4", "dim 1", "size 3"});
  expect_error([&] { x.index({0, 0, 0, 0}); }, {"index", "too many indices", "dimension 3"});
  expect_error([&] { x.index({Ellipsis, 0, Ellipsis}); }, {"index", "single ellipsis"});
  expect_error([&] { x.index({Slice(0, 2, 0)}); }, {"index", "step"});
  expect_error(
      [&] {
        TensorIndex bad("..x");
        (void)bad;
      },
      {"TensorIndex", "..x"});
  expect_error([&] { x.index(std::vector<TensorIndex>{}); }, {"index", "empty"});
}

// ---------------------------------------------------------------- Tensor::index (advanced)

TEST(Index, IntegerTensors) {
  Tensor x = grid234();
  Tensor a = x.index({tensor::tensor({1, 0, -1})});
  EXPECT_EQ(shape(a), (std::vector<int64_t>{3, 3, 4}));
  std::vector<int64_t> av = ivals(a);
  for (int64_t k = 0; k < 12; ++k) {
    EXPECT_EQ(av[k], 12 + k);
    EXPECT_EQ(av[12 + k], k);
    EXPECT_EQ(av[24 + k], 12 + k);
  }
  a.fill_(0);  // a copy: x is unchanged
  EXPECT_EQ(ivals(x)[12], 12);
  Tensor b = x.index({Slice(), tensor::tensor({2, 0}).to(kInt32)});
  EXPECT_EQ(shape(b), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(ivals(b), (std::vector<int64_t>{8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15}));
  // Separated by a slice: the broadcast index dims go first.
  Tensor c = x.index({tensor::tensor({0, 1}), Slice(), tensor::tensor({3, 0})});
  EXPECT_EQ(shape(c), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ivals(c), (std::vector<int64_t>{3, 7, 11, 12, 16, 20}));
  // Adjacent and broadcast together ([2, 1] with [2]): they stay in place.
  Tensor d = x.index({Slice(), tensor::tensor({{0}, {2}}), tensor::tensor({1, 3})});
  EXPECT_EQ(shape(d), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(ivals(d), (std::vector<int64_t>{1, 3, 9, 11, 13, 15, 21, 23}));
  // An integer is applied first as a select (PyTorch, unlike NumPy): [3, 2], not [2, 3].
  Tensor e = x.index({0, Slice(), tensor::tensor({1, 2})});
  EXPECT_EQ(shape(e), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ivals(e), (std::vector<int64_t>{1, 2, 5, 6, 9, 10}));
  // A 2-D index tensor on a transposed input.
  Tensor xt = x.transpose(0, 2);  // [4, 3, 2], xt[k][j][i] = x[i][j][k]
  Tensor f = xt.index({tensor::tensor({3, 0}), tensor::tensor({1, 2})});
  EXPECT_EQ(shape(f), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivals(f), (std::vector<int64_t>{7, 19, 8, 20}));
  Tensor g = x.index({tensor::tensor({{1, 1}, {0, 1}}), 2});
  EXPECT_EQ(shape(g), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(ivals(g.index({1, 0})), (std::vector<int64_t>{8, 9, 10, 11}));
  // Expanded (stride 0) input, empty index, float16 and bool data.
  Tensor ex = tensor::tensor({1.5, 2.5}).to(kFloat16).expand({3, 2});
  EXPECT_EQ(vals(ex.index({tensor::tensor({2, 0}), tensor::tensor({1, 0})})), (std::vector<double>{2.5, 1.5}));
  EXPECT_EQ(shape(x.index({empty({0}, TensorOptions(kInt64))})), (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(vals(tensor::tensor({true, false}).index({tensor::tensor({1, 1, 0})})), (std::vector<double>{0, 0, 1}));
}

TEST(Index, LargeMatchesReference) {
  Tensor x = random_tensor({300, 257}, 6, -10.0, 10.0);
  Tensor idx = random_index(200, 257, 9);
  std::vector<double> xv = vals(x), rv = vals(x.index({Slice(), idx}));
  std::vector<int64_t> iv = ivals(idx);
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 200; ++j) ASSERT_EQ(rv[i * 200 + j], xv[i * 257 + iv[j]]);
}

TEST(Index, BoolMasks) {
  Tensor x = grid234();
  Tensor m = tensor::tensor({{true, false, true}, {false, false, true}});
  Tensor a = x.index({m});
  EXPECT_EQ(shape(a), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ivals(a), (std::vector<int64_t>{0, 1, 2, 3, 8, 9, 10, 11, 20, 21, 22, 23}));
  Tensor b = x.index({Slice(), tensor::tensor({false, true, true})});
  EXPECT_EQ(shape(b), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(ivals(b.index({1, 0})), (std::vector<int64_t>{16, 17, 18, 19}));
  // A mask followed by a slice: the slice applies to the dim after the mask's dims.
  Tensor c = x.index({m, Slice(1, 3)});
  EXPECT_EQ(shape(c), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ivals(c), (std::vector<int64_t>{1, 2, 9, 10, 21, 22}));
  // The mask of a comparison.
  EXPECT_EQ(ivals(x.index({x > 20})), (std::vector<int64_t>{21, 22, 23}));
  // bool scalars add a dim of size 1 (true) or 0 (false).
  EXPECT_EQ(shape(x.index({true})), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(shape(x.index({false})), (std::vector<int64_t>{0, 2, 3, 4}));
  EXPECT_EQ(shape(x.index({0, true})), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(shape(x.index({scalar_tensor(false)})), (std::vector<int64_t>{0, 2, 3, 4}));
  // A mask over dims 1..2 broadcast with an integer index on dim 0 (two true entries).
  Tensor m12 = tensor::tensor({{false, true, false, false}, {false, false, false, false}, {false, false, false, true}});
  EXPECT_EQ(ivals(x.index({tensor::tensor({1, 0}), m12})), (std::vector<int64_t>{13, 11}));
  // A mask and an integer index separated by a slice: the index dims go first.
  Tensor sep = x.index({tensor::tensor({true, false}), Slice(), tensor::tensor({3})});
  EXPECT_EQ(shape(sep), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ivals(sep), (std::vector<int64_t>{3, 7, 11}));
  // Transposed data, and a transposed (non-contiguous) mask.
  Tensor mt = tensor::tensor({{true, false, false}, {false, false, true}, {false, false, false}, {false, true, false}});
  EXPECT_EQ(ivals(grid34().t().index({mt})), (std::vector<int64_t>{0, 9, 7}));
  EXPECT_EQ(ivals(grid34().index({mt.t()})), (std::vector<int64_t>{0, 7, 9}));
  // uint8 masks act as bool masks.
  EXPECT_EQ(ivals(grid34().index({Slice(), tensor::tensor({0, 1, 0, 1}).to(kUInt8)})),
            (std::vector<int64_t>{1, 3, 5, 7, 9, 11}));
  // All-false mask.
  EXPECT_EQ(shape(x.index({zeros({2, 3}, TensorOptions(kBool))})), (std::vector<int64_t>{0, 4}));
}

TEST(Index, AdvancedErrorsAndMeta) {
  Tensor x = grid234();
  expect_error([&] { x.index({Slice(), tensor::tensor({3})}); }, {"index", "index 3", "dim 1", "size 3"});
  expect_error([&] { x.index({tensor::tensor({-3})}); }, {"index", "index -3", "dim 0", "size 2"});
  expect_error([&] { x.index({tensor::tensor({0.0})}); }, {"index", "float32"});
  expect_error([&] { x.index({tensor::tensor({true, false, true})}); }, {"index", "mask", "[3]", "[2, 3, 4]"});
  expect_error(
      [&] {
        x.index({tensor::tensor({0, 1}), tensor::tensor({0, 1, 2})});
      },
      {"index", "shape mismatch", "[2]", "[3]"});
  Tensor meta = empty({5, 6, 7}, TensorOptions(kMeta));
  Tensor r = meta.index({Slice(), tensor::tensor({{0, 1, 2}})});
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(shape(r), (std::vector<int64_t>{5, 1, 3, 7}));
  EXPECT_EQ(shape(meta.index({tensor::tensor({0}), Slice(), tensor::tensor({1, 2})})), (std::vector<int64_t>{2, 6}));
  expect_error([&] { meta.index({ones({5}, TensorOptions(kBool).device(kMeta))}); }, {"index", "meta"});
}

// ---------------------------------------------------------------- index_put_

TEST(IndexPut, BasicAndAdvanced) {
  Tensor y = grid234();
  uint32_t v0 = y._version();
  y.index_put_({Slice(), 1}, 7);
  EXPECT_GT(y._version(), v0);
  std::vector<int64_t> yv = ivals(y);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(yv[i * 12 + 4 + k], 7);
  EXPECT_EQ(yv[0], 0);
  // Broadcast tensor value into a view; a different dtype is converted (copy_ semantics).
  y.index_put_({0}, tensor::tensor({1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(ivals(y.index({0})), (std::vector<int64_t>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
  // Advanced: separated indices, value shaped like the result [2, 3].
  Tensor z = grid234();
  z.index_put_({tensor::tensor({0, 1}), Slice(), tensor::tensor({3, 0})},
               tensor::tensor({{100, 101, 102}, {200, 201, 202}}));
  std::vector<int64_t> zv = ivals(z);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(zv[4 * j + 3], 100 + j);
    EXPECT_EQ(zv[12 + 4 * j], 200 + j);
    EXPECT_EQ(zv[4 * j + 2], 4 * j + 2);
  }
  // Mask with a scalar (x[x > 20] = -1) and negative integer-tensor indices.
  Tensor w = grid234();
  w.index_put_({w > 20}, -1);
  w.index_put_({-1, tensor::tensor({-3})}, tensor::tensor({{50, 51, 52, 53}}));
  std::vector<int64_t> wv = ivals(w);
  EXPECT_EQ(std::vector<int64_t>(wv.begin() + 12, wv.begin() + 16), (std::vector<int64_t>{50, 51, 52, 53}));
  EXPECT_EQ(std::vector<int64_t>(wv.begin() + 20, wv.end()), (std::vector<int64_t>{20, -1, -1, -1}));
  // Leading size-1 dims of the value are ignored.
  Tensor u = zeros({2, 3, 4});
  u.index_put_({tensor::tensor({1})}, ones({1, 1, 3, 4}));
  std::vector<double> uv = vals(u);
  EXPECT_EQ(uv[0], 0.0);
  EXPECT_EQ(uv[12], 1.0);
  EXPECT_EQ(uv[23], 1.0);
  // Through a transposed view, and float16 / bool data.
  Tensor base = zeros({3, 2});
  Tensor tv = base.t();
  tv.index_put_({tensor::tensor({1}), tensor::tensor({2})}, 5.0);
  EXPECT_EQ(vals(base), (std::vector<double>{0, 0, 0, 0, 0, 5}));
  Tensor h = zeros({3}, TensorOptions(kFloat16));
  h.index_put_({tensor::tensor({true, false, true})}, 0.5);
  EXPECT_EQ(vals(h), (std::vector<double>{0.5, 0, 0.5}));
  Tensor bb = zeros({3}, TensorOptions(kBool));
  bb.index_put_({tensor::tensor({2})}, true);
  EXPECT_EQ(vals(bb), (std::vector<double>{0, 0, 1}));
  // A mask through a transposed view, and an int32 index.
  Tensor g = grid34();
  g.t().index_put_(
      {tensor::tensor({{true, false, false}, {false, false, true}, {false, false, false}, {false, true, false}})}, -5);
  g.index_put_({tensor::tensor({2}).to(kInt32), 0}, 99);
  std::vector<int64_t> gv = ivals(g);
  EXPECT_EQ(gv[0], -5);
  EXPECT_EQ(gv[9], -5);
  EXPECT_EQ(gv[7], -5);
  EXPECT_EQ(gv[8], 99);
  EXPECT_EQ(gv[1], 1);
  // x[False] = v writes nothing.
  Tensor n = zeros({2});
  n.index_put_({false}, 3.0);
  EXPECT_EQ(vals(n), (std::vector<double>{0, 0}));
}

TEST(IndexPut, Errors) {
  Tensor y = grid234();
  expect_error([&] { y.index_put_({tensor::tensor({0})}, ones({3, 4})); }, {"index_put_", "int64", "float32"});
  expect_error([&] { y.index_put_({tensor::tensor({2})}, 1); }, {"index_put_", "index 2", "dim 0", "size 2"});
  expect_error(
      [&] {
        y.index_put_({tensor::tensor({0, 1})}, zeros({3, 3, 4}, TensorOptions(kInt64)));
      },
      {"index_put_", "[3, 3, 4]", "[2, 3, 4]"});
  expect_error([&] { y.index_put_({0}, zeros({5})); }, {"index_put_", "[5]", "[3, 4]"});
  EXPECT_EQ(ivals(y)[12], 12);
  Tensor e = zeros({3}).expand({2, 3});
  expect_error([&] { e.index_put_({tensor::tensor({0})}, 1.0); }, {"index_put_", "single memory location"});
}

// ---------------------------------------------------------------- meta tensors

TEST(IndexMeta, ShapesOnly) {
  TensorOptions meta = TensorOptions(kFloat32).device(kMeta);
  Tensor x = empty({3, 4}, meta);
  Tensor a = x.index_select(1, tensor::tensor({0, 2}));
  EXPECT_TRUE(a.is_meta());
  EXPECT_EQ(shape(a), (std::vector<int64_t>{3, 2}));
  Tensor g = x.gather(0, empty({2, 4}, TensorOptions(kInt64).device(kMeta)));
  EXPECT_TRUE(g.is_meta());
  EXPECT_EQ(shape(g), (std::vector<int64_t>{2, 4}));
  Tensor s = x.scatter_add(1, empty({3, 2}, TensorOptions(kInt64).device(kMeta)), empty({3, 2}, meta));
  EXPECT_EQ(shape(s), (std::vector<int64_t>{3, 4}));
  Tensor m = empty({4}, meta).masked_fill(empty({3, 1}, TensorOptions(kBool).device(kMeta)), 1.0);
  EXPECT_TRUE(m.is_meta());
  EXPECT_EQ(shape(m), (std::vector<int64_t>{3, 4}));
  Tensor ia = x.index_add(0, tensor::tensor({2}), empty({1, 4}, meta));
  EXPECT_EQ(shape(ia), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(shape(stack({x, x}, 1)), (std::vector<int64_t>{3, 2, 4}));
  // Shape errors are still raised on meta tensors.
  expect_error([&] { x.index_select(1, tensor::tensor({4})); }, {"index_select", "index 4", "dim 1"});
  expect_error([&] { x.gather(0, empty({2}, TensorOptions(kInt64).device(kMeta))); }, {"gather", "[2]", "[3, 4]"});
}

// Each indexing op's Meta instance is its front end alone (Note [Front ends and backend
// kernels]): the output's shape and dtype, the same checks, and no data touched, so a meta
// tensor of 10^10 elements costs nothing.
TEST(IndexMeta, FrontEndsWithoutData) {
  const TensorOptions meta = TensorOptions(kFloat32).device(kMeta);
  const TensorOptions meta_long = TensorOptions(kInt64).device(kMeta);
  const TensorOptions meta_bool = TensorOptions(kBool).device(kMeta);
  Tensor big = empty({100000, 100000}, meta);
  Tensor d = empty({2, 3, 4}, TensorOptions(kFloat64).device(kMeta));
  auto expect_meta = [](const Tensor& t, const std::vector<int64_t>& sizes, ScalarType dt, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(shape(t), sizes);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_THROW(t.data_ptr(), tensor::Error);
  };
  expect_meta(big.index_select(0, empty({7}, meta_long)), {7, 100000}, kFloat32, "index_select");
  expect_meta(d.index_select(-1, empty({5}, TensorOptions(kInt32).device(kMeta))), {2, 3, 5}, kFloat64,
              "index_select int32");
  expect_meta(big.gather(1, empty({100000, 3}, meta_long)), {100000, 3}, kFloat32, "gather");
  expect_meta(big.scatter(0, empty({2, 2}, meta_long), empty({2, 2}, meta)), {100000, 100000}, kFloat32, "scatter");
  expect_meta(tensor::scatter_add(d, 2, empty({2, 3, 1}, meta_long), empty({2, 3, 1}, d.options())), {2, 3, 4},
              kFloat64, "scatter_add");
  expect_meta(big.scatter_(1, empty({1, 1}, meta_long), empty({1, 1}, meta)), {100000, 100000}, kFloat32, "scatter_");
  expect_meta(d.scatter_add_(0, empty({1, 1, 1}, meta_long), empty({1, 1, 1}, d.options())), {2, 3, 4}, kFloat64,
              "scatter_add_");
  expect_meta(big.index_add(1, empty({3}, meta_long), empty({100000, 3}, meta), 2), {100000, 100000}, kFloat32,
              "index_add");
  expect_meta(d.index_add_(1, empty({2}, meta_long), empty({2, 2, 4}, d.options())), {2, 3, 4}, kFloat64, "index_add_");
  expect_meta(empty({100000}, meta).masked_fill(empty({100000, 1}, meta_bool), 1.5), {100000, 100000}, kFloat32,
              "masked_fill");
  expect_meta(big.masked_fill_(empty({100000}, meta_bool), -1), {100000, 100000}, kFloat32, "masked_fill_");
  Tensor i = empty({100000, 100000}, meta_long);
  expect_meta(i.masked_fill(empty({1}, meta_bool), 3), {100000, 100000}, kInt64, "masked_fill int64");
  // The same checks as on the CPU.
  expect_error([&] { big.index_select(0, empty({2, 2}, meta_long)); }, {"index_select", "1-D", "[2, 2]"});
  expect_error([&] { big.gather(0, empty({2}, meta_long)); }, {"gather", "[2]", "[100000, 100000]"});
  expect_error([&] { big.scatter_(0, empty({1, 1}, meta_long), empty({1, 1}, meta_long)); }, {"scatter_", "same dtype"});
  expect_error([&] { i.index_add_(0, empty({1}, meta_long), empty({1, 100000}, meta_long), 0.5); },
               {"index_add_", "alpha"});
  expect_error([&] { big.masked_fill(empty({3}, meta_bool), 0); }, {"masked_fill", "cannot be broadcast"});
  expect_error([&] { big.masked_fill_(empty({100000}, meta), 0); }, {"masked_fill_", "bool mask"});
  // The output sizes of masked_select and nonzero depend on the data: their Meta instances raise.
  expect_error([&] { big.masked_select(empty({1}, meta_bool)); }, {"masked_select", "meta"});
  expect_error([&] { big.nonzero(); }, {"nonzero", "meta"});
}

TEST(IndexMeta, CatStackWithoutData) {
  const TensorOptions meta = TensorOptions(kFloat32).device(kMeta);
  Tensor big = empty({100000, 100000}, meta);
  Tensor h = empty({100000, 3}, TensorOptions(kFloat16).device(kMeta));
  auto expect_meta = [](const Tensor& t, const std::vector<int64_t>& sizes, ScalarType dt, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(shape(t), sizes);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_THROW(t.data_ptr(), tensor::Error);
  };
  expect_meta(cat({big, h}, 1), {100000, 100003}, kFloat32, "cat promotes");
  expect_meta(cat({empty({0}, TensorOptions(kFloat64).device(kMeta)), h}, -1), {100000, 3}, kFloat64,
              "cat legacy empty");
  expect_meta(stack({h, h, h}, 1), {100000, 3, 3}, kFloat16, "stack");
  expect_error([&] { cat({big, empty({3}, meta)}, 0); }, {"cat", "same number of dims"});
  expect_error([&] { stack({big, h}, 0); }, {"stack", "equal size"});
}

TEST(IndexMeta, ClampWhereWithoutData) {
  const TensorOptions meta = TensorOptions(kFloat32).device(kMeta);
  Tensor big = empty({100000, 100000}, meta);
  Tensor i = empty({3, 1}, TensorOptions(kInt32).device(kMeta));
  auto expect_meta = [](const Tensor& t, const std::vector<int64_t>& sizes, ScalarType dt, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(shape(t), sizes);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_THROW(t.data_ptr(), tensor::Error);
  };
  expect_meta(big.clamp(0.25, 0.75), {100000, 100000}, kFloat32, "clamp");
  expect_meta(i.clamp(std::nullopt, 2.5), {3, 1}, kFloat32, "clamp promotes to the bound's kind");
  expect_meta(big.clamp_(-1, 1), {100000, 100000}, kFloat32, "clamp_");
  Tensor out;
  expect_meta(tensor::clamp_out(out, i, 0, 1), {3, 1}, kInt32, "clamp_out allocating");
  Tensor given = empty({3, 1}, meta);
  expect_meta(tensor::clamp_out(given, i, 0.5, std::nullopt), {3, 1}, kFloat32, "clamp_out into a meta tensor");
  expect_meta(tensor::where(empty({100000, 1}, TensorOptions(kBool).device(kMeta)), big, 0), {100000, 100000}, kFloat32,
              "where");
  expect_meta(tensor::where(empty({1, 4}, TensorOptions(kBool).device(kMeta)), i, 2.0), {3, 4}, kFloat32,
              "where promotes");
  // The same checks as on the CPU.
  expect_error([&] { big.clamp(std::nullopt, std::nullopt); }, {"clamp", "at least one of min and max"});
  expect_error([&] { empty({2}, TensorOptions(kComplex64).device(kMeta)).clamp(0, 1); }, {"clamp", "not supported"});
  expect_error([&] { tensor::where(big, big, big); }, {"where", "bool"});
}
