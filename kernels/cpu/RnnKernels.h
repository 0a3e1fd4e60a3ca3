// Internal: the fused per-step CPU kernels of the recurrent layers (kernels/cpu/RnnKernels.cpp),
// which src/nn/RNNFused.cpp runs between its matrix products (Note [Fused recurrent layers]).
// One call applies a whole step's gate nonlinearities and state update (forward), or turns the
// gradient of a step's output and state into the gradients of its gate pre-activations
// (backward), for n rows of H hidden units, float32 or float64, all buffers contiguous.
#pragma once

#include <cstdint>

#include "tensor/core/ScalarType.h"

namespace tensor::cpu {

/// Cell kinds, with PyTorch's gate order: LSTM i, f, g, o; GRU r, z, n.
enum class RnnCell : int { Tanh = 0, Relu = 1, LSTM = 2, GRU = 3 };

/// Gates per hidden unit: 4 (LSTM), 3 (GRU) or 1.
inline int64_t rnn_gates(RnnCell c) { return c == RnnCell::LSTM ? 4 : c == RnnCell::GRU ? 3 : 1; }

/// One forward step. gx: the input projection rows (with b_ih), row stride G*H; gh: the hidden
/// projection (with b_hh), [n, G*H]. h (and c for an LSTM): the state rows [n, H], updated in
/// place; y: the output rows [n, H]. When `act` is set the step also saves what backward needs:
/// act [n, G*H] the gate activations (RNN: the new h), hprev [n, H] the state before the step,
/// and per cell: LSTM cprev [n, H] and aux [n, H] = tanh(c); GRU aux [n, H] = the hidden
/// projection of the n gate.
struct RnnForwardStep {
  int64_t n = 0, H = 0;
  const void* gx = nullptr;
  const void* gh = nullptr;
  void* h = nullptr;
  void* c = nullptr;
  void* y = nullptr;
  void* act = nullptr;
  void* hprev = nullptr;
  void* cprev = nullptr;
  void* aux = nullptr;
};

/// One backward step over what RnnForwardStep saved. dy: the output's gradient rows (may be
/// null); dh (and dc): the gradient of the state after the step, replaced by the part of the
/// previous state's gradient that does not go through W_hh (GRU: dh * z, else 0; LSTM dc: dc * f).
/// dgx [n, G*H]: the gradient of the input projection; dgh: of the hidden projection (GRU only,
/// where the two differ; for the others they are dgx).
struct RnnBackwardStep {
  int64_t n = 0, H = 0;
  const void* dy = nullptr;
  void* dh = nullptr;
  void* dc = nullptr;
  const void* act = nullptr;
  const void* hprev = nullptr;
  const void* cprev = nullptr;
  const void* aux = nullptr;
  void* dgx = nullptr;
  void* dgh = nullptr;
};

/// dtype: kFloat32 or kFloat64 (the caller checks).
void rnn_forward_step(ScalarType dtype, RnnCell cell, const RnnForwardStep& s);
void rnn_backward_step(ScalarType dtype, RnnCell cell, const RnnBackwardStep& s);

}  // namespace tensor::cpu
