// The Fashion-MNIST CNN of examples/fashion_mnist, trained data-parallel with
// nn::parallel::DistributedDataParallel over Gloo. Run it under the launcher:
//
//   build/tensorrun --nproc-per-node 2 [--max-restarts K] build/examples/ddp_fashion_mnist/ddp_fashion_mnist
//       [--epochs N] [--batch-size N (per rank)] [--lr X] [--threads N (per rank)] [--data DIR]
//       [--limit-batches N] [--timeout SECONDS] [--checkpoint FILE [--checkpoint-every STEPS]]
//       [--die-at-step N]
//
// --timeout bounds the rendezvous and every collective (default 1800 s, c10d's 30 minutes): a
// rank that dies, stalls or cannot be reached makes the others raise after that long.
//
// With --checkpoint, rank 0 saves the model, Adam's state and the position (epoch, batch, step)
// after every epoch and every --checkpoint-every steps (atomically: a kill leaves the previous
// file), and every rank resumes from the file when it exists, exactly where it stopped: so under
// `tensorrun --max-restarts K` a job whose rank dies restarts and finishes with the parameters
// of an uninterrupted run (Note [Resuming a DDP job]). --die-at-step N is fault injection for
// that test: in the first round (TENSOR_RESTART_COUNT unset or 0) the last rank kills itself
// with SIGKILL after step N.
//
// Each rank reads its own share of the training set through data::samplers::DistributedRandomSampler
// (the shares of an epoch are disjoint, reshuffled each epoch with set_epoch), so with the default
// 32 images per rank and 2 ranks an optimizer step sees 64 images, as the single-process example.
// DDP averages the gradients, so every rank takes the same Adam step and the replicas stay equal.
// The test set is split the same way; the ranks' correct counts are summed with an allreduce.
#include <signal.h>

#include <tensor/distributed.h>
#include <tensor/nn/parallel/distributed.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  int64_t die_at_step = 0;
};

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: ddp_fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--threads N] [--data DIR] "
                   "[--limit-batches N] [--timeout SECONDS] [--checkpoint FILE] [--checkpoint-every STEPS] "
                   "[--die-at-step N]\n");
      std::exit(2);
    }
    const char* v = argv[++i];
    if (a == "--epochs") f.epochs = std::atoi(v);
    else if (a == "--batch-size") f.batch_size = std::atoi(v);
    else if (a == "--lr") f.lr = std::atof(v);
    else if (a == "--threads") f.threads = std::atoi(v);
    else if (a == "--data") f.data = v;
    else if (a == "--limit-batches") f.limit_batches = std::atoll(v);
    else if (a == "--checkpoint") f.checkpoint = v;
    else if (a == "--checkpoint-every") f.checkpoint_every = std::atoll(v);
    else if (a == "--die-at-step") f.die_at_step = std::atoll(v);
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

// Note [Resuming a DDP job]
// The replicas and Adam's states are equal on every rank after each step, so rank 0 alone saves
// them, with where training stands: "epoch" epochs done, then "batches_done" batches of the
// next, "step" steps in all. A rank's batches of epoch e are a pure function of (e, world, rank,
// batch size) (DistributedRandomSampler with set_epoch), so a resumed rank skips the batches
// done by drawing their indices and continues with the same ones an uninterrupted run would
// see. A mid-epoch checkpoint refuses another world size, batch size or --limit-batches.
struct Position {
  int epochs_done = 0;
  int64_t batches_done = 0;
  int64_t step = 0;
};

io::NamedTensors with_prefix(const std::string& p, const io::NamedTensors& in) {
  io::NamedTensors out;
  for (const auto& kv : in)
    if (kv.first.compare(0, p.size(), p) == 0) out.emplace_back(kv.first.substr(p.size()), kv.second);
  return out;
}

std::string shape_of_run(const Flags& f, int world) {
  return "world " + std::to_string(world) + ", --batch-size " + std::to_string(f.batch_size) + ", --limit-batches " +
         std::to_string(f.limit_batches);
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

void save_checkpoint(const Flags& f, int world, nn::Module& model, const optim::Adam& opt, const Position& p) {
  io::NamedTensors ck;
  for (const auto& item : model.state_dict()) ck.emplace_back("model." + item.key(), item.value());
  for (const auto& kv : opt.state_dict()) ck.emplace_back("optim." + kv.first, kv.second);
  io::save(ck, f.checkpoint,
           {{"epoch", std::to_string(p.epochs_done)},
            {"batches_done", std::to_string(p.batches_done)},
            {"step", std::to_string(p.step)},
            {"run", shape_of_run(f, world)}});
}

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
    Position pos;
    if (!flags.checkpoint.empty() && std::filesystem::exists(flags.checkpoint)) {
      io::Metadata meta;
      io::NamedTensors ck = io::load(flags.checkpoint, &meta);
      pos.epochs_done = std::atoi(meta["epoch"].c_str());
      pos.batches_done = std::atoll(meta["batches_done"].c_str());
      pos.step = std::atoll(meta["step"].c_str());
      if (pos.batches_done && meta["run"] != shape_of_run(flags, world))
        throw std::runtime_error(flags.checkpoint + " stopped mid-epoch with " + meta["run"] +
                                 ", which this run needs to continue it (it has " + shape_of_run(flags, world) + ")");
      NoGradGuard no_grad;
      model->load_state_dict(with_prefix("model.", ck));
      opt.load_state_dict(with_prefix("optim.", ck));
      if (rank == 0)
        std::printf("resumed from %s in epoch %d after batch %lld (step %lld)\n", flags.checkpoint.c_str(),
                    pos.epochs_done + 1, static_cast<long long>(pos.batches_done), static_cast<long long>(pos.step));
    }
    const char* restart = std::getenv("TENSOR_RESTART_COUNT");
    const bool first_round = !restart || std::string(restart) == "0";
    if (rank == 0)
      std::printf("Fashion-MNIST on %d ranks: %zu training images (%zu per rank), batch %d per rank (%d per step), "
                  "Adam lr %g, %d thread(s) per rank, %zu gradient buckets\n",
                  world, train_set.size(), (train_set.size() + world - 1) / world, flags.batch_size,
                  flags.batch_size * world, flags.lr, flags.threads, ddp->bucket_indices().size());

    for (int epoch = pos.epochs_done + 1; epoch <= flags.epochs; ++epoch) {
      sampler.set_epoch(static_cast<size_t>(epoch - 1));
      sampler.reset();
      const auto t0 = std::chrono::steady_clock::now();
      int64_t batches = 0;
      double running = 0;
      for (; batches < pos.batches_done; ++batches) (void)sampler.next(static_cast<size_t>(flags.batch_size));
      pos.batches_done = 0;
      const int64_t skipped = batches;
      while (auto indices = sampler.next(static_cast<size_t>(flags.batch_size))) {
        auto batch = train_set.get_batch(*indices);
        opt.zero_grad();
        Tensor loss = F::cross_entropy(ddp->forward(batch.data), batch.target);
        loss.backward();
        opt.step();
        const double l = loss.item<double>();
        running = batches++ == skipped ? l : 0.95 * running + 0.05 * l;
        if (rank == 0 && batches % 100 == 0) {
          std::printf("\repoch %d  step %lld  loss %.4f", epoch, static_cast<long long>(batches), running);
          std::fflush(stdout);
        }
        ++pos.step;
        const bool last = flags.limit_batches && batches == flags.limit_batches;
        if (first_round && flags.die_at_step && pos.step == flags.die_at_step && rank == world - 1) {
          std::printf("rank %d: --die-at-step %lld: killing myself\n", rank, static_cast<long long>(pos.step));
          ::raise(SIGKILL);
        }
        if (rank == 0 && !flags.checkpoint.empty() && flags.checkpoint_every && pos.step % flags.checkpoint_every == 0 &&
            !last) {
          pos.batches_done = batches;
          save_checkpoint(flags, world, *model, opt, pos);
          pos.batches_done = 0;
        }
        if (last) break;
      }
      batches -= skipped;  // the ones trained in this process
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
      pos.epochs_done = epoch;
      if (rank == 0 && !flags.checkpoint.empty()) save_checkpoint(flags, world, *model, opt, pos);
    }
    dist::destroy_process_group();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddp_fashion_mnist: %s\n", e.what());
    return 1;
  }
}
