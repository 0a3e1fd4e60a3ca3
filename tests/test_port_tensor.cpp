// Ported-program test (issue 14): Tensor semantics and spellings written as a libtorch program
// would, with `torch::` renamed to `tensor::`. Expected values are worked out by hand in each
// test, never read back from the code under test.
//
// Assignment: libtorch's `Tensor::operator=(...) &&` writes through a temporary view
// (`t[0] = u;` copies u into row 0, `t[0] = 3.5;` fills it), while assigning to a named handle
// rebinds the handle. Every view-producing expression is tried as an assignment target.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <complex>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/test_util.h"

namespace {

using tensor::indexing::Ellipsis;
using tensor::indexing::None;
using tensor::indexing::Slice;

// The values of t in row-major order, as float64.
std::vector<double> values(const tensor::Tensor& t) {
  tensor::Tensor c = t.to(tensor::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// ---- 1. assignment to a temporary view copies into it ----

TEST(PortTensorAssign, OperatorBracketCopiesAndFills) {
  tensor::Tensor m = tensor::zeros({3, 2});
  m[0] = tensor::tensor({1.5, 2.5});  // Tensor&& source
  const tensor::Tensor row = tensor::tensor({3.0, 4.0});
  m[2] = row;  // const Tensor& source
  m[1] = 7;    // Scalar: fills the row
  EXPECT_EQ(values(m), (std::vector<double>{1.5, 2.5, 7, 7, 3, 4}));
  m[1][0] = -1.0;  // a view of a view
  EXPECT_EQ(values(m), (std::vector<double>{1.5, 2.5, -1, 7, 3, 4}));
  // The source broadcasts and converts dtype, as copy_ does: int64 [2] into a float32 row.
  m[0] = tensor::tensor({5, 6});
  EXPECT_EQ(m.dtype(), tensor::kFloat32);
  EXPECT_EQ(values(m), (std::vector<double>{5, 6, -1, 7, 3, 4}));
  m[2] = tensor::tensor(9.0);  // 0-dim source broadcast over the row
  EXPECT_EQ(values(m), (std::vector<double>{5, 6, -1, 7, 9, 9}));
}

TEST(PortTensorAssign, NamedHandleStillRebinds) {
  // `b = u` on a named handle shares u; the tensor b viewed before is left alone.
  tensor::Tensor a = tensor::zeros({2, 2});
  tensor::Tensor b = a[0];
  b = tensor::ones({5});
  EXPECT_EQ(b.numel(), 5);
  EXPECT_EQ(values(a), (std::vector<double>{0, 0, 0, 0}));
  tensor::Tensor u = tensor::full({2}, 3.0);
  tensor::Tensor c;
  c = u;
  EXPECT_TRUE(c.is_same(u));
  tensor::Tensor d;
  d = std::move(u);
  EXPECT_TRUE(d.is_same(c));
}

TEST(PortTensorAssign, SelectNarrowSlice) {
  tensor::Tensor m = tensor::zeros({2, 3});
  m.select(1, 1) = tensor::tensor({8.0, 9.0});  // column 1
  m.select(0, 1).select(0, 2) = 4.0;            // element (1, 2)
  EXPECT_EQ(values(m), (std::vector<double>{0, 8, 0, 0, 9, 4}));

  tensor::Tensor v = tensor::zeros({6});
  v.narrow(0, 1, 3) = tensor::tensor({7.0, 8.0, 9.0});
  EXPECT_EQ(values(v), (std::vector<double>{0, 7, 8, 9, 0, 0}));
  v.slice(0, 0, 6, 2) = 1.0;  // elements 0, 2, 4
  EXPECT_EQ(values(v), (std::vector<double>{1, 7, 1, 9, 1, 0}));
  v.slice(0, 3) = tensor::tensor({-1.0, -2.0, -3.0});  // from 3 to the end
  EXPECT_EQ(values(v), (std::vector<double>{1, 7, 1, -1, -2, -3}));
}

TEST(PortTensorAssign, IndexWithBasicIndices) {
  tensor::Tensor m = tensor::zeros({3, 3});
  m.index({Slice(1, None), 0}) = tensor::tensor({4.0, 5.0});  // rows 1.., column 0
  m.index({0}) = 2.0;                                         // row 0
  m.index({Ellipsis, 2}) = tensor::tensor({6.0, 7.0, 8.0});  // last column
  EXPECT_EQ(values(m), (std::vector<double>{2, 2, 6, 4, 0, 7, 5, 0, 8}));
  m.index({Slice(None, None, 2), Slice(None, None, 2)}) = -1;  // the four corners
  EXPECT_EQ(values(m), (std::vector<double>{-1, 2, -1, 4, 0, 7, -1, 0, -1}));
  m.index({None, 1}) = tensor::tensor({{1.0, 1.0, 1.0}});  // None adds a leading dim of 1
  EXPECT_EQ(values(m), (std::vector<double>{-1, 2, -1, 1, 1, 1, -1, 0, -1}));
}

TEST(PortTensorAssign, DiagonalTransposeView) {
  tensor::Tensor m = tensor::zeros({3, 3});
  m.diagonal() = tensor::tensor({1.0, 2.0, 3.0});
  m.diagonal(1) = 9.0;  // the superdiagonal (0,1), (1,2)
  EXPECT_EQ(values(m), (std::vector<double>{1, 9, 0, 0, 2, 9, 0, 0, 3}));

  // t(): writing [[0, 1], [2, 3], [4, 5]] into the transpose of a 2x3 leaves m = its transpose.
  tensor::Tensor a = tensor::zeros({2, 3});
  a.t() = tensor::arange(6).view({3, 2});
  EXPECT_EQ(values(a), (std::vector<double>{0, 2, 4, 1, 3, 5}));

  tensor::Tensor b = tensor::zeros({2, 1, 3});
  b.transpose(0, 2) = tensor::arange(6).view({3, 1, 2});  // b[i][0][j] = 2j + i
  EXPECT_EQ(values(b), (std::vector<double>{0, 2, 4, 1, 3, 5}));

  tensor::Tensor c = tensor::zeros({2, 3});
  c.view({6}) = tensor::arange(6);
  EXPECT_EQ(values(c), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  c.view({3, 2})[1] = 0.5;  // flat elements 2 and 3
  EXPECT_EQ(values(c), (std::vector<double>{0, 1, 0.5, 0.5, 4, 5}));
  c.permute({1, 0})[0] = tensor::tensor({-1.0, -2.0});  // column 0 of c
  EXPECT_EQ(values(c), (std::vector<double>{-1, 1, 0.5, -2, 4, 5}));
  c.unsqueeze(0).squeeze(0).flatten()[5] = 10.0;
  EXPECT_EQ(values(c), (std::vector<double>{-1, 1, 0.5, -2, 4, 10}));
}

TEST(PortTensorAssign, ExpandedViewCannotTakeACopy) {
  tensor::Tensor base = tensor::tensor({1.0, 2.0});
  // Three rows alias one row of memory, so copying distinct values in has no single answer:
  // copy_ raises, as libtorch does, and base is left as it was.
  tensor::testing::expect_error([&] { base.expand({3, 2}) = tensor::tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}); },
                                {"copy_", "more than one element", "[3, 2]"});
  EXPECT_EQ(values(base), (std::vector<double>{1, 2}));
  // A fill through the expanded view writes one value to every alias, so it goes through, as in
  // libtorch (and zero_, which is a fill).
  base.expand({3, 2}) = 7.0;
  EXPECT_EQ(values(base), (std::vector<double>{7, 7}));
  base.expand({3, 2}).zero_();
  EXPECT_EQ(values(base), (std::vector<double>{0, 0}));
  // Not when the base requires grad: its gradient would have to be scattered over aliases.
  tensor::Tensor w = tensor::tensor({1.0, 2.0}).requires_grad_();
  tensor::Tensor h = w * 1;
  tensor::testing::expect_error([&] { h.expand({3, 2}).fill_(7.0); }, {"fill_", "more than one element", "[3, 2]"});
  base.fill_(1.0);
  base[1] = 2.0;
  // Writing through one row of the expansion writes the shared row, as in libtorch.
  base.expand({3, 2})[1] = tensor::tensor({5.0, 6.0});
  EXPECT_EQ(values(base), (std::vector<double>{5, 6}));
}

TEST(PortTensorAssign, RealAndImagOfComplex) {
  tensor::Tensor z = tensor::zeros({2}, tensor::kComplexFloat);
  z.real() = tensor::tensor({1.0, 3.0});
  z.imag() = -2.0;
  EXPECT_EQ(values(z.real()), (std::vector<double>{1, 3}));
  EXPECT_EQ(values(z.imag()), (std::vector<double>{-2, -2}));
  const auto* p = z.data_ptr<std::complex<float>>();
  EXPECT_EQ(p[0], std::complex<float>(1, -2));
  EXPECT_EQ(p[1], std::complex<float>(3, -2));
}

TEST(PortTensorAssign, BumpsTheVersionCounter) {
  tensor::Tensor m = tensor::zeros({2, 2});
  const uint32_t v0 = m._version();
  m[0] = tensor::ones({2});
  EXPECT_GT(m._version(), v0);
}

TEST(PortTensorAssign, AutogradRecordsTheCopy) {
  // x = leaf * 1; x[0] = y; loss = sum(x * w). d loss / d y = w[0]; the leaf's element 0 was
  // overwritten, so it gets 0 there and w elsewhere.
  tensor::Tensor leaf = tensor::tensor({1.0, 2.0, 3.0}, tensor::requires_grad());
  tensor::Tensor y = tensor::tensor(5.0, tensor::requires_grad());
  tensor::Tensor w = tensor::tensor({2.0, 3.0, 4.0});
  tensor::Tensor x = leaf * 1;
  x[0] = y;
  EXPECT_EQ(values(x.detach()), (std::vector<double>{5, 2, 3}));
  EXPECT_TRUE(x.requires_grad());
  (x * w).sum().backward();
  ASSERT_TRUE(y.grad().defined());
  EXPECT_DOUBLE_EQ(y.grad().item<double>(), 2.0);
  EXPECT_EQ(values(leaf.grad()), (std::vector<double>{0, 3, 4}));
}

TEST(PortTensorAssign, AutogradThroughAColumnAssignment) {
  // m = leaf * 2 (2x2); column 1 := v; loss = sum(m^2).
  // d/d leaf = 2 * m * 2 on column 0 (8 * leaf), 0 on column 1; d/d v = 2 v.
  tensor::Tensor leaf = tensor::tensor({{1.0, 2.0}, {3.0, 4.0}}, tensor::requires_grad());
  tensor::Tensor v = tensor::tensor({0.5, -1.5}, tensor::requires_grad());
  tensor::Tensor m = leaf * 2;
  m.select(1, 1) = v;
  (m * m).sum().backward();
  EXPECT_EQ(values(leaf.grad()), (std::vector<double>{8, 0, 24, 0}));
  EXPECT_EQ(values(v.grad()), (std::vector<double>{1, -3}));
}

// ---- 2. in-place methods are const members ----

// libtorch declares `Tensor& add_(...) const`: an in-place op through a const handle compiles
// and returns a mutable handle.
static_assert(std::is_same_v<decltype(std::declval<const tensor::Tensor&>().add_(1)), tensor::Tensor&>);
static_assert(std::is_same_v<decltype(std::declval<const tensor::Tensor&>().zero_()), tensor::Tensor&>);
static_assert(std::is_same_v<decltype(std::declval<const tensor::Tensor&>().requires_grad_()), tensor::Tensor&>);

TEST(PortTensorConstInplace, GradZero) {
  // d/dx sum(x^2) = 2x; after zero_() a second backward of sum(3x) leaves 3 everywhere.
  tensor::Tensor x = tensor::tensor({1.0, 2.0}, tensor::requires_grad());
  (x * x).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 4}));
  x.grad().zero_();  // grad() is a const Tensor&
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0}));
  (x * 3).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 3}));
}

TEST(PortTensorConstInplace, ConstHandleWritesData) {
  const tensor::Tensor t = tensor::tensor({1.0, 2.0, 3.0});
  t.add_(1);  // 2 3 4
  EXPECT_EQ(values(t), (std::vector<double>{2, 3, 4}));
  t.mul_(2).sub_(1);  // chained through the returned Tensor&: 3 5 7
  EXPECT_EQ(values(t), (std::vector<double>{3, 5, 7}));
  t.clamp_(4, 6);  // 4 5 6
  EXPECT_EQ(values(t), (std::vector<double>{4, 5, 6}));
  t.neg_();
  EXPECT_EQ(values(t), (std::vector<double>{-4, -5, -6}));
  t.index_put_({1}, 0.5);
  EXPECT_EQ(values(t), (std::vector<double>{-4, 0.5, -6}));
  t.masked_fill_(tensor::tensor({true, false, true}), 9.0);
  EXPECT_EQ(values(t), (std::vector<double>{9, 0.5, 9}));
  t.scatter_(0, tensor::tensor({2}), tensor::tensor({-7.0}));
  EXPECT_EQ(values(t), (std::vector<double>{9, 0.5, -7}));
  t.copy_(tensor::tensor({1, 2, 3}));
  EXPECT_EQ(values(t), (std::vector<double>{1, 2, 3}));
  t.fill_(2.5);
  EXPECT_EQ(values(t), (std::vector<double>{2.5, 2.5, 2.5}));
  t.zero_();
  EXPECT_EQ(values(t), (std::vector<double>{0, 0, 0}));

  const tensor::Tensor m = tensor::ones({2, 2});
  m.tril_();
  EXPECT_EQ(values(m), (std::vector<double>{1, 0, 1, 1}));
  const tensor::Tensor w = tensor::zeros({2});
  w.requires_grad_();
  EXPECT_TRUE(w.requires_grad());
}

// ---- 3. spellings ----

TEST(PortTensorSpellings, DtypeAliases) {
  EXPECT_EQ(tensor::kF16, tensor::kHalf);
  EXPECT_EQ(tensor::kBF16, tensor::kBFloat16);
  EXPECT_EQ(tensor::kF32, tensor::kFloat);
  EXPECT_EQ(tensor::kF64, tensor::kDouble);
  EXPECT_EQ(tensor::kU8, tensor::kByte);
  EXPECT_EQ(tensor::kI8, tensor::kChar);
  EXPECT_EQ(tensor::kI16, tensor::kShort);
  EXPECT_EQ(tensor::kI32, tensor::kInt);
  EXPECT_EQ(tensor::kI64, tensor::kLong);
  EXPECT_EQ(tensor::kComplexFloat, tensor::kComplex64);
  EXPECT_EQ(tensor::kComplexDouble, tensor::kComplex128);
  EXPECT_EQ(tensor::zeros({2}, tensor::kF64).element_size(), 8);
  EXPECT_EQ(tensor::ones({2}, tensor::dtype(tensor::kI16)).element_size(), 2);
}

TEST(PortTensorSpellings, Str) {
  EXPECT_EQ(tensor::str("loss ", 0.5, " at step ", 3), "loss 0.5 at step 3");
  EXPECT_EQ(tensor::str(), "");
  EXPECT_EQ(tensor::str('[', tensor::zeros({2, 3}).sizes(), ']'), "[[2, 3]]");
  EXPECT_EQ(tensor::str(tensor::kF32), tensor::str(tensor::kFloat32));
}

TEST(PortTensorSpellings, DataAndDataT) {
  tensor::Tensor x = tensor::tensor({1.0, 2.0}, tensor::requires_grad());
  tensor::Tensor y = x * 2;
  tensor::Tensor d = y.data();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.data_ptr(), y.data_ptr());  // the same memory, no copy
  d[0] = 10.0;                           // a write autograd does not record
  EXPECT_EQ(values(y.detach()), (std::vector<double>{10, 4}));
  EXPECT_EQ(x.data<float>(), x.data_ptr<float>());
  EXPECT_FLOAT_EQ(x.data<float>()[1], 2.0f);
}

TEST(PortTensorSpellings, SetRequiresGrad) {
  tensor::Tensor w = tensor::ones({2}, tensor::kF64);
  w.set_requires_grad(true);
  EXPECT_TRUE(w.requires_grad());
  (w * w).sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{2, 2}));
  w.set_requires_grad(false);
  EXPECT_FALSE(w.requires_grad());
}

TEST(PortTensorSpellings, IsNonzero) {
  EXPECT_FALSE(tensor::tensor(0.0).is_nonzero());
  EXPECT_TRUE(tensor::tensor(-0.5).is_nonzero());
  EXPECT_TRUE(tensor::tensor({3}).is_nonzero());  // shape [1]
  EXPECT_FALSE(tensor::zeros({1, 1}, tensor::kBool).is_nonzero());
  tensor::testing::expect_error([] { (void)tensor::zeros({2}).is_nonzero(); },
                                {"is_nonzero", "more than one value is ambiguous", "[2]"});
  tensor::testing::expect_error([] { (void)tensor::zeros({0}).is_nonzero(); },
                                {"is_nonzero", "no values is ambiguous", "[0]"});
}

TEST(PortTensorSpellings, ScalarConversionsAndPrinting) {
  tensor::Scalar f = 2.5;
  EXPECT_EQ(f.toFloat(), 2.5f);
  EXPECT_EQ(f.toDouble(), 2.5);
  EXPECT_EQ(f.toLong(), 2);  // truncates toward zero
  EXPECT_EQ(tensor::Scalar(-3.9).toInt(), -3);
  EXPECT_EQ(tensor::Scalar(7).toLong(), 7);
  EXPECT_EQ(tensor::Scalar(7).toDouble(), 7.0);
  EXPECT_TRUE(tensor::Scalar(true).toBool());
  EXPECT_FALSE(tensor::Scalar(0).toBool());
  EXPECT_TRUE(f.isFloatingPoint());
  EXPECT_TRUE(tensor::Scalar(1).isIntegral(false));
  EXPECT_FALSE(tensor::Scalar(true).isIntegral(false));
  EXPECT_TRUE(tensor::Scalar(true).isIntegral(true));
  EXPECT_TRUE(tensor::Scalar(std::complex<double>(1, 2)).isComplex());
  EXPECT_EQ(tensor::Scalar(std::complex<double>(1, 2)).toComplexDouble(), std::complex<double>(1, 2));

  EXPECT_EQ(tensor::str(f), "2.5");
  EXPECT_EQ(tensor::str(tensor::Scalar(3)), "3");
  EXPECT_EQ(tensor::str(tensor::Scalar(false)), "false");
  EXPECT_EQ(tensor::str(tensor::Scalar(std::complex<double>(1, -2))), "(1,-2)");
  EXPECT_EQ(tensor::str(tensor::tensor(4.0).item()), "4");  // a float32 item is a double Scalar
  EXPECT_EQ(tensor::str(tensor::tensor({5}).sum().item()), "5");
  // Half and plain numbers keep their own printing (no ambiguity with Scalar's constructors).
  EXPECT_EQ(tensor::str(tensor::Half(1.5f)), "1.5");
  EXPECT_EQ(tensor::str(2, true), "21");
}

// ---- 4. printing as libtorch's formatter ----
// Layout: columns expMax + 1 wide for whole numbers (expMax: integer digits of the largest
// magnitude), expMax + 6 for four decimals, 11 for scientific; one space between columns.

TEST(PortTensorPrint, WholeNumberFloatsPrintWithoutDecimals) {
  // libtorch prints torch::ones({2}) as " 1\n 1\n[ CPUFloatType{2} ]".
  EXPECT_EQ(tensor::str(tensor::ones({2})), " 1\n 1\n[ CPUFloatType{2} ]");
  EXPECT_EQ(tensor::str(tensor::tensor({{1.0, -2.0}, {3.0, 10.0}}, tensor::kF64)),
            "  1  -2\n  3  10\n[ CPUDoubleType{2,2} ]");
  EXPECT_EQ(tensor::str(tensor::tensor(4.0)), "4\n[ CPUFloatType{} ]");
  // One non-whole value brings the four decimals back for every element.
  EXPECT_EQ(tensor::str(tensor::tensor({1.0, 0.5})), " 1.0000\n 0.5000\n[ CPUFloatType{2} ]");
  // Integers use the whole-number layout: one digit plus a sign column.
  EXPECT_EQ(tensor::str(tensor::tensor({3, -4})), " 3\n-4\n[ CPULongType{2} ]");
  EXPECT_EQ(tensor::str(tensor::tensor(0.5)), "0.5\n[ CPUFloatType{} ]");
}

TEST(PortTensorPrint, ScaledAndScientific) {
  // All magnitudes below 0.1: printed as multiples of a power of ten, the factor on its own line.
  EXPECT_EQ(tensor::str(tensor::tensor({0.05, 0.02})), "0.01 *\n 5.0000\n 2.0000\n[ CPUFloatType{2} ]");
  // Magnitudes spanning more than four orders: scientific, four decimals, 11 wide.
  EXPECT_EQ(tensor::str(tensor::tensor({1e-3, 100.5})), " 1.0000e-03\n 1.0050e+02\n[ CPUFloatType{2} ]");
  // Whole numbers past 9 digits go scientific too.
  EXPECT_EQ(tensor::str(tensor::tensor({2e10, 1.0}, tensor::kF64)), " 2.0000e+10\n 1.0000e+00\n[ CPUDoubleType{2} ]");
}

// ---- 5. allclose refuses mixed dtypes, as libtorch ----

TEST(PortTensorAllclose, MixedDtypesRaise) {
  tensor::Tensor a = tensor::tensor({1.0, 2.0});                  // float32
  tensor::Tensor b = tensor::tensor({1.0, 2.0}, tensor::kF64);    // float64
  tensor::testing::expect_error([&] { (void)a.allclose(b); }, {"allclose", "float32 did not match float64"});
  tensor::testing::expect_error([&] { (void)tensor::tensor({1, 2}).allclose(a); }, {"allclose", "did not match"});
  EXPECT_TRUE(a.allclose(b.to(tensor::kF32)));
  EXPECT_FALSE(a.allclose(tensor::tensor({1.0, 2.5})));
}

}  // namespace
