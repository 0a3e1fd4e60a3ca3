// DistributedDataParallel: data parallelism over a ProcessGroup, as PyTorch's
// torch.nn.parallel.DistributedDataParallel and its C++ Reducer (Note [DDP reducer] in
// src/distributed/DDP.cpp). Every rank holds a replica; backward averages the gradients across
// ranks bucket by bucket while it still runs.
//
//     auto pg = tensor::distributed::init_process_group("gloo");
//     nn::parallel::DistributedDataParallel ddp(net, pg, nn::parallel::DDPOptions().bucket_cap_mb(25));
//     auto loss = loss_fn(ddp->forward(x), y); loss.backward();   // grads averaged over ranks
//     { auto guard = ddp->no_sync(); ... }                         // accumulate locally
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/distributed/process_group.h"
#include "tensor/export.h"
#include "tensor/nn/any_module.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn::parallel {

/// Options of DistributedDataParallel (PyTorch's constructor arguments).
struct TENSOR_API DDPOptions {
  /// The most megabytes of gradients one bucket (one allreduce) holds.
  TENSOR_ARG(double, bucket_cap_mb) = 25.0;
  /// The cap of the first bucket (the last layers' gradients, ready first): small so that
  /// communication starts early in backward, as PyTorch's 1 MB first bucket. Capped by bucket_cap_mb.
  TENSOR_ARG(double, first_bucket_cap_mb) = 1.0;
  /// Find, after each forward, the parameters the output does not depend on and reduce them as
  /// zero contributions, so that a model with branches not taken can train. Costs a graph walk
  /// per forward and one small allreduce per backward.
  TENSOR_ARG(bool, find_unused_parameters) = false;
  /// Broadcast rank 0's buffers (running statistics, ...) before each synchronized forward.
  TENSOR_ARG(bool, broadcast_buffers) = true;
  /// Make each param.grad() a view into its bucket (after the first backward that gives it a
  /// gradient): the reduced values land in the gradients without a copy, and backward
  /// accumulates straight into the bucket while grads are kept (zero_grad(set_to_none=false)).
  TENSOR_ARG(bool, gradient_as_bucket_view) = false;
};

/// One bucket of gradients handed to a communication hook (PyTorch's dist.GradBucket).
class TENSOR_API GradBucket {
 public:
  GradBucket(size_t index, Tensor buffer, std::vector<Tensor> parameters, std::vector<Tensor> gradients, bool is_last)
      : index_(index), buffer_(std::move(buffer)), parameters_(std::move(parameters)),
        gradients_(std::move(gradients)), is_last_(is_last) {}
  /// The bucket's index (0 is the first bucket reduced, the last layers' gradients).
  size_t index() const { return index_; }
  /// The flat, contiguous buffer of the bucket's gradients (this rank's values). A hook may
  /// modify it in place.
  const Tensor& buffer() const { return buffer_; }
  /// The bucket's parameters, in bucket order.
  const std::vector<Tensor>& parameters() const { return parameters_; }
  /// Views of buffer() shaped as each parameter.
  const std::vector<Tensor>& gradients() const { return gradients_; }
  /// True for the last bucket reduced in an iteration.
  bool is_last() const { return is_last_; }

 private:
  size_t index_;
  Tensor buffer_;
  std::vector<Tensor> parameters_;
  std::vector<Tensor> gradients_;
  bool is_last_;
};

/// A Work whose result is computed from another Work's once that one finished (the
/// `fut.then(...)` of PyTorch's communication hooks): wait() waits for the inner Work, then
/// runs `then` once on the waiting thread; result()[0] is what `then` returned.
class TENSOR_API ChainedWork : public distributed::Work {
 public:
  ChainedWork(std::shared_ptr<distributed::Work> inner, std::function<Tensor(const std::vector<Tensor>&)> then);
  bool is_completed() override;
  bool wait(std::chrono::milliseconds timeout = distributed::kNoTimeout) override;

 private:
  std::shared_ptr<distributed::Work> inner_;
  std::function<Tensor(const std::vector<Tensor>&)> then_;
};

/// A Work that is already finished with `result` (for hooks that need no communication).
TENSOR_API std::shared_ptr<distributed::Work> completed_work(const Tensor& result);

/// A communication hook with its state bound: takes a bucket, returns a Work whose result()[0]
/// (after wait) is the reduced bucket (shaped and typed as the bucket's buffer, or castable to it).
using CommHook = std::function<std::shared_ptr<distributed::Work>(GradBucket&)>;

/// PyTorch's torch.distributed.algorithms.ddp_comm_hooks.default_hooks. Their state is the
/// process group to reduce over (null: DDP's group).
namespace default_hooks {
/// Divides the bucket by the group size and allreduces it (SUM): DDP's default behaviour.
TENSOR_API std::shared_ptr<distributed::Work> allreduce_hook(const std::shared_ptr<distributed::ProcessGroup>& pg,
                                                             GradBucket& bucket);
/// Casts the bucket to bfloat16, divides by the group size, allreduces, and casts the result
/// back: half the bytes on the wire, bfloat16 precision (8 significant bits) in the result.
TENSOR_API std::shared_ptr<distributed::Work> bf16_compress_hook(const std::shared_ptr<distributed::ProcessGroup>& pg,
                                                                 GradBucket& bucket);
/// The same with float16 (PyTorch's fp16_compress_hook).
TENSOR_API std::shared_ptr<distributed::Work> fp16_compress_hook(const std::shared_ptr<distributed::ProcessGroup>& pg,
                                                                 GradBucket& bucket);
}  // namespace default_hooks

/// What the last synchronized backward did (for benchmarks and tests).
struct DDPIterationStats {
  /// Seconds from the first gradient hook to each bucket's launch, in bucket order.
  std::vector<double> bucket_launch_s;
  /// Seconds from the first gradient hook to the end-of-backward callback.
  double backward_s = 0;
  /// Seconds the end-of-backward callback waited for the buckets' communication.
  double wait_s = 0;
};

class DistributedDataParallelImpl;

/// Turns gradient synchronization off while alive (DistributedDataParallelImpl::no_sync).
class TENSOR_API NoSyncGuard {
 public:
  explicit NoSyncGuard(DistributedDataParallelImpl* ddp);
  ~NoSyncGuard();
  NoSyncGuard(NoSyncGuard&& other) noexcept : ddp_(other.ddp_), prev_(other.prev_) { other.ddp_ = nullptr; }
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(NoSyncGuard&&) = delete;

 private:
  DistributedDataParallelImpl* ddp_;
  bool prev_;
};

struct Reducer;

/// Wraps a module for data-parallel training; its child "module" is the wrapped module (so
/// parameters() names are "module.<name>", as PyTorch's).
class TENSOR_API DistributedDataParallelImpl : public Module {
 public:
  /// Wraps `module` (a holder, a shared_ptr to a module): broadcasts rank 0's parameters and
  /// buffers to every rank (after checking all ranks have the same parameter names and shapes),
  /// assigns the parameters to buckets, and hooks their gradient accumulation.
  template <typename M>
  DistributedDataParallelImpl(M&& module, std::shared_ptr<distributed::ProcessGroup> pg, DDPOptions options = {})
      : Module("DistributedDataParallel") {
    auto ptr = nn::detail::module_ptr(std::forward<M>(module));
    using T = typename decltype(ptr)::element_type;
    AnyModule any;
    if constexpr (nn::detail::forward_arity<T>() > 0) any = AnyModule(ptr);
    init(ptr, std::move(any), std::move(pg), std::move(options));
  }
  ~DistributedDataParallelImpl() override;

  /// Runs the wrapped module's forward (Tensor arguments, Tensor result) and prepares the
  /// gradient reduction of the next backward.
  template <typename... Ts>
  Tensor forward(const Tensor& first, const Ts&... rest) {
    if (any_.is_empty())
      ::tensor::detail::throw_error(
          "DistributedDataParallel::forward: the wrapped module's forward does not take Tensors only; call "
          "ddp->forward_as<ModuleType>(args...)");
    pre_forward();
    Tensor out = any_.forward(first, rest...);
    post_forward({out});
    return out;
  }
  /// Runs `ModuleType`'s own forward with any arguments (for forwards AnyModule cannot hold:
  /// non-Tensor arguments); its result must be a Tensor, a vector of Tensors or a tuple of them.
  template <typename ModuleType, typename... Args>
  auto forward_as(Args&&... args) {
    auto* m = module_->as<ModuleType>();
    if (!m) ::tensor::detail::throw_error("DistributedDataParallel::forward_as: the wrapped module is not of that type");
    pre_forward();
    auto out = m->forward(std::forward<Args>(args)...);
    post_forward(output_tensors(out));
    return out;
  }

  /// The wrapped module.
  const std::shared_ptr<Module>& module() const { return module_; }
  /// The process group gradients are reduced over.
  const std::shared_ptr<distributed::ProcessGroup>& process_group() const { return pg_; }
  /// The options given at construction.
  const DDPOptions& options() const { return options_; }

  /// A guard under which forward/backward accumulate gradients locally, without communication;
  /// the first synchronized backward after it reduces the accumulated gradients.
  NoSyncGuard no_sync() { return NoSyncGuard(this); }
  /// Whether backward synchronizes gradients (false inside no_sync).
  bool require_backward_grad_sync() const { return require_sync_; }

  /// Replaces how a bucket is reduced: `hook(state, bucket)` returns a Work whose result()[0]
  /// is the reduced bucket. Register once, before the first backward.
  template <typename State, typename Hook>
  void register_comm_hook(State state, Hook hook) {
    set_comm_hook([state = std::move(state), hook = std::move(hook)](GradBucket& b) mutable { return hook(state, b); });
  }
  /// The bucket assignment: for each bucket, the indices into module()->parameters() it holds.
  std::vector<std::vector<size_t>> bucket_indices() const;
  /// What the last synchronized backward did.
  DDPIterationStats last_iteration_stats() const;

  void pretty_print(std::ostream& stream) const override;

 private:
  friend class NoSyncGuard;
  void init(std::shared_ptr<Module> module, AnyModule any, std::shared_ptr<distributed::ProcessGroup> pg,
            DDPOptions options);
  void set_comm_hook(CommHook hook);
  void pre_forward();
  void post_forward(const std::vector<Tensor>& outputs);

  static std::vector<Tensor> output_tensors(const Tensor& t) { return {t}; }
  static std::vector<Tensor> output_tensors(const std::vector<Tensor>& v) { return v; }
  template <typename... Ts>
  static std::vector<Tensor> output_tensors(const std::tuple<Ts...>& t) {
    std::vector<Tensor> out;
    std::apply([&](const auto&... e) { (append_output(out, e), ...); }, t);
    return out;
  }
  template <typename E>
  static void append_output(std::vector<Tensor>& out, const E& e) {
    if constexpr (std::is_convertible_v<E, Tensor>) out.push_back(e);
  }

  std::shared_ptr<Module> module_;
  AnyModule any_;
  std::shared_ptr<distributed::ProcessGroup> pg_;
  DDPOptions options_;
  bool require_sync_ = true;
  std::shared_ptr<Reducer> reducer_;
};

/// The holder: `DistributedDataParallel ddp(net, pg); ddp->forward(x);`.
TENSOR_MODULE(DistributedDataParallel);

}  // namespace tensor::nn::parallel
