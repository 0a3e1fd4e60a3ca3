// TCPStore: a key-value server in a thread of the master process, clients over TCP.
//
// Note [TCPStore protocol]
// One request, one reply, over a persistent connection per client. A request is a command
// byte followed by length-prefixed strings / fixed-size integers; the server answers each
// request before reading the next one from that connection. `wait` is polled by the client
// (CHECK with a growing back-off capped at 10 ms) rather than parked on the server, which
// keeps the server a single stateless poll() loop; rendezvous traffic is tiny, so the extra
// round trips cost nothing measurable. Every client socket has SO_RCVTIMEO/SO_SNDTIMEO set
// to the store timeout, so a dead or stalled server turns into a tensor::Error, never a hang.
// A client's first request is Hello with its run id (Note [Store run ids]).
//
// Note [Store run ids]
// Two jobs started on one port used to kill each other: the second job's rank 0 could not
// listen, but its other ranks connected to the first job's server and wrote their keys there.
// The server now holds its job's run id and answers a client's Hello with it; a different id
// closes the connection before any key is read or written, and the client raises naming both
// jobs. tensorrun gives every job (and every restart round) its own id.
#include "tensor/distributed/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "src/core/Check.h"

namespace tensor::distributed {

Store::~Store() = default;

void Store::set(const std::string& key, const std::string& value) {
  set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

namespace {

enum class Cmd : uint8_t { Set = 1, Get, Add, Check, Delete, Hello };

using Clock = std::chrono::steady_clock;

std::string keys_str(const std::vector<std::string>& keys) {
  std::string s = "[";
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", '" : "'") + keys[i] + "'";
  return s + "]";
}

void put_u32(std::string& b, uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }
void put_i64(std::string& b, int64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); }
void put_str(std::string& b, const void* p, size_t n) {
  put_u32(b, static_cast<uint32_t>(n));
  b.append(static_cast<const char*>(p), n);
}

// Full send/recv; false on a closed connection, a socket error or a socket timeout.
bool send_all(int fd, const void* p, size_t n) {
  auto* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}
bool recv_all(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t k = ::recv(fd, c, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}
bool recv_str(int fd, std::string& s) {
  uint32_t n;
  if (!recv_all(fd, &n, 4)) return false;
  if (n > (1u << 30)) return false;
  s.resize(n);
  return recv_all(fd, s.data(), n);
}

void set_timeouts(int fd, std::chrono::milliseconds t) {
  timeval tv{};
  auto ms = std::max<int64_t>(t.count(), 1);
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// The server: one thread, one poll() loop over the listening socket, the clients and a wake-up
// pipe the destructor writes to.
class Server {
 public:
  Server(uint16_t port, std::string run_id) : run_id_(std::move(run_id)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    TENSOR_CHECK(listen_fd_ >= 0, "TCPStore: socket() failed: {}", std::strerror(errno));
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(port);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 512) != 0) {
      int e = errno;
      ::close(listen_fd_);
      TENSOR_ERROR("TCPStore: cannot listen on port {}: {} (is another job using it?)", port, std::strerror(e));
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    TENSOR_CHECK(::pipe2(wake_, O_CLOEXEC) == 0, "TCPStore: pipe() failed: {}", std::strerror(errno));
    thread_ = std::thread([this] { loop(); });
  }
  ~Server() {
    char c = 0;
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    for (int fd : clients_) ::close(fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  uint16_t port() const { return port_; }

 private:
  void loop() {
    for (;;) {
      std::vector<pollfd> fds;
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (int fd : clients_) fds.push_back({fd, POLLIN, 0});
      int r = ::poll(fds.data(), fds.size(), -1);
      if (r < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          // A client that dies mid-request must not stall the server for everyone.
          set_timeouts(fd, std::chrono::seconds(10));
          clients_.push_back(fd);
        }
      }
      std::vector<int> closed;
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents && !serve(fds[i].fd)) closed.push_back(fds[i].fd);
      }
      for (int fd : closed) {
        ::close(fd);
        clients_.erase(std::find(clients_.begin(), clients_.end(), fd));
      }
    }
  }

  // Answers one request; false when the connection is gone or broken.
  bool serve(int fd) {
    uint8_t cmd;
    if (!recv_all(fd, &cmd, 1)) return false;
    std::string key, reply;
    switch (static_cast<Cmd>(cmd)) {
      case Cmd::Set: {
        std::string value;
        if (!recv_str(fd, key) || !recv_str(fd, value)) return false;
        data_[key] = std::move(value);
        reply.push_back(1);
        break;
      }
      case Cmd::Get: {
        if (!recv_str(fd, key)) return false;
        auto it = data_.find(key);
        reply.push_back(it != data_.end());
        if (it != data_.end()) put_str(reply, it->second.data(), it->second.size());
        break;
      }
      case Cmd::Add: {
        int64_t amount;
        if (!recv_str(fd, key) || !recv_all(fd, &amount, 8)) return false;
        int64_t v = 0;
        auto it = data_.find(key);
        if (it != data_.end()) v = std::strtoll(it->second.c_str(), nullptr, 10);
        v += amount;
        data_[key] = std::to_string(v);
        put_i64(reply, v);
        break;
      }
      case Cmd::Check: {
        uint32_t n;
        if (!recv_all(fd, &n, 4)) return false;
        bool all = true;
        for (uint32_t i = 0; i < n; ++i) {
          if (!recv_str(fd, key)) return false;
          all = all && data_.count(key) != 0;
        }
        reply.push_back(all);
        break;
      }
      case Cmd::Delete: {
        if (!recv_str(fd, key)) return false;
        reply.push_back(data_.erase(key) != 0);
        break;
      }
      case Cmd::Hello: {
        std::string id;
        if (!recv_str(fd, id)) return false;
        const bool same = id == run_id_;
        reply.push_back(same);
        put_str(reply, run_id_.data(), run_id_.size());
        // Another job's client gets the answer and nothing else (Note [Store run ids]).
        return send_all(fd, reply.data(), reply.size()) && same;
      }
      default:
        return false;
    }
    return send_all(fd, reply.data(), reply.size());
  }

  std::string run_id_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::vector<int> clients_;
  std::map<std::string, std::string> data_;
  std::thread thread_;
};

}  // namespace

struct TCPStore::Impl {
  std::string host;
  uint16_t port = 0;
  std::unique_ptr<Server> server;
  int fd = -1;
  std::mutex mu;  // one request in flight per connection; the store is shared between threads

  // Closing here (not in ~TCPStore) also covers a constructor that raises after connecting.
  ~Impl() {
    if (fd >= 0) ::close(fd);
  }

  std::string where() const { return fmt::format("{}:{}", host, port); }

  void connect(std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    std::string last_error;
    for (;;) {
      addrinfo* res = nullptr;
      int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
      if (rc != 0) {
        last_error = ::gai_strerror(rc);
      } else {
        for (addrinfo* a = res; a; a = a->ai_next) {
          int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
          if (s < 0) continue;
          if (::connect(s, a->ai_addr, a->ai_addrlen) == 0) {
            fd = s;
            break;
          }
          last_error = std::strerror(errno);
          ::close(s);
        }
        ::freeaddrinfo(res);
      }
      if (fd >= 0) break;
      // The server may not be up yet: retry until the timeout, as c10d's TCPStore does.
      TENSOR_CHECK(Clock::now() < deadline,
                   "TCPStore: could not connect to the server at {} within the timeout of {} ms (last error: {})",
                   where(), timeout.count(), last_error);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    set_timeouts(fd, timeout);
  }

  // Sends a request and reads the reply with `read`; a broken connection raises naming `what`.
  template <class F>
  void request(const std::string& req, const std::string& what, std::chrono::milliseconds timeout, F&& read) {
    std::lock_guard<std::mutex> g(mu);
    bool ok = send_all(fd, req.data(), req.size()) && read();
    if (!ok) {
      int e = errno;
      TENSOR_ERROR("TCPStore: {} failed: the server at {} {} (timeout {} ms)", what, where(),
                   (e == EAGAIN || e == EWOULDBLOCK) ? "did not answer within the timeout" : "closed the connection or died",
                   timeout.count());
    }
  }
};

TCPStore::TCPStore(std::string host, const TCPStoreOptions& opts) : Store(opts.timeout), impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = opts.port;
  if (opts.is_master) {
    impl_->server = std::make_unique<Server>(opts.port, opts.run_id);
    impl_->port = impl_->server->port();
  }
  TENSOR_CHECK(impl_->port != 0, "TCPStore: a client needs the server's port (got port 0 with is_master = false)");
  impl_->connect(opts.timeout);
  std::string req(1, static_cast<char>(Cmd::Hello));
  put_str(req, opts.run_id.data(), opts.run_id.size());
  uint8_t same = 0;
  std::string theirs;
  impl_->request(req, "connecting", opts.timeout, [&] { return recv_all(impl_->fd, &same, 1) && recv_str(impl_->fd, theirs); });
  TENSOR_CHECK(same, "TCPStore: the server at {} belongs to another job (its run id '{}', this process's '{}'): two jobs "
               "on one port? Give each job its own --master-port", impl_->where(), theirs, opts.run_id);
}

TCPStore::~TCPStore() = default;

uint16_t TCPStore::port() const { return impl_->port; }
const std::string& TCPStore::host() const { return impl_->host; }

void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::string req(1, static_cast<char>(Cmd::Set));
  put_str(req, key.data(), key.size());
  put_str(req, value.data(), value.size());
  int fd = impl_->fd;
  impl_->request(req, fmt::format("set('{}')", key), timeout_, [&] {
    uint8_t ok;
    return recv_all(fd, &ok, 1);
  });
}

std::vector<uint8_t> TCPStore::get(const std::string& key) {
  auto deadline = Clock::now() + timeout_;
  auto backoff = std::chrono::milliseconds(1);
  int fd = impl_->fd;
  for (;;) {
    std::string req(1, static_cast<char>(Cmd::Get));
    put_str(req, key.data(), key.size());
    uint8_t found = 0;
    std::string value;
    impl_->request(req, fmt::format("get('{}')", key), timeout_, [&] {
      if (!recv_all(fd, &found, 1)) return false;
      return !found || recv_str(fd, value);
    });
    if (found) return std::vector<uint8_t>(value.begin(), value.end());
    TENSOR_CHECK(Clock::now() < deadline, "TCPStore::get: key '{}' was not set within the timeout of {} ms (server {})",
                 key, timeout_.count(), impl_->where());
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(10));
  }
}

int64_t TCPStore::add(const std::string& key, int64_t amount) {
  std::string req(1, static_cast<char>(Cmd::Add));
  put_str(req, key.data(), key.size());
  put_i64(req, amount);
  int64_t v = 0;
  int fd = impl_->fd;
  impl_->request(req, fmt::format("add('{}')", key), timeout_, [&] { return recv_all(fd, &v, 8); });
  return v;
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  std::string req(1, static_cast<char>(Cmd::Check));
  put_u32(req, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) put_str(req, k.data(), k.size());
  uint8_t all = 0;
  int fd = impl_->fd;
  impl_->request(req, fmt::format("check({})", keys_str(keys)), timeout_, [&] { return recv_all(fd, &all, 1); });
  return all != 0;
}

bool TCPStore::delete_key(const std::string& key) {
  std::string req(1, static_cast<char>(Cmd::Delete));
  put_str(req, key.data(), key.size());
  uint8_t existed = 0;
  int fd = impl_->fd;
  impl_->request(req, fmt::format("delete_key('{}')", key), timeout_, [&] { return recv_all(fd, &existed, 1); });
  return existed != 0;
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  auto backoff = std::chrono::milliseconds(1);
  while (!check(keys)) {
    TENSOR_CHECK(Clock::now() < deadline, "TCPStore::wait: keys {} were not all set within the timeout of {} ms (server {})",
                 keys_str(keys), timeout.count(), impl_->where());
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(10));
  }
}

// ---- PrefixStore ----

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(store ? store->timeout() : kDefaultTimeout), prefix_(std::move(prefix)), store_(std::move(store)) {
  TENSOR_CHECK(store_ != nullptr, "PrefixStore('{}'): the underlying store is null", prefix_);
}
void PrefixStore::set(const std::string& key, const std::vector<uint8_t>& value) { store_->set(join(key), value); }
std::vector<uint8_t> PrefixStore::get(const std::string& key) { return store_->get(join(key)); }
int64_t PrefixStore::add(const std::string& key, int64_t amount) { return store_->add(join(key), amount); }
bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> k;
  for (const auto& s : keys) k.push_back(join(s));
  return store_->check(k);
}
bool PrefixStore::delete_key(const std::string& key) { return store_->delete_key(join(key)); }
void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::vector<std::string> k;
  for (const auto& s : keys) k.push_back(join(s));
  store_->wait(k, timeout);
}

}  // namespace tensor::distributed
