// tensorrun: the launcher of a single-node distributed job (as torchrun --standalone).
//
//   tensorrun [--nproc-per-node N] [--master-addr A] [--master-port P] [--grace-period S] prog args...
//
// Starts N copies of prog with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT set, prefixes every line they print with "[rank] ", and when one exits non-zero
// (or is killed) sends SIGTERM to the others, SIGKILL after the grace period, and exits with
// that status. A SIGINT/SIGTERM to tensorrun is forwarded the same way.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "tensorrun: %s\nusage: tensorrun [--nproc-per-node N] [--master-addr ADDR] [--master-port PORT] "
               "[--grace-period SECONDS] prog [args...]\n",
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

}  // namespace

int main(int argc, char** argv) {
  int nproc = 1;
  std::string addr = "127.0.0.1";
  int port = 0;
  double grace = 5.0;
  int i = 1;
  auto value = [&](const char* name) -> std::string {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (eq != std::string::npos) return a.substr(eq + 1);
    if (i + 1 >= argc) usage((std::string(name) + " needs a value").c_str());
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    auto is = [&](const char* n) { return a == n || a.rfind(std::string(n) + "=", 0) == 0; };
    if (is("--nproc-per-node") || is("--nproc_per_node")) {
      nproc = std::atoi(value("--nproc-per-node").c_str());
    } else if (is("--master-addr") || is("--master_addr")) {
      addr = value("--master-addr");
    } else if (is("--master-port") || is("--master_port")) {
      port = std::atoi(value("--master-port").c_str());
    } else if (is("--grace-period")) {
      grace = std::atof(value("--grace-period").c_str());
    } else if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help") {
      usage("runs a program on N processes");
    } else if (a.rfind("--", 0) == 0) {
      usage(("unknown option " + a).c_str());
    } else {
      break;
    }
  }
  if (i >= argc) usage("no program given");
  if (nproc < 1) usage("--nproc-per-node must be at least 1");
  if (port < 0 || port > 65535) usage("--master-port must be in [0, 65535]");
  if (port == 0) port = free_port();

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  std::vector<Child> kids(static_cast<size_t>(nproc));
  for (int r = 0; r < nproc; ++r) {
    int po[2], pe[2];
    if (::pipe2(po, O_CLOEXEC) != 0 || ::pipe2(pe, O_CLOEXEC) != 0) {
      std::perror("tensorrun: pipe");
      return 1;
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
      return 1;
    }
    if (pid == 0) {
      // Each rank leads its own process group so that stopping it stops what it started too.
      ::setpgid(0, 0);
      ::dup2(po[1], 1);
      ::dup2(pe[1], 2);
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", addr.c_str(), 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::sigprocmask(SIG_SETMASK, &old, nullptr);
      ::execvp(argv[i], argv + i);
      std::fprintf(stderr, "tensorrun: cannot run %s: %s\n", argv[i], std::strerror(errno));
      ::_exit(127);
    }
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::setpgid(pid, pid);  // also here: no race with the first kill
    ::close(po[1]);
    ::close(pe[1]);
    ::fcntl(po[0], F_SETFL, O_NONBLOCK);
    ::fcntl(pe[0], F_SETFL, O_NONBLOCK);
    kids[r] = Child{r, pid, po[0], pe[0], "", "", true, 0};
  }

  using Clock = std::chrono::steady_clock;
  int result = 0;
  bool terminating = false, killed = false;
  Clock::time_point kill_at{};
  auto terminate_all = [&](int code) {
    if (terminating) return;
    terminating = true;
    result = code;
    for (auto& k : kids)
      if (k.running) ::kill(-k.pid, SIGTERM);
    kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace * 1000));
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
          terminate_all(code);
        }
      } else {
        any_running = true;
      }
    }
    if (g_signal && !terminating) {
      std::fprintf(stderr, "tensorrun: got signal %d; stopping all ranks\n", static_cast<int>(g_signal));
      terminate_all(128 + g_signal);
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
