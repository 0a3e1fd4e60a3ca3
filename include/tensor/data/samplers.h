// libtorch's samplers (torch::data::samplers): they choose which sample indices make each batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/core/ScalarType.h"
#include "tensor/core/Tensor.h"
#include "tensor/optional.h"

namespace tensor::data::samplers {

/// Yields batch requests (by default index lists) until an epoch ends; reset() starts the next
/// epoch. A data loader calls reset() at every begin() and next(batch_size) for every batch.
/// (libtorch's save/load to a serialize archive are not provided.)
template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  /// Starts a new epoch, over `new_size` samples if given (else the current size).
  virtual void reset(optional<size_t> new_size) = 0;
  /// The next batch of at most `batch_size` indices, or nullopt when the epoch is done.
  virtual optional<BatchRequest> next(size_t batch_size) = 0;
};

/// 0, 1, ..., size - 1 every epoch.
class TENSOR_API SequentialSampler : public Sampler<> {
 public:
  /// A sampler over `size` samples.
  explicit SequentialSampler(size_t size);
  /// Back to index 0 (over `new_size` samples if given).
  void reset(optional<size_t> new_size = nullopt) override;
  /// The next min(batch_size, remaining) indices in order.
  optional<std::vector<size_t>> next(size_t batch_size) override;
  /// The index the next batch starts at.
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

/// A fresh random permutation every epoch, drawn with tensor::randperm from the global generator
/// (so tensor::manual_seed fixes it), as libtorch's RandomSampler. The constructor draws one too.
class TENSOR_API RandomSampler : public Sampler<> {
 public:
  /// A sampler over `size` samples; the permutation is kept as a tensor of `index_dtype`.
  explicit RandomSampler(int64_t size, ScalarType index_dtype = kInt64);
  /// Draws a new permutation (of `new_size` samples if given) and starts at its beginning.
  void reset(optional<size_t> new_size = nullopt) override;
  /// The next min(batch_size, remaining) indices of the permutation.
  optional<std::vector<size_t>> next(size_t batch_size) override;
  /// The position in the permutation the next batch starts at.
  size_t index() const noexcept { return index_; }

 private:
  Tensor indices_;
  size_t index_ = 0;
};

/// The base of the distributed samplers: replica `rank` of `num_replicas` sees its own share of
/// the `size` samples. With allow_duplicates each share has ceil(size / num_replicas) samples
/// (some samples are repeated to even the shares); without it floor(size / num_replicas) (the
/// rest are never visited).
template <typename BatchRequest = std::vector<size_t>>
class DistributedSampler : public Sampler<BatchRequest> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : size_(size), num_replicas_(num_replicas), rank_(rank), epoch_(0), allow_duplicates_(allow_duplicates) {
    if (num_replicas == 0) ::tensor::detail::throw_error("DistributedSampler: num_replicas must be at least 1 (got 0)");
    if (rank >= num_replicas)
      ::tensor::detail::throw_error(("DistributedSampler: rank " + std::to_string(rank) + " is out of range for " +
                                     std::to_string(num_replicas) + " replicas (expected 0 <= rank < num_replicas)")
                                        .c_str());
  }

  /// Sets the epoch the next reset() shuffles for (DistributedRandomSampler seeds with it).
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  /// The epoch set by set_epoch (0 at first).
  size_t epoch() const { return epoch_; }

 protected:
  /// The number of samples each replica visits per epoch.
  size_t local_sample_count() const {
    return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }

  size_t size_;
  size_t num_replicas_;
  size_t rank_;
  size_t epoch_;
  bool allow_duplicates_;
};

/// Every replica shuffles the same list with a generator seeded by the epoch (std::mt19937(epoch)
/// and std::shuffle, as libtorch) and takes its contiguous share of it: replica r gets positions
/// [r * n, (r + 1) * n) for n = local_sample_count(). The list is 0 .. size - 1 followed, with
/// allow_duplicates, by 0, 1, ... up to n * num_replicas entries; without it, the first
/// n * num_replicas indices. So the shares of one epoch are disjoint and, with duplicates allowed,
/// cover every sample. Call set_epoch(e) before each epoch for a new order (the data loader's
/// reset() reshuffles with the epoch as set).
class TENSOR_API DistributedRandomSampler : public DistributedSampler<> {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  /// Reshuffles for the current epoch (over `new_size` samples if given), back to the share's start.
  void reset(optional<size_t> new_size = nullopt) override;
  /// The next min(batch_size, remaining) indices of this replica's share.
  optional<std::vector<size_t>> next(size_t batch_size) override;
  /// The position in the shuffled list the next batch starts at.
  size_t index() const noexcept { return sample_index_; }

 private:
  void populate_indices();
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
  std::vector<size_t> all_indices_;
};

/// Replica r visits the positions [r * n, (r + 1) * n) of 0, 1, 2, ... in order (n =
/// local_sample_count()), positions past the end wrapping around to the first samples
/// (index % size). The same every epoch.
class TENSOR_API DistributedSequentialSampler : public DistributedSampler<> {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  /// Back to the start of this replica's share (recomputed for `new_size` samples if given).
  void reset(optional<size_t> new_size = nullopt) override;
  /// The next min(batch_size, remaining) indices of this replica's share.
  optional<std::vector<size_t>> next(size_t batch_size) override;
  /// The position the next batch starts at.
  size_t index() const noexcept { return sample_index_; }

 private:
  void populate_indices();
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
};

}  // namespace tensor::data::samplers
