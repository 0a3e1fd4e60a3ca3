// The op table's hostile-input mode (issue 23): every unary, binary and structured row of
// tests/op_table.h is called with inputs a hostile user sends: empty dims (an empty inner dim
// included), stride-0 views whose element count is astronomically large, the integer extremes
// (INT64_MIN, -1, 0 as divisors), NaN, infinities and -0.0, and out-of-range and negative
// indices. Each call gives libtorch's answer (checked against the row's float64 reference
// where that reference is exact) or a clear tensor::Error naming the op; a crash or a hang
// fails the whole test binary, so none of them can pass silently.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/op_table.h"

using namespace tensor;
using namespace tensor::optable;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Runs f; true when it returned, false when it raised tensor::Error (any other exception, a
// crash or a hang fails).
template <class F>
bool returns(F&& f, const std::string& what, std::string* message = nullptr) {
  try {
    f();
    return true;
  } catch (const Error& e) {
    if (message) *message = e.what();
    EXPECT_FALSE(std::string(e.what()).empty()) << what;
    return false;
  }
}

// Whether `got` (the op's value, as double) is the reference `want`: NaN matches NaN, and
// values agree to the dtype's precision.
bool same_value(double got, double want, ScalarType t) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  const double tol = t == kFloat64 ? 1e-12 : t == kFloat32 ? 1e-5 : 1e-2;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

const std::vector<std::vector<int64_t>> kEmptyShapes = {{0}, {3, 0}, {0, 4}, {2, 0, 3}};

}  // namespace

// Empty tensors (any dim, the inner one included): an empty result of the right shape and
// dtype, as libtorch, in every dtype the row takes.
TEST(HostileOpTable, UnaryRowsOnEmptyTensors) {
  for (const UnaryCase& c : unary_cases())
    for (ScalarType t : c.dtypes)
      for (const auto& shape : kEmptyShapes) {
        const std::string what = c.name + " " + to_string(t) + " " + ::testing::PrintToString(shape);
        Tensor out;
        ASSERT_TRUE(returns([&] { out = c.fn(zeros(shape, t)); }, what)) << what;
        EXPECT_EQ(out.sizes().vec(), shape) << what;
        EXPECT_EQ(out.numel(), 0) << what;
      }
}

TEST(HostileOpTable, BinaryRowsOnEmptyAndBroadcastEmptyTensors) {
  struct Pair {
    std::vector<int64_t> a, b, out;
  };
  const std::vector<Pair> pairs = {{{0}, {0}, {0}}, {{3, 0}, {3, 1}, {3, 0}}, {{0, 4}, {4}, {0, 4}},
                                   {{2, 1, 3}, {0, 1}, {2, 0, 3}}, {{1}, {0}, {0}}};
  for (const BinaryCase& c : binary_cases())
    for (ScalarType t : c.dtypes)
      for (const Pair& p : pairs) {
        const std::string what = c.name + " " + to_string(t) + " " + ::testing::PrintToString(p.a) + " with " +
                                 ::testing::PrintToString(p.b);
        Tensor out;
        ASSERT_TRUE(returns([&] { out = c.fn(ones(p.a, t), ones(p.b, t)); }, what)) << what;
        EXPECT_EQ(out.sizes().vec(), p.out) << what;
      }
  // Shapes that do not broadcast raise naming both, never a crash.
  for (const BinaryCase& c : binary_cases()) {
    std::string msg;
    EXPECT_FALSE(returns([&] { (void)c.fn(ones({3, 0}, c.dtypes[0]), ones({2}, c.dtypes[0])); }, c.name, &msg)) << c.name;
    EXPECT_NE(msg.find("[3, 0]"), std::string::npos) << c.name << ": " << msg;
  }
}

// A stride-0 view can describe 2^62 elements without storing them: an op that would have to
// materialise the result must raise (out of memory) instead of crashing or wrapping a count.
TEST(HostileOpTable, AstronomicalStrideZeroViewsRaiseOrStayViews) {
  const int64_t big = int64_t{1} << 31;
  Tensor huge = ones({1, 1}).expand({big, big});  // 2^62 elements, one stored
  for (const UnaryCase& c : unary_cases()) {
    if (c.name == "neg" || c.name == "abs") continue;  // a few rows are enough for the allocator path
    std::string msg;
    EXPECT_FALSE(returns([&] { (void)c.fn(huge.to(c.dtypes[0])); }, c.name, &msg)) << c.name;
    break;
  }
  for (const BinaryCase& c : binary_cases()) {
    std::string msg;
    Tensor a = ones({1, 1}, c.dtypes[0]).expand({big, big});
    EXPECT_FALSE(returns([&] { (void)c.fn(a, a); }, c.name, &msg)) << c.name;
    EXPECT_FALSE(msg.empty()) << c.name;
  }
}

// NaN, infinities and -0.0 through every floating unary row, compared with its float64
// reference: libtorch's answers (IEEE semantics) where the reference defines them.
TEST(HostileOpTable, UnaryRowsOnNaNInfAndSignedZero) {
  const std::vector<double> specials = {kNaN, kInf, -kInf, -0.0, 0.0};
  for (const UnaryCase& c : unary_cases())
    for (ScalarType t : c.dtypes) {
      if (!is_floating_point(t)) continue;
      Tensor x = tensor::tensor(specials, kFloat64).to(t);
      Tensor y;
      const std::string what = c.name + " " + to_string(t);
      ASSERT_TRUE(returns([&] { y = c.fn(x); }, what)) << what;
      Tensor yd = y.to(kFloat64);
      for (size_t i = 0; i < specials.size(); ++i) {
        const double want = c.ref(specials[i]);
        const double got = yd[static_cast<int64_t>(i)].item<double>();
        if (c.bool_out) {
          EXPECT_EQ(got != 0, want != 0) << what << " at " << specials[i];
        } else {
          EXPECT_TRUE(same_value(got, want, t)) << what << "(" << specials[i] << ") = " << got << ", want " << want;
        }
      }
    }
}

TEST(HostileOpTable, BinaryRowsOnNaNAndInfinities) {
  const std::vector<double> specials = {kNaN, kInf, -kInf, -0.0, 1.5};
  std::vector<double> a, b;
  for (double x : specials)
    for (double y : specials) a.push_back(x), b.push_back(y);
  for (const BinaryCase& c : binary_cases())
    for (ScalarType t : c.dtypes) {
      if (!is_floating_point(t)) continue;
      const std::string what = c.name + " " + to_string(t);
      Tensor out;
      ASSERT_TRUE(returns([&] { out = c.fn(tensor::tensor(a, kFloat64).to(t), tensor::tensor(b, kFloat64).to(t)); }, what))
          << what;
      Tensor od = out.to(kFloat64);
      for (size_t i = 0; i < a.size(); ++i) {
        const double want = c.ref(a[i], b[i]);
        const double got = od[static_cast<int64_t>(i)].item<double>();
        if (c.bool_out) {
          EXPECT_EQ(got != 0, want != 0) << what << "(" << a[i] << ", " << b[i] << ")";
        } else {
          EXPECT_TRUE(same_value(got, want, t)) << what << "(" << a[i] << ", " << b[i] << ") = " << got << ", want " << want;
        }
      }
    }
}

// The integer extremes through every integer row: INT64_MIN / -1 and x / 0 used to trap
// (SIGFPE). Each pair returns a value or raises naming the op; where the row's double reference
// is exact (comparisons, min/max, bitwise ops, and any result within 2^53), the value is checked.
TEST(HostileOpTable, IntegerRowsOnExtremesAndZeroDivisors) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> specials = {lo, -1, 0, 1, hi};
  std::vector<int64_t> a, b;
  for (int64_t x : specials)
    for (int64_t y : specials) a.push_back(x), b.push_back(y);
  for (const BinaryCase& c : binary_cases())
    for (ScalarType t : c.dtypes) {
      if (t != kInt64 && t != kInt32) continue;
      const std::string what = c.name + " " + to_string(t);
      // int32 takes the extremes of its own range.
      auto narrow = [&](int64_t v) -> int64_t {
        if (t == kInt64) return v;
        return v == lo ? std::numeric_limits<int32_t>::min() : v == hi ? std::numeric_limits<int32_t>::max() : v;
      };
      for (size_t i = 0; i < a.size(); ++i) {
        const int64_t x = narrow(a[i]), y = narrow(b[i]);
        Tensor out;
        std::string msg;
        const bool ok = returns([&] { out = c.fn(tensor::tensor({x}, t), tensor::tensor({y}, t)); }, what, &msg);
        if (!ok) {
          EXPECT_NE(msg.find(c.name + ": integer division by zero"), std::string::npos)
              << what << "(" << x << ", " << y << "): " << msg;
          EXPECT_EQ(y, 0) << what << "(" << x << ", " << y << ") raised: " << msg;
          continue;
        }
        const double want = c.ref(static_cast<double>(x), static_cast<double>(y));
        if (c.bool_out || std::fabs(want) < 9007199254740992.0) {
          // Only where x and y are exact doubles and the op cannot overflow the dtype.
          const bool exact_inputs = std::fabs(double(x)) < 9007199254740992.0 && std::fabs(double(y)) < 9007199254740992.0;
          const bool no_overflow = std::fabs(want) <= double(t == kInt64 ? hi : std::numeric_limits<int32_t>::max());
          if ((exact_inputs || c.bool_out) && no_overflow && std::isfinite(want))
            EXPECT_EQ(out.to(kFloat64).item<double>(), want) << what << "(" << x << ", " << y << ")";
        }
      }
    }
}

// Integer add, sub, mul, pow, neg, abs and square wrap modulo 2^bits (Note [Integer overflow
// wraps]), as libtorch's answers on every integer dtype; the reference reduces the exact 128-bit
// result. 37 elements take the vector path and its scalar tail.
TEST(HostileOpTable, IntegerOverflowWrapsAsTwosComplement) {
  using I128 = __int128;
  for (ScalarType t : {kInt8, kInt16, kInt32, kInt64, kUInt8}) {
    const int bits = static_cast<int>(element_size(t)) * 8;
    const bool is_signed = t != kUInt8;
    const I128 mod = I128(1) << bits;
    const I128 lo = is_signed ? -(mod / 2) : 0, hi = is_signed ? mod / 2 - 1 : mod - 1;
    auto wrap = [&](I128 v) {
      v %= mod;
      if (v < 0) v += mod;
      return v > hi ? v - mod : v;
    };
    const std::vector<I128> specials = {lo, lo + 1, is_signed ? I128(-1) : I128(2), 0, 1, hi - 1, hi};
    std::vector<int64_t> a, b;
    for (size_t i = 0; i < 37; ++i) {
      a.push_back(static_cast<int64_t>(specials[i % specials.size()]));
      b.push_back(static_cast<int64_t>(specials[(i / specials.size()) % specials.size()]));
    }
    Tensor x = tensor::tensor(a, kInt64).to(t), y = tensor::tensor(b, kInt64).to(t);
    Tensor e = tensor::tensor(b, kInt64).abs().remainder(4).to(t);  // small exponents, 0..3
    const Tensor sum = x + y, diff = x - y, prod = x * y, power = x.pow(e), neg = is_signed ? -x : x, ab = x.abs(),
                 sq = x.square();
    for (size_t i = 0; i < a.size(); ++i) {
      const I128 u = a[i], v = b[i];
      const std::string what = std::string(to_string(t)) + " (" + std::to_string(a[i]) + ", " + std::to_string(b[i]) + ")";
      const auto at = [&](const Tensor& r) { return r.to(kInt64)[static_cast<int64_t>(i)].item<int64_t>(); };
      EXPECT_EQ(at(sum), static_cast<int64_t>(wrap(u + v))) << "add " << what;
      EXPECT_EQ(at(diff), static_cast<int64_t>(wrap(u - v))) << "sub " << what;
      EXPECT_EQ(at(prod), static_cast<int64_t>(wrap(u * v))) << "mul " << what;
      I128 p = 1;
      for (int64_t k = at(e); k > 0; --k) p = wrap(p * u);
      EXPECT_EQ(at(power), static_cast<int64_t>(p)) << "pow " << what << " exponent " << at(e);
      if (is_signed) EXPECT_EQ(at(neg), static_cast<int64_t>(wrap(-u))) << "neg " << what;
      EXPECT_EQ(at(ab), static_cast<int64_t>(wrap(u < 0 ? -u : u))) << "abs " << what;
      EXPECT_EQ(at(sq), static_cast<int64_t>(wrap(u * u))) << "square " << what;
    }
  }
}

// Out-of-range and negative indices in every indexing row: libtorch raises for each, naming
// the index; nothing is read or written out of bounds.
TEST(HostileOpTable, IndexingOpsRefuseOutOfRangeIndices) {
  const int64_t lo = std::numeric_limits<int64_t>::min();
  Tensor x = arange(12, kFloat32).reshape({3, 4});
  for (int64_t bad : {int64_t{3}, int64_t{-4}, int64_t{1} << 40, lo}) {
    const std::string what = "index " + std::to_string(bad);
    Tensor idx = tensor::tensor({int64_t{0}, bad});
    EXPECT_THROW((void)x.index_select(0, idx), Error) << what;
    EXPECT_THROW((void)x.gather(0, tensor::tensor({{int64_t{0}, bad, int64_t{0}, int64_t{0}}})), Error) << what;
    EXPECT_THROW((void)x.scatter(0, tensor::tensor({{int64_t{0}, bad, int64_t{0}, int64_t{0}}}), ones({1, 4})), Error)
        << what;
    EXPECT_THROW((void)x.scatter_add(0, tensor::tensor({{bad, int64_t{0}, int64_t{0}, int64_t{0}}}), ones({1, 4})),
                 Error)
        << what;
    EXPECT_THROW((void)x.index_add(0, idx, ones({2, 4})), Error) << what;
  }
  // The input is unchanged by the refused calls.
  EXPECT_TRUE(x.equal(arange(12, kFloat32).reshape({3, 4})));
  // A negative index within range counts from the end where libtorch allows it (index_select
  // does not: it raises too).
  EXPECT_THROW((void)x.index_select(0, tensor::tensor({int64_t{-1}})), Error);
  EXPECT_TRUE(x[-1].equal(x[2]));
}

// Every structured row on empty inputs of its own rank (each dim in turn set to 0) returns or
// raises a tensor::Error; none crashes or hangs.
TEST(HostileOpTable, StructuredRowsOnEmptyInputs) {
  int returned = 0, raised = 0;
  for (const StructuredCase& c : structured_cases()) {
    const size_t rank = c.shapes[0].size();
    for (size_t d = 0; d < rank; ++d) {
      std::vector<Tensor> in;
      for (size_t k = 0; k < c.shapes.size(); ++k) {
        std::vector<int64_t> s = c.shapes[k];
        if (k == 0 || (s.size() == rank && s[d] == c.shapes[0][d])) s[d] = 0;
        in.push_back(randn(s, kFloat64));
      }
      const std::string what = c.name + " with dim " + std::to_string(d) + " empty";
      std::string msg;
      if (returns([&] { (void)c.fn(in); }, what, &msg)) ++returned;
      else ++raised;
    }
  }
  EXPECT_GT(returned, 0);
  std::printf("structured rows on empty inputs: %d returned, %d raised a tensor::Error\n", returned, raised);
}
