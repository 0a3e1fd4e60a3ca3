// The snippets of shared/API.md's "nn, optim, data, io" section, written as a user would (the
// public API contract): they must compile as given and behave.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstdio>

using tensor::Tensor;
namespace nn = tensor::nn;
namespace F = tensor::nn::functional;

namespace {
struct Net : nn::Module {
  Net() : fc1(register_module("fc1", nn::Linear(784, 128))), fc2(register_module("fc2", nn::Linear(128, 10))) {}
  Tensor forward(Tensor x) { return fc2(tensor::relu(fc1(x))); }
  nn::Linear fc1, fc2;
};
}  // namespace

TEST(ApiContract, NetOptimizerAndCheckpoint) {
  tensor::manual_seed(0);
  auto net = std::make_shared<Net>();
  tensor::optim::Adam opt(net->parameters(), tensor::optim::AdamOptions(1e-3));
  Tensor x = tensor::rand({16, 784}), y = tensor::randint(0, 10, {16});
  double first = 0, last = 0;
  for (int i = 0; i < 20; ++i) {
    opt.zero_grad(); auto loss = nn::functional::cross_entropy(net->forward(x), y); loss.backward(); opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first);
  const std::string path = ::testing::TempDir() + "api_contract_model.safetensors";
  tensor::io::save(net->named_parameters(), path);
  Tensor before = net->fc1->weight.detach().clone();
  {
    tensor::NoGradGuard g;
    net->fc1->weight.zero_();
  }
  tensor::io::load(net->named_parameters(), path);
  EXPECT_TRUE(net->fc1->weight.detach().equal(before));
  std::remove(path.c_str());
}

TEST(ApiContract, ModulesAndFunctionalOptions) {
  tensor::manual_seed(1);
  nn::Conv2d conv(nn::Conv2dOptions(1, 32, 3).padding(1));
  Tensor img = tensor::rand({2, 1, 8, 8});
  EXPECT_EQ(conv(img).sizes().vec(), (std::vector<int64_t>{2, 32, 8, 8}));
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(16, 4).dim_feedforward(32).dropout(0.0));
  EXPECT_EQ(layer(tensor::rand({5, 2, 16})).sizes().vec(), (std::vector<int64_t>{5, 2, 16}));
  Tensor w = tensor::rand({4, 2, 3, 3}), b = tensor::rand({4});
  Tensor x = tensor::rand({1, 4, 6, 6});
  Tensor c = F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1).groups(2).bias(b));
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{1, 4, 3, 3}));
  EXPECT_EQ(F::max_pool2d(x, F::MaxPool2dFuncOptions(2)).sizes().vec(), (std::vector<int64_t>{1, 4, 3, 3}));
  EXPECT_EQ(F::avg_pool2d(x, F::AvgPool2dFuncOptions(2)).sizes().vec(), (std::vector<int64_t>{1, 4, 3, 3}));
  Tensor h = tensor::rand({3, 8}), lw = tensor::ones({8}), lb = tensor::zeros({8});
  Tensor ln = F::layer_norm(h, F::LayerNormFuncOptions({8}).weight(lw).bias(lb).eps(1e-5));
  EXPECT_NEAR(ln.mean().item<double>(), 0.0, 1e-5);
  Tensor bw = tensor::ones({4}), bb = tensor::zeros({4});
  Tensor bn = F::batch_norm(x, Tensor(), Tensor(), F::BatchNormFuncOptions().weight(bw).bias(bb).training(true).momentum(0.1).eps(1e-5));
  EXPECT_NEAR(bn.mean().item<double>(), 0.0, 1e-5);
  auto seq = nn::Sequential(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 1));
  EXPECT_EQ(seq->forward(tensor::rand({2, 4})).sizes().vec(), (std::vector<int64_t>{2, 1}));
  seq->eval();
  EXPECT_FALSE(seq->is_training());
  nn::init::xavier_uniform_(w);
  tensor::optim::SGD sgd(seq->parameters(), tensor::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-4));
  tensor::optim::StepLR sched(sgd, 2, 0.5);
  sched.step();
  EXPECT_GT(nn::utils::clip_grad_norm_(seq->parameters(), 1.0), -1.0);
}

// "Loading PyTorch-saved weights": tensor::load(module, "model.pt") and tensor::pickle_load(bytes)
// on a file Python's torch.save wrote (tests/reference/torch_save.py).
TEST(ApiContract, LoadingPyTorchSavedWeights) {
  struct Mlp : nn::Module {
    Mlp()
        : fc1(register_module("fc1", nn::Linear(4, 8))),
          bn(register_module("bn", nn::BatchNorm1d(8))),
          fc2(register_module("fc2", nn::Linear(8, 2))) {}
    nn::Linear fc1;
    nn::BatchNorm1d bn;
    nn::Linear fc2;
  };
  const std::string path = TENSOR_TEST_REFERENCE_DIR "/torch_save/mlp.pt";
  auto model = std::make_shared<Mlp>();
  tensor::load(model, path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::vector<char> bytes;
  for (int c; (c = std::fgetc(f)) != EOF;) bytes.push_back(static_cast<char>(c));
  std::fclose(f);
  tensor::PickleValue sd = tensor::pickle_load(bytes);
  EXPECT_TRUE(sd.find("fc1.weight")->to_tensor().equal(model->fc1->weight));
  EXPECT_THROW(tensor::pickle_load(std::vector<char>{'\x80', '\x02', 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'}),
               tensor::Error);
}
