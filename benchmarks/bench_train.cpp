// Whole training steps of TARGETS.md: the MLP 784-1024-1024-10 (batch 128, SGD momentum) and
// the Fashion-MNIST CNN (2 conv + 2 linear, batch 64, Adam), forward + backward + step, beside
// the same models in libtorch (torch_train.cpp).
#include <tensor/tensor.h>

#include <chrono>
#include <cstdio>

#include "harness.h"
#include "models.h"

using namespace tensor;
using bench::median_seconds;
namespace F = tensor::nn::functional;

namespace {

// The CNN of examples/fashion_mnist.
struct CNN : nn::Module {
  CNN()
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", nn::Linear(128, 10))) {}
  Tensor forward(Tensor x) {
    x = max_pool2d(relu(conv1(x)), {2, 2});
    x = max_pool2d(relu(conv2(x)), {2, 2});
    return fc2(relu(fc1(x.flatten(1))));
  }
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};

double mlp_step() {
  bench::MLP net;
  optim::SGD opt(net.parameters(), bench::mlp_sgd_options());
  Tensor x = rand({bench::MLP::kBatch, bench::MLP::kIn}), y = randint(0, bench::MLP::kClasses, {bench::MLP::kBatch});
  return median_seconds([&] {
    opt.zero_grad();
    F::cross_entropy(net.forward(x), y).backward();
    opt.step();
  }, 15, 3);
}

double cnn_step() {
  CNN net;
  optim::Adam opt(net.parameters(), optim::AdamOptions(1e-3));
  Tensor x = rand({64, 1, 28, 28}), y = randint(0, 10, {64});
  return median_seconds([&] {
    opt.zero_grad();
    F::cross_entropy(net.forward(x), y).backward();
    opt.step();
  }, 15, 3);
}

// One epoch of examples/fashion_mnist: batch 64, shuffled, Adam 1e-3, then test accuracy. One
// timed run (an epoch is long); the dataset is shared with the libtorch twin.
double fashion_mnist_epoch() {
  const char* root = "/usr/share/datasets/fashion-mnist";
  auto train = std::make_shared<data::datasets::MNIST>(root, true);
  auto test = std::make_shared<data::datasets::MNIST>(root, false);
  bench::SharedDataset& sd = bench::shared_dataset();
  auto keep = [](const data::Example<>& e, std::vector<float>& img, std::vector<int64_t>& lab) {
    Tensor x = e.data.contiguous(), y = e.target.contiguous();
    img.assign(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
    lab.assign(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
  };
  std::vector<size_t> all_train(train->size()), all_test(test->size());
  for (size_t i = 0; i < all_train.size(); ++i) all_train[i] = i;
  for (size_t i = 0; i < all_test.size(); ++i) all_test[i] = i;
  keep(train->get_batch(all_train), sd.train_images, sd.train_labels);
  keep(test->get_batch(all_test), sd.test_images, sd.test_labels);
  sd.rows = sd.cols = 28;

  manual_seed(0);
  CNN net;
  optim::Adam opt(net.parameters(), optim::AdamOptions(1e-3));
  data::DataLoader loader(train, data::DataLoaderOptions(64).shuffle(true).seed(0).num_workers(1));
  auto t0 = std::chrono::steady_clock::now();
  for (auto& b : loader) {
    opt.zero_grad();
    F::cross_entropy(net.forward((b.data - 0.2860) / 0.3530), b.target).backward();
    opt.step();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  NoGradGuard ng;
  Tensor xt = tensor::from_blob(sd.test_images.data(), {static_cast<int64_t>(sd.test_labels.size()), 1, 28, 28});
  Tensor yt = tensor::from_blob(sd.test_labels.data(), {static_cast<int64_t>(sd.test_labels.size())}, kInt64);
  const double acc = net.forward((xt - 0.2860) / 0.3530).argmax(1).eq(yt).to(kFloat64).mean().item<double>();
  std::printf("  (libtensor fashion_mnist epoch: test accuracy %.4f)\n", acc);
  return secs;
}

// MLP 784-1024-1024-10, batch 128: 2 * batch * (sum of in * out) per forward.
constexpr double kMlpFwd = 2.0 * 128 * (784 * 1024 + 1024 * 1024 + 1024 * 10);
constexpr double kMlpStepFlops = 3 * kMlpFwd - 2.0 * 128 * 784 * 1024;
// CNN, batch 64: conv1 1->32 at 28x28, conv2 32->64 at 14x14 (3x3), fc1 3136->128, fc2 128->10.
constexpr double kCnnConv1 = 2.0 * 64 * 28 * 28 * 32 * 1 * 9;
constexpr double kCnnFwd = kCnnConv1 + 2.0 * 64 * 14 * 14 * 64 * 32 * 9 + 2.0 * 64 * (3136 * 128 + 128 * 10);
constexpr double kCnnStepFlops = 3 * kCnnFwd - kCnnConv1;

const bench::AddCases kTrainCases({
    // FLOPs of the matrix products and convolutions only, backward counted as twice forward
    // (less the input gradient the first layer does not need): a lower bound on the step's work.
    bench::Case{"mlp_train_step", "ms", 0, "<= 0.9x", mlp_step}.with_flops(kMlpStepFlops),
    bench::Case{"cnn_train_step", "ms", 0, "<= 0.9x", cnn_step}.with_flops(kCnnStepFlops),
    {"fashion_mnist_epoch", "ms", 0, "<= 0.9x, acc >= 0.88", fashion_mnist_epoch},
});

}  // namespace
