// Pipeline parallelism: a 4-layer MLP cut into 2 or 3 stages trains with GPipe and 1F1B to
// the parameters that one process reaches on the whole batch (each rank computes that
// reference itself with a full copy of the model built under the same seed), and the errors
// (micro-batches that do not divide the batch, stage count mismatches, a dead peer).
#include <cmath>

#include "tensor/distributed/pipeline.h"
#include "tests/distributed_harness.h"

using namespace tensor;
namespace dist = tensor::distributed;
namespace pp = tensor::distributed::pipelining;
using std::chrono::milliseconds;

namespace {

std::shared_ptr<dist::ProcessGroup> init(int rank, int world, milliseconds timeout = milliseconds(20000)) {
  return dist::init_process_group("gloo", rank, world, dist_test::init_method(), timeout);
}

// The model: 4 Linear layers with tanh between them (7 modules). One generic lambda builds
// both the whole Sequential (the reference) and a stage.
auto mlp = [](auto& seq) {
  seq.push_back(nn::Linear(6, 10));
  seq.push_back(nn::Tanh());
  seq.push_back(nn::Linear(10, 12));
  seq.push_back(nn::Tanh());
  seq.push_back(nn::Linear(12, 8));
  seq.push_back(nn::Tanh());
  seq.push_back(nn::Linear(8, 3));
};

std::vector<int64_t> split_for(int world) {
  if (world == 1) return {};
  if (world == 2) return {3};  // [Linear, Tanh, Linear] | [Tanh, Linear, Tanh, Linear]
  return {2, 5};               // [Linear, Tanh] | [Linear, Tanh, Linear] | [Tanh, Linear]
}

pp::LossFn mse = [](const Tensor& out, const Tensor& target) { return nn::functional::mse_loss(out, target); };

double max_abs_diff(const Tensor& a, const Tensor& b) {
  auto va = dist_test::values(a), vb = dist_test::values(b);
  DIST_CHECK(va.size() == vb.size(), "sizes differ");
  double m = 0;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

// Trains the pipeline and the whole-model reference side by side for `steps` SGD steps with
// n_microbatches, then checks this stage's parameters and (last stage) the losses.
void train_and_compare(int rank, int world, bool one_f_one_b, int n_microbatches) {
  auto pg = init(rank, world);
  const int64_t batch = 12;
  manual_seed(7);
  nn::Sequential full;
  mlp(*full);
  manual_seed(7);
  nn::Sequential stage_module = pp::build_stage(mlp, split_for(world), rank);
  auto range = pp::stage_layer_range(7, split_for(world), rank);
  DIST_CHECK(static_cast<int64_t>(stage_module->size()) == range.second - range.first, "stage size");

  auto full_params = full->named_parameters();
  auto stage_params = stage_module->named_parameters();
  DIST_CHECK(stage_params.size() > 0 || range.second - range.first == 1, "stage has parameters");
  // Same seed, same construction order: the stage's layers are the reference's layers.
  std::vector<Tensor> initial;
  for (const auto& p : stage_params) {
    DIST_CHECK(full_params.contains(p.key()), "reference has no parameter " << p.key());
    DIST_CHECK(max_abs_diff(p.value(), full_params[p.key()]) == 0, "initial " << p.key() << " differs");
    initial.push_back(p.value().detach().clone());
  }

  pp::PipelineStage stage(stage_module, rank, world, pg);
  std::unique_ptr<pp::PipelineSchedule> schedule;
  if (one_f_one_b) schedule = std::make_unique<pp::Schedule1F1B>(stage, n_microbatches, mse);
  else schedule = std::make_unique<pp::ScheduleGPipe>(stage, n_microbatches, mse);

  optim::SGD ref_opt(full->parameters(), optim::SGDOptions(0.2));
  optim::SGD opt(stage_module->parameters(), optim::SGDOptions(0.2));
  for (int step = 0; step < 4; ++step) {
    manual_seed(100 + step);
    Tensor x = randn({batch, 6});
    Tensor y = randn({batch, 3});

    ref_opt.zero_grad();
    Tensor ref_loss = nn::functional::mse_loss(full->forward(x), y);
    ref_loss.backward();
    ref_opt.step();

    opt.zero_grad();
    Tensor in = rank == 0 ? x : Tensor();
    Tensor tgt = rank == world - 1 ? y : Tensor();
    auto losses = schedule->step(in, tgt);
    opt.step();

    if (rank == world - 1) {
      DIST_CHECK(static_cast<int>(losses.size()) == n_microbatches, "one loss per micro-batch");
      // Equal chunks: the mean of the micro-batch means is the batch mean.
      double mean = 0;
      for (auto& l : losses) mean += l.item<double>() / n_microbatches;
      DIST_CHECK(std::abs(mean - ref_loss.item<double>()) < 1e-5,
                 "step " << step << ": mean loss " << mean << " vs " << ref_loss.item<double>());
    } else {
      DIST_CHECK(losses.empty(), "losses only on the last stage");
    }
  }
  size_t i = 0;
  for (const auto& p : stage_params) {
    double d = max_abs_diff(p.value(), full_params[p.key()]);
    DIST_CHECK(d < 1e-5, (one_f_one_b ? "1F1B" : "GPipe") << " stage " << rank << " parameter " << p.key()
                                                          << " differs from the reference by " << d);
    // The training moved it (so the comparison above is not between two untouched tensors).
    DIST_CHECK(max_abs_diff(p.value(), initial[i++]) > 1e-3, "parameter " << p.key() << " did not move");
  }
  // GPipe keeps every micro-batch's graph; 1F1B at most num_stages - stage_index.
  int want_live = one_f_one_b ? std::min(world - rank, n_microbatches) : n_microbatches;
  DIST_CHECK(schedule->max_live_activations() == want_live,
             "live activations " << schedule->max_live_activations() << ", expected " << want_live);
}

}  // namespace

DIST_SCENARIO(gpipe_matches_full_batch) { train_and_compare(rank, world, false, 4); }
DIST_SCENARIO(one_f_one_b_matches_full_batch) { train_and_compare(rank, world, true, 4); }
DIST_SCENARIO(one_f_one_b_more_stages_than_microbatches) { train_and_compare(rank, world, true, 2); }

TEST(DistributedPipeline, GPipeTwoStagesMatchesFullBatchTraining) {
  dist_test::expect_all_ok("gpipe_matches_full_batch", 2, 120);
}
TEST(DistributedPipeline, GPipeThreeStagesMatchesFullBatchTraining) {
  dist_test::expect_all_ok("gpipe_matches_full_batch", 3, 120);
}
TEST(DistributedPipeline, OneFOneBTwoStagesMatchesFullBatchTraining) {
  dist_test::expect_all_ok("one_f_one_b_matches_full_batch", 2, 120);
}
TEST(DistributedPipeline, OneFOneBThreeStagesMatchesFullBatchTraining) {
  dist_test::expect_all_ok("one_f_one_b_matches_full_batch", 3, 120);
}
TEST(DistributedPipeline, OneFOneBFewerMicrobatchesThanStages) {
  dist_test::expect_all_ok("one_f_one_b_more_stages_than_microbatches", 3, 120);
}
TEST(DistributedPipeline, SingleStageIsPlainTraining) { dist_test::expect_all_ok("gpipe_matches_full_batch", 1, 60); }

TEST(DistributedPipeline, StageLayerRanges) {
  EXPECT_EQ(pp::stage_layer_range(7, {3}, 0), std::make_pair(int64_t{0}, int64_t{3}));
  EXPECT_EQ(pp::stage_layer_range(7, {3}, 1), std::make_pair(int64_t{3}, int64_t{7}));
  EXPECT_EQ(pp::stage_layer_range(7, {2, 5}, 1), std::make_pair(int64_t{2}, int64_t{5}));
  EXPECT_THROW(pp::stage_layer_range(7, {3, 3}, 0), Error);  // not increasing
  EXPECT_THROW(pp::stage_layer_range(7, {7}, 0), Error);     // empty last stage
  EXPECT_THROW(pp::stage_layer_range(7, {3}, 2), Error);     // only 2 stages
  // build_stage names the layers by their index in the whole model.
  auto stage = pp::build_stage(mlp, {2, 5}, 2);
  auto names = stage->named_parameters();
  EXPECT_EQ(stage->size(), 2u);
  EXPECT_TRUE(names.contains("6.weight"));
  EXPECT_TRUE(names.contains("6.bias"));
  EXPECT_THROW(pp::build_stage(mlp, {2, 9}, 0), Error);
}

// Bad arguments raise tensor::Error with the numbers in the message.
DIST_SCENARIO(pipeline_argument_errors) {
  auto pg = init(rank, world);
  nn::Sequential stage_module = pp::build_stage(mlp, {3}, rank);
  auto expect_error = [&](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
    } catch (const Error& e) {
      DIST_CHECK(std::string(e.what()).find(needle) != std::string::npos, "message '" << e.what() << "' lacks '" << needle << "'");
      return;
    }
    DIST_CHECK(false, "no error (expected one mentioning '" << needle << "')");
  };
  expect_error([&] { pp::PipelineStage(stage_module, rank, 3, pg); }, "num_stages is 3 but the process group has 2");
  expect_error([&] { pp::PipelineStage(stage_module, 1 - rank, 2, pg); }, "must equal this process's rank");
  pp::PipelineStage stage(stage_module, rank, 2, pg);
  expect_error([&] { pp::ScheduleGPipe(stage, 0, mse); }, "n_microbatches must be at least 1");
  pp::ScheduleGPipe sched(stage, 4, mse);
  if (rank == 0) {
    expect_error([&] { sched.step(randn({10, 6})); }, "batch of 10 rows (shape [10, 6]) does not split into 4");
    expect_error([&] { sched.step(); }, "stage 0 must be given the input");
  } else {
    expect_error([&] { sched.step(Tensor(), randn({6, 3})); }, "batch of 6 rows (shape [6, 3]) does not split into 4");
    expect_error([&] { sched.step(randn({8, 6}), randn({8, 3})); }, "only stage 0 takes an input");
  }
  pg->barrier()->wait();
}
TEST(DistributedPipeline, ArgumentErrorsNameTheProblem) { dist_test::expect_all_ok("pipeline_argument_errors", 2, 60); }

// The ranks disagree on the micro-batch count: stage 1 reads it in stage 0's header and
// raises naming both counts; stage 0, left waiting for gradients, gets the timeout error.
DIST_SCENARIO(pipeline_microbatch_mismatch) {
  auto pg = init(rank, world, milliseconds(2000));
  nn::Sequential stage_module = pp::build_stage(mlp, {3}, rank);
  pp::PipelineStage stage(stage_module, rank, 2, pg);
  pp::ScheduleGPipe sched(stage, rank == 0 ? 2 : 4, mse);
  try {
    if (rank == 0) sched.step(randn({8, 6}));
    else sched.step(Tensor(), randn({8, 3}));
  } catch (const Error& e) {
    std::string msg = e.what();
    if (rank == 1)
      DIST_CHECK(msg.find("stage 1 runs 4 micro-batches but stage 0 runs 2") != std::string::npos, msg);
    else
      DIST_CHECK(msg.find("recv") != std::string::npos, msg);
    return;
  }
  DIST_CHECK(false, "rank " << rank << ": no error");
}
TEST(DistributedPipeline, MicrobatchCountMismatchRaises) {
  dist_test::expect_all_ok("pipeline_microbatch_mismatch", 2, 60);
}

// The last stage dies after one good step: the others' next step raises (no hang).
DIST_SCENARIO(pipeline_dead_peer) {
  auto pg = init(rank, world, milliseconds(2000));
  nn::Sequential stage_module = pp::build_stage(mlp, {2, 5}, rank);
  pp::PipelineStage stage(stage_module, rank, world, pg);
  pp::Schedule1F1B sched(stage, 2, mse);
  auto run = [&] {
    if (rank == 0) sched.step(randn({4, 6}));
    else if (rank == world - 1) sched.step(Tensor(), randn({4, 3}));
    else sched.step();
  };
  run();
  pg->barrier()->wait();
  if (rank == world - 1) ::_exit(0);
  try {
    run();
  } catch (const Error& e) {
    std::string msg = e.what();
    // The waited Work's error ("ProcessGroupGloo: recv ... failed") or a send posted to the
    // closed pair ("Schedule1F1B: stage 1: send of ... failed").
    DIST_CHECK(msg.find("ProcessGroupGloo") != std::string::npos || msg.find("Schedule1F1B: stage") != std::string::npos,
               msg);
    return;
  }
  DIST_CHECK(false, "rank " << rank << ": no error after the last stage died");
}
TEST(DistributedPipeline, DeadPeerRaisesInsteadOfHanging) { dist_test::expect_all_ok("pipeline_dead_peer", 3, 60); }
