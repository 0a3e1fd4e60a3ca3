// Ported-program test (issue 14): libtorch's torch::save / torch::load, spelled tensor::save /
// tensor::load, for a module, an optimizer, a tensor and a tensor list. Round trips are bit-exact;
// an optimizer restored from a file continues exactly as one that was never saved; a .pt file goes
// to the torch.save reader (tests/test_pickle.cpp).
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/temp_dir_util.h"
#include "tests/test_util.h"

namespace {

struct Net : tensor::nn::Module {
  Net()
      : fc1(register_module("fc1", tensor::nn::Linear(4, 8))),
        bn(register_module("bn", tensor::nn::BatchNorm1d(8))),
        fc2(register_module("fc2", tensor::nn::Linear(8, 2))) {}
  tensor::Tensor forward(tensor::Tensor x) { return fc2(tensor::relu(bn(fc1(x)))); }
  tensor::nn::Linear fc1;
  tensor::nn::BatchNorm1d bn;
  tensor::nn::Linear fc2;
};

// Every parameter and buffer of `a` equals (bit for bit) the one of the same name in `b`.
void expect_same_state(const tensor::nn::Module& a, const tensor::nn::Module& b) {
  auto sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (const auto& item : sa) {
    const tensor::Tensor* other = sb.find(item.key());
    ASSERT_NE(other, nullptr) << item.key();
    EXPECT_EQ(item.value().scalar_type(), other->scalar_type()) << item.key();
    EXPECT_TRUE(item.value().equal(*other)) << item.key();
  }
}

// One training step of `net` on a fixed batch.
void train_step(Net& net, tensor::optim::Optimizer& opt, int64_t seed) {
  tensor::manual_seed(static_cast<uint64_t>(seed));
  tensor::Tensor x = tensor::randn({16, 4});
  tensor::Tensor y = tensor::randint(0, 2, {16});
  opt.zero_grad();
  tensor::Tensor loss = tensor::nn::functional::cross_entropy(net.forward(x), y);
  loss.backward();
  opt.step();
}

std::string write_bytes(const std::string& name, const std::string& bytes) {
  std::string path = tensor::testing::temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST(PortIo, ModuleRoundTripIsBitExact) {
  tensor::manual_seed(1);
  auto model = std::make_shared<Net>();
  // Give the buffers non-default values, so that they are checked too.
  model->train();
  model->forward(tensor::randn({8, 4}));
  const std::string path = tensor::testing::temp_path("port_model.safetensors");
  tensor::save(model, path);

  tensor::manual_seed(2);
  auto restored = std::make_shared<Net>();
  EXPECT_FALSE(restored->fc1->weight.equal(model->fc1->weight));
  tensor::load(restored, path);
  expect_same_state(*model, *restored);
  // Loading writes into the existing parameters: handles (and optimizers holding them) see it.
  EXPECT_TRUE(restored->fc1->weight.requires_grad());

  // A module holder saves and loads the same way.
  tensor::nn::Linear lin(3, 2), lin2(3, 2);
  const std::string lpath = tensor::testing::temp_path("port_linear.safetensors");
  tensor::save(lin, lpath);
  tensor::load(lin2, lpath);
  EXPECT_TRUE(lin2->weight.equal(lin->weight));
  EXPECT_TRUE(lin2->bias.equal(lin->bias));

  // The file is plain safetensors, named as state_dict() names the tensors (what Python's
  // safetensors.torch.load_file returns), with the weight's values.
  tensor::io::NamedTensors all = tensor::io::load(lpath);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].first, "bias");
  EXPECT_EQ(all[1].first, "weight");
  EXPECT_TRUE(all[1].second.equal(lin->weight.detach()));
}

TEST(PortIo, ModuleLoadsAStateDictExportedWithoutMetadata) {
  // What a PyTorch user exports with safetensors.torch.save_file(model.state_dict(), path):
  // names and tensors, no libtensor metadata.
  tensor::nn::Linear lin(2, 1);
  tensor::io::NamedTensors sd = {{"weight", tensor::tensor({{0.25f, -1.5f}})}, {"bias", tensor::tensor({2.0f})}};
  const std::string path = tensor::testing::temp_path("port_exported.safetensors");
  tensor::io::save(sd, path);
  tensor::load(lin, path);
  // y = 0.25 * 4 - 1.5 * 2 + 2 = 0, by hand.
  EXPECT_FLOAT_EQ(lin(tensor::tensor({{4.0f, 2.0f}})).item<float>(), 0.0f);
  // A missing name is an error that names it, and nothing is written.
  tensor::io::save(tensor::io::NamedTensors{{"weight", tensor::zeros({1, 2})}}, path);
  tensor::testing::expect_error([&] { tensor::load(lin, path); }, {"bias"});
  EXPECT_FLOAT_EQ(lin->weight[0][0].item<float>(), 0.25f);
}

TEST(PortIo, OptimizerStateContinuesIdentically) {
  for (int which = 0; which < 2; ++which) {
    auto make_opt = [&](Net& net) -> std::unique_ptr<tensor::optim::Optimizer> {
      if (which == 0)
        return std::make_unique<tensor::optim::Adam>(net.parameters(), tensor::optim::AdamOptions(1e-2));
      return std::make_unique<tensor::optim::SGD>(net.parameters(),
                                                  tensor::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
    };
    tensor::manual_seed(10);
    auto net = std::make_shared<Net>();
    auto opt = make_opt(*net);
    for (int s = 0; s < 3; ++s) train_step(*net, *opt, 100 + s);
    const std::string mpath = tensor::testing::temp_path("port_ckpt_model.safetensors");
    const std::string opath = tensor::testing::temp_path("port_ckpt_optim.safetensors");
    tensor::save(net, mpath);
    tensor::save(*opt, opath);
    // Two more steps without interruption: the reference.
    for (int s = 3; s < 5; ++s) train_step(*net, *opt, 100 + s);

    // A fresh process would build a new model and optimizer and load both.
    tensor::manual_seed(99);
    auto resumed = std::make_shared<Net>();
    auto resumed_opt = make_opt(*resumed);
    tensor::load(resumed, mpath);
    tensor::load(*resumed_opt, opath);
    for (int s = 3; s < 5; ++s) train_step(*resumed, *resumed_opt, 100 + s);
    expect_same_state(*net, *resumed);

    // Without the optimizer's state (moments, momentum buffers, step counts) the steps differ,
    // so the equality above is the state's doing.
    auto fresh = std::make_shared<Net>();
    auto fresh_opt = make_opt(*fresh);
    tensor::load(fresh, mpath);
    for (int s = 3; s < 5; ++s) train_step(*fresh, *fresh_opt, 100 + s);
    EXPECT_FALSE(fresh->fc1->weight.equal(net->fc1->weight)) << which;
  }
}

TEST(PortIo, OptimizerFileKindsAreChecked) {
  tensor::manual_seed(3);
  auto net = std::make_shared<Net>();
  tensor::optim::Adam adam(net->parameters(), tensor::optim::AdamOptions(1e-3));
  tensor::optim::SGD sgd(net->parameters(), tensor::optim::SGDOptions(0.1));
  train_step(*net, adam, 1);
  const std::string opath = tensor::testing::temp_path("port_adam.safetensors");
  tensor::save(adam, opath);
  tensor::testing::expect_error([&] { tensor::load(sgd, opath); }, {"Adam", "SGD", "cannot load"});
  tensor::testing::expect_error([&] { tensor::load(net, opath); }, {"of an optimizer", "cannot be loaded as a module"});
  const std::string mpath = tensor::testing::temp_path("port_net.safetensors");
  tensor::save(net, mpath);
  tensor::testing::expect_error([&] { tensor::load(adam, mpath); }, {"of a module", "cannot be loaded as an optimizer"});
}

TEST(PortIo, TensorAndTensorListRoundTrips) {
  // Values chosen by hand, including ones a float round trip through text would lose.
  tensor::Tensor a = tensor::tensor({0.1, -2.5, 1e-300, 3.0}, tensor::dtype(tensor::kFloat64)).reshape({2, 2}).t();
  ASSERT_FALSE(a.is_contiguous());
  const std::string path = tensor::testing::temp_path("port_tensor.safetensors");
  tensor::save(a, path);
  tensor::Tensor b;
  tensor::load(b, path);
  EXPECT_EQ(b.scalar_type(), tensor::kFloat64);
  EXPECT_EQ(b.sizes(), tensor::IntArrayRef({2, 2}));
  EXPECT_EQ(b[0][1].item<double>(), 1e-300);  // a was [[0.1, -2.5], [1e-300, 3]] transposed
  EXPECT_EQ(b[1][0].item<double>(), -2.5);
  EXPECT_TRUE(b.equal(a));

  // Twelve tensors of different dtypes: the list comes back in order (10 and 11 after 9).
  std::vector<tensor::Tensor> list;
  for (int64_t i = 0; i < 12; ++i) {
    if (i % 3 == 0) list.push_back(tensor::full({2}, static_cast<double>(i), tensor::dtype(tensor::kInt64)));
    else if (i % 3 == 1) list.push_back(tensor::full({i}, 0.5 * static_cast<double>(i)));
    else list.push_back(tensor::full({1, 1}, static_cast<double>(i), tensor::dtype(tensor::kBFloat16)));
  }
  const std::string lpath = tensor::testing::temp_path("port_list.safetensors");
  tensor::save(list, lpath);
  std::vector<tensor::Tensor> back{tensor::ones({1})};
  tensor::load(back, lpath);
  ASSERT_EQ(back.size(), 12u);
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(back[i].scalar_type(), list[i].scalar_type()) << i;
    EXPECT_TRUE(back[i].equal(list[i])) << i;
    EXPECT_EQ(back[i].flatten()[0].item<double>(), i % 3 == 1 ? 0.5 * i : static_cast<double>(i)) << i;
  }
  // A file of one tensor is a list of one; a list of several is not one tensor.
  std::vector<tensor::Tensor> one;
  tensor::load(one, path);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].equal(a));
  tensor::testing::expect_error([&] { tensor::load(b, lpath); }, {"12 tensors", "exactly one"});
  tensor::testing::expect_error([&] { tensor::save(tensor::Tensor(), path); }, {"undefined"});
  // A failed save leaves the previous file whole.
  tensor::load(b, path);
  EXPECT_TRUE(b.equal(a));
}

TEST(PortIo, PtFilesGoToThePickleReader) {
  // torch.save (PyTorch >= 1.6) and libtorch's torch::save write a zip archive; older torch.save
  // a pickle. tensor::load reads both (tests/test_pickle.cpp); these two are cut short, so the
  // pickle reader refuses them, naming the file. io::load stays a safetensors reader and says
  // where .pt files go.
  std::string zip = std::string("PK\x03\x04", 4) + std::string("\x14\x00\x00\x00\x00\x00", 6) + "archive/data.pkl";
  std::string pickle = std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14) + "rest";
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"model.pt", zip}, {"legacy.pt", pickle}}) {
    const std::string path = write_bytes(name, bytes);
    auto model = std::make_shared<Net>();
    const std::string problem = name == "model.pt" ? "corrupt zip archive" : "truncated";
    tensor::testing::expect_error([&] { tensor::load(model, path); }, {path, problem});
    tensor::Tensor t;
    tensor::testing::expect_error([&] { tensor::load(t, path); }, {path, problem});
    tensor::testing::expect_error([&] { tensor::io::load(path); }, {".pt file", "not safetensors", "tensor::load(module, path)"});
  }
}
