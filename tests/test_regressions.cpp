// Regression tests from a review of the tensor core and CPU ops against PyTorch (1.13+).
//
// Two groups:
//  - Regression.*: each reproduces a divergence from PyTorch found in review (now fixed);
//    the comments name the code that was wrong and what PyTorch does.
//  - EdgeCases.*: edge cases that matched PyTorch during the review.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <complex>
#include <limits>

using namespace tensor;

namespace {
Tensor complex_with_imag_only() {
  // [1j, 0]
  Tensor c = zeros({2}, kComplex64);
  c.select(0, 0).fill_(std::complex<double>(0.0, 1.0));
  return c;
}
}  // namespace

// ============================================================================================
// Divergences found in review (fixed)
// ============================================================================================

// src/core/DtypeVisit.h:66-67 convert<bool>(complex) keeps only the real part.
// PyTorch (c10 static_cast_with_inter_type<bool, complex>): real != 0 || imag != 0, so
// torch.tensor([1j, 0]).to(torch.bool) == [True, False].
TEST(Regression, ComplexToBoolCastIgnoresImaginaryPart) {
  Tensor c = complex_with_imag_only();
  Tensor b = c.to(kBool);
  EXPECT_TRUE(b.select(0, 0).item<bool>()) << "1j should convert to true";
  EXPECT_FALSE(b.select(0, 1).item<bool>());
  // The same conversion path is used by copy_ into a bool tensor.
  Tensor dst = zeros({2}, kBool);
  dst.copy_(c);
  EXPECT_TRUE(dst.select(0, 0).item<bool>());
}

// kernels/cpu/BinaryKernels.cpp:113 (alpha.to<OT>() truncates) with no check in
// src/ops/ElementwiseOps.cpp check<>. PyTorch: torch.add(int, int, alpha=0.5) raises
// "For integral input tensors, argument alpha must not be a floating point number."
TEST(Regression, AddIntegerWithFloatingAlphaMustThrow) {
  Tensor a = tensor::tensor({1, 2}), b = tensor::tensor({3, 4});
  EXPECT_THROW(add(a, b, 0.5), Error);  // libtensor silently returns [1, 2] (alpha truncated to 0)
  EXPECT_THROW(sub(a, b, 0.5), Error);
}

// No memory-overlap check anywhere in TensorIterator::build (src/core/TensorIterator.cpp:73)
// nor in the copy_ memcpy fast path (cpu::copy in kernels/cpu/CopyKernels.cpp; memcpy on overlapping ranges is UB).
// PyTorch raises "unsupported operation: some elements of the input tensor and the
// written-to tensor refer to a single memory location" for partial overlap.
TEST(Regression, InPlaceWithPartiallyOverlappingInputMustThrow) {
  {
    Tensor a = arange(5);
    Tensor dst = a.slice(0, 1);
    EXPECT_THROW(dst.add_(a.slice(0, 0, 4)), Error);  // libtensor: [1, 3, 6, 10] (loop-order dependent)
  }
  {
    Tensor a = arange(5);
    Tensor dst = a.slice(0, 1);
    EXPECT_THROW(dst.copy_(a.slice(0, 0, 4)), Error);  // libtensor: memcpy over overlapping bytes
  }
  {
    Tensor m = arange(9.).view({3, 3});
    EXPECT_THROW(m.copy_(m.t()), Error);  // same bytes, different strides: Partial overlap in PyTorch
  }
}

// Same place: PyTorch's assert_no_internal_overlap on TensorIterator outputs raises
// "unsupported operation: more than one element of the written-to tensor refers to a single
// memory location". libtensor adds 1 three times into the one element (result 3, not 1).
TEST(Regression, InPlaceIntoExpandedTensorMustThrow) {
  Tensor base = zeros({1});
  Tensor z = base.expand({3});
  EXPECT_THROW(z.add_(1), Error);
  EXPECT_EQ(base.item<float>(), 0.0f) << "the single element was written several times";
}

// src/core/Random.cpp:101-105 clamps to nextafter(1.0f, 0) in float, then that value rounds
// back up to 1.0 in float16/bfloat16, so rand() for the half types returns 1.0 (about 1 in
// 512 bfloat16 draws). PyTorch/the library's own comment: rand is in [0, 1).
TEST(Regression, RandHalfTypesMustStayBelowOne) {
  manual_seed(0);
  EXPECT_LT(rand({1 << 16}, kBFloat16).max().item<double>(), 1.0);
  EXPECT_LT(rand({1 << 16}, kFloat16).max().item<double>(), 1.0);
}

// src/ops/ElementwiseOps.cpp:54-57 raises for any negative integer exponent, and
// kernels/cpu/BinaryKernels.cpp:38-46 int_pow returns 1 for negative exponents.
// PyTorch only raises for a negative *Scalar* exponent (pow.Tensor_Scalar meta check);
// pow(int tensor, int tensor) uses powi: b < 0 gives 1 for a == 1, +-1 for a == -1, else 0.
TEST(Regression, PowIntegerTensorNegativeExponentFollowsPowi) {
  Tensor base = tensor::tensor({2, 1, -1, -1}), ex = tensor::tensor({-1, -2, -3, -2});
  Tensor r;
  ASSERT_NO_THROW(r = pow(base, ex));
  EXPECT_TRUE(r.equal(tensor::tensor({0, 1, -1, 1})));
  // The Scalar-exponent form does raise in PyTorch ("Integers to negative integer powers are not allowed.").
  EXPECT_THROW(pow(base, Scalar(-1)), Error);
}

// src/ops/ReduceOps.cpp:229,232 always produce bool. PyTorch docs for torch.all/any: "For
// uint8 the dtype of output is uint8 itself" (legacy uint8 compatibility).
TEST(Regression, AnyAllOfUint8ReturnUint8) {
  Tensor u = tensor::tensor({1, 0}, kUInt8);
  EXPECT_EQ(u.any().dtype(), kUInt8);
  EXPECT_EQ(u.all().dtype(), kUInt8);
  EXPECT_EQ(u.any(0).dtype(), kUInt8);
}

// kernels/cpu/BinaryKernels.cpp:63 computes floor(a / b). PyTorch's div_floor_floating uses
// fmod: div = (a - fmod(a, b)) / b, fixed up, matching Python's 1.0 // 0.1 == 9.0 and keeping
// a == b * floor_div(a, b) + remainder(a, b).
TEST(Regression, FloorDivideFloatMatchesPythonFloorDivision) {
  Tensor a = tensor::tensor({1.0}, kFloat64), b = tensor::tensor({0.1}, kFloat64);
  Tensor q = div(a, b, "floor");
  EXPECT_EQ(q.item<double>(), 9.0);  // libtensor: 10
  Tensor r = remainder(a, b);
  EXPECT_NEAR(q.item<double>() * 0.1 + r.item<double>(), 1.0, 1e-12);
}

// Scalar::to<T> (include/tensor/core/Scalar.h) is an unchecked C++ cast; it feeds fill_
// (kernels/cpu/CopyKernels.cpp:57), masked_fill (src/ops/IndexOps.cpp:414) and clamp bounds
// (kernels/cpu/CopyKernels.cpp:104). PyTorch converts these with checked_convert and raises
// "value cannot be converted to type uint8_t without overflow" (the well-known
// masked_fill(-1e9) on a float16 tensor error is this check).
TEST(Regression, OutOfRangeScalarFillMustThrow) {
  EXPECT_THROW(full({1}, 300, kUInt8), Error);                          // libtensor: 44
  EXPECT_THROW(zeros({2}, kUInt8).fill_(300), Error);                   // libtensor: 44
  EXPECT_THROW(zeros({2}, kFloat16).masked_fill(tensor::tensor({true, false}), -1e9), Error);  // libtensor: -inf
  EXPECT_THROW(clamp(tensor::tensor({200}, kUInt8), std::nullopt, 300), Error);  // libtensor clamps to 44
}

// kernels/cpu/UnaryKernels.cpp:58 (x > 0 ? x : 0) and :161 (hn::Max(v, 0), x86 max returns
// the second operand on NaN) both map NaN to 0. PyTorch relu is clamp_min(x, 0), which keeps
// NaN: torch.relu(torch.tensor([nan])) == [nan].
TEST(Regression, ReluPropagatesNaN) {
  EXPECT_TRUE(std::isnan(relu(tensor::tensor({NAN, 1.0f})).select(0, 0).item<float>()));   // vector path
  EXPECT_TRUE(relu(full({64}, NAN)).isnan().all().item<bool>());                            // vector path
  EXPECT_TRUE(std::isnan(relu(tensor::tensor({NAN}, kFloat16)).item<float>()));             // scalar path
  Tensor strided = full({8}, NAN).slice(0, 0, 8, 2);
  EXPECT_TRUE(relu(strided).isnan().all().item<bool>());                                   // strided path
}

// ============================================================================================
// Edge cases that pass today (regression guards)
// ============================================================================================

TEST(EdgeCases, ArangeLengthsWithNegativeAndFloatSteps) {
  EXPECT_TRUE(arange(10, 0, -3).equal(tensor::tensor({10, 7, 4, 1})));
  EXPECT_EQ(arange(0.0, -1.0, -0.3).size(0), 4);
  EXPECT_EQ(arange(0, 1, 0.1).size(0), 10);
  EXPECT_EQ(arange(0, 0).size(0), 0);
  EXPECT_THROW(arange(0, 5, -1), Error);
}

TEST(EdgeCases, LinspaceIntegerAndSymmetric) {
  EXPECT_TRUE(linspace(0, 10, 4, kInt64).equal(tensor::tensor({0, 3, 6, 10})));
  Tensor l = linspace(0, 1, 5, kFloat64);
  EXPECT_EQ(l.select(0, 4).item<double>(), 1.0);
  EXPECT_EQ(l.select(0, 2).item<double>(), 0.5);
}

TEST(EdgeCases, SliceDiagonalUnfoldViews) {
  EXPECT_TRUE(arange(10).slice(0, -3, std::nullopt, 2).equal(tensor::tensor({7, 9})));
  EXPECT_EQ(arange(12).view({3, 4}).slice(1, 5, 2).size(1), 0);
  EXPECT_TRUE(arange(12).view({3, 4}).diagonal(-1).equal(tensor::tensor({4, 9})));
  EXPECT_EQ(arange(12).view({3, 4}).diagonal(5).size(0), 0);
  EXPECT_TRUE(arange(8).view({2, 2, 2}).diagonal(1, 2, 0).equal(tensor::tensor({{4}, {6}})));
  EXPECT_TRUE(tensor::tensor({1, 2, 3}).unfold(0, 2, 1).equal(tensor::tensor({{1, 2}, {2, 3}})));
  EXPECT_THROW(arange(6.).view({3, 2}).slice(0, 0, 3, 2).view({4}), Error);
  EXPECT_THROW(arange(4.).as_strided({2, 2}, {1, 1}, 3), Error);
}

TEST(EdgeCases, IntegerDivisionAndRemainderSigns) {
  EXPECT_TRUE(tensor::tensor({-7, 7}, kInt8).remainder(-3).equal(tensor::tensor({-1, -2}, kInt8)));
  EXPECT_TRUE(div(tensor::tensor({-7, 7}, kInt8), tensor::tensor({2}, kInt8), "floor").equal(tensor::tensor({-4, 3}, kInt8)));
  EXPECT_EQ((tensor::tensor({5}, kInt32) / tensor::tensor({2}, kInt32)).dtype(), kFloat32);
  EXPECT_THROW(div(tensor::tensor({1}), tensor::tensor({0}), "floor"), Error);
  EXPECT_TRUE((tensor::tensor({1, 2}, kUInt8) - 3).equal(tensor::tensor({254, 255}, kUInt8)));
}

TEST(EdgeCases, PromotionWithZeroDimAndWrappedScalars) {
  EXPECT_EQ((tensor::tensor({1, 2}, kInt32) + scalar_tensor(2.5, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((tensor::tensor({1., 2.}, kFloat16) + scalar_tensor(2.5, kFloat64)).dtype(), kFloat16);
  EXPECT_EQ((tensor::tensor({1, 2}, kUInt8) + tensor::tensor({1, 2}, kInt8)).dtype(), kInt16);
  EXPECT_EQ((tensor::tensor({true, false}) * 2.5).dtype(), kFloat32);
  EXPECT_EQ((tensor::tensor({true}) + tensor::tensor({true})).dtype(), kBool);
  EXPECT_EQ(clamp(tensor::tensor({1, 2, 3}), 1.5, std::nullopt).dtype(), kFloat32);
}

TEST(EdgeCases, BroadcastZeroSizeAndPermutedOperands) {
  EXPECT_EQ(add(ones({0}), ones({1})).size(0), 0);
  EXPECT_THROW(add(ones({0}), ones({2})), Error);
  Tensor a = arange(24.).view({2, 3, 4}).permute({2, 0, 1});
  Tensor b = arange(24.).view({4, 2, 3});
  EXPECT_TRUE((a + b).equal(a.contiguous() + b));
  Tensor o = empty({2, 2}).t();
  add_out(o, arange(4.).view({2, 2}), ones({2}));
  EXPECT_TRUE(o.equal(tensor::tensor({{1.f, 2.f}, {3.f, 4.f}})));
}

TEST(EdgeCases, BlockedTransposeCopyAllElementSizes) {
  for (ScalarType t : {kUInt8, kInt16, kFloat32, kFloat64}) {
    Tensor x = arange(40 * 37, TensorOptions(kInt64)).view({40, 37}).to(t);
    Tensor y = x.t().contiguous();
    EXPECT_TRUE(y.to(kInt64).equal(x.to(kInt64).t().contiguous())) << t;
    EXPECT_EQ(y.select(0, 1).select(0, 2).item<int64_t>() % 256, (2 * 37 + 1) % 256) << t;
  }
}

// real/imag of a lazily conjugated tensor follow libtorch: real is the same view, imag negated.
TEST(Regressions, RealImagOfConjugatedViews) {
  Tensor z = tensor::tensor({1.0, 2.0}, kFloat64).to(kComplex128) +
             tensor::tensor({3.0, 4.0}, kFloat64).to(kComplex128) * std::complex<double>(0, 1);
  Tensor c = z.conj();
  EXPECT_TRUE(c.real().equal(tensor::tensor({1.0, 2.0}, kFloat64)));
  EXPECT_TRUE(c.imag().equal(tensor::tensor({-3.0, -4.0}, kFloat64)));
  c.real().mul_(10);  // the real part is a view of z's memory
  EXPECT_TRUE(z.real().equal(tensor::tensor({10.0, 20.0}, kFloat64)));
  // Gradients: d/dz of sum(imag(conj(z))) = -i under the conjugate Wirtinger convention.
  Tensor w = z.detach().requires_grad_(true);
  EXPECT_TRUE(autograd::gradcheck([](const autograd::variable_list& v) { return v[0].conj().imag() * v[0].conj().real(); },
                                  {w}));
}

// conj() is differentiable (it used to drop the history): grad of sum(conj(z) * a) w.r.t. z is
// conj(a)... under the conjugate Wirtinger convention, d/dz* of conj(z) * a gives a.
TEST(Regressions, ConjIsRecorded) {
  Tensor z = (tensor::tensor({1.0, 2.0}, kFloat64).to(kComplex128) * std::complex<double>(1, 1)).requires_grad_(true);
  Tensor y = z.conj();
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn()->name(), "ConjBackward0");
  EXPECT_TRUE(autograd::gradcheck([](const autograd::variable_list& v) { return (v[0].conj() * v[0]).sum().real(); }, {z}));
  EXPECT_TRUE(autograd::gradcheck([](const autograd::variable_list& v) { return v[0].conj().exp(); }, {z}));
  Tensor r = tensor::tensor({1.0}, kFloat64).requires_grad_(true);
  EXPECT_TRUE(r.conj().is_same(r));  // real tensors: conj is the identity
}

// ============================================================================================
// Found by fuzzing (tests/fuzz)
// ============================================================================================

// src/core/Factories.cpp empty() multiplied sizes in int64 unchecked. The loaders reached it
// with zero-size shapes such as [0, 2^40, 2^40]: no elements, but the strides (products of the
// later sizes, 0 counted as 1) overflowed (UBSan: signed integer overflow in
// TensorImpl::set_sizes_contiguous). [2^62] float64 overflowed the byte count to 0 and
// allocated nothing for 2^62 elements. Note [Sizes that fit].
TEST(Regressions, EmptyRejectsSizesWhoseStridesOrBytesOverflow) {
  const int64_t big = int64_t(1) << 40;
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{0, big, big}, {big, big, 0}, {4, int64_t(1) << 62, 0}}) {
    EXPECT_THROW(empty(sizes, kUInt8), Error);
    EXPECT_THROW(zeros(sizes), Error);
  }
  try {
    empty({int64_t(1) << 62}, kFloat64);
    ADD_FAILURE() << "empty({2^62}, float64) did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs more than 2^63 bytes"), std::string::npos) << e.what();
  }
  // The largest strides that fit are fine when there are no elements.
  Tensor t = empty({0, int64_t(1) << 62, 1}, kFloat64);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.stride(0), int64_t(1) << 62);
}

// randint over a range wider than 2^63 computed high - low in int64 (UBSan: signed overflow in
// Random.cpp, reached by test_io's randint(-2^62, 2^62)). Every value must lie in [low, high),
// and a wide range must reach the sign it spans.
TEST(Regressions, RandintRangeWiderThanInt64) {
  manual_seed(3);
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  for (auto [l, h] : {std::pair<int64_t, int64_t>{lo, hi}, {-(int64_t(1) << 62), int64_t(1) << 62}, {lo, 0}, {-1, hi}}) {
    Tensor r = tensor::randint(l, h, {4096});
    const int64_t* p = r.data_ptr<int64_t>();
    bool neg = false, pos = false;
    for (int64_t i = 0; i < r.numel(); ++i) {
      ASSERT_GE(p[i], l);
      ASSERT_LT(p[i], h);
      neg = neg || p[i] < 0;
      pos = pos || p[i] >= 0;
    }
    // Ranges that reach far past 0 on a side reach that side with 4096 draws.
    if (l < -(int64_t(1) << 60)) EXPECT_TRUE(neg) << l << " " << h;
    if (h > (int64_t(1) << 60)) EXPECT_TRUE(pos) << l << " " << h;
  }
}
