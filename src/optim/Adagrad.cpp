// optim::Adagrad, following libtorch 1.13's torch::optim::Adagrad (dense gradients) operation by
// operation.
#include "tensor/optim/adagrad.h"

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::optim {

AdagradOptions::AdagradOptions(double lr) : lr_(lr) {}
double AdagradOptions::get_lr() const { return lr_; }
void AdagradOptions::set_lr(double lr) { lr_ = lr; }
std::vector<std::pair<std::string, double>> AdagradOptions::named_values() const {
  return {{"lr", lr_},
          {"lr_decay", lr_decay_},
          {"weight_decay", weight_decay_},
          {"initial_accumulator_value", initial_accumulator_value_},
          {"eps", eps_}};
}
void AdagradOptions::set_named_value(const std::string& name, double value) {
  if (name == "lr")
    lr_ = value;
  else if (name == "lr_decay")
    lr_decay_ = value;
  else if (name == "weight_decay")
    weight_decay_ = value;
  else if (name == "initial_accumulator_value")
    initial_accumulator_value_ = value;
  else if (name == "eps")
    eps_ = value;
  else
    TENSOR_ERROR("AdagradOptions: unknown hyperparameter '{}'", name);
}

NamedTensors AdagradParamState::named_tensors() const {
  NamedTensors out;
  out.emplace_back("step", tensor::scalar_tensor(step_, kInt64));
  if (sum_.defined()) out.emplace_back("sum", sum_);
  return out;
}

void AdagradParamState::set_named_tensor(const std::string& name, const Tensor& value) {
  if (name == "step") {
    TENSOR_CHECK(value.numel() == 1, "AdagradParamState: 'step' must be a one-element tensor, got {}",
                 value.describe());
    step_ = value.item<int64_t>();
  } else if (name == "sum") {
    sum_ = value;
  } else {
    TENSOR_ERROR("AdagradParamState: unknown state '{}'", name);
  }
}

namespace {
// libtorch's checks and messages, prefixed with the optimizer's name.
void check_options(const AdagradOptions& o) {
  TENSOR_CHECK(o.lr() >= 0, "Adagrad: Invalid learning rate: {}", o.lr());
  TENSOR_CHECK(o.lr_decay() >= 0, "Adagrad: Invalid lr_decay value: {}", o.lr_decay());
  TENSOR_CHECK(o.weight_decay() >= 0, "Adagrad: Invalid weight_decay value: {}", o.weight_decay());
  TENSOR_CHECK(o.initial_accumulator_value() >= 0, "Adagrad: Invalid initial_accumulator_value value: {}",
               o.initial_accumulator_value());
  TENSOR_CHECK(o.eps() >= 0, "Adagrad: Invalid epsilon value: {}", o.eps());
}

// Note [Adagrad's initial accumulator per group]: libtorch fills every parameter's sum from the
// defaults' initial_accumulator_value, even in a group with its own options; torch.optim.Adagrad
// uses the group's. The group's is what its options say, so it is used here; the two agree
// whenever a group does not set its own value.
std::unique_ptr<AdagradParamState> fresh_state(const Tensor& p, const AdagradOptions& o) {
  auto st = std::make_unique<AdagradParamState>();
  NoGradGuard no_grad;
  st->sum(tensor::full_like(p, o.initial_accumulator_value()));
  return st;
}
}  // namespace

Adagrad::Adagrad(std::vector<OptimizerParamGroup> param_groups, AdagradOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<AdagradOptions>(defaults)) {
  check_options(defaults);
  // As libtorch, the state exists from construction on (state_dict() of a fresh Adagrad lists
  // every sum); groups added later get theirs on their first step.
  for (const auto& group : param_groups_)
    for (const Tensor& p : group.params())
      state_[p.unsafeGetTensorImpl()] = fresh_state(p, static_cast<const AdagradOptions&>(group.options()));
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions defaults)
    : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

std::unique_ptr<OptimizerParamState> Adagrad::make_param_state() const { return std::make_unique<AdagradParamState>(); }

Tensor Adagrad::step(LossClosure closure) {
  return run_step(closure, [&] {
    for (auto& group : param_groups_) {
      const auto& o = static_cast<const AdagradOptions&>(group.options());
      check_options(o);
      for (Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        auto& slot = state_[p.unsafeGetTensorImpl()];
        if (!slot) slot = fresh_state(p, o);
        auto& st = static_cast<AdagradParamState&>(*slot);
        if (!st.sum().defined()) st.sum(tensor::full_like(p, o.initial_accumulator_value()));
        st.step(st.step() + 1);
        Tensor grad = p.grad();
        if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
        const double clr = o.lr() / (1 + static_cast<double>(st.step() - 1) * o.lr_decay());
        // libtorch's sum.addcmul_(g, g, 1) and p.addcdiv_(g, std, -clr), with the products in
        // its order: sum + g g, p + (-clr g) / denom.
        st.sum().add_(grad.mul(grad));
        Tensor denom = st.sum().sqrt().add_(o.eps());
        p.add_(grad.mul(-clr).div_(denom));
      }
    }
  });
}

}  // namespace tensor::optim
