// The random and range factories on CUDA against the CPU (Note [Factory kernels]): for the same
// seed, rand, randint, randperm, arange and linspace give the CPU's bits in every dtype the CUDA
// kernels take, and the generator advances by the same count on either device; randn matches within
// CUDA's math-library accuracy (its log, cos and sin are not glibc's, bit for bit). The fills
// and dropout built over rand match too. Skips without a device.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;

namespace {

const Device kGpu(kCUDA, 0);
const ScalarType kFloating[] = {kFloat16, kBFloat16, kFloat32, kFloat64};
const std::vector<ScalarType>& kReal = tensor::testing::kRealDtypes;
const int64_t kSizes[] = {0, 1, 2, 7, 257, 100001};
const uint64_t kSeeds[] = {0, 42, 0x123456789abcdefull};

TensorOptions on_gpu(ScalarType t) { return TensorOptions(t).device(kGpu); }

// The number of elements whose bytes differ (the first difference is reported).
int64_t differing(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  EXPECT_TRUE(gpu.is_cuda()) << what;
  EXPECT_EQ(gpu.dtype(), cpu.dtype()) << what;
  EXPECT_EQ(gpu.sizes().vec(), cpu.sizes().vec()) << what;
  Tensor g = gpu.cpu().contiguous(), c = cpu.contiguous();
  const auto* gp = static_cast<const unsigned char*>(g.data_ptr());
  const auto* cp = static_cast<const unsigned char*>(c.data_ptr());
  const size_t es = element_size(g.dtype());
  int64_t bad = 0;
  for (int64_t i = 0; i < g.numel(); ++i) {
    if (std::memcmp(gp + i * es, cp + i * es, es) == 0) continue;
    if (bad++ == 0)
      ADD_FAILURE() << what << ": element " << i << " differs: cuda " << g.to(kFloat64)[i].item<double>() << ", cpu "
                    << c.to(kFloat64)[i].item<double>();
  }
  return bad;
}
void expect_same_bits(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  EXPECT_EQ(differing(gpu, cpu, what), 0) << what;
}

// Whether every value of `v` (float64) converts to integer dtype t without overflow: a double
// out of an integer type's range converts to undefined bits in C++ (x86 and CUDA differ), so
// those cases are compared only in dtypes that hold them.
bool fits(ScalarType t, const Tensor& v) {
  if (is_floating_point(t) || t == kBool || v.numel() == 0) return true;
  const double lo = v.min().item<double>(), hi = v.max().item<double>();
  switch (t) {
    case kUInt8: return lo > -1 && hi < 256;
    case kInt8: return lo > -129 && hi < 128;
    case kInt16: return lo > -32769 && hi < 32768;
    case kInt32: return lo > -2147483649.0 && hi < 2147483648.0;
    default: return lo >= -9.2e18 && hi <= 9.2e18;
  }
}

}  // namespace

TEST(CudaRandom, RandMatchesCpuBitForBit) {
  REQUIRE_CUDA();
  for (ScalarType t : kFloating)
    for (uint64_t seed : kSeeds)
      for (int64_t n : kSizes) {
        const std::string what = std::string("rand ") + to_string(t) + " n=" + std::to_string(n) + " seed=" + std::to_string(seed);
        manual_seed(seed);
        Tensor g = rand({n}, on_gpu(t));
        manual_seed(seed);
        expect_same_bits(g, rand({n}, t), what);
      }
}

TEST(CudaRandom, RandnMatchesCpuWithinMathLibraryAccuracy) {
  REQUIRE_CUDA();
  for (ScalarType t : kFloating)
    for (uint64_t seed : kSeeds) {
      const int64_t n = 100001;
      manual_seed(seed);
      Tensor g = randn({n}, on_gpu(t));
      manual_seed(seed);
      Tensor c = randn({n}, t);
      const std::string what = std::string("randn ") + to_string(t) + " seed=" + std::to_string(seed);
      // A few float64 ulps (CUDA's log is within 1 ulp, its sin/cos within 2), so at most one
      // ulp of a narrower dtype, and only where the float64 value sits at a rounding boundary.
      const double tol = t == kFloat64 ? 1e-14 : t == kFloat32 ? 1.2e-7 : t == kHalf ? 1e-3 : 8e-3;
      EXPECT_TRUE(allclose(g.cpu().to(kFloat64), c.to(kFloat64), tol, 1e-300)) << what;
      if (t != kFloat64) {
        // Narrower dtypes round those ulps away almost everywhere.
        Tensor diff = g.cpu().ne(c);
        EXPECT_LE(diff.sum().item<int64_t>(), n / 1000) << what;
      }
    }
}

TEST(CudaRandom, RandintMatchesCpuInEveryDtype) {
  REQUIRE_CUDA();
  for (ScalarType t : kReal)
    for (uint64_t seed : kSeeds)
      for (int64_t n : kSizes) {
        const int64_t low = t == kBool || t == kUInt8 ? 0 : -100, high = t == kBool ? 2 : 100;
        const std::string what = std::string("randint ") + to_string(t) + " n=" + std::to_string(n) + " seed=" + std::to_string(seed);
        manual_seed(seed);
        Tensor g = randint(low, high, {n}, on_gpu(t));
        manual_seed(seed);
        expect_same_bits(g, randint(low, high, {n}, t), what);
      }
  manual_seed(9);
  Tensor wide = randint(-(int64_t(1) << 62), int64_t(1) << 62, {1001}, on_gpu(kInt64));
  manual_seed(9);
  expect_same_bits(wide, randint(-(int64_t(1) << 62), int64_t(1) << 62, {1001}, kInt64), "randint wide");
  // More than the grid's 65536 x 256 threads: the grid-stride loop covers the rest.
  manual_seed(10);
  Tensor big = randint(0, 100, {17000003}, on_gpu(kInt8));
  manual_seed(10);
  expect_same_bits(big, randint(0, 100, {17000003}, kInt8), "randint 17M int8");
}

TEST(CudaRandom, RandpermMatchesCpu) {
  REQUIRE_CUDA();
  // CUB's radix sort and the CPU's stable sort order the same keys the same way (Note
  // [randperm by sorted keys]), in every size the sort's tiles treat differently.
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(2), int64_t(7), int64_t(257), int64_t(100001), int64_t(3000017)}) {
    for (uint64_t seed : kSeeds) {
      const std::string what = "randperm n=" + std::to_string(n) + " seed=" + std::to_string(seed);
      manual_seed(seed);
      Tensor g = randperm(n, on_gpu(kInt64));
      manual_seed(seed);
      expect_same_bits(g, randperm(n), what);
    }
  }
  manual_seed(4);
  Tensor f = randperm(1000, on_gpu(kFloat32));
  manual_seed(4);
  expect_same_bits(f, randperm(1000, kFloat32), "randperm float32");
  EXPECT_THROW((void)randperm(300, on_gpu(kUInt8)), Error);
}

TEST(CudaRandom, ArangeAndLinspaceMatchCpuInEveryDtype) {
  REQUIRE_CUDA();
  struct A {
    Scalar start, end, step;
  };
  const std::vector<A> ar = {{0, 10, 1}, {5, -7, -2}, {0.5, 10.3, 0.7}, {1, 0, -0.1}, {-2.25, 3.0, 0.125},
                             {0, 100000, 0.3}};
  for (const A& a : ar)
    for (ScalarType t : kReal) {
      if (t == kBool) continue;
      const std::string what = "arange(" + std::to_string(a.start.to_double()) + ", " + std::to_string(a.end.to_double()) +
                               ", " + std::to_string(a.step.to_double()) + ") " + to_string(t);
      if (!fits(t, arange(a.start, a.end, a.step, kFloat64))) continue;
      expect_same_bits(arange(a.start, a.end, a.step, on_gpu(t)), arange(a.start, a.end, a.step, t), what);
    }
  struct L {
    double start, end;
    int64_t steps;
  };
  const std::vector<L> ls = {{0, 1, 0}, {0, 1, 1}, {0, 1, 7}, {-3.5, 2.25, 11}, {0.1, 0.7, 100001}};
  for (const L& l : ls)
    for (ScalarType t : kReal) {
      const std::string what = "linspace(" + std::to_string(l.start) + ", " + std::to_string(l.end) + ", " +
                               std::to_string(l.steps) + ") " + to_string(t);
      if (!fits(t, linspace(l.start, l.end, l.steps, kFloat64))) continue;
      expect_same_bits(linspace(l.start, l.end, l.steps, on_gpu(t)), linspace(l.start, l.end, l.steps, t), what);
    }
  EXPECT_EQ(arange(0, 5, TensorOptions().device(kGpu)).dtype(), kInt64);
}

TEST(CudaRandom, GeneratorOffsetAdvancesAsOnTheCpu) {
  REQUIRE_CUDA();
  // CPU draws after CUDA draws continue the all-CPU sequence.
  manual_seed(77);
  (void)rand({7}, on_gpu(kFloat32));
  (void)randint(0, 10, {5}, on_gpu(kInt32));
  (void)randn({3}, on_gpu(kFloat64));
  Tensor after_gpu = rand({9}, kFloat64);
  manual_seed(77);
  (void)rand({7}, kFloat32);
  (void)randint(0, 10, {5}, kInt32);
  (void)randn({3}, kFloat64);
  Tensor all_cpu = rand({9}, kFloat64);
  EXPECT_TRUE(equal(after_gpu, all_cpu));
}

TEST(CudaRandom, FillsAndDropoutMatchCpu) {
  REQUIRE_CUDA();
  for (ScalarType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    const std::string d = to_string(t);
    Tensor gc = empty({33, 17}, on_gpu(t)), cc = empty({33, 17}, t);
    manual_seed(5);
    gc.uniform_(-2, 3);
    manual_seed(5);
    cc.uniform_(-2, 3);
    expect_same_bits(gc, cc, "uniform_ " + d);
    manual_seed(6);
    gc.bernoulli_(0.3);
    manual_seed(6);
    cc.bernoulli_(0.3);
    expect_same_bits(gc, cc, "bernoulli_ " + d);
    manual_seed(7);
    gc.normal_(1.5, 0.5);
    manual_seed(7);
    cc.normal_(1.5, 0.5);
    const double tol = t == kFloat64 ? 1e-14 : t == kFloat32 ? 1e-6 : t == kHalf ? 1e-3 : 8e-3;
    EXPECT_TRUE(allclose(gc.cpu().to(kFloat64), cc.to(kFloat64), tol, tol)) << "normal_ " << d;
    // dropout: the mask is rand < 1 - p, so the kept elements and their scale match exactly.
    Tensor x = randn({64, 31}, t);
    manual_seed(8);
    Tensor gd = nn::functional::dropout(x.to(kGpu), nn::functional::DropoutFuncOptions().p(0.25));
    manual_seed(8);
    Tensor cd = nn::functional::dropout(x, nn::functional::DropoutFuncOptions().p(0.25));
    expect_same_bits(gd, cd, "dropout " + d);
  }
}

TEST(CudaRandom, BadArgumentsRaiseOnCuda) {
  REQUIRE_CUDA();
  EXPECT_THROW((void)rand({3}, on_gpu(kInt32)), Error);
  EXPECT_THROW((void)randint(3, 3, {3}, on_gpu(kInt64)), Error);
  EXPECT_THROW((void)linspace(0, 1, -2, on_gpu(kFloat32)), Error);
  try {
    (void)randint(0, 3, {3}, on_gpu(kComplex64));
    ADD_FAILURE() << "randint complex64 on CUDA did not raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("randint: no CUDA kernel for dtype complex64"), std::string::npos) << e.what();
  }
}
