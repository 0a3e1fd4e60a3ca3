// The CPU copy behind cat and stack (front ends: src/ops/JoinOps.cpp).
#include "kernels/cpu/CatKernels.h"

#include <omp.h>

#include <cstring>

#include "src/core/Parallel.h"

namespace tensor::cpu {

// kernels/cpu/RowCopyKernels.cpp: n bytes from src to dst (not overlapping) by vector loads and
// stores.
void copy_row(char* dst, const char* src, size_t n);

void cat_copy_slab(const Tensor& out, const Tensor& src, int64_t dim, int64_t offset) {
  const int64_t n = src.size(dim);
  if (n == 0 || src.numel() == 0) return;
  if (src.is_contiguous() && src.dtype() == out.dtype() && !src.is_conj()) {
    // Fast path: the slab is `outer` runs of n * inner contiguous elements in both tensors.
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= out.size(d);
    for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.size(d);
    const int64_t es = out.element_size();
    const int64_t run = n * inner * es, out_row = out.size(dim) * inner * es;
    char* dst = static_cast<char*>(out.data_ptr()) + offset * inner * es;
    const char* s = static_cast<const char*>(src.data_ptr());
    if (outer == 1) {  // one run (every cat along dim 0): no parallel region, whose start costs
      std::memcpy(dst, s, static_cast<size_t>(run));  // more than a small copy
      return;
    }
    // Note [One-thread parallel regions] (src/core/Parallel.h): below the grain, inline.
    tensor::detail::parallel_range(outer, tensor::detail::threads_for(outer * n * inner), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) std::memcpy(dst + o * out_row, s + o * run, static_cast<size_t>(run));
    });
    return;
  }
  // General path: strided, type-converting, conj-resolving copy of the elementwise engine.
  Tensor slab = out.narrow(dim, offset, n);
  slab.copy_(src);
}

// Note [Cat by output rows]
// Copying input by input (cat_copy_slab) writes each output row in pieces, once per input and
// in a separate parallel loop each, so a row's cache lines are visited by as many passes as
// there are inputs. Along an inner dim the output is instead written row by row: each thread
// takes whole output rows and fills each from every input in turn, one sequential write
// stream per thread.
// An input need not be contiguous, only made of rows: its dims from `dim` on contiguous among
// themselves (one run of size(dim) * inner elements) and its outer dims one stride apart. So
// the narrow views of a contiguous tensor qualify, which is how roll (Note [Rearranging ops by
// composition]) reaches this loop rather than the strided copy.
//
// Note [Row copies by vectors]
// The row pieces are copied with Highway vector loads and stores (copy_row), not memcpy: above
// its threshold (2112 bytes here) glibc's memcpy uses `rep movsb`, which on the AMD EPYC of the
// benchmarks took 98% of roll_2048x2048_dim1's samples and 1.8 ms a call on one thread against
// 0.71 ms with vector copies (torch's copy of the same pieces, a vector loop, 0.72-1.0 ms).
// Roll's pieces start a few bytes apart in source and destination rows, which may be what the
// string instruction handles badly; plain vector copies do not care.
namespace {
/// The byte distance between consecutive rows of `t` (its outer dims, flattened) when `t` is
/// made of rows as the Note above says, else -1.
int64_t row_stride_bytes(const Tensor& t, int64_t dim) {
  int64_t expect = 1;
  for (int64_t d = t.dim() - 1; d >= dim; --d) {
    if (t.size(d) != 1 && t.stride(d) != expect) return -1;
    expect *= t.size(d);
  }
  int64_t row = -1;  // the stride of the innermost outer dim of size > 1
  for (int64_t d = dim - 1; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (row < 0) {
      row = t.stride(d);
      expect = row * t.size(d);
    } else {
      if (t.stride(d) != expect) return -1;
      expect *= t.size(d);
    }
  }
  return (row < 0 ? 0 : row) * t.element_size();
}
}  // namespace

bool cat_rows(const Tensor& out, TensorList tensors, int64_t dim) {
  if (dim <= 0 || tensors.size() < 2 || tensors.size() > 64) return false;
  const int64_t es = out.element_size();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out.size(d);
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.size(d);
  const char* src[64];
  int64_t run[64], step[64];
  size_t n = 0;
  for (const Tensor& t : tensors) {
    if (t.numel() == 0) continue;
    if (t.dtype() != out.dtype() || t.is_conj()) return false;
    step[n] = row_stride_bytes(t, dim);
    if (step[n] < 0) return false;
    src[n] = static_cast<const char*>(t.data_ptr());
    run[n++] = t.size(dim) * inner * es;
  }
  const int64_t out_row = out.size(dim) * inner * es;
  char* dst = static_cast<char*>(out.data_ptr());
  tensor::detail::parallel_range(outer, outer > 1 ? tensor::detail::threads_for(out.numel()) : 1, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      char* d = dst + o * out_row;
      for (size_t i = 0; i < n; ++i) {
        copy_row(d, src[i] + o * step[i], static_cast<size_t>(run[i]));
        d += run[i];
      }
    }
  });
  return true;
}

}  // namespace tensor::cpu
