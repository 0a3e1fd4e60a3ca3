// Per-rank parameter memory of FullyShardedDataParallel against the full model: an MLP of
// `layers` Linear(width, width) layers, each wrapped as its own FSDP unit, one training step.
// Run under the launcher, e.g.
//   build/tools/tensorrun --nproc-per-node 2 build/benchmarks/fsdp_memory [layers] [width]
// Prints, per rank: the full parameters' bytes, the resident shards, the largest gathered
// (unsharded) bytes seen during forward and backward (FSDP's counter), and the parameter bytes
// measured between layers from the storages the module's parameters point at.
#include <cstdio>
#include <cstdlib>
#include <set>

#include "tensor/distributed.h"
#include "tensor/distributed/fsdp.h"
#include "tensor/optim.h"
#include "tensor/tensor.h"

using namespace tensor;
namespace fsdp = tensor::distributed::fsdp;

int main(int argc, char** argv) {
  const int layers = argc > 1 ? std::atoi(argv[1]) : 8;
  const int64_t width = argc > 2 ? std::atoll(argv[2]) : 512;
  auto pg = distributed::init_process_group("gloo");
  const int rank = pg->rank(), world = pg->size();

  manual_seed(0);
  std::vector<fsdp::FullyShardedDataParallel> units;
  nn::Sequential seq;
  int64_t between_max = 0;
  auto measure = [&units]() {
    std::set<const StorageImpl*> seen;
    int64_t bytes = 0;
    for (auto& u : units) {
      for (auto& p : u->module()->parameters()) {
        const StorageImpl* s = p.unsafeGetTensorImpl()->storage().get();
        if (seen.insert(s).second) bytes += static_cast<int64_t>(s->nbytes());
      }
      bytes += u->flat_shard().nbytes();
    }
    return bytes;
  };
  for (int i = 0; i < layers; ++i) {
    units.emplace_back(nn::Linear(width, width), pg);
    seq->push_back(units.back());
    seq->push_back(nn::Functional([&](Tensor x) {
      between_max = std::max(between_max, measure());
      return tanh(x);
    }));
  }
  fsdp::FullyShardedDataParallel model(seq, pg);
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));

  Tensor x = randn({16, width}), y = randn({16, width});
  opt.zero_grad();
  nn::functional::mse_loss(model->forward(x), y).backward();
  opt.step();

  auto st = model->memory_stats();
  const int64_t unit_bytes = (width * width + width) * 4;
  int64_t opt_state = 0;
  for (auto& kv : opt.state())
    for (auto& nt : kv.second->named_tensors()) opt_state += nt.second.nbytes();
  std::printf(
      "rank %d/%d  %d x Linear(%lld, %lld): full params %.2f MiB | per rank: shards %.2f MiB (%.3f of full), "
      "peak shards+gathered %.2f MiB (one unit = %.2f MiB), between layers %.2f MiB, Adam state %.2f MiB\n",
      rank, world, layers, static_cast<long long>(width), static_cast<long long>(width), st.full_bytes / 1048576.0,
      st.shard_bytes / 1048576.0, static_cast<double>(st.shard_bytes) / st.full_bytes,
      (st.shard_bytes + st.peak_unsharded_bytes) / 1048576.0, unit_bytes / 1048576.0, between_max / 1048576.0,
      opt_state / 1048576.0);
  distributed::destroy_process_group();
  return 0;
}
