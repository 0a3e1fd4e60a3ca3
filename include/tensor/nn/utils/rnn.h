// nn::utils::rnn: PackedSequence and the packing helpers, as libtorch's torch::nn::utils::rnn
// (torch/csrc/api/include/torch/nn/utils/rnn.h). A PackedSequence holds a batch of
// variable-length sequences time step by time step: data() is [sum(lengths), *] with the
// batch_sizes()[t] sequences still running at step t (longest first), so nn::RNN, nn::LSTM and
// nn::GRU (forward_with_packed_input) skip the padding. Packing and padding are composed of
// differentiable ops (index_select, cat), so gradients flow through them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>

#include "tensor/core/Tensor.h"

namespace tensor::nn::utils::rnn {

/// The inverse of a permutation (int64 1-d): output[permutation[i]] = i; undefined in, undefined out.
TENSOR_API Tensor invert_permutation(const Tensor& permutation);

/// A batch of variable-length sequences packed time step by time step (see the file comment).
/// Build it with pack_padded_sequence or pack_sequence.
class TENSOR_API PackedSequence {
 public:
  /// data [sum(lengths), *], batch_sizes int64 on the CPU ([max length]); sorted_indices (the
  /// original batch index of each packed column, undefined when the batch was already sorted)
  /// and unsorted_indices (its inverse, computed when not given).
  explicit PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {},
                          Tensor unsorted_indices = {});

  /// The packed steps, [sum(lengths), *].
  const Tensor& data() const { return data_; }
  /// int64 on the CPU: how many sequences are still running at each step (non-increasing).
  const Tensor& batch_sizes() const { return batch_sizes_; }
  /// Packed column -> original batch index (undefined when enforce_sorted packed it).
  const Tensor& sorted_indices() const { return sorted_indices_; }
  /// Original batch index -> packed column (undefined when enforce_sorted packed it).
  const Tensor& unsorted_indices() const { return unsorted_indices_; }

  /// data converted to the options' dtype and/or device (indices follow the device;
  /// batch_sizes stays on the CPU); *this when nothing changes.
  PackedSequence to(TensorOptions options) const;
  /// to(kCUDA).
  PackedSequence cuda() const;
  /// to(kCPU).
  PackedSequence cpu() const;
  /// Whether data() is on a CUDA device.
  bool is_cuda() const { return data_.is_cuda(); }

 private:
  Tensor data_;
  Tensor batch_sizes_;
  Tensor sorted_indices_;
  Tensor unsorted_indices_;
};

/// Packs a padded batch: input [T, B, *] ([B, T, *] with batch_first), lengths [B] (any integer
/// dtype, any device). With enforce_sorted the lengths must be non-increasing; otherwise the
/// batch is sorted by decreasing length and the permutation is recorded in the result.
TENSOR_API PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first = false,
                                               bool enforce_sorted = true);

/// The inverse of pack_padded_sequence: (padded [T, B, *] ([B, T, *] with batch_first), lengths
/// int64 [B] on the CPU), in the original batch order, padding with padding_value up to
/// total_length steps (the longest sequence when not given).
TENSOR_API std::tuple<Tensor, Tensor> pad_packed_sequence(PackedSequence sequence, bool batch_first = false,
                                                          double padding_value = 0.0,
                                                          std::optional<int64_t> total_length = std::nullopt);

/// Stacks sequences [L_i, *] into [max L, B, *] ([B, max L, *] with batch_first), padding with
/// padding_value on the "right" (after each sequence) or the "left".
TENSOR_API Tensor pad_sequence(TensorList sequences, bool batch_first = false,
                               double padding_value = 0, std::string_view padding_side = "right");

/// Packs sequences [L_i, *]: pack_padded_sequence(pad_sequence(sequences), their lengths).
TENSOR_API PackedSequence pack_sequence(TensorList sequences, bool enforce_sorted = true);

}  // namespace tensor::nn::utils::rnn
