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

