// The op table in backend mode (Note [Op table] in tests/op_table.h): every unary and binary
// row, in every dtype the row names, on CUDA against the CPU result, on contiguous, transposed
// and broadcast inputs, with a CPU scalar operand, and in the functional, out= and in-place
// forms. One ctest case per (row, dtype); each skips without a CUDA device.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/op_table.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::random_input;

namespace {

// CUDA's math library and the CPU's SIMD paths differ by a few ulps in the transcendental
// functions; the half types round once from float on both, but a float ulp apart before rounding
// can land on neighbouring half values.
void expect_close(const Tensor& cuda_result, const Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(cuda_result.is_cuda()) << what;
  Tensor got = cuda_result.cpu();
  ASSERT_EQ(got.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(got.sizes(), cpu.sizes()) << what;
  double rtol = 0, atol = 0;
  switch (cpu.dtype()) {
    case kFloat32: rtol = 1e-5, atol = 1e-6; break;
    case kFloat64: rtol = 1e-12, atol = 1e-13; break;
    case kFloat16: rtol = 2e-3, atol = 1e-3; break;
    case kBFloat16: rtol = 1.6e-2, atol = 1e-2; break;
    default: break;  // integers and bool: exact
  }
  EXPECT_TRUE(tensor::allclose(got.to(kFloat64), cpu.to(kFloat64), rtol, atol, /*equal_nan=*/true))
      << what << "\ncuda:\n" << got << "\ncpu:\n" << cpu;
}

std::string param_name(const std::string& row, ScalarType dt) {
  std::string s = row + "_" + to_string(dt);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

using UnaryParam = std::tuple<optable::UnaryCase, ScalarType>;
using BinaryParam = std::tuple<optable::BinaryCase, ScalarType>;

std::vector<UnaryParam> unary_params() {
  std::vector<UnaryParam> v;
  for (const auto& row : optable::unary_cases())
    for (ScalarType dt : row.dtypes) v.emplace_back(row, dt);
  return v;
}
std::vector<BinaryParam> binary_params() {
  std::vector<BinaryParam> v;
  for (const auto& row : optable::binary_cases())
    for (ScalarType dt : row.dtypes) v.emplace_back(row, dt);
  return v;
}

class UnaryOnCuda : public ::testing::TestWithParam<UnaryParam> {};
class BinaryOnCuda : public ::testing::TestWithParam<BinaryParam> {};

}  // namespace

TEST_P(UnaryOnCuda, MatchesCpu) {
  REQUIRE_CUDA();
  const auto& [row, dt] = GetParam();
  // 1037 elements: several blocks and a partial last vector; a transposed and an expanded view.
  Tensor flat = random_input({1037}, dt, row.lo, row.hi, 1);
  Tensor base = random_input({33, 17}, dt, row.lo, row.hi, 2);
  Tensor one_row = random_input({1, 17}, dt, row.lo, row.hi, 3);
  expect_close(row.fn(flat.cuda()), row.fn(flat), row.name + " contiguous");
  expect_close(row.fn(base.cuda().t()), row.fn(base.t()), row.name + " transposed");
  expect_close(row.fn(one_row.cuda().expand({9, 17})), row.fn(one_row.expand({9, 17})), row.name + " expanded");
}

TEST_P(BinaryOnCuda, MatchesCpu) {
  REQUIRE_CUDA();
  const auto& [row, dt] = GetParam();
  Tensor a = random_input({29, 41}, dt, row.lo, row.hi, 4);
  Tensor b = random_input({29, 41}, dt, row.blo, row.bhi, 5);
  expect_close(row.fn(a.cuda(), b.cuda()), row.fn(a, b), row.name + " contiguous");
  // Non-contiguous: both operands transposed on the device.
  expect_close(row.fn(a.t().contiguous().cuda().t(), b.cuda()), row.fn(a, b), row.name + " transposed a");
  // Broadcast: a row vector and a column vector.
  Tensor r = random_input({41}, dt, row.blo, row.bhi, 6), c = random_input({29, 1}, dt, row.lo, row.hi, 7);
  expect_close(row.fn(c.cuda(), r.cuda()), row.fn(c, r), row.name + " broadcast");
  // A CPU scalar operand (0-dim CPU tensor) joins the CUDA op as a kernel argument.
  Tensor s = tensor::full({}, is_floating_point(dt) ? 0.5 * (row.blo + row.bhi) + 0.25 : std::round(row.bhi), TensorOptions(dt));
  expect_close(row.fn(a.cuda(), s), row.fn(a, s), row.name + " CPU scalar");
}

INSTANTIATE_TEST_SUITE_P(Rows, UnaryOnCuda, ::testing::ValuesIn(unary_params()),
                         [](const auto& info) { return param_name(std::get<0>(info.param).name, std::get<1>(info.param)); });
INSTANTIATE_TEST_SUITE_P(Rows, BinaryOnCuda, ::testing::ValuesIn(binary_params()),
                         [](const auto& info) { return param_name(std::get<0>(info.param).name, std::get<1>(info.param)); });

// The out= and in-place forms, 32-bit splitting and mixed-dtype outputs on one representative op each.
TEST(CudaElementwise, OutAndInplaceForms) {
  REQUIRE_CUDA();
  Tensor a = random_input({300}, kFloat32, -3, 3, 8), b = random_input({300}, kFloat32, -3, 3, 9);
  Tensor out = tensor::empty({300}, TensorOptions(kFloat32).device(kCUDA));
  tensor::mul_out(out, a.cuda(), b.cuda());
  expect_close(out, a * b, "mul_out");
  Tensor x = a.cuda();
  x.exp_();
  expect_close(x, a.exp(), "exp_");
  Tensor d = tensor::empty({300}, TensorOptions(kFloat64).device(kCUDA));
  tensor::add_out(d, a.cuda(), b.cuda());  // float result cast into a double output
  expect_close(d, (a + b).to(kFloat64), "add_out into float64");
  expect_close(a.cuda() + 2, a + 2, "tensor + Python-style scalar");
  expect_close(tensor::add(a.cuda(), b.cuda(), 0.5), tensor::add(a, b, 0.5), "add with alpha");
}

TEST(CudaElementwise, MixedDtypesPromote) {
  REQUIRE_CUDA();
  Tensor i = tensor::arange(100, TensorOptions(kInt32)), f = random_input({100}, kFloat32, -1, 1, 10);
  expect_close(i.cuda() * f.cuda(), i * f, "int32 * float32");
  expect_close(i.cuda() / 3, i / 3, "int32 / 3 (true division)");
  expect_close(i.cuda().to(kFloat16) + f.cuda(), i.to(kFloat16) + f, "half + float");
}

// MIN / -1 on CUDA gives the CPU's defined answer (Note [Integer division by -1]): the CUDA
// kernels instantiate the same functors, so the quotient wraps and the remainder is 0.
TEST(CudaElementwise, IntegerMinByMinusOneMatchesTheCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : {kInt64, kInt32, kInt16, kInt8}) {
    const int64_t mn = dt == kInt64 ? std::numeric_limits<int64_t>::min()
                       : dt == kInt32 ? std::numeric_limits<int32_t>::min()
                       : dt == kInt16 ? std::numeric_limits<int16_t>::min()
                                      : std::numeric_limits<int8_t>::min();
    Tensor a = tensor::full({300}, mn, TensorOptions(dt)), b = tensor::full({300}, -1, TensorOptions(dt));
    Tensor ac = a.cuda(), bc = b.cuda();
    const std::string what = std::string("dtype ") + to_string(dt);
    EXPECT_TRUE(tensor::equal(tensor::div(ac, bc, "floor").cpu(), a)) << what;
    EXPECT_TRUE(tensor::equal(tensor::div(ac, bc, "trunc").cpu(), a)) << what;
    EXPECT_TRUE(tensor::equal(tensor::remainder(ac, bc).cpu(), tensor::zeros({300}, dt))) << what;
    EXPECT_TRUE(tensor::equal(tensor::fmod(ac, bc).cpu(), tensor::zeros({300}, dt))) << what;
    EXPECT_TRUE(tensor::equal(tensor::remainder(ac, Scalar(-1)).cpu(), tensor::zeros({300}, dt))) << what;
    EXPECT_TRUE(tensor::equal(tensor::div(ac, bc, "floor").cpu(), tensor::div(a, b, "floor"))) << what;
  }
}

// An empty inner dim gives zeros (and the bias) on CUDA as on the CPU.
TEST(CudaElementwise, MatmulWithAnEmptyInnerDimGivesZeros) {
  REQUIRE_CUDA();
  Tensor r = tensor::matmul(tensor::ones({2, 3, 0}).cuda(), tensor::ones({0, 4}).cuda());
  EXPECT_TRUE(tensor::equal(r.cpu(), tensor::zeros({2, 3, 4})));
  Tensor bias = tensor::arange(4, TensorOptions(kFloat32));
  Tensor y = tensor::linear(tensor::ones({3, 2, 0}).cuda(), tensor::ones({4, 0}).cuda(), bias.cuda());
  EXPECT_TRUE(tensor::equal(y.cpu(), bias.expand({3, 2, 4})));
}

TEST(CudaElementwise, LargeTensorsSplitFor32BitIndexing) {
  REQUIRE_CUDA();
  // 2^31 + 5 one-byte elements: more than 32-bit indexing covers, so the launch is split.
  const int64_t n = (int64_t(1) << 31) + 5;
  Tensor x = tensor::ones({n}, TensorOptions(kUInt8).device(kCUDA));
  Tensor y = x + x;
  Tensor tail = y.narrow(0, n - 7, 7).cpu();
  EXPECT_TRUE(tensor::equal(tail, tensor::full({7}, 2, TensorOptions(kUInt8))));
  EXPECT_EQ(y.narrow(0, 0, 1).cpu().item<uint8_t>(), 2);
}

TEST(CudaElementwise, ComplexRaisesAClearError) {
  REQUIRE_CUDA();
  Tensor z = tensor::ones({4}, TensorOptions(kComplex64).device(kCUDA));
  try {
    (void)tensor::exp(z);
    FAIL() << "expected tensor::Error";
  } catch (const tensor::Error& e) {
    EXPECT_NE(std::string(e.what()).find("exp"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("complex"), std::string::npos) << e.what();
  }
}

// tril/triu on CUDA (src/cuda/CUDARearrange.cpp) against the CPU's, which are checked against
// reference loops in tests/test_rearrange.cpp: every element size (bool, float16, float32,
// int64, complex128), batched, wide and tall, diagonals inside and beyond the matrix, a
// transposed input, and the in-place forms on a contiguous and a transposed tensor.
TEST(CudaTriangle, TrilTriuMatchTheCpu) {
  REQUIRE_CUDA();
  const Device gpu(kCUDA, 0);
  int seed = 70;
  for (ScalarType t : {kBool, kFloat16, kFloat32, kInt64, kComplex128})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 7}, {2, 3, 9, 4}, {1, 0, 3}})
      for (int64_t diag : {-100, -3, -1, 0, 2, 6, 100}) {
        Tensor x = random_input(shape, is_complex(t) ? kFloat64 : kFloat32, -3, 3, ++seed);
        x = is_complex(t) ? (x.to(t) * complex128(0.5, -2)) : x.to(t);
        const std::string what = std::string(to_string(t)) + " diagonal " + std::to_string(diag);
        Tensor xg = x.to(gpu);
        EXPECT_TRUE(tensor::equal(xg.tril(diag).cpu(), x.tril(diag))) << "tril " << what;
        EXPECT_TRUE(tensor::equal(xg.triu(diag).cpu(), x.triu(diag))) << "triu " << what;
        // A transposed (non-contiguous) input, and in place on it and on a contiguous copy.
        Tensor xt = x.transpose(-1, -2), xtg = xg.transpose(-1, -2);
        EXPECT_TRUE(tensor::equal(xtg.tril(diag).cpu(), xt.tril(diag))) << "tril of a transpose " << what;
        Tensor a = xg.clone(), b = xg.clone().transpose(-1, -2);
        a.triu_(diag);
        b.tril_(diag);
        EXPECT_TRUE(tensor::equal(a.cpu(), x.triu(diag))) << "triu_ " << what;
        EXPECT_TRUE(tensor::equal(b.cpu(), xt.tril(diag))) << "tril_ of a transpose " << what;
      }
}

// resolve_conj of a complex CUDA tensor: conj_physical through the real parts (Note [Complex
// conj_physical on CUDA]), contiguous and transposed, complex64 and complex128.
TEST(CudaComplex, ResolveConjNegatesTheImaginaryParts) {
  REQUIRE_CUDA();
  for (ScalarType t : {kComplex64, kComplex128}) {
    const Tensor re = random_input({3, 5}, kFloat64, -4, 4, 81), im = random_input({3, 5}, kFloat64, -4, 4, 82);
    const Tensor z = (re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).to(t);
    for (bool transposed : {false, true}) {
      Tensor zg = z.to(Device(kCUDA, 0));
      Tensor src = transposed ? zg.t() : zg;
      Tensor c = src.conj().resolve_conj();
      EXPECT_FALSE(c.is_conj());
      Tensor host = c.cpu();
      const Tensor want = (transposed ? z.t() : z);
      EXPECT_TRUE(tensor::equal(host.real(), want.real())) << to_string(t);
      EXPECT_TRUE(tensor::equal(host.imag(), -want.imag())) << to_string(t);
    }
  }
}
