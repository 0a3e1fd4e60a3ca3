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

}  // namespace tensor::cpu
