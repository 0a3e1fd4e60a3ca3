// libtorch twins of bench_eltwise.cpp.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

std::function<double()> unary_twin(int64_t n, torch::Tensor (*f)(const torch::Tensor&)) {
  return [n, f] {
    auto x = torch::randn({n});
    return median_seconds([&] { auto y = f(x); }, 15, n < (1 << 20) ? 20 : 1);
  };
}

torch::Tensor gelu_erf(const torch::Tensor& x) { return torch::gelu(x); }
torch::Tensor gelu_tanh(const torch::Tensor& x) { return torch::gelu(x, "tanh"); }
torch::Tensor tanh_(const torch::Tensor& x) { return torch::tanh(x); }
torch::Tensor sigmoid_(const torch::Tensor& x) { return torch::sigmoid(x); }

const AddTwins kEltwiseTwins({
    {"gelu_16M", unary_twin(16 << 20, gelu_erf)},
    {"gelu_256K", unary_twin(256 << 10, gelu_erf)},
    {"gelu_tanh_16M", unary_twin(16 << 20, gelu_tanh)},
    {"gelu_tanh_256K", unary_twin(256 << 10, gelu_tanh)},
    {"tanh_16M", unary_twin(16 << 20, tanh_)},
    {"sigmoid_16M", unary_twin(16 << 20, sigmoid_)},
});

}  // namespace
}  // namespace bench
