// custom_dataset: a small training program written in libtorch's idiom. It compiles unchanged
// against libtorch after renaming tensor:: to torch:: and <tensor/tensor.h> to <torch/torch.h>
// (the CMake test examples.custom_dataset_libtorch does that when libtorch is installed).
//
// A custom dataset (datasets::Dataset<Self>) of synthetic 4x4 images, .map(Normalize) and
// .map(Stack), make_data_loader with a random and a sequential sampler, a two-layer classifier
// trained with Adam, and a checkpoint: tensor::save of the model and the optimizer, then
// tensor::load into fresh ones that continue training exactly as the originals do.
//
//   ./build/examples/custom_dataset/custom_dataset [output-dir]
// Exits with status 1 if the classifier does not learn (test accuracy below 90%) or if the
// reloaded model and optimizer do not continue identically.
#include <tensor/tensor.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace nn = tensor::nn;

// Grayscale 4x4 images of three patterns, labelled 0, 1, 2: a horizontal bar, a vertical bar,
// or the main diagonal, at a random row/column, over uniform noise. The pixels come from
// std::mt19937, so the data are the same whichever library runs the program.
class Bars : public tensor::data::datasets::Dataset<Bars> {
 public:
  Bars(int64_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> noise(0.0f, 1.0f);
    std::vector<float> pixels(static_cast<size_t>(count) * 16);
    std::vector<int64_t> labels(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t label = static_cast<int64_t>(rng() % 3), where = static_cast<int64_t>(rng() % 4);
      float* image = pixels.data() + i * 16;
      for (int64_t p = 0; p < 16; ++p) image[p] = noise(rng);
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t row = label == 0 ? where : k, col = label == 1 ? where : k;
        image[row * 4 + col] += 0.6f;
      }
      labels[static_cast<size_t>(i)] = label;
    }
    images_ = tensor::from_blob(pixels.data(), {count, 1, 4, 4}, tensor::kFloat32).clone();
    labels_ = tensor::from_blob(labels.data(), {count}, tensor::kInt64).clone();
  }

  // One example: an image [1, 4, 4] and its label (a 0-dim int64 tensor).
  tensor::data::Example<> get(size_t index) override {
    const int64_t i = static_cast<int64_t>(index);
    return {images_[i], labels_[i]};
  }

  tensor::optional<size_t> size() const override { return static_cast<size_t>(images_.size(0)); }

  const tensor::Tensor& images() const { return images_; }

 private:
  tensor::Tensor images_, labels_;
};

struct Net : nn::Module {
  Net() : fc1(register_module("fc1", nn::Linear(16, 32))), fc2(register_module("fc2", nn::Linear(32, 3))) {}
  tensor::Tensor forward(tensor::Tensor x) { return fc2(tensor::relu(fc1(x.flatten(1)))); }
  nn::Linear fc1, fc2;
};

// One pass over `loader`; returns the mean loss.
template <typename Loader>
double train_epoch(Net& model, tensor::optim::Optimizer& optimizer, Loader& loader) {
  model.train();
  double total = 0;
  int64_t count = 0;
  for (auto& batch : loader) {
    optimizer.zero_grad();
    tensor::Tensor loss = nn::functional::cross_entropy(model.forward(batch.data), batch.target);
    loss.backward();
    optimizer.step();
    total += loss.item<double>() * static_cast<double>(batch.data.size(0));
    count += batch.data.size(0);
  }
  return total / static_cast<double>(count);
}

template <typename Loader>
double accuracy(Net& model, Loader& loader) {
  tensor::NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0, count = 0;
  for (auto& batch : loader) {
    tensor::Tensor hits = model.forward(batch.data).argmax(1).eq(batch.target).sum();
    correct += hits.item<int64_t>();
    count += batch.data.size(0);
  }
  return static_cast<double>(correct) / static_cast<double>(count);
}

int main(int argc, char** argv) {
  // Line by line even into a file or pipe: a killed run keeps every line it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string dir = argc > 1 ? argv[1] : ".";
  tensor::manual_seed(0);

  Bars train_set(1200, 1), test_set(300, 2);
  // Normalize with the training images' statistics, as one does for MNIST.
  const double mean = train_set.images().mean().item<double>();
  const double stddev = train_set.images().std().item<double>();
  namespace transforms = tensor::data::transforms;
  auto train_data = std::move(train_set).map(transforms::Normalize<>(mean, stddev)).map(transforms::Stack<>());
  auto test_data = std::move(test_set).map(transforms::Normalize<>(mean, stddev)).map(transforms::Stack<>());
  std::printf("train: %zu images, test: %zu images (mean %.3f, std %.3f)\n", train_data.size().value(),
              test_data.size().value(), mean, stddev);

  // Shuffled batches (the default sampler, a RandomSampler) built by two worker threads.
  auto train_loader = tensor::data::make_data_loader(std::move(train_data),
                                                     tensor::data::DataLoaderOptions().batch_size(32).workers(2));
  auto test_loader =
      tensor::data::make_data_loader<tensor::data::samplers::SequentialSampler>(std::move(test_data), 100);

  auto model = std::make_shared<Net>();
  tensor::optim::Adam optimizer(model->parameters(), tensor::optim::AdamOptions(1e-2));
  for (int epoch = 1; epoch <= 5; ++epoch) {
    const double loss = train_epoch(*model, optimizer, *train_loader);
    std::printf("epoch %d: train loss %.4f, test accuracy %.3f\n", epoch, loss, accuracy(*model, *test_loader));
  }
  const double trained_accuracy = accuracy(*model, *test_loader);

  // Checkpoint, then restore into a fresh model and optimizer.
  const std::string model_path = dir + "/custom_dataset_model.ckpt";
  const std::string optimizer_path = dir + "/custom_dataset_optimizer.ckpt";
  tensor::save(model, model_path);
  tensor::save(optimizer, optimizer_path);
  auto restored = std::make_shared<Net>();
  tensor::optim::Adam restored_optimizer(restored->parameters(), tensor::optim::AdamOptions(1e-2));
  tensor::load(restored, model_path);
  tensor::load(restored_optimizer, optimizer_path);
  const double restored_accuracy = accuracy(*restored, *test_loader);
  std::printf("saved to %s and %s; the restored model's test accuracy: %.3f\n", model_path.c_str(),
              optimizer_path.c_str(), restored_accuracy);

  // One more epoch for both, over the same batches in the same order: the restored pair must
  // end where the original does, which needs the optimizer's state (Adam's moments and steps).
  auto extra_loader = tensor::data::make_data_loader<tensor::data::samplers::SequentialSampler>(
      Bars(320, 3).map(transforms::Normalize<>(mean, stddev)).map(transforms::Stack<>()), 32);
  train_epoch(*model, optimizer, *extra_loader);
  train_epoch(*restored, restored_optimizer, *extra_loader);
  const bool same = model->fc1->weight.equal(restored->fc1->weight) && model->fc2->bias.equal(restored->fc2->bias);
  std::printf("after one more epoch each, the restored model %s the original\n", same ? "equals" : "DIFFERS FROM");

  if (trained_accuracy < 0.9 || restored_accuracy != trained_accuracy || !same) {
    std::printf("FAILED\n");
    return 1;
  }
  std::printf("OK\n");
  return 0;
}
