// nn::utils::rnn (include/tensor/nn/utils/rnn.h): PackedSequence and packing, following
// libtorch's torch/nn/utils/rnn.h and ATen's _pack_padded_sequence / _pad_packed_sequence.
//
// Note [Packing by index_select]
// Packing and padding only move rows, so both are one index_select over the rows of a
// flattened tensor: packing picks row t * B + b of the padded [T * B, *] input for every
// running (t, b), in step order; padding picks, for every (t, b) of the padded [T, B, *]
// output, its packed row or an extra row holding padding_value appended to the data.
// index_select and cat are differentiable, so the gradient of packed data is the padded
// gradient and vice versa, with no op of its own.
#include "tensor/nn/utils/rnn.h"

#include <algorithm>
#include <string>

#include "src/core/Check.h"
#include "tensor/ops.h"

namespace tensor::nn::utils::rnn {

namespace {

std::vector<int64_t> trailing(const Tensor& t, int64_t from) {
  std::vector<int64_t> s;
  for (int64_t d = from; d < t.dim(); ++d) s.push_back(t.size(d));
  return s;
}

// lengths as int64 values on the CPU (any integer dtype, any device).
std::vector<int64_t> values_of(const Tensor& lengths) {
  Tensor l = lengths.to(Device(kCPU)).to(kInt64).contiguous();
  const int64_t* p = l.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + l.numel());
}

}  // namespace

Tensor invert_permutation(const Tensor& permutation) {
  if (!permutation.defined()) return Tensor();
  TENSOR_CHECK(permutation.dim() == 1 && permutation.dtype() == kInt64,
               "invert_permutation: expected a 1-d int64 permutation, got {}", permutation.describe());
  Tensor output = tensor::empty_like(permutation);
  output.scatter_(0, permutation, tensor::arange(0, permutation.numel(), TensorOptions(kInt64).device(permutation.device())));
  return output;
}

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices) {
  // As libtorch, unsorted_indices (when given) is trusted to be sorted_indices' inverse.
  if (!unsorted_indices.defined()) unsorted_indices = invert_permutation(sorted_indices);
  TENSOR_CHECK(batch_sizes.defined() && batch_sizes.device().type() == kCPU,
               "PackedSequence: batch_sizes should always be on CPU. Instances of PackedSequence should never be "
               "created manually. They should be instantiated by functions like pack_sequence and "
               "pack_padded_sequences in nn::utils::rnn (got batch_sizes {})",
               batch_sizes.defined() ? batch_sizes.describe() : std::string("undefined"));
  TENSOR_CHECK(batch_sizes.dim() == 1 && batch_sizes.dtype() == kInt64,
               "PackedSequence: batch_sizes must be a 1-d int64 tensor, got {}", batch_sizes.describe());
  data_ = std::move(data);
  batch_sizes_ = std::move(batch_sizes);
  sorted_indices_ = std::move(sorted_indices);
  unsorted_indices_ = std::move(unsorted_indices);
}

PackedSequence PackedSequence::to(TensorOptions options) const {
  Tensor data = data_.to(options);
  if (data.is_same(data_)) return *this;
  // batch_sizes stays on the CPU; the indices follow data's device and keep their dtype.
  const Device dev = data.device();
  return PackedSequence(data, batch_sizes_, sorted_indices_.defined() ? sorted_indices_.to(dev) : Tensor(),
                        unsorted_indices_.defined() ? unsorted_indices_.to(dev) : Tensor());
}

PackedSequence PackedSequence::cuda() const { return to(TensorOptions().device(Device(kCUDA))); }
PackedSequence PackedSequence::cpu() const { return to(TensorOptions().device(Device(kCPU))); }

PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first, bool enforce_sorted) {
  const char* op = "pack_padded_sequence";
  TENSOR_CHECK(input.defined() && lengths.defined(), "{}: input and lengths must be defined", op);
  TENSOR_CHECK(input.dim() >= 2, "{}: expected input of at least 2 dims ([T, B, *], or [B, T, *] with batch_first), got {}",
               op, input.describe());
  TENSOR_CHECK(lengths.dim() == 1 && !lengths.is_floating_point() && !lengths.is_complex(),
               "{}: 'lengths' argument should be a 1D integer tensor, but got {}", op, lengths.describe());
  Tensor sorted_indices;
  std::vector<int64_t> len = values_of(lengths);
  if (!enforce_sorted) {
    // A stable sort keeps equal lengths in batch order, so the permutation is deterministic.
    Tensor sorted_lengths;
    std::tie(sorted_lengths, sorted_indices) =
        tensor::sort(tensor::tensor(len, kInt64), /*stable=*/true, /*dim=*/-1, /*descending=*/true);
    len = values_of(sorted_lengths);
    sorted_indices = sorted_indices.to(input.device());
    input = input.index_select(batch_first ? 0 : 1, sorted_indices);
  }
  // ATen's _pack_padded_sequence.
  if (batch_first) input = input.transpose(0, 1);
  const int64_t steps = input.size(0), batch = input.size(1);
  TENSOR_CHECK(static_cast<int64_t>(len.size()) == batch,
               "{}: Expected `len(lengths)` to be equal to batch_size, but got {} (batch_size={}) for input {}", op,
               len.size(), batch, input.describe());
  TENSOR_CHECK(batch > 0, "{}: the batch of input {} is empty", op, input.describe());
  TENSOR_CHECK(len.back() > 0,
               "{}: Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0",
               op);
  for (size_t b = 1; b < len.size(); ++b)
    TENSOR_CHECK(len[b - 1] >= len[b],
                 "{}: `lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                 "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                 "if you do not need ONNX exportability.",
                 op);
  TENSOR_CHECK(len.front() <= steps, "{}: the longest length {} exceeds the {} steps of input {}", op, len.front(),
               steps, input.describe());
  // Note [Packing by index_select].
  std::vector<int64_t> batch_sizes, rows;
  for (int64_t t = 0; t < len.front(); ++t) {
    int64_t running = 0;
    while (running < batch && len[static_cast<size_t>(running)] > t) ++running;
    batch_sizes.push_back(running);
    for (int64_t b = 0; b < running; ++b) rows.push_back(t * batch + b);
  }
  std::vector<int64_t> flat = {steps * batch};
  for (int64_t s : trailing(input, 2)) flat.push_back(s);
  Tensor data = input.reshape(flat).index_select(0, tensor::tensor(rows, kInt64).to(input.device()));
  return PackedSequence(data, tensor::tensor(batch_sizes, kInt64), sorted_indices, {});
}

std::tuple<Tensor, Tensor> pad_packed_sequence(PackedSequence sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length) {
  const char* op = "pad_packed_sequence";
  const Tensor& data = sequence.data();
  const std::vector<int64_t> bs = values_of(sequence.batch_sizes());
  int64_t max_seq_length = static_cast<int64_t>(bs.size());
  if (total_length.has_value()) {
    TENSOR_CHECK(*total_length >= max_seq_length,
                 "{}: Expected total_length to be at least the length of the longest sequence in input, but got "
                 "total_length={} and max sequence length being {}",
                 op, *total_length, max_seq_length);
    max_seq_length = *total_length;
  }
  TENSOR_CHECK(!bs.empty() && bs.front() > 0, "{}: the packed sequence is empty (batch_sizes {})", op,
               sequence.batch_sizes().describe());
  const int64_t batch = bs.front();
  int64_t packed_rows = 0;
  for (int64_t b : bs) packed_rows += b;
  TENSOR_CHECK(data.defined() && data.dim() >= 1 && data.size(0) == packed_rows,
               "{}: data {} does not hold the {} rows its batch_sizes count", op,
               data.defined() ? data.describe() : std::string("undefined"), packed_rows);
  // ATen's _pad_packed_sequence; Note [Packing by index_select].
  const std::vector<int64_t> rest = trailing(data, 1);
  std::vector<int64_t> pad_shape = {1};
  pad_shape.insert(pad_shape.end(), rest.begin(), rest.end());
  Tensor source = tensor::cat({data, tensor::full(pad_shape, padding_value, data.options())}, 0);
  std::vector<int64_t> rows(static_cast<size_t>(max_seq_length * batch), packed_rows);
  std::vector<int64_t> lengths(static_cast<size_t>(batch), 0);
  int64_t offset = 0;
  for (size_t t = 0; t < bs.size(); ++t) {
    TENSOR_CHECK(bs[t] <= batch && (t == 0 || bs[t] <= bs[t - 1]) && bs[t] > 0,
                 "{}: batch_sizes must be positive and non-increasing, got {}", op,
                 ::tensor::detail::shape_str(bs));
    for (int64_t b = 0; b < bs[t]; ++b) {
      rows[t * static_cast<size_t>(batch) + static_cast<size_t>(b)] = offset + b;
      lengths[static_cast<size_t>(b)] = static_cast<int64_t>(t) + 1;
    }
    offset += bs[t];
  }
  std::vector<int64_t> out_shape = {max_seq_length, batch};
  out_shape.insert(out_shape.end(), rest.begin(), rest.end());
  Tensor padded = source.index_select(0, tensor::tensor(rows, kInt64).to(data.device())).reshape(out_shape);
  if (batch_first) padded = padded.transpose(0, 1);
  Tensor lengths_t = tensor::tensor(lengths, kInt64);
  const Tensor& unsorted = sequence.unsorted_indices();
  if (unsorted.defined())
    return {padded.index_select(batch_first ? 0 : 1, unsorted), lengths_t.index_select(0, unsorted.to(Device(kCPU)))};
  return {padded, lengths_t};
}

Tensor pad_sequence(TensorList sequences, bool batch_first, double padding_value, std::string_view padding_side) {
  const char* op = "pad_sequence";
  TENSOR_CHECK(!sequences.empty(), "{}: received an empty list of sequences", op);
  TENSOR_CHECK(padding_side == "left" || padding_side == "right",
               "{}: Expected padding_side to be one of left or right, but got {}.", op, std::string(padding_side));
  const Tensor& first = sequences[0];
  TENSOR_CHECK(first.defined() && first.dim() >= 1, "{}: sequences must be at least 1-d, got {}", op,
               first.defined() ? first.describe() : std::string("undefined"));
  const std::vector<int64_t> rest = trailing(first, 1);
  int64_t max_len = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const Tensor& s = sequences[i];
    TENSOR_CHECK(s.defined() && s.dim() == first.dim() && trailing(s, 1) == rest,
                 "{}: sequence {} {} does not match the trailing dims of sequence 0 {}", op, i,
                 s.defined() ? s.describe() : std::string("undefined"), first.describe());
    max_len = std::max(max_len, s.size(0));
  }
  std::vector<Tensor> padded;
  padded.reserve(sequences.size());
  for (const Tensor& s : sequences) {
    const int64_t missing = max_len - s.size(0);
    if (missing == 0) {
      padded.push_back(s);
      continue;
    }
    std::vector<int64_t> pad_shape = {missing};
    pad_shape.insert(pad_shape.end(), rest.begin(), rest.end());
    Tensor pad = tensor::full(pad_shape, padding_value, s.options());
    padded.push_back(padding_side == "right" ? tensor::cat({s, pad}, 0) : tensor::cat({pad, s}, 0));
  }
  return tensor::stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(TensorList sequences, bool enforce_sorted) {
  TENSOR_CHECK(!sequences.empty(), "pack_sequence: received an empty list of sequences");
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) {
    TENSOR_CHECK(s.defined() && s.dim() >= 1, "pack_sequence: sequences must be at least 1-d, got {}",
                 s.defined() ? s.describe() : std::string("undefined"));
    lengths.push_back(s.size(0));
  }
  return pack_padded_sequence(pad_sequence(sequences), tensor::tensor(lengths, kInt64), /*batch_first=*/false,
                              enforce_sorted);
}

}  // namespace tensor::nn::utils::rnn
