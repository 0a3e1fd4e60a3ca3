// Internal: user-facing checks that throw tensor::Error with a formatted message.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensor/core/Error.h"
#include "tensor/core/Tensor.h"

/// Throws tensor::Error(fmt::format(...)) when cond is false. Messages name the op,
/// the shapes and dtypes involved, and what to do. Replaces the public, streaming
/// TENSOR_CHECK of tensor/core/Exception.h in libtensor's sources (Note [Two TENSOR_CHECKs]).
#undef TENSOR_CHECK
#define TENSOR_CHECK(cond, ...)                                                 \
  do {                                                                          \
    if (__builtin_expect(!(cond), 0)) ::tensor::detail::throw_error(::fmt::format(__VA_ARGS__).c_str()); \
  } while (0)

#define TENSOR_ERROR(...) ::tensor::detail::throw_error(::fmt::format(__VA_ARGS__).c_str())

namespace tensor::detail {
/// "[2, 3]" for messages.
inline std::string shape_str(IntArrayRef s) { return fmt::format("[{}]", fmt::join(s.begin(), s.end(), ", ")); }
/// Wraps a possibly negative dim into [0, ndim); throws naming the op otherwise.
inline int64_t wrap_dim(int64_t d, int64_t ndim, const char* op) {
  int64_t n = ndim <= 0 ? 1 : ndim;
  TENSOR_CHECK(d >= -n && d < n, "{}: dim {} is out of range for a tensor with {} dims (expected a dim in [{}, {}])",
               op, d, ndim, -n, n - 1);
  return d < 0 ? d + n : d;
}
}  // namespace tensor::detail

template <>
struct fmt::formatter<tensor::ScalarType> : fmt::formatter<const char*> {
  auto format(tensor::ScalarType t, fmt::format_context& ctx) const {
    return fmt::formatter<const char*>::format(tensor::to_string(t), ctx);
  }
};
