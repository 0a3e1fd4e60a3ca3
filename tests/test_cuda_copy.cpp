// copy_ and fill_ as device kernels (Note [CUDA copy_ on the device] in src/cuda/CUDACopy.cpp):
// every pair of real dtypes between CUDA tensors on transposed and broadcast sources, host to
// device and device to host with conversion and strided destinations, and strided fills, each
// against the CPU's copy_ / fill_ bit for bit. Skips without a device.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::random_input;

namespace {

const Device kGpu(kCUDA, 0);
const std::vector<ScalarType>& kReal = tensor::testing::kRealDtypes;

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  const Tensor g = got.cpu().contiguous(), w = want.contiguous();
  ASSERT_EQ(g.dtype(), w.dtype()) << what;
  ASSERT_EQ(g.sizes(), w.sizes()) << what;
  EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), static_cast<size_t>(w.nbytes())), 0)
      << what << "\ngot:\n" << g << "\nwant:\n" << w;
}

}  // namespace

TEST(CudaDeviceCopy, EveryRealDtypePairOnTheDevice) {
  REQUIRE_CUDA();
  uint64_t seed = 7;
  for (ScalarType in : kReal)
    for (ScalarType out : kReal) {
      const std::string what = std::string(to_string(in)) + " -> " + to_string(out);
      const Tensor base = random_input({7, 5}, in, 0, 100, seed++), row = random_input({7}, in, 0, 100, seed++);
      for (const Tensor* src : {&base, &row}) {
        const Tensor s = src == &base ? base.t() : row;  // transposed, or broadcast over rows
        Tensor want = empty({5, 7}, TensorOptions(out));
        want.copy_(s);
        Tensor got = empty({5, 7}, TensorOptions(out).device(kGpu));
        got.copy_(src == &base ? base.to(kGpu).t() : row.to(kGpu));
        expect_same(got, want, what + " (device to device)");
        // A strided device destination.
        Tensor strided = empty({7, 5}, TensorOptions(out).device(kGpu)).t();
        strided.copy_(src == &base ? base.to(kGpu).t() : row.to(kGpu));
        expect_same(strided, want, what + " (strided destination)");
      }
    }
}

TEST(CudaDeviceCopy, HostToDeviceAndBackConvert) {
  REQUIRE_CUDA();
  const Tensor src = random_input({6, 9}, kFloat64, -50, 50, 3);
  for (ScalarType out : {kFloat16, kBFloat16, kFloat32, kInt32, kInt8, kBool}) {
    Tensor want = empty({9, 6}, TensorOptions(out));
    want.copy_(src.t());
    Tensor up = empty({9, 6}, TensorOptions(out).device(kGpu));
    up.copy_(src.t());  // host, transposed, float64 -> device, converted
    expect_same(up, want, std::string("to device as ") + to_string(out));
    Tensor down = empty({6, 9}, TensorOptions(kFloat64)).t();  // a strided host destination
    down.copy_(up);
    Tensor want_down = empty({9, 6}, TensorOptions(kFloat64));
    want_down.copy_(want);
    expect_same(down, want_down, std::string("back to host from ") + to_string(out));
  }
  // to(dtype) and contiguous() of a device tensor stay on the device.
  Tensor t = src.to(kGpu).t();
  EXPECT_TRUE(t.contiguous().is_cuda());
  expect_same(t.contiguous(), src.t().contiguous(), "contiguous()");
  expect_same(t.to(kFloat32), src.t().to(kFloat32), "to(float32)");
}

TEST(CudaDeviceCopy, StridedFill) {
  REQUIRE_CUDA();
  for (ScalarType t : kReal)
    for (double v : {0.0, 1.0, 7.0}) {
      Tensor want = zeros({4, 6}, TensorOptions(t));
      want.select(1, 2).fill_(v);
      Tensor got = zeros({4, 6}, TensorOptions(t).device(kGpu));
      got.select(1, 2).fill_(v);  // a column: stride 6
      expect_same(got, want, std::string(to_string(t)) + " column fill " + std::to_string(v));
    }
}

// cat and stack on CUDA: slabs written by the device copy (promotion to the common dtype,
// transposed inputs, negative dims), and their gradients.
TEST(CudaDeviceCopy, CatAndStack) {
  REQUIRE_CUDA();
  const Tensor a = random_input({3, 4}, kFloat32, -5, 5, 1), b = random_input({2, 3}, kInt64, -5, 5, 2).t();
  const Tensor c = random_input({3, 1}, kFloat64, -5, 5, 3);
  for (int64_t dim : {1, -1}) {
    Tensor want = cat({a, b, c}, dim);
    Tensor got = cat({a.to(kGpu), b.to(kGpu), c.to(kGpu)}, dim);
    expect_same(got, want, "cat along " + std::to_string(dim));
  }
  expect_same(stack({a, a.t().t()}, 0).cpu(), stack({a.to(kGpu), a.to(kGpu)}, 0).cpu(), "stack");
  Tensor x = random_input({2, 3}, kFloat64, -1, 1, 4).to(kGpu).requires_grad_(true);
  Tensor y = random_input({2, 2}, kFloat64, -1, 1, 5).to(kGpu).requires_grad_(true);
  (cat({x, y}, 1) * 3).sum().backward();
  expect_same(x.grad(), full({2, 3}, 3.0, TensorOptions(kFloat64)), "grad of x");
  expect_same(y.grad(), full({2, 2}, 3.0, TensorOptions(kFloat64)), "grad of y");
}

// Complex copies through the real parts (Note [Complex copies as real parts]): conversions
// between the complex dtypes and to and from real ones, lazily conjugated sources and
// destinations on either side, transposed and broadcast sources, and strided fills.
TEST(CudaDeviceCopy, ComplexThroughTheirParts) {
  REQUIRE_CUDA();
  const Tensor re = random_input({4, 3}, kFloat64, -5, 5, 11), im = random_input({4, 3}, kFloat64, -5, 5, 12);
  const Tensor z = re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1);
  const std::vector<ScalarType> dts = {kComplex64, kComplex128, kFloat32, kFloat64, kInt32};
  for (ScalarType from : {kComplex64, kComplex128})
    for (ScalarType to : dts)
      for (bool conj_src : {false, true})
        for (bool conj_dst : {false, true}) {
          if (conj_dst && !is_complex(to)) continue;
          const std::string what = std::string(to_string(from)) + " -> " + to_string(to) +
                                   (conj_src ? " conj source" : "") + (conj_dst ? " conj destination" : "");
          Tensor src = z.to(from).t();  // transposed
          if (conj_src) src = src.conj();
          // The values any destination must read back (a lazily conjugated one stores their
          // conjugates).
          Tensor want = empty({3, 4}, TensorOptions(to));
          want.copy_(src);
          Tensor got = empty({3, 4}, TensorOptions(to).device(kGpu));
          if (conj_dst) got = got.conj();
          Tensor src_gpu = z.to(from).to(kGpu).t();
          if (conj_src) src_gpu = src_gpu.conj();
          got.copy_(src_gpu);
          expect_same(got, want.resolve_conj(), what + " (device to device)");  // .cpu() resolves the conj view
          Tensor up = empty({3, 4}, TensorOptions(to).device(kGpu));
          up.copy_(src);  // from the host
          expect_same(up, want.resolve_conj(), what + " (host to device)");
          Tensor down = empty({4, 3}, TensorOptions(to)).t();  // a strided host destination
          if (conj_dst) down = down.conj();
          down.copy_(src_gpu);
          expect_same(down.resolve_conj(), want.resolve_conj(), what + " (device to host)");
        }
  // Real to complex (zero imaginary part), broadcast.
  Tensor row = random_input({3}, kFloat32, -5, 5, 13);
  Tensor want = empty({4, 3}, TensorOptions(kComplex64));
  want.copy_(row);
  Tensor got = empty({4, 3}, TensorOptions(kComplex64).device(kGpu));
  got.copy_(row.to(kGpu));
  expect_same(got, want, "float32 -> complex64, broadcast");
  // A strided complex fill, plain and through a conj view.
  // Written through a conj view, the memory holds the conjugate: the expected memory is filled
  // directly.
  for (bool conj : {false, true}) {
    Tensor w = zeros({3, 4}, TensorOptions(kComplex64)), g = zeros({3, 4}, TensorOptions(kComplex64).device(kGpu));
    w.select(1, 1).fill_(conj ? complex128(1.5, 2) : complex128(1.5, -2));
    (conj ? g.conj() : g).select(1, 1).fill_(complex128(1.5, -2));
    expect_same(g, w, conj ? "complex fill through conj" : "complex fill");
  }
}
