// Trains the CNN of TARGETS.md on Fashion-MNIST: two 3x3 convolutions with max pooling, then two
// linear layers, Adam, cross-entropy. Shows a progress bar with the loss and images/s, reports
// test accuracy, saves a checkpoint (model, optimizer and epoch in one safetensors file) and can
// resume from it.
//
//   fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--threads N] [--data DIR]
//                 [--checkpoint PATH] [--resume] [--workers N] [--seed N]
#include <tensor/tensor.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace tensor;
namespace F = tensor::nn::functional;

namespace {

struct Flags {
  int epochs = 1;
  int batch_size = 64;
  double lr = 1e-3;
  int threads = 2;
  int workers = 1;
  uint64_t seed = 0;
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string checkpoint = "fashion_mnist.safetensors";
  bool resume = false;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--threads N] [--workers N]\n"
               "                     [--seed N] [--data DIR] [--checkpoint PATH] [--resume]\n",
               msg);
  std::exit(2);
}

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--epochs") f.epochs = std::atoi(value());
    else if (a == "--batch-size") f.batch_size = std::atoi(value());
    else if (a == "--lr") f.lr = std::atof(value());
    else if (a == "--threads") f.threads = std::atoi(value());
    else if (a == "--workers") f.workers = std::atoi(value());
    else if (a == "--seed") f.seed = std::strtoull(value(), nullptr, 10);
    else if (a == "--data") f.data = value();
    else if (a == "--checkpoint") f.checkpoint = value();
    else if (a == "--resume") f.resume = true;
    else if (a == "--help" || a == "-h") usage("Trains a CNN on Fashion-MNIST.");
    else usage(("unknown flag " + a).c_str());
  }
  if (f.epochs < 0 || f.batch_size <= 0 || f.threads <= 0 || f.workers < 0 || !(f.lr > 0)) usage("bad flag value");
  return f;
}

struct CNN : nn::Module {
  CNN()
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", nn::Linear(128, 10))) {}
  Tensor forward(Tensor x) {
    x = (x - 0.2860) / 0.3530;                // the training set's pixel mean and std
    x = max_pool2d(relu(conv1(x)), {2, 2});  // [N, 32, 14, 14]
    x = max_pool2d(relu(conv2(x)), {2, 2});  // [N, 64, 7, 7]
    return fc2(relu(fc1(x.flatten(1))));
  }
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};

/// Prefixes every name, so model and optimizer state share one checkpoint file.
io::NamedTensors prefixed(const std::string& p, const io::NamedTensors& in) {
  io::NamedTensors out;
  for (const auto& kv : in) out.emplace_back(p + kv.first, kv.second);
  return out;
}
io::NamedTensors with_prefix(const std::string& p, const io::NamedTensors& in) {
  io::NamedTensors out;
  for (const auto& kv : in)
    if (kv.first.compare(0, p.size(), p) == 0) out.emplace_back(kv.first.substr(p.size()), kv.second);
  return out;
}

void progress(int epoch, size_t done, size_t total, double loss, double images_per_s) {
  const int width = 30;
  const int fill = total ? static_cast<int>(width * done / total) : width;
  std::string bar(fill, '#');
  bar.resize(width, '.');
  std::printf("\repoch %d [%s] %5zu/%zu  loss %.4f  %7.0f images/s", epoch, bar.c_str(), done, total, loss, images_per_s);
  std::fflush(stdout);
}

double evaluate(CNN& model, data::DataLoader& loader) {
  NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0, seen = 0;
  for (auto& batch : loader) {
    Tensor pred = model.forward(batch.data).argmax(1);
    correct += pred.eq(batch.target).sum().item<int64_t>();
    seen += batch.target.size(0);
  }
  model.train();
  return seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = parse(argc, argv);
  set_num_threads(flags.threads);
  manual_seed(flags.seed);
  try {
    auto train_set = std::make_shared<data::datasets::MNIST>(flags.data, /*train=*/true);
    auto test_set = std::make_shared<data::datasets::MNIST>(flags.data, /*train=*/false);
    // A resumed run continues the epoch count, so its shuffle order differs from epoch 1's.
    const int start_epoch = flags.resume ? std::atoi(io::load_metadata(flags.checkpoint)["epoch"].c_str()) : 0;
    data::DataLoader train(train_set, data::DataLoaderOptions(flags.batch_size).shuffle(true)
                                          .seed(flags.seed + static_cast<uint64_t>(start_epoch))
                                          .num_workers(flags.workers));
    data::DataLoader test(test_set, data::DataLoaderOptions(1000).num_workers(flags.workers));

    auto model = std::make_shared<CNN>();
    optim::Adam opt(model->parameters(), optim::AdamOptions(flags.lr));
    if (flags.resume) {
      io::Metadata meta;
      io::NamedTensors ck = io::load(flags.checkpoint, &meta);
      model->load_state_dict(with_prefix("model.", ck));
      opt.load_state_dict(with_prefix("optim.", ck));
      std::printf("resumed from %s after epoch %d (test accuracy then %s)\n", flags.checkpoint.c_str(), start_epoch,
                  meta["test_accuracy"].c_str());
    }
    std::printf("Fashion-MNIST: %zu training and %zu test images, batch %d, Adam lr %g, %d threads\n",
                train_set->size(), test_set->size(), flags.batch_size, flags.lr, flags.threads);

    double accuracy = 0;
    for (int epoch = start_epoch + 1; epoch <= start_epoch + flags.epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      size_t images = 0, step = 0;
      double running = 0;
      for (auto& batch : train) {
        opt.zero_grad();
        Tensor loss = F::cross_entropy(model->forward(batch.data), batch.target);
        loss.backward();
        opt.step();
        const double l = loss.item<double>();
        running = step == 0 ? l : 0.95 * running + 0.05 * l;
        images += static_cast<size_t>(batch.target.size(0));
        ++step;
        if (step % 20 == 0 || step == train.size()) {
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          progress(epoch, step, train.size(), running, images / s);
        }
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      accuracy = evaluate(*model, test);
      std::printf("\nepoch %d: %.1f s (%.0f images/s), test accuracy %.4f\n", epoch, secs, images / secs, accuracy);
      io::NamedTensors ck;
      for (const auto& item : model->state_dict()) ck.emplace_back("model." + item.key(), item.value());
      for (auto& kv : prefixed("optim.", opt.state_dict())) ck.push_back(kv);
      char acc[32];
      std::snprintf(acc, sizeof acc, "%.4f", accuracy);
      io::save(ck, flags.checkpoint, {{"epoch", std::to_string(epoch)}, {"test_accuracy", acc}});
      std::printf("checkpoint saved to %s\n", flags.checkpoint.c_str());
    }
    if (flags.epochs == 0) {
      accuracy = evaluate(*model, test);
      std::printf("test accuracy %.4f\n", accuracy);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
    return 1;
  }
}
