// Matrix-product cases of TARGETS.md (float32 matmul at 256/1024/2048, bf16 matmul on AMX) and
// a linear layer with bias, each beside its libtorch twin (torch_linalg.cpp).
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

bench::Case matmul_case(int64_t n, ScalarType t, const char* name, const char* goal) {
  return {name, "GFLOP/s", 2.0 * n * n * n, goal, [n, t] {
            Tensor a = randn({n, n}).to(t), b = randn({n, n}).to(t);
            return median_seconds([&] { Tensor c = tensor::matmul(a, b); }, n >= 2048 ? 7 : 15, n <= 64 ? 200 : n <= 256 ? 10 : 1);
          }};
}

const bench::AddCases kLinalgCases({
    matmul_case(64, kFloat32, "matmul_64", "<= 1.0x (call overhead)"),
    matmul_case(256, kFloat32, "matmul_256", "<= 0.75x"),
    matmul_case(1024, kFloat32, "matmul_1024", "<= 0.95x, >= 80% FMA peak"),
    matmul_case(2048, kFloat32, "matmul_2048", "<= 0.95x, >= 80% FMA peak"),
    // bf16 runs on AMX or AVX-512 BF16 units, whose peak the run does not measure.
    matmul_case(1024, kBFloat16, "matmul_bf16_1024", ">= 6x our fp32").without_limit(),
    matmul_case(2048, kBFloat16, "matmul_bf16_2048", ">= 6x our fp32").without_limit(),
    {"linear_128x784x1024", "GFLOP/s", 2.0 * 128 * 784 * 1024, "<= 1.0x", [] {
       Tensor x = randn({128, 784}), w = randn({1024, 784}), b = randn({1024});
       return median_seconds([&] { Tensor y = tensor::linear(x, w, b); }, 15, 5);
     }},
});

}  // namespace
