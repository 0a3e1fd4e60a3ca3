// Datasets and samplers (tensor::data).
#include <cstring>

#include "src/core/Check.h"
#include "src/data/Gather.h"
#include "tensor/data.h"
#include "tensor/ops.h"

namespace tensor::data {

Dataset::~Dataset() = default;
Sampler::~Sampler() = default;

Example<> Dataset::get_batch(const std::vector<size_t>& indices) {
  TENSOR_CHECK(!indices.empty(), "Dataset::get_batch: no indices");
  std::vector<Tensor> data, target;
  data.reserve(indices.size());
  target.reserve(indices.size());
  for (size_t i : indices) {
    Example<> e = get(i);
    TENSOR_CHECK(e.data.defined(), "Dataset::get_batch: sample {} has undefined data", i);
    data.push_back(std::move(e.data));
    target.push_back(std::move(e.target));
  }
  Example<> batch;
  batch.data = stack(data);
  // Datasets without targets give undefined targets; then the batch has none either.
  bool has_target = target[0].defined();
  for (size_t k = 0; k < target.size(); ++k)
    TENSOR_CHECK(target[k].defined() == has_target,
                 "Dataset::get_batch: sample {} has {} target but sample {} has {}", indices[0],
                 has_target ? "a" : "no", indices[k], target[k].defined() ? "one" : "none");
  if (has_target) batch.target = stack(target);
  return batch;
}

namespace detail {
Tensor gather_rows(const Tensor& src, const std::vector<size_t>& indices) {
  const int64_t n = src.size(0);
  for (size_t i : indices)
    TENSOR_CHECK(i < static_cast<size_t>(n), "gather_rows: index {} is out of range for {} rows", i, n);
  std::vector<int64_t> sizes = src.sizes().vec();
  sizes[0] = static_cast<int64_t>(indices.size());
  if (!src.is_cpu() || !src.is_contiguous() || src.is_conj()) {
    std::vector<int64_t> v(indices.begin(), indices.end());
    return index_select(src, 0, tensor::tensor(v, TensorOptions().dtype(kInt64)).to(src.device()));
  }
  Tensor out = empty(sizes, src.options());
  const size_t row = static_cast<size_t>(src.numel() / std::max<int64_t>(n, 1) * src.element_size());
  const char* from = static_cast<const char*>(src.data_ptr());
  char* to = static_cast<char*>(out.data_ptr());
  for (size_t k = 0; k < indices.size(); ++k) std::memcpy(to + k * row, from + indices[k] * row, row);
  return out;
}
}  // namespace detail

TensorDataset::TensorDataset(Tensor data, Tensor target) : data_(std::move(data)), target_(std::move(target)) {
  TENSOR_CHECK(data_.defined() && data_.dim() >= 1, "TensorDataset: data must be a tensor with at least one dim");
  TENSOR_CHECK(!target_.defined() || (target_.dim() >= 1 && target_.size(0) == data_.size(0)),
               "TensorDataset: data {} and target {} must have the same size along dim 0", data_.describe(),
               target_.defined() ? target_.describe() : std::string("(undefined)"));
}

size_t TensorDataset::size() const { return static_cast<size_t>(data_.size(0)); }

Example<> TensorDataset::get(size_t index) {
  TENSOR_CHECK(index < size(), "TensorDataset::get: index {} is out of range for a dataset of {} samples", index, size());
  int64_t i = static_cast<int64_t>(index);
  return {data_.select(0, i), target_.defined() ? target_.select(0, i) : Tensor()};
}

Example<> TensorDataset::get_batch(const std::vector<size_t>& indices) {
  for (size_t i : indices)
    TENSOR_CHECK(i < size(), "TensorDataset::get_batch: index {} is out of range for a dataset of {} samples", i, size());
  return {detail::gather_rows(data_, indices), target_.defined() ? detail::gather_rows(target_, indices) : Tensor()};
}

std::vector<size_t> SequentialSampler::indices(size_t size, uint64_t) {
  std::vector<size_t> out(size);
  for (size_t i = 0; i < size; ++i) out[i] = i;
  return out;
}

namespace {
// Note [Sampler RNG]: shuffling uses its own generator (splitmix64) and its own bounded-integer
// method (Lemire's multiply-shift with rejection), both fully specified here, so an order depends
// only on (seed, epoch): not on the standard library (std::shuffle and the std distributions are
// implementation-defined), the global generator, or the number of worker threads.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, range), range >= 1, without modulo bias.
  uint64_t below(uint64_t range) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * range;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < range) {
      uint64_t threshold = (0 - range) % range;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * range;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
};
}  // namespace

std::vector<size_t> RandomSampler::indices(size_t size, uint64_t epoch) {
  std::vector<size_t> out(size);
  for (size_t i = 0; i < size; ++i) out[i] = i;
  // Mix seed and epoch through two generator steps so that nearby seeds and epochs decorrelate.
  SplitMix64 mix{seed_};
  SplitMix64 rng{mix.next() ^ SplitMix64{epoch ^ 0x5851f42d4c957f2dull}.next()};
  for (size_t i = size; i > 1; --i) std::swap(out[i - 1], out[rng.below(i)]);
  return out;
}

}  // namespace tensor::data
