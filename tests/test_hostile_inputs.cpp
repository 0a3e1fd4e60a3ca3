// Hostile inputs from issue 23: each case gives libtorch's answer or a clear tensor::Error
// naming the op, never a crash, a hang or a silent wrong value.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstdint>
#include <limits>
#include <string>

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
