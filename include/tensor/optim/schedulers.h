// Learning-rate schedulers: StepLR and CosineAnnealingLR (torch.optim.lr_scheduler semantics).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/optim/optimizer.h"

namespace tensor::optim {

/// Sets each group's lr from an epoch counter. Construction records the groups' current lrs as
/// the base lrs (epoch 0); each step() advances the epoch and writes the new lrs. Call it after
/// optimizer.step(), once per epoch (or per iteration, as your schedule means).
class TENSOR_API LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler();
  void step();
  /// The lrs the last step (or construction) set, one per group.
  const std::vector<double>& get_last_lr() const noexcept { return last_lrs_; }
  /// Steps taken so far (PyTorch's last_epoch).
  int64_t last_epoch() const noexcept { return last_epoch_; }

 protected:
  /// The lrs for last_epoch() (already advanced), one per group.
  virtual std::vector<double> get_lrs() = 0;
  /// The groups' lrs now.
  std::vector<double> get_current_lrs() const;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = 0;

 private:
  std::vector<double> last_lrs_;
};

/// Multiplies the lr by gamma every step_size epochs: lr = base_lr * gamma^(epoch / step_size).
class TENSOR_API StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, unsigned step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lrs() override;

 private:
  unsigned step_size_;
  double gamma_;
};

/// Cosine decay from the base lr to eta_min over T_max epochs (and back up over the next T_max,
/// as PyTorch): lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2 when nothing
/// else changes the lr; computed with PyTorch's recursive form so that outside changes carry.
class TENSOR_API CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> get_lrs() override;

 private:
  int64_t T_max_;
  double eta_min_;
};

}  // namespace tensor::optim
