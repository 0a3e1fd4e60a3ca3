// optim::SGD, following torch.optim.SGD's single-tensor form (PyTorch 1.13).
#include "tensor/optim/sgd.h"

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::optim {

SGDOptions::SGDOptions(double lr) : lr_(lr) {}
double SGDOptions::get_lr() const { return lr_; }
void SGDOptions::set_lr(double lr) { lr_ = lr; }
std::vector<std::pair<std::string, double>> SGDOptions::named_values() const {
  return {{"lr", lr_},
          {"momentum", momentum_},
          {"dampening", dampening_},
          {"weight_decay", weight_decay_},
          {"nesterov", nesterov_ ? 1.0 : 0.0},
          {"maximize", maximize_ ? 1.0 : 0.0}};
}
void SGDOptions::set_named_value(const std::string& name, double value) {
  if (name == "lr") lr_ = value;
  else if (name == "momentum") momentum_ = value;
  else if (name == "dampening") dampening_ = value;
  else if (name == "weight_decay") weight_decay_ = value;
  else if (name == "nesterov") nesterov_ = value != 0;
  else if (name == "maximize") maximize_ = value != 0;
  else TENSOR_ERROR("SGDOptions: unknown hyperparameter '{}'", name);
}

NamedTensors SGDParamState::named_tensors() const {
  NamedTensors out;
  if (momentum_buffer_.defined()) out.emplace_back("momentum_buffer", momentum_buffer_);
  return out;
}
void SGDParamState::set_named_tensor(const std::string& name, const Tensor& value) {
  TENSOR_CHECK(name == "momentum_buffer", "SGDParamState: unknown state '{}'", name);
  momentum_buffer_ = value;
}

namespace {
void check_options(const SGDOptions& o) {
  TENSOR_CHECK(o.lr() >= 0, "SGD: invalid learning rate {}", o.lr());
  TENSOR_CHECK(o.momentum() >= 0, "SGD: invalid momentum value {}", o.momentum());
  TENSOR_CHECK(o.weight_decay() >= 0, "SGD: invalid weight_decay value {}", o.weight_decay());
  TENSOR_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0),
               "SGD: Nesterov momentum requires a momentum and zero dampening (momentum = {}, dampening = {})",
               o.momentum(), o.dampening());
}
}  // namespace

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<SGDOptions>(defaults)) {
  check_options(defaults);
}

SGD::SGD(std::vector<Tensor> params, SGDOptions defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

std::unique_ptr<OptimizerParamState> SGD::make_param_state() const { return std::make_unique<SGDParamState>(); }

Tensor SGD::step(LossClosure closure) {
  return run_step(closure, [&] {
    for (auto& group : param_groups_) {
      const auto& o = static_cast<const SGDOptions&>(group.options());
      check_options(o);
      for (Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        SGDParamState* st = nullptr;
        if (o.momentum() != 0) {
          auto& slot = state_[p.unsafeGetTensorImpl()];
          if (!slot) slot = std::make_unique<SGDParamState>();
          st = static_cast<SGDParamState*>(slot.get());
        }
        bool first = st && !st->momentum_buffer().defined();
        if (first) st->momentum_buffer(tensor::empty_like(p));
        tensor::_fused_sgd_(p, p.grad(), st ? st->momentum_buffer() : Tensor(), o.lr(), o.momentum(), o.dampening(),
                            o.weight_decay(), o.nesterov(), o.maximize(), first);
      }
    }
  });
}

}  // namespace tensor::optim
