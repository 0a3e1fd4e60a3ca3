// tensorrun: environment of the ranks, line prefixes, failure propagation.
#include <array>
#include <cstdio>

#include "tests/distributed_harness.h"

using namespace tensor;
namespace dist = tensor::distributed;

namespace {

struct LaunchResult {
  int status = -1;  // tensorrun's exit status
  std::string out;  // stdout and stderr
  double seconds = 0;
};

// Runs `tensorrun args` through the shell, bounded by coreutils' timeout.
LaunchResult tensorrun(const std::string& args, const std::string& scenario = "") {
  if (!scenario.empty()) ::setenv("TENSOR_DIST_SCENARIO", scenario.c_str(), 1);
  std::string cmd = std::string("timeout -s KILL 60 ") + TENSORRUN_PATH + " " + args + " 2>&1";
  auto t0 = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  LaunchResult r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::unsetenv("TENSOR_DIST_SCENARIO");
  return r;
}

std::string self_exe() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  return std::string(path, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace

// A rank started by tensorrun: reports its environment, then allreduces through env init.
DIST_SCENARIO(launched) {
  std::printf("env RANK=%s LOCAL_RANK=%s WORLD_SIZE=%s LOCAL_WORLD_SIZE=%s MASTER_ADDR=%s port_set=%d\n",
              dist_test::env_or("RANK", "?").c_str(), dist_test::env_or("LOCAL_RANK", "?").c_str(),
              dist_test::env_or("WORLD_SIZE", "?").c_str(), dist_test::env_or("LOCAL_WORLD_SIZE", "?").c_str(),
              dist_test::env_or("MASTER_ADDR", "?").c_str(), dist_test::master_port() > 0);
  std::fflush(stdout);
  auto pg = dist::init_process_group("gloo");
  Tensor t = full({1}, rank + 1.0, kFloat64);
  pg->allreduce(t)->wait();
  std::fprintf(stderr, "sum=%g\n", t.item<double>());
}

TEST(DistributedLauncher, SetsTheEnvironmentAndPrefixesLines) {
  LaunchResult r = tensorrun("--nproc-per-node 3 " + self_exe(), "launched");
  EXPECT_EQ(r.status, 0) << r.out;
  for (int k = 0; k < 3; ++k) {
    std::string k_s = std::to_string(k);
    std::string env = "[" + k_s + "] env RANK=" + k_s + " LOCAL_RANK=" + k_s +
                      " WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 port_set=1\n";
    EXPECT_NE(r.out.find(env), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[" + k_s + "] sum=6\n"), std::string::npos) << r.out;  // 1 + 2 + 3
  }
}

TEST(DistributedLauncher, MasterPortOptionIsPassedThrough) {
  int port = dist_test::free_port();
  LaunchResult r = tensorrun("--nproc-per-node=2 --master-port " + std::to_string(port) + " sh -c 'echo port=$MASTER_PORT'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("[0] port=" + std::to_string(port) + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] port=" + std::to_string(port) + "\n"), std::string::npos) << r.out;
}

TEST(DistributedLauncher, OneFailingRankStopsTheOthers) {
  // Rank 1 fails; rank 0 would sleep for 50 s. tensorrun must exit with rank 1's status and
  // stop rank 0 (SIGTERM) long before that.
  LaunchResult r = tensorrun("--nproc-per-node 2 sh -c 'if [ $RANK = 1 ]; then echo failing; exit 3; fi; exec sleep 50'");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("[1] failing\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1 exited with status 3"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 30) << "the sleeping rank was not stopped";
}

TEST(DistributedLauncher, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  LaunchResult r = tensorrun(
      "--nproc-per-node 2 --grace-period 0.5 sh -c 'trap \"\" TERM; if [ $RANK = 0 ]; then exit 1; fi; "
      "while true; do sleep 0.1; done'");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_LT(r.seconds, 30) << "the rank ignoring SIGTERM was not killed";
}

TEST(DistributedLauncher, BadUsageFails) {
  EXPECT_EQ(tensorrun("--nproc-per-node 2").status, 2);
  EXPECT_EQ(tensorrun("--bogus 1 true").status, 2);
  LaunchResult r = tensorrun("--nproc-per-node 1 /nonexistent/program");
  EXPECT_EQ(r.status, 127) << r.out;
  EXPECT_NE(r.out.find("cannot run /nonexistent/program"), std::string::npos) << r.out;
}

// The shipped DDP example takes --timeout: a rank whose peer never starts gives up after it
// (the default is c10d's 30 minutes, which left an operator with a silent job).
TEST(DistributedLauncher, DdpExampleTimeoutFlagBoundsTheRendezvous) {
#ifndef DDP_EXAMPLE_PATH
  GTEST_SKIP() << "examples are not built (TENSOR_BUILD_EXAMPLES=OFF)";
#else
  // Rank 0 of 2, started alone: rank 1 never comes.
  const std::string env = "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                          std::to_string(dist_test::free_port()) + " ";
  auto run = [&](const std::string& flags) {
    std::string cmd = "timeout -s KILL 60 env " + env + DDP_EXAMPLE_PATH + " " + flags + " 2>&1";
    auto t0 = std::chrono::steady_clock::now();
    FILE* p = ::popen(cmd.c_str(), "r");
    LaunchResult r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  LaunchResult r = run("--timeout 1.5");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("1500 ms"), std::string::npos) << r.out;
  EXPECT_GE(r.seconds, 1.4) << r.out;
  EXPECT_LT(r.seconds, 15.0) << r.out;
  for (const char* bad : {"0", "-3", "soon", "1s"}) {
    LaunchResult b = run(std::string("--timeout ") + bad);
    EXPECT_EQ(b.status, 2) << bad << ": " << b.out;
    EXPECT_NE(b.out.find("--timeout: expected a positive number of seconds"), std::string::npos) << b.out;
  }
#endif
}
