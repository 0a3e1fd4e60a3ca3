// tensorrun: the launcher of a distributed job (as torchrun), on one node or several.
//
//   tensorrun [--nproc-per-node N] [--nnodes M --node-rank R --rdzv-id ID] [--master-addr A]
//             [--master-port P] [--max-restarts K] [--grace-period S] [--rdzv-timeout S] prog args...
//
// Starts N copies of prog with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
// MASTER_ADDR, MASTER_PORT, TENSOR_RUN_ID and TENSOR_RESTART_COUNT set, prefixes every line they
// print with "[rank] ", and when one exits non-zero (or is killed) sends SIGTERM to the others,
// SIGKILL after the grace period; then restarts them all (on every node) while restarts are
// left, else exits with that status. A SIGINT/SIGTERM to tensorrun is forwarded the same way,
// and a rank dies with its tensorrun, even one killed by SIGKILL.
//
// Note [tensorrun across nodes]
// The launchers of an M-node job meet in a TCPStore that node 0's launcher serves on the master
// port (the ranks' own store uses the next port). Each restart round r is a barrier on
// "round/r/joined"; a launcher whose rank failed sets "round/r/failed", and every launcher
// polls that key while its ranks run, so a failure on one node stops and restarts the ranks of
// all nodes. The ranks of round r get run id "<id>/r" (Note [Store run ids] in
// src/distributed/Store.cpp), so a straggler of an earlier round, or another job on the same
// ports, is refused by the ranks' store instead of joining it. Node ranks are static (given by
// --node-rank), as torchrun's static rendezvous; membership is not elastic.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tensor/core/Error.h"
#include "tensor/distributed/store.h"

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "tensorrun: %s\nusage: tensorrun [--nproc-per-node N] [--nnodes M --node-rank R --rdzv-id ID] "
               "[--master-addr ADDR] [--master-port PORT] [--max-restarts K] [--grace-period SECONDS] "
               "[--rdzv-timeout SECONDS] prog [args...]\n",
               msg);
  std::exit(2);
}

// A free TCP port: bind port 0 and read back what the kernel picked (rank 0 rebinds it).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int out = -1, err = -1;            // read ends of the child's stdout / stderr
  std::string out_buf, err_buf;      // partial lines
  bool running = false;
  int status = 0;
};

// Writes complete lines of `buf` with the rank prefix; `flush` writes the rest too.
void emit(FILE* f, int rank, std::string& buf, bool flush) {
  size_t start = 0;
  for (;;) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    std::fprintf(f, "[%d] %.*s\n", rank, static_cast<int>(nl - start), buf.data() + start);
    start = nl + 1;
  }
  buf.erase(0, start);
  if (flush && !buf.empty()) {
    std::fprintf(f, "[%d] %s\n", rank, buf.c_str());
    buf.clear();
  }
  std::fflush(f);
}

// Drains whatever a pipe has; closes it at EOF.
void drain(int& fd, FILE* f, int rank, std::string& buf) {
  if (fd < 0) return;
  char tmp[4096];
  for (;;) {
    ssize_t n = ::read(fd, tmp, sizeof(tmp));
    if (n > 0) {
      buf.append(tmp, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    ::close(fd);  // EOF or error
    fd = -1;
    break;
  }
  emit(f, rank, buf, fd < 0);
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

struct Options {
  int nproc = 1, nnodes = 1, node_rank = 0, port = 0, max_restarts = 0;
  std::string addr = "127.0.0.1", run_id;
  double grace = 5.0, rdzv_timeout = 900.0;
};

// How a round of local ranks ended.
enum class Outcome { Success, LocalFailure, RemoteFailure, Signal, LostStore };
struct RoundResult {
  Outcome outcome = Outcome::Success;
  int code = 0;
};

// A random run id for a single-node job that was not given one: two jobs differ.
std::string random_id() {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd());
  return buf;
}

// Starts the local ranks of round `round`, forwards their output, and waits for them. Every
// 100 ms `remote_failed` says whether another node's rank failed (it may raise when the
// launchers' store is gone); either stops the local ranks.
template <class RemoteFailed>
RoundResult run_round(const Options& o, char** prog, int round, int worker_port, RemoteFailed&& remote_failed) {
  const pid_t launcher = ::getpid();
  std::vector<Child> kids(static_cast<size_t>(o.nproc));
  for (int r = 0; r < o.nproc; ++r) {
    const int rank = o.node_rank * o.nproc + r;
    int po[2], pe[2];
    if (::pipe2(po, O_CLOEXEC) != 0 || ::pipe2(pe, O_CLOEXEC) != 0) {
      std::perror("tensorrun: pipe");
      std::exit(1);
    }
    // A SIGTERM that reaches the child before it restored the default handlers would be
    // swallowed by ours: block the signals across fork and the child's reset.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    ::sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("tensorrun: fork");
      std::exit(1);
    }
    if (pid == 0) {
      // A rank must not outlive its launcher (a kill -9 of tensorrun left ranks training):
      // the kernel kills it when the launcher dies, and one that lost the race exits now.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(1);
      // Each rank leads its own process group so that stopping it stops what it started too.
      ::setpgid(0, 0);
      ::dup2(po[1], 1);
      ::dup2(pe[1], 2);
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(o.nnodes * o.nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
      ::setenv("GROUP_RANK", std::to_string(o.node_rank).c_str(), 1);
      ::setenv("MASTER_ADDR", o.addr.c_str(), 1);
      ::setenv("MASTER_PORT", std::to_string(worker_port).c_str(), 1);
      ::setenv("TENSOR_RUN_ID", (o.run_id + "/" + std::to_string(round)).c_str(), 1);
      ::setenv("TENSOR_RESTART_COUNT", std::to_string(round).c_str(), 1);
      ::setenv("TENSOR_MAX_RESTARTS", std::to_string(o.max_restarts).c_str(), 1);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::sigprocmask(SIG_SETMASK, &old, nullptr);
      ::execvp(prog[0], prog);
      std::fprintf(stderr, "tensorrun: cannot run %s: %s\n", prog[0], std::strerror(errno));
      ::_exit(127);
    }
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::setpgid(pid, pid);  // also here: no race with the first kill
    ::close(po[1]);
    ::close(pe[1]);
    ::fcntl(po[0], F_SETFL, O_NONBLOCK);
    ::fcntl(pe[0], F_SETFL, O_NONBLOCK);
    kids[r] = Child{rank, pid, po[0], pe[0], "", "", true, 0};
  }

  using Clock = std::chrono::steady_clock;
  RoundResult result;
  bool terminating = false, killed = false;
  Clock::time_point kill_at{}, next_remote_check = Clock::now();
  auto terminate_all = [&](Outcome why, int code) {
    if (terminating) return;
    terminating = true;
    result = {why, code};
    for (auto& k : kids)
      if (k.running) ::kill(-k.pid, SIGTERM);
    kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.grace * 1000));
  };

  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> who;  // (child index, is stderr)
    for (size_t k = 0; k < kids.size(); ++k) {
      if (kids[k].out >= 0) fds.push_back({kids[k].out, POLLIN, 0}), who.push_back({static_cast<int>(k), false});
      if (kids[k].err >= 0) fds.push_back({kids[k].err, POLLIN, 0}), who.push_back({static_cast<int>(k), true});
    }
    ::poll(fds.data(), fds.size(), 50);
    for (size_t f = 0; f < fds.size(); ++f) {
      if (!fds[f].revents) continue;
      Child& c = kids[static_cast<size_t>(who[f].first)];
      if (who[f].second) drain(c.err, stderr, c.rank, c.err_buf);
      else drain(c.out, stdout, c.rank, c.out_buf);
    }
    // Reap.
    bool any_running = false;
    for (auto& k : kids) {
      if (!k.running) continue;
      int st = 0;
      pid_t r = ::waitpid(k.pid, &st, WNOHANG);
      if (r == k.pid) {
        k.running = false;
        if (terminating) ::kill(-k.pid, SIGKILL);  // leftovers of a stopped rank
        k.status = st;
        int code = exit_code(st);
        if (code != 0 && !terminating) {
          std::fprintf(stderr, "tensorrun: rank %d exited with status %d; stopping the other ranks\n", k.rank, code);
          terminate_all(Outcome::LocalFailure, code);
        }
      } else {
        any_running = true;
      }
    }
    if (g_signal && !terminating) {
      std::fprintf(stderr, "tensorrun: got signal %d; stopping all ranks\n", static_cast<int>(g_signal));
      terminate_all(Outcome::Signal, 128 + g_signal);
    }
    if (!terminating && any_running && Clock::now() >= next_remote_check) {
      next_remote_check = Clock::now() + std::chrono::milliseconds(100);
      try {
        if (int code = remote_failed()) {
          std::fprintf(stderr, "tensorrun: a rank on another node failed (status %d); stopping the ranks here\n", code);
          terminate_all(Outcome::RemoteFailure, code);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tensorrun: lost the launchers' store (%s); stopping the ranks here\n", e.what());
        terminate_all(Outcome::LostStore, 1);
      }
    }
    if (terminating && !killed && any_running && Clock::now() >= kill_at) {
      killed = true;
      for (auto& k : kids)
        if (k.running) ::kill(-k.pid, SIGKILL);
    }
    // Once every rank is reaped, read what is left in the pipes and stop (a grandchild that
    // still holds a pipe open must not keep the launcher alive).
    if (!any_running) break;
  }
  for (auto& k : kids) {
    drain(k.out, stdout, k.rank, k.out_buf);
    drain(k.err, stderr, k.rank, k.err_buf);
    emit(stdout, k.rank, k.out_buf, true);
    emit(stderr, k.rank, k.err_buf, true);
  }
  return result;
}

// The launchers' meeting place across nodes (Note [tensorrun across nodes]).
class Rendezvous {
 public:
  Rendezvous(const Options& o) : o_(o) {
    namespace dist = tensor::distributed;
    dist::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(o.port);
    so.is_master = o.node_rank == 0;
    so.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.rdzv_timeout * 1000));
    so.run_id = "tensorrun/" + o.run_id;
    store_ = std::make_unique<dist::TCPStore>(o.addr, so);
  }

  // Waits until all M launchers reached round r; false on a signal or the timeout.
  bool join(int round) {
    store_->add(key(round, "joined"), 1);
    return wait_count(round, "joined", o_.nnodes, o_.rdzv_timeout);
  }
  // The status a launcher of round r failed with, 0 if none.
  int failed(int round) {
    if (!store_->check({key(round, "failed")})) return 0;
    auto v = store_->get(key(round, "failed"));
    int code = std::atoi(std::string(v.begin(), v.end()).c_str());
    return code ? code : 1;
  }
  void fail(int round, int code) { store_->set(key(round, "failed"), std::to_string(code)); }
  // After this node's ranks succeeded: waits for every node's (0) or for a failure (its status).
  int finish(int round) {
    store_->add(key(round, "done"), 1);
    for (;;) {
      if (int code = failed(round)) return code;
      if (store_->add(key(round, "done"), 0) >= o_.nnodes) break;
      if (g_signal) return 128 + g_signal;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Node 0 serves the store: it stays until the others have read the result.
    if (o_.node_rank == 0) wait_count(round, "left", o_.nnodes - 1, 30.0);
    else store_->add(key(round, "left"), 1);
    return 0;
  }

 private:
  std::string key(int round, const char* what) const { return "round/" + std::to_string(round) + "/" + what; }
  bool wait_count(int round, const char* what, int want, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    for (;;) {
      const int64_t have = store_->add(key(round, what), 0);
      if (have >= want) return true;
      if (g_signal) return false;
      if (std::chrono::steady_clock::now() >= deadline) {
        std::fprintf(stderr, "tensorrun: %lld of %d launchers reached round %d within %g s\n",
                     static_cast<long long>(have), want, round, seconds);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  const Options& o_;
  std::unique_ptr<tensor::distributed::TCPStore> store_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int i = 1;
  auto value = [&](const char* name) -> std::string {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (eq != std::string::npos) return a.substr(eq + 1);
    if (i + 1 >= argc) usage((std::string(name) + " needs a value").c_str());
    return argv[++i];
  };
  // A whole non-negative number, or usage.
  auto count = [&](const char* name) {
    std::string v = value(name);
    char* end = nullptr;
    long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || !end || *end || x < 0 || x > 1000000) usage((std::string(name) + " needs a whole number").c_str());
    return static_cast<int>(x);
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    auto is = [&](const char* n) { return a == n || a.rfind(std::string(n) + "=", 0) == 0; };
    if (is("--nproc-per-node") || is("--nproc_per_node")) {
      o.nproc = count("--nproc-per-node");
    } else if (is("--nnodes")) {
      o.nnodes = count("--nnodes");
    } else if (is("--node-rank") || is("--node_rank")) {
      o.node_rank = count("--node-rank");
    } else if (is("--master-addr") || is("--master_addr")) {
      o.addr = value("--master-addr");
    } else if (is("--master-port") || is("--master_port")) {
      o.port = count("--master-port");
    } else if (is("--max-restarts") || is("--max_restarts")) {
      o.max_restarts = count("--max-restarts");
    } else if (is("--rdzv-id") || is("--rdzv_id") || is("--run-id")) {
      o.run_id = value("--rdzv-id");
    } else if (is("--grace-period")) {
      o.grace = std::atof(value("--grace-period").c_str());
    } else if (is("--rdzv-timeout")) {
      o.rdzv_timeout = std::atof(value("--rdzv-timeout").c_str());
    } else if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help") {
      usage("runs a program on N processes per node");
    } else if (a.rfind("--", 0) == 0) {
      usage(("unknown option " + a).c_str());
    } else {
      break;
    }
  }
  if (i >= argc) usage("no program given");
  if (o.nproc < 1) usage("--nproc-per-node must be at least 1");
  if (o.nnodes < 1) usage("--nnodes must be at least 1");
  if (o.node_rank >= o.nnodes) usage("--node-rank must be in [0, --nnodes)");
  if (o.port > 65534) usage("--master-port must be in [0, 65534]");
  if (!(o.rdzv_timeout > 0)) usage("--rdzv-timeout must be positive");
  const bool multi = o.nnodes > 1;
  if (multi && o.run_id.empty()) usage("--rdzv-id is required with --nnodes > 1 (the same on every node)");
  if (multi && o.port == 0) o.port = 29500;  // torchrun's default: every node must agree
  if (o.port == 0) o.port = free_port();
  if (o.run_id.empty()) o.run_id = random_id();
  // Across nodes the launchers' store takes the master port and the ranks' store the next.
  const int worker_port = multi ? o.port + 1 : o.port;

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  std::unique_ptr<Rendezvous> rdzv;
  try {
    if (multi) rdzv = std::make_unique<Rendezvous>(o);
    for (int round = 0;; ++round) {
      if (rdzv && !rdzv->join(round)) return g_signal ? 128 + g_signal : 1;
      RoundResult r = run_round(o, argv + i, round, worker_port, [&] { return rdzv ? rdzv->failed(round) : 0; });
      if (rdzv && r.outcome == Outcome::Success) {
        if (int code = rdzv->finish(round)) r = {Outcome::RemoteFailure, code};
      } else if (rdzv && (r.outcome == Outcome::LocalFailure || r.outcome == Outcome::Signal)) {
        rdzv->fail(round, r.code);
      }
      if (r.outcome == Outcome::Success) return 0;
      if (r.outcome == Outcome::Signal || r.outcome == Outcome::LostStore || g_signal) return r.code;
      if (round >= o.max_restarts) {
        if (o.max_restarts > 0) std::fprintf(stderr, "tensorrun: no restarts left (%d used)\n", o.max_restarts);
        return r.code;
      }
      std::fprintf(stderr, "tensorrun: restarting the ranks (restart %d of %d)\n", round + 1, o.max_restarts);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensorrun: %s\n", e.what());
    return 1;
  }
}
