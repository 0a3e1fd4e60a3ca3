// tensor::str(...), libtorch's c10::str: one string from any streamable arguments.
#pragma once

#include <sstream>
#include <string>

namespace tensor {

/// Concatenates the arguments as `std::cout << a << b << ...` would print them:
/// `tensor::str("loss ", 0.5, " at step ", 3)` is "loss 0.5 at step 3". No arguments give "".
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}

}  // namespace tensor
