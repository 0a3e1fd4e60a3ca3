// optim::Adam and optim::AdamW, following torch.optim's single-tensor form (PyTorch 1.13, the
// version of the libtorch these are compared with) operation by operation.
#include "tensor/optim/adam.h"

#include <cmath>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::optim {

namespace {

template <typename O>
std::vector<std::pair<std::string, double>> adam_values(const O& o) {
  return {{"lr", o.lr()},
          {"betas.0", std::get<0>(o.betas())},
          {"betas.1", std::get<1>(o.betas())},
          {"eps", o.eps()},
          {"weight_decay", o.weight_decay()},
          {"amsgrad", o.amsgrad() ? 1.0 : 0.0},
          {"maximize", o.maximize() ? 1.0 : 0.0}};
}

template <typename O>
void set_adam_value(O& o, const std::string& name, double value, const char* who) {
  if (name == "lr") o.lr(value);
  else if (name == "betas.0") std::get<0>(o.betas()) = value;
  else if (name == "betas.1") std::get<1>(o.betas()) = value;
  else if (name == "eps") o.eps(value);
  else if (name == "weight_decay") o.weight_decay(value);
  else if (name == "amsgrad") o.amsgrad(value != 0);
  else if (name == "maximize") o.maximize(value != 0);
  else TENSOR_ERROR("{}: unknown hyperparameter '{}'", who, name);
}

template <typename O>
void check_options(const O& o, const char* who) {
  const auto [beta1, beta2] = o.betas();
  TENSOR_CHECK(o.lr() >= 0, "{}: invalid learning rate {}", who, o.lr());
  TENSOR_CHECK(o.eps() >= 0, "{}: invalid epsilon value {}", who, o.eps());
  TENSOR_CHECK(beta1 >= 0 && beta1 < 1, "{}: invalid beta parameter at index 0: {}", who, beta1);
  TENSOR_CHECK(beta2 >= 0 && beta2 < 1, "{}: invalid beta parameter at index 1: {}", who, beta2);
  TENSOR_CHECK(o.weight_decay() >= 0, "{}: invalid weight_decay value {}", who, o.weight_decay());
}

// One Adam(W) update of p (torch.optim.adam._single_tensor_adam / adamw._single_tensor_adamw).
template <typename O>
void adam_update(Tensor& p, AdamParamState& st, const O& o, bool decoupled) {
  const double lr = o.lr(), eps = o.eps(), wd = o.weight_decay();
  const auto [beta1, beta2] = o.betas();
  if (!st.exp_avg().defined()) {
    st.exp_avg(tensor::zeros_like(p));
    st.exp_avg_sq(tensor::zeros_like(p));
    if (o.amsgrad()) st.max_exp_avg_sq(tensor::zeros_like(p));
  }
  if (o.amsgrad() && !st.max_exp_avg_sq().defined()) st.max_exp_avg_sq(tensor::zeros_like(p));
  st.step(st.step() + 1);
  const double t = static_cast<double>(st.step());
  const double bias_correction1 = 1 - std::pow(beta1, t);
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, t));
  const double step_size = lr / bias_correction1;
  tensor::_fused_adam_(p, p.grad(), st.exp_avg(), st.exp_avg_sq(), o.amsgrad() ? st.max_exp_avg_sq() : Tensor(), lr,
                       beta1, beta2, eps, wd, step_size, bias_correction2_sqrt, o.amsgrad(), o.maximize(), decoupled);
}

}  // namespace

AdamOptions::AdamOptions(double lr) : lr_(lr) {}
double AdamOptions::get_lr() const { return lr_; }
void AdamOptions::set_lr(double lr) { lr_ = lr; }
std::vector<std::pair<std::string, double>> AdamOptions::named_values() const { return adam_values(*this); }
void AdamOptions::set_named_value(const std::string& name, double value) {
  set_adam_value(*this, name, value, "AdamOptions");
}

AdamWOptions::AdamWOptions(double lr) : lr_(lr) {}
double AdamWOptions::get_lr() const { return lr_; }
void AdamWOptions::set_lr(double lr) { lr_ = lr; }
std::vector<std::pair<std::string, double>> AdamWOptions::named_values() const { return adam_values(*this); }
void AdamWOptions::set_named_value(const std::string& name, double value) {
  set_adam_value(*this, name, value, "AdamWOptions");
}

NamedTensors AdamParamState::named_tensors() const {
  NamedTensors out;
  out.emplace_back("step", tensor::scalar_tensor(step_, kInt64));
  if (exp_avg_.defined()) out.emplace_back("exp_avg", exp_avg_);
  if (exp_avg_sq_.defined()) out.emplace_back("exp_avg_sq", exp_avg_sq_);
  if (max_exp_avg_sq_.defined()) out.emplace_back("max_exp_avg_sq", max_exp_avg_sq_);
  return out;
}

void AdamParamState::set_named_tensor(const std::string& name, const Tensor& value) {
  if (name == "step") {
    TENSOR_CHECK(value.numel() == 1, "AdamParamState: 'step' must be a one-element tensor, got {}", value.describe());
    step_ = static_cast<int64_t>(value.item<double>());
  } else if (name == "exp_avg") {
    exp_avg_ = value;
  } else if (name == "exp_avg_sq") {
    exp_avg_sq_ = value;
  } else if (name == "max_exp_avg_sq") {
    max_exp_avg_sq_ = value;
  } else {
    TENSOR_ERROR("AdamParamState: unknown state '{}'", name);
  }
}

Adam::Adam(std::vector<OptimizerParamGroup> param_groups, AdamOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdamOptions>(defaults)) {
  check_options(defaults, "Adam");
}
Adam::Adam(std::vector<Tensor> params, AdamOptions defaults)
    : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

std::unique_ptr<OptimizerParamState> Adam::make_param_state() const { return std::make_unique<AdamParamState>(); }

Tensor Adam::step(LossClosure closure) {
  return run_step(closure, [&] {
    for (auto& group : param_groups_) {
      const auto& o = static_cast<const AdamOptions&>(group.options());
      check_options(o, "Adam");
      for (Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        auto& slot = state_[p.unsafeGetTensorImpl()];
        if (!slot) slot = std::make_unique<AdamParamState>();
        adam_update(p, static_cast<AdamParamState&>(*slot), o, /*decoupled=*/false);
      }
    }
  });
}

AdamW::AdamW(std::vector<OptimizerParamGroup> param_groups, AdamWOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdamWOptions>(defaults)) {
  check_options(defaults, "AdamW");
}
AdamW::AdamW(std::vector<Tensor> params, AdamWOptions defaults)
    : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

std::unique_ptr<OptimizerParamState> AdamW::make_param_state() const { return std::make_unique<AdamParamState>(); }

Tensor AdamW::step(LossClosure closure) {
  return run_step(closure, [&] {
    for (auto& group : param_groups_) {
      const auto& o = static_cast<const AdamWOptions&>(group.options());
      check_options(o, "AdamW");
      for (Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        auto& slot = state_[p.unsafeGetTensorImpl()];
        if (!slot) slot = std::make_unique<AdamParamState>();
        adam_update(p, static_cast<AdamParamState&>(*slot), o, /*decoupled=*/true);
      }
    }
  });
}

}  // namespace tensor::optim
