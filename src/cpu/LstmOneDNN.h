// Internal: an LSTM layer's inference forward on oneDNN's LSTM primitive (src/cpu/LstmOneDNN.cpp,
// Note [LSTM inference on oneDNN]). The fused recurrent layer (src/nn/RNNFused.cpp) calls it.
#pragma once

#include <cstdint>

#include "tensor/export.h"
#include "tensor/ops.h"

namespace tensor::cpu {

/// Whether lstm_inference_onednn runs these: float32 CPU tensors, oneDNN available, and not
/// switched off (TENSOR_ONEDNN_LSTM=0, for measurements).
bool lstm_inference_onednn_applies(const Tensor& x, const Tensor& w_ih);

/// One unidirectional LSTM layer without recording: x [T, B, I] (any strides), h0 and c0 [B, H],
/// w_ih [4H, I], w_hh [4H, H] (PyTorch's gate order i, f, g, o), bias [4H] (b_ih + b_hh) or
/// undefined; reverse runs t = T-1 .. 0. Writes y [T, B, H] and the final h_n, c_n [B, H]
/// (all contiguous and freshly allocated by the caller).
void lstm_inference_onednn(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                           const Tensor& w_hh, const Tensor& bias, bool reverse, const Tensor& y, const Tensor& h_n,
                           const Tensor& c_n);

/// How many layers this thread has run on oneDNN's LSTM (tests check the path ran).
TENSOR_API int64_t lstm_inference_onednn_count();

}  // namespace tensor::cpu
