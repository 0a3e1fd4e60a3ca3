// ProcessGroupGloo: the CPU collectives over Gloo's TCP transport, as c10d's Gloo backend.
//
// Note [One worker thread per group]
// Every collective is queued and run by the group's worker thread in issue order, so the
// ranks agree on the order (and on the Gloo tag each collective gets from a counter bumped at
// enqueue time) whatever thread issued it. The caller gets a Work at once: DDP's gradient
// buckets enqueue allreduces from the autograd engine's thread and wait on them later.
// send/recv are issued on the caller's thread directly against Gloo's unbound buffers (as
// c10d does) with their own slot prefix, so they never queue behind collectives.
//
// Note [Timeouts]
// The group's timeout (default 30 min, as c10d) is set on the Gloo context and so bounds the
// rendezvous and every collective; an option's timeout overrides it for one call. A peer that
// died closes its sockets and Gloo fails at once; a peer that stalls makes Gloo's wait time
// out. Either way the Gloo exception is rethrown from Work::wait as a tensor::Error naming
// the collective, the dtype, the rank and the timeout.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/math.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>

#include "src/core/Check.h"
#include "tensor/core/TensorImpl.h"
#include "tensor/distributed/process_group.h"

namespace tensor::distributed {

namespace {

using ms = std::chrono::milliseconds;

// Our Store as Gloo's rendezvous store (Gloo's connectFullMesh exchanges addresses through it).
class GlooStore : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(std::shared_ptr<distributed::Store> s) : store_(std::move(s)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    auto v = store_->get(key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const ms& timeout) override { store_->wait(keys, timeout); }

 private:
  std::shared_ptr<distributed::Store> store_;
};

// Note [Rendezvous within the timeout]
// Gloo's rendezvous::Context::connectFullMesh gives each pair 5x the context's timeout to
// connect (tcp::Pair::waitUntil: "a longer timeout when waiting for initial connect"), so a
// peer that published an address this rank cannot reach (a hostname that resolves to
// 127.0.0.1 on a two-host job) held the rendezvous for 5x its timeout: 2.5 h at the default.
// MeshContext is that full mesh (the same store keys and address layout, so ranks agree with
// any Gloo peer) with the pairs created at a fifth of the timeout, so that their connect
// waits one timeout, and the waits for the peers' addresses bounded by what remains of it.
// Collectives pass their own timeouts (the options of each call); the pairs' own timeout
// serves only their connect (the sockets are non-blocking, sync mode is unused).
class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size) : gloo::Context(rank, size) {}

  void connect_full_mesh(gloo::rendezvous::Store& store, const std::shared_ptr<gloo::transport::Device>& dev,
                         ms timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto remaining = [&](const char* what, int peer) {
      const auto left = std::chrono::duration_cast<ms>(deadline - std::chrono::steady_clock::now());
      TENSOR_CHECK(left.count() > 0, "timed out after {} ms {} rank {}", timeout.count(), what, peer);
      return left;
    };
    // Ranks on the same host, counted below this one (Gloo's local rank; same keys as Gloo).
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    const std::string local_host(host);
    store.set("rank_" + std::to_string(rank), std::vector<char>(local_host.begin(), local_host.end()));
    int local_rank = 0;
    for (int i = 0; i < rank; ++i) {
      const std::string key = "rank_" + std::to_string(i);
      store.wait({key}, remaining("waiting for the host name of", i));
      auto v = store.get(key);
      if (std::string(v.begin(), v.end()) == local_host) ++local_rank;
    }
    auto transport = dev->createContext(rank, size);
    transport->setTimeout(std::max(ms(1), (timeout + ms(4)) / 5));  // the pairs' connect waits 5x this
    std::vector<char> all;
    for (int i = 0; i < size; ++i) {
      if (i == rank) continue;
      auto& pair = transport->createPair(i);
      pair->setLocalRank(local_rank);
      auto bytes = pair->address().bytes();
      all.insert(all.end(), bytes.begin(), bytes.end());
    }
    store.set(std::to_string(rank), all);
    for (int i = 0; i < size; ++i) {
      if (i == rank) continue;
      store.wait({std::to_string(i)}, remaining("waiting for the address of", i));
      std::vector<char> theirs = store.get(std::to_string(i));
      // Rank i lists one address per peer but itself, in rank order: as many as this rank
      // does unless the ranks disagree on the world size (Gloo then failed on "136 vs 272").
      const size_t width = all.size() / static_cast<size_t>(size - 1);
      const size_t slot = static_cast<size_t>(rank > i ? rank - 1 : rank);
      TENSOR_CHECK(theirs.size() == all.size(),
                   "rank {} published {} peer addresses, this rank {}: the ranks disagree on the world size (this "
                   "rank has world size {}; rank {}'s addresses fit a world size of {})",
                   i, static_cast<double>(theirs.size()) / static_cast<double>(width), size - 1, size, i,
                   static_cast<double>(theirs.size()) / static_cast<double>(width) + 1);
      std::vector<char> addr(theirs.begin() + slot * width, theirs.begin() + (slot + 1) * width);
      try {
        remaining("before connecting to", i);
        transport->getPair(i)->connect(addr);
      } catch (const std::exception& e) {
        std::string where;
        try {
          where = gloo::transport::tcp::Address(addr).str();
        } catch (...) {
          where = "an unreadable address";
        }
        TENSOR_ERROR("connecting to rank {} at {} (the address it published; check that this host can reach it): {}", i,
                     where, e.what());
      }
    }
    transport->setTimeout(timeout);
    device_ = dev;
    transportContext_ = std::move(transport);
  }
};

// Gloo has no bfloat16: the reductions for it, computed in float.
template <class Op>
void bf16_reduce(void* c, const void* a, const void* b, size_t n) {
  auto* C = static_cast<BFloat16*>(c);
  auto* A = static_cast<const BFloat16*>(a);
  auto* B = static_cast<const BFloat16*>(b);
  for (size_t i = 0; i < n; ++i) C[i] = BFloat16(Op()(static_cast<float>(A[i]), static_cast<float>(B[i])));
}
struct FMax {
  float operator()(float x, float y) const { return x > y ? x : y; }
};
struct FMin {
  float operator()(float x, float y) const { return x < y ? x : y; }
};

using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

// Calls f(T()) with the C++ type Gloo reduces for `st` (gloo::float16 for float16).
template <class F>
void dispatch_gloo(ScalarType st, const char* op, F&& f) {
  switch (st) {
    case kFloat32: return f(float());
    case kFloat64: return f(double());
    case kFloat16: return f(gloo::float16());
    case kBFloat16: return f(BFloat16());
    case kInt8: return f(int8_t());
    case kUInt8: return f(uint8_t());
    case kInt32: return f(int32_t());
    case kInt64: return f(int64_t());
    default:
      TENSOR_ERROR("ProcessGroupGloo::{}: dtype {} is not supported (float32, float64, float16, bfloat16, int8, "
                   "uint8, int32, int64 are)",
                   op, st);
  }
}

template <class T>
ReduceFn reduce_fn(ReduceOp op) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    switch (op) {
      case ReduceOp::SUM:
      case ReduceOp::AVG: return &bf16_reduce<std::plus<float>>;
      case ReduceOp::PRODUCT: return &bf16_reduce<std::multiplies<float>>;
      case ReduceOp::MAX: return &bf16_reduce<FMax>;
      case ReduceOp::MIN: return &bf16_reduce<FMin>;
    }
  } else {
    using Fn = void (*)(void*, const void*, const void*, size_t);
    switch (op) {
      case ReduceOp::SUM:
      case ReduceOp::AVG: return static_cast<Fn>(&gloo::sum<T>);
      case ReduceOp::PRODUCT: return static_cast<Fn>(&gloo::product<T>);
      case ReduceOp::MAX: return static_cast<Fn>(&gloo::max<T>);
      case ReduceOp::MIN: return static_cast<Fn>(&gloo::min<T>);
    }
  }
  return nullptr;
}

// AVG = SUM / size, in the tensor's dtype (integers truncate, as integer division does).
template <class T>
void divide(void* p, size_t n, int size) {
  if constexpr (std::is_same_v<T, gloo::float16>) {
    auto* h = static_cast<Half*>(p);
    for (size_t i = 0; i < n; ++i) h[i] = Half(static_cast<float>(h[i]) / static_cast<float>(size));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    auto* h = static_cast<BFloat16*>(p);
    for (size_t i = 0; i < n; ++i) h[i] = BFloat16(static_cast<float>(h[i]) / static_cast<float>(size));
  } else {
    auto* x = static_cast<T*>(p);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<T>(x[i] / static_cast<T>(size));
  }
}

void check_tensor(const Tensor& t, const char* op, const char* what) {
  TENSOR_CHECK(t.defined(), "ProcessGroupGloo::{}: {} is an undefined tensor", op, what);
  TENSOR_CHECK(t.is_cpu(), "ProcessGroupGloo::{}: {} is on {}; the Gloo backend takes CPU tensors (use \"nccl\" for CUDA)",
               op, what, t.device().str());
  TENSOR_CHECK(t.is_contiguous(), "ProcessGroupGloo::{}: {} (shape {}) must be contiguous", op, what,
               detail::shape_str(t.sizes()));
}

// A collective writes its outputs in place: bump their version counters when it is issued
// (as libtorch's c10d ops, which are in-place ops), so autograd rejects a backward that
// would read a saved tensor the collective overwrote.
void mark_written(const Tensor& t) { t.unsafeGetTensorImpl()->bump_version(); }

std::string describe(const Tensor& t) {
  return fmt::format("{}, shape {}", t.scalar_type(), detail::shape_str(t.sizes()));
}

constexpr uint8_t kSendRecvSlotPrefix = 0x09;  // after Gloo's own collective prefixes

}  // namespace

// Note [Who did not arrive]
// A collective that fails (its timeout passed, or a peer's connection broke) says which ranks
// had not reached it, as the store sees: the failing rank posts "failed/<n>/<rank>" for its n-th
// collective, then waits a short window (a tenth of the timeout, 0.2 to 5 s) for the others to
// post theirs (ranks stuck in the same collective fail at about the same time, since their
// deadlines started when they arrived). The ranks without a key are named: dead, stalled before
// the collective, or unreachable. Nothing is posted on success, so collectives pay nothing for
// this. When the store itself is gone, its host (rank 0) is what the message names.
struct ProcessGroupGloo::Impl {
  int rank = 0, size = 0;
  ms timeout{};
  std::shared_ptr<Store> store;

  // The ranks that did not post the failure of collective `tag` (Note [Who did not arrive]).
  std::string missing_ranks(uint32_t tag, ms t) const {
    try {
      const std::string prefix = "failed/" + std::to_string(tag) + "/";
      store->set(prefix + std::to_string(rank), std::string("1"));
      const ms window = std::clamp(t / 10, ms(200), ms(5000));
      const auto deadline = std::chrono::steady_clock::now() + window;
      std::vector<int> missing;
      for (;;) {
        missing.clear();
        for (int r = 0; r < size; ++r)
          if (r != rank && !store->check({prefix + std::to_string(r)})) missing.push_back(r);
        if (missing.empty() || std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(ms(20));
      }
      if (missing.empty()) return "every rank reached it";
      return fmt::format("rank(s) {} did not reach it (dead, stalled before it, or unreachable)", fmt::join(missing, ", "));
    } catch (const std::exception&) {
      return "the store on rank 0 is unreachable, so rank 0 is dead or cut off";
    }
  }
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::Context> ctx;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool stop = false;
  uint32_t next_tag = 0;
  std::thread worker;

  ms effective(ms t) const { return t.count() > 0 ? t : timeout; }

  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> g(mu);
        cv.wait(g, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;  // stop requested and everything issued has run
        job = std::move(queue.front());
        queue.pop_front();
      }
      job();
    }
  }

  // Queues `fn(tag)`; its exception becomes a tensor::Error naming `what` and the timeout.
  std::shared_ptr<Work> enqueue(const char* op, std::string what, ms t, std::vector<Tensor> outputs,
                                std::function<void(uint32_t, ms)> fn) {
    auto work = std::make_shared<Work>(op, std::move(outputs));
    std::lock_guard<std::mutex> g(mu);
    uint32_t tag = next_tag++;
    queue.emplace_back([=, r = rank, s = size, fn = std::move(fn)] {
      try {
        fn(tag, t);
        work->finish();
      } catch (const std::exception& e) {
        const std::string who = missing_ranks(tag, t);
        work->finish(std::make_exception_ptr(Error(fmt::format("ProcessGroupGloo: {} #{} ({}) failed on rank {} of {} "
                                                               "(timeout {} ms): {}; {}",
                                                               op, tag, what, r, s, t.count(), who, e.what()))));
      }
    });
    cv.notify_one();
    return work;
  }
};

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, ProcessGroupGlooOptions opts)
    : ProcessGroup(rank, size), impl_(std::make_unique<Impl>()) {
  TENSOR_CHECK(store != nullptr, "ProcessGroupGloo: the store is null");
  TENSOR_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroupGloo: rank {} is not in [0, world_size = {})", rank, size);
  TENSOR_CHECK(opts.timeout().count() > 0, "ProcessGroupGloo: the timeout must be positive (got {} ms)", opts.timeout().count());
  impl_->rank = rank;
  impl_->size = size;
  impl_->timeout = opts.timeout();
  impl_->store = store;

  // Note [SIGPIPE]: Gloo writes to its sockets without MSG_NOSIGNAL, so a write to a peer that
  // died would kill this process with SIGPIPE instead of failing the collective with an error.
  // Ignore SIGPIPE when it still has its default action (Python, hence PyTorch, does the same
  // at startup); a handler the program installed is left alone.
  {
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
      ::signal(SIGPIPE, SIG_IGN);
  }
  gloo::transport::tcp::attr attr;
  const char* env_iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (!opts.interface().empty()) {
    attr.iface = opts.interface();
  } else if (env_iface && *env_iface) {
    attr.iface = env_iface;
  } else if (!opts.hostname().empty()) {
    attr.hostname = opts.hostname();
  } else {
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    attr.hostname = host;
  }
  try {
    impl_->device = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<MeshContext>(rank, size);
    ctx->setTimeout(impl_->timeout);
    GlooStore gs(store);
    ctx->connect_full_mesh(gs, impl_->device, impl_->timeout);  // Note [Rendezvous within the timeout]
    impl_->ctx = ctx;
  } catch (const std::exception& e) {
    TENSOR_ERROR("ProcessGroupGloo: rendezvous of rank {} of {} failed (timeout {} ms): {}", rank, size,
                 impl_->timeout.count(), e.what());
  }
  impl_->worker = std::thread([impl = impl_.get()] { impl->run(); });
}

ProcessGroupGloo::~ProcessGroupGloo() {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

std::chrono::milliseconds ProcessGroupGloo::timeout() const { return impl_->timeout; }

std::shared_ptr<Work> ProcessGroupGloo::allreduce(const Tensor& tensor, const AllreduceOptions& opts) {
  check_tensor(tensor, "allreduce", "the tensor");
  ScalarType st = tensor.scalar_type();
  dispatch_gloo(st, "allreduce", [](auto) {});
  mark_written(tensor);
  auto ctx = impl_->ctx;
  int size = impl_->size;
  ReduceOp op = opts.op();
  return impl_->enqueue("allreduce", fmt::format("{}, {}", to_string(op), describe(tensor)), impl_->effective(opts.timeout()),
                        {tensor}, [=](uint32_t tag, ms t) {
                          if (tensor.numel() == 0) return;  // every rank has nothing to send
                          dispatch_gloo(st, "allreduce", [&](auto v) {
                            using T = decltype(v);
                            gloo::AllreduceOptions o(ctx);
                            o.setOutput(static_cast<T*>(tensor.data_ptr()), static_cast<size_t>(tensor.numel()));
                            o.setReduceFunction(reduce_fn<T>(op));
                            o.setTag(tag);
                            o.setTimeout(t);
                            gloo::allreduce(o);
                            if (op == ReduceOp::AVG) divide<T>(tensor.data_ptr(), tensor.numel(), size);
                          });
                        });
}

std::shared_ptr<Work> ProcessGroupGloo::broadcast(const Tensor& tensor, const BroadcastOptions& opts) {
  check_tensor(tensor, "broadcast", "the tensor");
  int root = opts.root_rank();
  TENSOR_CHECK(root >= 0 && root < size_, "ProcessGroupGloo::broadcast: root_rank {} is not in [0, {})", root, size_);
  mark_written(tensor);
  auto ctx = impl_->ctx;
  return impl_->enqueue("broadcast", fmt::format("root {}, {}", root, describe(tensor)), impl_->effective(opts.timeout()),
                        {tensor}, [=](uint32_t tag, ms t) {
                          if (tensor.numel() == 0) return;
                          gloo::BroadcastOptions o(ctx);
                          o.setOutput(static_cast<uint8_t*>(tensor.data_ptr()), static_cast<size_t>(tensor.nbytes()));
                          o.setRoot(root);
                          o.setTag(tag);
                          o.setTimeout(t);
                          gloo::broadcast(o);
                        });
}

std::shared_ptr<Work> ProcessGroupGloo::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                                  const AllgatherOptions& opts) {
  check_tensor(input, "allgather", "the input");
  TENSOR_CHECK(static_cast<int>(outputs.size()) == size_,
               "ProcessGroupGloo::allgather: expected {} output tensors (one per rank), got {}", size_, outputs.size());
  for (const auto& o : outputs) {
    check_tensor(o, "allgather", "an output");
    TENSOR_CHECK(o.sizes() == input.sizes() && o.scalar_type() == input.scalar_type(),
                 "ProcessGroupGloo::allgather: every output must match the input ({}), got {}", describe(input), describe(o));
  }
  for (const auto& o : outputs) mark_written(o);
  auto ctx = impl_->ctx;
  return impl_->enqueue("allgather", describe(input), impl_->effective(opts.timeout()), outputs,
                        [=](uint32_t tag, ms t) {
                          size_t nb = static_cast<size_t>(input.nbytes());
                          if (nb == 0) return;
                          std::vector<uint8_t> in(static_cast<uint8_t*>(input.data_ptr()),
                                                  static_cast<uint8_t*>(input.data_ptr()) + nb);
                          std::vector<uint8_t> out(nb * outputs.size());
                          gloo::AllgatherOptions o(ctx);
                          o.setInput(in.data(), nb);
                          o.setOutput(out.data(), out.size());
                          o.setTag(tag);
                          o.setTimeout(t);
                          gloo::allgather(o);
                          for (size_t r = 0; r < outputs.size(); ++r)
                            if (nb) std::memcpy(outputs[r].data_ptr(), out.data() + r * nb, nb);
                        });
}

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       const ReduceScatterOptions& opts) {
  check_tensor(output, "reduce_scatter", "the output");
  TENSOR_CHECK(static_cast<int>(inputs.size()) == size_,
               "ProcessGroupGloo::reduce_scatter: expected {} input tensors (one per rank), got {}", size_, inputs.size());
  for (const auto& i : inputs) {
    check_tensor(i, "reduce_scatter", "an input");
    TENSOR_CHECK(i.sizes() == output.sizes() && i.scalar_type() == output.scalar_type(),
                 "ProcessGroupGloo::reduce_scatter: every input must match the output ({}), got {}", describe(output),
                 describe(i));
  }
  ScalarType st = output.scalar_type();
  dispatch_gloo(st, "reduce_scatter", [](auto) {});
  mark_written(output);
  auto ctx = impl_->ctx;
  int size = size_, rank = rank_;
  ReduceOp op = opts.op();
  // Gloo's new-style API has no reduce-scatter: allreduce the concatenated inputs and keep
  // this rank's chunk (the same traffic as a ring allreduce).
  return impl_->enqueue("reduce_scatter", fmt::format("{}, {}", to_string(op), describe(output)),
                        impl_->effective(opts.timeout()), {output}, [=](uint32_t tag, ms t) {
                          size_t nb = static_cast<size_t>(output.nbytes());
                          if (nb == 0) return;
                          std::vector<uint8_t> buf(nb * size);
                          for (int r = 0; r < size; ++r)
                            if (nb) std::memcpy(buf.data() + r * nb, inputs[r].data_ptr(), nb);
                          dispatch_gloo(st, "reduce_scatter", [&](auto v) {
                            using T = decltype(v);
                            gloo::AllreduceOptions o(ctx);
                            o.setOutput(reinterpret_cast<T*>(buf.data()), static_cast<size_t>(output.numel()) * size);
                            o.setReduceFunction(reduce_fn<T>(op));
                            o.setTag(tag);
                            o.setTimeout(t);
                            gloo::allreduce(o);
                            if (op == ReduceOp::AVG) divide<T>(buf.data() + rank * nb, output.numel(), size);
                          });
                          if (nb) std::memcpy(output.data_ptr(), buf.data() + rank * nb, nb);
                        });
}

std::shared_ptr<Work> ProcessGroupGloo::all_to_all(const Tensor& output, const Tensor& input, const AllToAllOptions& opts) {
  check_tensor(input, "all_to_all", "the input");
  check_tensor(output, "all_to_all", "the output");
  TENSOR_CHECK(input.sizes() == output.sizes() && input.scalar_type() == output.scalar_type(),
               "ProcessGroupGloo::all_to_all: the output ({}) must match the input ({})", describe(output), describe(input));
  TENSOR_CHECK(input.dim() >= 1 && input.size(0) % size_ == 0,
               "ProcessGroupGloo::all_to_all: the input's dim 0 ({}) must split evenly over {} ranks",
               describe(input), size_);
  mark_written(output);
  auto ctx = impl_->ctx;
  return impl_->enqueue("all_to_all", describe(input), impl_->effective(opts.timeout()), {output},
                        [=](uint32_t tag, ms t) {
                          size_t nb = static_cast<size_t>(input.nbytes());
                          if (nb == 0) return;
                          // Gloo reads and writes in place: a copy of the input lets output alias it.
                          std::vector<uint8_t> in(static_cast<uint8_t*>(input.data_ptr()),
                                                  static_cast<uint8_t*>(input.data_ptr()) + nb);
                          gloo::AlltoallOptions o(ctx);
                          o.setInput(in.data(), nb);
                          o.setOutput(static_cast<uint8_t*>(output.data_ptr()), nb);
                          o.setTag(tag);
                          o.setTimeout(t);
                          gloo::alltoall(o);
                        });
}

std::shared_ptr<Work> ProcessGroupGloo::barrier(const BarrierOptions& opts) {
  auto ctx = impl_->ctx;
  return impl_->enqueue("barrier", fmt::format("{} ranks", size_), impl_->effective(opts.timeout()), {},
                        [=](uint32_t tag, ms t) {
                          gloo::BarrierOptions o(ctx);
                          o.setTag(tag);
                          o.setTimeout(t);
                          gloo::barrier(o);
                        });
}

namespace {
// A send or recv: issued at once on Gloo's unbound buffer; wait() waits for it.
class SendRecvWork : public Work {
 public:
  SendRecvWork(const char* op, std::string what, Tensor t, std::unique_ptr<gloo::transport::UnboundBuffer> buf, int rank,
               int size, ms timeout, bool is_send)
      : Work(op, {std::move(t)}), what_(std::move(what)), buf_(std::move(buf)), rank_(rank), size_(size),
        timeout_(timeout), is_send_(is_send) {}

  bool wait(ms timeout) override {
    std::lock_guard<std::mutex> once(wait_mu_);
    if (!is_completed()) {
      // Unlike a collective's Work, a caller's shorter deadline is handed to Gloo itself, and
      // Gloo closes the pair when a wait times out: the operation fails for good.
      ms t = timeout.count() > 0 ? std::min(timeout, timeout_) : timeout_;
      try {
        if (is_send_) buf_->waitSend(t);
        else buf_->waitRecv(t);
        finish();
      } catch (const std::exception& e) {
        finish(std::make_exception_ptr(Error(fmt::format("ProcessGroupGloo: {} ({}) failed on rank {} of {} (timeout {} ms): {}",
                                                         op_, what_, rank_, size_, t.count(), e.what()))));
      }
    }
    return Work::wait(kNoTimeout);
  }

 private:
  std::mutex wait_mu_;
  std::string what_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buf_;
  int rank_, size_;
  ms timeout_;
  bool is_send_;
};
}  // namespace

std::shared_ptr<Work> ProcessGroupGloo::send(const Tensor& tensor, int dst, int tag) {
  check_tensor(tensor, "send", "the tensor");
  TENSOR_CHECK(dst >= 0 && dst < size_ && dst != rank_, "ProcessGroupGloo::send: dst {} must be another rank in [0, {}) (this is rank {})",
               dst, size_, rank_);
  TENSOR_CHECK(tag >= 0, "ProcessGroupGloo::send: tag must be non-negative (got {})", tag);
  std::string what = fmt::format("to rank {}, tag {}, {}", dst, tag, describe(tensor));
  std::unique_ptr<gloo::transport::UnboundBuffer> buf;
  try {
    buf = impl_->ctx->createUnboundBuffer(tensor.data_ptr(), static_cast<size_t>(tensor.nbytes()));
    buf->send(dst, gloo::Slot::build(kSendRecvSlotPrefix, static_cast<uint32_t>(tag)));
  } catch (const std::exception& e) {  // the pair is closed already: a peer died or timed out
    TENSOR_ERROR("ProcessGroupGloo: send ({}) failed on rank {} of {} (timeout {} ms): {}", what, rank_, size_,
                 impl_->timeout.count(), e.what());
  }
  return std::make_shared<SendRecvWork>("send", std::move(what), tensor, std::move(buf), rank_, size_, impl_->timeout, true);
}

std::shared_ptr<Work> ProcessGroupGloo::recv(const Tensor& tensor, int src, int tag) {
  check_tensor(tensor, "recv", "the tensor");
  TENSOR_CHECK(src >= 0 && src < size_ && src != rank_, "ProcessGroupGloo::recv: src {} must be another rank in [0, {}) (this is rank {})",
               src, size_, rank_);
  TENSOR_CHECK(tag >= 0, "ProcessGroupGloo::recv: tag must be non-negative (got {})", tag);
  mark_written(tensor);
  std::string what = fmt::format("from rank {}, tag {}, {}", src, tag, describe(tensor));
  std::unique_ptr<gloo::transport::UnboundBuffer> buf;
  try {
    buf = impl_->ctx->createUnboundBuffer(tensor.data_ptr(), static_cast<size_t>(tensor.nbytes()));
    buf->recv(src, gloo::Slot::build(kSendRecvSlotPrefix, static_cast<uint32_t>(tag)));
  } catch (const std::exception& e) {  // the pair is closed already: a peer died or timed out
    TENSOR_ERROR("ProcessGroupGloo: recv ({}) failed on rank {} of {} (timeout {} ms): {}", what, rank_, size_,
                 impl_->timeout.count(), e.what());
  }
  return std::make_shared<SendRecvWork>("recv", std::move(what), tensor, std::move(buf), rank_, size_, impl_->timeout, false);
}

}  // namespace tensor::distributed
