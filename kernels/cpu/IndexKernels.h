// Internal: the CPU loops of the indexing ops (kernels/cpu/IndexKernels.cpp). The front ends in
// src/ops/IndexOps.cpp and src/ops/AdvancedIndexing.cpp check every argument and every index
// and allocate the outputs first; these only move or add elements, and never throw past those
// checks except for a dtype no loop serves.
#pragma once

#include <cstdint>

#include "kernels/AdvancedIndex.h"
#include "kernels/cpu/IndexLoops.h"
#include "tensor/core/Scalar.h"
#include "tensor/core/Tensor.h"

namespace tensor::cpu {

/// False when a value of `index` (int32 or int64, CPU) lies outside [0, size); bad_value is then
/// the first such value in row-major order.
bool index_values_in_range(const Tensor& index, int64_t size, int64_t& bad_value);

/// out = self.index_select(dim, index): self at least 1-D, out allocated (non-empty).
void index_select(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out);
/// out = self.gather(dim, index): all three at least 1-D, out of index's shape.
void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out);
/// self.scatter_(dim, index, src), or scatter_add_ when `add`; serial (repeated indices).
void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, bool add, const char* op);
/// self.index_add_(dim, index, source, alpha); serial (repeated indices).
void index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha,
               const char* op);

/// self = where(mask, value, src), mask and src broadcast to self's shape (src may be self): the
/// value checked against self's dtype (the error names `op`), then the vectorized select.
void masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value, const Tensor& src, const char* op);

/// masked_select of self and mask, both of one (broadcast) shape: the number of true entries,
/// then the selected elements written to out (count + 1 elements, the spare slot scratch).
int64_t masked_select_count(const Tensor& self, const Tensor& mask);
void masked_select_fill(const Tensor& self, const Tensor& mask, const Tensor& out);
/// nonzero of a: the number of nonzero elements, then their coordinates written to out
/// (count + 1 rows of a.dim() int64 values, the spare row scratch).
int64_t nonzero_count(const Tensor& a, const char* op);
void nonzero_fill(const Tensor& a, const Tensor& out, const char* op);

// ---- advanced indexing (Note [Basic then advanced indexing] in src/ops/AdvancedIndexing.cpp) ----
/// The number of true entries of a bool mask.
int64_t mask_true_count(const Tensor& mask);
/// The element offsets (sum of coordinate * stride over the mask's dims) of the true entries of
/// a bool mask, in row-major order, into out (count + 1 int64 elements, the spare slot scratch).
void mask_offsets_fill(const Tensor& mask, IntArrayRef strides, const Tensor& out);
/// offsets (int64, contiguous, shape B) += the element offset each index of e (int32/int64,
/// expanded to B) picks along a dim of `size` and `stride`; negative indices wrap. `ready`: e
/// already holds element offsets. False when an index is out of range (bad_value: the first).
bool fold_index_offsets(const Tensor& offsets, const Tensor& e, int64_t size, int64_t stride, bool ready,
                        int64_t& bad_value);
/// out[a] = src[c + offs[b]] over g (operand 0: out, 1: offsets, 2: src); in parallel.
void read_at_offsets(const Tensor& src, const Tensor& out, const index_loops::Geometry& g, const int64_t* offs);
/// dst[c + offs[b]] = value[a] over g (operand 0: value, 1: offsets, 2: dst); serial, so the
/// last write of a repeated index wins.
void write_at_offsets(const Tensor& dst, const Tensor& value, const index_loops::Geometry& g, const int64_t* offs);
/// index's CPU kernel: out (allocated, ai.out_shape, non-empty) = src indexed by ai. Raises
/// naming "index" when an index is out of range.
void advanced_index(const Tensor& src, const AdvancedIndex& ai, const Tensor& out);
/// index_put_'s CPU kernel: dst indexed by ai = value (broadcast to ai.out_shape, dst's dtype,
/// not sharing dst's memory).
void advanced_index_put(const Tensor& dst, const AdvancedIndex& ai, const Tensor& value);

}  // namespace tensor::cpu
