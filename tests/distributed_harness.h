// Multi-process harness of the distributed tests.
//
// A test calls run_ranks("scenario", world, ...): the test binary re-executes itself world
// times (fork + exec of /proc/self/exe, so no thread or OpenMP state of the parent leaks into
// the ranks) with TENSOR_DIST_SCENARIO, RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set;
// main() below runs the scenario instead of the gtest suite. Every rank has a hard alarm() and
// the parent kills whatever outlives its deadline, so a broken collective fails, never hangs.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tensor/distributed.h"
#include "tensor/tensor.h"

namespace dist_test {

using Scenario = std::function<void(int rank, int world)>;

inline std::map<std::string, Scenario>& scenarios() {
  static std::map<std::string, Scenario> s;
  return s;
}
inline bool register_scenario(const char* name, Scenario f) {
  scenarios()[name] = std::move(f);
  return true;
}

/// Defines a scenario run by every rank: `void body(int rank, int world)`.
#define DIST_SCENARIO(name)                                                              \
  static void dist_scenario_##name(int rank, int world);                                 \
  static const bool dist_scenario_reg_##name =                                           \
      ::dist_test::register_scenario(#name, dist_scenario_##name);                       \
  static void dist_scenario_##name([[maybe_unused]] int rank, [[maybe_unused]] int world)

/// A failed check inside a rank: throws, the rank prints it and exits 1.
#define DIST_CHECK(cond, msg)                                                                       \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      std::ostringstream os_;                                                                       \
      os_ << __FILE__ << ":" << __LINE__ << ": check failed: " #cond " -- " << msg;                 \
      throw std::runtime_error(os_.str());                                                          \
    }                                                                                               \
  } while (0)

/// A free TCP port on 127.0.0.1 (bind port 0, read back the kernel's pick).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// Whether a TCP listener could bind `port` on every address now.
inline bool port_is_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

/// A port p with p and p + 1 both free, for a multi-node tensorrun job (its launchers meet on
/// --master-port and its ranks on the next port, Note [tensorrun across nodes]). Taken below the
/// kernel's ephemeral range (32768 up): free_port()'s pick lies inside it, where p + 1 could be
/// held by any concurrent test's outgoing connection (a fresh-system run failed so: "cannot
/// listen on port 51288: Address already in use").
inline int free_port_pair() {
  static unsigned seed = static_cast<unsigned>(::getpid()) * 2654435761u ^
                         static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    seed = seed * 1103515245u + 12345u;
    const int p = 20000 + static_cast<int>((seed >> 8) % 12000);
    if (port_is_free(p) && port_is_free(p + 1)) return p;
  }
  throw std::runtime_error("free_port_pair: no two consecutive free ports in [20000, 32001)");
}

inline std::string env_or(const char* name, const char* dflt) {
  const char* v = std::getenv(name);
  return v ? v : dflt;
}

/// The MASTER_PORT of this rank.
inline int master_port() { return std::atoi(env_or("MASTER_PORT", "0").c_str()); }
/// "tcp://127.0.0.1:<MASTER_PORT>".
inline std::string init_method() { return "tcp://127.0.0.1:" + std::to_string(master_port()); }

/// Runs `scenario` on `world` ranks; returns each rank's exit status (-signal when killed).
/// Ranks still alive after `timeout_s` are killed (SIGKILL) and report -9.
inline std::vector<int> run_ranks(const std::string& scenario, int world, int timeout_s = 60) {
  int port = free_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("TENSOR_DIST_SCENARIO", scenario.c_str(), 1);
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("TENSOR_DIST_ALARM", std::to_string(timeout_s).c_str(), 1);
      char self[] = "/proc/self/exe";
      char* argv[] = {self, nullptr};
      ::execv(self, argv);
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(world, -9);
  std::vector<bool> done(world, false);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s + 5);
  int left = world;
  while (left > 0) {
    for (int r = 0; r < world; ++r) {
      if (done[r]) continue;
      int st = 0;
      if (::waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        done[r] = true;
        --left;
        codes[r] = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < world; ++r)
        if (!done[r]) {
          ::kill(pids[r], SIGKILL);
          ::waitpid(pids[r], nullptr, 0);
          done[r] = true;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return codes;
}

/// Expects every rank of `scenario` to exit 0.
inline void expect_all_ok(const std::string& scenario, int world, int timeout_s = 60) {
  auto codes = run_ranks(scenario, world, timeout_s);
  for (int r = 0; r < world; ++r) EXPECT_EQ(codes[r], 0) << "rank " << r << " of scenario " << scenario;
}

/// The values of `t` as doubles (any dtype).
inline std::vector<double> values(const tensor::Tensor& t) {
  auto d = t.to(tensor::kFloat64).contiguous();
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

}  // namespace dist_test

/// The test binary's main: a rank runs its scenario, otherwise the gtest suite runs.
int main(int argc, char** argv) {
  const char* sc = std::getenv("TENSOR_DIST_SCENARIO");
  if (sc && *sc) {
    ::alarm(static_cast<unsigned>(std::atoi(dist_test::env_or("TENSOR_DIST_ALARM", "60").c_str())));
    int rank = std::atoi(dist_test::env_or("RANK", "0").c_str());
    int world = std::atoi(dist_test::env_or("WORLD_SIZE", "1").c_str());
    auto it = dist_test::scenarios().find(sc);
    if (it == dist_test::scenarios().end()) {
      std::fprintf(stderr, "no scenario %s\n", sc);
      return 3;
    }
    try {
      it->second(rank, world);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d (%s): %s\n", rank, sc, e.what());
      return 1;
    }
    tensor::distributed::destroy_process_group();
    return 0;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
