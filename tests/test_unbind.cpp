// unbind (src/ops/JoinOps.cpp): size(dim) select views of the input. Values against hand-written
// results and against select on contiguous, transposed and strided inputs, every dim (negative
// too), size-1 and size-0 dims, storage sharing, gradients (first and second order in float64,
// with every output used and with only some), the multi-output view in-place error
// (Note [Multi-output views]) and bad input.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

#include <functional>
#include <string>
#include <vector>

using namespace tensor;
using tensor::testing::vals;
using autograd::variable_list;
using F = std::function<Tensor(const variable_list&)>;
using tensor::testing::expect_error;
using tensor::testing::multi_output_view_error;
using tensor::testing::random_tensor;

namespace {

// Row-major values of any tensor (any layout), as double.
std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

// Element (i0, i1, ...) of `t` read through its own strides, independently of select.
double at(const Tensor& t, const std::vector<int64_t>& idx) {
  Tensor c = t.to(kFloat64);  // keeps the layout when already float64
  int64_t off = c.storage_offset();
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * c.stride(static_cast<int64_t>(d));
  return c.data_ptr<double>()[off - c.storage_offset()];
}

// Checks unbind(t, dim) against a reference built from t's own strides: piece i at position p
// (over the remaining dims) equals t at p with i inserted at `dim`; and against select.
void check_against_reference(const Tensor& t, int64_t dim, const std::string& what) {
  SCOPED_TRACE(what + " dim " + std::to_string(dim));
  const int64_t nd = t.dim();
  const int64_t d = dim < 0 ? dim + nd : dim;
  std::vector<Tensor> pieces = tensor::unbind(t, dim);
  ASSERT_EQ(static_cast<int64_t>(pieces.size()), t.size(d));
  std::vector<int64_t> want_shape = shape(t);
  want_shape.erase(want_shape.begin() + d);
  for (int64_t i = 0; i < t.size(d); ++i) {
    const Tensor& p = pieces[static_cast<size_t>(i)];
    ASSERT_EQ(shape(p), want_shape) << "piece " << i;
    EXPECT_EQ(vals(p), vals(t.select(d, i))) << "piece " << i << " vs select";
    // Walk the piece's positions in row-major order.
    std::vector<double> got = vals(p);
    std::vector<int64_t> pos(want_shape.size(), 0);
    for (size_t k = 0; k < got.size(); ++k) {
      std::vector<int64_t> full(pos);
      full.insert(full.begin() + d, i);
      EXPECT_EQ(got[k], at(t, full)) << "piece " << i << " element " << k;
      for (int64_t q = static_cast<int64_t>(pos.size()) - 1; q >= 0; --q) {
        if (++pos[static_cast<size_t>(q)] < want_shape[static_cast<size_t>(q)]) break;
        pos[static_cast<size_t>(q)] = 0;
      }
    }
  }
}

using tensor::testing::check;

void check_both(const std::string& name, const F& f, const Tensor& x) {
  SCOPED_TRACE(name);
  EXPECT_TRUE(f({x}).requires_grad()) << name << " records nothing";
  check(name + " gradcheck", [&] { return autograd::gradcheck(f, {x}, 1e-6, 1e-5, 1e-3); });
  check(name + " gradgradcheck", [&] { return autograd::gradgradcheck(f, {x}, 1e-6, 1e-5, 1e-3); });
}

}  // namespace

// ---------------------------------------------------------------- values

TEST(Unbind, HandValues) {
  Tensor x = tensor::arange(6, kFloat64).reshape({2, 3});  // [[0 1 2] [3 4 5]]
  std::vector<Tensor> rows = x.unbind();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(shape(rows[0]), (std::vector<int64_t>{3}));
  EXPECT_EQ(vals(rows[0]), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(vals(rows[1]), (std::vector<double>{3, 4, 5}));
  std::vector<Tensor> cols = tensor::unbind(x, 1);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(vals(cols[0]), (std::vector<double>{0, 3}));
  EXPECT_EQ(vals(cols[1]), (std::vector<double>{1, 4}));
  EXPECT_EQ(vals(cols[2]), (std::vector<double>{2, 5}));
  std::vector<Tensor> neg = x.unbind(-1);
  ASSERT_EQ(neg.size(), 3u);
  EXPECT_EQ(vals(neg[2]), (std::vector<double>{2, 5}));
  // A 1-d tensor gives 0-d pieces.
  std::vector<Tensor> s = tensor::tensor({7, 8, 9}).unbind();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].dim(), 0);
  EXPECT_EQ(s[1].item<int64_t>(), 8);
  EXPECT_EQ(s[2].dtype(), kInt64);
}

TEST(Unbind, EveryDimContiguousAndNot) {
  Tensor base = random_tensor({3, 4, 5}, 1);
  Tensor transposed = random_tensor({5, 4, 3}, 2).permute({2, 1, 0});
  Tensor sliced = random_tensor({6, 4, 11}, 3).slice(0, 1, 6, 2).slice(2, 0, 10, 2);  // [3, 4, 5]
  Tensor swapped = random_tensor({4, 3, 5}, 4).transpose(0, 1);
  ASSERT_FALSE(transposed.is_contiguous());
  ASSERT_FALSE(sliced.is_contiguous());
  ASSERT_FALSE(swapped.is_contiguous());
  for (const auto& [t, name] : std::vector<std::pair<Tensor, std::string>>{
           {base, "contiguous"}, {transposed, "transposed"}, {sliced, "sliced"}, {swapped, "swapped"}}) {
    ASSERT_EQ(shape(t), (std::vector<int64_t>{3, 4, 5})) << name;
    for (int64_t dim = -3; dim < 3; ++dim) check_against_reference(t, dim, name);
  }
  // Other dtypes: the pieces keep the dtype and the values.
  Tensor ints = tensor::arange(12).reshape({3, 4}).t();
  std::vector<Tensor> ip = ints.unbind(1);
  ASSERT_EQ(ip.size(), 3u);
  EXPECT_EQ(ip[2].dtype(), kInt64);
  EXPECT_EQ(vals(ip[2]), (std::vector<double>{8, 9, 10, 11}));
  std::vector<Tensor> fp = tensor::arange(6, kFloat32).reshape({3, 2}).unbind(-2);
  EXPECT_EQ(fp[1].dtype(), kFloat32);
  EXPECT_EQ(vals(fp[1]), (std::vector<double>{2, 3}));
}

TEST(Unbind, SizeOneAndSizeZeroDims) {
  Tensor x = random_tensor({1, 3}, 5);
  std::vector<Tensor> one = x.unbind(0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(vals(one[0]), vals(x));
  EXPECT_EQ(shape(one[0]), (std::vector<int64_t>{3}));
  EXPECT_EQ(tensor::unbind(x, 1).size(), 3u);
  EXPECT_EQ(shape(x.unbind(1)[0]), (std::vector<int64_t>{1}));

  Tensor e = tensor::empty({2, 0, 3}, kFloat64);
  EXPECT_TRUE(e.unbind(1).empty());
  EXPECT_TRUE(e.unbind(-2).empty());
  std::vector<Tensor> e0 = e.unbind(0);
  ASSERT_EQ(e0.size(), 2u);
  EXPECT_EQ(shape(e0[1]), (std::vector<int64_t>{0, 3}));
  std::vector<Tensor> e2 = e.unbind(2);
  ASSERT_EQ(e2.size(), 3u);
  EXPECT_EQ(shape(e2[0]), (std::vector<int64_t>{2, 0}));
  EXPECT_TRUE(tensor::empty({0}, kFloat64).unbind().empty());
}

TEST(Unbind, PiecesAreViewsSharingStorage) {
  Tensor x = tensor::zeros({3, 4}, kFloat64);
  std::vector<Tensor> cols = x.unbind(1);
  ASSERT_EQ(cols.size(), 4u);
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(cols[static_cast<size_t>(j)].data_ptr<double>(), x.data_ptr<double>() + j) << j;
    EXPECT_EQ(cols[static_cast<size_t>(j)].stride(0), 4);
  }
  // x does not require grad: writing into the pieces works and changes x.
  cols[1].fill_(5.0);
  cols[3].add_(tensor::tensor({1.0, 2.0, 3.0}, kFloat64));
  EXPECT_EQ(vals(x), (std::vector<double>{0, 5, 0, 1, 0, 5, 0, 2, 0, 5, 0, 3}));
  // And the other way round: writing the base shows in the pieces.
  x.select(0, 2).fill_(-1.0);
  EXPECT_EQ(vals(cols[0]), (std::vector<double>{0, 0, -1}));
  // A piece of a plain tensor written with a value that requires grad: the base starts
  // requiring grad (CopySlices), as for split/chunk.
  Tensor plain = tensor::zeros({2, 2}, kFloat64);
  std::vector<Tensor> rows = plain.unbind();
  Tensor w = tensor::tensor({3.0, 4.0}, TensorOptions(kFloat64).requires_grad(true));
  rows[1].copy_(w);
  EXPECT_TRUE(plain.requires_grad());
  EXPECT_EQ(vals(plain), (std::vector<double>{0, 0, 3, 4}));
  (plain * plain).sum().backward();
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{6, 8}));
}

// ---------------------------------------------------------------- autograd

TEST(Unbind, GradientHandValues) {
  // Only the pieces used get gradient; the others are zero (libtorch stacks zeros for them).
  Tensor x = tensor::arange(6, kFloat64).reshape({2, 3}).requires_grad_();
  std::vector<Tensor> cols = x.unbind(1);
  ASSERT_TRUE(cols[0].requires_grad());
  (cols[2] * cols[2] + 3 * cols[0]).sum().backward();
  // d/dx[:,0] = 3, d/dx[:,1] = 0, d/dx[:,2] = 2 x[:,2] = [4, 10]
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 0, 4, 3, 0, 10}));
  // No piece used at all: the gradient of x is not reached through unbind.
  Tensor y = tensor::ones({2}, kFloat64).requires_grad_();
  Tensor z = y.unbind()[0] * 0 + y.sum();
  z.backward();
  EXPECT_EQ(vals(y.grad()), (std::vector<double>{1, 1}));
}

TEST(Unbind, GradcheckAllPiecesWeighted) {
  for (bool noncontig : {false, true}) {
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      Tensor x = noncontig ? random_tensor({4, 3, 2}, 10).permute({2, 1, 0}) : random_tensor({2, 3, 4}, 11);
      x = x.detach().requires_grad_();
      // sum_i (i + 1) * p_i^2 + p_0 * p_last: nonlinear so the second order check sees unbind too.
      F f = [dim](const variable_list& v) {
        std::vector<Tensor> p = v[0].unbind(dim);
        Tensor acc = p[0] * p.back();
        for (size_t i = 0; i < p.size(); ++i) acc = acc + static_cast<double>(i + 1) * p[i] * p[i];
        return acc.sum();
      };
      check_both(std::string(noncontig ? "noncontiguous" : "contiguous") + " dim " + std::to_string(dim), f, x);
    }
  }
}

TEST(Unbind, GradcheckSomePiecesUnused) {
  Tensor x = random_tensor({5, 3}, 20).t().detach().requires_grad_();  // [3, 5], non-contiguous
  // Only pieces 1 and 3 of 5 are used: the others must get zero gradient.
  F f = [](const variable_list& v) {
    std::vector<Tensor> p = v[0].unbind(-1);
    return p[1] * p[3] + p[3].sin();
  };
  check_both("pieces 1 and 3 of dim -1", f, x);
  // The analytic gradient puts zeros in the unused columns.
  Tensor g = autograd::grad({f({x}).sum()}, {x})[0];
  for (int64_t j : {0, 2, 4}) EXPECT_EQ(vals(g.select(1, j)), (std::vector<double>{0, 0, 0})) << j;
  Tensor xd = x.detach();
  EXPECT_EQ(vals(g.select(1, 1)), vals(xd.select(1, 3)));
  // Stacking the pieces back is the identity, so its gradient is the incoming one.
  F restack = [](const variable_list& v) { return tensor::stack(v[0].unbind(1), 1) * v[0]; };
  check_both("stack(unbind) * x", restack, x);
  // A 1-d input: 0-d pieces.
  Tensor v1 = random_tensor({4}, 21).requires_grad_();
  F scalars = [](const variable_list& v) {
    std::vector<Tensor> p = v[0].unbind();
    return p[0] * p[2] * p[2];
  };
  check_both("0-d pieces", scalars, v1);
}

// ---------------------------------------------------------------- Note [Multi-output views]

TEST(Unbind, InplaceOnPieceRaisesWhenBaseRequiresGrad) {
  Tensor leaf = random_tensor({3, 2}, 30).requires_grad_();
  Tensor y = leaf * 1;
  std::vector<Tensor> rows = y.unbind();
  expect_error([&] { rows[0].mul_(2); }, {multi_output_view_error("UnbindBackward0", 0)});
  expect_error([&] { y.unbind(1)[1].copy_(leaf.select(1, 0)); }, {multi_output_view_error("UnbindBackward0", 1)});
  expect_error([&] { tensor::unbind(y, -2)[2].add_(1); }, {multi_output_view_error("UnbindBackward0", 2)});
  // A view of a piece inherits it; the leaf's own pieces raise it too.
  expect_error([&] { rows[1].narrow(0, 1, 1).sub_(1); }, {multi_output_view_error("UnbindBackward0", 1)});
  expect_error([&] { leaf.unbind(1)[1].mul_(2); }, {multi_output_view_error("UnbindBackward0", 1)});
  // Nothing was written, and the pieces still work out of place.
  Tensor before = y.detach().clone();
  (rows[0] * 2 + rows[2]).sum().backward();
  EXPECT_EQ(vals(leaf.grad()), (std::vector<double>{2, 2, 0, 0, 1, 1}));
  EXPECT_EQ(vals(y), vals(before));
  // Without recording (no-grad mode) the write works and shows in the base.
  {
    NoGradGuard g;
    y.unbind()[1].fill_(5.0);
  }
  EXPECT_EQ(vals(y.select(0, 1)), (std::vector<double>{5, 5}));
}

// ---------------------------------------------------------------- bad input

TEST(Unbind, BadInput) {
  Tensor x = tensor::zeros({2, 3}, kFloat32);
  expect_error([&] { x.unbind(2); }, {"unbind", "dim 2", "[2, 3]", "float32"});
  expect_error([&] { tensor::unbind(x, -3); }, {"unbind", "dim -3", "[2, 3]", "[-2, 1]"});
  expect_error([&] { tensor::scalar_tensor(1.0).unbind(); }, {"unbind", "0-dim", "shape []", "dim 0"});
  expect_error([&] { tensor::unbind(Tensor(), 0); }, {"unbind", "undefined"});
}
