// libtorch's samplers (tensor::data::samplers).
#include <algorithm>
#include <numeric>
#include <random>

#include "src/core/Check.h"
#include "tensor/data/samplers.h"
#include "tensor/ops.h"

namespace tensor::data::samplers {

SequentialSampler::SequentialSampler(size_t size) : size_(size) {}

void SequentialSampler::reset(optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  const size_t n = std::min(batch_size, size_ - index_);
  if (n == 0) return nullopt;
  std::vector<size_t> out(n);
  std::iota(out.begin(), out.end(), index_);
  index_ += n;
  return out;
}

RandomSampler::RandomSampler(int64_t size, ScalarType index_dtype)
    : indices_(tensor::randperm(size, TensorOptions().dtype(index_dtype))) {}

void RandomSampler::reset(optional<size_t> new_size) {
  // A fresh permutation from the global generator every epoch, as libtorch draws it.
  const int64_t size = new_size ? static_cast<int64_t>(*new_size) : indices_.numel();
  indices_ = tensor::randperm(size, TensorOptions().dtype(indices_.scalar_type()));
  index_ = 0;
}

optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  const size_t total = static_cast<size_t>(indices_.numel());
  const size_t n = std::min(batch_size, total - index_);
  if (n == 0) return nullopt;
  // The permutation may be stored narrower than int64 (index_dtype); widen the slice we hand out.
  Tensor slice = indices_.slice(0, static_cast<int64_t>(index_), static_cast<int64_t>(index_ + n)).to(kInt64).contiguous();
  const int64_t* p = slice.data_ptr<int64_t>();
  std::vector<size_t> out(p, p + n);
  index_ += n;
  return out;
}

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  DistributedRandomSampler::reset(size_);
}

void DistributedRandomSampler::populate_indices() {
  const size_t local = local_sample_count();
  const size_t count = num_replicas_ == 1 ? size_ : local * num_replicas_;
  all_indices_.resize(count);
  // 0 .. size - 1, then (with duplicates) the first samples again to fill every share.
  for (size_t i = 0; i < count; ++i) all_indices_[i] = i < size_ ? i : i - size_;
  begin_index_ = rank_ * local;
  end_index_ = begin_index_ + local;
  sample_index_ = begin_index_;
}

void DistributedRandomSampler::reset(optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  populate_indices();
  // Every replica draws the same permutation (same seed: the epoch) and reads its own share, so
  // the shares of one epoch never overlap. mt19937 + std::shuffle is what libtorch uses, so the
  // order matches libtorch built with the same standard library.
  std::mt19937 rng(static_cast<std::mt19937::result_type>(epoch_));
  std::shuffle(all_indices_.begin(), all_indices_.end(), rng);
  sample_index_ = begin_index_;
}

optional<std::vector<size_t>> DistributedRandomSampler::next(size_t batch_size) {
  if (sample_index_ >= end_index_) return nullopt;
  const size_t end = std::min(sample_index_ + batch_size, end_index_);
  std::vector<size_t> out(all_indices_.begin() + static_cast<std::ptrdiff_t>(sample_index_),
                          all_indices_.begin() + static_cast<std::ptrdiff_t>(end));
  sample_index_ = end;
  return out;
}

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas, size_t rank,
                                                           bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  populate_indices();
}

void DistributedSequentialSampler::populate_indices() {
  begin_index_ = rank_ * local_sample_count();
  end_index_ = begin_index_ + local_sample_count();
  sample_index_ = begin_index_;
}

void DistributedSequentialSampler::reset(optional<size_t> new_size) {
  if (new_size && *new_size != size_) {
    size_ = *new_size;
    populate_indices();
  } else {
    sample_index_ = begin_index_;
  }
}

optional<std::vector<size_t>> DistributedSequentialSampler::next(size_t batch_size) {
  if (sample_index_ >= end_index_) return nullopt;
  const size_t end = std::min(sample_index_ + batch_size, end_index_);
  std::vector<size_t> out(end - sample_index_);
  // Positions past the last sample (the duplicates that even the shares) wrap to the first ones.
  for (size_t k = 0; k < out.size(); ++k) out[k] = (sample_index_ + k) % size_;
  sample_index_ = end;
  return out;
}

}  // namespace tensor::data::samplers
