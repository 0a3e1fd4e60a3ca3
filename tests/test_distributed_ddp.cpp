// DistributedDataParallel over Gloo: every rank checks its replica against a single-process
// reference computed inside the same rank (a separate copy of the model, built with rank 0's
// seed, trained on the full batch). Ranks seed their DDP models differently on purpose, so
// the construction broadcast is what makes them agree.
#include <atomic>
#include <cmath>
#include <mutex>

#include "tensor/nn.h"
#include "tensor/nn/parallel/distributed.h"
#include "tensor/optim.h"
#include "tests/distributed_harness.h"

using namespace tensor;
namespace dist = tensor::distributed;
namespace par = tensor::nn::parallel;
using dist_test::values;

namespace {

std::shared_ptr<dist::ProcessGroup> init(int rank, int world) {
  return dist::init_process_group("gloo", rank, world, dist_test::init_method(), std::chrono::seconds(20));
}

// An MLP; `hidden` and `depth` make bigger models for the many-bucket case.
nn::Sequential make_mlp(uint64_t seed, int64_t in, int64_t hidden, int depth, int64_t out, ScalarType dt) {
  manual_seed(seed);
  nn::Sequential s;
  int64_t prev = in;
  for (int d = 0; d < depth; ++d) {
    s->push_back(nn::Linear(prev, hidden));
    s->push_back(nn::Tanh());
    prev = hidden;
  }
  s->push_back(nn::Linear(prev, out));
  s->to(dt);
  return s;
}

void check_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol, double atol,
                 const std::string& what) {
  DIST_CHECK(got.size() == want.size(), what << ": " << got.size() << " vs " << want.size() << " tensors");
  for (size_t k = 0; k < got.size(); ++k) {
    auto g = values(got[k]), w = values(want[k]);
    DIST_CHECK(g.size() == w.size(), what << ": tensor " << k << " size");
    for (size_t i = 0; i < g.size(); ++i)
      DIST_CHECK(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]),
                 what << ": tensor " << k << " element " << i << " is " << g[i] << ", reference " << w[i]);
  }
}

bool any_differs(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (size_t k = 0; k < a.size(); ++k)
    if (!a[k].equal(b[k])) return true;
  return false;
}

// The full batch, identical on every rank; rank r trains on rows [r*n/w, (r+1)*n/w).
struct Batch {
  Tensor x, y;
};
Batch full_batch(int64_t n, int64_t in, int64_t out, ScalarType dt, uint64_t seed) {
  manual_seed(seed);
  return {randn({n, in}).to(dt), randn({n, out}).to(dt)};
}
Tensor shard(const Tensor& t, int rank, int world) {
  int64_t per = t.size(0) / world;
  return t.narrow(0, rank * per, per);
}

// `steps` SGD steps of DDP on the shards against the same on the full batch in one process.
void ddp_matches_single_process(int rank, int world, int64_t hidden, int depth, double cap_mb, ScalarType dt,
                                double rtol, size_t min_buckets, bool bucket_view = false) {
  auto pg = init(rank, world);
  const int64_t in = 6, out = 3, n = 4 * world;
  nn::Sequential ref = make_mlp(100, in, hidden, depth, out, dt);
  nn::Sequential net = make_mlp(100 + rank, in, hidden, depth, out, dt);
  if (rank != 0) DIST_CHECK(any_differs(net->parameters(), ref->parameters()), "ranks must start different");
  par::DistributedDataParallel ddp(net, pg, par::DDPOptions().bucket_cap_mb(cap_mb).gradient_as_bucket_view(bucket_view));
  check_close(net->parameters(), ref->parameters(), 0, 0, "after construction");
  DIST_CHECK(ddp->bucket_indices().size() >= min_buckets,
             "expected at least " << min_buckets << " buckets, got " << ddp->bucket_indices().size());

  optim::SGD opt_ref(ref->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 4; ++step) {
    Batch b = full_batch(n, in, out, dt, 1000 + step);
    opt_ref.zero_grad();
    nn::functional::mse_loss(ref->forward(b.x), b.y).backward();
    opt_ref.step();

    opt.zero_grad(/*set_to_none=*/!bucket_view);  // kept views stay views
    nn::functional::mse_loss(ddp->forward(shard(b.x, rank, world)), shard(b.y, rank, world)).backward();
    if (bucket_view) {
      // The gradients of one bucket are consecutive slices of one buffer.
      auto idx = ddp->bucket_indices();
      auto params = net->parameters();
      for (const auto& bucket : idx)
        for (size_t k = 1; k < bucket.size(); ++k) {
          const Tensor& prev = params[bucket[k - 1]].grad();
          DIST_CHECK(static_cast<const char*>(params[bucket[k]].grad().data_ptr()) ==
                         static_cast<const char*>(prev.data_ptr()) + prev.nbytes(),
                     "gradient " << bucket[k] << " is not a view into its bucket at step " << step);
        }
    }
    // The gradients are already averaged: equal to the full batch's before the step.
    std::vector<Tensor> g, gr;
    for (auto& p : net->parameters()) g.push_back(p.grad());
    for (auto& p : ref->parameters()) gr.push_back(p.grad());
    check_close(g, gr, rtol, rtol, "averaged gradients at step " + std::to_string(step));
    opt.step();
  }
  check_close(net->parameters(), ref->parameters(), rtol, rtol, "parameters after 4 steps");
}

}  // namespace

DIST_SCENARIO(broadcast_at_construction) {
  auto pg = init(rank, world);
  // A buffer too: BatchNorm's running statistics come from rank 0.
  manual_seed(100 + rank);
  nn::Sequential net;
  net->push_back(nn::Linear(4, 5));
  net->push_back(nn::BatchNorm1d(5));
  {
    NoGradGuard g;
    net->buffers()[0].fill_(static_cast<double>(rank + 1));  // running_mean
  }
  manual_seed(100);
  nn::Linear ref(4, 5);
  par::DistributedDataParallel ddp(net, pg);
  check_close({net->parameters()[0], net->parameters()[1]}, {ref->weight, ref->bias}, 0, 0, "linear after construction");
  check_close({net->buffers()[0]}, {full({5}, 1.0)}, 0, 0, "running_mean from rank 0");
  // DDP's own parameters are the wrapped module's, named under "module.".
  DIST_CHECK(ddp->named_parameters().keys()[0] == "module.0.weight", ddp->named_parameters().keys()[0]);
}
TEST(DistributedDDP, ConstructionBroadcastsRankZerosParametersAndBuffers) {
  dist_test::expect_all_ok("broadcast_at_construction", 2, 60);
}
TEST(DistributedDDP, ConstructionBroadcastsOnThreeRanks) { dist_test::expect_all_ok("broadcast_at_construction", 3, 60); }

DIST_SCENARIO(shape_mismatch) {
  auto pg = init(rank, world);
  manual_seed(1);
  nn::Sequential net;
  net->push_back(nn::Linear(4, rank == 1 ? 6 : 5));
  try {
    par::DistributedDataParallel ddp(net, pg);
  } catch (const Error& e) {
    std::string m = e.what();
    DIST_CHECK(m.find("0.weight") != std::string::npos && m.find("[5, 4]") != std::string::npos, m);
    // Every rank, rank 0 included, names the other rank's entry (rank 0 printed its own twice).
    DIST_CHECK(m.find("rank 0 has '0.weight [5, 4]") != std::string::npos, m);
    DIST_CHECK(m.find("rank 1 has '0.weight [6, 4]") != std::string::npos, m);
    DIST_CHECK(m.find("this rank") == std::string::npos, m);
    return;
  }
  DIST_CHECK(false, "expected a tensor::Error for the mismatched parameter");
}
TEST(DistributedDDP, MismatchedParameterShapesRaiseOnEveryRankNamingTheParameter) {
  dist_test::expect_all_ok("shape_mismatch", 2, 60);
}

// Rank 2 of 3 has an extra layer: every rank names rank 2's extra parameter against rank 0's
// "no parameter" (rank 0 printed "no parameter" twice), and the two counts.
DIST_SCENARIO(count_mismatch) {
  auto pg = init(rank, world);
  manual_seed(1);
  nn::Sequential net;
  net->push_back(nn::Linear(4, 5));
  if (rank == 2) net->push_back(nn::Linear(5, 3));
  try {
    par::DistributedDataParallel ddp(net, pg);
  } catch (const Error& e) {
    std::string m = e.what();
    DIST_CHECK(m.find("parameter #2") != std::string::npos, m);
    DIST_CHECK(m.find("rank 0 has no parameter, rank 2 has '1.weight [3, 5]") != std::string::npos, m);
    DIST_CHECK(m.find("(2 parameters on rank 0, 4 on rank 2)") != std::string::npos, m);
    DIST_CHECK(m.find("this rank") == std::string::npos, m);
    return;
  }
  DIST_CHECK(false, "expected a tensor::Error for the mismatched parameter count");
}
TEST(DistributedDDP, MismatchedParameterCountsNameTheOtherRanksEntry) {
  dist_test::expect_all_ok("count_mismatch", 3, 60);
}

DIST_SCENARIO(mlp_matches_full_batch) { ddp_matches_single_process(rank, world, 16, 1, 25, kFloat32, 2e-6, 1); }
TEST(DistributedDDP, TwoReplicasOnHalfBatchesMatchOneProcessOnTheFullBatch) {
  dist_test::expect_all_ok("mlp_matches_full_batch", 2, 60);
}

DIST_SCENARIO(many_buckets_match_full_batch) {
  // 4 hidden layers of 32x32 floats (4 KB each): a 0.001 MB cap (~1 KB) makes one weight and
  // at most one bias per bucket.
  ddp_matches_single_process(rank, world, 32, 4, 0.001, kFloat32, 2e-6, 4);
}
TEST(DistributedDDP, ManyBucketsMatchOneProcessOnTheFullBatch) {
  dist_test::expect_all_ok("many_buckets_match_full_batch", 2, 60);
}
DIST_SCENARIO(many_buckets_float64_three_ranks) { ddp_matches_single_process(rank, world, 32, 3, 0.001, kFloat64, 1e-12, 3); }
DIST_SCENARIO(bucket_view_matches_full_batch) { ddp_matches_single_process(rank, world, 32, 4, 0.001, kFloat32, 2e-6, 4, true); }
TEST(DistributedDDP, GradientAsBucketViewMatchesOneProcessOnTheFullBatch) {
  dist_test::expect_all_ok("bucket_view_matches_full_batch", 2, 60);
}
TEST(DistributedDDP, ThreeRanksFloat64MatchExactly) { dist_test::expect_all_ok("many_buckets_float64_three_ranks", 3, 60); }

DIST_SCENARIO(no_sync_accumulates) {
  // Two micro-steps per rank (one inside no_sync), each on a quarter of the batch: the sum of
  // the micro-steps' gradients, averaged over ranks, is twice the full batch's mean gradient.
  auto pg = init(rank, world);
  nn::Sequential ref = make_mlp(100, 6, 16, 1, 3, kFloat32);
  nn::Sequential net = make_mlp(100 + rank, 6, 16, 1, 3, kFloat32);
  par::DistributedDataParallel ddp(net, pg, par::DDPOptions().bucket_cap_mb(0.001));
  std::atomic<int> hook_calls{0};
  ddp->register_comm_hook(pg, [&hook_calls](const std::shared_ptr<dist::ProcessGroup>& g, par::GradBucket& b) {
    ++hook_calls;
    return par::default_hooks::allreduce_hook(g, b);
  });
  optim::SGD opt_ref(ref->parameters(), optim::SGDOptions(0.05));
  optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.05));
  const int64_t n = 8 * world;
  for (int step = 0; step < 3; ++step) {
    Batch b = full_batch(n, 6, 3, kFloat32, 2000 + step);
    opt_ref.zero_grad();
    (nn::functional::mse_loss(ref->forward(b.x), b.y) * 2).backward();
    opt_ref.step();

    opt.zero_grad();
    Tensor xs = shard(b.x, rank, world), ys = shard(b.y, rank, world);
    int64_t half = xs.size(0) / 2;
    int before = hook_calls;
    {
      auto guard = ddp->no_sync();
      DIST_CHECK(!ddp->require_backward_grad_sync(), "inside no_sync");
      nn::functional::mse_loss(ddp->forward(xs.narrow(0, 0, half)), ys.narrow(0, 0, half)).backward();
    }
    DIST_CHECK(hook_calls == before, "no communication inside no_sync");
    DIST_CHECK(ddp->require_backward_grad_sync(), "sync restored after the guard");
    nn::functional::mse_loss(ddp->forward(xs.narrow(0, half, half)), ys.narrow(0, half, half)).backward();
    DIST_CHECK(hook_calls == before + static_cast<int>(ddp->bucket_indices().size()), "one hook call per bucket");
    opt.step();
  }
  check_close(net->parameters(), ref->parameters(), 2e-6, 2e-6, "parameters after no_sync accumulation");
}
TEST(DistributedDDP, NoSyncAccumulationOverTwoMicroStepsEqualsOneFullBatchStep) {
  dist_test::expect_all_ok("no_sync_accumulates", 2, 60);
}

namespace {
// A model with a branch: forward(x, use_b) uses `b` only when asked.
struct BranchyImpl : nn::Module {
  BranchyImpl() : nn::Module("Branchy") {
    a = register_module("a", nn::Linear(4, 3));
    b = register_module("b", nn::Linear(4, 3));
    c = register_module("c", nn::Linear(3, 2));
  }
  Tensor forward(const Tensor& x, bool use_b) { return c(use_b ? a(x) + b(x) : a(x)); }
  nn::Linear a{nullptr}, b{nullptr}, c{nullptr};
};
TENSOR_MODULE(Branchy);
}  // namespace

DIST_SCENARIO(find_unused_parameters) {
  auto pg = init(rank, world);
  manual_seed(5);
  Branchy ref;
  manual_seed(rank == 0 ? 5 : 50 + rank);  // rank 0 as the reference
  Branchy net;
  par::DistributedDataParallel ddp(net, pg, par::DDPOptions().find_unused_parameters(true).bucket_cap_mb(1e-6));
  DIST_CHECK(ddp->bucket_indices().size() == 6, "one bucket per parameter, got " << ddp->bucket_indices().size());
  manual_seed(6);
  Tensor x = randn({2 * world, 4}), y = randn({2 * world, 2});
  // Step 1: b not taken on any rank: its grads stay undefined, the others are averaged.
  ref->zero_grad();
  nn::functional::mse_loss(ref->forward(x, false), y).backward();
  net->zero_grad();
  Tensor out = ddp->forward_as<BranchyImpl>(shard(x, rank, world), false);
  nn::functional::mse_loss(out, shard(y, rank, world)).backward();
  DIST_CHECK(!net->b->weight.grad().defined() && !net->b->bias.grad().defined(), "b is unused on every rank");
  check_close({net->a->weight.grad(), net->c->weight.grad()}, {ref->a->weight.grad(), ref->c->weight.grad()}, 2e-6,
              2e-6, "grads with b unused");
  // Step 2: b taken on rank 0 only: rank 1 contributes zero, and gets the average too.
  net->zero_grad();
  out = ddp->forward_as<BranchyImpl>(shard(x, rank, world), rank == 0);
  nn::functional::mse_loss(out, shard(y, rank, world)).backward();
  DIST_CHECK(net->b->weight.grad().defined(), "b is used on rank 0, so every rank gets its gradient");
  ref->zero_grad();
  nn::functional::mse_loss(ref->forward(shard(x, 0, world), true), shard(y, 0, world)).backward();
  check_close({net->b->weight.grad()}, {ref->b->weight.grad() / world}, 2e-6, 2e-6, "b's grad averaged with zeros");
  // A loss that uses b outside ddp->forward contradicts the graph walk: a clear error, and the
  // next iteration starts clean.
  net->zero_grad();
  bool raised = false;
  try {
    (ddp->forward_as<BranchyImpl>(shard(x, rank, world), false).sum() + net->b->weight.sum()).backward();
  } catch (const Error& e) {
    raised = std::string(e.what()).find("'b.weight' was marked ready twice") != std::string::npos;
    DIST_CHECK(raised, e.what());
  }
  DIST_CHECK(raised, "expected an error for a parameter used outside forward");
  net->zero_grad();
  ref->zero_grad();
  nn::functional::mse_loss(ref->forward(x, false), y).backward();
  nn::functional::mse_loss(ddp->forward_as<BranchyImpl>(shard(x, rank, world), false), shard(y, rank, world)).backward();
  check_close({net->a->weight.grad(), net->c->bias.grad()}, {ref->a->weight.grad(), ref->c->bias.grad()}, 2e-6, 2e-6,
              "grads after the aborted backward");
}
TEST(DistributedDDP, FindUnusedParametersReducesBranchesNotTaken) {
  dist_test::expect_all_ok("find_unused_parameters", 2, 60);
}

DIST_SCENARIO(unused_without_find_raises) {
  auto pg = init(rank, world);
  manual_seed(5);
  Branchy net;
  par::DistributedDataParallel ddp(net, pg);
  Tensor x = randn({2, 4});
  try {
    ddp->forward_as<BranchyImpl>(x, false).sum().backward();
  } catch (const Error& e) {
    std::string m = e.what();
    DIST_CHECK(m.find("'b.weight'") != std::string::npos && m.find("'b.bias'") != std::string::npos &&
                   m.find("find_unused_parameters") != std::string::npos && m.find("'a.weight'") == std::string::npos,
               m);
    // The DDP stays usable: a forward that uses every parameter trains.
    net->zero_grad();
    ddp->forward_as<BranchyImpl>(x, true).sum().backward();
    DIST_CHECK(net->b->weight.grad().defined(), "a later full backward reduces");
    return;
  }
  DIST_CHECK(false, "expected a tensor::Error naming the parameters without gradient");
}
TEST(DistributedDDP, UnusedParameterWithoutFindUnusedRaisesAClearError) {
  dist_test::expect_all_ok("unused_without_find_raises", 2, 60);
}

DIST_SCENARIO(bf16_compress) {
  auto pg = init(rank, world);
  nn::Sequential ref = make_mlp(100, 6, 16, 2, 3, kFloat32);
  nn::Sequential net = make_mlp(100 + rank, 6, 16, 2, 3, kFloat32);
  par::DistributedDataParallel ddp(net, pg, par::DDPOptions().bucket_cap_mb(0.002));
  ddp->register_comm_hook(pg, par::default_hooks::bf16_compress_hook);
  Batch b = full_batch(4 * world, 6, 3, kFloat32, 77);
  nn::functional::mse_loss(ref->forward(b.x), b.y).backward();
  nn::functional::mse_loss(ddp->forward(shard(b.x, rank, world)), shard(b.y, rank, world)).backward();
  std::vector<Tensor> got, want;
  for (auto& p : net->parameters()) got.push_back(p.grad());
  for (auto& p : ref->parameters()) want.push_back(p.grad());
  // bfloat16 keeps 8 significant bits: each rank's value rounds once to the wire, the sum once.
  double scale = 0;
  for (auto& w : want) scale = std::max(scale, w.abs().max().item<double>());
  check_close(got, want, 2.0 / 128, 2.0 / 128 * scale * 0.1, "bf16-compressed gradients");
  // And it is not exact: the hook did compress.
  bool exact = true;
  for (size_t k = 0; k < got.size(); ++k) exact = exact && got[k].allclose(want[k], 1e-6, 1e-7);
  DIST_CHECK(!exact, "bf16 compression should lose precision");
}
TEST(DistributedDDP, Bf16CompressHookGivesCloseGradients) { dist_test::expect_all_ok("bf16_compress", 2, 60); }

DIST_SCENARIO(custom_hook_and_overlap) {
  auto pg = init(rank, world);
  nn::Sequential net = make_mlp(100 + rank, 6, 32, 3, 3, kFloat32);
  // About one layer's weight per bucket.
  par::DistributedDataParallel ddp(net, pg, par::DDPOptions().bucket_cap_mb(0.003).first_bucket_cap_mb(0.003));
  auto params = net->parameters();
  auto idx = ddp->bucket_indices();
  DIST_CHECK(idx.size() >= 3, "several buckets, got " << idx.size());
  // Reverse registration order: bucket 0 holds the last parameter.
  DIST_CHECK(idx[0][0] == params.size() - 1, "bucket 0 starts with the last parameter");
  struct Call {
    size_t index;
    int64_t numel;
    size_t nparams;
    bool first_layer_grad_ready;  // was backward already past the first layer when launched?
  };
  auto calls = std::make_shared<std::vector<Call>>();
  Tensor first_weight = params[0];
  ddp->register_comm_hook(pg, [calls, first_weight](const std::shared_ptr<dist::ProcessGroup>& g, par::GradBucket& b) {
    calls->push_back({b.index(), b.buffer().numel(), b.parameters().size(), first_weight.grad().defined()});
    // The gradients are views of the buffer, shaped as the parameters.
    for (size_t k = 0; k < b.parameters().size(); ++k)
      DIST_CHECK(b.gradients()[k].sizes() == b.parameters()[k].sizes(), "gradient view shape");
    return par::default_hooks::allreduce_hook(g, b);
  });
  for (int step = 0; step < 2; ++step) {
    net->zero_grad();  // set_to_none: first_weight.grad() is undefined until backward reaches it
    calls->clear();
    ddp->forward(randn({4, 6})).sum().backward();
    DIST_CHECK(calls->size() == idx.size(), "one call per bucket per step, got " << calls->size());
    for (size_t bi = 0; bi < idx.size(); ++bi) {
      int64_t numel = 0;
      for (size_t p : idx[bi]) numel += params[p].numel();
      DIST_CHECK((*calls)[bi].index == bi && (*calls)[bi].numel == numel && (*calls)[bi].nparams == idx[bi].size(),
                 "bucket " << bi << ": index " << (*calls)[bi].index << ", numel " << (*calls)[bi].numel << " vs "
                           << numel);
    }
    // Overlap: bucket 0 (the last layer) was launched while backward had not yet produced the
    // first layer's gradient; the last bucket (holding the first layer) only after.
    DIST_CHECK(!(*calls)[0].first_layer_grad_ready, "bucket 0 launched before backward reached the first layer");
    DIST_CHECK(calls->back().first_layer_grad_ready, "the last bucket holds the first layer");
    auto st = ddp->last_iteration_stats();
    DIST_CHECK(st.bucket_launch_s.size() == idx.size() && st.bucket_launch_s[0] <= st.backward_s, "stats");
  }
}
TEST(DistributedDDP, CustomHookCalledOncePerBucketAndFirstBucketLaunchesDuringBackward) {
  dist_test::expect_all_ok("custom_hook_and_overlap", 2, 60);
}

DIST_SCENARIO(unused_on_one_rank_no_hang) {
  // Rank 1 takes the branch, rank 0 does not, without find_unused_parameters: rank 0 stops
  // launching at b's bucket and raises at once; rank 1's wait for that bucket fails with the
  // group's timeout (3 s here) or when rank 0's connection drops. Both raise, neither hangs.
  auto pg = dist::init_process_group("gloo", rank, world, dist_test::init_method(), std::chrono::seconds(3));
  manual_seed(5);
  Branchy net;
  par::DistributedDataParallel ddp(net, pg, par::DDPOptions().bucket_cap_mb(1e-6));
  try {
    ddp->forward_as<BranchyImpl>(randn({2, 4}), rank == 1).sum().backward();
  } catch (const Error& e) {
    std::string m = e.what();
    if (rank == 0) DIST_CHECK(m.find("'b.weight'") != std::string::npos, m);
    else DIST_CHECK(m.find("allreduce") != std::string::npos, m);
    std::_Exit(0);  // skip destroying a group whose peer may be gone
  }
  DIST_CHECK(false, "expected a tensor::Error on rank " << rank);
}
TEST(DistributedDDP, ParameterUnusedOnOneRankRaisesOnBothWithoutHanging) {
  dist_test::expect_all_ok("unused_on_one_rank_no_hang", 2, 30);
}
