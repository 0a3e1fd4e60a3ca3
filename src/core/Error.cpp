#include "tensor/core/Error.h"

#include <string>

namespace tensor::detail {

void throw_error(const char* msg) { throw Error(msg); }

void internal_assert_fail(const char* cond, const char* file, int line) {
  throw Error(std::string("libtensor internal error (please report a bug): ") + cond + " at " + file + ":" +
              std::to_string(line));
}

}  // namespace tensor::detail
