// Internal: the fused recurrent layer (src/nn/RNNFused.cpp) that nn::RNN, nn::LSTM and nn::GRU
// run per layer and direction when it applies (Note [Fused recurrent layers]).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/export.h"
#include "tensor/nn/enum.h"
#include "tensor/ops.h"

namespace tensor::nn::detail {

/// One step of the composite recurrence from the input's and the hidden state's projections gx
/// and gh (PyTorch's gate order: LSTM i, f, g, o; GRU r, z, n), updating h (and c for an LSTM);
/// w_hr (may be undefined) projects an LSTM's h. Public differentiable ops (src/nn/RNN.cpp).
void rnn_cell_step(const RNNMode& mode, const Tensor& gx, const Tensor& gh, const Tensor& w_hr, Tensor& h, Tensor& c);

/// Whether the fused layer can run these tensors: CPU, float32 or float64 throughout, no
/// projection (proj_size), outside autocast, and not switched off by FusedRNNGuard.
bool fused_rnn_applies(const Tensor& input, const Tensor& h0, const Tensor& c0, const std::vector<Tensor>& weights,
                       bool has_projection);

/// One layer and direction. input: [T, B, I] (batch_sizes empty) or packed rows [sum(bs), I];
/// h0 (and c0, LSTM) [B, H]; b_ih, b_hh may be undefined. Returns {output [rows, H] in the
/// input's row order, h_n [B, H], c_n [B, H] (LSTM only)}.
TENSOR_API std::vector<Tensor> fused_rnn_layer(const RNNMode& mode, const Tensor& input,
                                               const std::vector<int64_t>& batch_sizes, bool reverse, const Tensor& h0,
                                               const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh,
                                               const Tensor& b_ih, const Tensor& b_hh);

/// How many fused layers (one per layer and direction) this thread has run: tests check that
/// the fused path, not the composite, ran.
TENSOR_API int64_t fused_rnn_layer_count();

/// Turns the fused layer off (true) for its lifetime on this thread, so that tests and benchmarks
/// can run the composite path beside it.
class TENSOR_API FusedRNNGuard {
 public:
  explicit FusedRNNGuard(bool disable);
  ~FusedRNNGuard();
  FusedRNNGuard(const FusedRNNGuard&) = delete;
  FusedRNNGuard& operator=(const FusedRNNGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace tensor::nn::detail
