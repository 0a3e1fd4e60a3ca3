// Work, the ProcessGroup base, and the default group: init_process_group / new_group.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>

#include "src/core/Check.h"
#include "tensor/distributed/process_group.h"
#include "tensor/distributed/process_group_nccl.h"

namespace tensor::distributed {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::PRODUCT: return "PRODUCT";
    case ReduceOp::MIN: return "MIN";
    case ReduceOp::MAX: return "MAX";
  }
  return "?";
}

// ---- Work ----

Work::Work(std::string op, std::vector<Tensor> outputs) : op_(std::move(op)), outputs_(std::move(outputs)) {}
Work::~Work() = default;

bool Work::is_completed() {
  std::lock_guard<std::mutex> g(mu_);
  return completed_;
}
bool Work::is_success() {
  std::lock_guard<std::mutex> g(mu_);
  return completed_ && !error_;
}
std::exception_ptr Work::exception() {
  std::lock_guard<std::mutex> g(mu_);
  return error_;
}

void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> g(mu_);
    completed_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

bool Work::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> g(mu_);
  if (timeout.count() > 0) {
    bool done = cv_.wait_for(g, timeout, [&] { return completed_; });
    TENSOR_CHECK(done, "Work::wait: {} did not complete within the timeout of {} ms", op_, timeout.count());
  } else {
    cv_.wait(g, [&] { return completed_; });
  }
  if (error_) std::rethrow_exception(error_);
  return true;
}

ProcessGroup::~ProcessGroup() = default;

// ---- the default group ----

namespace {

struct DefaultGroup {
  std::mutex mu;
  std::shared_ptr<Store> store;
  std::shared_ptr<ProcessGroup> pg;
  std::string backend;
  std::string master_addr;
  std::chrono::milliseconds timeout{};
  int group_count = 0;
};
DefaultGroup& state() {
  static DefaultGroup s;
  return s;
}

int env_int(const char* name, const char* why) {
  const char* v = std::getenv(name);
  TENSOR_CHECK(v && *v, "init_process_group: {} is not set ({}); set it or pass it (tensorrun sets it)", name, why);
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  TENSOR_CHECK(end && *end == 0, "init_process_group: {}='{}' is not an integer", name, v);
  return static_cast<int>(x);
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// Note [Gloo's address on a multi-host job]
// Gloo binds each rank's endpoint to an address the others must reach. This host's name often
// resolves to 127.0.0.1 (Debian's /etc/hosts), which a second host cannot reach, so a two-host
// job connected only with GLOO_SOCKET_IFNAME set by hand. The address this host uses to reach
// the master is one the master's network can route back to: a UDP socket connected to the
// master (no packet is sent) reports it.
std::string address_towards(const std::string& master) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(master.c_str(), "9", &hints, &res) != 0 || !res) return "";
  std::string out;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char buf[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof(buf)))
      out = buf;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return out;
}

std::shared_ptr<ProcessGroup> make_group(const std::string& backend, std::shared_ptr<Store> store, int rank, int size,
                                         std::chrono::milliseconds timeout, const std::string& master_addr) {
  if (backend == "gloo") {
    ProcessGroupGlooOptions o;
    o.timeout(timeout);
    if (is_loopback(master_addr)) {
      o.hostname("127.0.0.1");
    } else {
      const std::string local = address_towards(master_addr);
      if (!local.empty()) o.hostname(local);  // GLOO_SOCKET_IFNAME still wins
    }
    return std::make_shared<ProcessGroupGloo>(std::move(store), rank, size, o);
  }
  if (backend == "nccl") {
    return std::make_shared<ProcessGroupNCCL>(std::move(store), rank, size, ProcessGroupNCCLOptions().timeout(timeout));
  }
  TENSOR_ERROR("init_process_group: unknown backend \"{}\" (expected \"gloo\" or \"nccl\")", backend);
}

}  // namespace

std::shared_ptr<ProcessGroup> init_process_group(const std::string& backend, int rank, int world_size,
                                                 const std::string& init_method, std::chrono::milliseconds timeout) {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  TENSOR_CHECK(!s.pg, "init_process_group: the default process group is already initialized (call destroy_process_group first)");
  TENSOR_CHECK(backend == "gloo" || backend == "nccl", "init_process_group: unknown backend \"{}\" (expected \"gloo\" or \"nccl\")",
               backend);
  // One setting for a whole job: the environment's timeout replaces the default (not an
  // explicit argument), so an operator bounds every wait without editing the program.
  if (const char* env = std::getenv("TENSOR_DIST_TIMEOUT"); env && *env && timeout == kProcessGroupDefaultTimeout) {
    char* end = nullptr;
    const double seconds = std::strtod(env, &end);
    TENSOR_CHECK(end && *end == 0 && seconds > 0 && seconds < 1e9,
                 "init_process_group: TENSOR_DIST_TIMEOUT='{}' is not a positive number of seconds", env);
    timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  TENSOR_CHECK(timeout.count() > 0, "init_process_group: the timeout must be positive (got {} ms)", timeout.count());
  if (rank < 0) rank = env_int("RANK", "the rank of this process");
  if (world_size < 0) world_size = env_int("WORLD_SIZE", "the number of processes");
  TENSOR_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, "init_process_group: rank {} is not in [0, world_size = {})",
               rank, world_size);

  std::string host;
  int port = 0;
  if (init_method.empty() || init_method == "env://") {
    const char* a = std::getenv("MASTER_ADDR");
    host = (a && *a) ? a : "127.0.0.1";
    port = env_int("MASTER_PORT", "the port of rank 0's store");
  } else if (init_method.rfind("tcp://", 0) == 0) {
    std::string rest = init_method.substr(6);
    auto colon = rest.rfind(':');
    TENSOR_CHECK(colon != std::string::npos && colon > 0, "init_process_group: init_method '{}' must be tcp://host:port",
                 init_method);
    host = rest.substr(0, colon);
    char* end = nullptr;
    port = static_cast<int>(std::strtol(rest.c_str() + colon + 1, &end, 10));
    TENSOR_CHECK(end && *end == 0, "init_process_group: init_method '{}' has no valid port", init_method);
  } else {
    TENSOR_ERROR("init_process_group: init_method '{}' is not supported (expected \"env://\" or \"tcp://host:port\")",
                 init_method);
  }
  TENSOR_CHECK(port > 0 && port < 65536, "init_process_group: port {} is not in [1, 65535]", port);

  TCPStoreOptions so;
  so.port = static_cast<uint16_t>(port);
  so.is_master = rank == 0;
  so.timeout = timeout;
  if (const char* id = std::getenv("TENSOR_RUN_ID")) so.run_id = id;  // Note [Store run ids]
  auto store = std::make_shared<TCPStore>(host, so);
  // The default group's keys live under their own prefix, sub-groups' under theirs (c10d).
  auto pg = make_group(backend, std::make_shared<PrefixStore>("default_pg", store), rank, world_size, timeout, host);
  s.store = store;
  s.pg = pg;
  s.backend = backend;
  s.master_addr = host;
  s.timeout = timeout;
  s.group_count = 0;
  return pg;
}

std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks, std::chrono::milliseconds timeout) {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  TENSOR_CHECK(s.pg, "new_group: call init_process_group first");
  int world = s.pg->size();
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  TENSOR_CHECK(!sorted.empty(), "new_group: the list of ranks is empty");
  for (size_t i = 0; i < sorted.size(); ++i) {
    TENSOR_CHECK(sorted[i] >= 0 && sorted[i] < world, "new_group: rank {} is not in [0, world_size = {})", sorted[i], world);
    TENSOR_CHECK(i == 0 || sorted[i] != sorted[i - 1], "new_group: rank {} is listed twice", sorted[i]);
  }
  // Every rank counts every call, so the members of one call agree on its prefix.
  int id = s.group_count++;
  auto it = std::find(sorted.begin(), sorted.end(), s.pg->rank());
  if (it == sorted.end()) return nullptr;
  int group_rank = static_cast<int>(it - sorted.begin());
  auto t = timeout.count() > 0 ? timeout : s.timeout;
  return make_group(s.backend, std::make_shared<PrefixStore>("group_" + std::to_string(id), s.store), group_rank,
                    static_cast<int>(sorted.size()), t, s.master_addr);
}

bool is_initialized() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  return s.pg != nullptr;
}

std::shared_ptr<ProcessGroup> default_group() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  TENSOR_CHECK(s.pg, "default_group: call init_process_group first");
  return s.pg;
}

std::shared_ptr<Store> default_store() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  TENSOR_CHECK(s.store, "default_store: call init_process_group first");
  return s.store;
}

int get_rank() { return default_group()->rank(); }
int get_world_size() { return default_group()->size(); }

void destroy_process_group() {
  auto& s = state();
  std::shared_ptr<ProcessGroup> pg;
  std::shared_ptr<Store> store;
  {
    std::lock_guard<std::mutex> g(s.mu);
    pg = std::move(s.pg);
    store = std::move(s.store);
  }
  // Released outside the lock: a group's destructor waits for its queued collectives.
}

}  // namespace tensor::distributed
