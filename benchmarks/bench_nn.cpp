// nn / optim cases: one optimizer step over the parameters of the MLP 784-1024-1024-10 of
// TARGETS.md (SGD momentum and Adam), and a classifier loss forward + backward.
#include <tensor/tensor.h>

#include "harness.h"

namespace {

constexpr double kMlpParams = 1024 * 784 + 1024 + 1024 * 1024 + 1024 + 10 * 1024 + 10;

std::vector<tensor::Tensor> mlp_params() {
  std::vector<std::vector<int64_t>> shapes = {{1024, 784}, {1024}, {1024, 1024}, {1024}, {10, 1024}, {10}};
  std::vector<tensor::Tensor> ps;
  for (auto& s : shapes) {
    tensor::Tensor p = tensor::randn(s).requires_grad_(true);
    p.mutable_grad() = tensor::randn(s) * 1e-3;
    ps.push_back(p);
  }
  return ps;
}

double sgd_momentum_step() {
  auto ps = mlp_params();
  tensor::optim::SGD opt(ps, tensor::optim::SGDOptions(1e-3).momentum(0.9));
  return bench::median_seconds([&] { opt.step(); });
}

double adam_step() {
  auto ps = mlp_params();
  tensor::optim::Adam opt(ps, tensor::optim::AdamOptions(1e-3));
  return bench::median_seconds([&] { opt.step(); });
}

double cross_entropy_fwd_bwd() {
  tensor::Tensor x = tensor::randn({128, 10}).requires_grad_(true);
  tensor::Tensor y = tensor::randint(0, 10, {128});
  return bench::median_seconds([&] { tensor::nn::functional::cross_entropy(x, y).backward(); }, 15, 200);
}

const bench::AddCases kNNCases({
    // Bytes: SGD momentum reads param, grad and buffer and writes param and buffer (5 floats
    // per parameter); Adam reads param, grad and both moments and writes three (7 floats).
    bench::Case{"sgd_momentum_step_mlp", "ms", 0, "(part of the MLP train step)", sgd_momentum_step}
        .with_bytes(5.0 * 4 * kMlpParams),
    bench::Case{"adam_step_mlp", "ms", 0, "(part of the CNN train step)", adam_step}.with_bytes(7.0 * 4 * kMlpParams),
    {"cross_entropy_fwd_bwd_128x10", "us", 0, "(part of every train step)", cross_entropy_fwd_bwd},
});

}  // namespace
