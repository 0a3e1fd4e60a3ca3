// Internal: which memory layout (NCHW-contiguous or channels-last) an activation-shaped tensor
// (N, C, spatial...) is in and which one its results take, shared by the convolutions, pooling
// and normalization (Note [Channels-last layout] in Layout.cpp).
#pragma once

#include "tensor/core/Tensor.h"
#include "tensor/ops.h"

namespace tensor::cpu {

// The two predicates are exported (TENSOR_API) only so that tests/test_channels_last.cpp can
// check them on hand-built strides; they are not public API.

/// True when t (N, C, spatial...), dim >= 3, is dense in channels-last order (C innermost, then
/// the spatial dims from the last, then N); the strides of size-1 dims are ignored. libtorch's
/// is_contiguous(ChannelsLast / ChannelsLast3d), extended to (N, C, L). A tensor can be this and
/// NCHW-contiguous at once (C == 1 or a single spatial position).
TENSOR_API bool is_channels_last_contiguous(const Tensor& t);

/// True when t's results and kernels should be channels-last: libtorch's suggest_memory_format()
/// == ChannelsLast, for the dense tensors the kernels read in place. A tensor that is both
/// contiguous and channels-last prefers NCHW unless its size-1 dims carry channels-last strides.
TENSOR_API bool prefers_channels_last(const Tensor& t);

/// Strides of a dense channels-last tensor of these sizes (dim >= 3).
DimVector channels_last_strides(IntArrayRef sizes);

/// An uninitialized result of `sizes` in the layout `like` prefers (prefers_channels_last).
Tensor empty_in_layout_of(IntArrayRef sizes, const Tensor& like, const TensorOptions& o);

/// A result for the plain loops, which write row-major memory: laid out as empty_in_layout_of
/// when that is row-major memory too (an ambiguous `like`: only size-1 strides differ), else
/// NCHW-contiguous.
Tensor empty_row_major_like(IntArrayRef sizes, const Tensor& like, const TensorOptions& o);

}  // namespace tensor::cpu
