#include "tensor/nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <ostream>
#include <typeinfo>

#include "src/core/Check.h"
#include "src/nn/SetData.h"
#include "tensor/autograd/autograd.h"

namespace tensor::nn {

namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : mangled;
  std::free(d);
  return out;
}

// "(anonymous namespace)::Net" -> "Net", "ns::Outer<a::B>" -> "Outer<a::B>": the class name as
// PyTorch prints it, without the namespaces and enclosing functions that demangling adds.
std::string unqualified(const std::string& name) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    char c = name[i];
    if (c == '<' || c == '(') ++depth;
    else if (c == '>' || c == ')') --depth;
    else if (depth == 0 && c == ':' && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}

void check_name(const std::string& name, const char* what) {
  TENSOR_CHECK(!name.empty(), "{}: the name must not be empty", what);
  TENSOR_CHECK(name.find('.') == std::string::npos, "{}: the name '{}' must not contain a dot ('.')", what, name);
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

template <typename T, typename U>
bool contains(const std::vector<T>& v, const U& x) {
  for (const T& y : v)
    if (y == x) return true;
  return false;
}

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}
Module::Module() = default;
Module::~Module() = default;

const std::string& Module::name() const noexcept {
  // Lazily: typeid(*this) names the most derived class only after construction finished.
  if (name_.empty()) {
    name_ = unqualified(demangle(typeid(*this).name()));
    // LinearImpl prints as Linear, the name users write.
    if (name_.size() > 4 && name_.compare(name_.size() - 4, 4, "Impl") == 0) name_.resize(name_.size() - 4);
  }
  return name_;
}

// ---- traversal ----

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> out("Parameter");
  if (!recurse) {
    for (const auto& p : parameters_)
      if (p.value().defined()) out.insert(p.key(), p.value());
    return out;
  }
  // A tensor shared by two modules (tied weights) appears once, under its first name, so that
  // optimizers update it once (as PyTorch).
  std::vector<const TensorImpl*> seen;
  for (const auto& m : named_modules()) {
    for (const auto& p : m.value()->parameters_) {
      // Undefined parameters (a Linear without bias) are registered but not listed, as libtorch.
      if (!p.value().defined() || contains(seen, p.value().unsafeGetTensorImpl())) continue;
      seen.push_back(p.value().unsafeGetTensorImpl());
      out.insert(join(m.key(), p.key()), p.value());
    }
  }
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> out("Buffer");
  if (!recurse) {
    for (const auto& b : buffers_)
      if (b.value().defined()) out.insert(b.key(), b.value());
    return out;
  }
  std::vector<const TensorImpl*> seen;
  for (const auto& m : named_modules()) {
    for (const auto& b : m.value()->buffers_) {
      if (!b.value().defined() || contains(seen, b.value().unsafeGetTensorImpl())) continue;
      seen.push_back(b.value().unsafeGetTensorImpl());
      out.insert(join(m.key(), b.key()), b.value());
    }
  }
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
  return named_modules(std::string(), include_self).values();
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& name_prefix,
                                                                        bool include_self) const {
  OrderedDict<std::string, std::shared_ptr<Module>> out("Module");
  // A module reached through two paths appears once, under its first name (as PyTorch).
  std::vector<const Module*> seen;
  std::function<void(const std::string&, const Module&)> walk = [&](const std::string& prefix, const Module& m) {
    for (const auto& c : m.children_) {
      const Module* raw = c.value().get();
      if (contains(seen, raw)) continue;
      seen.push_back(raw);
      std::string path = join(prefix, c.key());
      out.insert(path, c.value());
      walk(path, *c.value());
    }
  };
  seen.push_back(this);
  if (include_self) {
    // shared_from_this needs an owning shared_ptr; a module on the stack gets a non-owning one.
    std::shared_ptr<Module> self = const_cast<Module*>(this)->weak_from_this().lock();
    if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), const_cast<Module*>(this));
    out.insert(name_prefix, self);
  }
  walk(name_prefix, *this);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const {
  OrderedDict<std::string, std::shared_ptr<Module>> out("Submodule");
  for (const auto& c : children_) out.insert(c.key(), c.value());
  return out;
}

OrderedDict<std::string, Tensor> Module::state_dict() const {
  OrderedDict<std::string, Tensor> out = named_parameters();
  for (const auto& b : named_buffers()) out.insert(b.key(), b.value());
  return out;
}

void Module::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state, bool strict) {
  OrderedDict<std::string, Tensor> own = state_dict();
  std::vector<std::string> unexpected, missing, mismatched;
  std::vector<std::pair<Tensor, Tensor>> copies;
  for (const auto& [key, value] : state) {
    Tensor* dst = own.find(key);
    if (!dst) { unexpected.push_back(key); continue; }
    if (!value.defined() || value.sizes() != dst->sizes()) {
      mismatched.push_back(fmt::format("{}: expected {}, got {}", key, dst->describe(),
                                       value.defined() ? value.describe() : std::string("an undefined tensor")));
      continue;
    }
    copies.emplace_back(*dst, value);
  }
  for (const auto& item : own) {
    bool found = false;
    for (const auto& s : state) found = found || s.first == item.key();
    if (!found) missing.push_back(item.key());
  }
  TENSOR_CHECK(mismatched.empty(), "Module::load_state_dict: size mismatch for {}", fmt::join(mismatched, "; "));
  TENSOR_CHECK(!strict || (unexpected.empty() && missing.empty()),
               "Module::load_state_dict: missing keys [{}], unexpected keys [{}] (pass strict=false to ignore)",
               fmt::join(missing, ", "), fmt::join(unexpected, ", "));
  NoGradGuard no_grad;
  for (auto& [dst, src] : copies) dst.copy_(src);
}

// ---- mode and conversion ----

void Module::train(bool on) {
  for (const auto& c : children_) c.value()->train(on);
  is_training_ = on;
}

void Module::eval() { train(false); }

bool Module::is_training() const noexcept { return is_training_; }

void Module::convert(const std::function<Tensor(const Tensor&)>& fn) {
  NoGradGuard no_grad;
  for (const auto& c : children_) c.value()->convert(fn);
  for (auto& p : parameters_) {
    if (p.value().defined()) detail::set_data(p.value(), fn(p.value()));
  }
  for (auto& b : buffers_) {
    if (b.value().defined()) detail::set_data(b.value(), fn(b.value()));
  }
}

void Module::to(Device device, ScalarType dtype, bool non_blocking) {
  convert([&](const Tensor& t) {
    return t.is_floating_point() ? t.to(device, dtype, non_blocking) : t.to(device, non_blocking);
  });
}

void Module::to(ScalarType dtype, bool non_blocking) {
  TENSOR_CHECK(is_floating_point(dtype), "Module::to: modules convert to floating point dtypes only, got {}", dtype);
  convert([&](const Tensor& t) { return t.is_floating_point() ? t.to(dtype, non_blocking) : t; });
}

void Module::to(Device device, bool non_blocking) {
  convert([&](const Tensor& t) { return t.to(device, non_blocking); });
}

void Module::zero_grad(bool set_to_none) {
  for (const auto& c : children_) c.value()->zero_grad(set_to_none);
  for (auto& p : parameters_) {
    if (!p.value().defined()) continue;
    Tensor& g = p.value().mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = Tensor();
    } else {
      NoGradGuard no_grad;
      if (g.grad_fn()) g = g.detach();
      g.zero_();
    }
  }
}

void Module::apply(const ModuleApplyFunction& fn) {
  for (const auto& m : named_modules()) fn(*m.value());
}

void Module::apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix) {
  for (const auto& m : named_modules(name_prefix)) fn(m.key(), *m.value());
}

// ---- registration ----

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_name(name, "register_parameter");
  if (tensor.defined() && requires_grad) {
    // A parameter is a leaf: detach in case it was computed from something that records.
    if (!tensor.is_leaf()) tensor = tensor.detach();
    tensor.requires_grad_(true);
  }
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_name(name, "register_buffer");
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_name(name, "register_module");
  TENSOR_CHECK(module != nullptr, "register_module: the module '{}' is null (an empty holder?)", name);
  TENSOR_CHECK(module.get() != this, "register_module: a module cannot be its own child ('{}')", name);
  children_.insert(std::move(name), std::move(module));
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
  TENSOR_CHECK(module != nullptr, "replace_module: the module '{}' is null", name);
  TENSOR_CHECK(children_.contains(name), "replace_module: there is no submodule named '{}'", name);
  children_[name] = std::move(module);
}

// Note [Forward hooks and redirection]
// libtorch-style modules have no virtual forward: a parent calls `fc(x)`, which the holder turns
// into the concrete FcImpl::forward, and a Sequential stores a call to each module's forward. To
// let quantization attach observers (prepare) and swap modules (fuse_modules, convert) without
// editing the user's forward, the three call paths - ModuleHolder::operator(), Sequential and
// AnyModule - check one flag per call (intercepts_forward(): any hooks or a redirect) and, only
// when it is set, go through call_intercepted. That is limited to forwards taking one Tensor and
// returning a Tensor, which every module quantization touches has; other calls ignore hooks.
// A redirect is how a module is swapped for another in C++: a parent's member holder keeps
// pointing at the old module object (replace_module only changes the registry, as in libtorch),
// so the old object forwards its calls to the new one. Calling `fc->forward(x)` directly skips
// both, as calling module.forward(x) skips hooks in PyTorch.

uint64_t Module::register_forward_hook(ForwardHook hook) {
  TENSOR_CHECK(static_cast<bool>(hook), "register_forward_hook: the hook of module '{}' is empty", name());
  forward_hooks_.emplace_back(++next_hook_handle_, std::move(hook));
  return next_hook_handle_;
}

bool Module::remove_forward_hook(uint64_t handle) {
  for (auto it = forward_hooks_.begin(); it != forward_hooks_.end(); ++it) {
    if (it->first == handle) {
      forward_hooks_.erase(it);
      return true;
    }
  }
  return false;
}

void Module::redirect_forward(std::function<Tensor(const Tensor&)> forward) { forward_redirect_ = std::move(forward); }

Tensor Module::call_intercepted(const Tensor& input, const std::function<Tensor(const Tensor&)>& own) {
  Tensor output = forward_redirect_ ? forward_redirect_(input) : own(input);
  // A copy: a hook may register or remove hooks.
  if (!forward_hooks_.empty()) {
    auto hooks = forward_hooks_;
    for (auto& h : hooks) output = h.second(*this, input, output);
  }
  return output;
}

void Module::unregister_module(const std::string& name) {
  TENSOR_CHECK(children_.contains(name), "unregister_module: there is no submodule named '{}'", name);
  children_.erase(name);
}

// ---- printing ----

void Module::pretty_print(std::ostream& stream) const { stream << name(); }

void Module::pretty_print_recursive(std::ostream& stream, const std::string& indentation) const {
  pretty_print(stream);
  if (children_.is_empty()) return;
  stream << "(\n";
  const std::string next = indentation + "  ";
  for (const auto& c : children_) {
    stream << next << "(" << c.key() << "): ";
    c.value()->pretty_print_recursive(stream, next);
    stream << '\n';
  }
  stream << indentation << ")";
}

std::ostream& operator<<(std::ostream& stream, const Module& module) {
  module.pretty_print_recursive(stream, "");
  return stream;
}

}  // namespace tensor::nn
