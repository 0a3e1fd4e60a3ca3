// The CPU copy behind cat and stack (front ends: src/ops/JoinOps.cpp).
#include "kernels/cpu/CatKernels.h"

#include <omp.h>

#include <cstring>

#include "src/core/Parallel.h"

namespace tensor::cpu {

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
#pragma omp parallel for if (outer * n * inner >= tensor::detail::kGrain && outer > 1 && !omp_in_parallel())
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * out_row, s + o * run, static_cast<size_t>(run));
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
bool cat_rows(const Tensor& out, TensorList tensors, int64_t dim) {
  if (dim <= 0 || tensors.size() < 2 || tensors.size() > 64) return false;
  const int64_t es = out.element_size();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out.size(d);
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.size(d);
  const char* src[64];
  int64_t run[64];
  size_t n = 0;
  for (const Tensor& t : tensors) {
    if (t.numel() == 0) continue;
    if (!t.is_contiguous() || t.dtype() != out.dtype() || t.is_conj()) return false;
    src[n] = static_cast<const char*>(t.data_ptr());
    run[n++] = t.size(dim) * inner * es;
  }
  const int64_t out_row = out.size(dim) * inner * es;
  char* dst = static_cast<char*>(out.data_ptr());
#pragma omp parallel for if (out.numel() >= tensor::detail::kGrain && outer > 1 && !omp_in_parallel())
  for (int64_t o = 0; o < outer; ++o) {
    char* d = dst + o * out_row;
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(d, src[i] + o * run[i], static_cast<size_t>(run[i]));
      d += run[i];
    }
  }
  return true;
}

}  // namespace tensor::cpu
