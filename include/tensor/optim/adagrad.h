// optim::Adagrad with lr decay, weight decay and an initial accumulator (torch::optim::Adagrad).
#pragma once

#include "tensor/optim/optimizer.h"

namespace tensor::optim {

struct TENSOR_API AdagradOptions : public OptimizerCloneableOptions<AdagradOptions> {
  AdagradOptions(double lr = 1e-2);
  double get_lr() const override;
  void set_lr(double lr) override;
  std::vector<std::pair<std::string, double>> named_values() const override;
  void set_named_value(const std::string& name, double value) override;
  TENSOR_ARG(double, lr) = 1e-2;
  /// The step size at step t is lr / (1 + (t - 1) lr_decay).
  TENSOR_ARG(double, lr_decay) = 0;
  /// L2 penalty added to the gradient.
  TENSOR_ARG(double, weight_decay) = 0;
  /// The value every element of the sum of squared gradients starts at.
  TENSOR_ARG(double, initial_accumulator_value) = 0;
  /// Added to the denominator's square root.
  TENSOR_ARG(double, eps) = 1e-10;
};

/// Per-parameter state of Adagrad: the step count and the running sum of squared gradients.
struct TENSOR_API AdagradParamState : public OptimizerCloneableParamState<AdagradParamState> {
  NamedTensors named_tensors() const override;
  void set_named_tensor(const std::string& name, const Tensor& value) override;
  TENSOR_ARG(Tensor, sum);
  TENSOR_ARG(int64_t, step) = 0;
};

/// With g the gradient (+ wd * p) at step t: sum += g^2, p -= clr g / (sqrt(sum) + eps), where
/// clr = lr / (1 + (t - 1) lr_decay).
class TENSOR_API Adagrad : public Optimizer {
 public:
  /// tensor::Error ("Adagrad: Invalid lr_decay value: -1", ...) for a negative lr, lr_decay,
  /// weight_decay, initial_accumulator_value or eps, as libtorch. As libtorch, every parameter's
  /// state (sum filled with its group's initial_accumulator_value) exists from construction on.
  Adagrad(std::vector<OptimizerParamGroup> param_groups, AdagradOptions defaults = {});
  Adagrad(std::vector<Tensor> params, AdagradOptions defaults = {});
  /// One update of every parameter with a gradient; `closure`, if given, is called first
  /// (with grad enabled) and its loss returned.
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tensor::optim
