#include "tensor/optim/optimizer.h"

#include <algorithm>
#include <cstdlib>

#include <cxxabi.h>

#include <optional>
#include <typeinfo>

#include "src/core/Check.h"
#include "src/profiler/ProfilerHooks.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::optim {

// ---- options and state ----

OptimizerOptions::~OptimizerOptions() = default;
double OptimizerOptions::get_lr() const { TENSOR_ERROR("OptimizerOptions: this optimizer's options have no lr"); }
void OptimizerOptions::set_lr(double) { TENSOR_ERROR("OptimizerOptions: this optimizer's options have no lr"); }
std::vector<std::pair<std::string, double>> OptimizerOptions::named_values() const { return {}; }
void OptimizerOptions::set_named_value(const std::string& name, double) {
  TENSOR_ERROR("OptimizerOptions: unknown hyperparameter '{}'", name);
}

OptimizerParamState::~OptimizerParamState() = default;
bool OptimizerParamState::shaped_like_param(const std::string&) const { return true; }

OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
    : params_(std::move(params)), options_(std::move(options)) {}
OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}
OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}
OptimizerParamGroup::~OptimizerParamGroup() = default;

OptimizerOptions& OptimizerParamGroup::options() {
  TENSOR_CHECK(options_ != nullptr, "OptimizerParamGroup: this group has no options yet (add it to an optimizer)");
  return *options_;
}
const OptimizerOptions& OptimizerParamGroup::options() const {
  TENSOR_CHECK(options_ != nullptr, "OptimizerParamGroup: this group has no options yet (add it to an optimizer)");
  return *options_;
}
void OptimizerParamGroup::set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

// ---- hooks ----

struct RemovableHandle::Hooks {
  std::vector<std::pair<uint64_t, Optimizer::StepHook>> list;
  uint64_t next_id = 0;
};

void RemovableHandle::remove() {
  if (auto h = hooks_.lock()) {
    auto& l = h->list;
    l.erase(std::remove_if(l.begin(), l.end(), [&](const auto& e) { return e.first == id_; }), l.end());
  }
  hooks_.reset();
}

RemovableHandle Optimizer::register_step_pre_hook(StepHook hook) {
  TENSOR_CHECK(static_cast<bool>(hook), "register_step_pre_hook: the hook is empty");
  uint64_t id = pre_hooks_->next_id++;
  pre_hooks_->list.emplace_back(id, std::move(hook));
  return RemovableHandle(pre_hooks_, id);
}

RemovableHandle Optimizer::register_step_post_hook(StepHook hook) {
  TENSOR_CHECK(static_cast<bool>(hook), "register_step_post_hook: the hook is empty");
  uint64_t id = post_hooks_->next_id++;
  post_hooks_->list.emplace_back(id, std::move(hook));
  return RemovableHandle(post_hooks_, id);
}

// ---- optimizer ----

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)),
      pre_hooks_(std::make_shared<RemovableHandle::Hooks>()),
      post_hooks_(std::make_shared<RemovableHandle::Hooks>()) {
  TENSOR_CHECK(defaults_ != nullptr, "Optimizer: the default options are null");
  for (const auto& g : param_groups) add_param_group(g);
}

Optimizer::Optimizer(std::vector<Tensor> parameters, std::unique_ptr<OptimizerOptions> defaults)
    : Optimizer(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(parameters))}, std::move(defaults)) {}

Optimizer::~Optimizer() = default;

void Optimizer::add_param_group(const OptimizerParamGroup& param_group) {
  OptimizerParamGroup g(param_group.params(),
                        param_group.has_options() ? param_group.options().clone() : defaults_->clone());
  for (size_t i = 0; i < g.params().size(); ++i) {
    const Tensor& p = g.params()[i];
    TENSOR_CHECK(p.defined(), "Optimizer::add_param_group: parameter {} of the group is undefined", i);
    TENSOR_CHECK(p.is_leaf(),
                 "Optimizer::add_param_group: can't optimize a non-leaf tensor (parameter {} of the group, {}); "
                 "detach() it and set requires_grad",
                 i, p.describe());
    for (const auto& other : param_groups_)
      for (const Tensor& q : other.params())
        TENSOR_CHECK(!q.is_same(p), "Optimizer::add_param_group: some parameters appear in more than one parameter group");
    for (size_t j = 0; j < i; ++j)
      TENSOR_CHECK(!g.params()[j].is_same(p), "Optimizer::add_param_group: the group lists a parameter twice");
  }
  param_groups_.push_back(std::move(g));
}

void Optimizer::add_parameters(const std::vector<Tensor>& parameters) {
  TENSOR_CHECK(!param_groups_.empty(), "Optimizer::add_parameters: the optimizer has no parameter group");
  for (const Tensor& p : parameters) {
    for (const auto& g : param_groups_)
      for (const Tensor& q : g.params())
        TENSOR_CHECK(!q.is_same(p), "Optimizer::add_parameters: the parameter {} is already optimized", p.describe());
    param_groups_[0].params().push_back(p);
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& g : param_groups_) {
    for (Tensor& p : g.params()) {
      Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        grad = Tensor();
      } else {
        NoGradGuard no_grad;
        if (grad.grad_fn()) grad = grad.detach();
        grad.zero_();
      }
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const auto& g : param_groups_) out.insert(out.end(), g.params().begin(), g.params().end());
  return out;
}

size_t Optimizer::size() const noexcept {
  size_t n = 0;
  for (const auto& g : param_groups_) n += g.params().size();
  return n;
}

OptimizerParamState* Optimizer::find_state(const Tensor& param) const {
  auto it = state_.find(param.unsafeGetTensorImpl());
  return it == state_.end() ? nullptr : it->second.get();
}

namespace {
// The optimizer's class name without namespaces ("SGD"), for its profiler event.
std::string class_name(const Optimizer& o) {
  const char* mangled = typeid(o).name();
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && d ? d : mangled;
  std::free(d);
  const size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}
}  // namespace

Tensor Optimizer::run_step(const LossClosure& closure, const std::function<void()>& update) {
  // Optimizer.step#SGD.step, as libtorch's profiler names it.
  std::optional<profiler::detail::ScopedRange> range;
  if (__builtin_expect(profiler::detail::active(), 0))
    range.emplace(profiler::detail::Kind::Optimizer, "Optimizer.step#" + class_name(*this) + ".step");
  // Copies, so that a hook may remove itself (or others) while running.
  auto pre = pre_hooks_->list;
  for (auto& h : pre) h.second(*this);
  Tensor loss;
  if (closure) {
    autograd::AutoGradMode enable(true);
    loss = closure();
  }
  {
    NoGradGuard no_grad;
    update();
  }
  auto post = post_hooks_->list;
  for (auto& h : post) h.second(*this);
  return loss;
}

// ---- state_dict ----

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  int64_t index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto& group = param_groups_[g];
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    std::vector<int64_t> ids;
    for (size_t i = 0; i < group.params().size(); ++i) ids.push_back(index + static_cast<int64_t>(i));
    out.emplace_back(prefix + "params", tensor::tensor(ids));
    for (const auto& [name, value] : group.options().named_values())
      out.emplace_back(prefix + name, tensor::scalar_tensor(value, kFloat64));
    for (const Tensor& p : group.params()) {
      if (const OptimizerParamState* s = find_state(p)) {
        const std::string sp = "state." + std::to_string(index) + ".";
        for (auto& [name, t] : s->named_tensors()) out.emplace_back(sp + name, t);
      }
      ++index;
    }
  }
  return out;
}

namespace {
// Parses a non-negative decimal at the start of s (up to the next '.'); -1 if there is none.
int64_t leading_index(const std::string& s, size_t& end) {
  end = s.find('.');
  if (end == 0 || end == std::string::npos) return -1;
  for (size_t i = 0; i < end; ++i)
    if (s[i] < '0' || s[i] > '9') return -1;
  return std::strtoll(s.substr(0, end).c_str(), nullptr, 10);
}
}  // namespace

void Optimizer::load_state_dict(const NamedTensors& state_dict) {
  const std::vector<Tensor> params = parameters();
  // Check the layout first so that a mismatch changes nothing.
  std::vector<int64_t> group_sizes(param_groups_.size(), -1);
  for (const auto& [key, value] : state_dict) {
    const std::string pg = "param_groups.", st = "state.";
    size_t end = 0;
    if (key.compare(0, pg.size(), pg) == 0) {
      std::string rest = key.substr(pg.size());
      int64_t g = leading_index(rest, end);
      TENSOR_CHECK(g >= 0 && g < static_cast<int64_t>(param_groups_.size()),
                   "Optimizer::load_state_dict: '{}' names a parameter group this optimizer lacks (it has {})", key,
                   param_groups_.size());
      if (rest.substr(end + 1) == "params") {
        TENSOR_CHECK(value.defined() && value.dim() == 1, "Optimizer::load_state_dict: '{}' must be a 1-d tensor", key);
        group_sizes[static_cast<size_t>(g)] = value.numel();
      }
    } else if (key.compare(0, st.size(), st) == 0) {
      int64_t i = leading_index(key.substr(st.size()), end);
      TENSOR_CHECK(i >= 0 && i < static_cast<int64_t>(params.size()),
                   "Optimizer::load_state_dict: '{}' names parameter {} but the optimizer has {} parameters", key, i,
                   params.size());
    } else {
      TENSOR_ERROR("Optimizer::load_state_dict: unexpected key '{}' (expected param_groups.* or state.*)", key);
    }
  }
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    TENSOR_CHECK(group_sizes[g] == static_cast<int64_t>(param_groups_[g].params().size()),
                 "Optimizer::load_state_dict: parameter group {} has {} parameters but the state dict has {}", g,
                 param_groups_[g].params().size(),
                 group_sizes[g] < 0 ? std::string("none") : std::to_string(group_sizes[g]));
  }
  NoGradGuard no_grad;
  for (const auto& [key, value] : state_dict) {
    size_t end = 0;
    if (key.compare(0, 13, "param_groups.") == 0) {
      std::string rest = key.substr(13);
      int64_t g = leading_index(rest, end);
      std::string name = rest.substr(end + 1);
      if (name == "params") continue;
      TENSOR_CHECK(value.defined() && value.numel() == 1,
                   "Optimizer::load_state_dict: hyperparameter '{}' must be a one-element tensor", key);
      param_groups_[static_cast<size_t>(g)].options().set_named_value(name, value.item<double>());
    } else {
      std::string rest = key.substr(6);
      int64_t i = leading_index(rest, end);
      std::string name = rest.substr(end + 1);
      const Tensor& p = params[static_cast<size_t>(i)];
      auto& slot = state_[p.unsafeGetTensorImpl()];
      if (!slot) slot = make_param_state();
      TENSOR_CHECK(value.defined(), "Optimizer::load_state_dict: '{}' is undefined", key);
      const bool per_element = value.is_floating_point() && slot->shaped_like_param(name);
      Tensor v = per_element ? value.to(p.device(), p.dtype(), false, /*copy=*/true)
                             : value.to(p.device(), false, /*copy=*/true);
      if (per_element) {
        TENSOR_CHECK(v.sizes() == p.sizes(), "Optimizer::load_state_dict: '{}' is {} but its parameter is {}", key,
                     v.describe(), p.describe());
      }
      slot->set_named_tensor(name, v);
    }
  }
}

}  // namespace tensor::optim
