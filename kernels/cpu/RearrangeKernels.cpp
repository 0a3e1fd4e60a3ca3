// The CPU loops of tril/triu and flip (front ends: src/ops/RearrangeOps.cpp). Both move bytes,
// so one loop serves every dtype.
#include "kernels/cpu/RearrangeKernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "src/core/Check.h"
#include "src/core/Parallel.h"

namespace tensor::cpu {
// kernels/cpu/RowCopyKernels.cpp: dst[i] = last[-i] for i in [0, m) by vectors.
void reverse_row(uint32_t* dst, const uint32_t* last, int64_t m);
void reverse_row(uint64_t* dst, const uint64_t* last, int64_t m);

namespace {

// Note [tril/triu row kernel]
// On CPU each row of the last two dims is one kept column range [lo, hi) and zeros elsewhere:
// the kept range is copied (memcpy when the row is contiguous) and the rest memset, which is a
// zero of every dtype (IEEE +0, false, 0 + 0i). Bytes only move, so one kernel serves all dtypes.
// In place, only the dropped ranges are written.
template <int ES>
void triangle_rows(const Tensor& src, char* dst, int64_t diagonal, bool lower) {
  const int64_t nd = src.dim(), R = src.size(-2), C = src.size(-1);
  const int64_t rs = src.stride(-2), cs = src.stride(-1);
  const bool in_place = dst == nullptr;
  char* sbase = static_cast<char*>(src.data_ptr());
  detail::parallel_range(src.numel() / std::max<int64_t>(C, 1), [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      int64_t off = (q % R) * rs, rem = q / R;
      for (int64_t d = nd - 3; d >= 0; --d) {
        off += (rem % src.size(d)) * src.stride(d);
        rem /= src.size(d);
      }
      const int64_t r = q % R;
      // Kept columns: tril j <= r + k, triu j >= r + k.
      const int64_t lo = lower ? 0 : std::clamp<int64_t>(r + diagonal, 0, C);
      const int64_t hi = lower ? std::clamp<int64_t>(r + diagonal + 1, 0, C) : C;
      char* s = sbase + off * ES;
      auto zero = [&](char* row, int64_t stride, int64_t from, int64_t to) {
        if (from >= to) return;
        if (stride == 1) {
          std::memset(row + from * ES, 0, static_cast<size_t>((to - from) * ES));
        } else {
          for (int64_t j = from; j < to; ++j) std::memset(row + j * stride * ES, 0, ES);
        }
      };
      if (in_place) {
        zero(s, cs, 0, lo);
        zero(s, cs, hi, C);
        continue;
      }
      char* o = dst + q * C * ES;
      zero(o, 1, 0, lo);
      if (cs == 1) {
        if (hi > lo) std::memcpy(o + lo * ES, s + lo * ES, static_cast<size_t>((hi - lo) * ES));
      } else {
        for (int64_t j = lo; j < hi; ++j) std::memcpy(o + j * ES, s + j * cs * ES, ES);
      }
      zero(o, 1, hi, C);
    }
  });
}

}  // namespace

void tril_triu(const Tensor& src, const Tensor& out, int64_t diagonal, bool lower) {
  if (src.numel() == 0) return;
  char* dst = out.defined() ? static_cast<char*>(out.data_ptr()) : nullptr;
  switch (src.element_size()) {
    case 1: triangle_rows<1>(src, dst, diagonal, lower); break;
    case 2: triangle_rows<2>(src, dst, diagonal, lower); break;
    case 4: triangle_rows<4>(src, dst, diagonal, lower); break;
    case 8: triangle_rows<8>(src, dst, diagonal, lower); break;
    case 16: triangle_rows<16>(src, dst, diagonal, lower); break;
    default: TENSOR_ERROR("{}: unsupported element size {} ({})", lower ? "tril" : "triu", src.element_size(), src.dtype());
  }
}

namespace {


/// out (contiguous, same sizes) = src with the dims in `flipped` reversed, moving raw elements.
template <int ES>
void flip_rows(char* out, const char* src, IntArrayRef sizes, const std::vector<int64_t>& sstride, int64_t rows) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  const int64_t n = sizes[nd - 1], s_last = sstride[nd - 1];
  detail::parallel_range(rows * n, [&](int64_t b, int64_t e) {
    // Rows [rb, re) of the output: each is n contiguous elements.
    const int64_t rb = b / n, re = (e + n - 1) / n;
    for (int64_t r = rb; r < re; ++r) {
      int64_t off = 0, rem = r;
      for (int64_t d = nd - 2; d >= 0; --d) {
        off += (rem % sizes[d]) * sstride[d];
        rem /= sizes[d];
      }
      const int64_t lo = std::max<int64_t>(b - r * n, 0), hi = std::min<int64_t>(e - r * n, n);
      char* dst = out + (r * n + lo) * ES;
      const char* s = src + (off + lo * s_last) * ES;
      if (s_last == 1) {
        std::memcpy(dst, s, static_cast<size_t>((hi - lo) * ES));
      } else if (s_last == -1 && ES <= 8) {
        // Flipping the last dim: a reversed copy of whole elements (the per-element memcpy below
        // does not vectorize). 4- and 8-byte elements go through Highway's Reverse at the
        // widest vectors: the baseline build's compiler vectorized this loop with 128-bit
        // shuffles only, and flip_2048x2048_dim1 took 1.84 ms a call on one thread against
        // 1.17-1.28 ms now.
        using E = std::conditional_t<ES == 1, uint8_t,
                                     std::conditional_t<ES == 2, uint16_t, std::conditional_t<ES == 4, uint32_t, uint64_t>>>;
        const E* sp = reinterpret_cast<const E*>(s);
        E* dp = reinterpret_cast<E*>(dst);
        if constexpr (ES == 4 || ES == 8)
          reverse_row(dp, sp, hi - lo);
        else
          for (int64_t i = 0, m = hi - lo; i < m; ++i) dp[i] = sp[-i];
      } else {
        for (int64_t i = lo; i < hi; ++i, dst += ES, s += s_last * ES) std::memcpy(dst, s, ES);
      }
    }
  });
}

}  // namespace

void flip(const Tensor& src, uint64_t flipped, const Tensor& out) {
  if (src.numel() == 0) return;
  if (src.dim() == 0) {
    Tensor(out).copy_(src);  // a handle to the same tensor: copy_ writes through it
    return;
  }
  const int64_t nd = src.dim();
  std::vector<int64_t> sstride(static_cast<size_t>(nd));
  const char* base = static_cast<const char*>(src.data_ptr());
  const int64_t es = src.element_size();
  for (int64_t d = 0; d < nd; ++d) {
    sstride[d] = src.stride(d);
    if ((flipped >> d) & 1) {
      base += (src.size(d) - 1) * src.stride(d) * es;
      sstride[d] = -sstride[d];
    }
  }
  const int64_t rows = src.numel() / src.size(-1);
  char* o = static_cast<char*>(out.data_ptr());
  switch (es) {
    case 1: flip_rows<1>(o, base, src.sizes(), sstride, rows); break;
    case 2: flip_rows<2>(o, base, src.sizes(), sstride, rows); break;
    case 4: flip_rows<4>(o, base, src.sizes(), sstride, rows); break;
    case 8: flip_rows<8>(o, base, src.sizes(), sstride, rows); break;
    case 16: flip_rows<16>(o, base, src.sizes(), sstride, rows); break;
    default: TENSOR_ERROR("flip: unsupported element size {} ({})", es, src.dtype());
  }
}

}  // namespace tensor::cpu
