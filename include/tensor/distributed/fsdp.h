// FullyShardedDataParallel (ZeRO-3), after PyTorch's FSDP: the parameters of a wrapped unit
// live as one flat parameter split across the ranks of a process group; every rank keeps only
// its 1/world_size shard (what parameters() returns, so an optimizer built on them keeps its
// state sharded too). The full parameters exist only while the unit runs forward or backward.
// Note [FSDP design] in src/distributed/fsdp/FullyShardedDataParallel.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/distributed/process_group.h"
#include "tensor/nn/any_module.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::distributed::fsdp {

struct MemoryCounter;

/// Options of FullyShardedDataParallel.
struct TENSOR_API FSDPOptions {
  /// Free the gathered parameters after forward (re-gathered for backward), as PyTorch's
  /// reshard_after_forward / FULL_SHARD. false keeps them from forward to the end of backward
  /// (SHARD_GRAD_OP).
  TENSOR_ARG(bool, reshard_after_forward) = true;
  /// Whether full_state_dict() materialises the full tensors on rank 0 only (the others get an
  /// empty dict but still take part in the all-gathers).
  TENSOR_ARG(bool, rank0_only) = false;
  /// Wraps each child of the module that has parameters as its own unit (the module must be a
  /// Sequential, whose steps FSDP then runs one at a time), so that forward and backward hold
  /// one child's full parameters at a time; the rest stays in the root unit. PyTorch's
  /// ModuleWrapPolicy over the children.
  TENSOR_ARG(bool, auto_wrap_children) = false;
  /// Like auto_wrap_children, but wraps only the children (of a Sequential) for which
  /// `policy(name, child)` is true.
  TENSOR_ARG(std::function<bool(const std::string&, const nn::Module&)>, auto_wrap_policy) = nullptr;
};

/// Bytes of parameter memory of an FSDP module and the units nested in it, on this rank.
struct FSDPMemoryStats {
  int64_t shard_bytes = 0;           ///< this rank's flat shard (always resident)
  int64_t unsharded_bytes = 0;       ///< the gathered full flat parameter, while it is allocated
  int64_t peak_unsharded_bytes = 0;  ///< the largest unsharded_bytes seen since the last reset
  int64_t full_bytes = 0;            ///< the unpadded full parameters (what one process would hold)
};

/// One flat shard of a sharded state dict: this rank's slice [offset, offset + local.numel())
/// of the unit's padded flat parameter (numel unpadded elements, padded_numel with padding).
struct FlatShard {
  Tensor local;
  int64_t offset = 0;
  int64_t numel = 0;
  int64_t padded_numel = 0;
  std::vector<std::string> param_names;  ///< the original parameters flattened, in order
};

/// sharded_state_dict(): every FSDP unit of the tree with parameters (keyed by its path prefix:
/// "" for the root, "0." for the unit at child "0"), and
/// the group shape it was saved under.
struct ShardedStateDict {
  int world_size = 0;
  int rank = 0;
  std::vector<std::pair<std::string, FlatShard>> shards;
};

/// Wraps a module whose forward takes Tensors and returns a Tensor. Its parameters (except those
/// of nested FullyShardedDataParallel modules, which are units of their own: wrap each layer to
/// gather one layer at a time) become one flat parameter, padded to a multiple of the group size.
class TENSOR_API FullyShardedDataParallelImpl : public nn::Module {
 public:
  template <typename M>
  FullyShardedDataParallelImpl(M module, std::shared_ptr<ProcessGroup> process_group, FSDPOptions options = {})
      : nn::Module("FullyShardedDataParallel"), any_(module), options_(options) {
    init(any_.ptr(), std::move(process_group));
  }
  ~FullyShardedDataParallelImpl() override;

  /// Gathers this unit's parameters, runs the wrapped forward, frees them (reshard_after_forward)
  /// and arranges the re-gather before this unit's backward and the gradient reduce-scatter after.
  template <typename... Ts>
  Tensor forward(const Tensor& first, const Ts&... rest) {
    pre_forward();
    Tensor out;
    try {
      if constexpr (sizeof...(Ts) == 0)
        out = auto_wrapped_ ? forward_auto_wrapped(first) : any_.forward(first);
      else
        out = any_.forward(first, rest...);
    } catch (...) {
      reshard();
      throw;
    }
    return post_forward(out);
  }

  /// The wrapped module (its parameters hold no memory outside forward / backward).
  std::shared_ptr<nn::Module> module() const { return module_; }
  /// This unit's flat shard: a leaf tensor of padded_numel / world_size elements.
  const Tensor& flat_shard() const { return shard_; }
  /// The group the parameters are sharded over.
  const std::shared_ptr<ProcessGroup>& process_group() const { return pg_; }

  /// Parameter memory on this rank of this unit and the units nested in it.
  FSDPMemoryStats memory_stats();
  /// Restarts peak_unsharded_bytes at the current value (this unit and nested units).
  void reset_peak_memory_stats();

  /// The full parameters and buffers under their original names (as module()->named_parameters()
  /// would name them, nested units included). Collective: every rank must call it. With
  /// rank0_only, ranks other than 0 get an empty list.
  std::vector<std::pair<std::string, Tensor>> full_state_dict();
  /// Loads a full state dict (every parameter of the tree, by original name) on every rank:
  /// each rank copies its shard out of it. Not collective.
  void load_full_state_dict(const std::vector<std::pair<std::string, Tensor>>& state);
  /// This rank's shards of every unit in the tree (no communication).
  ShardedStateDict sharded_state_dict();
  /// Loads shards saved by sharded_state_dict on the same rank of a group of the same size.
  void load_sharded_state_dict(const ShardedStateDict& state);

  void train(bool on = true) override;
  void pretty_print(std::ostream& stream) const override;

  // Engine-side steps (public for nested units; not part of the user API).
  void pre_forward();
  Tensor post_forward(const Tensor& out);
  /// Frees the gathered full flat parameter.
  void reshard();

 private:
  // An auto-wrapped child's unit: driven by the root's forward_auto_wrapped (no forward of its own).
  FullyShardedDataParallelImpl(std::shared_ptr<nn::Module> child, std::shared_ptr<ProcessGroup> pg,
                               FSDPOptions options, bool /*auto_wrapped_child*/);
  void init(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> pg);
  void auto_wrap();
  Tensor forward_auto_wrapped(const Tensor& input);
  void unshard();
  void pre_backward();
  void on_grad_accumulated();
  void reduce_grads();
  void finish_backward();
  // This unit and every nested one, with its path prefix ("" for this one, "0." ...).
  std::vector<std::pair<std::string, FullyShardedDataParallelImpl*>> units_in_tree(const std::string& prefix);

  nn::AnyModule any_;
  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> pg_;
  FSDPOptions options_;

  // The unit's flat parameter (Note [FSDP design]).
  std::vector<std::string> names_;   // original names, relative to module_
  std::vector<Tensor> params_;       // the module's own parameter tensors, views into full_
  std::vector<std::pair<std::string, Tensor>> buffers_;  // not sharded: every rank holds them
  std::vector<int64_t> offsets_;     // of each parameter in the flat parameter
  int64_t numel_ = 0;                // unpadded
  int64_t padded_numel_ = 0;
  int64_t shard_numel_ = 0;
  ScalarType dtype_ = kFloat32;
  Device device_ = Device(kCPU);
  intrusive_ptr<StorageImpl> full_;  // the gathered flat parameter; freed between uses
  Tensor shard_;
  std::vector<std::pair<std::string, FullyShardedDataParallelImpl*>> nested_;  // by path
  bool auto_wrapped_ = false;                                       // root of auto-wrapped children
  std::vector<std::shared_ptr<FullyShardedDataParallelImpl>> step_units_;  // per Sequential step, or null

  // Backward state.
  std::vector<unsigned> hook_handles_;
  int grads_ready_ = 0;
  int grads_expected_ = 0;
  bool backward_started_ = false;
  bool reduced_ = false;
  std::shared_ptr<Work> rs_work_;
  Tensor rs_input_, rs_output_;

  FSDPMemoryStats stats_;
  std::shared_ptr<MemoryCounter> counter_;  // shared by the units of one tree
};
TENSOR_MODULE(FullyShardedDataParallel);

}  // namespace tensor::distributed::fsdp
