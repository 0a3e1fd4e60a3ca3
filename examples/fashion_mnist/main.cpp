// Trains the CNN of TARGETS.md on Fashion-MNIST: two 3x3 convolutions with max pooling, then two
// linear layers, Adam, cross-entropy. Shows a progress bar with the loss and images/s, reports
// test accuracy, saves a checkpoint (model, optimizer and position in one safetensors file) after
// every epoch, and every N optimizer steps with --checkpoint-every N, and can resume from it,
// mid-epoch included, exactly where it stopped (Note [Mid-epoch checkpoints]).
//
//   fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--threads N] [--data DIR]
//                 [--checkpoint PATH] [--resume] [--checkpoint-every N] [--limit-batches N]
//                 [--workers N] [--seed N]
//
// --epochs N trains N epochs (a resumed run: N more, the one in progress being the first);
// --checkpoint-every N also saves after every N-th optimizer step (0, the default: only after
// each epoch); --limit-batches N ends each epoch after its first N batches (0: all), for short
// runs such as scripts/crash_resume.sh.
#include <tensor/tensor.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
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
  int64_t checkpoint_every = 0;
  int64_t limit_batches = 0;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--threads N] [--workers N]\n"
               "                     [--seed N] [--data DIR] [--checkpoint PATH] [--resume]\n"
               "                     [--checkpoint-every N] [--limit-batches N]\n"
               "  --resume               continue from --checkpoint (mid-epoch too) for --epochs more epochs\n"
               "  --checkpoint-every N   also save every N optimizer steps (0: only after each epoch)\n"
               "  --limit-batches N      end each epoch after its first N batches (0: all)\n",
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
    else if (a == "--checkpoint-every") f.checkpoint_every = std::atoll(value());
    else if (a == "--limit-batches") f.limit_batches = std::atoll(value());
    else if (a == "--help" || a == "-h") usage("Trains a CNN on Fashion-MNIST.");
    else usage(("unknown flag " + a).c_str());
  }
  if (f.epochs < 0 || f.batch_size <= 0 || f.threads <= 0 || f.workers < 0 || !(f.lr > 0) || f.checkpoint_every < 0 ||
      f.limit_batches < 0)
    usage("bad flag value");
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

// Note [Mid-epoch checkpoints]
// A checkpoint holds the model, the optimizer (hyperparameters, Adam's moments and per-parameter
// step counts) and, in its metadata, where training stands: "epoch" epochs done, then
// "batches_done" batches of the next one (0 after a whole epoch), "step" optimizer steps in all.
// Continuing exactly also needs the remaining batches of that epoch in the same order. The
// loader's order is a pure function of (seed, epoch) (RandomSampler), so the loader is seeded
// with --seed alone, never with the epoch count of this process, and DataLoader::seek() starts it
// at the checkpoint's epoch and batch without building the batches done. Which samples make batch
// k also depends on the batch size, and where an epoch ends on --limit-batches, so a mid-epoch
// resume refuses other values of those and of --seed (after a whole epoch they may change). The
// CNN draws no random numbers after initialization (no dropout), so the generator's state need
// not be saved.
struct Position {
  int epochs_done = 0;
  size_t batches_done = 0;  // of epoch epochs_done + 1
  int64_t step = 0;
};

size_t epoch_batches(const Flags& f, const data::DataLoader& train) {
  return f.limit_batches ? std::min(train.size(), static_cast<size_t>(f.limit_batches)) : train.size();
}

// Where the checkpoint stopped; throws if a mid-epoch one cannot be continued with these flags.
Position position_of(const io::Metadata& meta, const Flags& f, size_t batches_per_epoch) {
  auto get = [&](const char* key) -> std::string {
    auto it = meta.find(key);
    return it == meta.end() ? "0" : it->second;
  };
  Position p;
  p.epochs_done = std::atoi(get("epoch").c_str());
  p.batches_done = std::strtoull(get("batches_done").c_str(), nullptr, 10);
  p.step = std::atoll(get("step").c_str());
  if (p.batches_done == 0) return p;
  const std::string want = "--batch-size " + get("batch_size") + " --seed " + get("seed") + " --limit-batches " +
                           get("limit_batches");
  const std::string have = "--batch-size " + std::to_string(f.batch_size) + " --seed " + std::to_string(f.seed) +
                           " --limit-batches " + std::to_string(f.limit_batches);
  if (want != have)
    throw std::runtime_error(f.checkpoint + " stopped mid-epoch with " + want +
                             ", which this run needs to continue it (it has " + have + ")");
  if (p.batches_done >= batches_per_epoch)
    throw std::runtime_error(f.checkpoint + " has " + std::to_string(p.batches_done) +
                             " batches done of an epoch of " + std::to_string(batches_per_epoch));
  return p;
}

void save_checkpoint(const Flags& f, CNN& model, const optim::Adam& opt, const Position& p, const char* accuracy) {
  io::NamedTensors ck;
  for (const auto& item : model.state_dict()) ck.emplace_back("model." + item.key(), item.value());
  for (auto& kv : prefixed("optim.", opt.state_dict())) ck.push_back(kv);
  io::Metadata meta{{"epoch", std::to_string(p.epochs_done)},
                    {"batches_done", std::to_string(p.batches_done)},
                    {"step", std::to_string(p.step)},
                    {"seed", std::to_string(f.seed)},
                    {"batch_size", std::to_string(f.batch_size)},
                    {"limit_batches", std::to_string(f.limit_batches)}};
  if (accuracy) meta["test_accuracy"] = accuracy;
  io::save(ck, f.checkpoint, meta);
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
  // Line by line even into a file or pipe: a killed run keeps every line it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Flags flags = parse(argc, argv);
  set_num_threads(flags.threads);
  manual_seed(flags.seed);
  try {
    auto train_set = std::make_shared<data::datasets::MNIST>(flags.data, /*train=*/true);
    auto test_set = std::make_shared<data::datasets::MNIST>(flags.data, /*train=*/false);
    data::DataLoader train(train_set, data::DataLoaderOptions(flags.batch_size).shuffle(true).seed(flags.seed)
                                          .num_workers(flags.workers));
    data::DataLoader test(test_set, data::DataLoaderOptions(1000).num_workers(flags.workers));
    const size_t batches_per_epoch = epoch_batches(flags, train);

    auto model = std::make_shared<CNN>();
    optim::Adam opt(model->parameters(), optim::AdamOptions(flags.lr));
    Position pos;
    if (flags.resume) {
      io::Metadata meta;
      io::NamedTensors ck = io::load(flags.checkpoint, &meta);
      pos = position_of(meta, flags, batches_per_epoch);
      model->load_state_dict(with_prefix("model.", ck));
      opt.load_state_dict(with_prefix("optim.", ck));
      if (pos.batches_done)
        std::printf("resumed from %s in epoch %d after batch %zu/%zu (step %lld)\n", flags.checkpoint.c_str(),
                    pos.epochs_done + 1, pos.batches_done, batches_per_epoch, static_cast<long long>(pos.step));
      else
        std::printf("resumed from %s after epoch %d (test accuracy then %s)\n", flags.checkpoint.c_str(),
                    pos.epochs_done, meta["test_accuracy"].c_str());
    }
    std::printf("Fashion-MNIST: %zu training and %zu test images, batch %d, Adam lr %g, %d threads\n",
                train_set->size(), test_set->size(), flags.batch_size, flags.lr, flags.threads);

    // Epoch e (from 1) is the sampler's epoch e - 1 (Note [Mid-epoch checkpoints]).
    train.seek(static_cast<uint64_t>(pos.epochs_done), pos.batches_done);
    double accuracy = 0;
    const int last_epoch = pos.epochs_done + flags.epochs;
    for (int epoch = pos.epochs_done + 1; epoch <= last_epoch; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      size_t images = 0, trained = 0;  // in this process (a resumed epoch skips some)
      double running = 0;
      for (auto& batch : train) {
        opt.zero_grad();
        Tensor loss = F::cross_entropy(model->forward(batch.data), batch.target);
        loss.backward();
        opt.step();
        const double l = loss.item<double>();
        running = trained++ == 0 ? l : 0.95 * running + 0.05 * l;
        images += static_cast<size_t>(batch.target.size(0));
        ++pos.batches_done;
        ++pos.step;
        const bool last = pos.batches_done == batches_per_epoch;
        if (flags.checkpoint_every && pos.step % flags.checkpoint_every == 0 && !last)
          save_checkpoint(flags, *model, opt, pos, nullptr);
        if (pos.batches_done % 20 == 0 || last) {
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          progress(epoch, pos.batches_done, batches_per_epoch, running, images / s);
        }
        if (last) break;  // --limit-batches
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      accuracy = evaluate(*model, test);
      std::printf("\nepoch %d: %.1f s (%.0f images/s), test accuracy %.4f\n", epoch, secs, images / secs, accuracy);
      pos.epochs_done = epoch;
      pos.batches_done = 0;
      char acc[32];
      std::snprintf(acc, sizeof acc, "%.4f", accuracy);
      save_checkpoint(flags, *model, opt, pos, acc);
      std::printf("checkpoint saved to %s\n", flags.checkpoint.c_str());
    }
    if (flags.epochs == 0) {
      accuracy = evaluate(*model, test);
      std::printf("test accuracy %.4f\n", accuracy);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
    return 1;
  }
}
