// optim::Optimizer: the base of SGD, Adam, AdamW, RMSprop, Adagrad and LBFGS, as libtorch's
// torch::optim::Optimizer, plus PyTorch's step hooks and a flat state_dict that io can save.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"

namespace tensor::optim {

/// Named tensors, in order: what Optimizer::state_dict() returns and load_state_dict() takes.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// The hyperparameters of one parameter group. Each optimizer has its own subclass (SGDOptions,
/// AdamOptions, ...); derive from OptimizerCloneableOptions<Yours> for clone().
class TENSOR_API OptimizerOptions {
 public:
  virtual ~OptimizerOptions();
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  /// The learning rate (schedulers read and write it).
  virtual double get_lr() const;
  virtual void set_lr(double lr);
  /// Every hyperparameter as (name, value) for state_dict: "lr", "momentum", "betas.0", ...
  /// Booleans are 0 or 1.
  virtual std::vector<std::pair<std::string, double>> named_values() const;
  /// Sets the hyperparameter `name` (load_state_dict); tensor::Error for a name it lacks.
  virtual void set_named_value(const std::string& name, double value);
};

template <typename Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

/// What an optimizer keeps per parameter (momentum buffers, moment estimates, step count).
class TENSOR_API OptimizerParamState {
 public:
  virtual ~OptimizerParamState();
  virtual std::unique_ptr<OptimizerParamState> clone() const = 0;
  /// The state as named tensors for state_dict ("step" as a 0-dim int64, "exp_avg", ...);
  /// undefined tensors are left out.
  virtual NamedTensors named_tensors() const = 0;
  /// Restores one entry (load_state_dict); tensor::Error for a name it lacks.
  virtual void set_named_tensor(const std::string& name, const Tensor& value) = 0;
  /// Whether the floating entry `name` has its parameter's shape, so that load_state_dict
  /// checks the shape and casts to the parameter's dtype. LBFGS's flat state says no.
  virtual bool shaped_like_param(const std::string& name) const;
};

template <typename Derived>
class OptimizerCloneableParamState : public OptimizerParamState {
 public:
  std::unique_ptr<OptimizerParamState> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

/// Parameters that share hyperparameters. A group made without options takes the optimizer's
/// defaults when added.
class TENSOR_API OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params);
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options);
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) noexcept = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) noexcept = default;
  ~OptimizerParamGroup();

  bool has_options() const noexcept { return options_ != nullptr; }
  /// The group's options; cast to the optimizer's type to change more than lr:
  /// `static_cast<optim::SGDOptions&>(group.options()).momentum(0.9)`.
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options);
  std::vector<Tensor>& params() noexcept { return params_; }
  const std::vector<Tensor>& params() const noexcept { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

/// Removes the hook it was returned for; harmless after the optimizer is gone or if called twice.
class TENSOR_API RemovableHandle {
 public:
  RemovableHandle() = default;
  void remove();

 private:
  friend class Optimizer;
  struct Hooks;
  RemovableHandle(std::weak_ptr<Hooks> hooks, uint64_t id) : hooks_(std::move(hooks)), id_(id) {}
  std::weak_ptr<Hooks> hooks_;
  uint64_t id_ = 0;
};

/// Updates parameters from their .grad(). Subclasses implement step(); every update runs under
/// no-grad and writes the parameters in place.
class TENSOR_API Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;
  /// Called with the optimizer before (pre) or after (post) every step, in registration order.
  using StepHook = std::function<void(Optimizer&)>;

  explicit Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults);
  explicit Optimizer(std::vector<Tensor> parameters, std::unique_ptr<OptimizerOptions> defaults);
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer();

  /// Performs one update. `closure`, if given, re-evaluates the model (with grad enabled) and
  /// returns the loss, which step returns.
  virtual Tensor step(LossClosure closure = nullptr) = 0;

  /// Adds a group; its missing options come from the defaults. A parameter may be in one group only.
  void add_param_group(const OptimizerParamGroup& param_group);
  /// Adds parameters to the first group.
  void add_parameters(const std::vector<Tensor>& parameters);
  /// Resets every parameter's gradient: undefined (set_to_none) or zero-filled.
  void zero_grad(bool set_to_none = true);

  /// The parameters of every group, in order.
  std::vector<Tensor> parameters() const;
  /// Number of parameters over all groups.
  size_t size() const noexcept;
  OptimizerOptions& defaults() noexcept { return *defaults_; }
  const OptimizerOptions& defaults() const noexcept { return *defaults_; }
  std::vector<OptimizerParamGroup>& param_groups() noexcept { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const noexcept { return param_groups_; }
  /// Per-parameter state, keyed by the parameter's TensorImpl (stable across Module::to).
  std::map<const void*, std::unique_ptr<OptimizerParamState>>& state() noexcept { return state_; }
  const std::map<const void*, std::unique_ptr<OptimizerParamState>>& state() const noexcept { return state_; }

  /// Note [Optimizer state_dict]: a flat list io can save. Parameters are numbered 0.. across the
  /// groups in order. For group g: "param_groups.g.params" (int64 [n], the numbers of its
  /// parameters) and "param_groups.g.<hyper>" (0-dim float64: lr, momentum, betas.0, ...). For
  /// parameter i with state: "state.i.<name>" ("step" 0-dim int64, "exp_avg", "momentum_buffer",
  /// ...; the state's own tensors, not copies).
  NamedTensors state_dict() const;
  /// Restores hyperparameters and state from state_dict() output of an optimizer of the same type
  /// over the same parameter layout; tensor::Error names the first mismatch. State tensors are
  /// copied to the parameter's device (and floating ones to its dtype).
  void load_state_dict(const NamedTensors& state_dict);

  RemovableHandle register_step_pre_hook(StepHook hook);
  RemovableHandle register_step_post_hook(StepHook hook);

 protected:
  /// The frame of a step: pre hooks, the closure (grad enabled), `update` under no-grad, post
  /// hooks; returns the closure's loss. Custom optimizers call it from step() to get hooks.
  Tensor run_step(const LossClosure& closure, const std::function<void()>& update);
  /// A fresh state object of this optimizer's type (load_state_dict fills it).
  virtual std::unique_ptr<OptimizerParamState> make_param_state() const = 0;
  /// The state of `param`, or null.
  OptimizerParamState* find_state(const Tensor& param) const;

  std::vector<OptimizerParamGroup> param_groups_;
  std::map<const void*, std::unique_ptr<OptimizerParamState>> state_;
  std::unique_ptr<OptimizerOptions> defaults_;

 private:
  std::shared_ptr<RemovableHandle::Hooks> pre_hooks_, post_hooks_;
};

}  // namespace tensor::optim
