// ModuleHolder: the shared-pointer wrapper behind nn::Linear, nn::Sequential, ..., as
// libtorch's torch/nn/pimpl.h. `nn::Linear fc(3, 4); fc->weight; fc(x);`
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "tensor/core/Error.h"
#include "tensor/core/Tensor.h"

namespace tensor::nn {

template <typename Contained>
class ModuleHolder;

namespace detail {
template <typename T, typename = void>
struct is_module_holder : std::false_type {};
template <typename T>
struct is_module_holder<T, std::void_t<typename T::ContainedType>>
    : std::is_base_of<ModuleHolder<typename T::ContainedType>, T> {};
template <typename T>
inline constexpr bool is_module_holder_v = is_module_holder<std::decay_t<T>>::value;

// Whether `module.forward(arg)` is a one-Tensor-in, Tensor-out call: the calls that run forward
// hooks and redirects (Note [Forward hooks and redirection] in src/nn/Module.cpp).
template <typename M, typename A, typename = void>
struct is_hookable_call : std::false_type {};
template <typename M, typename A>
struct is_hookable_call<M, A, std::void_t<decltype(std::declval<M&>().forward(std::declval<A>())),
                                          decltype(std::declval<M&>().forward(std::declval<const ::tensor::Tensor&>())),
                                          decltype(std::declval<M&>().intercepts_forward())>>
    : std::bool_constant<std::is_convertible_v<A, const ::tensor::Tensor&> &&
                         std::is_same_v<decltype(std::declval<M&>().forward(std::declval<A>())), ::tensor::Tensor> &&
                         std::is_same_v<decltype(std::declval<M&>().forward(std::declval<const ::tensor::Tensor&>())),
                                        ::tensor::Tensor>> {};
}  // namespace detail

/// Owns a module of type Contained through a std::shared_ptr: copies share the module.
/// `holder->member` reaches the module, `holder(args...)` calls its forward(args...).
template <typename Contained>
class ModuleHolder {
 public:
  using ContainedType = Contained;

  /// Default-constructs the module (only for modules with a default constructor).
  ModuleHolder() : impl_(default_construct()) {
    static_assert(std::is_default_constructible_v<Contained>,
                  "this module has no default constructor: pass its arguments, or nullptr for an empty holder");
  }
  /// An empty holder, to be assigned later.
  ModuleHolder(std::nullptr_t) : impl_(nullptr) {}
  /// Constructs the module from these arguments: nn::Linear(784, 128).
  template <typename Head, typename... Tail,
            typename = std::enable_if_t<!(std::is_same_v<std::decay_t<Head>, ModuleHolder> ||
                                          std::is_base_of_v<ModuleHolder, std::decay_t<Head>> ||
                                          std::is_same_v<std::decay_t<Head>, std::nullptr_t> ||
                                          (sizeof...(Tail) == 0 &&
                                           std::is_convertible_v<std::decay_t<Head>, std::shared_ptr<Contained>>))>>
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}
  /// Wraps an existing module.
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}

  explicit operator bool() const noexcept { return impl_ != nullptr; }
  bool is_empty() const noexcept { return impl_ == nullptr; }

  Contained* operator->() { return get(); }
  const Contained* operator->() const { return get(); }
  Contained& operator*() { return *get(); }
  const Contained& operator*() const { return *get(); }
  Contained* get() { check(); return impl_.get(); }
  const Contained* get() const { check(); return impl_.get(); }
  const std::shared_ptr<Contained>& ptr() const { check(); return impl_; }
  /// So that code written for a shared_ptr<Impl> member keeps compiling.
  operator std::shared_ptr<Contained>() const { return impl_; }

  /// Calls the module's forward (and its forward hooks, or its redirect, when it has any).
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    Contained* m = get();
    if constexpr (sizeof...(Args) == 1 && (detail::is_hookable_call<Contained, Args&&>::value && ...)) {
      if (m->intercepts_forward())
        return m->call_intercepted(args..., [m](const ::tensor::Tensor& x) -> ::tensor::Tensor { return m->forward(x); });
    }
    return m->forward(std::forward<Args>(args)...);
  }
  /// Indexes containers (Sequential, ModuleList).
  template <typename Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

 protected:
  std::shared_ptr<Contained> impl_;

 private:
  template <typename T = Contained>
  static std::shared_ptr<Contained> default_construct() {
    if constexpr (std::is_default_constructible_v<T>) return std::make_shared<T>();
    else return nullptr;
  }
  void check() const {
    if (!impl_) ::tensor::detail::throw_error("ModuleHolder: accessing an empty module holder (constructed with nullptr)");
  }
};

}  // namespace tensor::nn

/// Defines the holder `Name` for the module class `Name##Impl`, as libtorch's TORCH_MODULE.
#define TENSOR_MODULE(Name)                                      \
  class Name : public ::tensor::nn::ModuleHolder<Name##Impl> {  \
   public:                                                       \
    using ::tensor::nn::ModuleHolder<Name##Impl>::ModuleHolder;  \
    using Impl = Name##Impl;                                     \
  }

#ifndef TORCH_MODULE
/// libtorch's spelling of TENSOR_MODULE (Note [libtorch's macro spellings] in tensor/core/Exception.h).
#define TORCH_MODULE(Name) TENSOR_MODULE(Name)
#endif
