// libtorch twins of bench_data.cpp: torch::save/load of the same tensors, libtorch's MNIST
// dataset and DataLoader over the same files.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "data_fixture.h"
#include "harness.h"

namespace bench {
namespace {

TwinTable data_twins() {
  TwinTable t;
  t["safetensors_load_64MB"] = [] {
    std::vector<torch::Tensor> tensors;
    for (int i = 0; i < kCheckpointTensors; ++i) tensors.push_back(torch::rand({kCheckpointNumel}));
    std::string path = checkpoint_path("load.pt");
    torch::save(tensors, path);
    double sec = median_seconds([&] {
      std::vector<torch::Tensor> loaded;
      torch::load(loaded, path);
    }, 9, 1, 2);
    std::remove(path.c_str());
    return sec;
  };
  t["mnist_read_train"] = [] {
    std::string dir = plain_mnist_dir();
    if (dir.empty()) return double(NAN);
    return median_seconds([&] { torch::data::datasets::MNIST ds(dir); }, 5, 1, 1);
  };
  t["mnist_epoch_bs64"] = [] {
    std::string dir = plain_mnist_dir();
    if (dir.empty()) return double(NAN);
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        torch::data::datasets::MNIST(dir).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions(64));
    return median_seconds([&] {
      double sum = 0;
      for (auto& batch : *loader) sum += static_cast<double>(batch.target.size(0));
      if (sum != 60000) std::abort();
    }, 5, 1, 1);
  };
  t["mnist_epoch_bs64_shuf_2w"] = [] {
    std::string dir = plain_mnist_dir();
    if (dir.empty()) return double(NAN);
    auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        torch::data::datasets::MNIST(dir).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions(64).workers(2));
    return median_seconds([&] {
      double sum = 0;
      for (auto& batch : *loader) sum += static_cast<double>(batch.target.size(0));
      if (sum != 60000) std::abort();
    }, 5, 1, 1);
  };
  return t;
}
const AddTwins kDataTwins(data_twins());

}  // namespace
}  // namespace bench
