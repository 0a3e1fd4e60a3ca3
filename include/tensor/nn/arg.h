// TENSOR_ARG: the option-builder macro of nn and optim options, as libtorch's TORCH_ARG.
#pragma once

#include <utility>

/// Declares an option `name` of type T with a chainable setter `name(v)` and a getter `name()`,
/// as libtorch's TORCH_ARG. Follow it with `= default_value;` or just `;`.
#define TENSOR_ARG(T, name)                                               \
 public:                                                                  \
  inline auto name(const T& new_##name)->decltype(*this) {                \
    this->name##_ = new_##name;                                           \
    return *this;                                                         \
  }                                                                       \
  inline auto name(T&& new_##name)->decltype(*this) {                     \
    this->name##_ = std::move(new_##name);                                \
    return *this;                                                         \
  }                                                                       \
  inline const T& name() const noexcept { return this->name##_; }         \
  inline T& name() noexcept { return this->name##_; }                     \
                                                                          \
 private:                                                                 \
  T name##_
