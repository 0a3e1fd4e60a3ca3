// tensor::optional and tensor::nullopt: libtorch's spelling of std::optional (torch::optional),
// so that `tensor::optional<size_t> size() const override` ports from libtorch by renaming.
#pragma once

#include <optional>

namespace tensor {

/// std::optional under libtorch's name (torch::optional is c10::optional, itself std::optional).
using std::optional;
/// std::nullopt and its type, for `return tensor::nullopt;`.
using std::nullopt;
using std::nullopt_t;
/// std::make_optional.
using std::make_optional;

}  // namespace tensor
