// libtorch ops that programs ported from libtorch call (issue 24): min/max of two tensors,
// multinomial, constant_pad_nd, reflection_pad1d/2d, unique_dim, diag and detach_. They are
// composites of public ops (or CPU loops without a gradient) with no dispatcher table of their
// own (src/ops/PortedOps.cpp); QR is in tensor/linalg.h.
#pragma once

#include <tuple>

#include "tensor/core/Tensor.h"

namespace tensor {

/// Elementwise minimum / maximum of two tensors (libtorch's min(a, b), max(a, b)): the same as
/// minimum / maximum, NaN propagating, broadcasting, differentiable.
TENSOR_API Tensor min(const Tensor& a, const Tensor& b);
TENSOR_API Tensor max(const Tensor& a, const Tensor& b);
/// Draws num_samples int64 category indices per row of `probs` (1-D: [num_samples]; 2-D:
/// [rows, num_samples]) with probability proportional to the row's weights, from the global
/// generator (tensor::manual_seed). Weights must be finite and non-negative with a positive row
/// sum; without replacement, num_samples may not exceed a row's count of positive weights.
TENSOR_API Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);
/// Pads the last dims with `value`: pad = {before the last dim, after it, before the one
/// before, ...}; negative amounts crop. Differentiable.
TENSOR_API Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value = 0);
/// Mirror padding without the edge over the last dim ({left, right}), for 2-D or 3-D input.
TENSOR_API Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding);
/// Mirror padding without the edge over the last two dims ({left, right, top, bottom}), for
/// 3-D or 4-D input. Differentiable (the same values as F::pad with kReflect).
TENSOR_API Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding);
/// The distinct slices of `self` along `dim`, in lexicographic order (always, whatever
/// `sorted` says, as libtorch), with the inverse indices (each slice's position in the output)
/// and the counts when asked; otherwise those are empty int64 tensors.
TENSOR_API std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& self, int64_t dim, bool sorted = true,
                                                         bool return_inverse = false, bool return_counts = false);
/// 1-D input: a square matrix with it on diagonal `diagonal` (above the main one when > 0);
/// 2-D input: a copy of that diagonal. Differentiable.
TENSOR_API Tensor diag(const Tensor& self, int64_t diagonal = 0);
/// Detaches self from the graph in place: no grad_fn, requires_grad false (every handle to it
/// sees the change). Refused on a view of a tensor that requires grad (use detach()), as libtorch.
TENSOR_API Tensor& detach_(Tensor& self);

}  // namespace tensor
