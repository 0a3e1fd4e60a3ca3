// libtorch twins of bench_train.cpp: the same models, batch sizes and optimizers.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include "harness.h"

namespace bench {
namespace {

struct MLP : torch::nn::Module {
  MLP()
      : fc1(register_module("fc1", torch::nn::Linear(784, 1024))),
        fc2(register_module("fc2", torch::nn::Linear(1024, 1024))),
        fc3(register_module("fc3", torch::nn::Linear(1024, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc3(torch::relu(fc2(torch::relu(fc1(x))))); }
  torch::nn::Linear fc1, fc2, fc3;
};

struct CNN : torch::nn::Module {
  CNN()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3).padding(1)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1", torch::nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), {2, 2});
    x = torch::max_pool2d(torch::relu(conv2(x)), {2, 2});
    return fc2(torch::relu(fc1(x.flatten(1))));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
};

double fashion_mnist_epoch() {
  SharedDataset& sd = shared_dataset();
  const int64_t n = static_cast<int64_t>(sd.train_labels.size()), nt = static_cast<int64_t>(sd.test_labels.size());
  if (n == 0) return 0;
  auto x = torch::from_blob(sd.train_images.data(), {n, 1, 28, 28});
  auto y = torch::from_blob(sd.train_labels.data(), {n}, torch::kInt64);
  torch::manual_seed(0);
  CNN net;
  torch::optim::Adam opt(net.parameters(), torch::optim::AdamOptions(1e-3));
  auto t0 = std::chrono::steady_clock::now();
  auto perm = torch::randperm(n);
  for (int64_t s = 0; s < n; s += 64) {
    auto idx = perm.slice(0, s, std::min(n, s + 64));
    opt.zero_grad();
    torch::nn::functional::cross_entropy(net.forward((x.index_select(0, idx) - 0.2860) / 0.3530), y.index_select(0, idx))
        .backward();
    opt.step();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  torch::NoGradGuard ng;
  auto xt = torch::from_blob(sd.test_images.data(), {nt, 1, 28, 28});
  auto yt = torch::from_blob(sd.test_labels.data(), {nt}, torch::kInt64);
  const double acc = net.forward((xt - 0.2860) / 0.3530).argmax(1).eq(yt).to(torch::kFloat64).mean().item<double>();
  std::printf("  (libtorch fashion_mnist epoch: test accuracy %.4f)\n", acc);
  return secs;
}

const AddTwins kTrainTwins({
    {"fashion_mnist_epoch", fashion_mnist_epoch},
    {"mlp_train_step", [] {
       MLP net;
       torch::optim::SGD opt(net.parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
       auto x = torch::rand({128, 784});
       auto y = torch::randint(0, 10, {128});
       return median_seconds([&] {
         opt.zero_grad();
         torch::nn::functional::cross_entropy(net.forward(x), y).backward();
         opt.step();
       }, 15, 3);
     }},
    {"cnn_train_step", [] {
       CNN net;
       torch::optim::Adam opt(net.parameters(), torch::optim::AdamOptions(1e-3));
       auto x = torch::rand({64, 1, 28, 28});
       auto y = torch::randint(0, 10, {64});
       return median_seconds([&] {
         opt.zero_grad();
         torch::nn::functional::cross_entropy(net.forward(x), y).backward();
         opt.step();
       }, 15, 3);
     }},
});

}  // namespace
}  // namespace bench
