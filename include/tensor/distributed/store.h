// Key-value stores for rendezvous, as c10d's Store / TCPStore / PrefixStore.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/export.h"

namespace tensor::distributed {

/// A key-value store shared by all ranks of a job. Every blocking call is bounded by the
/// store's timeout and raises tensor::Error naming the key and the timeout when it expires.
class TENSOR_API Store {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(5);

  explicit Store(std::chrono::milliseconds timeout = kDefaultTimeout) : timeout_(timeout) {}
  virtual ~Store();

  /// Sets `key` to `value` (overwrites).
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  /// Sets `key` to the bytes of `value`.
  void set(const std::string& key, const std::string& value);
  /// Waits (up to timeout()) for `key`, then returns its value.
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  /// Atomically adds `amount` to the integer counter at `key` (0 when absent); returns the new value.
  virtual int64_t add(const std::string& key, int64_t amount) = 0;
  /// True when every key is set; never blocks.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  /// Removes `key`; true when it existed.
  virtual bool delete_key(const std::string& key) = 0;
  /// Waits until every key is set, up to timeout().
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  /// Waits until every key is set, up to `timeout`; raises tensor::Error naming the missing keys.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;

  /// The default timeout of blocking calls.
  std::chrono::milliseconds timeout() const { return timeout_; }
  /// Changes the default timeout of blocking calls.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 protected:
  std::chrono::milliseconds timeout_;
};

/// Options of a TCPStore (c10d's TCPStoreOptions).
struct TENSOR_API TCPStoreOptions {
  /// Port of the server; 0 with is_master picks a free port (read it back with TCPStore::port()).
  uint16_t port = 0;
  /// Whether this process runs the server (a thread of this process).
  bool is_master = false;
  /// Timeout of every blocking call, connecting to the server included.
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
  /// The job's run id (init_process_group passes tensorrun's TENSOR_RUN_ID): a client whose id
  /// differs from the server's is refused with an error naming both, so a rank of a second job
  /// started on the same port cannot join this job's store. Empty matches only empty.
  std::string run_id;
};

/// A Store served over TCP: the master process runs the server in a thread, every process
/// (the master included) talks to it as a client. A dead server raises tensor::Error.
class TENSOR_API TCPStore : public Store {
 public:
  TCPStore(std::string host, const TCPStoreOptions& opts);
  ~TCPStore() override;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  using Store::set;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  /// The port of the server (the one picked when opts.port was 0).
  uint16_t port() const;
  /// The host of the server.
  const std::string& host() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Prefixes every key with `prefix + "/"` before forwarding to `store` (sub-groups share the
/// default group's store this way).
class TENSOR_API PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  using Store::set;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  /// The store keys are forwarded to.
  const std::shared_ptr<Store>& underlying_store() const { return store_; }

 private:
  std::string join(const std::string& key) const { return prefix_ + "/" + key; }
  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace tensor::distributed
