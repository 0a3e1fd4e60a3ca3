// Hostile inputs from issue 23: each case gives libtorch's answer or a clear tensor::Error
// naming the op, never a crash, a hang or a silent wrong value.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace tensor;

namespace {
// Runs f, expects a tensor::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F&& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected tensor::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}
}  // namespace

// ---- expand: sizes are validated, and a count that overflows int64 raises ----

TEST(HostileExpand, ElementCountOverflowRaises) {
  // 2^32 * 2^32 wraps to 0 in int64: numel() was 0 and sum() 0, silently. libtorch raises.
  expect_error([] { ones({1, 1}).expand({int64_t{1} << 32, int64_t{1} << 32}); },
               {"expand", "[4294967296, 4294967296]", "int64"});
  // Three factors whose wrapped product is not 0 either.
  expect_error([] { ones({1, 1, 1}).expand({int64_t{1} << 31, int64_t{1} << 31, 3}); }, {"expand", "int64"});
}

TEST(HostileExpand, LargeButCountableExpandStillWorks) {
  // 2^31 * 2^31 = 2^62 fits: a stride-0 view of one element, never materialised.
  Tensor e = ones({1, 1}).expand({int64_t{1} << 31, int64_t{1} << 31});
  EXPECT_EQ(e.numel(), int64_t{1} << 62);
  EXPECT_EQ(e.stride(0), 0);
  // An empty dim makes any other size countable (libtorch: numel 0).
  Tensor z = ones({1, 0}).expand({int64_t{1} << 62, 0});
  EXPECT_EQ(z.numel(), 0);
  Tensor z2 = ones({0, 1}).expand({0, int64_t{1} << 62}).unsqueeze(0).expand({int64_t{1} << 62, 0, int64_t{1} << 62});
  EXPECT_EQ(z2.numel(), 0);
}

TEST(HostileExpand, NegativeSizeOtherThanMinusOneRaises) {
  // ones({1}).expand({-2}) returned a tensor of size -2.
  expect_error([] { ones({1}).expand({-2}); }, {"expand", "-2"});
  expect_error([] { ones({1, 3}).expand({-5, 3}); }, {"expand", "-5"});
  // -1 keeps the existing size.
  Tensor k = ones({2, 1}).expand({-1, 4});
  EXPECT_EQ(k.size(0), 2);
  EXPECT_EQ(k.size(1), 4);
}

TEST(HostileExpand, MessageNamesTheOffendingSizeInANewLeadingDim) {
  // It named -1 whatever the size was.
  try {
    ones({3}).expand({-5, 3});
    ADD_FAILURE() << "expected tensor::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("-5"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("-1 "), std::string::npos) << msg;
  }
  expect_error([] { ones({3}).expand({-1, 3}); }, {"expand", "-1", "leading"});
}

TEST(HostileExpand, ViewToAnOverflowingShapeRaises) {
  // The count wrapped to 0 for an empty tensor too, so view() accepted it: every shape now
  // passes the one check where numel is computed.
  expect_error([] { zeros({0}).view({int64_t{1} << 32, int64_t{1} << 32}); }, {"int64"});
  expect_error([] { zeros({0}).reshape({int64_t{1} << 32, int64_t{1} << 32}); }, {"int64"});
}

// ---- INT64_MIN / -1: no SIGFPE, the wrapped answer (Note [Integer division by -1]) ----

namespace {
template <class T>
void check_min_by_minus_one(ScalarType dt) {
  const T mn = std::numeric_limits<T>::min();
  // Contiguous (a vector long enough for a vectorized loop), broadcast divisor, strided
  // operands and a 0-dim divisor: each path of the CPU loop.
  std::vector<int64_t> av(37, mn), bv(37, -1);
  av[3] = 7;
  av[5] = -7;
  bv[5] = 2;
  Tensor a = tensor::tensor(av, TensorOptions().dtype(dt)), b = tensor::tensor(bv, TensorOptions().dtype(dt));
  auto at = [](const Tensor& t, int64_t i) { return t.select(0, i).item<T>(); };
  for (const Tensor& q : {div(a, b, "trunc"), div(a, b, "floor")}) {
    EXPECT_EQ(at(q, 0), mn);
    EXPECT_EQ(at(q, 36), mn);
    EXPECT_EQ(at(q, 3), T(-7));
  }
  EXPECT_EQ(at(div(a, b, "floor"), 5), T(-4));  // -7 // 2 (Python)
  EXPECT_EQ(at(div(a, b, "trunc"), 5), T(-3));
  for (const Tensor& r : {remainder(a, b), fmod(a, b)}) EXPECT_EQ(at(r, 0), T(0));
  EXPECT_EQ(at(remainder(a, b), 5), T(1));  // -7 % 2 == 1 (Python)
  EXPECT_EQ(at(fmod(a, b), 5), T(-1));      // C's fmod keeps the dividend's sign

  Tensor m1 = tensor::scalar_tensor(-1, TensorOptions().dtype(dt));
  Tensor full_min = full({64}, static_cast<int64_t>(mn), TensorOptions().dtype(dt));
  EXPECT_TRUE(equal(div(full_min, m1, "floor"), full_min));
  EXPECT_TRUE(equal(div(full_min, m1, "trunc"), full_min));
  EXPECT_TRUE(equal(remainder(full_min, m1), zeros({64}, dt)));
  EXPECT_TRUE(equal(fmod(full_min, Scalar(-1)), zeros({64}, dt)));
  EXPECT_TRUE(equal(remainder(full_min, Scalar(-1)), zeros({64}, dt)));
  // Strided: every other element of a [2, 64] tensor, divisor transposed.
  Tensor strided = full({64, 2}, static_cast<int64_t>(mn), TensorOptions().dtype(dt)).t();
  Tensor neg = full({2, 64}, -1, TensorOptions().dtype(dt)).t().contiguous().t();
  EXPECT_TRUE(equal(div(strided, neg, "floor"), full({2, 64}, static_cast<int64_t>(mn), TensorOptions().dtype(dt))));
  EXPECT_TRUE(equal(fmod(strided, neg), zeros({2, 64}, dt)));
  // In place.
  Tensor x = full_min.clone();
  x.remainder_(m1);
  EXPECT_TRUE(equal(x, zeros({64}, dt)));
}
}  // namespace

TEST(HostileIntDivision, MinByMinusOneDoesNotTrap) {
  check_min_by_minus_one<int64_t>(kInt64);
  check_min_by_minus_one<int32_t>(kInt32);
  check_min_by_minus_one<int16_t>(kInt16);
  check_min_by_minus_one<int8_t>(kInt8);
}

TEST(HostileIntDivision, ZeroDivisorStillRaises) {
  Tensor a = full({4}, std::numeric_limits<int64_t>::min(), kInt64);
  expect_error([&] { div(a, zeros({4}, kInt64), "floor"); }, {"div", "division by zero", "int64"});
  expect_error([&] { remainder(a, zeros({}, kInt64)); }, {"remainder", "division by zero"});
}

// ---- matrix products with an empty inner dim (k == 0) or an empty batch ----

TEST(HostileMatmul, EmptyInnerDimGivesZeros) {
  // It raised a reshape error ([2, 3, 0] to [-1, 0]); libtorch returns zeros [2, 3, 4].
  Tensor r = matmul(ones({2, 3, 0}), ones({0, 4}));
  EXPECT_EQ(r.sizes(), IntArrayRef({2, 3, 4}));
  EXPECT_TRUE(equal(r, zeros({2, 3, 4})));
  Tensor v = matmul(ones({2, 3, 0}), ones({0}));
  EXPECT_EQ(v.sizes(), IntArrayRef({2, 3}));
  EXPECT_TRUE(equal(v, zeros({2, 3})));
  EXPECT_TRUE(equal(matmul(ones({0}), ones({2, 0, 4})), zeros({2, 4})));
  EXPECT_TRUE(equal(matmul(ones({5, 2, 3, 0}), ones({2, 0, 4})), zeros({5, 2, 3, 4})));
  EXPECT_TRUE(equal(matmul(ones({0}), ones({0})), zeros({})));
  EXPECT_TRUE(equal(mm(ones({3, 0}), ones({0, 4})), zeros({3, 4})));
  EXPECT_TRUE(equal(bmm(ones({2, 3, 0}), ones({2, 0, 4})), zeros({2, 3, 4})));
  // Integer and float64 take other kernels than float32's oneDNN.
  EXPECT_TRUE(equal(matmul(ones({2, 3, 0}, kInt64), ones({0, 4}, kInt64)), zeros({2, 3, 4}, kInt64)));
  EXPECT_TRUE(equal(matmul(ones({2, 3, 0}, kFloat64), ones({0, 4}, kFloat64)), zeros({2, 3, 4}, kFloat64)));
}

TEST(HostileMatmul, EmptyInnerDimWithBiasGivesTheBias) {
  // linear over [3, 2, 0] inputs: rows were counted as numel / in_features = 0.
  Tensor bias = tensor::tensor({1.0f, 2.0f, 3.0f, 4.0f});
  Tensor y = linear(ones({3, 2, 0}), ones({4, 0}), bias);
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 2, 4}));
  EXPECT_TRUE(equal(y, bias.expand({3, 2, 4})));
  EXPECT_TRUE(equal(linear(ones({3, 2, 0}), ones({4, 0})), zeros({3, 2, 4})));
  // addmm: beta * self + alpha * (empty product).
  Tensor self = full({3, 4}, 2.0f);
  EXPECT_TRUE(equal(addmm(self, ones({3, 0}), ones({0, 4}), 3, 5), full({3, 4}, 6.0f)));
  EXPECT_TRUE(equal(addmm(self, ones({3, 0}), ones({0, 4}), 0, 5), zeros({3, 4})));
}

TEST(HostileMatmul, EmptyBatchOrRows) {
  EXPECT_EQ(matmul(ones({0, 3, 2}), ones({2, 4})).sizes(), IntArrayRef({0, 3, 4}));
  EXPECT_EQ(matmul(ones({2, 0, 3, 2}), ones({2, 4})).sizes(), IntArrayRef({2, 0, 3, 4}));
  EXPECT_EQ(matmul(ones({0, 3, 2}), ones({5, 1, 2, 4})).sizes(), IntArrayRef({5, 0, 3, 4}));
  EXPECT_EQ(bmm(ones({0, 3, 2}), ones({0, 2, 4})).sizes(), IntArrayRef({0, 3, 4}));
  EXPECT_EQ(mm(ones({0, 2}), ones({2, 4})).sizes(), IntArrayRef({0, 4}));
  EXPECT_EQ(linear(ones({0, 2}), ones({4, 2}), ones({4})).sizes(), IntArrayRef({0, 4}));
  EXPECT_EQ(matmul(ones({2, 3, 2}), ones({2, 0})).sizes(), IntArrayRef({2, 3, 0}));
}

TEST(HostileMatmul, EmptyInnerDimBackward) {
  // The gradients of an empty product are empty (and the product's grad reaches nothing).
  Tensor a = ones({2, 3, 0}).requires_grad_(), b = ones({0, 4}).requires_grad_();
  matmul(a, b).sum().backward();
  ASSERT_TRUE(a.grad().defined());
  ASSERT_TRUE(b.grad().defined());
  EXPECT_EQ(a.grad().sizes(), IntArrayRef({2, 3, 0}));
  EXPECT_EQ(b.grad().sizes(), IntArrayRef({0, 4}));
  Tensor x = ones({3, 2, 0}).requires_grad_(), w = ones({4, 0}).requires_grad_(), bias = ones({4}).requires_grad_();
  linear(x, w, bias).sum().backward();
  EXPECT_TRUE(equal(bias.grad(), full({4}, 6.0f)));
  EXPECT_EQ(w.grad().sizes(), IntArrayRef({4, 0}));
}

TEST(HostileMatmul, NoOutputFeaturesAndVectorInputsBackward) {
  // out_features == 0: the gradient rows were reshaped with -1 next to a 0 too.
  Tensor x = ones({3, 2, 5}).requires_grad_(), w = ones({0, 5}).requires_grad_();
  Tensor y = linear(x, w);
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 2, 0}));
  y.sum().backward();
  EXPECT_TRUE(equal(x.grad(), zeros({3, 2, 5})));
  EXPECT_EQ(w.grad().sizes(), IntArrayRef({0, 5}));
  // A 1-D input: d(sum(W x + b))/dW = x broadcast over rows (hand values).
  Tensor v = tensor::tensor({1.0f, 2.0f}).requires_grad_(), w2 = ones({3, 2}).requires_grad_();
  linear(v, w2).sum().backward();
  EXPECT_TRUE(equal(w2.grad(), tensor::tensor({1.0f, 2.0f}).expand({3, 2})));
  EXPECT_TRUE(equal(v.grad(), full({2}, 3.0f)));
}

// ---- binary_cross_entropy: inputs outside [0, 1], NaN included, raise as in libtorch ----

TEST(HostileLoss, BinaryCrossEntropyRejectsNaNAndOutOfRangeInputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor target = tensor::tensor({0.0f, 1.0f, 1.0f});
  // A NaN input returned a NaN loss: libtorch raises.
  for (float bad : {nan, -nan, 1.5f, -0.25f, inf, -inf}) {
    Tensor x = tensor::tensor({0.5f, 0.25f, bad});
    expect_error([&] { binary_cross_entropy(x, target); },
                 {"binary_cross_entropy", "all elements of input should be between 0 and 1", "[3]"});
    expect_error([&] { nn::functional::binary_cross_entropy(x, target); }, {"between 0 and 1"});
  }
  // The bounds themselves are valid: log is clamped at -100 (ATen's convention).
  Tensor x = tensor::tensor({0.0f, 1.0f, 0.5f});
  Tensor per = binary_cross_entropy(x, tensor::tensor({1.0f, 1.0f, 0.0f}), std::nullopt, 0);
  EXPECT_FLOAT_EQ(per.select(0, 0).item<float>(), 100.0f);
  EXPECT_FLOAT_EQ(per.select(0, 1).item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(per.select(0, 2).item<float>(), std::log(2.0f));
  // A NaN target is not checked (libtorch neither): the loss is NaN.
  EXPECT_TRUE(std::isnan(binary_cross_entropy(tensor::tensor({0.5f}), tensor::tensor({nan})).item<float>()));
}
