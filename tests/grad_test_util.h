// Shared by the gradient tests: run a gradcheck and report which case failed.
#pragma once

#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <functional>
#include <string>

namespace tensor::testing {

/// gradcheck throws with the first mismatch: turn that into a test failure naming `what`.
inline void check(const std::string& what, const std::function<bool()>& f) {
  try {
    EXPECT_TRUE(f()) << what;
  } catch (const tensor::Error& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

}  // namespace tensor::testing
