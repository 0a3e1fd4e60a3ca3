// nn / optim cases: one optimizer step over the parameters of the MLP 784-1024-1024-10 of
// TARGETS.md (SGD momentum and Adam), a classifier loss forward + backward, and one-layer LSTM
// and GRU layers (issue 22's shape: T 64, batch 32, 256 -> 256) forward and forward + backward.
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

// nll_loss and multi_margin_loss forward + backward on a [4096, 1000] input (issue 22's
// cross_entropy shape): the Functions of Notes [nll_loss Function] and [Multi-margin loss
// Function] against torch's kernels.
constexpr int64_t kLossN = 4096, kLossC = 1000;
double nll_loss_fwd_bwd() {
  tensor::Tensor x = tensor::randn({kLossN, kLossC}).requires_grad_(true);
  tensor::Tensor y = tensor::randint(0, kLossC, {kLossN});
  return bench::median_seconds([&] { tensor::nn::functional::nll_loss(x, y).backward(); }, 9);
}
double multi_margin_fwd_bwd() {
  tensor::Tensor x = tensor::randn({kLossN, kLossC}).requires_grad_(true);
  tensor::Tensor y = tensor::randint(0, kLossC, {kLossN});
  return bench::median_seconds([&] { tensor::nn::functional::multi_margin_loss(x, y).backward(); }, 9);
}

// The recurrent cases: input [T, B, I] without grad, the layer's parameters with grad; the
// backward is that of out.sum().
constexpr int64_t kRnnT = 64, kRnnB = 32, kRnnI = 256, kRnnH = 256;

template <class Layer>
double rnn_case(Layer layer, bool backward) {
  tensor::Tensor x = tensor::randn({kRnnT, kRnnB, kRnnI});
  if (!backward) {
    tensor::NoGradGuard no_grad;
    return bench::median_seconds([&] { (void)std::get<0>(layer->forward(x)); }, 9);
  }
  return bench::median_seconds([&] { std::get<0>(layer->forward(x)).sum().backward(); }, 9);
}
double lstm_fwd() { return rnn_case(tensor::nn::LSTM(kRnnI, kRnnH), false); }
double lstm_fwd_bwd() { return rnn_case(tensor::nn::LSTM(kRnnI, kRnnH), true); }
double gru_fwd() { return rnn_case(tensor::nn::GRU(kRnnI, kRnnH), false); }
double gru_fwd_bwd() { return rnn_case(tensor::nn::GRU(kRnnI, kRnnH), true); }

// FLOPs of the GEMMs: forward projects input and state into G gates per step; backward adds
// the gradients of W_ih, W_hh and the state (the input needs none).
constexpr double rnn_flops(int64_t gates, bool backward) {
  const double g = static_cast<double>(gates * kRnnH), rows = static_cast<double>(kRnnT * kRnnB);
  const double fwd = 2 * rows * (kRnnI + kRnnH) * g;
  return backward ? fwd + 2 * rows * (kRnnI + 2 * kRnnH) * g : fwd;
}

const bench::AddCases kNNCases({
    // Bytes: SGD momentum reads param, grad and buffer and writes param and buffer (5 floats
    // per parameter); Adam reads param, grad and both moments and writes three (7 floats).
    bench::Case{"sgd_momentum_step_mlp", "ms", 0, "(part of the MLP train step)", sgd_momentum_step}
        .with_bytes(5.0 * 4 * kMlpParams),
    bench::Case{"adam_step_mlp", "ms", 0, "(part of the CNN train step)", adam_step}.with_bytes(7.0 * 4 * kMlpParams),
    {"cross_entropy_fwd_bwd_128x10", "us", 0, "(part of every train step)", cross_entropy_fwd_bwd},
    // Bytes: the input read and its gradient written (nll_loss reads only N entries).
    bench::Case{"nll_loss_fwd_bwd_4096x1000", "ms", 0, "(issue 22)", nll_loss_fwd_bwd}.with_bytes(4.0 * kLossN * kLossC),
    bench::Case{"multi_margin_fwd_bwd_4096x1000", "ms", 0, "(issue 22)", multi_margin_fwd_bwd}
        .with_bytes(3 * 4.0 * kLossN * kLossC),
    bench::Case{"lstm_fwd_T64_B32_256", "ms", 0, "(issue 22)", lstm_fwd}.with_flops(rnn_flops(4, false)),
    bench::Case{"lstm_fwd_bwd_T64_B32_256", "ms", 0, "(issue 22)", lstm_fwd_bwd}.with_flops(rnn_flops(4, true)),
    bench::Case{"gru_fwd_T64_B32_256", "ms", 0, "(issue 22)", gru_fwd}.with_flops(rnn_flops(3, false)),
    bench::Case{"gru_fwd_bwd_T64_B32_256", "ms", 0, "(issue 22)", gru_fwd_bwd}.with_flops(rnn_flops(3, true)),
});

}  // namespace
