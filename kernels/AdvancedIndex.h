// Internal: what the front ends of index and index_put_ (src/ops/AdvancedIndexing.cpp) hand
// their backend kernels (Note [Basic then advanced indexing]). Backend-neutral, so it sits
// beside the op list, below both the front ends and every backend's kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/core/Tensor.h"

namespace tensor {

/// The advanced part of an index list over a tensor `src` of n dims.
struct AdvancedIndex {
  /// One per dim of src: an integer index tensor (int32/int64, broadcastable to b), a bool mask
  /// whose dims start here (mask_dims of them), or nothing. Dims a mask spans after its first
  /// are `covered`.
  struct Entry {
    Tensor t;
    int64_t mask_dims = 0;
    bool covered = false;
    bool indexed() const { return t.defined() || covered; }
  };
  std::vector<Entry> dims;
  /// The broadcast shape of the index tensors (a mask counts as one 1-D index of its true count).
  DimVector b;
  /// True when the indexed dims are adjacent: b replaces them in place in the output; otherwise
  /// b comes first, then the dims not indexed (NumPy's rule).
  bool adjacent = true;
  int64_t first = 0, last = 0;  // the first and last indexed dims
  /// The shape of index's result, and of the region index_put_ writes.
  DimVector out_shape;
};

}  // namespace tensor
