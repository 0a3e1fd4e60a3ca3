// Channels-last layout predicates (src/cpu/Layout.h).
#include "src/cpu/Layout.h"

#include <algorithm>

#include "src/ops/MemoryFormat.h"

namespace tensor::cpu {

// Note [Channels-last layout]
// libtorch (c10 TensorImpl, 1.13) keeps two answers for a 4-d (5-d) tensor:
// - is_contiguous(MemoryFormat::ChannelsLast) (compute_channels_last_contiguous_2d): the strides
//   are the dense ones of the order C, W, H, N, where a size-1 dim's stride is ignored. Like
//   is_contiguous(), it ignores size-1 dims, so a tensor with C == 1 or H * W == 1 is both
//   contiguous and channels-last: (N, C, 1, 1) @ (C, 1, 1, 1) and @ (C, 1, C, C), and
//   (N, 1, H, W) @ (HW, HW, W, 1) and @ (HW, 1, W, 1), are all both.
// - suggest_memory_format() (is_channels_last_strides_2d): the layout results take (conv,
//   pooling and group_norm allocate their outputs in it; oneDNN convolutions run nhwc on it). It
//   walks the dims in the order C, W, H, N and asks every stride to be at least the previous
//   stride times its size (a size-1 dim counts as 1). It answers Contiguous for a zero size, a
//   zero C stride (expanded channels), when N's stride equals C's (N111 tensors), and when the
//   walk fails; so the ambiguous tensors above are decided by the strides of their size-1 dims:
//   (C, 1, 1, 1) and (HW, HW, W, 1), as empty() makes them, are Contiguous; (C, 1, C, C) and
//   (HW, 1, W, 1), as empty(memory_format = ChannelsLast) and permutes of NHWC tensors make
//   them, are ChannelsLast. It is a heuristic over any strides: a sliced channels-last tensor
//   (not dense) is ChannelsLast too, and libtorch copies it into a dense channels-last one.
// Measured on libtorch 1.13.1: conv2d, max_pool2d and group_norm outputs follow
// suggest_memory_format on all of these (a (N, 1, H, W) @ (HW, 1, W, 1) input gives a
// (N, 4, H, W) conv output @ (4HW, 1, 4W, 4)); batch_norm returns NCHW strides for every
// contiguous input (it checks is_contiguous() first), which differs from the others only in
// size-1 strides, i.e. not in memory order.
// Here: is_channels_last_contiguous is the first answer (for dim >= 3: the convolutions also run
// (N, C, L) as nwc), asked where a kernel reads a tensor in place as channels-last (oneDNN
// pooling, batch_norm). prefers_channels_last is the second, restricted to dense tensors (a
// non-dense one, e.g. sliced, is copied to NCHW-contiguous as before, where libtorch would copy
// it to channels-last); every layout choice asks it: the conv output and its nwc/nhwc/ndhwc
// kernels, the pooling outputs, batch_norm's oneDNN-or-loops choice (Note [batch_norm
// kernels]), and the row-major outputs of the loops (group_norm, pooling), which take the
// preferred strides when the input is ambiguous (same memory, so free). So an ambiguous tensor
// takes the NCHW path everywhere unless its strides say channels-last, and then keeps that
// layout through a chain of ops, as in libtorch. batch_norm's loops keep libtorch's own NCHW
// strides for contiguous inputs.

// The stride arithmetic lives with the public MemoryFormat functions (src/ops/MemoryFormat.cpp),
// which answer the same questions for 4-d and 5-d tensors.

bool is_channels_last_contiguous(const Tensor& t) {
  return t.dim() >= 3 && layout::channels_last_dense(t.sizes(), t.strides());
}

bool prefers_channels_last(const Tensor& t) {
  return t.dim() >= 3 && layout::channels_last_dense(t.sizes(), t.strides()) &&
         layout::strides_like_channels_last(t.sizes(), t.strides());
}

DimVector channels_last_strides(IntArrayRef sizes) { return layout::channels_last_strides(sizes); }

Tensor empty_in_layout_of(IntArrayRef sizes, const Tensor& like, const TensorOptions& o) {
  if (sizes.size() >= 3 && prefers_channels_last(like)) return empty_strided(sizes, channels_last_strides(sizes), o);
  return empty(sizes, o);
}

Tensor empty_row_major_like(IntArrayRef sizes, const Tensor& like, const TensorOptions& o) {
  if (sizes.size() >= 3 && prefers_channels_last(like)) {
    DimVector st = channels_last_strides(sizes);
    // Row-major as TensorImpl counts it: size-1 dims skipped.
    bool row_major = true;
    int64_t expect = 1;
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0 && row_major; --d) {
      if (sizes[d] == 1) continue;
      row_major = st[d] == expect;
      expect *= sizes[d];
    }
    if (row_major) return empty_strided(sizes, st, o);
  }
  return empty(sizes, o);
}

}  // namespace tensor::cpu
