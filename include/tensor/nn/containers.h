// Containers as libtorch's torch::nn::{ModuleDict, ParameterList, ParameterDict}
// (Sequential and ModuleList are in modules.h). Entries are registered as children or
// parameters, so parameters(), state dicts and to() see them.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tensor/core/Error.h"
#include "tensor/core/Tensor.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/ordered_dict.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// Modules by name, in insertion order: `nn::ModuleDict({{"fc", nn::Linear(3, 4).ptr()}})`.
class ModuleDictImpl : public Module {
 public:
  using Iterator = OrderedDict<std::string, std::shared_ptr<Module>>::Iterator;
  using ConstIterator = OrderedDict<std::string, std::shared_ptr<Module>>::ConstIterator;

  ModuleDictImpl() : Module("tensor::nn::ModuleDict") {}
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules)
      : ModuleDictImpl() {
    update(modules);
  }
  explicit ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules) : ModuleDictImpl() {
    update(modules);
  }

  std::vector<std::pair<std::string, std::shared_ptr<Module>>> items() const {
    return {modules_.begin(), modules_.end()};
  }
  std::vector<std::string> keys() const { return modules_.keys(); }
  std::vector<std::shared_ptr<Module>> values() const { return modules_.values(); }
  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }
  size_t size() const noexcept { return modules_.size(); }
  bool empty() const noexcept { return modules_.size() == 0; }
  bool contains(const std::string& key) const noexcept { return modules_.contains(key); }
  void clear() {
    for (const auto& k : modules_.keys()) unregister_module(k);
    modules_.clear();
  }
  void reset() {}
  void pretty_print(std::ostream& stream) const override { stream << "tensor::nn::ModuleDict"; }

  /// The module under key (tensor::Error naming the key when absent).
  std::shared_ptr<Module> operator[](const std::string& key) const {
    if (!modules_.contains(key))
      ::tensor::detail::throw_error(("ModuleDict: no module under key '" + key + "'").c_str());
    return modules_[key];
  }
  /// The module under key as T (a module class, e.g. nn::LinearImpl).
  template <typename T>
  T& at(const std::string& key) {
    auto p = std::dynamic_pointer_cast<T>((*this)[key]);
    if (!p) ::tensor::detail::throw_error(("ModuleDict::at: the module under '" + key + "' is not of that type").c_str());
    return *p;
  }
  /// Removes and returns the module under key.
  std::shared_ptr<Module> pop(const std::string& key) {
    auto m = (*this)[key];
    modules_.erase(key);
    unregister_module(key);
    return m;
  }
  void update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
    for (const auto& item : modules) insert(item.first, item.second);
  }
  template <typename Container>
  void update(const Container& container) {
    for (const auto& item : container) insert(item.key(), item.value());
  }
  /// Adds or replaces the module under key (a holder, shared_ptr or module value).
  template <typename M>
  void insert(const std::string& key, M&& module) {
    std::shared_ptr<Module> ptr = detail::module_ptr(std::forward<M>(module));
    if (modules_.contains(key)) {
      modules_[key] = ptr;
      replace_module(key, ptr);
    } else {
      modules_.insert(key, ptr);
      register_module(key, ptr);
    }
  }

 private:
  OrderedDict<std::string, std::shared_ptr<Module>> modules_{"Module"};
};
TENSOR_MODULE(ModuleDict);

/// Parameters in a list, registered as "0", "1", ...
class ParameterListImpl : public Module {
 public:
  using Iterator = OrderedDict<std::string, Tensor>::Iterator;
  using ConstIterator = OrderedDict<std::string, Tensor>::ConstIterator;

  ParameterListImpl() : Module("tensor::nn::ParameterList") {}
  template <typename... Tensors>
  explicit ParameterListImpl(const Tensor& first, const Tensors&... rest) : ParameterListImpl() {
    append(first);
    (append(rest), ...);
  }
  void reset() {}
  void pretty_print(std::ostream& stream) const override { stream << "tensor::nn::ParameterList"; }

  /// Registers `param` (requires_grad as libtorch: kept as the tensor says) under the next index.
  void append(const Tensor& param) {
    register_parameter(std::to_string(parameters_.size()), param, param.requires_grad());
  }
  void append(const OrderedDict<std::string, Tensor>::Item& pair) { append(pair.value()); }
  template <typename Container>
  void extend(const Container& container) {
    for (const auto& param : container) append(param);
  }
  Iterator begin() { return parameters_.begin(); }
  ConstIterator begin() const { return parameters_.begin(); }
  Iterator end() { return parameters_.end(); }
  ConstIterator end() const { return parameters_.end(); }
  Tensor& at(size_t idx) { return parameters_[idx].value(); }
  const Tensor& at(size_t idx) const { return parameters_[idx].value(); }
  Tensor& operator[](size_t idx) { return at(idx); }
  const Tensor& operator[](size_t idx) const { return at(idx); }
  size_t size() const noexcept { return parameters_.size(); }
  bool is_empty() const noexcept { return parameters_.size() == 0; }
};
TENSOR_MODULE(ParameterList);

/// Parameters by name.
class ParameterDictImpl : public Module {
 public:
  using Iterator = OrderedDict<std::string, Tensor>::Iterator;
  using ConstIterator = OrderedDict<std::string, Tensor>::ConstIterator;

  ParameterDictImpl() : Module("tensor::nn::ParameterDict") {}
  explicit ParameterDictImpl(const OrderedDict<std::string, Tensor>& params) : ParameterDictImpl() {
    for (const auto& item : params) insert(item.key(), item.value());
  }
  void reset() {}
  void pretty_print(std::ostream& stream) const override { stream << "tensor::nn::ParameterDict"; }

  /// Adds or replaces the parameter under key (requires_grad as the tensor says).
  Tensor& insert(const std::string& key, const Tensor& param) {
    if (parameters_.contains(key)) parameters_.erase(key);
    return register_parameter(key, param, param.requires_grad());
  }
  /// Removes and returns the parameter under key.
  Tensor pop(const std::string& key) {
    Tensor t = get(key);
    parameters_.erase(key);
    return t;
  }
  std::vector<std::string> keys() const { return parameters_.keys(); }
  std::vector<Tensor> values() const { return parameters_.values(); }
  Iterator begin() { return parameters_.begin(); }
  ConstIterator begin() const { return parameters_.begin(); }
  Iterator end() { return parameters_.end(); }
  ConstIterator end() const { return parameters_.end(); }
  size_t size() const noexcept { return parameters_.size(); }
  bool empty() const noexcept { return parameters_.size() == 0; }
  bool contains(const std::string& key) const { return parameters_.contains(key); }
  void clear() { parameters_.clear(); }
  template <typename Container>
  void update(const Container& container) {
    for (const auto& item : container) insert(item.key(), item.value());
  }
  Tensor& get(const std::string& key) {
    if (!parameters_.contains(key))
      ::tensor::detail::throw_error(("ParameterDict: no parameter under key '" + key + "'").c_str());
    return parameters_[key];
  }
  Tensor& operator[](const std::string& key) { return get(key); }
};
TENSOR_MODULE(ParameterDict);

}  // namespace tensor::nn
