// tensor::distributed::checkpoint: distributed checkpoints, after torch.distributed.checkpoint.
// Every rank writes its own shards as a safetensors file and rank 0 writes one metadata file
// (JSON) that says, for each key, the global shape, the dtype and which file holds which chunk;
// loading reads whatever chunks overlap what each rank needs, so a checkpoint saved on N ranks
// loads on M. See docs/distributed.md, "Distributed checkpoint".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/distributed/process_group.h"
#include "tensor/export.h"

namespace tensor::nn {
class Module;
}

namespace tensor::distributed::checkpoint {

/// This rank's piece of a tensor sharded over ranks: `local` is the box of the global tensor
/// (of `global_shape`) that starts at `offsets` (one per dim) and has local's sizes. A rank
/// with no piece of the tensor passes an empty box (a 0-row local). Shards along dim 0 are
/// ShardedTensor::rows(...); a range of a tensor's flattened elements (FSDP's flat shards) is
/// rows(flat_piece, first_element, {numel}) on its 1-D view.
struct TENSOR_API ShardedTensor {
  std::vector<int64_t> global_shape;
  std::vector<int64_t> offsets;
  Tensor local;

  ShardedTensor() = default;
  ShardedTensor(Tensor local, std::vector<int64_t> offsets, std::vector<int64_t> global_shape);
  /// Rows [row_offset, row_offset + local.size(0)) of a tensor of `global_shape`.
  static ShardedTensor rows(Tensor local, int64_t row_offset, std::vector<int64_t> global_shape);
};

/// A value of a state dict: a whole tensor (the same on every rank that has it, written once)
/// or this rank's shard of a tensor.
using StateDictValue = std::variant<Tensor, ShardedTensor>;
/// What save() writes and load() fills in place, by key.
using StateDict = std::map<std::string, StateDictValue>;

/// A module's state_dict() (parameters and buffers) as whole tensors, sharing their storage,
/// so load() writes into the module.
TENSOR_API StateDict module_state_dict(const nn::Module& module);

/// Saves a distributed checkpoint into the directory `checkpoint_dir` (created if needed).
/// Collective: every rank of `pg` calls it with its state dict (null pg: a single process).
/// All ranks must agree on each key's dtype and global shape, and the shards of a key must
/// tile its global shape exactly; otherwise every rank raises tensor::Error naming the key.
/// Each rank writes `__<rank>_0.g<generation>.safetensors` (its shards, and the whole tensors
/// it is the lowest rank to hold); rank 0 then writes `.metadata` (JSON) last, by an atomic
/// rename: a save that fails or is killed midway leaves the previous checkpoint loadable
/// (its files are only removed after the new metadata is in place). Returns on every rank
/// once the checkpoint is committed.
TENSOR_API void save(const StateDict& state_dict, const std::string& checkpoint_dir,
                     std::shared_ptr<ProcessGroup> pg = nullptr);

/// Loads a checkpoint into the tensors of `state_dict`, in place and without autograd
/// recording. A whole Tensor receives the whole saved tensor; a ShardedTensor receives the box
/// it describes, whatever the sharding of the save (resharding: a checkpoint saved on N ranks
/// loads on M; each rank reads only the rows of each file that overlap its box). Every key
/// must be in the checkpoint with the same dtype and global shape (tensor::Error naming the
/// key otherwise; nothing is written unless all keys pass). With a `pg`, ranks leave together
/// (a barrier), so a following save cannot remove files another rank still reads.
TENSOR_API void load(const StateDict& state_dict, const std::string& checkpoint_dir,
                     std::shared_ptr<ProcessGroup> pg = nullptr);

/// One stored chunk of a tensor: the file (in the checkpoint directory) and the box.
struct TENSOR_API ChunkMetadata {
  std::string file;
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
};
/// What the metadata file records for one key.
struct TENSOR_API TensorMetadata {
  ScalarType dtype = kFloat32;
  std::vector<int64_t> global_shape;
  std::vector<ChunkMetadata> chunks;
};
/// The contents of a checkpoint's metadata file.
struct TENSOR_API Metadata {
  int64_t generation = 0;
  int world_size = 0;
  std::map<std::string, TensorMetadata> tensors;
};
/// Reads the metadata of the checkpoint in `checkpoint_dir` (tensor::Error when there is none).
TENSOR_API Metadata read_metadata(const std::string& checkpoint_dir);

namespace detail {
/// Testing only: called by save() at its phases ("after_write" on every rank once its file is
/// written, "before_commit" on rank 0 before it renames the metadata into place), so tests can
/// kill or fail a rank mid-save. An empty function removes the hook.
TENSOR_API void set_save_fault_hook(std::function<void(const std::string& phase, int rank)> hook);
}  // namespace detail

}  // namespace tensor::distributed::checkpoint
