// prepare, observed_modules, get_observer_state and remove_observers of tensor::quantization
// (PyTorch's torch/ao/quantization/quantize.py: propagate_qconfig_, add_observer_).
#include <string>
#include <vector>

#include "src/core/Check.h"
#include "tensor/nn/layers.h"
#include "tensor/nn/norm_pool.h"
#include "tensor/nn/quantized.h"
#include "tensor/quantization.h"

namespace tensor::quantization {

// Note [What prepare records]
// PyTorch's eager prepare keeps everything on the modules: `module.qconfig` and the child
// `module.activation_post_process`, run by a forward hook. libtensor keeps the same shape, so a
// prepared model carries its own record and convert(model) needs nothing else: each observed
// submodule gets the observer as its child "activation_post_process" (state_dict then saves the
// statistics under "<name>.activation_post_process.min_val", as PyTorch's does), the observer
// holds the QConfig it was made from (ObserverBase::qconfig(), in place of the module attribute
// that C++ modules cannot grow) and the handle of the hook that feeds it. observed_modules()
// reads that back. convert (Note [What convert does] in Convert.cpp), per ObservedModule:
//   - QuantStub -> Quantize(scale, zero_point, dtype) from the activation observer's qparams;
//     DeQuantStub -> DeQuantize where prepare gave it a QConfig (DeQuantStubImpl::prepared());
//   - Linear / LinearReLU / Conv / ConvReLU -> the nn::quantized module, its weight quantized
//     with quantize_weight(qconfig, weight) (qconfig.weight() observes it, per channel or per
//     tensor) and its output scale and zero point from the activation observer;
//   - FloatFunctional -> QFunctional(scale, zero_point) from its observer, and the old object
//     redirected to it (Note [FloatFunctional] in tensor/nn/quantized.h);
//   - ReLU stays; the norms raise (no quantized twins yet);
// then removes the observers and hooks (remove_observers) and swaps each module as fuse_modules
// does (Note [Module swap by redirect] in Fuse.cpp).

struct ObserverAccess {
  static void attach(ObserverBase& o, std::shared_ptr<const QConfig> qconfig, uint64_t handle) {
    o.qconfig_ = std::move(qconfig);
    o.hook_handle_ = handle;
  }
  static uint64_t handle(const ObserverBase& o) { return o.hook_handle_; }
  static void detach(ObserverBase& o) {
    o.qconfig_.reset();
    o.hook_handle_ = 0;
  }
  static void mark(DeQuantStubImpl& d, bool prepared) { d.prepared_ = prepared; }
};

namespace {

constexpr const char* kObserverName = "activation_post_process";

bool is_fused(const nn::Module& m) {
  return m.as<nn::intrinsic::LinearReLUImpl>() || m.as<nn::intrinsic::ConvReLU1dImpl>() ||
         m.as<nn::intrinsic::ConvReLU2dImpl>() || m.as<nn::intrinsic::ConvReLU3dImpl>();
}

// The leaf kinds whose output prepare observes (the float modules that have quantized twins).
bool is_observed_leaf(const nn::Module& m) {
  return m.as<nn::LinearImpl>() || m.as<nn::Conv1dImpl>() || m.as<nn::Conv2dImpl>() || m.as<nn::Conv3dImpl>() ||
         m.as<nn::ConvTranspose1dImpl>() || m.as<nn::ConvTranspose2dImpl>() || m.as<nn::ConvTranspose3dImpl>() ||
         m.as<nn::ReLUImpl>() || m.as<nn::BatchNorm2dImpl>() || m.as<nn::BatchNorm3dImpl>() ||
         m.as<nn::LayerNormImpl>() || m.as<nn::GroupNormImpl>();
}

bool under(const std::string& name, const std::string& prefix) {
  return prefix.empty() || name == prefix || name.compare(0, prefix.size() + 1, prefix + ".") == 0;
}

// The QConfig for `name`: the longest override naming it or an ancestor, else the global one.
std::optional<QConfig> qconfig_for(const std::string& name, const QConfig& global, const QConfigOverrides& overrides) {
  std::optional<QConfig> q = global;
  size_t best = 0;
  bool matched = false;
  for (const auto& [key, value] : overrides) {
    if (under(name, key) && (!matched || key.size() >= best)) {
      q = value;
      best = key.size();
      matched = true;
    }
  }
  return q;
}

std::shared_ptr<ObserverBase> attached_observer(const nn::Module& m) {
  auto children = m.named_children();
  if (!children.contains(kObserverName)) return nullptr;
  auto obs = std::dynamic_pointer_cast<ObserverBase>(children[kObserverName]);
  return obs && obs->qconfig() ? obs : nullptr;
}

}  // namespace

std::vector<ObservedModule> prepare(nn::Module& module, const QConfig& qconfig, const QConfigOverrides& overrides) {
  TENSOR_CHECK(static_cast<bool>(qconfig.activation), "prepare: the QConfig has no activation observer factory");
  auto all = module.named_modules();
  for (const auto& [key, value] : overrides) {
    TENSOR_CHECK(key.empty() || all.contains(key), "prepare: the QConfig override names '{}', which is not a submodule",
                 key);
    TENSOR_CHECK(!value || static_cast<bool>(value->activation),
                 "prepare: the QConfig override for '{}' has no activation observer factory", key);
  }
  for (const auto& item : all) {
    TENSOR_CHECK(!attached_observer(*item.value()),
                 "prepare: the module is already prepared ('{}' has an activation_post_process); call "
                 "remove_observers() first",
                 item.key());
  }
  std::vector<ObservedModule> observed;
  std::vector<std::string> skipped;  // the insides of fused modules and observers
  for (const auto& item : all) {
    const std::string& name = item.key();
    const std::shared_ptr<nn::Module>& m = item.value();
    bool inside = false;
    for (const auto& s : skipped) inside = inside || (name != s && under(name, s));
    if (inside || dynamic_cast<ObserverBase*>(m.get())) continue;
    if (auto* dq = m->as<DeQuantStubImpl>()) {
      ObserverAccess::mark(*dq, qconfig_for(name, qconfig, overrides).has_value());
      continue;
    }
    const bool fused = is_fused(*m);
    if (fused) skipped.push_back(name);
    // A FloatFunctional's methods run its forward hooks on their results (Note [FloatFunctional]).
    const bool observe = m->as<QuantStubImpl>() || m->as<nn::quantized::FloatFunctionalImpl>() || fused ||
                         (m->children().empty() && is_observed_leaf(*m));
    if (!observe) continue;
    std::optional<QConfig> q = qconfig_for(name, qconfig, overrides);
    if (!q) continue;
    std::shared_ptr<ObserverBase> obs = q->activation();
    TENSOR_CHECK(obs != nullptr, "prepare: the activation observer factory for '{}' returned no observer", name);
    m->register_module(kObserverName, obs);
    const uint64_t handle = m->register_forward_hook(
        [obs](nn::Module&, const Tensor&, const Tensor& output) -> Tensor { return obs->forward(output); });
    ObserverAccess::attach(*obs, std::make_shared<const QConfig>(*q), handle);
    observed.push_back({name, m, obs, *q});
  }
  return observed;
}

std::vector<ObservedModule> observed_modules(nn::Module& module) {
  std::vector<ObservedModule> out;
  for (const auto& item : module.named_modules()) {
    if (auto obs = attached_observer(*item.value())) out.push_back({item.key(), item.value(), obs, *obs->qconfig()});
  }
  return out;
}

std::vector<ObserverState> get_observer_state(nn::Module& module) {
  std::vector<ObserverState> out;
  for (const auto& o : observed_modules(module)) {
    ObserverBase& obs = *o.activation_post_process;
    ObserverState s{o.name, obs.dtype(), obs.qscheme(), Tensor(), Tensor(), Tensor(), Tensor()};
    if (auto* mm = dynamic_cast<MinMaxObserver*>(&obs)) {
      s.min_val = mm->min_val;
      s.max_val = mm->max_val;
    } else if (auto* pc = dynamic_cast<PerChannelMinMaxObserver*>(&obs)) {
      s.min_val = pc->min_val;
      s.max_val = pc->max_val;
    } else if (auto* h = dynamic_cast<HistogramObserver*>(&obs)) {
      s.min_val = h->min_val;
      s.max_val = h->max_val;
    }
    // A PlaceholderObserver (dynamic quantization) has no qparams: scale and zero_point stay undefined.
    if (!dynamic_cast<PlaceholderObserver*>(&obs)) std::tie(s.scale, s.zero_point) = obs.calculate_qparams();
    out.push_back(std::move(s));
  }
  return out;
}

void remove_observers(nn::Module& module) {
  for (const auto& item : module.named_modules()) {
    if (auto* dq = item.value()->as<DeQuantStubImpl>()) ObserverAccess::mark(*dq, false);
  }
  for (const auto& o : observed_modules(module)) {
    o.module->remove_forward_hook(ObserverAccess::handle(*o.activation_post_process));
    o.module->unregister_module(kObserverName);
    ObserverAccess::detach(*o.activation_post_process);
  }
}

}  // namespace tensor::quantization
