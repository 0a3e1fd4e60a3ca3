// tensorrun: environment of the ranks, line prefixes, failure propagation, restarts, jobs of
// several nodes (two launchers on loopback), ranks dying with their launcher, and two jobs on
// one port.
#include <spawn.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <future>

#include "tests/distributed_harness.h"

using namespace tensor;
namespace dist = tensor::distributed;

namespace {

struct LaunchResult {
  int status = -1;  // tensorrun's exit status
  std::string out;  // stdout and stderr
  double seconds = 0;
};

// Runs a shell command line (stdout and stderr together), timing it.
LaunchResult run_shell(const std::string& cmd) {
  auto t0 = std::chrono::steady_clock::now();
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  LaunchResult r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Runs `tensorrun args` through the shell, bounded by coreutils' timeout; launches that run at
// once (threads) call this and set the environment themselves, once.
LaunchResult run_cmd(const std::string& args) {
  return run_shell(std::string("timeout -s KILL 60 ") + TENSORRUN_PATH + " " + args);
}

// The same with the test scenario the ranks run set for this launch only.
LaunchResult tensorrun(const std::string& args, const std::string& scenario = "") {
  if (!scenario.empty()) ::setenv("TENSOR_DIST_SCENARIO", scenario.c_str(), 1);
  LaunchResult r = run_cmd(args);
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
  EXPECT_EQ(tensorrun("--nnodes 2 --node-rank 0 true").status, 2);  // no --rdzv-id
  EXPECT_EQ(tensorrun("--nnodes 2 --node-rank 2 --rdzv-id x true").status, 2);
  EXPECT_EQ(tensorrun("--max-restarts -1 true").status, 2);
  EXPECT_EQ(tensorrun("--nproc-per-node two true").status, 2);
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
    return run_shell("timeout -s KILL 60 env " + env + DDP_EXAMPLE_PATH + " " + flags);
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

TEST(DistributedLauncher, FailedRanksAreRestartedWhileRestartsAreLeft) {
  // Round 0: rank 1 fails. Round 1: every rank (rank 0 too) starts again and succeeds.
  const std::string prog =
      "sh -c 'echo round=$TENSOR_RESTART_COUNT; if [ $TENSOR_RESTART_COUNT = 0 ] && [ $RANK = 1 ]; then exit 4; fi'";
  LaunchResult r = tensorrun("--nproc-per-node 2 --max-restarts 2 " + prog);
  EXPECT_EQ(r.status, 0) << r.out;
  // (Rank 0 of round 0 may be stopped before it prints: rank 1's failure stops it.)
  for (const char* line : {"[1] round=0\n", "[0] round=1\n", "[1] round=1\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in " << r.out;
  EXPECT_NE(r.out.find("restarting the ranks (restart 1 of 2)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("round=2"), std::string::npos) << r.out;
  // Without restarts the failure is the job's status; a rank failing every round uses them up.
  EXPECT_EQ(tensorrun("--nproc-per-node 2 " + prog).status, 4);
  LaunchResult always = tensorrun("--nproc-per-node 1 --max-restarts 2 sh -c 'echo round=$TENSOR_RESTART_COUNT; exit 6'");
  EXPECT_EQ(always.status, 6) << always.out;
  EXPECT_NE(always.out.find("[0] round=2\n"), std::string::npos) << always.out;
  EXPECT_NE(always.out.find("no restarts left (2 used)"), std::string::npos) << always.out;
}

// Two launchers on loopback stand for two hosts: global ranks, one world, one allreduce.
TEST(DistributedLauncher, TwoNodeJobRunsOneWorld) {
  const std::string port = std::to_string(dist_test::free_port_pair());
  ::setenv("TENSOR_DIST_SCENARIO", "launched", 1);
  auto node = [&](int r) {
    return std::async(std::launch::async, [=] {
      return run_cmd("--nnodes 2 --node-rank " + std::to_string(r) + " --rdzv-id job1 --nproc-per-node 2 --master-port " +
                     port + " " + self_exe());
    });
  };
  auto n0 = node(0), n1 = node(1);
  LaunchResult r0 = n0.get(), r1 = n1.get();
  ::unsetenv("TENSOR_DIST_SCENARIO");
  EXPECT_EQ(r0.status, 0) << r0.out;
  EXPECT_EQ(r1.status, 0) << r1.out;
  for (int k = 0; k < 4; ++k) {
    const LaunchResult& r = k < 2 ? r0 : r1;
    const std::string ks = std::to_string(k), local = std::to_string(k % 2);
    EXPECT_NE(r.out.find("[" + ks + "] env RANK=" + ks + " LOCAL_RANK=" + local + " WORLD_SIZE=4 LOCAL_WORLD_SIZE=2"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("[" + ks + "] sum=10\n"), std::string::npos) << r.out;  // 1 + 2 + 3 + 4
  }
}

// A rank failing on node 1 stops node 0's ranks (which would sleep for 50 s) and restarts both
// nodes' ranks; the second round succeeds everywhere.
TEST(DistributedLauncher, TwoNodeJobRestartsEveryNodeAfterOneFails) {
  const std::string port = std::to_string(dist_test::free_port_pair());
  const std::string prog =
      "sh -c 'echo round=$TENSOR_RESTART_COUNT; if [ $TENSOR_RESTART_COUNT = 0 ]; then if [ $RANK = 1 ]; then exit 5; "
      "fi; exec sleep 50; fi'";
  auto node = [&](int r) {
    return std::async(std::launch::async, [=] {
      return run_cmd("--nnodes 2 --node-rank " + std::to_string(r) + " --rdzv-id job2 --max-restarts 1 --master-port " +
                     port + " " + prog);
    });
  };
  auto n0 = node(0), n1 = node(1);
  LaunchResult r0 = n0.get(), r1 = n1.get();
  EXPECT_EQ(r0.status, 0) << r0.out;
  EXPECT_EQ(r1.status, 0) << r1.out;
  EXPECT_NE(r0.out.find("a rank on another node failed (status 5)"), std::string::npos) << r0.out;
  EXPECT_NE(r0.out.find("[0] round=1\n"), std::string::npos) << r0.out;
  EXPECT_NE(r1.out.find("[1] round=1\n"), std::string::npos) << r1.out;
  EXPECT_LT(r0.seconds, 30) << "node 0's sleeping rank was not stopped";
  // Without restarts both launchers end with the failure.
  const std::string port2 = std::to_string(dist_test::free_port_pair());
  auto once = [&](int r) {
    return std::async(std::launch::async, [=] {
      return run_cmd("--nnodes 2 --node-rank " + std::to_string(r) + " --rdzv-id job3 --master-port " + port2 + " " + prog);
    });
  };
  auto m0 = once(0), m1 = once(1);
  LaunchResult s0 = m0.get(), s1 = m1.get();
  EXPECT_NE(s0.status, 0) << s0.out;
  EXPECT_EQ(s1.status, 5) << s1.out;
}

namespace {
// Whether process `pid` is gone (or a zombie nobody reaped yet).
bool gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}
}  // namespace

// kill -9 of tensorrun used to leave its ranks training, orphaned: they now die with it.
TEST(DistributedLauncher, RanksDieWithTheirLauncher) {
  char dir_template[] = "/tmp/tensorrun_orphansXXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string script = "echo $$ > " + dir + "/pid.$RANK.tmp && mv " + dir + "/pid.$RANK.tmp " + dir +
                             "/pid.$RANK; exec sleep 60";
  std::vector<std::string> args = {TENSORRUN_PATH, "--nproc-per-node", "2", "sh", "-c", script};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t launcher = -1;
  ASSERT_EQ(::posix_spawn(&launcher, TENSORRUN_PATH, nullptr, nullptr, argv.data(), environ), 0);
  std::vector<pid_t> ranks;
  for (int tries = 0; tries < 200 && ranks.size() < 2; ++tries) {
    ranks.clear();
    for (int r = 0; r < 2; ++r) {
      std::ifstream f(dir + "/pid." + std::to_string(r));
      pid_t p = 0;
      if (f >> p) ranks.push_back(p);
    }
    if (ranks.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(ranks.size(), 2u) << "the ranks did not start";
  for (pid_t p : ranks) EXPECT_FALSE(gone(p));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  bool all_gone = false;
  for (int tries = 0; tries < 100 && !all_gone; ++tries) {
    all_gone = gone(ranks[0]) && gone(ranks[1]);
    if (!all_gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(all_gone) << "a rank outlived its killed launcher";
  for (pid_t p : ranks) ::kill(p, SIGKILL);  // nothing left behind if the check failed
  (void)std::system(("rm -rf " + dir).c_str());
}

// Job A's rank 1 comes 1.5 s late, so A's rendezvous is still open when job B starts on the
// same port. B's rank 1 reaches A's store (B's rank 0, 1 s late, would then fail to listen):
// before run ids it joined A's rendezvous in place of A's rank 1 (A's rank 0 then summed B's
// value, or A died). Now B's rank 1 is refused (another run id), B fails, and A finishes with
// its own sum.
DIST_SCENARIO(late_rank_sum) {
  const char* delay = rank == 0 ? "RANK0_DELAY_MS" : "RANK1_DELAY_MS";
  std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(dist_test::env_or(delay, "0").c_str())));
  auto pg = dist::init_process_group("gloo", -1, -1, "env://", std::chrono::seconds(10));
  Tensor t = full({1}, rank + 1.0 + std::atof(dist_test::env_or("JOB_OFFSET", "0").c_str()), kFloat64);
  pg->allreduce(t)->wait();
  std::fprintf(stderr, "sum=%g\n", t.item<double>());
}

TEST(DistributedLauncher, TwoJobsOnOnePortDoNotDisturbEachOther) {
  const std::string port = std::to_string(dist_test::free_port());
  ::setenv("TENSOR_DIST_SCENARIO", "late_rank_sum", 1);
  auto a = std::async(std::launch::async, [&] {
    return run_cmd("--nproc-per-node 2 --master-port " + port + " env RANK1_DELAY_MS=1500 " + self_exe());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  LaunchResult b =
      run_cmd("--nproc-per-node 2 --master-port " + port + " env JOB_OFFSET=100 RANK0_DELAY_MS=1000 " + self_exe());
  LaunchResult ra = a.get();
  ::unsetenv("TENSOR_DIST_SCENARIO");
  EXPECT_EQ(ra.status, 0) << ra.out;
  EXPECT_NE(ra.out.find("[0] sum=3\n"), std::string::npos) << ra.out;
  EXPECT_NE(ra.out.find("[1] sum=3\n"), std::string::npos) << ra.out;
  EXPECT_NE(b.status, 0) << b.out;
  EXPECT_NE(b.out.find("belongs to another job"), std::string::npos) << b.out;
}

// Two hosts: two network namespaces joined by a veth pair, one launcher in each, the master at
// the first one's address. This host's name resolves to 127.0.0.1 here, which the other host
// cannot reach: Gloo must bind to the address that reaches the master (Note [Gloo's address on
// a multi-host job]), with no GLOO_SOCKET_IFNAME. Needs root (ip netns); skips without it.
TEST(DistributedLauncher, TwoHostJobInNetworkNamespaces) {
  const std::string tag = std::to_string(::getpid() % 100000);
  const std::string a = "ltA" + tag, b = "ltB" + tag, va = "lva" + tag, vb = "lvb" + tag;
  auto sh = [](const std::string& c) { return std::system((c + " >/dev/null 2>&1").c_str()) == 0; };
  if (::geteuid() != 0 || !sh("ip netns add " + a)) GTEST_SKIP() << "needs root and ip netns";
  struct Cleanup {
    std::string a, b;
    ~Cleanup() {
      (void)std::system(("ip netns del " + a + " >/dev/null 2>&1; ip netns del " + b + " >/dev/null 2>&1").c_str());
    }
  } cleanup{a, b};
  // A system where namespaces work but veth pairs do not (a container, a chroot) skips too.
  const bool made = sh("ip netns add " + b) && sh("ip link add " + va + " type veth peer name " + vb) &&
                    sh("ip link set " + va + " netns " + a + " && ip link set " + vb + " netns " + b) &&
                    sh("ip -n " + a + " addr add 10.231.7.1/24 dev " + va + " && ip -n " + a + " link set " + va +
                       " up && ip -n " + a + " link set lo up") &&
                    sh("ip -n " + b + " addr add 10.231.7.2/24 dev " + vb + " && ip -n " + b + " link set " + vb +
                       " up && ip -n " + b + " link set lo up");
  if (!made) GTEST_SKIP() << "ip netns works but the veth pair could not be set up";
  ::setenv("TENSOR_DIST_SCENARIO", "launched", 1);
  ::unsetenv("GLOO_SOCKET_IFNAME");
  // Each launcher (and so its rank) runs inside its host's namespace.
  auto host = [&](const std::string& ns, int r) {
    return std::async(std::launch::async, [=] {
      return run_shell("timeout -s KILL 60 ip netns exec " + ns + " " + TENSORRUN_PATH + " --nnodes 2 --node-rank " +
                       std::to_string(r) +
                       " --rdzv-id hosts --rdzv-timeout 20 --master-addr 10.231.7.1 --master-port 29611 "
                       "--nproc-per-node 1 " + self_exe());
    });
  };
  auto h0 = host(a, 0), h1 = host(b, 1);
  LaunchResult r0 = h0.get(), r1 = h1.get();
  ::unsetenv("TENSOR_DIST_SCENARIO");
  EXPECT_EQ(r0.status, 0) << r0.out;
  EXPECT_EQ(r1.status, 0) << r1.out;
  EXPECT_NE(r0.out.find("[0] sum=3\n"), std::string::npos) << r0.out;
  EXPECT_NE(r1.out.find("[1] sum=3\n"), std::string::npos) << r1.out;
}

// TENSOR_DIST_TIMEOUT bounds a job's waits without a code change: rank 0 of 2, alone, gives up
// after 1.5 s instead of c10d's 30 minutes, naming the timeout; a bad value is named too.
TEST(DistributedLauncher, TimeoutFromTheEnvironmentBoundsTheRendezvous) {
  auto run = [&](const std::string& value) {
    return run_shell("timeout -s KILL 60 env TENSOR_DIST_SCENARIO=launched TENSOR_DIST_TIMEOUT=" + value +
                     " RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(dist_test::free_port()) +
                     " " + self_exe());
  };
  LaunchResult r = run("1.5");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1500 ms"), std::string::npos) << r.out;
  EXPECT_GE(r.seconds, 1.4) << r.out;
  EXPECT_LT(r.seconds, 15.0) << r.out;
  LaunchResult bad = run("soon");
  EXPECT_NE(bad.status, 0) << bad.out;
  EXPECT_NE(bad.out.find("TENSOR_DIST_TIMEOUT='soon'"), std::string::npos) << bad.out;
}

namespace {
// The tensors of two safetensors files are equal, bit for bit (metadata aside).
::testing::AssertionResult same_tensors(const std::string& a, const std::string& b) {
  auto x = io::load(a), y = io::load(b);
  if (x.size() != y.size()) return ::testing::AssertionFailure() << a << " and " << b << " hold different counts";
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].first != y[i].first || !x[i].second.equal(y[i].second))
      return ::testing::AssertionFailure() << "'" << x[i].first << "' differs between " << a << " and " << b;
  return ::testing::AssertionSuccess();
}
const char* kFashionMnist = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

// A network namespace pair ("two hosts") joined by a veth pair: 10.231.<net>.1 and .2.
struct TwoHosts {
  std::string a, b, va;
  bool ok = false;
  explicit TwoHosts(int net) {
    const std::string tag = std::to_string(::getpid() % 100000) + "_" + std::to_string(net);
    a = "lhA" + tag;
    b = "lhB" + tag;
    va = "lha" + tag;
    const std::string vb = "lhb" + tag, n = std::to_string(net);
    if (::geteuid() != 0 || !sh("ip netns add " + a)) return;
    ok = sh("ip netns add " + b) && sh("ip link add " + va + " type veth peer name " + vb) &&
         sh("ip link set " + va + " netns " + a + " && ip link set " + vb + " netns " + b) &&
         sh("ip -n " + a + " addr add 10.231." + n + ".1/24 dev " + va + " && ip -n " + a + " link set " + va +
            " up && ip -n " + a + " link set lo up") &&
         sh("ip -n " + b + " addr add 10.231." + n + ".2/24 dev " + vb + " && ip -n " + b + " link set " + vb +
            " up && ip -n " + b + " link set lo up");
  }
  ~TwoHosts() { sh("ip netns del " + a + "; ip netns del " + b); }
  static bool sh(const std::string& c) { return std::system((c + " >/dev/null 2>&1").c_str()) == 0; }
  // Runs `tensorrun args` inside host h (0 or 1) in the background.
  std::future<LaunchResult> launch(int h, const std::string& args) const {
    const std::string ns = h == 0 ? a : b;
    return std::async(std::launch::async, [=] {
      return run_shell("timeout -s KILL 120 ip netns exec " + ns + " " + TENSORRUN_PATH + " " + args);
    });
  }
};
}  // namespace

// The shipped DDP example under tensorrun: a rank killed mid-run (SIGKILL, --die-at-step) with
// --max-restarts 1 restarts from the example's checkpoint and finishes with the parameters and
// Adam state of an uninterrupted run, bit for bit, on one host and on two (network namespaces:
// the two-host job, killed and restarted, ends with the one-host run's bits) (Note [Resuming a
// DDP job]).
TEST(DistributedLauncher, DdpExampleRestartsAndRunsOnTwoHostsToTheSameBits) {
#ifndef DDP_EXAMPLE_PATH
  GTEST_SKIP() << "examples are not built (TENSOR_BUILD_EXAMPLES=OFF)";
#else
  if (::access(kFashionMnist, R_OK) != 0) GTEST_SKIP() << "no Fashion-MNIST at " << kFashionMnist;
  char dir_template[] = "/tmp/tensorrun_ddpXXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string common = std::string(DDP_EXAMPLE_PATH) + " --limit-batches 16 --checkpoint-every 5 --timeout 30";
  LaunchResult plain = run_cmd("--nproc-per-node 2 " + common + " --checkpoint " + dir + "/plain.st");
  ASSERT_EQ(plain.status, 0) << plain.out;
  LaunchResult killed =
      run_cmd("--nproc-per-node 2 --max-restarts 1 " + common + " --checkpoint " + dir + "/killed.st --die-at-step 8");
  ASSERT_EQ(killed.status, 0) << killed.out;
  EXPECT_NE(killed.out.find("--die-at-step 8: killing myself"), std::string::npos) << killed.out;
  EXPECT_NE(killed.out.find("restarting the ranks (restart 1 of 1)"), std::string::npos) << killed.out;
  EXPECT_NE(killed.out.find("resumed from " + dir + "/killed.st in epoch 1 after batch 5 (step 5)"), std::string::npos)
      << killed.out;
  EXPECT_TRUE(same_tensors(dir + "/plain.st", dir + "/killed.st"));

  // Two hosts, one rank each, and the second host's rank killed at step 8: both launchers
  // restart their ranks, which resume from the checkpoint (one file, which both hosts see).
  TwoHosts hosts(21);
  if (hosts.ok) {
    const std::string node =
        "--nnodes 2 --rdzv-id ddp --max-restarts 1 --master-addr 10.231.21.1 --master-port 29631 --nproc-per-node 1 ";
    const std::string run = common + " --checkpoint " + dir + "/hosts.st --die-at-step 8";
    auto h0 = hosts.launch(0, node + "--node-rank 0 " + run);
    auto h1 = hosts.launch(1, node + "--node-rank 1 " + run);
    LaunchResult r0 = h0.get(), r1 = h1.get();
    ASSERT_EQ(r0.status, 0) << r0.out;
    ASSERT_EQ(r1.status, 0) << r1.out;
    EXPECT_NE(r1.out.find("--die-at-step 8: killing myself"), std::string::npos) << r1.out;
    EXPECT_NE(r0.out.find("a rank on another node failed"), std::string::npos) << r0.out;
    EXPECT_NE(r0.out.find("resumed from " + dir + "/hosts.st in epoch 1 after batch 5 (step 5)"), std::string::npos)
        << r0.out;
    EXPECT_TRUE(same_tensors(dir + "/plain.st", dir + "/hosts.st"));
  }
  (void)std::system(("rm -rf " + dir).c_str());
  if (!hosts.ok) GTEST_SKIP() << "the one-host runs passed; two hosts need root and ip netns";
#endif
}

// A link cut mid-run (the veth pair taken down): every rank of both hosts raises within the
// job's timeout (5 s here), naming the collective, and both launchers exit non-zero instead of
// waiting the default 30 minutes.
TEST(DistributedLauncher, CutLinkStopsEveryRankWithinTheTimeout) {
#ifndef DDP_EXAMPLE_PATH
  GTEST_SKIP() << "examples are not built (TENSOR_BUILD_EXAMPLES=OFF)";
#else
  if (::access(kFashionMnist, R_OK) != 0) GTEST_SKIP() << "no Fashion-MNIST at " << kFashionMnist;
  TwoHosts hosts(22);
  if (!hosts.ok) GTEST_SKIP() << "needs root and ip netns";
  const std::string node = "--nnodes 2 --rdzv-id cut --rdzv-timeout 20 --master-addr 10.231.22.1 --master-port 29641 "
                           "--nproc-per-node 1 ";
  const std::string prog = std::string(DDP_EXAMPLE_PATH) + " --limit-batches 100000 --epochs 5 --timeout 5";
  auto h0 = hosts.launch(0, node + "--node-rank 0 " + prog);
  auto h1 = hosts.launch(1, node + "--node-rank 1 " + prog);
  // Training has begun once the ranks are past the rendezvous; then the link goes down.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  const auto cut = std::chrono::steady_clock::now();
  ASSERT_TRUE(TwoHosts::sh("ip -n " + hosts.a + " link set " + hosts.va + " down"));
  LaunchResult r0 = h0.get(), r1 = h1.get();
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
  EXPECT_NE(r0.status, 0) << r0.out;
  EXPECT_NE(r1.status, 0) << r1.out;
  EXPECT_NE(r0.out.find("[0] ddp_fashion_mnist:"), std::string::npos) << r0.out;
  EXPECT_NE(r1.out.find("[1] ddp_fashion_mnist:"), std::string::npos) << r1.out;
  // Within the 5 s timeout plus the launchers' store checks and the grace period.
  EXPECT_LT(after, 40.0) << r0.out << r1.out;
#endif
}
