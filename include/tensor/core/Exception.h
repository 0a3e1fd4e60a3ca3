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

// Note [libtorch's macro spellings]
// A libtorch program ports by renaming `torch::` to `tensor::`, but its macros carry no
// namespace: TORCH_CHECK, TORCH_INTERNAL_ASSERT and AT_ASSERT (pytorch/examples' MNIST asserts
// with it), and TORCH_MODULE (tensor/nn/pimpl.h). They are defined here under libtorch's names
// as well, unless something defined them first.
#ifndef TORCH_CHECK
/// libtorch's spelling of TENSOR_CHECK.
#define TORCH_CHECK(...) TENSOR_CHECK(__VA_ARGS__)
#endif
#ifndef TORCH_INTERNAL_ASSERT
/// Throws tensor::Error "assertion failed: <cond> (<file>:<line>)" and the streamed arguments
/// when `cond` is false, as libtorch's TORCH_INTERNAL_ASSERT in a user's program.
#define TORCH_INTERNAL_ASSERT(cond, ...)                                                            \
  do {                                                                                              \
    if (__builtin_expect(!(cond), 0))                                                               \
      ::tensor::detail::throw_error(                                                                \
          ::tensor::str("assertion failed: ", #cond, " (", __FILE__, ":", __LINE__, ") ", ##__VA_ARGS__).c_str()); \
  } while (0)
#endif
#ifndef AT_ASSERT
/// libtorch's older spelling of TORCH_INTERNAL_ASSERT.
#define AT_ASSERT(...) TORCH_INTERNAL_ASSERT(__VA_ARGS__)
#endif
