// optim::SGD with momentum, dampening, Nesterov, weight decay and maximize (torch.optim.SGD).
#pragma once

#include "tensor/optim/optimizer.h"

namespace tensor::optim {

struct TENSOR_API SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr);
  double get_lr() const override;
  void set_lr(double lr) override;
  std::vector<std::pair<std::string, double>> named_values() const override;
  void set_named_value(const std::string& name, double value) override;
  TENSOR_ARG(double, lr);
  TENSOR_ARG(double, momentum) = 0;
  TENSOR_ARG(double, dampening) = 0;
  /// L2 penalty added to the gradient.
  TENSOR_ARG(double, weight_decay) = 0;
  TENSOR_ARG(bool, nesterov) = false;
  /// Ascend instead of descend.
  TENSOR_ARG(bool, maximize) = false;
};

struct TENSOR_API SGDParamState : public OptimizerCloneableParamState<SGDParamState> {
  NamedTensors named_tensors() const override;
  void set_named_tensor(const std::string& name, const Tensor& value) override;
  TENSOR_ARG(Tensor, momentum_buffer);
};

/// p -= lr * d, where d = g (+ wd * p), and with momentum m: buf = m * buf + (1 - dampening) * d
/// (buf = d on the first step), d = buf, or d + m * buf with Nesterov.
class TENSOR_API SGD : public Optimizer {
 public:
  SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults);
  SGD(std::vector<Tensor> params, SGDOptions defaults);
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tensor::optim
