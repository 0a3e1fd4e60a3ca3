// libtorch twins of bench_nn.cpp.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

std::vector<torch::Tensor> mlp_params() {
  std::vector<std::vector<int64_t>> shapes = {{1024, 784}, {1024}, {1024, 1024}, {1024}, {10, 1024}, {10}};
  std::vector<torch::Tensor> ps;
  for (auto& s : shapes) {
    torch::Tensor p = torch::randn(s).requires_grad_(true);
    p.mutable_grad() = torch::randn(s) * 1e-3;
    ps.push_back(p);
  }
  return ps;
}

template <class Layer>
double rnn_case(Layer layer, bool backward) {
  torch::Tensor x = torch::randn({64, 32, 256});
  if (!backward) {
    torch::NoGradGuard no_grad;
    return median_seconds([&] { (void)std::get<0>(layer->forward(x)); }, 9);
  }
  return median_seconds([&] { std::get<0>(layer->forward(x)).sum().backward(); }, 9);
}

TwinTable nn_twins() {
  TwinTable t;
  t["sgd_momentum_step_mlp"] = [] {
    auto ps = mlp_params();
    torch::optim::SGD opt(ps, torch::optim::SGDOptions(1e-3).momentum(0.9));
    return median_seconds([&] { opt.step(); });
  };
  t["adam_step_mlp"] = [] {
    auto ps = mlp_params();
    torch::optim::Adam opt(ps, torch::optim::AdamOptions(1e-3));
    return median_seconds([&] { opt.step(); });
  };
  t["cross_entropy_fwd_bwd_128x10"] = [] {
    torch::Tensor x = torch::randn({128, 10}).requires_grad_(true);
    torch::Tensor y = torch::randint(0, 10, {128});
    return median_seconds([&] { torch::nn::functional::cross_entropy(x, y).backward(); }, 15, 200);
  };
  t["nll_loss_fwd_bwd_4096x1000"] = [] {
    torch::Tensor x = torch::randn({4096, 1000}).requires_grad_(true);
    torch::Tensor y = torch::randint(0, 1000, {4096});
    return median_seconds([&] { torch::nn::functional::nll_loss(x, y).backward(); }, 9);
  };
  t["multi_margin_fwd_bwd_4096x1000"] = [] {
    torch::Tensor x = torch::randn({4096, 1000}).requires_grad_(true);
    torch::Tensor y = torch::randint(0, 1000, {4096});
    return median_seconds([&] { torch::nn::functional::multi_margin_loss(x, y).backward(); }, 9);
  };
  t["lstm_fwd_T64_B32_256"] = [] { return rnn_case(torch::nn::LSTM(256, 256), false); };
  t["lstm_fwd_bwd_T64_B32_256"] = [] { return rnn_case(torch::nn::LSTM(256, 256), true); };
  t["gru_fwd_T64_B32_256"] = [] { return rnn_case(torch::nn::GRU(256, 256), false); };
  t["gru_fwd_bwd_T64_B32_256"] = [] { return rnn_case(torch::nn::GRU(256, 256), true); };
  return t;
}
const AddTwins kNNTwins(nn_twins());

}  // namespace
}  // namespace bench
