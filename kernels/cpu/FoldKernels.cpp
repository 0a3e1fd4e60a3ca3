// The CPU loops of im2col and col2im (front ends: src/ops/FoldOps.cpp). Both read strided
// inputs in place and write a contiguous output. im2col copies (threads split the rows of the
// column matrix); col2im sums overlapping blocks, so threads split the output planes and each
// plane accumulates in opmath (float for the half types) before one rounding: every element is
// written by one thread, and results do not depend on the thread count.
#include "kernels/cpu/FoldKernels.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"

namespace tensor::cpu {
namespace {

/// The input dim holding image dim d (0 = n) when the tensor may be unbatched (n == 1, one dim fewer).
int64_t stride_of(const Tensor& t, int64_t batched_dim) {
  const int64_t skip = 4 - t.dim();  // 0 for a batched image, 1 for an unbatched one
  return batched_dim < skip ? 0 : t.stride(batched_dim - skip);
}

}  // namespace

void im2col(const Tensor& image, const FoldGeometry& g, const Tensor& out) {
  visit_dtype<kGroupFloating>(image.dtype(), "im2col", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = image.data_ptr<T>();
    T* o = out.data_ptr<T>();
    const int64_t s_n = stride_of(image, 0), s_c = stride_of(image, 1), s_h = stride_of(image, 2),
                  s_w = stride_of(image, 3);
    const int64_t kk = g.kh * g.kw, L = g.oh * g.ow, rows = g.n * g.c * kk;
    detail::parallel_range(rows, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t bn = r / (g.c * kk), rem = r % (g.c * kk), c = rem / kk, i = (rem % kk) / g.kw, j = rem % g.kw;
        const T* plane = in + bn * s_n + c * s_c;
        T* row = o + r * L;
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + i * g.dh;
          const bool row_in = iy >= 0 && iy < g.h;
          for (int64_t x = 0; x < g.ow; ++x) {
            const int64_t ix = x * g.sw - g.pw + j * g.dw;
            row[y * g.ow + x] = row_in && ix >= 0 && ix < g.w ? plane[iy * s_h + ix * s_w] : T(0);
          }
        }
      }
    });
  });
}

void col2im(const Tensor& cols, const FoldGeometry& g, const Tensor& out) {
  visit_dtype<kGroupFloating>(cols.dtype(), "col2im", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = opmath_t<T>;
    const T* in = cols.data_ptr<T>();
    T* o = out.data_ptr<T>();
    const bool batched = cols.dim() == 3;
    const int64_t s_n = batched ? cols.stride(0) : 0, s_r = cols.stride(batched ? 1 : 0),
                  s_l = cols.stride(batched ? 2 : 1);
    const int64_t kk = g.kh * g.kw, hw = g.h * g.w;
    // The columns x of kernel column j that land inside the image, 0 <= x * sw + off < w with
    // off = j * dw - pw, as one range, so the inner loop has no test (and is a plain vector add
    // for unit strides).
    auto x_range = [&](int64_t off, int64_t& x0, int64_t& x1) {
      x0 = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
      x1 = g.w - off <= 0 ? 0 : std::min(g.ow, (g.w - off + g.sw - 1) / g.sw);
      x1 = std::max(x1, x0);
    };
    detail::parallel_range(g.n * g.c, [&](int64_t b, int64_t e) {
      // float and double accumulate in the output plane itself; the half types in a float plane.
      std::vector<O> scratch(std::is_same_v<O, T> ? 0 : static_cast<size_t>(hw));
      for (int64_t p = b; p < e; ++p) {
        const int64_t bn = p / g.c, c = p % g.c;
        T* plane = o + p * hw;
        O* acc = nullptr;
        if constexpr (std::is_same_v<O, T>) acc = plane;
        else acc = scratch.data();
        std::fill(acc, acc + hw, O(0));
        for (int64_t k = 0; k < kk; ++k) {
          const int64_t i = k / g.kw, j = k % g.kw, off = j * g.dw - g.pw;
          int64_t x0, x1;
          x_range(off, x0, x1);
          const T* row = in + bn * s_n + (c * kk + k) * s_r;
          for (int64_t y = 0; y < g.oh; ++y) {
            const int64_t iy = y * g.sh - g.ph + i * g.dh;
            if (iy < 0 || iy >= g.h) continue;
            O* dst = acc + iy * g.w + off;  // dst[x * sw] is image column x * sw + off
            const T* src = row + y * g.ow * s_l;
            if (s_l == 1 && g.sw == 1) {
              for (int64_t x = x0; x < x1; ++x) dst[x] += static_cast<O>(src[x]);
            } else {
              for (int64_t x = x0; x < x1; ++x) dst[x * g.sw] += static_cast<O>(src[x * s_l]);
            }
          }
        }
        if constexpr (!std::is_same_v<O, T>)
          for (int64_t q = 0; q < hw; ++q) plane[q] = static_cast<T>(acc[q]);
      }
    });
  });
}

}  // namespace tensor::cpu
