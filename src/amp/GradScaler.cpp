// GradScaler (torch.amp.GradScaler's algorithm; its inf/NaN check, unscale and scale update
// are the dispatcher ops of src/amp/AmpOps.cpp).
#include "tensor/amp/grad_scaler.h"

#include <map>
#include <string>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::amp {

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  TENSOR_CHECK(options_.growth_factor() > 1.0, "GradScaler: growth_factor should be > 1, got {}",
               options_.growth_factor());
  TENSOR_CHECK(options_.backoff_factor() < 1.0 && options_.backoff_factor() > 0.0,
               "GradScaler: backoff_factor should be in (0, 1), got {}", options_.backoff_factor());
  TENSOR_CHECK(options_.growth_interval() > 0, "GradScaler: growth_interval should be > 0, got {}",
               options_.growth_interval());
}

void GradScaler::lazy_init(Device device) {
  if (scale_.defined()) return;
  scale_ = full({1}, options_.init_scale(), TensorOptions(kFloat32).device(device));
  growth_tracker_ = full({1}, init_growth_tracker_, TensorOptions(kInt32).device(device));
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!options_.enabled()) return outputs;
  TENSOR_CHECK(outputs.defined(), "GradScaler.scale: outputs is undefined");
  lazy_init(outputs.device());
  return outputs * scale_.to(outputs.device(), /*non_blocking=*/true);
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> out;
  out.reserve(outputs.size());
  for (const Tensor& t : outputs) out.push_back(scale(t));
  return out;
}

void GradScaler::unscale_grads(optim::Optimizer& optimizer, OptimizerState& st) {
  NoGradGuard no_grad;
  // Gradients grouped by device: one op call per device, each with its own found_inf.
  std::map<std::string, std::vector<Tensor>> by_device;
  for (auto& group : optimizer.param_groups()) {
    for (const Tensor& p : group.params()) {
      const Tensor& g = p.grad();
      if (!g.defined()) continue;
      TENSOR_CHECK(g.dtype() != kFloat16,
                   "GradScaler.unscale_: attempting to unscale float16 gradients ({}); keep the parameters in "
                   "float32 (autocast casts them per op) so that their gradients are float32",
                   g.describe());
      by_device[g.device().str()].push_back(g);
    }
  }
  const Tensor inv_scale = scale_.to(kFloat64).reciprocal().to(kFloat32);
  for (auto& [name, grads] : by_device) {
    const Device device = grads.front().device();
    Tensor found_inf = zeros({1}, TensorOptions(kFloat32).device(device));
    _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale.to(device));
    st.found_inf.push_back(found_inf);
  }
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled()) return;
  TENSOR_CHECK(scale_.defined(), "GradScaler.unscale_: scale() has not been called on a loss yet this iteration");
  OptimizerState& st = per_optimizer_[&optimizer];
  TENSOR_CHECK(st.stage != Stage::Unscaled,
               "GradScaler.unscale_: unscale_() has already been called on this optimizer since the last update()");
  TENSOR_CHECK(st.stage != Stage::Stepped, "GradScaler.unscale_: unscale_() is being called after step()");
  unscale_grads(optimizer, st);
  st.stage = Stage::Unscaled;
}

Tensor GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled()) return optimizer.step();
  TENSOR_CHECK(scale_.defined(), "GradScaler.step: scale() has not been called on a loss yet this iteration");
  OptimizerState& st = per_optimizer_[&optimizer];
  TENSOR_CHECK(st.stage != Stage::Stepped,
               "GradScaler.step: step() has already been called on this optimizer since the last update()");
  if (st.stage == Stage::Ready) unscale_grads(optimizer, st);
  TENSOR_CHECK(!st.found_inf.empty(), "GradScaler.step: no inf checks were recorded for this optimizer (no parameter "
                                      "has a gradient)");
  double found = 0;
  for (const Tensor& f : st.found_inf) found += f.item<double>();
  Tensor result;
  if (found == 0) result = optimizer.step();
  st.stage = Stage::Stepped;
  return result;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!options_.enabled()) return;
  if (!scale_.defined()) return;  // nothing was scaled: torch returns too
  NoGradGuard no_grad;
  if (new_scale) {
    scale_.fill_(*new_scale);
  } else {
    std::vector<Tensor> found;
    for (auto& [opt, st] : per_optimizer_)
      for (const Tensor& f : st.found_inf) found.push_back(f.to(scale_.device()));
    TENSOR_CHECK(!found.empty(), "GradScaler.update: no inf checks were recorded prior to update (call step() first)");
    Tensor combined = found.front().clone();
    for (size_t i = 1; i < found.size(); ++i) combined.add_(found[i]);
    _amp_update_scale_(scale_, growth_tracker_, combined, options_.growth_factor(), options_.backoff_factor(),
                       options_.growth_interval());
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!options_.enabled()) return 1.0;
  return scale_.defined() ? scale_.item<double>() : options_.init_scale();
}

int64_t GradScaler::get_growth_tracker() const {
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : init_growth_tracker_;
}

optim::NamedTensors GradScaler::state_dict() const {
  if (!options_.enabled()) return {};
  return {{"scale", scalar_tensor(get_scale(), TensorOptions(kFloat64))},
          {"growth_factor", scalar_tensor(options_.growth_factor(), TensorOptions(kFloat64))},
          {"backoff_factor", scalar_tensor(options_.backoff_factor(), TensorOptions(kFloat64))},
          {"growth_interval", scalar_tensor(options_.growth_interval(), TensorOptions(kInt64))},
          {"_growth_tracker", scalar_tensor(get_growth_tracker(), TensorOptions(kInt64))}};
}

void GradScaler::load_state_dict(const optim::NamedTensors& state) {
  if (!options_.enabled()) return;
  TENSOR_CHECK(!state.empty(),
               "GradScaler.load_state_dict: the source state dict is empty, possibly because it was saved from a "
               "disabled instance of GradScaler");
  auto get = [&](const char* key) -> const Tensor& {
    for (const auto& [k, v] : state)
      if (k == key) {
        TENSOR_CHECK(v.defined() && v.numel() == 1, "GradScaler.load_state_dict: entry \"{}\" must hold one number",
                     key);
        return v;
      }
    TENSOR_ERROR("GradScaler.load_state_dict: the state dict has no entry \"{}\"", key);
  };
  const double scale = get("scale").item<double>();
  options_.init_scale(scale);
  options_.growth_factor(get("growth_factor").item<double>());
  options_.backoff_factor(get("backoff_factor").item<double>());
  options_.growth_interval(get("growth_interval").item<int64_t>());
  init_growth_tracker_ = get("_growth_tracker").item<int64_t>();
  if (scale_.defined()) {
    scale_.fill_(scale);
    growth_tracker_.fill_(init_growth_tracker_);
  }
}

}  // namespace tensor::amp
