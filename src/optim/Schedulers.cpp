// lr schedulers with libtorch C++'s timing (torch::optim::LRScheduler, StepLR), and
// CosineAnnealingLR on the same convention.
#include "tensor/optim/schedulers.h"

#include <cmath>

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

}  // namespace tensor::optim
