// FullyShardedDataParallel on 2 and 3 ranks (3 exercises the padding): training equals one
// process on the full batch (a reference model inside each rank, same seed), parameter memory
// per rank measured from the parameters' storages, sharded optimizer state, state dicts, errors.
#include <cmath>
#include <set>

#include "tensor/distributed/fsdp.h"
#include "tensor/optim.h"
#include "tests/distributed_harness.h"

using namespace tensor;
namespace dist = tensor::distributed;
namespace fsdp = tensor::distributed::fsdp;
using dist_test::values;

namespace {

std::shared_ptr<dist::ProcessGroup> init(int rank, int world) {
  return dist::init_process_group("gloo", rank, world, dist_test::init_method(), std::chrono::milliseconds(30000));
}

// An MLP as one Sequential (one FSDP unit) with sizes that do not divide by 2 or 3.
nn::Sequential make_mlp() {
  manual_seed(7);
  return nn::Sequential(nn::Linear(5, 7), nn::Tanh(), nn::Linear(7, 3));
}

// The same layers with each Linear wrapped as its own unit.
nn::Sequential make_wrapped(std::shared_ptr<dist::ProcessGroup> pg, int layers, int width) {
  manual_seed(11);
  nn::Sequential seq;
  for (int i = 0; i < layers; ++i) {
    seq->push_back(fsdp::FullyShardedDataParallel(nn::Linear(i == 0 ? 5 : width, width), pg));
    seq->push_back(nn::Tanh());
  }
  seq->push_back(fsdp::FullyShardedDataParallel(nn::Linear(width, 3), pg));
  return seq;
}
nn::Sequential make_plain(int layers, int width) {
  manual_seed(11);
  nn::Sequential seq;
  for (int i = 0; i < layers; ++i) {
    seq->push_back(nn::Linear(i == 0 ? 5 : width, width));
    seq->push_back(nn::Tanh());
  }
  seq->push_back(nn::Linear(width, 3));
  return seq;
}

void expect_close(const std::vector<std::pair<std::string, Tensor>>& got, const std::vector<std::pair<std::string, Tensor>>& want,
                  double tol, const std::string& what) {
  DIST_CHECK(got.size() == want.size(), what << ": " << got.size() << " entries vs " << want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    DIST_CHECK(got[i].first == want[i].first, what << ": name " << got[i].first << " vs " << want[i].first);
    DIST_CHECK(got[i].second.sizes() == want[i].second.sizes(), what << ": shape of " << got[i].first);
    auto a = values(got[i].second), b = values(want[i].second);
    for (size_t j = 0; j < a.size(); ++j)
      DIST_CHECK(std::abs(a[j] - b[j]) <= tol, what << ": " << got[i].first << "[" << j << "] " << a[j] << " vs " << b[j]);
  }
}

std::vector<std::pair<std::string, Tensor>> named_params(const nn::Module& m) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

// Trains `model` (FSDP) on this rank's half of each batch and `ref` on the full batch with the
// same optimizer kind; after every step the full parameters must agree.
template <typename MakeOpt>
void train_and_compare(fsdp::FullyShardedDataParallel& model, nn::Sequential& ref, int rank, int world, MakeOpt make_opt,
                       const std::string& what) {
  auto opt = make_opt(model->parameters());
  auto ref_opt = make_opt(ref->parameters());
  const int64_t per_rank = 4, batch = per_rank * world;
  for (int step = 0; step < 4; ++step) {
    manual_seed(100 + step);
    Tensor x = randn({batch, 5}), y = randn({batch, 3});
    opt->zero_grad();
    Tensor out = model->forward(x.narrow(0, rank * per_rank, per_rank));
    nn::functional::mse_loss(out, y.narrow(0, rank * per_rank, per_rank)).backward();
    opt->step();
    ref_opt->zero_grad();
    nn::functional::mse_loss(ref->forward(x), y).backward();
    ref_opt->step();
    expect_close(model->full_state_dict(), named_params(*ref), 2e-5, what + " step " + std::to_string(step));
  }
}

// A module with a parameter that forward does not use: it gets no gradient.
struct HalfUsedImpl : nn::Module {
  HalfUsedImpl() : nn::Module("HalfUsed") {
    manual_seed(21);
    used = register_module("used", nn::Linear(5, 3));
    unused = register_module("unused", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& x) { return used->forward(x); }
  nn::Linear used{nullptr}, unused{nullptr};
};
TENSOR_MODULE(HalfUsed);

}  // namespace

DIST_SCENARIO(unused_parameter) {
  auto pg = init(rank, world);
  fsdp::FullyShardedDataParallel model(HalfUsed(), pg);
  HalfUsed ref;
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.3));
  optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.3));
  manual_seed(2);
  Tensor x = randn({2 * world, 5}), y = randn({2 * world, 3});
  nn::functional::mse_loss(model->forward(x.narrow(0, 2 * rank, 2)), y.narrow(0, 2 * rank, 2)).backward();
  DIST_CHECK(model->memory_stats().unsharded_bytes == 0, "freed after backward");
  nn::functional::mse_loss(ref->forward(x), y).backward();
  opt.step();
  ref_opt.step();
  expect_close(model->full_state_dict(), named_params(*ref), 2e-5, "unused parameter");
}

DIST_SCENARIO(train_single_unit) {
  auto pg = init(rank, world);
  for (int kind = 0; kind < 2; ++kind) {
    fsdp::FullyShardedDataParallel model(make_mlp(), pg);
    auto ref = make_mlp();
    // 5*7+7+7*3+3 = 66 elements: padded to a multiple of world.
    const int64_t padded = (66 + world - 1) / world * world;
    DIST_CHECK(model->parameters().size() == 1 && model->parameters()[0].numel() == padded / world,
               "one shard of " << padded / world << " elements, got " << model->parameters()[0].numel());
    if (kind == 0) {
      train_and_compare(model, ref, rank, world,
                        [](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1).momentum(0.9)); },
                        "sgd");
    } else {
      train_and_compare(model, ref, rank, world,
                        [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.01)); }, "adam");
    }
  }
}

DIST_SCENARIO(train_wrapped_units) {
  auto pg = init(rank, world);
  {
    fsdp::FullyShardedDataParallel model(make_wrapped(pg, 3, 6), pg);
    auto ref = make_plain(3, 6);
    train_and_compare(model, ref, rank, world,
                      [](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.2)); },
                      "wrapped sgd");
  }
  fsdp::FullyShardedDataParallel model(make_wrapped(pg, 3, 6), pg);
  auto ref = make_plain(3, 6);
  // The root has no parameters of its own: 4 nested units, one shard each.
  DIST_CHECK(model->parameters().size() == 4, "4 shards, got " << model->parameters().size());
  auto make_adam = [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.01)); };
  train_and_compare(model, ref, rank, world, make_adam, "wrapped adam");
  // Optimizer state is sharded: every exp_avg has its shard's size.
  auto opt = make_adam(model->parameters());
  opt->zero_grad();
  manual_seed(5);
  nn::functional::mse_loss(model->forward(randn({4, 5})), randn({4, 3})).backward();
  opt->step();
  int64_t state_numel = 0;
  for (auto& p : model->parameters()) {
    auto it = opt->state().find(p.unsafeGetTensorImpl());
    DIST_CHECK(it != opt->state().end(), "state for every shard");
    auto& st = static_cast<optim::AdamParamState&>(*it->second);
    DIST_CHECK(st.exp_avg().numel() == p.numel() && st.exp_avg_sq().numel() == p.numel(), "state of the shard's size");
    state_numel += st.exp_avg().numel();
  }
  int64_t full = 0;
  for (auto& p : ref->parameters()) full += p.numel();
  DIST_CHECK(state_numel * world >= full && state_numel * world < full + 4 * world, "state numel " << state_numel);
}

// Parameter memory per rank, measured from the storages the module's parameters point at (the
// gathered buffers) plus the shards, by a probe between layers.
DIST_SCENARIO(memory_per_rank) {
  auto pg = init(rank, world);
  const int layers = 8, width = 64;
  manual_seed(3);
  std::vector<fsdp::FullyShardedDataParallel> units;
  for (int i = 0; i < layers; ++i) {
    units.emplace_back(nn::Linear(i == 0 ? 5 : width, width), pg);
  }
  auto measure = [&units]() {
    std::set<const StorageImpl*> seen;
    int64_t bytes = 0;
    for (auto& u : units) {
      for (auto& p : u->module()->parameters()) {
        const StorageImpl* s = p.unsafeGetTensorImpl()->storage().get();
        if (seen.insert(s).second) bytes += static_cast<int64_t>(s->nbytes());
      }
      for (auto& p : u->parameters()) bytes += p.nbytes();
    }
    return bytes;
  };
  int64_t peak = 0;
  nn::Sequential probed;
  for (int i = 0; i < layers; ++i) {
    probed->push_back(units[i]);
    probed->push_back(nn::Functional([&](Tensor x) {
      peak = std::max(peak, measure());
      return x;
    }));
  }
  fsdp::FullyShardedDataParallel model(probed, pg);
  int64_t full = 0, unit_full = width * width * 4 + width * 4;
  for (auto& u : units) full += u->memory_stats().full_bytes;
  DIST_CHECK(full == (5 * width + width + (layers - 1) * (width * width + width)) * 4, "full bytes " << full);
  const int64_t steady = measure();
  DIST_CHECK(steady <= full / world + layers * world * 4, "steady " << steady << " vs full/world " << full / world);
  DIST_CHECK(steady >= full / world, "steady " << steady);
  manual_seed(1);
  Tensor out = model->forward(randn({4, 5}));
  // After a unit's forward its gathered buffer is freed again: the probe (between layers) sees
  // at most the shards.
  DIST_CHECK(peak == steady, "peak between layers " << peak << " vs steady " << steady);
  // The peak inside forward, from the FSDP counter: one unit's full size at a time.
  auto st = model->memory_stats();
  DIST_CHECK(st.peak_unsharded_bytes <= unit_full + 4 * world && st.peak_unsharded_bytes >= unit_full,
             "peak unsharded " << st.peak_unsharded_bytes << " vs one unit " << unit_full);
  DIST_CHECK(st.unsharded_bytes == 0, "nothing gathered after forward");
  out.sum().backward();
  DIST_CHECK(measure() == steady && model->memory_stats().unsharded_bytes == 0, "freed after backward");
  for (auto& u : units)
    for (auto& p : u->module()->parameters()) DIST_CHECK(!p.grad().defined(), "no full gradient kept");
  for (auto& p : model->parameters()) DIST_CHECK(p.grad().defined(), "every shard has a gradient");
  if (rank == 0)
    std::printf("FSDP memory: world %d, %d-layer MLP width %d: full params %lld B, per-rank steady %lld B, peak %lld B\n",
                world, layers, width, static_cast<long long>(full), static_cast<long long>(steady),
                static_cast<long long>(steady + st.peak_unsharded_bytes));
}

DIST_SCENARIO(state_dicts) {
  auto pg = init(rank, world);
  fsdp::FullyShardedDataParallel model(make_wrapped(pg, 2, 5), pg);
  auto ref = make_plain(2, 5);
  expect_close(model->full_state_dict(), named_params(*ref), 0, "initial full state dict");
  // Change the model, then round-trip both kinds into a freshly built FSDP model.
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.5));
  manual_seed(9);
  Tensor x = randn({3, 5});
  nn::functional::mse_loss(model->forward(x), randn({3, 3})).backward();
  opt.step();
  auto full = model->full_state_dict();
  auto sharded = model->sharded_state_dict();
  Tensor want = model->forward(x).detach();

  fsdp::FullyShardedDataParallel fresh(make_wrapped(pg, 2, 5), pg);
  DIST_CHECK((fresh->forward(x) - want).abs().max().item<double>() > 1e-3, "fresh model differs before loading");
  fresh->load_full_state_dict(full);
  DIST_CHECK((fresh->forward(x) - want).abs().max().item<double>() == 0, "same output after load_full_state_dict");
  expect_close(fresh->full_state_dict(), full, 0, "full round trip");

  fsdp::FullyShardedDataParallel fresh2(make_wrapped(pg, 2, 5), pg);
  fresh2->load_sharded_state_dict(sharded);
  DIST_CHECK((fresh2->forward(x) - want).abs().max().item<double>() == 0, "same output after load_sharded_state_dict");
  DIST_CHECK(sharded.shards.size() == 3 && sharded.shards[0].first == "0.", "unit keys");
  DIST_CHECK(sharded.shards[0].second.offset == rank * sharded.shards[0].second.local.numel(), "offset");

  // rank0_only: other ranks get nothing.
  fsdp::FullyShardedDataParallel r0(make_mlp(), pg, fsdp::FSDPOptions().rank0_only(true));
  auto r0sd = r0->full_state_dict();
  DIST_CHECK(rank == 0 ? r0sd.size() == 4 : r0sd.empty(), "rank0_only");
  if (rank == 0) expect_close(r0sd, named_params(*make_mlp()), 0, "rank0_only values");

  // Buffers (not sharded) come after the parameters under their original names, once each,
  // and load back.
  auto make_bn = [] {
    manual_seed(13);
    return nn::Sequential(nn::Linear(5, 4), nn::BatchNorm1d(4), nn::Linear(4, 3));
  };
  fsdp::FullyShardedDataParallel bn(make_bn(), pg, fsdp::FSDPOptions().auto_wrap_children(true));
  auto bn_ref = make_bn();
  bn->forward(randn({4, 5}));  // updates every rank's running stats
  auto bn_sd = bn->full_state_dict();
  std::vector<std::string> want_names;
  for (const auto& p : bn_ref->named_parameters()) want_names.push_back(p.key());
  for (const auto& b : bn_ref->named_buffers()) want_names.push_back(b.key());
  DIST_CHECK(bn_sd.size() == want_names.size(), "bn entries " << bn_sd.size() << " vs " << want_names.size());
  for (size_t i = 0; i < want_names.size(); ++i)
    DIST_CHECK(bn_sd[i].first == want_names[i], "entry " << i << ": " << bn_sd[i].first << " vs " << want_names[i]);
  fsdp::FullyShardedDataParallel bn2(make_bn(), pg, fsdp::FSDPOptions().auto_wrap_children(true));
  bn2->load_full_state_dict(bn_sd);
  expect_close(bn2->full_state_dict(), bn_sd, 0, "state dict with buffers");

  // Errors: a sharded state dict of another world size; a missing key.
  auto bad = sharded;
  bad.world_size = world + 1;
  bool threw = false;
  try {
    fresh2->load_sharded_state_dict(bad);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("ranks") != std::string::npos;
  }
  DIST_CHECK(threw, "wrong world size raises tensor::Error");
  auto missing = full;
  missing.pop_back();
  threw = false;
  try {
    fresh2->load_full_state_dict(missing);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("missing key") != std::string::npos;
  }
  DIST_CHECK(threw, "missing key raises tensor::Error");
}

// Two backward passes before a step accumulate into the shards' gradients like into the
// parameters of one process; reshard_after_forward(false) keeps the gathered parameters from
// forward to the end of backward; a forward without grad mode frees them at once.
DIST_SCENARIO(accumulate_and_options) {
  auto pg = init(rank, world);
  for (bool reshard : {true, false}) {
    fsdp::FullyShardedDataParallel model(make_mlp(), pg, fsdp::FSDPOptions().reshard_after_forward(reshard));
    auto ref = make_mlp();
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
    optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.1));
    const int64_t per_rank = 3, batch = per_rank * world;
    for (int micro = 0; micro < 2; ++micro) {
      manual_seed(40 + micro);
      Tensor x = randn({batch, 5}), y = randn({batch, 3});
      Tensor out = model->forward(x.narrow(0, rank * per_rank, per_rank));
      const int64_t gathered = model->memory_stats().unsharded_bytes;
      const int64_t padded = (66 + world - 1) / world * world;
      DIST_CHECK(gathered == (reshard ? 0 : padded * 4), "gathered after forward: " << gathered);
      nn::functional::mse_loss(out, y.narrow(0, rank * per_rank, per_rank)).backward();
      DIST_CHECK(model->memory_stats().unsharded_bytes == 0, "freed after backward");
      nn::functional::mse_loss(ref->forward(x), y).backward();
    }
    opt.step();
    ref_opt.step();
    expect_close(model->full_state_dict(), named_params(*ref), 2e-5, reshard ? "accumulate" : "accumulate, no reshard");
  }
  fsdp::FullyShardedDataParallel model(make_mlp(), pg);
  auto ref = make_mlp();
  Tensor x = randn({2, 5});
  Tensor out;
  {
    NoGradGuard ng;
    out = model->forward(x);
  }
  DIST_CHECK(!out.requires_grad() && model->memory_stats().unsharded_bytes == 0, "no-grad forward");
  auto a = values(out), b = values(ref->forward(x));
  for (size_t i = 0; i < a.size(); ++i) DIST_CHECK(std::abs(a[i] - b[i]) < 1e-6, "no-grad output " << i);
}

// auto_wrap_children: each Linear of a plain Sequential becomes its own unit; the training
// equals one process, the gathered memory never exceeds the largest unit, and a policy picks
// which children to wrap.
DIST_SCENARIO(auto_wrap) {
  auto pg = init(rank, world);
  {
    fsdp::FullyShardedDataParallel model(make_plain(3, 6), pg, fsdp::FSDPOptions().auto_wrap_children(true));
    auto ref = make_plain(3, 6);
    DIST_CHECK(model->parameters().size() == 4, "one shard per Linear, got " << model->parameters().size());
    train_and_compare(model, ref, rank, world,
                      [](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.2)); },
                      "auto-wrapped sgd");
  }
  {
    fsdp::FullyShardedDataParallel model(make_plain(3, 6), pg, fsdp::FSDPOptions().auto_wrap_children(true));
    auto ref = make_plain(3, 6);
    train_and_compare(model, ref, rank, world,
                      [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.01)); },
                      "auto-wrapped adam");
    // The largest unit is Linear(6, 6): 42 elements, padded to the world size.
    model->reset_peak_memory_stats();
    nn::functional::mse_loss(model->forward(randn({2, 5})), randn({2, 3})).backward();
    const int64_t largest = (42 + world - 1) / world * world * 4;
    DIST_CHECK(model->memory_stats().peak_unsharded_bytes == largest,
               "peak gathered " << model->memory_stats().peak_unsharded_bytes << " vs largest unit " << largest);
  }
  {
    // Only child "0" is wrapped: the other Linears stay in the root unit.
    fsdp::FullyShardedDataParallel model(
        make_plain(3, 6), pg,
        fsdp::FSDPOptions().auto_wrap_policy([](const std::string& name, const nn::Module&) { return name == "0"; }));
    auto ref = make_plain(3, 6);
    DIST_CHECK(model->parameters().size() == 2, "root shard + one wrapped child, got " << model->parameters().size());
    train_and_compare(model, ref, rank, world,
                      [](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.2)); },
                      "policy sgd");
  }
  bool threw = false;
  try {
    fsdp::FullyShardedDataParallel bad(HalfUsed(), pg, fsdp::FSDPOptions().auto_wrap_children(true));
  } catch (const Error& e) {
    threw = std::string(e.what()).find("Sequential") != std::string::npos;
  }
  DIST_CHECK(threw, "auto-wrapping a non-Sequential raises tensor::Error");
}

DIST_SCENARIO(mixed_dtypes_error) {
  auto pg = init(rank, world);
  nn::Sequential seq(nn::Linear(3, 3), nn::Linear(3, 3));
  seq->ptr(1)->to(kFloat64);
  bool threw = false;
  try {
    fsdp::FullyShardedDataParallel model(seq, pg);
  } catch (const Error& e) {
    std::string m = e.what();
    threw = m.find("dtype") != std::string::npos && m.find("float64") != std::string::npos;
  }
  DIST_CHECK(threw, "parameters of different dtypes in one unit raise tensor::Error");
}

TEST(DistributedFSDP, TrainSingleUnitMatchesOneProcess2Ranks) { dist_test::expect_all_ok("train_single_unit", 2); }
TEST(DistributedFSDP, TrainSingleUnitMatchesOneProcess3Ranks) { dist_test::expect_all_ok("train_single_unit", 3); }
TEST(DistributedFSDP, TrainWrappedUnitsSgdAdam2Ranks) { dist_test::expect_all_ok("train_wrapped_units", 2); }
TEST(DistributedFSDP, TrainWrappedUnitsSgdAdam3Ranks) { dist_test::expect_all_ok("train_wrapped_units", 3); }
TEST(DistributedFSDP, MemoryPerRank2Ranks) { dist_test::expect_all_ok("memory_per_rank", 2); }
TEST(DistributedFSDP, StateDicts2Ranks) { dist_test::expect_all_ok("state_dicts", 2); }
TEST(DistributedFSDP, StateDicts3Ranks) { dist_test::expect_all_ok("state_dicts", 3); }
TEST(DistributedFSDP, AccumulateAndOptions2Ranks) { dist_test::expect_all_ok("accumulate_and_options", 2); }
TEST(DistributedFSDP, AccumulateAndOptions3Ranks) { dist_test::expect_all_ok("accumulate_and_options", 3); }
TEST(DistributedFSDP, UnusedParameter2Ranks) { dist_test::expect_all_ok("unused_parameter", 2); }
TEST(DistributedFSDP, AutoWrap2Ranks) { dist_test::expect_all_ok("auto_wrap", 2); }
TEST(DistributedFSDP, AutoWrap3Ranks) { dist_test::expect_all_ok("auto_wrap", 3); }
// Sequential::forward_at, which auto-wrapping runs step by step: one step, and a clear error out of range.
TEST(DistributedFSDP, SequentialForwardAtRunsOneStep) {
  nn::Sequential seq(nn::Functional([](Tensor x) { return x * 2; }), nn::Functional([](Tensor x) { return x + 1; }));
  Tensor x = full({2}, 3.0);
  EXPECT_EQ(values(seq->forward_at(0, x)), (std::vector<double>{6, 6}));
  EXPECT_EQ(values(seq->forward_at(1, x)), (std::vector<double>{4, 4}));
  EXPECT_EQ(values(seq->forward(x)), (std::vector<double>{7, 7}));
  EXPECT_THROW(seq->forward_at(2, x), Error);
}
TEST(DistributedFSDP, MixedDtypesError) { dist_test::expect_all_ok("mixed_dtypes_error", 2); }
