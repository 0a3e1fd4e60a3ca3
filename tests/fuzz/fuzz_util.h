// Shared by the libFuzzer targets: a scratch file per process, and the one rule every target
// checks (an input either works or throws tensor::Error; anything else is a crash).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include <tensor/tensor.h>

namespace tensor::fuzz {

/// Aborts (a crash libFuzzer reports, with the input) when `cond` is false.
#define FUZZ_CHECK(cond, what)                                                           \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

/// Runs `f`: true when it returns, false when it throws tensor::Error. Any other exception is
/// a bug (the entry points promise tensor::Error for bad input), reported as a crash.
template <class F>
bool ok_or_error(F&& f) {
  try {
    f();
    return true;
  } catch (const tensor::Error&) {
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception other than tensor::Error escaped: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: a non-std::exception escaped\n");
    std::abort();
  }
}

/// A file this process owns for the whole run, in /dev/shm when it exists (no disk traffic per
/// execution), else in $TMPDIR or /tmp; removed at exit.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& tag) {
    struct stat st;
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0
                          ? "/dev/shm"
                          : (tmp && *tmp ? tmp : "/tmp");
    path_ = dir + "/libtensor_fuzz_" + tag + "_" + std::to_string(::getpid());
  }
  ~ScratchFile() { ::unlink(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  /// Replaces the file's contents with `n` bytes; returns its path.
  const std::string& write(const void* data, size_t n) {
    // A fresh file rather than a truncated one (see write_bytes in tests/test_io.cpp).
    ::unlink(path_.c_str());
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0, "cannot create the scratch file");
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      FUZZ_CHECK(w > 0, "cannot write the scratch file");
      p += w;
      n -= static_cast<size_t>(w);
    }
    ::close(fd);
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tensor::fuzz
