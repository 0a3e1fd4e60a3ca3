// The random and range factories' per-index bodies (kernels/cuda/RandomBody.h), run on the CPU
// (Note [Kernel bodies run on the CPU]) and compared bit for bit with an independent reference:
// the algorithm the factories used before they had per-backend kernels, written here from the
// Philox primitives of kernels/math/Philox.h (pinned to known answers in test_math_shared):
// float64 values (int64 for randint and an integral arange), then .to(dtype) through the CPU
// copy kernel, then rand's clamp below 1. The CPU factories (which run the same bodies) must
// match that reference too, for every dtype, odd and even counts, several seeds and offsets.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstring>
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/RandomBody.h"

using namespace tensor;
namespace kb = tensor::cuda_kernels;
namespace km = tensor::math;

namespace {

const ScalarType kFloating[] = {kFloat16, kBFloat16, kFloat32, kFloat64};
const ScalarType kReal[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
const int64_t kSizes[] = {0, 1, 2, 7, 64, 257, 1000};
const uint64_t kSeeds[] = {0, 1, 0x123456789abcdefull};

// Runs f(TypeTag-like T*) for the C++ type of a real dtype.
template <class F>
void with_type(ScalarType t, F&& f) {
  switch (t) {
    case kBool: return f(static_cast<bool*>(nullptr));
    case kUInt8: return f(static_cast<uint8_t*>(nullptr));
    case kInt8: return f(static_cast<int8_t*>(nullptr));
    case kInt16: return f(static_cast<int16_t*>(nullptr));
    case kInt32: return f(static_cast<int32_t*>(nullptr));
    case kInt64: return f(static_cast<int64_t*>(nullptr));
    case kFloat16: return f(static_cast<Half*>(nullptr));
    case kBFloat16: return f(static_cast<BFloat16*>(nullptr));
    case kFloat32: return f(static_cast<float*>(nullptr));
    case kFloat64: return f(static_cast<double*>(nullptr));
    default: FAIL() << "unexpected dtype " << to_string(t);
  }
}

void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  Tensor g = got.contiguous(), w = want.contiguous();
  const auto* gp = static_cast<const unsigned char*>(g.data_ptr());
  const auto* wp = static_cast<const unsigned char*>(w.data_ptr());
  const int64_t es = static_cast<int64_t>(element_size(g.dtype()));
  for (int64_t i = 0; i < g.numel(); ++i) {
    if (std::memcmp(gp + i * es, wp + i * es, static_cast<size_t>(es)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " differs: got " << g.to(kFloat64)[i].item<double>() << ", want "
                    << w.to(kFloat64)[i].item<double>();
      return;
    }
  }
}

// The reference draw of n values of rand/randn at counter `base`, in float64 then cast.
Tensor reference_random(int64_t n, uint64_t seed, uint64_t base, bool normal, ScalarType t) {
  Tensor v = empty({n}, kFloat64);
  double* p = v.data_ptr<double>();
  for (int64_t j = 0; j < n; ++j) {
    uint32_t w[4];
    km::philox::draw(seed, base + static_cast<uint64_t>(j / 2), w);
    const double u1 = km::philox::u01_53(w[0], w[1]), u2 = km::philox::u01_53(w[2], w[3]);
    double z[2] = {u1, u2};
    if (normal) km::philox::box_muller(u1, u2, z);
    p[j] = z[j % 2];
  }
  Tensor out = v.to(t);
  if (!normal && t != kFloat64) {
    const double below_one = t == kHalf ? 1.0 - 1.0 / 2048 : t == kBFloat16 ? 1.0 - 1.0 / 256 : 1.0 - 1.0 / 16777216;
    out = out.clamp(std::nullopt, below_one);
  }
  return out;
}

Tensor reference_randint(int64_t n, uint64_t seed, uint64_t base, int64_t low, int64_t high, ScalarType t) {
  Tensor v = empty({n}, kInt64);
  int64_t* p = v.data_ptr<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    uint32_t w[4];
    km::philox::draw(seed, base + static_cast<uint64_t>(j), w);
    p[j] = km::philox::uniform_int(w[0], w[1], low, static_cast<uint64_t>(high) - static_cast<uint64_t>(low));
  }
  return v.to(t);
}

// The bodies' output for a whole tensor, one call per index as the CUDA threads make them.
Tensor body_random(int64_t n, uint64_t seed, uint64_t base, bool normal, ScalarType t) {
  Tensor out = empty({n}, t);
  with_type(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (std::is_floating_point_v<T> || km::is_half_v<T>) {
      T* p = static_cast<T*>(out.data_ptr());
      for (int64_t i = 0; i < (n + 1) / 2; ++i) kb::random_pair_body(p, n, i, seed, base, normal);
    }
  });
  return out;
}

}  // namespace

TEST(RandomBodies, RandAndRandnMatchTheReferenceAndTheFactories) {
  for (bool normal : {false, true}) {
    for (ScalarType t : kFloating) {
      for (uint64_t seed : kSeeds) {
        for (int64_t n : kSizes) {
          const std::string what = std::string(normal ? "randn" : "rand") + " " + to_string(t) + " n=" +
                                   std::to_string(n) + " seed=" + std::to_string(seed);
          // A first draw of 5 elements moves the second one's base to counter 3.
          manual_seed(seed);
          Tensor first = normal ? randn({5}, t) : rand({5}, t);
          Tensor second = normal ? randn({n}, t) : rand({n}, t);
          expect_same_bits(first, reference_random(5, seed, 0, normal, t), what + " (first draw)");
          expect_same_bits(second, reference_random(n, seed, 3, normal, t), what);
          expect_same_bits(body_random(n, seed, 3, normal, t), reference_random(n, seed, 3, normal, t), what + " body");
        }
      }
    }
  }
}

TEST(RandomBodies, RandStaysBelowOneInNarrowDtypes) {
  // A uniform within half an ulp of 1 rounds to 1.0 in a narrower dtype; the body clamps it.
  EXPECT_LT(static_cast<float>(kb::random_store_value<Half>(1.0 - 1e-9, false)), 1.0f);
  EXPECT_EQ(static_cast<float>(kb::random_store_value<Half>(1.0 - 1e-9, false)), 1.0f - 1.0f / 2048);
  EXPECT_EQ(static_cast<float>(kb::random_store_value<BFloat16>(1.0 - 1e-9, false)), 1.0f - 1.0f / 256);
  EXPECT_EQ(kb::random_store_value<float>(1.0 - 1e-12, false), 1.0f - 1.0f / 16777216);
  EXPECT_EQ(kb::random_store_value<float>(1.0 - 1e-12, true), 1.0f);  // randn is not clamped
  EXPECT_EQ(kb::random_store_value<double>(1.0 - 1e-12, false), 1.0 - 1e-12);
}

TEST(RandomBodies, RandintMatchesTheReferenceAndTheFactory) {
  struct Range {
    int64_t low, high;
  };
  for (ScalarType t : kReal) {
    const std::vector<Range> ranges = t == kBool ? std::vector<Range>{{0, 2}}
                                      : t == kUInt8 ? std::vector<Range>{{0, 256}, {3, 10}}
                                      : t == kInt8 ? std::vector<Range>{{-128, 128}, {-5, 6}}
                                                   : std::vector<Range>{{-1000, 1000}, {0, 7}, {-100, -99}};
    for (const Range& r : ranges) {
      for (uint64_t seed : kSeeds) {
        for (int64_t n : kSizes) {
          const std::string what = std::string("randint ") + to_string(t) + " [" + std::to_string(r.low) + ", " +
                                   std::to_string(r.high) + ") n=" + std::to_string(n) + " seed=" + std::to_string(seed);
          manual_seed(seed);
          (void)randint(0, 10, {3});  // moves the next draw to counter 3
          Tensor got = randint(r.low, r.high, {n}, t);
          Tensor want = reference_randint(n, seed, 3, r.low, r.high, t);
          expect_same_bits(got, want, what);
          Tensor body = empty({n}, t);
          with_type(t, [&](auto* tag) {
            using T = std::remove_pointer_t<decltype(tag)>;
            T* p = static_cast<T*>(body.data_ptr());
            for (int64_t i = 0; i < n; ++i)
              kb::randint_body(p, i, seed, 3, r.low, static_cast<uint64_t>(r.high) - static_cast<uint64_t>(r.low));
          });
          expect_same_bits(body, want, what + " body");
        }
      }
    }
  }
  // The full int64 range and a range over 2^63 wrap in uint64 without overflow.
  manual_seed(5);
  expect_same_bits(randint(-(int64_t(1) << 62), int64_t(1) << 62, {33}),
                   reference_randint(33, 5, 0, -(int64_t(1) << 62), int64_t(1) << 62, kInt64), "randint wide");
}

// randperm (Note [randperm by sorted keys]): the permutation that sorts randint's keys over
// [0, 2^62) from the same counters, equal keys in index order; computed here by sorting
// (key, index) pairs, an independent statement of "stable".
TEST(RandomBodies, RandpermIsTheStableArgsortOfRandintKeys) {
  for (uint64_t seed : kSeeds) {
    for (int64_t n : kSizes) {
      const std::string what = "randperm n=" + std::to_string(n) + " seed=" + std::to_string(seed);
      manual_seed(seed);
      (void)rand({5});  // counters 0..2 taken: the keys start at counter 3
      Tensor got = randperm(n);
      Tensor keys = reference_randint(n, seed, 3, 0, int64_t(1) << 62, kInt64);
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (int64_t i = 0; i < n; ++i) pairs.emplace_back(keys.data_ptr<int64_t>()[i], i);
      std::sort(pairs.begin(), pairs.end());
      ASSERT_EQ(got.dtype(), kInt64) << what;
      ASSERT_EQ(got.numel(), n) << what;
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got.data_ptr<int64_t>()[i], pairs[i].second) << what << " at " << i;
      // The generator moved past the n keys.
      Tensor next = rand({2}, kFloat64);
      expect_same_bits(next, reference_random(2, seed, 3 + n, false, kFloat64), what + " next draw");
    }
  }
  // Other dtypes hold the same values; a dtype that cannot hold n - 1 exactly is refused.
  manual_seed(9);
  Tensor a = randperm(200);
  for (ScalarType t : {kUInt8, kInt16, kInt32, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    manual_seed(9);
    Tensor b = randperm(200, t);
    EXPECT_EQ(b.dtype(), t);
    EXPECT_TRUE(b.to(kInt64).equal(a)) << to_string(t);
  }
}

TEST(RandomBodies, ArangeMatchesTheReferenceAndTheFactory) {
  struct Case {
    Scalar start, end, step;
  };
  const std::vector<Case> cases = {{0, 10, 1},    {0, 10, 3},      {5, -7, -2},        {-3, 4, 1},
                                   {0.5, 10.3, 0.7}, {1, 0, -0.1}, {-2.25, 3.0, 0.125}, {0, 100, 0.3}};
  for (const Case& c : cases) {
    const bool all_int = c.start.is_integral(true) && c.end.is_integral(true) && c.step.is_integral(true);
    for (ScalarType t : kReal) {
      if (t == kBool) continue;
      const std::string what = "arange(" + std::to_string(c.start.to_double()) + ", " + std::to_string(c.end.to_double()) +
                               ", " + std::to_string(c.step.to_double()) + ") " + to_string(t);
      Tensor got = arange(c.start, c.end, c.step, t);
      const int64_t n = got.numel();
      // The reference: the pre-kernel loop in int64 or double, then .to(dtype).
      Tensor v = empty({n}, all_int ? kInt64 : kFloat64);
      for (int64_t i = 0; i < n; ++i) {
        if (all_int) v.data_ptr<int64_t>()[i] = c.start.to_long() + i * c.step.to_long();
        else v.data_ptr<double>()[i] = c.start.to_double() + static_cast<double>(i) * c.step.to_double();
      }
      const int64_t want_n = all_int ? (c.end.to_long() - c.start.to_long() + c.step.to_long() - (c.step.to_long() > 0 ? 1 : -1)) /
                                           c.step.to_long()
                                     : static_cast<int64_t>(std::ceil((c.end.to_double() - c.start.to_double()) / c.step.to_double()));
      ASSERT_EQ(n, want_n) << what;
      expect_same_bits(got, v.to(t), what);
      kernels::ArangeParams p;
      p.integral = all_int;
      p.istart = all_int ? c.start.to_long() : 0;
      p.istep = all_int ? c.step.to_long() : 0;
      p.start = c.start.to_double();
      p.step = c.step.to_double();
      Tensor body = empty({n}, t);
      with_type(t, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        for (int64_t i = 0; i < n; ++i) kb::arange_body(static_cast<T*>(body.data_ptr()), i, p);
      });
      expect_same_bits(body, v.to(t), what + " body");
    }
  }
  // The default dtypes: int64 for integral arguments, the default dtype otherwise.
  EXPECT_EQ(arange(0, 5).dtype(), kInt64);
  EXPECT_EQ(arange(0, 5, 0.5).dtype(), get_default_dtype());
}

TEST(RandomBodies, LinspaceMatchesTheReferenceAndTheFactory) {
  struct Case {
    double start, end;
    int64_t steps;
  };
  const std::vector<Case> cases = {{0, 1, 0}, {0, 1, 1}, {0, 1, 2}, {0, 1, 7}, {-3.5, 2.25, 11}, {10, -10, 100}, {0, 255, 256}};
  for (const Case& c : cases) {
    for (ScalarType t : kReal) {
      const std::string what = "linspace(" + std::to_string(c.start) + ", " + std::to_string(c.end) + ", " +
                               std::to_string(c.steps) + ") " + to_string(t);
      Tensor got = linspace(c.start, c.end, c.steps, t);
      // The reference: PyTorch's symmetric formula in double (one step is start), then .to(dtype).
      const double step = c.steps > 1 ? (c.end - c.start) / static_cast<double>(c.steps - 1) : 0.0;
      Tensor v = empty({c.steps}, kFloat64);
      for (int64_t i = 0; i < c.steps; ++i)
        v.data_ptr<double>()[i] = c.steps == 1          ? c.start
                                  : i < c.steps / 2 ? c.start + step * static_cast<double>(i)
                                                    : c.end - step * static_cast<double>(c.steps - 1 - i);
      expect_same_bits(got, v.to(t), what);
      const kernels::LinspaceParams p{c.start, c.steps == 1 ? c.start : c.end, step, c.steps};
      Tensor body = empty({c.steps}, t);
      with_type(t, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        for (int64_t i = 0; i < c.steps; ++i) kb::linspace_body(static_cast<T*>(body.data_ptr()), i, p);
      });
      expect_same_bits(body, v.to(t), what + " body");
    }
  }
  // One step is start (as PyTorch), and the ends are exact, whatever the step's rounding.
  EXPECT_EQ(linspace(2.5, 7, 1, kFloat64).item<double>(), 2.5);
  Tensor l = linspace(0.1, 0.7, 13, kFloat64);
  EXPECT_EQ(l[0].item<double>(), 0.1);
  EXPECT_EQ(l[12].item<double>(), 0.7);
}

TEST(RandomBodies, ParallelDrawsEqualSerialOnes) {
  // Above the OpenMP grain the CPU kernels split the pairs across threads: same bits.
  for (ScalarType t : {kFloat32, kFloat64, kBFloat16}) {
    manual_seed(11);
    Tensor big = randn({200001}, t);
    expect_same_bits(big, reference_random(200001, 11, 0, true, t), std::string("randn big ") + to_string(t));
  }
  manual_seed(12);
  expect_same_bits(randint(-7, 9, {150001}, kInt32), reference_randint(150001, 12, 0, -7, 9, kInt32), "randint big");
  expect_same_bits(arange(0.0, 70000.5, 0.5, kFloat32), arange(0.0, 70000.5, 0.5, kFloat64).to(kFloat32), "arange big");
}

TEST(RandomBodies, BadArgumentsRaiseNamingTheOp) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { (void)rand({3}, kInt32); }).find("rand: expected a floating point dtype, got int32"),
            std::string::npos);
  EXPECT_NE(message([] { (void)randn({2, 2}, kInt64); }).find("randn"), std::string::npos);
  EXPECT_NE(message([] { (void)randint(5, 5, {3}); }).find("randint: expected low < high"), std::string::npos);
  EXPECT_NE(message([] { (void)linspace(0, 1, -1); }).find("linspace"), std::string::npos);
  EXPECT_NE(message([] { (void)arange(0, 1, 0); }).find("arange: step must be nonzero"), std::string::npos);
  EXPECT_NE(message([] { (void)arange(0, 5, -1); }).find("arange"), std::string::npos);
  EXPECT_NE(message([] { (void)randperm(-1); }).find("randperm: n must be non-negative, got -1"), std::string::npos);
  // 0 .. n-1 must be exact in the dtype: bfloat16 holds every integer up to 256, int8 up to 127.
  EXPECT_NO_THROW((void)randperm(257, kBFloat16));
  EXPECT_NE(message([] { (void)randperm(258, kBFloat16); }).find("randperm: n is too large for result tensor type bfloat16"),
            std::string::npos);
  EXPECT_NO_THROW((void)randperm(128, kInt8));
  EXPECT_NE(message([] { (void)randperm(129, kInt8); }).find("too large"), std::string::npos);
  EXPECT_NE(message([] { (void)randperm(3, kBool); }).find("randperm: expected a real integer or floating dtype"),
            std::string::npos);
  // A failed call does not advance the generator.
  manual_seed(3);
  Tensor a = rand({4}, kFloat64);
  manual_seed(3);
  (void)message([] { (void)rand({3}, kInt32); });
  expect_same_bits(rand({4}, kFloat64), a, "rand after a refused call");
}

TEST(RandomBodies, RequiresGradAndMetaFollowTheOptions) {
  Tensor r = rand({3}, TensorOptions(kFloat32).requires_grad(true));
  EXPECT_TRUE(r.requires_grad());
  EXPECT_TRUE(r.is_leaf());
  Tensor m = randn({2, 3}, TensorOptions(kFloat16).device(Device(kMeta)));
  EXPECT_EQ(m.dtype(), kFloat16);
  EXPECT_EQ(m.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(arange(0, 10, 3, TensorOptions().device(Device(kMeta))).numel(), 4);
  EXPECT_EQ(linspace(0, 1, 9, TensorOptions().device(Device(kMeta))).dtype(), get_default_dtype());
}
