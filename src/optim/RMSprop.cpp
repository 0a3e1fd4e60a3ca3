// optim::RMSprop, following libtorch 1.13's torch::optim::RMSprop (and torch.optim.RMSprop's
// single-tensor form) operation by operation.
#include "tensor/optim/rmsprop.h"

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::optim {

RMSpropOptions::RMSpropOptions(double lr) : lr_(lr) {}
double RMSpropOptions::get_lr() const { return lr_; }
void RMSpropOptions::set_lr(double lr) { lr_ = lr; }
std::vector<std::pair<std::string, double>> RMSpropOptions::named_values() const {
  return {{"lr", lr_},
          {"alpha", alpha_},
          {"eps", eps_},
          {"weight_decay", weight_decay_},
          {"momentum", momentum_},
          {"centered", centered_ ? 1.0 : 0.0}};
}
void RMSpropOptions::set_named_value(const std::string& name, double value) {
  if (name == "lr")
    lr_ = value;
  else if (name == "alpha")
    alpha_ = value;
  else if (name == "eps")
    eps_ = value;
  else if (name == "weight_decay")
    weight_decay_ = value;
  else if (name == "momentum")
    momentum_ = value;
  else if (name == "centered")
    centered_ = value != 0;
  else
    TENSOR_ERROR("RMSpropOptions: unknown hyperparameter '{}'", name);
}

NamedTensors RMSpropParamState::named_tensors() const {
  NamedTensors out;
  out.emplace_back("step", tensor::scalar_tensor(step_, kInt64));
  if (square_avg_.defined()) out.emplace_back("square_avg", square_avg_);
  if (momentum_buffer_.defined()) out.emplace_back("momentum_buffer", momentum_buffer_);
  if (grad_avg_.defined()) out.emplace_back("grad_avg", grad_avg_);
  return out;
}

void RMSpropParamState::set_named_tensor(const std::string& name, const Tensor& value) {
  if (name == "step") {
    TENSOR_CHECK(value.numel() == 1, "RMSpropParamState: 'step' must be a one-element tensor, got {}",
                 value.describe());
    step_ = value.item<int64_t>();
  } else if (name == "square_avg") {
    square_avg_ = value;
  } else if (name == "momentum_buffer") {
    momentum_buffer_ = value;
  } else if (name == "grad_avg") {
    grad_avg_ = value;
  } else {
    TENSOR_ERROR("RMSpropParamState: unknown state '{}'", name);
  }
}

namespace {
// libtorch's checks and messages, prefixed with the optimizer's name.
void check_options(const RMSpropOptions& o) {
  TENSOR_CHECK(o.lr() >= 0, "RMSprop: Invalid learning rate: {}", o.lr());
  TENSOR_CHECK(o.eps() >= 0, "RMSprop: Invalid epsilon value: {}", o.eps());
  TENSOR_CHECK(o.momentum() >= 0, "RMSprop: Invalid momentum value: {}", o.momentum());
  TENSOR_CHECK(o.weight_decay() >= 0, "RMSprop: Invalid weight_decay value: {}", o.weight_decay());
  TENSOR_CHECK(o.alpha() >= 0, "RMSprop: Invalid alpha value: {}", o.alpha());
}

// One update of p. libtorch's addcmul_(a, b, v) is self + (v a) b and addcdiv_(a, b, v) is
// self + (v a) / b; the products below are formed in that order, so that the results match
// libtorch's to the last bit where its kernels do not contract into FMAs.
void rmsprop_update(const Tensor& p, RMSpropParamState& st, const RMSpropOptions& o) {
  const double alpha = o.alpha();
  Tensor grad = p.grad();
  if (!st.square_avg().defined()) st.square_avg(tensor::zeros_like(p));
  // Options may change between steps (a group's momentum set later): make what is missing.
  if (o.momentum() > 0 && !st.momentum_buffer().defined()) st.momentum_buffer(tensor::zeros_like(p));
  if (o.centered() && !st.grad_avg().defined()) st.grad_avg(tensor::zeros_like(p));
  st.step(st.step() + 1);
  if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
  const Tensor& square_avg = st.square_avg();
  square_avg.mul_(alpha).add_(grad.mul(1 - alpha).mul_(grad));
  Tensor avg;
  if (o.centered()) {
    const Tensor& grad_avg = st.grad_avg();
    grad_avg.mul_(alpha).add_(grad, 1 - alpha);
    avg = square_avg.sub(grad_avg.mul(grad_avg)).sqrt_().add_(o.eps());
  } else {
    avg = square_avg.sqrt().add_(o.eps());
  }
  if (o.momentum() > 0) {
    const Tensor& buf = st.momentum_buffer();
    buf.mul_(o.momentum()).add_(grad.div(avg));
    p.add_(buf, -o.lr());
  } else {
    p.add_(grad.mul(-o.lr()).div_(avg));
  }
}
}  // namespace

RMSprop::RMSprop(std::vector<OptimizerParamGroup> param_groups, RMSpropOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<RMSpropOptions>(defaults)) {
  check_options(defaults);
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions defaults)
    : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

std::unique_ptr<OptimizerParamState> RMSprop::make_param_state() const { return std::make_unique<RMSpropParamState>(); }

Tensor RMSprop::step(LossClosure closure) {
  return run_step(closure, [&] {
    for (auto& group : param_groups_) {
      const auto& o = static_cast<const RMSpropOptions&>(group.options());
      check_options(o);
      for (Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        auto& slot = state_[p.unsafeGetTensorImpl()];
        if (!slot) slot = std::make_unique<RMSpropParamState>();
        rmsprop_update(p, static_cast<RMSpropParamState&>(*slot), o);
      }
    }
  });
}

}  // namespace tensor::optim
