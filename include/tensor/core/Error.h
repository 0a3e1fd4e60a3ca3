// The one exception type users see.
#pragma once

#include <stdexcept>
#include <string>

#include "tensor/export.h"

namespace tensor {

/// Thrown for every user mistake (bad shapes, dtypes, indices, devices). The message names
/// the op, the shapes and dtypes involved, and what to do.
class TENSOR_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
[[noreturn]] TENSOR_API void throw_error(const char* msg);
[[noreturn]] TENSOR_API void internal_assert_fail(const char* cond, const char* file, int line);
}  // namespace detail

}  // namespace tensor

/// Internal invariant check: a failure is a libtensor bug, not a user error.
#define TENSOR_INTERNAL_ASSERT(cond) \
  do { if (__builtin_expect(!(cond), 0)) ::tensor::detail::internal_assert_fail(#cond, __FILE__, __LINE__); } while (0)
