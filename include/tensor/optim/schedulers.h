// Learning-rate schedulers with libtorch C++'s timing: LRScheduler, StepLR and
// ReduceLROnPlateauScheduler as torch::optim has them, and CosineAnnealingLR on the same
// LRScheduler convention (libtorch C++ has no cosine scheduler).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/optim/optimizer.h"

namespace tensor::optim {

/// Sets each group's lr from a step counter, as torch::optim::LRScheduler: step() evaluates
/// get_lrs() at the current count, writes the lrs, and only then counts the step. The first
/// step() therefore computes the schedule at count 0, and after n step() calls the groups hold
/// the schedule's lrs for count n - 1: one step later than torch.optim.lr_scheduler in Python
/// (Note [Scheduler timing] in Schedulers.cpp). Call it after optimizer.step().
class TENSOR_API LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler();
  void step();
  /// The lrs the last step() set (the groups' lrs at construction before any), one per group.
  const std::vector<double>& get_last_lr() const noexcept { return last_lrs_; }
  /// The number of step() calls so far: libtorch's step_count_, and the value Python's
  /// last_epoch would have after as many calls. The lrs now set are the schedule's at count
  /// last_epoch() - 1 (at 0 before the first step()), where Python's are at last_epoch().
  int64_t last_epoch() const noexcept { return step_count_; }

 protected:
  /// The lrs for the count step_count_, which step() advances only after this returns; one
  /// per group.
  virtual std::vector<double> get_lrs() = 0;
  /// The groups' lrs now.
  std::vector<double> get_current_lrs() const;

  Optimizer& optimizer_;
  /// The groups' lrs at construction.
  std::vector<double> base_lrs_;
  /// step() calls completed (libtorch's name; it is unsigned there).
  int64_t step_count_ = 0;

 private:
  std::vector<double> last_lrs_;
};

/// Multiplies the lr by gamma when step() finds the count at a positive multiple of step_size,
/// as libtorch's StepLR: after n step() calls the lr is base * gamma^((n - 1) / step_size)
/// (base before the first), so with step_size 5 and a step() after every optimizer step the
/// 7th optimizer step is the first to use base * gamma. Recursive: an lr set from outside is
/// kept and decayed from there.
class TENSOR_API StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, unsigned step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lrs() override;

 private:
  unsigned step_size_;
  double gamma_;
};

/// Cosine decay from the base lr to eta_min over T_max counts (and back up over the next T_max,
/// as PyTorch). On the LRScheduler timing, after n step() calls the lr is
/// eta_min + (base - eta_min) (1 + cos(pi (n - 1) / T_max)) / 2 when nothing else changes it,
/// reaching eta_min after T_max + 1 calls; computed with PyTorch's recursive form so that an lr
/// set from outside carries.
class TENSOR_API CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> get_lrs() override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/// Multiplies the lrs by factor when the metric passed to step() has not improved for more than
/// `patience` calls, then waits `cooldown` calls before counting again; an lr never goes below
/// its group's min_lr, and a change smaller than eps is skipped. libtorch's
/// torch::optim::ReduceLROnPlateauScheduler (2.x): the same signature, float metric and
/// factor, and timing (the lr changes inside the step() that sees the (patience + 1)th bad
/// metric). Two places differ where libtorch 2.x is evidently wrong and Python right (Note
/// [ReduceLROnPlateau in max mode]): in max mode any finite first metric counts as an
/// improvement, and the abs threshold means best + threshold.
class TENSOR_API ReduceLROnPlateauScheduler {
 public:
  enum SchedulerMode { min, max };
  enum ThresholdMode { rel, abs };
  ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode = min, float factor = 0.1, int patience = 10,
                             double threshold = 1e-4, ThresholdMode threshold_mode = rel, int cooldown = 0,
                             const std::vector<float>& min_lr = std::vector<float>(), double eps = 1e-8,
                             bool verbose = false);
  virtual ~ReduceLROnPlateauScheduler();

  /// Records one epoch's metric (a loss in min mode, an accuracy in max mode) and reduces the
  /// lrs if it is the (patience + 1)th in a row without improvement.
  void step(float metric);

 private:
  void reset();
  void reduce_lr(int epoch);
  bool in_cooldown() const;
  bool is_better(float a) const;

  Optimizer& optimizer_;
  SchedulerMode mode_;
  float mode_worse_;
  float factor_;
  int patience_;
  double threshold_;
  ThresholdMode threshold_mode_;
  int cooldown_;
  int cooldown_counter_ = 0;
  std::vector<float> min_lrs_;
  double eps_;
  float best_ = 0;
  bool verbose_;
  int last_epoch_ = 0;
  int num_bad_epochs_ = 0;
};

}  // namespace tensor::optim
