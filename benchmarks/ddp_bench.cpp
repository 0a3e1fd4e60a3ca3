// Distributed figures over Gloo on this host (loopback TCP): run under the launcher,
//
//   build/tensorrun --nproc-per-node 2 build/benchmarks/ddp_bench [--threads N] [--steps N] [--max-mb N]
//
// (a) allreduce bandwidth by message size (float32, 4 KB .. 64 MB): algbw = bytes / time and
//     busbw = bytes * 2(n-1)/n / time, nccl-tests' two figures;
// (b) a DDP training step (MLP, SGD) against the same model in one process on the same per-rank
//     batch, both timed with every rank running at once (so both see the same CPU contention);
// (c) overlap: the communication time of each step (each bucket's allreduce from launch to
//     completion, seen by a polling thread, intervals merged) against the time backward waits for
//     it at the end; hidden share = 1 - wait / communication.
// Rank 0 prints the tables.
#include <tensor/tensor.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tensor/distributed.h"
#include "tensor/nn/parallel/distributed.h"

using namespace tensor;
namespace dist = tensor::distributed;
namespace par = tensor::nn::parallel;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void allreduce_table(dist::ProcessGroup& pg, double max_mb) {
  const int n = pg.size();
  if (pg.rank() == 0) {
    std::printf("\n(a) allreduce, float32 SUM, %d ranks, Gloo over loopback\n", n);
    std::printf("%12s %8s %12s %12s %12s\n", "bytes", "iters", "time (us)", "algbw GB/s", "busbw GB/s");
  }
  for (int64_t bytes = 4096; bytes <= static_cast<int64_t>(max_mb * 1024 * 1024); bytes *= 4) {
    Tensor t = ones({bytes / 4});
    const int iters = static_cast<int>(std::clamp<int64_t>((int64_t(256) << 20) / bytes, 5, 200));
    for (int w = 0; w < 2; ++w) pg.allreduce(t)->wait();
    pg.barrier()->wait();
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) pg.allreduce(t)->wait();
    double s = since(t0) / iters;
    if (pg.rank() == 0)
      std::printf("%12lld %8d %12.1f %12.3f %12.3f\n", static_cast<long long>(bytes), iters, s * 1e6, bytes / s / 1e9,
                  bytes * 2.0 * (n - 1) / n / s / 1e9);
  }
}

nn::Sequential make_mlp() {
  manual_seed(0);
  nn::Sequential s;
  s->push_back(nn::Linear(784, 1024));
  s->push_back(nn::ReLU());
  s->push_back(nn::Linear(1024, 1024));
  s->push_back(nn::ReLU());
  s->push_back(nn::Linear(1024, 1024));
  s->push_back(nn::ReLU());
  s->push_back(nn::Linear(1024, 10));
  return s;
}

// Each bucket's allreduce: launch time from the hook, completion time from a polling thread.
struct CommTimer {
  struct Op {
    std::shared_ptr<dist::Work> work;
    Clock::time_point launched, done;
    bool finished = false;
  };
  std::mutex mu;
  std::vector<Op> ops;
  std::atomic<bool> stop{false};
  std::thread poller;

  CommTimer() {
    poller = std::thread([this] {
      while (!stop) {
        {
          std::lock_guard<std::mutex> g(mu);
          for (auto& op : ops)
            if (!op.finished && op.work->is_completed()) {
              op.finished = true;
              op.done = Clock::now();
            }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  }
  ~CommTimer() {
    stop = true;
    poller.join();
  }
  void add(std::shared_ptr<dist::Work> w) {
    std::lock_guard<std::mutex> g(mu);
    ops.push_back({std::move(w), Clock::now(), {}, false});
  }
  // The union of the [launch, done] intervals of this step's operations, in seconds.
  double busy_and_clear() {
    for (;;) {
      std::lock_guard<std::mutex> g(mu);
      bool all = std::all_of(ops.begin(), ops.end(), [](const Op& o) { return o.finished; });
      if (all) break;
    }
    std::lock_guard<std::mutex> g(mu);
    double busy = 0;
    Clock::time_point end{};
    for (auto& op : ops) {
      auto start = std::max(op.launched, end);
      if (op.done > start) busy += std::chrono::duration<double>(op.done - start).count();
      end = std::max(end, op.done);
    }
    ops.clear();
    return busy;
  }
};

void ddp_table(const std::shared_ptr<dist::ProcessGroup>& pg, int steps, int64_t batch, double cap_mb) {
  const int rank = pg->rank();
  manual_seed(1 + rank);
  Tensor x = randn({batch, 784}), y = randint(0, 10, {batch});

  // Single process: the same model and per-rank batch, no communication.
  nn::Sequential single = make_mlp();
  optim::SGD opt1(single->parameters(), optim::SGDOptions(0.01));
  std::vector<double> t_single;
  pg->barrier()->wait();
  for (int i = 0; i < steps + 2; ++i) {
    auto t0 = Clock::now();
    opt1.zero_grad();
    nn::functional::cross_entropy(single->forward(x), y).backward();
    opt1.step();
    if (i >= 2) t_single.push_back(since(t0));
  }

  nn::Sequential net = make_mlp();
  par::DistributedDataParallel ddp(net, pg, par::DDPOptions().bucket_cap_mb(cap_mb));
  auto timer = std::make_shared<CommTimer>();
  ddp->register_comm_hook(pg, [timer](const std::shared_ptr<dist::ProcessGroup>& g, par::GradBucket& b) {
    auto w = par::default_hooks::allreduce_hook(g, b);
    timer->add(w);
    return w;
  });
  optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.01));
  std::vector<double> t_ddp, t_back, t_wait, t_comm;
  pg->barrier()->wait();
  for (int i = 0; i < steps + 2; ++i) {
    auto t0 = Clock::now();
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(ddp->forward(x), y);
    auto tb = Clock::now();
    loss.backward();
    double back = since(tb);
    opt.step();
    double step = since(t0);
    double comm = timer->busy_and_clear();
    if (i >= 2) {
      auto st = ddp->last_iteration_stats();
      t_ddp.push_back(step);
      t_back.push_back(back);
      t_wait.push_back(st.wait_s);
      t_comm.push_back(comm);
    }
  }
  int64_t nparams = 0;
  for (auto& p : net->parameters()) nparams += p.numel();
  if (rank == 0) {
    double s1 = median(t_single), sd = median(t_ddp), w = median(t_wait), c = median(t_comm);
    std::printf("\n(b) MLP 784-1024-1024-1024-10 (%.1f M parameters, %.1f MB of gradients), batch %lld per rank, "
                "SGD, %d ranks, bucket_cap_mb %g (%zu buckets), median of %d steps\n",
                nparams / 1e6, nparams * 4 / 1048576.0, static_cast<long long>(batch), pg->size(), cap_mb,
                ddp->bucket_indices().size(), steps);
    std::printf("  single process step   %8.2f ms\n", s1 * 1e3);
    std::printf("  DDP step              %8.2f ms  (%.2fx the single-process step; backward %.2f ms)\n", sd * 1e3,
                sd / s1, median(t_back) * 1e3);
    std::printf("\n(c) overlap\n");
    std::printf("  communication per step (bucket allreduces, launch to completion)  %8.2f ms\n", c * 1e3);
    std::printf("  backward's wait for it at the end                                 %8.2f ms\n", w * 1e3);
    std::printf("  hidden behind backward                                            %8.1f %%\n",
                c > 0 ? std::max(0.0, 1.0 - w / c) * 100 : 0.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, steps = 20;
  double max_mb = 64, cap_mb = 25;
  int64_t batch = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--steps") steps = std::atoi(argv[i + 1]);
    else if (a == "--max-mb") max_mb = std::atof(argv[i + 1]);
    else if (a == "--batch") batch = std::atoll(argv[i + 1]);
    else if (a == "--bucket-cap-mb") cap_mb = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: ddp_bench [--threads N] [--steps N] [--max-mb X] [--batch N] [--bucket-cap-mb X]\n");
      return 2;
    }
  }
  try {
    set_num_threads(threads);
    auto pg = dist::init_process_group("gloo");
    allreduce_table(*pg, max_mb);
    ddp_table(pg, steps, batch, cap_mb);
    pg->barrier()->wait();
    dist::destroy_process_group();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddp_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
