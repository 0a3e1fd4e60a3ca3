// The structured rows of the op table (tests/op_table.h) in CUDA mode: each row whose
// dispatcher ops all have CUDA kernels runs on CUDA float64 inputs (contiguous and
// non-contiguous) against the CPU result, then gradcheck (and gradgradcheck where the row asks)
// on CUDA. A row with an op still missing its CUDA kernel must raise a tensor::Error, so the
// row fails here once a kernel lands and the list moves by itself. The elementwise rows run in
// tests/test_cuda_ops.cpp.
//
// Which rows are served is read from the dispatcher (ops::builtin_ops()'s CUDA slots), so that
// part runs without a device too: the elementwise-and-reduction rows must all be served.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "src/ops/AllOps.h"
#include "tests/op_table.h"
#include "tests/test_util.h"

using namespace tensor;
using optable::StructuredCase;

namespace {

struct Slots {
  std::set<std::string> builtin, with_cuda;
};

const Slots& slots() {
  static const Slots s = [] {
    (void)cuda::device_count();  // opens libtensor_cuda, which registers its kernels
    Slots r;
    for (const ops::OpSummary& op : ops::builtin_ops()) {
      r.builtin.insert(op.name);
      if (op.slots.has(DispatchKey::CUDA)) r.with_cuda.insert(op.name);
    }
    return r;
  }();
  return s;
}

// The rows that compute in complex: CUDA has no complex elementwise kernels yet (docs/cuda.md:
// complex copies, fills and conj_physical only), so they must raise until it does.
const std::set<std::string> kComplexRows = {"views: conj, real, imag", "_to_copy (real to complex)"};

// A row is served on CUDA when each dispatcher op it covers has a CUDA kernel. A covered name
// that is not a dispatcher op is a composite of public ops (its pieces are checked when it runs).
bool served_on_cuda(const StructuredCase& c) {
  if (kComplexRows.count(c.name)) return false;
  for (const std::string& op : optable::covered_ops(c))
    if (slots().builtin.count(op) && !slots().with_cuda.count(op)) return false;
  return true;
}

std::vector<Tensor> inputs(const StructuredCase& c, bool strided, Device device) {
  std::vector<Tensor> in;
  for (const auto& s : c.shapes) {
    Tensor t;
    if (!strided) {
      t = randn(s, kFloat64).to(device);
    } else if (s.size() >= 2) {
      std::vector<int64_t> swapped(s);
      std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
      t = randn(swapped, kFloat64).to(device).transpose(-1, -2);  // transposed strides on the device
    } else {
      t = randn({2 * s[0]}, kFloat64).to(device).slice(0, 0, 2 * s[0], 2);  // stride 2
    }
    in.push_back(t.requires_grad_(true));
  }
  return in;
}

std::string param_name(const ::testing::TestParamInfo<StructuredCase>& info) {
  std::string s = info.param.name + "_" + std::to_string(info.index);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

class CudaOpTable : public ::testing::TestWithParam<StructuredCase> {};

}  // namespace

// The rows issue 21 puts on the GPU first: where, clamp and every reduction, scan and softmax.
TEST(CudaOpTableCoverage, ElementwiseAndReductionRowsAreServed) {
#if !defined(TENSOR_TEST_HAVE_CUDA_BACKEND)
  GTEST_SKIP() << "this build has no CUDA backend (nvcc not found)";
#endif
  const std::set<std::string> must = {"where",     "clamp",  "sum",          "mean",           "prod",
                                      "prod (all)", "max (all)", "min (all)", "amax",           "amin",
                                      "logsumexp", "var",    "std (correction 0)", "norm (p=2)", "norm (p=3, all)",
                                      "cumsum",    "cumprod", "softmax",     "log_softmax"};
  int found = 0, served = 0, complex_found = 0;
  std::string missing, pending;
  for (const StructuredCase& c : optable::structured_cases()) {
    if (served_on_cuda(c)) ++served;
    else pending += " [" + c.name + "]";
    complex_found += static_cast<int>(kComplexRows.count(c.name));
    if (!must.count(c.name)) continue;
    ++found;
    if (!served_on_cuda(c)) missing += " [" + c.name + "]";
  }
  EXPECT_EQ(found, static_cast<int>(must.size())) << "a row named here was renamed in tests/op_table.h";
  EXPECT_EQ(complex_found, static_cast<int>(kComplexRows.size())) << "a row of kComplexRows was renamed";
  EXPECT_TRUE(missing.empty()) << "rows without CUDA kernels:" << missing;
  std::printf("CUDA serves %d of %zu structured rows; not yet:%s\n", served, optable::structured_cases().size(),
              pending.c_str());
}

TEST_P(CudaOpTable, MatchesCpuAndGradchecks) {
  REQUIRE_CUDA();
  const StructuredCase& c = GetParam();
  const Device cuda_dev(kCUDA, 0);
  auto f = [&c](const autograd::variable_list& v) { return c.fn(v); };
  for (bool strided : {false, true}) {
    SCOPED_TRACE(c.name + (strided ? " (non-contiguous)" : ""));
    manual_seed(41);
    std::vector<Tensor> on_cpu = inputs(c, strided, Device(kCPU));
    manual_seed(41);
    std::vector<Tensor> on_gpu = inputs(c, strided, cuda_dev);
    if (!served_on_cuda(c)) {
      EXPECT_THROW(f(on_gpu), Error) << "the row runs on CUDA now: its ops all have kernels?";
      return;
    }
    Tensor want = f(on_cpu), got = f(on_gpu);
    ASSERT_TRUE(got.is_cuda());
    EXPECT_TRUE(allclose(got.cpu(), want, 1e-10, 1e-12, /*equal_nan=*/true)) << "cuda:\n"
                                                                           << got.cpu() << "\ncpu:\n"
                                                                           << want;
    EXPECT_TRUE(autograd::gradcheck(f, on_gpu, 1e-6, 1e-5, 1e-3));
    if (c.second_order) EXPECT_TRUE(autograd::gradgradcheck(f, on_gpu, 1e-6, 1e-5, 1e-3));
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, CudaOpTable, ::testing::ValuesIn(optable::structured_cases()), param_name);

// Gradients of the elementwise rows on CUDA: gradcheck on CUDA float64 inputs (transposed, and
// broadcast for the binary rows), first order; the CPU suite does second order.
TEST(CudaOpTableElementwise, UnaryRowsGradcheckOnCuda) {
  REQUIRE_CUDA();
  manual_seed(43);
  for (const auto& c : optable::unary_cases()) {
    if (c.bool_out || std::find(c.dtypes.begin(), c.dtypes.end(), kFloat64) == c.dtypes.end()) continue;
    SCOPED_TRACE(c.name);
    const double lo = c.lo + 0.05 * (c.hi - c.lo), hi = c.hi - 0.05 * (c.hi - c.lo);
    Tensor x = (rand({3, 2}, TensorOptions(kFloat64)) * (hi - lo) + lo).to(Device(kCUDA, 0)).t();
    x.requires_grad_(true);
    auto f = [&c](const autograd::variable_list& in) { return c.fn(in[0]); };
    EXPECT_TRUE(autograd::gradcheck(f, {x}));
  }
}

TEST(CudaOpTableElementwise, BinaryRowsGradcheckOnCudaWithBroadcast) {
  REQUIRE_CUDA();
  manual_seed(44);
  for (const auto& c : optable::binary_cases()) {
    if (c.bool_out || std::find(c.dtypes.begin(), c.dtypes.end(), kFloat64) == c.dtypes.end()) continue;
    SCOPED_TRACE(c.name);
    auto in = [](IntArrayRef s, double lo, double hi) {
      return (rand(s, TensorOptions(kFloat64)) * (hi - lo) + lo).to(Device(kCUDA, 0)).requires_grad_(true);
    };
    Tensor a = in({2, 3}, c.lo, c.hi), b = in({3}, c.blo, c.bhi);
    auto f = [&c](const autograd::variable_list& v) { return c.fn(v[0], v[1]); };
    EXPECT_TRUE(autograd::gradcheck(f, {a, b}));
  }
}
