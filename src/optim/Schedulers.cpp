// lr schedulers with libtorch C++'s timing (torch::optim::LRScheduler, StepLR,
// ReduceLROnPlateauScheduler), and CosineAnnealingLR on the same convention.
#include "tensor/optim/schedulers.h"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>

#include "src/core/Check.h"

namespace tensor::optim {

// Note [Scheduler timing]
// libtorch's C++ LRScheduler::step() is `lrs = get_lrs(); set lrs; ++step_count_`: a scheduler
// sees the count before the step it is taking. Python's step() advances last_epoch first and
// then computes, so the C++ schedulers run one step behind Python's: StepLR(5, g) stepped after
// every optimizer step leaves optimizer steps 1..6 at the base lr and decays from step 7 (Python:
// from step 6). We follow libtorch C++ so that ported C++ code trains the same, and put
// CosineAnnealingLR, which libtorch C++ lacks, on the same convention: each get_lrs() is
// Python's get_lr() for last_epoch = step_count_, i.e. after n steps the schedule at n - 1.
LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  base_lrs_ = get_current_lrs();
  last_lrs_ = base_lrs_;
}

LRScheduler::~LRScheduler() = default;

std::vector<double> LRScheduler::get_current_lrs() const {
  std::vector<double> lrs;
  for (const auto& g : optimizer_.param_groups()) lrs.push_back(g.options().get_lr());
  return lrs;
}

void LRScheduler::step() {
  std::vector<double> lrs = get_lrs();
  auto& groups = optimizer_.param_groups();
  TENSOR_CHECK(lrs.size() == groups.size(),
               "LRScheduler::step: the scheduler computed {} learning rates for {} parameter groups", lrs.size(),
               groups.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lrs_ = lrs;
  ++step_count_;
}

StepLR::StepLR(Optimizer& optimizer, unsigned step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  TENSOR_CHECK(step_size > 0, "StepLR: step_size must be positive, got {}", step_size);
}

std::vector<double> StepLR::get_lrs() {
  // libtorch's StepLR::get_lrs, step_count_ not yet advanced.
  std::vector<double> lrs = get_current_lrs();
  if (step_count_ == 0 || step_count_ % static_cast<int64_t>(step_size_) != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  TENSOR_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive, got {}", T_max);
}

std::vector<double> CosineAnnealingLR::get_lrs() {
  // torch.optim.lr_scheduler.CosineAnnealingLR.get_lr with last_epoch = step_count_ (Note
  // [Scheduler timing]), term by term.
  std::vector<double> lrs = get_current_lrs();
  TENSOR_CHECK(lrs.size() == base_lrs_.size(),
               "CosineAnnealingLR::step: the optimizer has {} parameter groups but had {} when the scheduler was made "
               "(groups added later have no base lr)",
               lrs.size(), base_lrs_.size());
  const int64_t e = step_count_;
  const double T = static_cast<double>(T_max_);
  if (e == 0) return lrs;
  // C++'s % keeps the sign, Python's does not, but both are 0 exactly for the multiples.
  if ((e - 1 - T_max_) % (2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i) lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(M_PI / T)) / 2;
    return lrs;
  }
  const double ed = static_cast<double>(e);
  for (double& lr : lrs)
    lr = (1 + std::cos(M_PI * ed / T)) / (1 + std::cos(M_PI * (ed - 1) / T)) * (lr - eta_min_) + eta_min_;
  return lrs;
}

// Note [ReduceLROnPlateau in max mode]
// ReduceLROnPlateauScheduler follows libtorch 2.x's reduce_on_plateau_scheduler.cpp (which is
// Python's ReduceLROnPlateau in float) except in two places where libtorch is evidently wrong:
// - max mode starts from best = numeric_limits<float>::min(), the smallest *positive* float, so
//   metrics <= 0 never improve on it and every such step counts as bad; we start from lowest()
//   (the mirror of min mode's max(); Python uses -inf), so any finite first metric improves.
// - max mode with ThresholdMode::abs tests `a > best * threshold` (the lr is then hardly ever
//   reduced); Python and the documented meaning are `a > best + threshold`, which we use.
// Both show in libtorch 2.15 as built; tests/test_optim.cpp has the cases.
ReduceLROnPlateauScheduler::ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode, float factor,
                                                       int patience, double threshold, ThresholdMode threshold_mode,
                                                       int cooldown, const std::vector<float>& min_lr, double eps,
                                                       bool verbose)
    : optimizer_(optimizer),
      mode_(mode),
      mode_worse_(mode == min ? std::numeric_limits<float>::max() : std::numeric_limits<float>::lowest()),
      factor_(factor),
      patience_(patience),
      threshold_(threshold),
      threshold_mode_(threshold_mode),
      cooldown_(cooldown),
      eps_(eps),
      verbose_(verbose) {
  const size_t n = optimizer.param_groups().size();
  TENSOR_CHECK(min_lr.empty() || min_lr.size() == n,
               "ReduceLROnPlateauScheduler: {} min_lr values for {} parameter groups (give one per group, or none for 0)",
               min_lr.size(), n);
  min_lrs_ = min_lr.empty() ? std::vector<float>(n) : min_lr;
  TENSOR_CHECK(factor < 1.0, "ReduceLROnPlateauScheduler: factor should be < 1.0, got {}", factor);
  reset();
}

ReduceLROnPlateauScheduler::~ReduceLROnPlateauScheduler() = default;

void ReduceLROnPlateauScheduler::step(float metric) {
  last_epoch_++;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_++;
  }
  if (in_cooldown()) {
    cooldown_counter_--;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > patience_) {
    reduce_lr(last_epoch_);
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
}

void ReduceLROnPlateauScheduler::reduce_lr(int epoch) {
  auto& groups = optimizer_.param_groups();
  // libtorch indexes min_lrs past its end here; a group added later has no min_lr.
  TENSOR_CHECK(groups.size() == min_lrs_.size(),
               "ReduceLROnPlateauScheduler::step: the optimizer has {} parameter groups but had {} when the scheduler "
               "was made (groups added later have no min_lr)",
               groups.size(), min_lrs_.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    const double old_lr = groups[i].options().get_lr();
    // factor and min_lr are floats as in libtorch: 0.1 here is 0.100000001490116..., and the
    // product is formed in double.
    const double new_lr = std::fmax(old_lr * factor_, min_lrs_[i]);
    if (old_lr - new_lr > eps_) {
      groups[i].options().set_lr(new_lr);
      if (verbose_) {
        // libtorch's line; unlike libtorch, std::cout's precision is put back afterwards.
        const std::streamsize precision = std::cout.precision();
        std::cout << std::setprecision(4) << "Epoch " << epoch << ": reducing learning rate of group " << i << " to "
                  << new_lr << '\n'
                  << std::setprecision(precision);
      }
    }
  }
}

void ReduceLROnPlateauScheduler::reset() {
  cooldown_counter_ = 0;
  num_bad_epochs_ = 0;
  last_epoch_ = 0;
  best_ = mode_worse_;
}

bool ReduceLROnPlateauScheduler::in_cooldown() const { return cooldown_counter_ > 0; }

bool ReduceLROnPlateauScheduler::is_better(float a) const {
  // The products are in double (best_ is a float, threshold a double), as in libtorch.
  if (mode_ == min && threshold_mode_ == rel) return a < best_ * (1.0 - threshold_);
  if (mode_ == min && threshold_mode_ == abs) return a < best_ - threshold_;
  if (mode_ == max && threshold_mode_ == rel) return a > best_ * (1.0 + threshold_);
  return a > best_ + threshold_;  // Note [ReduceLROnPlateau in max mode]
}

}  // namespace tensor::optim
