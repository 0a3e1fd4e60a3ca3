// Internal: the stride arithmetic behind tensor::MemoryFormat (Note [Memory formats] in
// MemoryFormat.cpp), shared by the public layout functions and the CPU kernels' layout choice
// (src/cpu/Layout.cpp).
#pragma once

#include "tensor/core/Tensor.h"

namespace tensor::layout {

/// True when the dims, ordered by stride with size-1 dims skipped, tile memory exactly once
/// (libtorch's is_non_overlapping_and_dense): a permutation of a contiguous tensor.
bool non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides);

/// True when (N, C, spatial...) strides are dense in the order C, spatial (last first), N;
/// size-1 dims' strides are ignored (libtorch's is_contiguous(ChannelsLast) for dim 4).
bool channels_last_dense(IntArrayRef sizes, IntArrayRef strides);

/// libtorch's is_channels_last_strides_2d/_3d walk, for any dim >= 3: every stride in the order
/// C, spatial (last first), N at least the previous one times its size, with its tie-breaks.
bool strides_like_channels_last(IntArrayRef sizes, IntArrayRef strides);

/// Dense channels-last strides for sizes (dim >= 3).
DimVector channels_last_strides(IntArrayRef sizes);

/// Strides of a new dense tensor of `sizes` in format f (not Preserve); `op` names the caller
/// in the error for a format that does not fit the dim.
DimVector strides_for(IntArrayRef sizes, MemoryFormat f, const char* op);

/// Dense strides keeping the order of t's dims by stride (libtorch's empty_like layout for a
/// tensor that is not dense, e.g. a slice of a transposed one).
DimVector dense_strides_in_order_of(IntArrayRef sizes, IntArrayRef strides);

}  // namespace tensor::layout
