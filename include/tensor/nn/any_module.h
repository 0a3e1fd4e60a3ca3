// nn::AnyModule: a type-erased module, as libtorch's torch::nn::AnyModule, for modules whose
// forward takes Tensors (up to 8, trailing ones may have defaults) and returns a Tensor: what
// the transformer stacks' `norm`, custom_encoder and custom_decoder options hold.
// `nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({512})))`, `any.forward(x)`,
// `any.forward<Tensor>(x)`.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/core/Error.h"
#include "tensor/core/Tensor.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

namespace detail {
template <typename T, typename Seq, typename = void>
struct has_forward_n : std::false_type {};
template <typename T, size_t... I>
struct has_forward_n<T, std::index_sequence<I...>,
                     std::enable_if_t<std::is_convertible_v<
                         decltype(std::declval<T&>().forward(((void)I, std::declval<const Tensor&>())...)), Tensor>>>
    : std::true_type {};
/// The most Tensor arguments (1..8) T::forward accepts, 0 if none.
template <typename T>
constexpr size_t forward_arity() {
  size_t n = 0;
  if constexpr (has_forward_n<T, std::make_index_sequence<1>>::value) n = 1;
  if constexpr (has_forward_n<T, std::make_index_sequence<2>>::value) n = 2;
  if constexpr (has_forward_n<T, std::make_index_sequence<3>>::value) n = 3;
  if constexpr (has_forward_n<T, std::make_index_sequence<4>>::value) n = 4;
  if constexpr (has_forward_n<T, std::make_index_sequence<5>>::value) n = 5;
  if constexpr (has_forward_n<T, std::make_index_sequence<6>>::value) n = 6;
  if constexpr (has_forward_n<T, std::make_index_sequence<7>>::value) n = 7;
  if constexpr (has_forward_n<T, std::make_index_sequence<8>>::value) n = 8;
  return n;
}
template <typename T, size_t... I>
Tensor call_forward(T& m, const std::vector<Tensor>& a, std::index_sequence<I...>) {
  return m.forward(a[I]...);
}
}  // namespace detail

class AnyModule {
 public:
  /// An empty AnyModule (is_empty()).
  AnyModule() = default;
  /// Holds a module (a holder such as nn::LayerNorm, a shared_ptr to a module, or a module by
  /// value) whose forward takes Tensors and returns a Tensor.
  template <typename M, typename = std::enable_if_t<!std::is_same_v<std::decay_t<M>, AnyModule>>>
  /* implicit */ AnyModule(M&& module) {
    auto ptr = detail::module_ptr(std::forward<M>(module));
    using T = typename decltype(ptr)::element_type;
    constexpr size_t n = detail::forward_arity<T>();
    static_assert(n > 0, "AnyModule here holds modules whose forward takes Tensors and returns a Tensor");
    module_ = ptr;
    arity_ = n;
    forward_ = [ptr](const std::vector<Tensor>& args) -> Tensor {
      return detail::call_forward(*ptr, args, std::make_index_sequence<n>());
    };
  }

  bool is_empty() const noexcept { return module_ == nullptr; }
  /// The held module (raises tensor::Error when empty).
  std::shared_ptr<Module> ptr() const {
    if (!module_) ::tensor::detail::throw_error("AnyModule::ptr: the AnyModule is empty");
    return module_;
  }
  /// The held module as T (null if it is not one).
  template <typename T>
  std::shared_ptr<T> ptr() const {
    return std::dynamic_pointer_cast<T>(ptr());
  }
  /// Calls the held module's forward; arguments left out are passed as undefined Tensors.
  template <typename... Ts>
  Tensor forward(const Tensor& first, const Ts&... rest) const {
    if (!forward_) ::tensor::detail::throw_error("AnyModule::forward: the AnyModule is empty");
    std::vector<Tensor> args{first, Tensor(rest)...};
    if (args.size() > arity_)
      ::tensor::detail::throw_error("AnyModule::forward: too many arguments for the held module's forward");
    args.resize(arity_);
    return forward_(args);
  }
  /// libtorch's typed spelling `any.forward<Tensor>(x)`.
  template <typename ReturnType, typename... Ts>
  ReturnType forward(const Tensor& first, const Ts&... rest) const {
    static_assert(std::is_same_v<ReturnType, Tensor>, "AnyModule here returns Tensor only");
    return forward(first, rest...);
  }

 private:
  std::shared_ptr<Module> module_;
  size_t arity_ = 0;
  std::function<Tensor(const std::vector<Tensor>&)> forward_;
};

}  // namespace tensor::nn
