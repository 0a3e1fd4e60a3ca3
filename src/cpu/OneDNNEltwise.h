// Internal: elementwise ops that oneDNN's eltwise primitive computes faster than libtensor's
// own kernels (Note [oneDNN eltwise]).
#pragma once

#include "src/core/TensorIterator.h"
#include "kernels/cpu/Elementwise.h"

namespace tensor::cpu {

/// Runs op over a built, non-meta unary iterator with oneDNN when it pays (float32, one
/// contiguous run, an op in the list of Note [oneDNN eltwise]); returns false, having done
/// nothing, otherwise.
bool onednn_unary(const TensorIterator& it, UnaryOp op);


}  // namespace tensor::cpu
