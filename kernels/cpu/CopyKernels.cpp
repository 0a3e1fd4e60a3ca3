// CPU copy (with dtype conversion), fill, where and clamp kernels, per Highway target.
#include "kernels/cpu/Elementwise.h"
#include "kernels/cpu/CopyKernels.h"
#include <algorithm>
#include <cstring>

#include "src/core/Parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/CopyKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/Loops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
void CopyKernelImpl(const TensorIterator& iter) {
  visit_dtype(iter.dtype(0), "copy_", [&](auto otag) {
    using O = typename decltype(otag)::type;
    visit_dtype(iter.dtype(1), "copy_", [&](auto itag) {
      using I = typename decltype(itag)::type;
      if constexpr (std::is_same_v<O, I>) {
        iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
          for (int64_t j = 0; j < n1; ++j) {
            char* po = d[0] + j * s[2];
            const char* pi = d[1] + j * s[3];
            if (s[0] == sizeof(O) && s[1] == sizeof(O)) {
              std::memcpy(po, pi, static_cast<size_t>(n0) * sizeof(O));
            } else {
              for (int64_t i = 0; i < n0; ++i)
                *reinterpret_cast<O*>(po + i * s[0]) = *reinterpret_cast<const O*>(pi + i * s[1]);
            }
          }
        });
      } else {
        iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
          for (int64_t j = 0; j < n1; ++j) {
            char* po = d[0] + j * s[2];
            const char* pi = d[1] + j * s[3];
            if (s[0] == sizeof(O) && s[1] == sizeof(I)) {
              O* o = reinterpret_cast<O*>(po);
              const I* in = reinterpret_cast<const I*>(pi);
              for (int64_t i = 0; i < n0; ++i) o[i] = convert<O>(in[i]);
            } else {
              for (int64_t i = 0; i < n0; ++i)
                *reinterpret_cast<O*>(po + i * s[0]) = convert<O>(*reinterpret_cast<const I*>(pi + i * s[1]));
            }
          }
        });
      }
    });
  });
}

void FillKernelImpl(const TensorIterator& iter, const Scalar& value) {
  visit_dtype(iter.dtype(0), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = checked_scalar<T>(value, "fill_");
    iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
      for (int64_t j = 0; j < n1; ++j) {
        char* po = d[0] + j * s[1];
        if (s[0] == sizeof(T)) {
          T* o = reinterpret_cast<T*>(po);
          for (int64_t i = 0; i < n0; ++i) o[i] = v;
        } else {
          for (int64_t i = 0; i < n0; ++i) *reinterpret_cast<T*>(po + i * s[0]) = v;
        }
      }
    });
  });
}

// Note [Vectorized where]
// where (and masked_fill, which runs here as where(mask, value, self)) is a bitwise select, so
// every dtype of 1, 2, 4 or 8 bytes goes through one Highway loop on same-width unsigned lanes
// (float NaN payloads and -0.0 pass through untouched). The bool condition bytes are loaded
// N at a time, widened to the lane width and compared with zero to give the lane mask, then
// IfThenElse picks a or b: no per-element branch, which on random masks mispredicts half the
// time (the plain loop ran at ~9x the time of mul). a or b may be a broadcast scalar (byte
// stride 0, e.g. where(c, g, 0.0)); other strides and 16-byte complex take the generic loop.
template <class D>
HWY_INLINE hn::Mask<D> mask_from_bools(D d, const uint8_t* c) {
  using U = hn::TFromD<D>;
  const hn::Rebind<uint8_t, D> d8;
  if constexpr (sizeof(U) == 1) {
    return hn::Ne(hn::LoadU(d, c), hn::Zero(d));
  } else if constexpr (sizeof(U) == 8) {
    // Highway 1.0 has no u8 -> u64 promotion: go through u32.
    const hn::Rebind<uint32_t, D> d32;
    return hn::Ne(hn::PromoteTo(d, hn::PromoteTo(d32, hn::LoadU(d8, c))), hn::Zero(d));
  } else {
    return hn::Ne(hn::PromoteTo(d, hn::LoadU(d8, c)), hn::Zero(d));
  }
}

// o[i] = c[i] ? a[i] : b[i] over a contiguous row; kAS / kBS: a / b is one broadcast value.
// o may be b itself (masked_fill_), so no restrict.
template <class U, bool kAS, bool kBS>
HWY_INLINE void where_row(U* o, const uint8_t* c, const U* a, const U* b, int64_t n) {
  const hn::ScalableTag<U> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto as = hn::Set(d, kAS ? *a : U(0)), bs = hn::Set(d, kBS ? *b : U(0));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto m = mask_from_bools(d, c + i);
    const auto va = kAS ? as : hn::LoadU(d, a + i);
    const auto vb = kBS ? bs : hn::LoadU(d, b + i);
    hn::StoreU(hn::IfThenElse(m, va, vb), d, o + i);
  }
  for (; i < n; ++i) o[i] = c[i] ? a[kAS ? 0 : i] : b[kBS ? 0 : i];
}

template <class U>
HWY_INLINE bool where_row_fast(char* po, const char* pc, const char* pa, const char* pb, const int64_t* s,
                               int64_t n) {
  constexpr int64_t W = sizeof(U);
  if (s[0] != W || (s[2] != W && s[2] != 0) || (s[3] != W && s[3] != 0)) return false;
  U* o = reinterpret_cast<U*>(po);
  const U* a = reinterpret_cast<const U*>(pa);
  const U* b = reinterpret_cast<const U*>(pb);
  if (s[1] == 0) {  // one condition for the whole row: a copy or fill from the chosen side
    const bool pick_a = *reinterpret_cast<const uint8_t*>(pc) != 0;
    const U* src = pick_a ? a : b;
    if ((pick_a ? s[2] : s[3]) == 0) {
      const U v = *src;
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    } else if (o != src) {
      std::memcpy(o, src, static_cast<size_t>(n) * W);
    }
    return true;
  }
  if (s[1] != 1) return false;
  const uint8_t* c = reinterpret_cast<const uint8_t*>(pc);
  if (s[2] == W && s[3] == W) where_row<U, false, false>(o, c, a, b, n);
  else if (s[2] == W) where_row<U, false, true>(o, c, a, b, n);
  else if (s[3] == W) where_row<U, true, false>(o, c, a, b, n);
  else where_row<U, true, true>(o, c, a, b, n);
  return true;
}

template <class T>
using select_lane_t = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t,
                       std::conditional_t<sizeof(T) == 4, uint32_t, std::conditional_t<sizeof(T) == 8, uint64_t, void>>>>;

// GCC cannot see that serial_for_each fills ptrs[0..nops) and warns on d[3] once this loop
// is inlined; the iterator always has 4 operands here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
void WhereKernelImpl(const TensorIterator& iter) {
  TENSOR_INTERNAL_ASSERT(iter.dtype(1) == kBool);
  visit_dtype(iter.dtype(0), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using U = select_lane_t<T>;
    iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
      for (int64_t j = 0; j < n1; ++j) {
        char* po = d[0] + j * s[4];
        const char* pc = d[1] + j * s[5];
        const char* pa = d[2] + j * s[6];
        const char* pb = d[3] + j * s[7];
        if constexpr (!std::is_void_v<U>) {
          if (where_row_fast<U>(po, pc, pa, pb, s, n0)) continue;
        }
        for (int64_t i = 0; i < n0; ++i)
          *reinterpret_cast<T*>(po + i * s[0]) = *reinterpret_cast<const bool*>(pc + i * s[1])
                                                     ? *reinterpret_cast<const T*>(pa + i * s[2])
                                                     : *reinterpret_cast<const T*>(pb + i * s[3]);
      }
    });
  });
}
#pragma GCC diagnostic pop

void ClampKernelImpl(const TensorIterator& iter, const Scalar* lo, const Scalar* hi) {
  visit_dtype<kGroupInt | kGroupFloating>(iter.dtype(0), "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OT = opmath_t<T>;
    const bool has_lo = lo != nullptr, has_hi = hi != nullptr;
    const OT l = has_lo ? static_cast<OT>(checked_scalar<T>(*lo, "clamp")) : OT(0);
    const OT h = has_hi ? static_cast<OT>(checked_scalar<T>(*hi, "clamp")) : OT(0);
    auto f = [=](OT x) {
      if (has_lo && x < l) x = l;
      if (has_hi && x > h) x = h;
      return x;
    };
    iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) { loop_unary<T, T>(d, s, n0, n1, f); });
  });
}

// dst[r * d_row + c] = src[r + c * s_col] for 4-byte elements (Note [Blocked transpose copy]
// in copy() below): 16x16 tiles, each moved as 4x4 register transposes of 128-bit rows,
// so every source and destination cache line is touched once and whole.
void Transpose32Impl(uint32_t* dst, const uint32_t* src, int64_t rows, int64_t cols, int64_t d_row, int64_t s_col) {
  constexpr int64_t B = 16;
#if HWY_TARGET != HWY_SCALAR
  const hn::Full128<uint32_t> d4;
#endif
  const int64_t tiles_r = (rows + B - 1) / B, tiles_c = (cols + B - 1) / B;
  // Threads from 64K elements; below, inline (Note [One-thread parallel regions]).
  tensor::detail::parallel_range(tiles_r * tiles_c, rows * cols >= 65536 ? tensor::detail::threads_for(rows * cols) : 1,
                                 [&](int64_t ub, int64_t ue) {
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t r0 = u / tiles_c * B, c0 = u % tiles_c * B;
      const int64_t nr = std::min(B, rows - r0), nc = std::min(B, cols - c0);
#if HWY_TARGET == HWY_SCALAR
      if (true) {
#else
      if (nr < B || nc < B) {  // ragged edge tile
#endif
        for (int64_t c = 0; c < nc; ++c)
          for (int64_t r = 0; r < nr; ++r) dst[(r0 + r) * d_row + c0 + c] = src[r0 + r + (c0 + c) * s_col];
        continue;
      }
#if HWY_TARGET != HWY_SCALAR
      for (int64_t cb = 0; cb < B; cb += 4)
        for (int64_t rb = 0; rb < B; rb += 4) {
          // v_k: source column c0+cb+k, rows r0+rb .. r0+rb+3.
          const uint32_t* sp = src + (r0 + rb) + (c0 + cb) * s_col;
          auto v0 = hn::LoadU(d4, sp), v1 = hn::LoadU(d4, sp + s_col);
          auto v2 = hn::LoadU(d4, sp + 2 * s_col), v3 = hn::LoadU(d4, sp + 3 * s_col);
          auto t0 = hn::InterleaveLower(d4, v0, v1), t1 = hn::InterleaveUpper(d4, v0, v1);
          auto t2 = hn::InterleaveLower(d4, v2, v3), t3 = hn::InterleaveUpper(d4, v2, v3);
          uint32_t* dp = dst + (r0 + rb) * d_row + c0 + cb;
          hn::StoreU(hn::ConcatLowerLower(d4, t2, t0), d4, dp);
          hn::StoreU(hn::ConcatUpperUpper(d4, t2, t0), d4, dp + d_row);
          hn::StoreU(hn::ConcatLowerLower(d4, t3, t1), d4, dp + 2 * d_row);
          hn::StoreU(hn::ConcatUpperUpper(d4, t3, t1), d4, dp + 3 * d_row);
        }
#endif
    }
  });
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(CopyKernelImpl);
HWY_EXPORT(FillKernelImpl);
HWY_EXPORT(WhereKernelImpl);
HWY_EXPORT(ClampKernelImpl);
HWY_EXPORT(Transpose32Impl);
void transpose32(uint32_t* dst, const uint32_t* src, int64_t rows, int64_t cols, int64_t d_row, int64_t s_col) {
  HWY_DYNAMIC_DISPATCH(Transpose32Impl)(dst, src, rows, cols, d_row, s_col);
}
void copy_kernel(const TensorIterator& iter) { HWY_DYNAMIC_DISPATCH(CopyKernelImpl)(iter); }
void fill_kernel(const TensorIterator& iter, const Scalar& v) { HWY_DYNAMIC_DISPATCH(FillKernelImpl)(iter, v); }
void where_kernel(const TensorIterator& iter) { HWY_DYNAMIC_DISPATCH(WhereKernelImpl)(iter); }
// masked_fill(_)'s loop (src/ops/IndexOps.cpp checks first): value is a 0-dim tensor of self's
// dtype, broadcast with stride 0, and self is both the output and the "else" operand.
void masked_fill_where(const Tensor& out, const Tensor& mask, const Tensor& value, const Tensor& src, const char* op) {
  TensorIterator it;
  it.name(op).add_output(out).add_input(mask).add_input(value).add_input(src).no_input_cast(1);
  it.resize_outputs(false).build();
  where_kernel(it);
}
void clamp_kernel(const TensorIterator& iter, const Scalar* lo, const Scalar* hi) {
  HWY_DYNAMIC_DISPATCH(ClampKernelImpl)(iter, lo, hi);
}

namespace {
// Note [Blocked transpose copy]
// A copy whose source walks memory with a large stride in the inner loop (t().contiguous())
// misses cache on every element, and power-of-two row pitches map every line of a naive tile
// to the same L1 set. So the copy moves blocks of one cache line by one cache line (16x16
// floats): it reads each source line whole into a small L1-resident buffer, transposes there,
// and writes each destination line whole. Every line is touched once, set conflicts stop
// mattering, and blocks are independent, so threads split them.
template <class T>
void transpose_tiles(char* dst, const char* src, int64_t rows, int64_t cols, int64_t d_row, int64_t d_col,
                     int64_t s_row, int64_t s_col) {
  constexpr int64_t B = 64 / sizeof(T);
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  int64_t tiles_r = (rows + B - 1) / B, tiles_c = (cols + B - 1) / B;
  // Threads from 64K elements; below, inline (Note [One-thread parallel regions]).
  tensor::detail::parallel_range(tiles_r * tiles_c, rows * cols >= 65536 ? tensor::detail::threads_for(rows * cols) : 1,
                                 [&](int64_t ub, int64_t ue) {
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t r0 = u / tiles_c * B, c0 = u % tiles_c * B;
      const int64_t nr = std::min(B, rows - r0), nc = std::min(B, cols - c0);
      alignas(64) T buf[B][B];
      // Source line c holds dst column c (contiguous along r since s_row == 1).
      for (int64_t c = 0; c < nc; ++c) {
        const T* line = s + r0 * s_row + (c0 + c) * s_col;
        for (int64_t r = 0; r < nr; ++r) buf[r][c] = line[r];
      }
      for (int64_t r = 0; r < nr; ++r) {
        T* out = d + (r0 + r) * d_row + c0 * d_col;
        for (int64_t c = 0; c < nc; ++c) out[c] = buf[r][c];
      }
    }
  });
}

// Same dtype, 2-D, destination contiguous, source with unit stride on the other dim.
bool try_transpose_copy(const Tensor& dst, const Tensor& src) {
  if (dst.dim() != 2 || src.sizes() != dst.sizes() || src.dtype() != dst.dtype() || !dst.is_contiguous() || src.is_conj())
    return false;
  if (src.stride(0) != 1 || src.stride(1) == 1 || dst.size(0) < 32 || dst.size(1) < 32) return false;
  char* d = static_cast<char*>(dst.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  int64_t rows = dst.size(0), cols = dst.size(1);
  switch (dst.element_size()) {
    case 1: transpose_tiles<uint8_t>(d, s, rows, cols, cols, 1, src.stride(0), src.stride(1)); return true;
    case 2: transpose_tiles<uint16_t>(d, s, rows, cols, cols, 1, src.stride(0), src.stride(1)); return true;
    case 4:
      transpose32(reinterpret_cast<uint32_t*>(d), reinterpret_cast<const uint32_t*>(s), rows, cols, cols,
                       src.stride(1));
      return true;
    case 8: transpose_tiles<uint64_t>(d, s, rows, cols, cols, 1, src.stride(0), src.stride(1)); return true;
    default: return false;
  }
}

}  // namespace

// copy_'s CPU kernel: a memcpy for identical layouts, blocked transposes, else the loop.
void copy(const Tensor& dst, const Tensor& src, bool) {
  if (src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous() && dst.is_contiguous() &&
      !src.is_conj() && !dst.is_conj()) {
    if (dst.data_ptr() != src.data_ptr())
      std::memcpy(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.nbytes()));
    return;
  }
  if (!dst.is_conj() && try_transpose_copy(dst, src)) return;
  TensorIterator it;
  it.name("copy_").add_output(dst).add_input(src).resize_outputs(false).no_input_cast(1);
  it.common_dtype(dst.dtype());
  it.build();
  copy_kernel(it);
  it.finish();
}

void fill(const Tensor& self, const Scalar& value) {
  TensorIterator it;
  it.name("fill_").add_output(self).resize_outputs(false);
  it.common_dtype(self.dtype());
  it.build();
  fill_kernel(it, value);
}
}  // namespace tensor::cpu
#endif
