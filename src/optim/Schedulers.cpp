// lr schedulers with torch.optim.lr_scheduler's epoch semantics (PyTorch 1.13).
#include "tensor/optim/schedulers.h"

#include <cmath>

#include "src/core/Check.h"

namespace tensor::optim {

// Note [Scheduler epochs]
// PyTorch's schedulers count epochs from construction (epoch 0, the lr as given) and step() moves
// to the next epoch and sets its lr; after n steps StepLR's lr is base * gamma^(n / step_size).
// libtorch 1.13's C++ StepLR reads its counter before incrementing it and so decays one step
// later than the Python class; this follows the Python semantics, which the docs describe.
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
  ++last_epoch_;
  std::vector<double> lrs = get_lrs();
  auto& groups = optimizer_.param_groups();
  TENSOR_CHECK(lrs.size() == groups.size(),
               "LRScheduler::step: the scheduler computed {} learning rates for {} parameter groups (groups added "
               "after the scheduler was made are not supported)",
               lrs.size(), groups.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lrs_ = lrs;
}

StepLR::StepLR(Optimizer& optimizer, unsigned step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  TENSOR_CHECK(step_size > 0, "StepLR: step_size must be positive, got {}", step_size);
}

std::vector<double> StepLR::get_lrs() {
  std::vector<double> lrs = get_current_lrs();
  if (last_epoch_ == 0 || last_epoch_ % static_cast<int64_t>(step_size_) != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  TENSOR_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive, got {}", T_max);
}

std::vector<double> CosineAnnealingLR::get_lrs() {
  // torch.optim.lr_scheduler.CosineAnnealingLR.get_lr, term by term.
  std::vector<double> lrs = get_current_lrs();
  const double T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  if (last_epoch_ == 0) return lrs;
  if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(M_PI / T)) / 2;
    return lrs;
  }
  for (double& lr : lrs)
    lr = (1 + std::cos(M_PI * e / T)) / (1 + std::cos(M_PI * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
  return lrs;
}

}  // namespace tensor::optim
