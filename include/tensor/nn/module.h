// nn::Module: the base of every layer and model, as libtorch's torch::nn::Module.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/ordered_dict.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// A node of a model tree: owns parameters (tensors that train), buffers (tensors that do not)
/// and named child modules. Subclass it, register what you own in the constructor and write a
/// `forward`:
///
///   struct Net : nn::Module {
///     Net() : fc1(register_module("fc1", nn::Linear(784, 128))) {}
///     Tensor forward(Tensor x) { return fc1(x); }
///     nn::Linear fc1;
///   };
///
/// Modules live behind std::shared_ptr (make_shared, or a ModuleHolder such as nn::Linear).
class TENSOR_API Module : public std::enable_shared_from_this<Module> {
 public:
  using ModuleApplyFunction = std::function<void(Module&)>;
  using NamedModuleApplyFunction = std::function<void(const std::string&, Module&)>;

  /// `name` is what printing shows; by default the class name without namespaces and without a
  /// trailing "Impl" (as PyTorch prints it).
  explicit Module(std::string name);
  Module();
  virtual ~Module();
  Module(const Module&) = default;
  Module& operator=(const Module&) = default;
  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;

  /// The module's name: given at construction, else its demangled class name.
  const std::string& name() const noexcept;

  // ---- parameters, buffers, children ----
  /// Parameters of this module then of its children, depth first (registration order).
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// The same, keyed by dotted paths: "fc1.weight", "layers.0.bias".
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  /// This module (if include_self) and every descendant, depth first, pre-order.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
  /// The same keyed by dotted path ("" or name_prefix for this module itself).
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& name_prefix = std::string(),
                                                                 bool include_self = true) const;
  /// Direct children in registration order.
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;

  /// named_parameters() followed by named_buffers(): every tensor a checkpoint needs, as the
  /// same handles (io::save reads them, io::load copies into them in place).
  OrderedDict<std::string, Tensor> state_dict() const;
  /// Copies each tensor of `state` into the parameter or buffer of that name (under no-grad,
  /// converting dtype and device). With strict, missing or unexpected names and shape
  /// mismatches raise tensor::Error listing them.
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state, bool strict = true);

  // ---- mode and conversion ----
  /// Sets training mode on this module and every descendant (Dropout and norms read it).
  virtual void train(bool on = true);
  /// train(false).
  void eval();
  virtual bool is_training() const noexcept;
  /// Converts every parameter and buffer in place (their TensorImpls are kept, so handles such as
  /// fc->weight and optimizers see the new data). Only floating point tensors change dtype.
  virtual void to(Device device, ScalarType dtype, bool non_blocking = false);
  virtual void to(ScalarType dtype, bool non_blocking = false);
  virtual void to(Device device, bool non_blocking = false);
  /// Resets the gradients of all parameters: undefined (set_to_none) or zero-filled.
  virtual void zero_grad(bool set_to_none = true);

  /// Calls fn on this module and every descendant (pre-order).
  void apply(const ModuleApplyFunction& fn);
  void apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix = std::string());

  // ---- registration ----
  /// Registers a parameter (marked requires_grad unless told not to) and returns a handle to it.
  /// Names are non-empty, contain no '.', and are unique within the module.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  /// Registers a buffer: saved in state_dict() and converted by to(), but not trained.
  Tensor& register_buffer(std::string name, Tensor tensor);
  /// Registers a child module; returns the same module.
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, std::shared_ptr<ModuleType> module) {
    static_assert(std::is_base_of_v<Module, ModuleType>, "register_module: the type must derive from nn::Module");
    add_child(std::move(name), module);
    return module;
  }
  /// Registers the module a holder (nn::Linear, ...) holds; returns the holder.
  template <typename ModuleType>
  ModuleHolder<ModuleType> register_module(std::string name, ModuleHolder<ModuleType> holder) {
    add_child(std::move(name), std::shared_ptr<ModuleType>(holder));
    return holder;
  }
  template <typename Holder, typename = std::enable_if_t<std::is_base_of_v<
                                 ModuleHolder<typename Holder::ContainedType>, Holder>>>
  Holder register_module(std::string name, Holder holder) {
    add_child(std::move(name), std::shared_ptr<typename Holder::ContainedType>(holder));
    return holder;
  }
  /// Replaces the child registered as `name` (keeping its position); returns the new module.
  template <typename ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, std::shared_ptr<ModuleType> module) {
    replace_child(name, module);
    return module;
  }
  template <typename ModuleType>
  ModuleHolder<ModuleType> replace_module(const std::string& name, ModuleHolder<ModuleType> holder) {
    replace_child(name, std::shared_ptr<ModuleType>(holder));
    return holder;
  }
  /// Removes the child registered as `name`.
  void unregister_module(const std::string& name);

  /// This module as a ModuleType (a module class or a holder type), or null if it is not one.
  template <typename ModuleType>
  auto* as() noexcept {
    if constexpr (detail::is_module_holder_v<ModuleType>) {
      return dynamic_cast<typename ModuleType::ContainedType*>(this);
    } else {
      return dynamic_cast<ModuleType*>(this);
    }
  }
  /// The same on a const module: a pointer to const, or null.
  template <typename ModuleType>
  const auto* as() const noexcept {
    if constexpr (detail::is_module_holder_v<ModuleType>) {
      return dynamic_cast<const typename ModuleType::ContainedType*>(this);
    } else {
      return dynamic_cast<const ModuleType*>(this);
    }
  }

  // ---- forward hooks and forward redirection (Note [Forward hooks and redirection]) ----
  /// A forward hook: called with the module, the input and the output; what it returns becomes
  /// the output (return `output` to only observe, as quantization's observers do).
  using ForwardHook = std::function<Tensor(Module& module, const Tensor& input, const Tensor& output)>;
  /// Registers a hook run after every forward call made through a holder (`fc(x)`), a Sequential
  /// or an AnyModule, for a forward taking one Tensor and returning a Tensor (PyTorch's
  /// register_forward_hook; a direct `fc->forward(x)` runs no hooks). Hooks run in registration
  /// order. Returns a handle for remove_forward_hook.
  uint64_t register_forward_hook(ForwardHook hook);
  /// Removes the hook with this handle; false when there is none.
  bool remove_forward_hook(uint64_t handle);
  /// From now on, the calls that run hooks call `forward` instead of this module's own forward
  /// (this module's hooks still run after it); an empty function restores the module's own.
  /// How fuse_modules and quantization's convert swap a module that a parent also holds in a
  /// member: the parent's `conv(x)` reaches the replacement.
  void redirect_forward(std::function<Tensor(const Tensor&)> forward);
  /// Whether this module has hooks or a redirect (holders then call call_intercepted).
  bool intercepts_forward() const noexcept { return !forward_hooks_.empty() || static_cast<bool>(forward_redirect_); }
  /// Runs the redirect (or `own`, the module's own forward) on input, then the hooks.
  Tensor call_intercepted(const Tensor& input, const std::function<Tensor(const Tensor&)>& own);

  /// Prints this module's own line: name and options ("tensor::nn::Linear(in_features=3, ...)").
  virtual void pretty_print(std::ostream& stream) const;
  /// Prints the whole tree, indenting children by two spaces per level (operator<<).
  void pretty_print_recursive(std::ostream& stream, const std::string& indentation) const;

 protected:
  OrderedDict<std::string, Tensor> parameters_{"Parameter"};
  OrderedDict<std::string, Tensor> buffers_{"Buffer"};
  OrderedDict<std::string, std::shared_ptr<Module>> children_{"Submodule"};

 private:
  void add_child(std::string name, std::shared_ptr<Module> module);
  void replace_child(const std::string& name, std::shared_ptr<Module> module);
  void convert(const std::function<Tensor(const Tensor&)>& fn);

  mutable std::string name_;
  bool is_training_ = true;
  uint64_t next_hook_handle_ = 0;
  std::vector<std::pair<uint64_t, ForwardHook>> forward_hooks_;
  std::function<Tensor(const Tensor&)> forward_redirect_;
};

/// Prints the module tree as libtorch does.
TENSOR_API std::ostream& operator<<(std::ostream& stream, const Module& module);

template <typename Contained>
std::ostream& operator<<(std::ostream& stream, const ModuleHolder<Contained>& holder) {
  return stream << *holder;
}

}  // namespace tensor::nn
