// optim::Adam and optim::AdamW (torch.optim.Adam / AdamW, single-tensor form).
#pragma once

#include <tuple>

#include "tensor/optim/optimizer.h"

namespace tensor::optim {

/// (beta1, beta2): decay rates of the first and second moment estimates.
using betas_t = std::tuple<double, double>;

struct TENSOR_API AdamOptions : public OptimizerCloneableOptions<AdamOptions> {
  AdamOptions(double lr = 1e-3);
  double get_lr() const override;
  void set_lr(double lr) override;
  std::vector<std::pair<std::string, double>> named_values() const override;
  void set_named_value(const std::string& name, double value) override;
  TENSOR_ARG(double, lr);
  TENSOR_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TENSOR_ARG(double, eps) = 1e-8;
  /// L2 penalty added to the gradient.
  TENSOR_ARG(double, weight_decay) = 0;
  /// Use the running maximum of the second moment (AMSGrad).
  TENSOR_ARG(bool, amsgrad) = false;
  TENSOR_ARG(bool, maximize) = false;
};

struct TENSOR_API AdamWOptions : public OptimizerCloneableOptions<AdamWOptions> {
  AdamWOptions(double lr = 1e-3);
  double get_lr() const override;
  void set_lr(double lr) override;
  std::vector<std::pair<std::string, double>> named_values() const override;
  void set_named_value(const std::string& name, double value) override;
  TENSOR_ARG(double, lr);
  TENSOR_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TENSOR_ARG(double, eps) = 1e-8;
  /// Decoupled decay: p *= 1 - lr * weight_decay before the Adam update.
  TENSOR_ARG(double, weight_decay) = 1e-2;
  TENSOR_ARG(bool, amsgrad) = false;
  TENSOR_ARG(bool, maximize) = false;
};

/// Per-parameter state of Adam and AdamW.
struct TENSOR_API AdamParamState : public OptimizerCloneableParamState<AdamParamState> {
  NamedTensors named_tensors() const override;
  void set_named_tensor(const std::string& name, const Tensor& value) override;
  TENSOR_ARG(int64_t, step) = 0;
  TENSOR_ARG(Tensor, exp_avg);
  TENSOR_ARG(Tensor, exp_avg_sq);
  TENSOR_ARG(Tensor, max_exp_avg_sq) = Tensor();
};
using AdamWParamState = AdamParamState;

/// With t the step count: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
/// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps); weight decay adds wd * p to g.
class TENSOR_API Adam : public Optimizer {
 public:
  Adam(std::vector<OptimizerParamGroup> param_groups, AdamOptions defaults = {});
  Adam(std::vector<Tensor> params, AdamOptions defaults = {});
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

/// Adam with decoupled weight decay: p *= 1 - lr * wd, then the Adam update without L2.
class TENSOR_API AdamW : public Optimizer {
 public:
  AdamW(std::vector<OptimizerParamGroup> param_groups, AdamWOptions defaults = {});
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = {});
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tensor::optim
