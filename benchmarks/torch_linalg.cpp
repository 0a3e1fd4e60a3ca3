// libtorch twins of bench_linalg.cpp.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

std::function<double()> matmul_twin(int64_t n, torch::ScalarType t) {
  return [n, t] {
    auto a = torch::randn({n, n}).to(t), b = torch::randn({n, n}).to(t);
    return median_seconds([&] { auto c = torch::matmul(a, b); }, n >= 2048 ? 7 : 15, n <= 64 ? 200 : n <= 256 ? 10 : 1);
  };
}

const AddTwins kLinalgTwins({
    {"matmul_64", matmul_twin(64, torch::kFloat32)},
    {"matmul_256", matmul_twin(256, torch::kFloat32)},
    {"matmul_1024", matmul_twin(1024, torch::kFloat32)},
    {"matmul_2048", matmul_twin(2048, torch::kFloat32)},
    {"matmul_bf16_1024", matmul_twin(1024, torch::kBFloat16)},
    {"matmul_bf16_2048", matmul_twin(2048, torch::kBFloat16)},
    {"linear_128x784x1024", [] {
       auto x = torch::randn({128, 784}), w = torch::randn({1024, 784}), b = torch::randn({1024});
       return median_seconds([&] { auto y = torch::linear(x, w, b); }, 15, 5);
     }},
});

}  // namespace
}  // namespace bench
