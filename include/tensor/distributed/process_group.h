// ProcessGroup and Work, as c10d's: collectives return a Work handle at once and run on the
// backend's own thread, so callers (the autograd engine's thread included) can overlap them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/distributed/store.h"
#include "tensor/export.h"
#include "tensor/nn/arg.h"

namespace tensor::distributed {

/// The reductions of allreduce / reduce_scatter. AVG is SUM divided by the group size
/// (integer dtypes: truncating division).
enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };

/// "SUM", "AVG", ... for messages.
TENSOR_API const char* to_string(ReduceOp op);

/// An option timeout left unset: the process group's timeout applies.
constexpr std::chrono::milliseconds kUnsetTimeout{-1};
/// Work::wait without a deadline of its own (the collective's timeout still applies).
constexpr std::chrono::milliseconds kNoTimeout{0};
/// The default timeout of a process group, as c10d's (30 minutes).
constexpr std::chrono::milliseconds kProcessGroupDefaultTimeout = std::chrono::minutes(30);

/// Options of allreduce: the reduction and a per-call timeout.
struct TENSOR_API AllreduceOptions {
  TENSOR_ARG(ReduceOp, op) = ReduceOp::SUM;
  TENSOR_ARG(std::chrono::milliseconds, timeout) = kUnsetTimeout;
};
/// Options of broadcast: the root (a rank of the group) and a per-call timeout.
struct TENSOR_API BroadcastOptions {
  TENSOR_ARG(int, root_rank) = 0;
  TENSOR_ARG(std::chrono::milliseconds, timeout) = kUnsetTimeout;
};
/// Options of allgather.
struct TENSOR_API AllgatherOptions {
  TENSOR_ARG(std::chrono::milliseconds, timeout) = kUnsetTimeout;
};
/// Options of reduce_scatter.
struct TENSOR_API ReduceScatterOptions {
  TENSOR_ARG(ReduceOp, op) = ReduceOp::SUM;
  TENSOR_ARG(std::chrono::milliseconds, timeout) = kUnsetTimeout;
};
/// Options of all_to_all.
struct TENSOR_API AllToAllOptions {
  TENSOR_ARG(std::chrono::milliseconds, timeout) = kUnsetTimeout;
};
/// Options of barrier.
struct TENSOR_API BarrierOptions {
  TENSOR_ARG(std::chrono::milliseconds, timeout) = kUnsetTimeout;
};

/// The handle of one asynchronous collective or point-to-point operation.
class TENSOR_API Work {
 public:
  explicit Work(std::string op, std::vector<Tensor> outputs = {});
  virtual ~Work();

  /// True once the operation finished (successfully or not).
  virtual bool is_completed();
  /// True once the operation finished without error.
  bool is_success();
  /// The error of a failed operation (null otherwise).
  std::exception_ptr exception();
  /// Blocks until the operation finished and rethrows its error (a tensor::Error naming the
  /// operation and its timeout). With a `timeout` other than kNoTimeout, raises tensor::Error
  /// when the operation is not done by then. Returns true.
  virtual bool wait(std::chrono::milliseconds timeout = kNoTimeout);
  /// The output tensors of the operation.
  std::vector<Tensor> result() const { return outputs_; }
  /// The name of the operation ("allreduce", ...).
  const std::string& op() const { return op_; }

  /// Marks the operation finished (backends call this once; error null on success).
  void finish(std::exception_ptr error = nullptr);

 protected:
  std::string op_;
  std::vector<Tensor> outputs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool completed_ = false;
  std::exception_ptr error_;
};

/// A group of processes running collectives together. Ranks are ranks within the group.
/// Tensors are modified in place; CPU tensors for the Gloo backend. Every call is thread-safe
/// and returns at once; the operations of one group run in the order they were issued.
class TENSOR_API ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~ProcessGroup();

  /// This process's rank in the group.
  int rank() const { return rank_; }
  /// The number of processes in the group.
  int size() const { return size_; }
  /// "gloo" or "nccl".
  virtual std::string backend_name() const = 0;

  /// Reduces `tensor` across the group; every rank ends with the result.
  virtual std::shared_ptr<Work> allreduce(const Tensor& tensor, const AllreduceOptions& opts = {}) = 0;
  /// Copies the root's `tensor` into every rank's `tensor`.
  virtual std::shared_ptr<Work> broadcast(const Tensor& tensor, const BroadcastOptions& opts = {}) = 0;
  /// outputs[r] (size() tensors shaped as input) receives rank r's `input`.
  virtual std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                          const AllgatherOptions& opts = {}) = 0;
  /// Reduces inputs[r] (size() tensors shaped as output) across ranks into rank r's `output`.
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                               const ReduceScatterOptions& opts = {}) = 0;
  /// Splits `input` along dim 0 into size() equal chunks, sends chunk r to rank r; `output`'s
  /// chunk r receives rank r's chunk for this rank.
  virtual std::shared_ptr<Work> all_to_all(const Tensor& output, const Tensor& input, const AllToAllOptions& opts = {}) = 0;
  /// Returns once every rank of the group reached the barrier.
  virtual std::shared_ptr<Work> barrier(const BarrierOptions& opts = {}) = 0;
  /// Sends `tensor` to rank `dst` (matched by a recv with the same tag).
  virtual std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag = 0) = 0;
  /// Receives into `tensor` from rank `src` (matched by a send with the same tag).
  virtual std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag = 0) = 0;

 protected:
  int rank_;
  int size_;
};

/// Options of the Gloo backend.
struct TENSOR_API ProcessGroupGlooOptions {
  /// The timeout of rendezvous and of every collective without its own.
  TENSOR_ARG(std::chrono::milliseconds, timeout) = kProcessGroupDefaultTimeout;
  /// Hostname or address this process's Gloo endpoint binds to. Empty: GLOO_SOCKET_IFNAME's
  /// interface when set, else this host's name (init_process_group passes 127.0.0.1 when the
  /// master address is a loopback one).
  TENSOR_ARG(std::string, hostname);
  /// The interface to bind to (overrides hostname).
  TENSOR_ARG(std::string, interface);
};

/// The CPU backend over Gloo's TCP transport (c10d's ProcessGroupGloo). One worker thread
/// runs the collectives in issue order. Supports float32/64, float16, bfloat16 and
/// (u)int8/int32/int64 tensors.
class TENSOR_API ProcessGroupGloo : public ProcessGroup {
 public:
  /// Rendezvous through `store` (all `size` ranks must construct theirs).
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size,
                   ProcessGroupGlooOptions opts = ProcessGroupGlooOptions());
  ~ProcessGroupGloo() override;

  std::string backend_name() const override { return "gloo"; }
  std::shared_ptr<Work> allreduce(const Tensor& tensor, const AllreduceOptions& opts = {}) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, const BroadcastOptions& opts = {}) override;
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                  const AllgatherOptions& opts = {}) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                       const ReduceScatterOptions& opts = {}) override;
  std::shared_ptr<Work> all_to_all(const Tensor& output, const Tensor& input, const AllToAllOptions& opts = {}) override;
  std::shared_ptr<Work> barrier(const BarrierOptions& opts = {}) override;
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag = 0) override;
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag = 0) override;

  /// The group's default timeout.
  std::chrono::milliseconds timeout() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Creates the default process group. `backend` is "gloo" (or "nccl" when built with NCCL).
/// `init_method` is "env://" (MASTER_ADDR, MASTER_PORT; rank / world_size from RANK /
/// WORLD_SIZE when passed as -1) or "tcp://host:port". Rank 0 runs the TCPStore server.
/// `timeout` bounds the store, the rendezvous and every collective of the group; left at the
/// default, TENSOR_DIST_TIMEOUT (seconds, in the environment) replaces the 30 minutes.
TENSOR_API std::shared_ptr<ProcessGroup> init_process_group(const std::string& backend, int rank = -1,
                                                            int world_size = -1,
                                                            const std::string& init_method = "env://",
                                                            std::chrono::milliseconds timeout = kProcessGroupDefaultTimeout);
/// A sub-group of the default group made of the given global ranks. Every rank of the
/// default group must call it, in the same order; ranks outside `ranks` get nullptr.
TENSOR_API std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks,
                                                   std::chrono::milliseconds timeout = kUnsetTimeout);
/// True between init_process_group and destroy_process_group.
TENSOR_API bool is_initialized();
/// The default group (raises tensor::Error when not initialized).
TENSOR_API std::shared_ptr<ProcessGroup> default_group();
/// The store of the default group (raises when not initialized).
TENSOR_API std::shared_ptr<Store> default_store();
/// This process's rank in the default group.
TENSOR_API int get_rank();
/// The size of the default group.
TENSOR_API int get_world_size();
/// Drops the default group and its store.
TENSOR_API void destroy_process_group();

}  // namespace tensor::distributed
