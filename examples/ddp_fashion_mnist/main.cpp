// The Fashion-MNIST CNN of examples/fashion_mnist, trained data-parallel with
// nn::parallel::DistributedDataParallel over Gloo. Run it under the launcher:
//
//   build/tensorrun --nproc-per-node 2 build/examples/ddp_fashion_mnist/ddp_fashion_mnist [--epochs N]
//       [--batch-size N (per rank)] [--lr X] [--threads N (per rank)] [--data DIR] [--limit-batches N]
//       [--timeout SECONDS]
//
// --timeout bounds the rendezvous and every collective (default 1800 s, c10d's 30 minutes): a
// rank that dies, stalls or cannot be reached makes the others raise after that long.
//
// Each rank reads its own share of the training set through data::samplers::DistributedRandomSampler
// (the shares of an epoch are disjoint, reshuffled each epoch with set_epoch), so with the default
// 32 images per rank and 2 ranks an optimizer step sees 64 images, as the single-process example.
// DDP averages the gradients, so every rank takes the same Adam step and the replicas stay equal.
// The test set is split the same way; the ranks' correct counts are summed with an allreduce.
#include <tensor/distributed.h>
#include <tensor/nn/parallel/distributed.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tensor;
namespace F = tensor::nn::functional;
namespace dist = tensor::distributed;

namespace {

struct Flags {
  int epochs = 1;
  int batch_size = 32;
  double lr = 1e-3;
  int threads = 1;
  std::string data = "/usr/share/datasets/fashion-mnist";
  int64_t limit_batches = 0;
  std::chrono::milliseconds timeout = dist::kProcessGroupDefaultTimeout;
};

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: ddp_fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--threads N] [--data DIR] "
                   "[--limit-batches N] [--timeout SECONDS]\n");
      std::exit(2);
    }
    const char* v = argv[++i];
    if (a == "--epochs") f.epochs = std::atoi(v);
    else if (a == "--batch-size") f.batch_size = std::atoi(v);
    else if (a == "--lr") f.lr = std::atof(v);
    else if (a == "--threads") f.threads = std::atoi(v);
    else if (a == "--data") f.data = v;
    else if (a == "--limit-batches") f.limit_batches = std::atoll(v);
    else if (a == "--timeout") {
      char* end = nullptr;
      const double secs = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(secs > 0) || secs > 1e9) {
        std::fprintf(stderr, "--timeout: expected a positive number of seconds, got '%s'\n", v);
        std::exit(2);
      }
      f.timeout = std::chrono::milliseconds(std::max<int64_t>(1, static_cast<int64_t>(secs * 1000)));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      std::exit(2);
    }
  }
  return f;
}

struct CNN : nn::Module {
  CNN()
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        fc2(register_module("fc2", nn::Linear(128, 10))) {}
  Tensor forward(Tensor x) {
    x = (x - 0.2860) / 0.3530;
    x = max_pool2d(relu(conv1(x)), {2, 2});
    x = max_pool2d(relu(conv2(x)), {2, 2});
    return fc2(relu(fc1(x.flatten(1))));
  }
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};

}  // namespace

int main(int argc, char** argv) {
  // Line by line even into a file or pipe: a killed run keeps every line it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Flags flags = parse(argc, argv);
  set_num_threads(flags.threads);
  try {
    // RANK, WORLD_SIZE, MASTER_* from tensorrun.
    auto pg = dist::init_process_group("gloo", -1, -1, "env://", flags.timeout);
    const int rank = pg->rank(), world = pg->size();
    manual_seed(rank);  // different on purpose: DDP's construction broadcasts rank 0's weights

    data::datasets::MNIST train_set(flags.data, /*train=*/true), test_set(flags.data, /*train=*/false);
    data::samplers::DistributedRandomSampler sampler(train_set.size(), world, rank);
    data::samplers::DistributedSequentialSampler test_sampler(test_set.size(), world, rank, /*allow_duplicates=*/false);

    auto model = std::make_shared<CNN>();
    nn::parallel::DistributedDataParallel ddp(model, pg);
    optim::Adam opt(ddp->parameters(), optim::AdamOptions(flags.lr));
    if (rank == 0)
      std::printf("Fashion-MNIST on %d ranks: %zu training images (%zu per rank), batch %d per rank (%d per step), "
                  "Adam lr %g, %d thread(s) per rank, %zu gradient buckets\n",
                  world, train_set.size(), (train_set.size() + world - 1) / world, flags.batch_size,
                  flags.batch_size * world, flags.lr, flags.threads, ddp->bucket_indices().size());

    for (int epoch = 1; epoch <= flags.epochs; ++epoch) {
      sampler.set_epoch(static_cast<size_t>(epoch - 1));
      sampler.reset();
      const auto t0 = std::chrono::steady_clock::now();
      int64_t batches = 0;
      double running = 0;
      while (auto indices = sampler.next(static_cast<size_t>(flags.batch_size))) {
        auto batch = train_set.get_batch(*indices);
        opt.zero_grad();
        Tensor loss = F::cross_entropy(ddp->forward(batch.data), batch.target);
        loss.backward();
        opt.step();
        const double l = loss.item<double>();
        running = batches++ == 0 ? l : 0.95 * running + 0.05 * l;
        if (rank == 0 && batches % 100 == 0) {
          std::printf("\repoch %d  step %lld  loss %.4f", epoch, static_cast<long long>(batches), running);
          std::fflush(stdout);
        }
        if (flags.limit_batches && batches == flags.limit_batches) break;
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

      // Test accuracy: each rank its share of the test set, the counts summed.
      NoGradGuard no_grad;
      model->eval();
      test_sampler.reset();
      int64_t correct = 0, seen = 0;
      while (auto indices = test_sampler.next(1000)) {
        auto batch = test_set.get_batch(*indices);
        correct += model->forward(batch.data).argmax(1).eq(batch.target).sum().item<int64_t>();
        seen += batch.target.size(0);
      }
      Tensor counts = tensor::tensor({correct, seen});
      model->train();
      pg->allreduce(counts)->wait();
      const double accuracy = static_cast<double>(counts[0].item<int64_t>()) / counts[1].item<int64_t>();
      if (rank == 0)
        std::printf("\nepoch %d: %.1f s (%.0f images/s over all ranks), test accuracy %.4f (%lld test images)\n", epoch,
                    secs, batches * flags.batch_size * world / secs, accuracy,
                    static_cast<long long>(counts[1].item<int64_t>()));
    }
    dist::destroy_process_group();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddp_fashion_mnist: %s\n", e.what());
    return 1;
  }
}
