// io and data cases: checkpoint save/load (safetensors) and Fashion-MNIST reading and batching.
#include <tensor/tensor.h>

#include <cmath>
#include <cstdio>

#include "data_fixture.h"
#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

io::NamedTensors checkpoint() {
  io::NamedTensors named;
  for (int i = 0; i < bench::kCheckpointTensors; ++i)
    named.emplace_back("layer" + std::to_string(i) + ".weight", tensor::rand({bench::kCheckpointNumel}));
  return named;
}
// Includes the fsync of the file and of its directory (Note [Atomic save]).
double save_64mb() {
  auto named = checkpoint();
  std::string path = bench::checkpoint_path("save.safetensors");
  double t = median_seconds([&] { io::save(named, path); }, 5, 1, 1);
  std::remove(path.c_str());
  return t;
}
// From the page cache: the cost of parsing, validating and copying.
double load_64mb() {
  std::string path = bench::checkpoint_path("load.safetensors");
  io::save(checkpoint(), path);
  double t = median_seconds([&] { auto named = io::load(path); }, 9, 1, 2);
  std::remove(path.c_str());
  return t;
}
double mnist_read() {
  std::string dir = bench::plain_mnist_dir();
  if (dir.empty()) return NAN;
  return median_seconds([&] { data::datasets::MNIST ds(dir, true); }, 5, 1, 1);
}
double mnist_epoch(bool shuffle, size_t workers) {
  std::string dir = bench::plain_mnist_dir();
  if (dir.empty()) return NAN;
  auto ds = std::make_shared<data::datasets::MNIST>(dir, true);
  data::DataLoader loader(ds, data::DataLoaderOptions(64).shuffle(shuffle).num_workers(workers));
  return median_seconds([&] {
    double sum = 0;
    for (auto& batch : loader) sum += static_cast<double>(batch.target.size(0));
    if (sum != 60000) std::abort();
  }, 5, 1, 1);
}

const bench::AddCases kDataCases({
    bench::Case{"safetensors_save_64MB", "GB/s", 64.0 * (1 << 20), "atomic: fsync + rename", save_64mb}.without_limit(),
    bench::Case{"safetensors_load_64MB", "GB/s", 64.0 * (1 << 20), "twin: torch::load", load_64mb}.without_limit(),
    {"mnist_read_train", "ms", 0, "60000 images, plain IDX", mnist_read},
    {"mnist_epoch_bs64", "ms", 0, "sequential, 0 workers", [] { return mnist_epoch(false, 0); }},
    {"mnist_epoch_bs64_shuf_2w", "ms", 0, "shuffled, 2 workers", [] { return mnist_epoch(true, 2); }},
});

}  // namespace
