// Internal: the strided offset loop the indexing kernels share (kernels/cpu/IndexKernels.cpp),
// Note [Index loop geometry].
#pragma once

#include <algorithm>
#include <cstdint>

#include "src/core/Check.h"
#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu::index_loops {

// Note [Index loop geometry]
// The indexing kernels walk one iteration shape and keep three element offsets in step, one
// per operand (for example: output, index tensor, source). A dim an operand does not vary
// along has stride 0 there, which is how broadcasting, expanded index tensors and "the
// indexed dim" (whose source offset comes from an index value instead) are expressed.
// coalesce() drops size-1 dims and merges dims that are contiguous for all three operands,
// so a fully contiguous case becomes one flat loop; merging keeps row-major order, which
// masked_select and index_put_ rely on.
struct Geometry {
  DimVector sizes;
  DimVector strides[3];

  void add_dim(int64_t size, int64_t s0, int64_t s1, int64_t s2) {
    sizes.push_back(size);
    strides[0].push_back(s0);
    strides[1].push_back(s1);
    strides[2].push_back(s2);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
  void coalesce() {
    Geometry g;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 1) continue;
      if (!g.sizes.empty()) {
        size_t l = g.sizes.size() - 1;
        bool mergeable = true;
        for (int k = 0; k < 3; ++k) mergeable = mergeable && g.strides[k][l] == strides[k][d] * sizes[d];
        if (mergeable) {
          g.sizes[l] *= sizes[d];
          for (int k = 0; k < 3; ++k) g.strides[k][l] = strides[k][d];
          continue;
        }
      }
      g.add_dim(sizes[d], strides[0][d], strides[1][d], strides[2][d]);
    }
    *this = std::move(g);
  }
};

/// Calls f(o0, o1, o2) for the row-major linear positions [begin, end) of g.
template <class F>
void for_each_range(const Geometry& g, int64_t begin, int64_t end, F& f) {
  if (begin >= end) return;
  const int nd = static_cast<int>(g.sizes.size());
  if (nd == 0) {
    f(int64_t(0), int64_t(0), int64_t(0));
    return;
  }
  DimVector idx(static_cast<size_t>(nd), 0);
  int64_t o[3] = {0, 0, 0};
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % g.sizes[d];
    rem /= g.sizes[d];
    for (int k = 0; k < 3; ++k) o[k] += idx[d] * g.strides[k][d];
  }
  const int last = nd - 1;
  const int64_t n_last = g.sizes[last];
  const int64_t s0 = g.strides[0][last], s1 = g.strides[1][last], s2 = g.strides[2][last];
  int64_t linear = begin;
  while (linear < end) {
    int64_t count = std::min(n_last - idx[last], end - linear);
    if (s0 == 1 && s1 == 1) {
      // Unit strides known at compile time let simple bodies (masked_fill) vectorize.
      for (int64_t i = 0; i < count; ++i) f(o[0] + i, o[1] + i, o[2] + i * s2);
    } else {
      for (int64_t i = 0; i < count; ++i) f(o[0] + i * s0, o[1] + i * s1, o[2] + i * s2);
    }
    linear += count;
    if (linear >= end) break;
    // The inner dim is exhausted here: rewind it and carry into the outer dims.
    o[0] -= idx[last] * s0;
    o[1] -= idx[last] * s1;
    o[2] -= idx[last] * s2;
    idx[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      ++idx[d];
      for (int k = 0; k < 3; ++k) o[k] += g.strides[k][d];
      if (idx[d] < g.sizes[d]) break;
      for (int k = 0; k < 3; ++k) o[k] -= idx[d] * g.strides[k][d];
      idx[d] = 0;
    }
  }
}

/// Runs f over all of g; splits the range across OpenMP threads (detail::parallel_range) when
/// `parallel` (callers pass false whenever two positions may write the same element).
/// f must not throw: every check happens before the loop.
template <class F>
void for_each(const Geometry& g, F f, bool parallel) {
  const int64_t n = g.numel();
  if (!parallel) {
    if (n > 0) for_each_range(g, 0, n, f);
    return;
  }
  tensor::detail::parallel_range(n, [&](int64_t b, int64_t e) {
    F local = f;
    for_each_range(g, b, e, local);
  });
}

/// Walks the elements of a tensor of the given sizes and strides in row-major order, one
/// innermost row at a time: f(coords, base, n, stride) where coords holds the indices of the
/// outer dims (nd - 1 of them), base is the element offset of the row's first element, and the
/// row has n elements `stride` apart. A 0-dim tensor is one row of one element. Used where
/// the output needs the coordinates themselves (nonzero, bool masks).
template <class F>
void for_each_row(IntArrayRef sizes, IntArrayRef strides, F&& f) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return;
  if (nd == 0) {
    f(static_cast<const int64_t*>(nullptr), int64_t(0), int64_t(1), int64_t(0));
    return;
  }
  const int64_t n = sizes[nd - 1], stride = strides[nd - 1];
  DimVector idx(static_cast<size_t>(nd), 0);
  int64_t base = 0;
  for (int64_t r = 0, rows = numel / n; r < rows; ++r) {
    f(static_cast<const int64_t*>(idx.data()), base, n, stride);
    for (int64_t d = nd - 2; d >= 0; --d) {
      ++idx[d];
      base += strides[d];
      if (idx[d] < sizes[d]) break;
      base -= idx[d] * strides[d];
      idx[d] = 0;
    }
  }
}

/// A 16-byte element (complex128) moved as raw bits.
struct Bytes16 {
  uint64_t lo, hi;
};

/// Calls f(TypeTag<U>{}) with an unsigned type as wide as one element: ops that only move
/// elements (gather, index, cat, masked_select) need no per-dtype code.
template <class F>
void visit_element_size(int64_t size, F&& f) {
  switch (size) {
    case 1:
      f(TypeTag<uint8_t>{});
      return;
    case 2:
      f(TypeTag<uint16_t>{});
      return;
    case 4:
      f(TypeTag<uint32_t>{});
      return;
    case 8:
      f(TypeTag<uint64_t>{});
      return;
    case 16:
      f(TypeTag<Bytes16>{});
      return;
    default:
      TENSOR_INTERNAL_ASSERT(false);
  }
}

/// A geometry that walks one tensor in row-major order (operand 0 only).
inline Geometry geometry_of(const Tensor& t) {
  Geometry g;
  for (int64_t d = 0; d < t.dim(); ++d) g.add_dim(t.size(d), t.stride(d), 0, 0);
  return g;
}

}  // namespace tensor::cpu::index_loops
