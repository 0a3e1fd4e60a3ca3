// Shared by the tests that write files: one scratch directory per test binary, removed after
// the last test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace tensor::testing {

/// The binary's scratch directory (made on first use under gtest's TempDir()).
inline const std::string& temp_dir() {
  static const std::string dir = [] {
    std::string tmpl = ::testing::TempDir() + "libtensor_test_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    char* d = ::mkdtemp(buf.data());
    if (!d) throw std::runtime_error("mkdtemp failed");
    return std::string(d);
  }();
  return dir;
}

/// A path inside temp_dir().
inline std::string temp_path(const std::string& name) { return temp_dir() + "/" + name; }

struct TempDirCleanup : ::testing::Environment {
  void TearDown() override { std::filesystem::remove_all(temp_dir()); }
};
inline const auto* const kTempDirCleanup = ::testing::AddGlobalTestEnvironment(new TempDirCleanup);

}  // namespace tensor::testing
