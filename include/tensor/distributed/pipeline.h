// tensor::distributed::pipelining: pipeline parallelism, after torch.distributed.pipelining.
// A model is cut into consecutive stages, one per rank of a process group; a batch is split
// into micro-batches whose activations flow forward (send/recv to the next stage) and whose
// gradients flow backward. See docs/distributed.md, "Pipeline parallelism".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/distributed/process_group.h"
#include "tensor/export.h"
#include "tensor/nn/modules.h"

namespace tensor::distributed::pipelining {

/// The layer range [begin, end) of stage `stage_index` when a Sequential of `num_layers`
/// layers is cut before each index of `split_points` (strictly increasing, in (0, num_layers)):
/// split_points {2} makes stage 0 = layers [0, 2) and stage 1 = [2, num_layers).
TENSOR_API std::pair<int64_t, int64_t> stage_layer_range(int64_t num_layers, const std::vector<int64_t>& split_points,
                                                         int stage_index);

/// What build_stage() hands to the model-building function in place of a Sequential: it has
/// the Sequential's push_back, keeps the layers of one stage (named by their index in the
/// whole model, so state-dict names match the unsplit model's) and drops the others.
class TENSOR_API StageBuilder {
 public:
  StageBuilder(std::vector<int64_t> split_points, int stage_index);
  /// Appends the next layer of the model; kept when its index lies in this stage's range.
  template <typename M>
  void push_back(M&& module) {
    if (keeps(next_)) stage_->push_back(std::to_string(next_), std::forward<M>(module));
    ++next_;
  }
  /// The stage (raises tensor::Error when the split does not fit the layers pushed).
  nn::Sequential finish();

 private:
  bool keeps(int64_t index) const;
  std::vector<int64_t> split_points_;
  int stage_index_;
  int64_t next_ = 0;
  nn::Sequential stage_;
};

/// Builds only stage `stage_index` of a sequential model cut at `split_points`. `build` is
/// called once with a StageBuilder and pushes every layer of the whole model, in order, as it
/// would into an nn::Sequential (a generic lambda can build both):
///   auto layers = [](auto& seq) { seq.push_back(nn::Linear(8, 16)); seq.push_back(nn::ReLU()); ... };
///   nn::Sequential stage = pipelining::build_stage(layers, {2}, rank);
/// Every layer is constructed (and the others dropped at once), so under the same seed the
/// stage's parameters equal the corresponding layers of the unsplit model.
template <typename BuildFn>
nn::Sequential build_stage(BuildFn&& build, const std::vector<int64_t>& split_points, int stage_index) {
  StageBuilder builder(split_points, stage_index);
  build(builder);
  return builder.finish();
}

/// One stage of a pipeline: a module (forward Tensor -> Tensor) run by group rank
/// `stage_index` of `pg`, which must have `num_stages` ranks. Stage i receives its input from
/// rank i - 1 and sends its output to rank i + 1.
class TENSOR_API PipelineStage {
 public:
  /// A stage made of a Sequential (the usual case: a slice from build_stage()).
  PipelineStage(nn::Sequential stage_module, int stage_index, int num_stages, std::shared_ptr<ProcessGroup> pg);
  /// A stage made of any module and its forward function.
  PipelineStage(std::shared_ptr<nn::Module> module, std::function<Tensor(Tensor)> forward, int stage_index,
                int num_stages, std::shared_ptr<ProcessGroup> pg);

  int stage_index() const { return stage_index_; }
  int num_stages() const { return num_stages_; }
  bool is_first() const { return stage_index_ == 0; }
  bool is_last() const { return stage_index_ == num_stages_ - 1; }
  /// The stage's module (its parameters receive the gradients).
  std::shared_ptr<nn::Module> module() const { return module_; }
  /// Runs the stage's forward.
  Tensor forward(const Tensor& input) const { return forward_(input); }
  const std::shared_ptr<ProcessGroup>& group() const { return pg_; }

 private:
  std::shared_ptr<nn::Module> module_;
  std::function<Tensor(Tensor)> forward_;
  int stage_index_;
  int num_stages_;
  std::shared_ptr<ProcessGroup> pg_;
};

/// The loss of one micro-batch: loss_fn(output of the last stage, target chunk) -> scalar.
using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

/// A training schedule over micro-batches (the base of ScheduleGPipe and Schedule1F1B).
class TENSOR_API PipelineSchedule {
 public:
  PipelineSchedule(PipelineStage& stage, int n_microbatches, LossFn loss_fn);
  virtual ~PipelineSchedule();

  /// One forward and backward pass of a batch, on every stage at the same time. Stage 0 passes
  /// the batch as `input`; the last stage passes `target` and gets the loss of each micro-batch
  /// back (in order; empty elsewhere); middle stages pass nothing. Both are split along dim 0
  /// into n_microbatches equal chunks. Each microbatch's loss is scaled by 1 / n_microbatches
  /// before its backward, so with a mean-reduced loss the parameter gradients accumulated on
  /// every stage equal those of the whole batch in one pass. Gradients add to .grad() as in
  /// backward(): zero them before the step. A peer that dies or stalls raises the process
  /// group's tensor::Error (its timeout) instead of hanging.
  std::vector<Tensor> step(const Tensor& input = Tensor(), const Tensor& target = Tensor());

  int n_microbatches() const { return n_microbatches_; }
  /// The most micro-batches whose activations (autograd graphs) this stage held at once during
  /// the last step: n_microbatches for GPipe, at most num_stages - stage_index for 1F1B.
  int max_live_activations() const { return max_live_; }

 protected:
  /// One action of a stage's schedule: forward or backward of micro-batch `microbatch`.
  struct Action {
    bool forward;
    int microbatch;
  };
  /// The order this stage runs its forwards and backwards in.
  virtual std::vector<Action> actions() const = 0;
  virtual const char* name() const = 0;

  PipelineStage& stage_;
  int n_microbatches_;
  LossFn loss_fn_;
  int max_live_ = 0;
};

/// GPipe: every micro-batch forward, then every micro-batch backward.
class TENSOR_API ScheduleGPipe : public PipelineSchedule {
 public:
  ScheduleGPipe(PipelineStage& stage, int n_microbatches, LossFn loss_fn);

 protected:
  std::vector<Action> actions() const override;
  const char* name() const override { return "ScheduleGPipe"; }
};

/// 1F1B: after num_stages - stage_index - 1 warm-up forwards, one forward and one backward
/// alternate, so a stage holds at most num_stages - stage_index micro-batches' activations.
/// Same gradients as GPipe.
class TENSOR_API Schedule1F1B : public PipelineSchedule {
 public:
  Schedule1F1B(PipelineStage& stage, int n_microbatches, LossFn loss_fn);

 protected:
  std::vector<Action> actions() const override;
  const char* name() const override { return "Schedule1F1B"; }
};

}  // namespace tensor::distributed::pipelining
