// optim::RMSprop with momentum, centering and weight decay (torch::optim::RMSprop).
#pragma once

#include "tensor/optim/optimizer.h"

namespace tensor::optim {

struct TENSOR_API RMSpropOptions : public OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2);
  double get_lr() const override;
  void set_lr(double lr) override;
  std::vector<std::pair<std::string, double>> named_values() const override;
  void set_named_value(const std::string& name, double value) override;
  TENSOR_ARG(double, lr) = 1e-2;
  /// Smoothing constant of the running average of g^2.
  TENSOR_ARG(double, alpha) = 0.99;
  /// Added to the denominator's square root.
  TENSOR_ARG(double, eps) = 1e-8;
  /// L2 penalty added to the gradient.
  TENSOR_ARG(double, weight_decay) = 0;
  TENSOR_ARG(double, momentum) = 0;
  /// Normalize by the estimated variance (subtract the squared running mean of g).
  TENSOR_ARG(bool, centered) = false;
};

/// Per-parameter state of RMSprop; momentum_buffer and grad_avg only with momentum > 0 and
/// centered respectively.
struct TENSOR_API RMSpropParamState : public OptimizerCloneableParamState<RMSpropParamState> {
  NamedTensors named_tensors() const override;
  void set_named_tensor(const std::string& name, const Tensor& value) override;
  TENSOR_ARG(int64_t, step) = 0;
  TENSOR_ARG(Tensor, square_avg);
  TENSOR_ARG(Tensor, momentum_buffer) = {};
  TENSOR_ARG(Tensor, grad_avg) = {};
};

/// With g the gradient (+ wd * p): v = alpha v + (1 - alpha) g^2; avg = sqrt(v) + eps, or
/// sqrt(v - m^2) + eps with centered, where m = alpha m + (1 - alpha) g; then p -= lr g / avg, or
/// with momentum mu: buf = mu buf + g / avg, p -= lr buf.
class TENSOR_API RMSprop : public Optimizer {
 public:
  /// tensor::Error ("RMSprop: Invalid learning rate: -1", ...) for a negative lr, eps,
  /// momentum, weight_decay or alpha, as libtorch.
  RMSprop(std::vector<OptimizerParamGroup> param_groups, RMSpropOptions defaults = {});
  RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {});
  /// One update of every parameter with a gradient; `closure`, if given, is called first
  /// (with grad enabled) and its loss returned.
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tensor::optim
