// Post-training static int8 quantization of the Fashion-MNIST CNN of examples/fashion_mnist
// (issue 25, docs/quantization.md): loads the checkpoint the main job saves (scripts/main.sh:
// build/fashion_mnist.safetensors), or trains briefly when there is none, then fuses conv+relu
// and linear+relu, prepares with the x86 QConfig (histogram activations, per-channel weights),
// calibrates on training batches, converts, and evaluates float32 and int8 on the test set:
// accuracy and images per second. It saves the int8 model, reloads it into a converted skeleton
// and checks that the reloaded model predicts exactly the same classes.
//
//   quantize_fashion_mnist [--checkpoint PATH] [--data DIR] [--out PATH] [--calib-batches N]
//                          [--batch-size N] [--limit-batches N] [--train-batches N] [--threads N]
//
// --limit-batches N evaluates the first N test batches only (0: all); --train-batches N is how
// many batches to train when the checkpoint is missing. Exits 77 (ctest's skip) when the
// dataset is not installed, 1 on any error or when the reloaded model disagrees.
#include <tensor/nn/quantized.h>
#include <tensor/quantization.h>
#include <tensor/tensor.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

using namespace tensor;
namespace F = tensor::nn::functional;
namespace q = tensor::quantization;

namespace {

struct Flags {
  std::string checkpoint = "build/fashion_mnist.safetensors";
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string out = "fashion_mnist_int8.safetensors";
  int64_t calib_batches = 200;
  int64_t batch_size = 64;
  int64_t limit_batches = 0;
  int64_t train_batches = 300;
  int threads = 2;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: quantize_fashion_mnist [--checkpoint PATH] [--data DIR] [--out PATH] [--calib-batches N]\n"
               "                              [--batch-size N] [--limit-batches N] [--train-batches N] [--threads N]\n",
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
    if (a == "--checkpoint")
      f.checkpoint = value();
    else if (a == "--data")
      f.data = value();
    else if (a == "--out")
      f.out = value();
    else if (a == "--calib-batches")
      f.calib_batches = std::atoll(value());
    else if (a == "--batch-size")
      f.batch_size = std::atoll(value());
    else if (a == "--limit-batches")
      f.limit_batches = std::atoll(value());
    else if (a == "--train-batches")
      f.train_batches = std::atoll(value());
    else if (a == "--threads")
      f.threads = std::atoi(value());
    else if (a == "--help" || a == "-h")
      usage("Quantizes the Fashion-MNIST CNN to int8.");
    else
      usage(("unknown flag " + a).c_str());
  }
  if (f.calib_batches <= 0 || f.batch_size <= 0 || f.limit_batches < 0 || f.train_batches < 0 || f.threads <= 0)
    usage("bad flag value");
  return f;
}

// examples/fashion_mnist's CNN with the same parameter names (conv1, conv2, fc1, fc2), so its
// checkpoint loads as is, plus what eager-mode quantization needs: ReLU modules to fuse and the
// stubs around the int8 region. The input normalization stays float, before the QuantStub.
struct CNN : nn::Module {
  CNN()
      : quant(register_module("quant", q::QuantStub())),
        conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)))),
        relu1(register_module("relu1", nn::ReLU())),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        relu2(register_module("relu2", nn::ReLU())),
        fc1(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        relu3(register_module("relu3", nn::ReLU())),
        fc2(register_module("fc2", nn::Linear(128, 10))),
        dequant(register_module("dequant", q::DeQuantStub())) {}
  Tensor forward(Tensor x) {
    x = quant((x - 0.2860) / 0.3530);               // the training set's pixel mean and std
    x = max_pool2d(relu1(conv1(x)), {2, 2});        // [N, 32, 14, 14]
    x = max_pool2d(relu2(conv2(x)), {2, 2});        // [N, 64, 7, 7]
    return dequant(fc2(relu3(fc1(x.flatten(1)))));  // [N, 10]
  }
  q::QuantStub quant;
  nn::Conv2d conv1;
  nn::ReLU relu1;
  nn::Conv2d conv2;
  nn::ReLU relu2;
  nn::Linear fc1;
  nn::ReLU relu3;
  nn::Linear fc2;
  q::DeQuantStub dequant;
};

// Fuses and prepares (x86: HistogramObserver activations, per-channel symmetric weights).
void fuse_and_prepare(CNN& model) {
  model.eval();
  q::fuse_modules(model, {{"conv1", "relu1"}, {"conv2", "relu2"}, {"fc1", "relu3"}});
  q::prepare(model, q::get_default_qconfig("x86"));
}

Tensor batch_of(const Tensor& all, int64_t b, int64_t size) {
  const int64_t start = b * size;
  return all.narrow(0, start, std::min(size, all.size(0) - start));
}

int64_t num_batches(const Tensor& all, int64_t size, int64_t limit) {
  const int64_t n = (all.size(0) + size - 1) / size;
  return limit ? std::min(n, limit) : n;
}

struct Eval {
  double accuracy;
  double images_per_s;
  Tensor predictions;
};

// Accuracy and throughput over the first `batches` test batches; the clock covers forward only,
// after one untimed warm-up batch.
Eval evaluate(CNN& model, const data::datasets::MNIST& test, int64_t batch_size, int64_t batches) {
  NoGradGuard no_grad;
  std::vector<Tensor> preds;
  double secs = 0;
  int64_t seen = 0;
  if (batches > 0) model.forward(batch_of(test.images(), 0, batch_size));  // warm-up: primitives, packed weights
  for (int64_t b = 0; b < batches; ++b) {
    const Tensor x = batch_of(test.images(), b, batch_size);
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor logits = model.forward(x);
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    preds.push_back(logits.argmax(1));
    seen += x.size(0);
  }
  Tensor pred = cat(preds, 0);
  const int64_t correct = pred.eq(test.targets().narrow(0, 0, seen)).sum().item<int64_t>();
  return {static_cast<double>(correct) / static_cast<double>(seen), static_cast<double>(seen) / secs, pred};
}

// When the main job's checkpoint is missing: a few Adam steps on the training set.
void train_briefly(CNN& model, const data::datasets::MNIST& train, int64_t batches, int64_t batch_size) {
  model.train();
  optim::Adam opt(model.parameters(), optim::AdamOptions(1e-3));
  const int64_t n = std::min(batches, num_batches(train.images(), batch_size, 0));
  for (int64_t b = 0; b < n; ++b) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model.forward(batch_of(train.images(), b, batch_size)),
                                   batch_of(train.targets(), b, batch_size));
    loss.backward();
    opt.step();
  }
  model.eval();
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Flags flags = parse(argc, argv);
  set_num_threads(flags.threads);
  manual_seed(0);
  if (!std::ifstream(flags.data + "/train-images-idx3-ubyte.gz") &&
      !std::ifstream(flags.data + "/train-images-idx3-ubyte")) {
    std::printf("Fashion-MNIST is not in %s (Debian package dataset-fashion-mnist); skipping\n", flags.data.c_str());
    return 77;
  }
  try {
    const data::datasets::MNIST train(flags.data, /*train=*/true), test(flags.data, /*train=*/false);
    const int64_t eval_batches = num_batches(test.images(), flags.batch_size, flags.limit_batches);

    // 1. The float model: the main job's checkpoint ("model." + parameter names), or brief training.
    auto model = std::make_shared<CNN>();
    if (std::ifstream(flags.checkpoint)) {
      io::Metadata meta;
      io::NamedTensors state;
      for (auto& kv : io::load(flags.checkpoint, &meta))
        if (kv.first.compare(0, 6, "model.") == 0) state.emplace_back(kv.first.substr(6), kv.second);
      model->load_state_dict(state);
      std::printf("loaded %s (epochs %s, test accuracy then %s)\n", flags.checkpoint.c_str(), meta["epoch"].c_str(),
                  meta["test_accuracy"].c_str());
    } else {
      std::printf("no checkpoint at %s: training %lld batches of %lld first\n", flags.checkpoint.c_str(),
                  static_cast<long long>(flags.train_batches), static_cast<long long>(flags.batch_size));
      train_briefly(*model, train, flags.train_batches, flags.batch_size);
    }
    model->eval();
    const Eval f32 = evaluate(*model, test, flags.batch_size, eval_batches);

    // 2. Fuse, prepare, calibrate on training batches, convert.
    fuse_and_prepare(*model);
    const int64_t calib = std::min(flags.calib_batches, num_batches(train.images(), flags.batch_size, 0));
    {
      NoGradGuard no_grad;
      for (int64_t b = 0; b < calib; ++b) model->forward(batch_of(train.images(), b, flags.batch_size));
    }
    q::convert(*model);
    std::printf("calibrated on %lld batches of %lld; converted:\n", static_cast<long long>(calib),
                static_cast<long long>(flags.batch_size));
    std::cout << *model << "\n";
    const Eval i8 = evaluate(*model, test, flags.batch_size, eval_batches);

    const long long images = static_cast<long long>(f32.predictions.size(0));
    std::printf("test set (%lld images, batch %lld, %d threads):\n", images, static_cast<long long>(flags.batch_size),
                flags.threads);
    std::printf("  float32  accuracy %.4f  %8.0f images/s\n", f32.accuracy, f32.images_per_s);
    std::printf("  int8     accuracy %.4f  %8.0f images/s  (%.2fx, accuracy %+.2f points)\n", i8.accuracy,
                i8.images_per_s, i8.images_per_s / f32.images_per_s, 100.0 * (i8.accuracy - f32.accuracy));

    // 3. Save, reload into a converted skeleton (calibrated on one batch only, so that convert has
    // observers to read; the load overwrites every weight, scale and zero point), compare.
    tensor::save(model, flags.out);
    auto reloaded = std::make_shared<CNN>();
    fuse_and_prepare(*reloaded);
    {
      NoGradGuard no_grad;
      reloaded->forward(batch_of(train.images(), 0, flags.batch_size));
    }
    q::convert(*reloaded);
    tensor::load(reloaded, flags.out);
    const Eval again = evaluate(*reloaded, test, flags.batch_size, eval_batches);
    const bool same = again.predictions.equal(i8.predictions);
    std::printf("saved the int8 model to %s and reloaded it: %s predictions\n", flags.out.c_str(),
                same ? "identical" : "DIFFERENT");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quantize_fashion_mnist: %s\n", e.what());
    return 1;
  }
}
