// Checks for code written against libtensor (custom ops, user programs), in libtorch's spelling:
// TENSOR_CHECK is TORCH_CHECK, TENSOR_INTERNAL_ASSERT (tensor/core/Error.h) is
// TORCH_INTERNAL_ASSERT / AT_ASSERT.
#pragma once

#include <string>

#include "tensor/core/Error.h"
#include "tensor/core/StrCat.h"

namespace tensor::detail {
/// The message of a failed TENSOR_CHECK: its arguments concatenated, or libtorch's default text.
inline std::string check_message(const char* cond) {
  return str("Expected ", cond, " to be true, but got false.");
}
template <class... Args>
std::string check_message(const char*, const Args&... args) {
  return str(args...);
}
}  // namespace tensor::detail

// Note [Two TENSOR_CHECKs]
// Users get libtorch's TORCH_CHECK: the message is the arguments streamed one after another
// (`TENSOR_CHECK(x.dim() == 2, "expected 2-d, got ", x.dim(), "-d")`). libtensor's own sources
// format messages with fmt placeholders instead; src/core/Check.h redefines the macro for them,
// and this definition steps aside when that one came first.
#ifndef TENSOR_CHECK
/// Throws tensor::Error when `cond` is false, with the remaining arguments streamed into the
/// message (as tensor::str), or "Expected <cond> to be true, but got false." without them.
#define TENSOR_CHECK(cond, ...)                                                                  \
  do {                                                                                           \
    if (__builtin_expect(!(cond), 0))                                                            \
      ::tensor::detail::throw_error(::tensor::detail::check_message(#cond, ##__VA_ARGS__).c_str()); \
  } while (0)
#endif
