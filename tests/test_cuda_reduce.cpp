// The reductions, scans and softmax on CUDA against the CPU result: every op the front ends of
// src/ops/ReduceOps.cpp serve with the CUDA kernels (sum, mean, prod, max(), min(), amax, amin,
// max/min(dim), argmax/argmin, any, all; the composites var, std, norm, logsumexp; cumsum,
// cumprod, softmax, log_softmax) in every dtype each takes, on contiguous, transposed and
// expanded inputs, over several dim sets with and without keepdim; determinism, a large
// all-reduce, reductions past 32-bit indexing, edge cases and gradients. Each case skips
// without a CUDA device.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;
using tensor::testing::random_input;

namespace {

const std::vector<ScalarType> kRealTypes = {kBool,    kUInt8,    kInt8,    kInt16,  kInt32,
                                            kInt64,   kFloat16,  kBFloat16, kFloat32, kFloat64};
const std::vector<ScalarType> kFloatTypes = {kFloat16, kBFloat16, kFloat32, kFloat64};

// Float sums on the GPU accumulate in float (a block tree) where the CPU cascades into double;
// both are within a few ulps of the sum's magnitude. Integers, bool, max/min and indices: exact.
void expect_close(const Tensor& cuda_result, const Tensor& cpu, const std::string& what, double scale = 1) {
  ASSERT_TRUE(cuda_result.is_cuda()) << what;
  const Tensor got = cuda_result.cpu();
  ASSERT_EQ(got.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(got.sizes(), cpu.sizes()) << what;
  double rtol = 0, atol = 0;
  switch (cpu.dtype()) {
    case kFloat32: rtol = 1e-5, atol = 1e-5; break;
    case kFloat64: rtol = 1e-12, atol = 1e-12; break;
    case kFloat16: rtol = 4e-3, atol = 4e-3; break;
    case kBFloat16: rtol = 3e-2, atol = 3e-2; break;
    default: break;
  }
  EXPECT_TRUE(tensor::allclose(got.to(kFloat64), cpu.to(kFloat64), rtol, atol * scale, /*equal_nan=*/true))
      << what << "\ncuda:\n" << got << "\ncpu:\n" << cpu;
}

/// The input layouts of shape (4, 33, 300): contiguous, transposed (a permuted contiguous
/// tensor moved to the device), expanded (stride 0 along dim 0). Returns (cpu, cuda) pairs.
struct Case {
  std::string name;
  Tensor cpu, cuda;
};
std::vector<Case> layouts(ScalarType dt, double lo, double hi, uint64_t seed, bool nan = false) {
  auto with_nans = [&](Tensor t) {
    if (nan && is_floating_point(dt)) {
      Tensor flat = t.view({t.numel()});
      flat.narrow(0, 5, 1).fill_(NAN);
      flat.narrow(0, t.numel() - 301, 1).fill_(NAN);
    }
    return t;
  };
  const Tensor a = with_nans(random_input({4, 33, 300}, dt, lo, hi, seed));
  const Tensor b = with_nans(random_input({300, 33, 4}, dt, lo, hi, seed + 1));
  const Tensor c = with_nans(random_input({1, 33, 300}, dt, lo, hi, seed + 2));
  return {{"contiguous", a, a.cuda()},
          {"transposed", b.permute({2, 1, 0}), b.cuda().permute({2, 1, 0})},
          {"expanded", c.expand({4, 33, 300}), c.cuda().expand({4, 33, 300})}};
}

const std::vector<std::vector<int64_t>> kDimSets = {{0}, {1}, {2}, {-1, 0}, {1, 2}, {}};

std::string dims_str(const std::vector<int64_t>& dims, bool keep) {
  std::string s = "dims {";
  for (int64_t d : dims) s += std::to_string(d) + ",";
  return s + "}" + (keep ? " keepdim" : "");
}

double lo_of(ScalarType dt) { return dt == kUInt8 || dt == kBool ? 0 : -3; }
double hi_of(ScalarType dt) { return dt == kBool ? 1 : 3; }

}  // namespace

TEST(CudaReduce, SumAndMean) {
  REQUIRE_CUDA();
  for (ScalarType dt : kRealTypes)
    for (const Case& c : layouts(dt, lo_of(dt), hi_of(dt), 1))
      for (const auto& dims : kDimSets)
        for (bool keep : {false, true}) {
          const std::string what = "sum " + std::string(to_string(dt)) + " " + c.name + " " + dims_str(dims, keep);
          // Sums of up to 39600 elements of magnitude 3: scale the absolute tolerance.
          const double scale = 300;
          expect_close(tensor::sum(c.cuda, dims, keep), tensor::sum(c.cpu, dims, keep), what, scale);
          expect_close(tensor::sum(c.cuda, dims, keep, kFloat64), tensor::sum(c.cpu, dims, keep, kFloat64),
                       what + " dtype float64", scale);
          if (is_floating_point(dt))
            expect_close(tensor::mean(c.cuda, dims, keep), tensor::mean(c.cpu, dims, keep), "mean" + what.substr(3));
        }
}

TEST(CudaReduce, Prod) {
  REQUIRE_CUDA();
  for (ScalarType dt : kRealTypes) {
    const bool fl = is_floating_point(dt);
    for (const Case& c : layouts(dt, fl ? 0.98 : lo_of(dt), fl ? 1.02 : 2, 2)) {
      const std::string what = "prod " + std::string(to_string(dt)) + " " + c.name;
      expect_close(tensor::prod(c.cuda), tensor::prod(c.cpu), what + " all", 100);
      for (int64_t dim = 0; dim < 3; ++dim)
        for (bool keep : {false, true})
          expect_close(tensor::prod(c.cuda, dim, keep), tensor::prod(c.cpu, dim, keep),
                       what + " dim " + std::to_string(dim) + (keep ? " keepdim" : ""));
      expect_close(tensor::prod(c.cuda, 1, false, dt), tensor::prod(c.cpu, 1, false, dt), what + " dtype");
    }
  }
}

TEST(CudaReduce, MaxMinAmaxAmin) {
  REQUIRE_CUDA();
  for (ScalarType dt : kRealTypes)
    for (bool nan : {false, true}) {
      if (nan && !is_floating_point(dt)) continue;
      for (const Case& c : layouts(dt, lo_of(dt) * 30, hi_of(dt) * 30, 3, nan)) {
        const std::string what = std::string(to_string(dt)) + " " + c.name + (nan ? " with NaN" : "");
        expect_close(tensor::max(c.cuda), tensor::max(c.cpu), "max() " + what);
        expect_close(tensor::min(c.cuda), tensor::min(c.cpu), "min() " + what);
        for (const auto& dims : kDimSets)
          for (bool keep : {false, true}) {
            expect_close(tensor::amax(c.cuda, dims, keep), tensor::amax(c.cpu, dims, keep),
                         "amax " + what + " " + dims_str(dims, keep));
            expect_close(tensor::amin(c.cuda, dims, keep), tensor::amin(c.cpu, dims, keep),
                         "amin " + what + " " + dims_str(dims, keep));
          }
      }
    }
}

TEST(CudaReduce, MaxMinDimArgmaxArgmin) {
  REQUIRE_CUDA();
  for (ScalarType dt : kRealTypes)
    for (bool nan : {false, true}) {
      if (nan && !is_floating_point(dt)) continue;
      // A narrow integer range: many ties, which go to the lowest index.
      for (const Case& c : layouts(dt, lo_of(dt), hi_of(dt), 4, nan)) {
        const Tensor xc = is_floating_point(dt) ? tensor::round(c.cpu) : c.cpu;
        const Tensor xg = is_floating_point(dt) ? tensor::round(c.cuda) : c.cuda;
        const std::string what = std::string(to_string(dt)) + " " + c.name + (nan ? " with NaN" : "");
        for (int64_t dim : {0, 1, 2, -1})
          for (bool keep : {false, true}) {
            const std::string w = what + " dim " + std::to_string(dim) + (keep ? " keepdim" : "");
            auto [gv, gi] = tensor::max(xg, dim, keep);
            auto [cv, ci] = tensor::max(xc, dim, keep);
            expect_close(gv, cv, "max(dim) values " + w);
            expect_close(gi, ci, "max(dim) indices " + w);
            auto [gv2, gi2] = tensor::min(xg, dim, keep);
            auto [cv2, ci2] = tensor::min(xc, dim, keep);
            expect_close(gv2, cv2, "min(dim) values " + w);
            expect_close(gi2, ci2, "min(dim) indices " + w);
            expect_close(tensor::argmax(xg, dim, keep), tensor::argmax(xc, dim, keep), "argmax " + w);
            expect_close(tensor::argmin(xg, dim, keep), tensor::argmin(xc, dim, keep), "argmin " + w);
          }
        expect_close(tensor::argmax(xg), tensor::argmax(xc), "argmax() " + what);
        expect_close(tensor::argmin(xg), tensor::argmin(xc), "argmin() " + what);
        expect_close(tensor::argmax(xg, std::nullopt, true), tensor::argmax(xc, std::nullopt, true),
                     "argmax() keepdim " + what);
      }
    }
}

TEST(CudaReduce, AnyAll) {
  REQUIRE_CUDA();
  for (ScalarType dt : kRealTypes) {
    // Values in {-1, 0, 1, 2, 3} on a (4, 33, 6) base: some rows all nonzero, some not.
    const Tensor base = random_input({4, 33, 6}, kInt8, -1, 3, 5).to(dt);
    const Tensor t = random_input({6, 33, 4}, kInt8, -1, 3, 6).to(dt);
    const Tensor zeros = tensor::zeros({4, 33, 6}, TensorOptions(dt));
    const std::vector<Case> cases = {{"contiguous", base, base.cuda()},
                                     {"transposed", t.permute({2, 1, 0}), t.cuda().permute({2, 1, 0})},
                                     {"expanded", base.narrow(0, 0, 1).expand({4, 33, 6}),
                                      base.cuda().narrow(0, 0, 1).expand({4, 33, 6})},
                                     {"zeros", zeros, zeros.cuda()}};
    for (const Case& c : cases) {
      const std::string what = std::string(to_string(dt)) + " " + c.name;
      expect_close(tensor::any(c.cuda), tensor::any(c.cpu), "any() " + what);
      expect_close(tensor::all(c.cuda), tensor::all(c.cpu), "all() " + what);
      for (int64_t dim = 0; dim < 3; ++dim)
        for (bool keep : {false, true}) {
          const std::string w = what + " dim " + std::to_string(dim) + (keep ? " keepdim" : "");
          expect_close(tensor::any(c.cuda, dim, keep), tensor::any(c.cpu, dim, keep), "any " + w);
          expect_close(tensor::all(c.cuda, dim, keep), tensor::all(c.cpu, dim, keep), "all " + w);
        }
    }
  }
}

TEST(CudaReduce, VarStdNorm) {
  REQUIRE_CUDA();
  for (ScalarType dt : kFloatTypes)
    for (const Case& c : layouts(dt, -3, 3, 7))
      for (const auto& dims : kDimSets)
        for (bool keep : {false, true}) {
          const std::string what = std::string(to_string(dt)) + " " + c.name + " " + dims_str(dims, keep);
          expect_close(tensor::var(c.cuda, dims, 1, keep), tensor::var(c.cpu, dims, 1, keep), "var " + what);
          expect_close(tensor::std(c.cuda, dims, 0, keep), tensor::std(c.cpu, dims, 0, keep), "std " + what);
          for (double p : {0.0, 1.0, 2.0, 3.0, double(INFINITY), -double(INFINITY)})
            expect_close(tensor::norm(c.cuda, p, dims, keep), tensor::norm(c.cpu, p, dims, keep),
                         "norm p=" + std::to_string(p) + " " + what, 100);
        }
}

TEST(CudaReduce, Logsumexp) {
  REQUIRE_CUDA();
  // The composite masks infinite maxima with where(), whose CUDA kernel is built separately.
  const std::string err = tensor::testing::error_of([] {
    const Tensor c = tensor::ones({2}, TensorOptions(kBool).device(kCUDA));
    tensor::where(c, Scalar(0.0), tensor::ones({2}, TensorOptions(kFloat32).device(kCUDA)));
  });
  if (!err.empty()) GTEST_SKIP() << "logsumexp on CUDA needs where() on CUDA: " << err;
  for (ScalarType dt : {kFloat16, kBFloat16, kFloat32, kFloat64})
    for (const Case& c : layouts(dt, -3, 3, 18))
      for (const auto& dims : kDimSets)
        for (bool keep : {false, true})
          expect_close(tensor::logsumexp(c.cuda, dims, keep), tensor::logsumexp(c.cpu, dims, keep),
                       "logsumexp " + std::string(to_string(dt)) + " " + c.name + " " + dims_str(dims, keep));
  Tensor s = random_input({5, 8}, kFloat32, -3, 3, 19);
  s.select(0, 1).fill_(-INFINITY);
  s.select(0, 2).narrow(0, 3, 1).fill_(INFINITY);
  expect_close(tensor::logsumexp(s.cuda(), {1}), tensor::logsumexp(s, {1}), "logsumexp with infinite rows");
}

TEST(CudaReduce, CumsumCumprod) {
  REQUIRE_CUDA();
  for (ScalarType dt : kRealTypes) {
    const bool fl = is_floating_point(dt);
    for (const Case& c : layouts(dt, fl ? 0.99 : lo_of(dt), fl ? 1.01 : 2, 8)) {
      // A (4, 33, 300) input: rows of 300 (several scan tiles), and columns along dims 0 and 1.
      for (int64_t dim : {0, 1, 2, -1}) {
        const std::string what = std::string(to_string(dt)) + " " + c.name + " dim " + std::to_string(dim);
        expect_close(tensor::cumsum(c.cuda, dim), tensor::cumsum(c.cpu, dim), "cumsum " + what, 300);
        expect_close(tensor::cumprod(c.cuda, dim), tensor::cumprod(c.cpu, dim), "cumprod " + what, 10);
        expect_close(tensor::cumsum(c.cuda, dim, dt), tensor::cumsum(c.cpu, dim, dt), "cumsum dtype " + what, 300);
      }
    }
  }
  // A long row: many tiles carried by the prefix callback.
  const Tensor x = random_input({3, 100003}, kInt32, -5, 5, 9);
  expect_close(tensor::cumsum(x.cuda(), 1), tensor::cumsum(x, 1), "cumsum int32 long rows");
  const Tensor f = random_input({2, 20000}, kFloat64, -1, 1, 10);
  expect_close(tensor::cumsum(f.cuda(), 1), tensor::cumsum(f, 1), "cumsum float64 long rows", 100);
}

TEST(CudaReduce, SoftmaxLogSoftmax) {
  REQUIRE_CUDA();
  for (ScalarType dt : kFloatTypes)
    for (const Case& c : layouts(dt, -10, 10, 11))
      for (int64_t dim : {0, 1, 2, -1}) {
        const std::string what = std::string(to_string(dt)) + " " + c.name + " dim " + std::to_string(dim);
        expect_close(tensor::softmax(c.cuda, dim), tensor::softmax(c.cpu, dim), "softmax " + what);
        expect_close(tensor::log_softmax(c.cuda, dim), tensor::log_softmax(c.cpu, dim), "log_softmax " + what);
      }
  // Short rows (a warp per row), rows with -inf, +inf and NaN, and a float32 result of half input.
  Tensor s = random_input({64, 10}, kFloat32, -5, 5, 12);
  s.select(0, 1).fill_(-INFINITY);
  s.select(0, 2).narrow(0, 3, 1).fill_(INFINITY);
  s.select(0, 3).narrow(0, 4, 1).fill_(NAN);
  s.select(0, 4).narrow(0, 0, 1).fill_(-INFINITY);
  expect_close(tensor::softmax(s.cuda(), 1), tensor::softmax(s, 1), "softmax special rows");
  expect_close(tensor::log_softmax(s.cuda(), 1), tensor::log_softmax(s, 1), "log_softmax special rows");
  const Tensor h = random_input({7, 50}, kFloat16, -4, 4, 13);
  expect_close(tensor::softmax(h.cuda(), 1, kFloat32), tensor::softmax(h, 1, kFloat32), "softmax half -> float32");
  // Rows held in registers (257 to 4096 elements, Note [Softmax rows in registers]) and either
  // side of their bounds, with the same special rows.
  for (ScalarType dt : {kFloat32, kFloat64})
    for (int64_t n : {257, 1000, 1024, 1025, 4096, 4097}) {
      Tensor r = random_input({6, n}, dt, -20, 20, static_cast<uint64_t>(14 + n));
      r.select(0, 1).fill_(-INFINITY);
      r.select(0, 2).narrow(0, n - 1, 1).fill_(INFINITY);
      r.select(0, 3).narrow(0, n / 2, 1).fill_(NAN);
      r.select(0, 4).narrow(0, 0, 1).fill_(-INFINITY);
      const std::string what = std::string(to_string(dt)) + " rows of " + std::to_string(n);
      expect_close(tensor::softmax(r.cuda(), 1), tensor::softmax(r, 1), "softmax " + what);
      expect_close(tensor::log_softmax(r.cuda(), 1), tensor::log_softmax(r, 1), "log_softmax " + what);
    }
}

TEST(CudaReduce, DeterministicAndLargeAllReduce) {
  REQUIRE_CUDA();
  const int64_t n = (int64_t(1) << 24) + 3;
  const Tensor x = random_input({n}, kFloat32, -1, 1, 14);
  const Tensor g = x.cuda();
  const Tensor s1 = tensor::sum(g).cpu(), s2 = tensor::sum(g).cpu();
  EXPECT_EQ(std::memcmp(s1.data_ptr(), s2.data_ptr(), sizeof(float)), 0) << s1.item<float>() << " vs " << s2.item<float>();
  const Tensor r = random_input({1000, 4096}, kFloat32, -1, 1, 15).cuda();
  EXPECT_TRUE(tensor::equal(tensor::sum(r, {1}).cpu(), tensor::sum(r, {1}).cpu())) << "row sums differ between runs";
  EXPECT_TRUE(tensor::equal(tensor::sum(r, {0}).cpu(), tensor::sum(r, {0}).cpu())) << "column sums differ between runs";
  // Against a float64 sum: within float rounding of the magnitude (sum of |x| is about n / 2).
  const double want = tensor::sum(x, kFloat64).item<double>();
  EXPECT_NEAR(s1.item<float>(), want, 1e-6 * double(n) / 2);
  expect_close(tensor::amax(g, {}), tensor::amax(x, {}), "amax 2^24+3");
  expect_close(tensor::argmin(g), tensor::argmin(x), "argmin 2^24+3");
  expect_close(tensor::mean(g), tensor::mean(x), "mean 2^24+3");
  // Integer sums are exact beyond float's 24 bits.
  const Tensor ones = tensor::ones({n}, TensorOptions(kInt32).device(kCUDA));
  EXPECT_EQ(tensor::sum(ones).item<int64_t>(), n);
}

TEST(CudaReduce, PastThirtyTwoBitIndexing) {
  REQUIRE_CUDA();
  // 2^32 + 5 reduced elements through an expanded (stride 0) view: no memory, but the reduced
  // range is split in halves whose partial results are reduced again.
  const int64_t n = (int64_t(1) << 32) + 5;
  const Tensor one = tensor::ones({1}, TensorOptions(kInt8).device(kCUDA)).expand({n});
  EXPECT_EQ(tensor::sum(one).item<int64_t>(), n);
  EXPECT_TRUE(tensor::all(one).item<bool>());
  EXPECT_EQ(tensor::amax(one, {}).item<int8_t>(), 1);
  // Several outputs, each over more than 2^31 elements: the kept dim is split, then each range.
  const int64_t m = (int64_t(1) << 31) + 1;
  const Tensor two = tensor::full({1, 1}, 2, TensorOptions(kInt16).device(kCUDA)).expand({3, m});
  const Tensor rows = tensor::sum(two, {1}).cpu();
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(rows[i].item<int64_t>(), 2 * m);
  // Memory past 4 GiB (6.4 GB of int8): the input's byte span splits the kept dim first.
  const int64_t k = (int64_t(1) << 31) + 8;
  Tensor big = tensor::ones({3, k}, TensorOptions(kInt8).device(kCUDA));
  big.select(0, 2).narrow(0, k - 1, 1).fill_(5);
  const Tensor big_rows = tensor::sum(big, {1}).cpu();
  EXPECT_EQ(big_rows[0].item<int64_t>(), k);
  EXPECT_EQ(big_rows[2].item<int64_t>(), k + 4);
  EXPECT_EQ(tensor::amax(big, {1})[2].item<int8_t>(), 5);
}

TEST(CudaReduce, EdgeCasesAndErrors) {
  REQUIRE_CUDA();
  const TensorOptions cu = TensorOptions(kFloat32).device(kCUDA);
  // Empty reductions give the identity (the front end fills); empty outputs launch nothing.
  expect_close(tensor::sum(tensor::empty({0, 3}, cu), {0}), tensor::zeros({3}), "sum over an empty dim");
  expect_close(tensor::prod(tensor::empty({0}, cu)), tensor::ones({}), "prod of nothing");
  expect_close(tensor::sum(tensor::empty({3, 0}, cu), {0}), tensor::zeros({0}), "empty output");
  expect_error([&] { tensor::amax(tensor::empty({0, 3}, cu), {0}); }, {"amax", "non-zero size"});
  // 0-dim inputs.
  const Tensor s = tensor::full({}, 2.5, TensorOptions(kFloat64));
  expect_close(tensor::sum(s.cuda()), tensor::sum(s), "sum of a 0-dim tensor");
  expect_close(tensor::max(s.cuda()), tensor::max(s), "max of a 0-dim tensor");
  expect_close(tensor::argmax(s.cuda(), 0), tensor::argmax(s, 0), "argmax of a 0-dim tensor");
  expect_close(tensor::softmax(s.cuda(), 0), tensor::softmax(s, 0), "softmax of a 0-dim tensor");
  expect_close(tensor::cumsum(s.cuda(), 0), tensor::cumsum(s, 0), "cumsum of a 0-dim tensor");
  // Complex has no CUDA reduction kernel yet: a clear error naming the op and the dtype.
  const Tensor z = tensor::zeros({4, 3}, TensorOptions(kComplex64)).cuda();
  expect_error([&] { tensor::sum(z); }, {"sum", "no CUDA kernel for dtype", "complex64"});
  expect_error([&] { tensor::cumsum(z, 0); }, {"cumsum", "no CUDA kernel for dtype", "complex64"});
}

TEST(CudaReduce, GradientsMatchCpu) {
  REQUIRE_CUDA();
  const Tensor x0 = random_input({6, 7, 9}, kFloat64, -2, 2, 16);
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"sum", [](const Tensor& x) { return tensor::sum(x, {1}, true); }},
      {"sum all", [](const Tensor& x) { return tensor::sum(x); }},
      {"mean", [](const Tensor& x) { return tensor::mean(x, {0, 2}, true); }},
      {"softmax", [](const Tensor& x) { return tensor::softmax(x, -1); }},
      {"softmax dim 1", [](const Tensor& x) { return tensor::softmax(x, 1); }},
      {"log_softmax", [](const Tensor& x) { return tensor::log_softmax(x, -1); }},
      {"log_softmax dim 0", [](const Tensor& x) { return tensor::log_softmax(x, 0); }},
  };
  for (const auto& [name, fn] : ops) {
    // A random weighting of the outputs, so that every gradient entry differs.
    const Tensor wy = random_input(fn(x0).sizes(), kFloat64, -1, 1, 17);
    auto grad_on = [&](Device dev) {
      Tensor x = x0.to(dev).detach();
      x.requires_grad_(true);
      tensor::sum(fn(x) * wy.to(dev)).backward();
      return x.grad();
    };
    const Tensor gc = grad_on(Device(kCPU));
    const Tensor gg = grad_on(Device(kCUDA));
    ASSERT_TRUE(gg.defined()) << name;
    expect_close(gg, gc, name + " gradient");
  }
}
