// The second libtorch peer: bench_ops's side of the pipe to bench_torch_peer (peer_main.cpp).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

namespace bench {

// Note [Two libtorch peers]
// TARGETS.md holds libtensor against the faster of two libtorch builds in the same run: Debian's
// 1.13 and the current release's wheel (2.15). Both define the same c10::, at:: and torch::
// symbols with different layouts and register their operators from static initializers, so the
// two cannot share a process. The twins (torch_*.cpp) are therefore compiled twice from the
// same sources: into bench_ops against 1.13, run in-process as before, and into
// bench_torch_peer against the wheel (benchmarks/CMakeLists.txt; `#if TORCH_VERSION_MAJOR`
// where the APIs differ).
// bench_ops starts bench_torch_peer once, as a child that lives for the whole run, and speaks
// to it over two pipes, one line each way:
//   bench_ops -> peer   the case's name
//   peer -> bench_ops   "sec <seconds per call>", "none" (no twin, or no figure here) or
//                       "error <message>"; the peer's first line is "ready <torch version>".
// Each case runs libtensor's side, then the 1.13 twin, then the 2.15 twin in the child, and
// bench_ops waits for the answer before the next case: one of the three runs at a time, on
// the same 2 threads, and a row's three figures come from the same few seconds of machine load,
// which separate runs of a 1.13 and a 2.15 program would not give on a shared machine. While
// one side runs the other's OpenMP workers are idle (libgomp spins for a moment after a
// parallel region, then sleeps); every timing's warm-up calls cover that moment.
// The ratio is libtensor's time over the faster peer's (both ratios are in the JSON). When the
// child cannot start (not built, or the wheel's libtorch_cpu.so cannot load: it needs the
// CUDA 13 runtime libraries), bench_ops says why once and the 2.15 column shows "-". If it dies
// in a case (a crash in a twin), that row says so and a new child serves the next case, at most
// kMaxPeerStarts times.
constexpr int kMaxPeerStarts = 3;

/// The child process running the twins compiled against the wheel's libtorch.
class TorchPeer {
 public:
  TorchPeer() = default;
  TorchPeer(const TorchPeer&) = delete;
  TorchPeer& operator=(const TorchPeer&) = delete;
  ~TorchPeer() { stop(); }

  /// Starts `exe --serve IN OUT` and waits for its "ready" line; false, with why, when it
  /// could not (the loader's own message, if any, went to stderr just before).
  bool start(const std::string& exe, std::string& why) {
    stop();
    ++starts_;
    ::signal(SIGPIPE, SIG_IGN);  // a dead child must give EPIPE on write, not kill bench_ops
    int to_child[2], from_child[2];
    if (::pipe(to_child) != 0) return fail(why, "pipe: " + std::string(std::strerror(errno)));
    if (::pipe(from_child) != 0) {
      ::close(to_child[0]), ::close(to_child[1]);
      return fail(why, "pipe: " + std::string(std::strerror(errno)));
    }
    // Our ends must not leak into the child, or it would never see end-of-file.
    ::fcntl(to_child[1], F_SETFD, FD_CLOEXEC);
    ::fcntl(from_child[0], F_SETFD, FD_CLOEXEC);
    const std::string in_fd = std::to_string(to_child[0]), out_fd = std::to_string(from_child[1]);
    const char* argv[] = {exe.c_str(), "--serve", in_fd.c_str(), out_fd.c_str(), nullptr};
    const int rc = ::posix_spawn(&pid_, exe.c_str(), nullptr, nullptr, const_cast<char**>(argv), environ);
    ::close(to_child[0]);
    ::close(from_child[1]);
    if (rc != 0) {
      ::close(to_child[1]), ::close(from_child[0]);
      pid_ = -1;
      return fail(why, exe + ": " + std::strerror(rc));
    }
    in_ = ::fdopen(to_child[1], "w");
    out_ = ::fdopen(from_child[0], "r");
    std::string line;
    if (!read_line(line) || line.rfind("ready ", 0) != 0) {
      const std::string status = reap();
      return fail(why, exe + " did not start (" + (line.empty() ? status : "said '" + line + "'") + ")");
    }
    version_ = line.substr(6);
    return true;
  }

  bool alive() const { return pid_ > 0; }
  /// How many times start() was called: bench_ops gives up after kMaxPeerStarts.
  int starts() const { return starts_; }
  /// The wheel's libtorch version, as the child reported it ("2.15.0").
  const std::string& version() const { return version_; }

  /// Runs the twin of case `name` in the child: seconds per call; 0 when there is no twin or
  /// no figure; -1 with `error` set when the twin raised or the child died (then !alive()).
  double run(const std::string& name, std::string& error) {
    if (!alive()) return 0;
    std::string line;
    if (std::fprintf(in_, "%s\n", name.c_str()) < 0 || std::fflush(in_) != 0 || !read_line(line)) {
      error = "torch peer " + reap() + " during this case";
      return -1;
    }
    if (line.rfind("sec ", 0) == 0) return std::strtod(line.c_str() + 4, nullptr);
    if (line.rfind("error ", 0) == 0) {
      error = line.substr(6);
      return -1;
    }
    return 0;  // "none"
  }

  /// Closes the pipe (the child exits at end-of-file) and waits for it.
  void stop() {
    if (in_) std::fclose(in_), in_ = nullptr;
    if (out_) std::fclose(out_), out_ = nullptr;
    if (pid_ > 0) reap();
  }

 private:
  static bool fail(std::string& why, const std::string& msg) {
    why = msg;
    return false;
  }
  bool read_line(std::string& line) {
    line.clear();
    char buf[4096];
    while (std::fgets(buf, sizeof buf, out_)) {
      line += buf;
      if (!line.empty() && line.back() == '\n') {
        line.pop_back();
        return true;
      }
    }
    return false;
  }
  /// Waits for the child and says how it ended.
  std::string reap() {
    if (in_) std::fclose(in_), in_ = nullptr;
    if (out_) std::fclose(out_), out_ = nullptr;
    int status = 0;
    const pid_t pid = pid_;
    pid_ = -1;
    if (pid <= 0 || ::waitpid(pid, &status, 0) != pid) return "was lost";
    if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }

  pid_t pid_ = -1;
  FILE* in_ = nullptr;   // to the child
  FILE* out_ = nullptr;  // from the child
  std::string version_;
  int starts_ = 0;
};

}  // namespace bench
