// Matrix products on CUDA (cuBLASLt, src/cuda/CUDABlas.cpp) against the CPU result: mm, bmm,
// addmm, linear and matmul, in every supported dtype, on contiguous, transposed, sliced,
// expanded and broadcast-batch inputs, the bias epilogue and its fallback, a non-default
// stream, linear's backward, and the errors. Every case skips without a CUDA device; the
// layout decision itself runs on the CPU in tests/test_matmul_layout.cpp.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;
using tensor::testing::random_input;

namespace {

// Per-dtype tolerances against the CPU's product of the same inputs (values in [-1, 1], inner
// sizes up to ~70): float32 differs only in summation order (both accumulate in fp32, no TF32);
// float16 and bfloat16 accumulate in fp32 on both sides and round once, so they may land one
// ulp of the result's dtype apart (2^-11 and 2^-8 relative), plus the order difference.
struct Tol {
  double rtol, atol;
};
Tol tol_of(ScalarType t) {
  switch (t) {
    case kFloat64:
      return {1e-11, 1e-11};
    case kFloat32:
      return {2e-5, 2e-5};
    case kFloat16:
      return {4e-3, 4e-3};
    default:
      return {2e-2, 2e-2};  // bfloat16
  }
}

void expect_close(const Tensor& cuda_result, const Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(cuda_result.is_cuda()) << what;
  Tensor got = cuda_result.cpu();
  ASSERT_EQ(got.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(got.sizes(), cpu.sizes()) << what;
  const Tol t = tol_of(cpu.scalar_type());
  EXPECT_TRUE(tensor::allclose(got.to(kFloat64), cpu.to(kFloat64), t.rtol, t.atol))
      << what << " (" << to_string(cpu.scalar_type()) << ")\ncuda:\n"
      << got << "\ncpu:\n"
      << cpu;
}

Tensor rnd(std::vector<int64_t> shape, ScalarType t, uint64_t seed) { return random_input(shape, t, -1, 1, seed); }

std::string shape_of(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

class CudaBlas : public ::testing::TestWithParam<ScalarType> {};

std::string dtype_name(const ::testing::TestParamInfo<ScalarType>& info) { return to_string(info.param); }

}  // namespace

TEST_P(CudaBlas, Mm) {
  REQUIRE_CUDA();
  const ScalarType t = GetParam();
  Tensor a = rnd({33, 40}, t, 1), b = rnd({40, 17}, t, 2);
  expect_close(tensor::mm(a.cuda(), b.cuda()), tensor::mm(a, b), "mm");
  // Transposed operands (cuBLAS's op T, no copy) and slices (a larger leading dim).
  Tensor at = rnd({40, 33}, t, 3), bt = rnd({17, 40}, t, 4);
  expect_close(tensor::mm(at.cuda().t(), bt.cuda().t()), tensor::mm(at.t(), bt.t()), "mm of transposes");
  Tensor wide = rnd({33, 64}, t, 5);
  expect_close(tensor::mm(wide.cuda().narrow(1, 3, 40), b.cuda()), tensor::mm(wide.narrow(1, 3, 40), b),
               "mm of a column slice");
  expect_close(tensor::mm(a.cuda(), wide.cuda().t().narrow(1, 5, 17).narrow(0, 0, 40)),
               tensor::mm(a, wide.t().narrow(1, 5, 17).narrow(0, 0, 40)), "mm of a sliced transpose");
  // No unit step (copied first), an expanded operand, and odd pointer offsets (alignment).
  Tensor stepped = rnd({33, 80}, t, 6);
  expect_close(tensor::mm(stepped.cuda().slice(1, 0, 80, 2), b.cuda()), tensor::mm(stepped.slice(1, 0, 80, 2), b),
               "mm of a column step 2");
  Tensor row = rnd({1, 17}, t, 7);
  expect_close(tensor::mm(a.cuda(), row.cuda().expand({40, 17})), tensor::mm(a, row.expand({40, 17})),
               "mm of an expanded operand");
  Tensor flat = rnd({33 * 40 + 1}, t, 8);
  Tensor odd = flat.narrow(0, 1, 33 * 40).view({33, 40});
  expect_close(tensor::mm(flat.cuda().narrow(0, 1, 33 * 40).view({33, 40}), b.cuda()), tensor::mm(odd, b),
               "mm at an odd offset");
  // Degenerate sizes: vectors and an empty inner dim.
  Tensor v = rnd({40, 1}, t, 9), r1 = rnd({1, 40}, t, 10);
  expect_close(tensor::mm(a.cuda(), v.cuda()), tensor::mm(a, v), "mm matrix-vector");
  expect_close(tensor::mm(r1.cuda(), b.cuda()), tensor::mm(r1, b), "mm row-matrix");
  Tensor e1 = tensor::empty({5, 0}, TensorOptions(t)), e2 = tensor::empty({0, 6}, TensorOptions(t));
  expect_close(tensor::mm(e1.cuda(), e2.cuda()), tensor::mm(e1, e2), "mm with k == 0");
}

TEST_P(CudaBlas, Bmm) {
  REQUIRE_CUDA();
  const ScalarType t = GetParam();
  Tensor a = rnd({5, 9, 24}, t, 11), b = rnd({5, 24, 13}, t, 12);
  expect_close(tensor::bmm(a.cuda(), b.cuda()), tensor::bmm(a, b), "bmm");
  expect_close(tensor::bmm(a.cuda(), b.cuda().transpose(1, 2).contiguous().transpose(1, 2)), tensor::bmm(a, b),
               "bmm of a column-major w");
  Tensor at = rnd({5, 24, 9}, t, 13);
  expect_close(tensor::bmm(at.cuda().transpose(1, 2), b.cuda()), tensor::bmm(at.transpose(1, 2), b),
               "bmm of a transposed a");
  // Broadcast batches (stride 0): w shared (folded into one GEMM), a shared, both.
  Tensor b1 = rnd({1, 24, 13}, t, 14), a1 = rnd({1, 9, 24}, t, 15);
  expect_close(tensor::bmm(a.cuda(), b1.cuda().expand({5, 24, 13})), tensor::bmm(a, b1.expand({5, 24, 13})),
               "bmm with a broadcast w");
  expect_close(tensor::bmm(a1.cuda().expand({5, 9, 24}), b.cuda()), tensor::bmm(a1.expand({5, 9, 24}), b),
               "bmm with a broadcast a");
  expect_close(tensor::bmm(a1.cuda().expand({5, 9, 24}), b1.cuda().expand({5, 24, 13})),
               tensor::bmm(a1.expand({5, 9, 24}), b1.expand({5, 24, 13})), "bmm with both broadcast");
  // A permuted a (batches interleaved with rows) and a batch step of 2.
  Tensor p = rnd({9, 5, 24}, t, 16);
  expect_close(tensor::bmm(p.cuda().permute({1, 0, 2}), b.cuda()), tensor::bmm(p.permute({1, 0, 2}), b),
               "bmm of a permuted a");
  Tensor s = rnd({10, 24, 13}, t, 17);
  expect_close(tensor::bmm(a.cuda(), s.cuda().slice(0, 0, 10, 2)), tensor::bmm(a, s.slice(0, 0, 10, 2)),
               "bmm with a batch step");
}

TEST_P(CudaBlas, Addmm) {
  REQUIRE_CUDA();
  const ScalarType t = GetParam();
  Tensor a = rnd({21, 30}, t, 21), b = rnd({30, 19}, t, 22);
  // self [m] with beta = alpha = 1 is the fused bias (the epilogue); the others go through beta.
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{19}, {1, 19}, {21, 1}, {21, 19}, {}}) {
    Tensor self = rnd(shape, t, 23);
    const std::string what = "addmm, self " + shape_of(self);
    expect_close(tensor::addmm(self.cuda(), a.cuda(), b.cuda()), tensor::addmm(self, a, b), what);
    expect_close(tensor::addmm(self.cuda(), a.cuda(), b.cuda(), 0.5, -2.0), tensor::addmm(self, a, b, 0.5, -2.0),
                 what + ", beta 0.5, alpha -2");
    expect_close(tensor::addmm(self.cuda(), a.cuda(), b.cuda(), 0, 1.5), tensor::addmm(self, a, b, 0, 1.5),
                 what + ", beta 0");
  }
  // The epilogue with transposed operands, and its fallbacks: k == 1 and m == 1.
  Tensor bias = rnd({19}, t, 24), at = rnd({30, 21}, t, 25);
  expect_close(tensor::addmm(bias.cuda(), at.cuda().t(), b.cuda()), tensor::addmm(bias, at.t(), b),
               "addmm bias, transposed a");
  Tensor k1a = rnd({21, 1}, t, 26), k1b = rnd({1, 19}, t, 27);
  expect_close(tensor::addmm(bias.cuda(), k1a.cuda(), k1b.cuda()), tensor::addmm(bias, k1a, k1b), "addmm bias, k == 1");
  Tensor m1 = rnd({30, 1}, t, 28), bias1 = rnd({1}, t, 29);
  expect_close(tensor::addmm(bias1.cuda(), a.cuda(), m1.cuda()), tensor::addmm(bias1, a, m1), "addmm bias, m == 1");
  // A strided bias (packed before the epilogue).
  Tensor wide_bias = rnd({38}, t, 30);
  expect_close(tensor::addmm(wide_bias.cuda().slice(0, 0, 38, 2), a.cuda(), b.cuda()),
               tensor::addmm(wide_bias.slice(0, 0, 38, 2), a, b), "addmm strided bias");
}

TEST_P(CudaBlas, Linear) {
  REQUIRE_CUDA();
  const ScalarType t = GetParam();
  Tensor w = rnd({12, 36}, t, 31), bias = rnd({12}, t, 32);
  Tensor x2 = rnd({10, 36}, t, 33), x3 = rnd({4, 7, 36}, t, 34);
  expect_close(tensor::linear(x2.cuda(), w.cuda(), bias.cuda()), tensor::linear(x2, w, bias), "linear 2-D, bias");
  expect_close(tensor::linear(x2.cuda(), w.cuda()), tensor::linear(x2, w), "linear 2-D");
  expect_close(tensor::linear(x3.cuda(), w.cuda(), bias.cuda()), tensor::linear(x3, w, bias), "linear 3-D, bias");
  expect_close(tensor::linear(x3.cuda(), w.cuda()), tensor::linear(x3, w), "linear 3-D");
  // A non-contiguous 3-D input (reshape copies) and a transposed weight (w.t().t()).
  Tensor x3t = rnd({7, 4, 36}, t, 35);
  expect_close(tensor::linear(x3t.cuda().transpose(0, 1), w.cuda(), bias.cuda()),
               tensor::linear(x3t.transpose(0, 1), w, bias), "linear, transposed input");
  Tensor wt = rnd({36, 12}, t, 36);
  expect_close(tensor::linear(x2.cuda(), wt.cuda().t(), bias.cuda()), tensor::linear(x2, wt.t(), bias),
               "linear, transposed weight");
  // One output feature (the bias added after the product) and one input feature (k == 1).
  Tensor w1 = rnd({1, 36}, t, 37), b1 = rnd({1}, t, 38), wk = rnd({12, 1}, t, 39), xk = rnd({10, 1}, t, 40);
  expect_close(tensor::linear(x2.cuda(), w1.cuda(), b1.cuda()), tensor::linear(x2, w1, b1), "linear, 1 output");
  expect_close(tensor::linear(xk.cuda(), wk.cuda(), bias.cuda()), tensor::linear(xk, wk, bias), "linear, 1 input");
}

TEST_P(CudaBlas, MatmulBroadcast) {
  REQUIRE_CUDA();
  const ScalarType t = GetParam();
  Tensor a = rnd({2, 1, 6, 20}, t, 41), b = rnd({3, 20, 5}, t, 42);
  expect_close(tensor::matmul(a.cuda(), b.cuda()), tensor::matmul(a, b), "matmul with broadcast batch dims");
  Tensor a3 = rnd({3, 6, 20}, t, 43), m = rnd({20, 5}, t, 44);
  expect_close(tensor::matmul(a3.cuda(), m.cuda()), tensor::matmul(a3, m), "matmul 3-D @ 2-D");
  expect_close(tensor::matmul(m.cuda().t(), a3.cuda().transpose(1, 2)), tensor::matmul(m.t(), a3.transpose(1, 2)),
               "matmul 2-D @ 3-D (transposed)");
  Tensor v = rnd({20}, t, 45);
  expect_close(tensor::matmul(a3.cuda(), v.cuda()), tensor::matmul(a3, v), "matmul 3-D @ vector");
  expect_close(tensor::matmul(v.cuda(), b.cuda()), tensor::matmul(v, b), "matmul vector @ 3-D");
  expect_close(tensor::matmul(m.cuda().t(), v.cuda()), tensor::matmul(m.t(), v), "matmul matrix @ vector");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaBlas, ::testing::Values(kFloat32, kFloat64, kFloat16, kBFloat16), dtype_name);

// A larger product, big enough for cuBLASLt to pick split-K or multi-stage kernels that use the
// workspace, on a stream from the pool (its own workspace) and on the default stream.
TEST(CudaBlasStreams, PoolStreamAndDefaultStream) {
  REQUIRE_CUDA();
  Tensor a = rnd({64, 2048}, kFloat32, 51), b = rnd({2048, 48}, kFloat32, 52);
  // Against the float64 product: with an inner size of 2048 the summation-order difference
  // grows with the partial sums (values up to ~45; the first GPU run measured up to ~1.5e-4),
  // beyond tol_of's bound for inner sizes ~70.
  const Tensor want = tensor::mm(a.to(kFloat64), b.to(kFloat64));
  auto check = [&](const Tensor& got, const char* what) {
    ASSERT_TRUE(got.is_cuda()) << what;
    const double err = (got.cpu().to(kFloat64) - want).abs().max().item<double>();
    EXPECT_LE(err, 1e-3) << what;
  };
  Tensor ac = a.cuda(), bc = b.cuda();
  cuda::synchronize();
  {
    cuda::StreamGuard guard(cuda::getStreamFromPool());
    check(tensor::mm(ac, bc), "mm on a pool stream");
  }
  check(tensor::mm(ac, bc), "mm on the default stream");
}

// linear's backward on CUDA against the CPU's gradients. The input and weight gradients are
// products (mm); the bias gradient is a sum over rows, which needs CUDA's sum reduction.
TEST(CudaBlasAutograd, LinearBackwardWithoutBias) {
  REQUIRE_CUDA();
  for (ScalarType t : {kFloat32, kFloat64}) {
    Tensor x = rnd({3, 5, 16}, t, 61), w = rnd({7, 16}, t, 62), g = rnd({3, 5, 7}, t, 63);
    Tensor xc = x.cuda().requires_grad_(), wc = w.cuda().requires_grad_();
    Tensor xr = x.clone().requires_grad_(), wr = w.clone().requires_grad_();
    tensor::linear(xc, wc).backward(g.cuda());
    tensor::linear(xr, wr).backward(g);
    expect_close(xc.grad(), xr.grad(), "grad of input");
    expect_close(wc.grad(), wr.grad(), "grad of weight");
  }
}

TEST(CudaBlasAutograd, LinearBackwardWithBias) {
  REQUIRE_CUDA();
  for (ScalarType t : {kFloat32, kFloat64}) {
    Tensor x = rnd({10, 16}, t, 71), w = rnd({7, 16}, t, 72), b = rnd({7}, t, 73), g = rnd({10, 7}, t, 74);
    Tensor xc = x.cuda().requires_grad_(), wc = w.cuda().requires_grad_(), bc = b.cuda().requires_grad_();
    Tensor xr = x.clone().requires_grad_(), wr = w.clone().requires_grad_(), br = b.clone().requires_grad_();
    tensor::linear(xc, wc, bc).backward(g.cuda());
    tensor::linear(xr, wr, br).backward(g);
    expect_close(xc.grad(), xr.grad(), "grad of input");
    expect_close(wc.grad(), wr.grad(), "grad of weight");
    expect_close(bc.grad(), br.grad(), "grad of bias");
  }
}

TEST(CudaBlasErrors, UnsupportedDtypeNamesOpShapesAndDtype) {
  REQUIRE_CUDA();
  Tensor a = tensor::ones({3, 4}, TensorOptions(kInt64)).cuda(), b = tensor::ones({4, 2}, TensorOptions(kInt64)).cuda();
  expect_error([&] { tensor::mm(a, b); }, {"mm", "int64", "[3, 4]", "[4, 2]", "float32"});
  expect_error([&] { tensor::matmul(a.unsqueeze(0), b.unsqueeze(0)); }, {"bmm", "int64"});
  expect_error([&] { tensor::linear(a, b.t()); }, {"linear", "int64"});
}

TEST(CudaBlasErrors, MixedDevices) {
  REQUIRE_CUDA();
  Tensor a = tensor::ones({3, 4}).cuda(), b = tensor::ones({4, 2});
  expect_error([&] { tensor::mm(a, b); }, {"mm", "same device"});
}
