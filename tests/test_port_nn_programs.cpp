// Ported programs (issue 14): the nn parts of well-known libtorch example programs, written in
// libtorch's idiom with only `torch::` renamed to `tensor::` (MNIST's Net with Dropout2d,
// tensor::dropout(x, p, is_training()) and tensor::nll_loss(..., Reduction::Sum); DCGAN's
// LeakyReLU / BCE discriminator; an LSTM sequence classifier; a small Transformer encoder). Each
// trains a few steps on synthetic data and must lower its loss.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <tuple>

using namespace tensor;

namespace {

// From pytorch/examples cpp/mnist: only the namespace differs.
struct Net : tensor::nn::Module {
  Net()
      : conv1(tensor::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(tensor::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  tensor::Tensor forward(tensor::Tensor x) {
    x = tensor::relu(tensor::max_pool2d(conv1->forward(x), 2));
    x = tensor::relu(tensor::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = tensor::relu(fc1->forward(x));
    x = tensor::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = fc2->forward(x);
    return tensor::log_softmax(x, /*dim=*/1);
  }

  tensor::nn::Conv2d conv1;
  tensor::nn::Conv2d conv2;
  tensor::nn::Dropout2d conv2_drop;
  tensor::nn::Linear fc1;
  tensor::nn::Linear fc2;
};

// An LSTM sequence classifier in libtorch's idiom.
struct SeqClassifier : tensor::nn::Module {
  SeqClassifier()
      : lstm(register_module("lstm", tensor::nn::LSTM(tensor::nn::LSTMOptions(4, 16).num_layers(2).batch_first(true)))),
        head(register_module("head", tensor::nn::Linear(16, 2))) {}
  tensor::Tensor forward(const tensor::Tensor& x) {
    auto [out, state] = lstm->forward(x);
    auto h_n = std::get<0>(state);
    return head(h_n[-1]);
  }
  tensor::nn::LSTM lstm;
  tensor::nn::Linear head;
};

}  // namespace

TEST(PortNNPrograms, MnistNetTrains) {
  tensor::manual_seed(1);
  auto model = std::make_shared<Net>();
  tensor::optim::SGD optimizer(model->parameters(), tensor::optim::SGDOptions(0.05).momentum(0.5));
  Tensor data = tensor::randn({16, 1, 28, 28});
  Tensor targets = tensor::randint(0, 10, {16});
  model->train();
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    optimizer.zero_grad();
    auto output = model->forward(data);
    auto loss = tensor::nll_loss(output, targets);
    loss.backward();
    optimizer.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first);
  model->eval();
  tensor::NoGradGuard no_grad;
  auto output = model->forward(data);
  double test_loss = tensor::nll_loss(output, targets, /*weight=*/{}, tensor::Reduction::Sum).template item<float>();
  EXPECT_NEAR(test_loss / 16, tensor::nll_loss(output, targets).item<double>(), 1e-4);
  auto pred = output.argmax(1);
  EXPECT_GT(pred.eq(targets).sum().template item<int64_t>(), 4);
}

TEST(PortNNPrograms, DcganDiscriminatorTrains) {
  tensor::manual_seed(2);
  // The discriminator of pytorch/examples cpp/dcgan, on 1x16x16 images.
  tensor::nn::Sequential discriminator(
      tensor::nn::Conv2d(tensor::nn::Conv2dOptions(1, 8, 4).stride(2).padding(1).bias(false)),
      tensor::nn::LeakyReLU(tensor::nn::LeakyReLUOptions().negative_slope(0.2)),
      tensor::nn::Conv2d(tensor::nn::Conv2dOptions(8, 16, 4).stride(2).padding(1).bias(false)),
      tensor::nn::BatchNorm2d(16),
      tensor::nn::LeakyReLU(tensor::nn::LeakyReLUOptions().negative_slope(0.2)),
      tensor::nn::Conv2d(tensor::nn::Conv2dOptions(16, 1, 4).stride(1).padding(0).bias(false)),
      tensor::nn::Sigmoid());
  tensor::optim::Adam opt(discriminator->parameters(), tensor::optim::AdamOptions(2e-3));
  Tensor real = tensor::randn({8, 1, 16, 16}) * 0.5 + 1;
  Tensor fake = tensor::randn({8, 1, 16, 16});
  Tensor real_labels = tensor::ones({8}) * 0.9;
  Tensor fake_labels = tensor::zeros({8});
  double first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    Tensor real_output = discriminator->forward(real).reshape({-1});
    Tensor d_loss_real = tensor::binary_cross_entropy(real_output, real_labels);
    Tensor fake_output = discriminator->forward(fake).reshape({-1});
    Tensor d_loss_fake = tensor::binary_cross_entropy(fake_output, fake_labels);
    Tensor d_loss = d_loss_real + d_loss_fake;
    d_loss.backward();
    opt.step();
    if (step == 0) first = d_loss.item<double>();
    last = d_loss.item<double>();
  }
  EXPECT_LT(last, first);
}

TEST(PortNNPrograms, LstmClassifierTrains) {
  tensor::manual_seed(3);
  auto model = std::make_shared<SeqClassifier>();
  tensor::optim::Adam opt(model->parameters(), tensor::optim::AdamOptions(1e-2));
  // Class 1 sequences drift upwards, class 0 downwards.
  Tensor y = tensor::randint(0, 2, {32});
  Tensor drift = (y.to(kFloat32) * 2 - 1).reshape({32, 1, 1}) * tensor::linspace(0, 1, 6).reshape({1, 6, 1});
  Tensor x = drift + tensor::randn({32, 6, 4}) * 0.1;
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    Tensor loss = tensor::cross_entropy_loss(model->forward(x), y);
    loss.backward();
    tensor::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.5);
}

TEST(PortNNPrograms, TransformerEncoderTrains) {
  tensor::manual_seed(4);
  tensor::nn::TransformerEncoder encoder(
      tensor::nn::TransformerEncoderOptions(
          tensor::nn::TransformerEncoderLayerOptions(16, 4).dim_feedforward(32).dropout(0.1), 2)
          .norm(tensor::nn::AnyModule(tensor::nn::LayerNorm(tensor::nn::LayerNormOptions({16})))));
  tensor::nn::Linear head(16, 16);
  std::vector<Tensor> params = encoder->parameters();
  for (auto& p : head->parameters()) params.push_back(p);
  tensor::optim::AdamW opt(params, tensor::optim::AdamWOptions(3e-3));
  Tensor src = tensor::randn({5, 4, 16});
  Tensor mask = tensor::nn::TransformerImpl::generate_square_subsequent_mask(5);
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor out = head(encoder(src, mask));
    Tensor loss = tensor::mse_loss(out, src);
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first);
}
