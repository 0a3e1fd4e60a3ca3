// Row copies through Highway vectors, per target: the byte copy of cat along an inner dim
// (cat_rows, kernels/cpu/CatKernels.cpp; Note [Row copies by vectors]) and the reversed copy of
// flip along the last dim (kernels/cpu/RearrangeKernels.cpp).
#include <cstddef>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/RowCopyKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void CopyRowImpl(char* dst, const char* src, size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const size_t N = hn::Lanes(d);
  auto* o = reinterpret_cast<uint8_t*>(dst);
  const auto* s = reinterpret_cast<const uint8_t*>(src);
  if (n < N) {
    std::memcpy(dst, src, n);
    return;
  }
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto v0 = hn::LoadU(d, s + i), v1 = hn::LoadU(d, s + i + N);
    const auto v2 = hn::LoadU(d, s + i + 2 * N), v3 = hn::LoadU(d, s + i + 3 * N);
    hn::StoreU(v0, d, o + i);
    hn::StoreU(v1, d, o + i + N);
    hn::StoreU(v2, d, o + i + 2 * N);
    hn::StoreU(v3, d, o + i + 3 * N);
  }
  for (; i + N <= n; i += N) hn::StoreU(hn::LoadU(d, s + i), d, o + i);
  // The tail as one vector ending at the row's end, overlapping bytes already copied (the
  // source and destination never overlap).
  if (i < n) hn::StoreU(hn::LoadU(d, s + n - N), d, o + n - N);
}

// dst[i] = last[-i] for i in [0, m): whole vectors loaded from the source's end backwards and
// reversed in register, then the remainder one element at a time.
template <class T>
void ReverseRow(T* dst, const T* last, int64_t m) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= m; i += N) hn::StoreU(hn::Reverse(d, hn::LoadU(d, last - i - N + 1)), d, dst + i);
  for (; i < m; ++i) dst[i] = last[-i];
}
void ReverseRow32Impl(uint32_t* dst, const uint32_t* last, int64_t m) { ReverseRow(dst, last, m); }
void ReverseRow64Impl(uint64_t* dst, const uint64_t* last, int64_t m) { ReverseRow(dst, last, m); }
}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(CopyRowImpl);

/// Copies n bytes from src to dst (which do not overlap) with vector loads and stores.
void copy_row(char* dst, const char* src, size_t n) { HWY_DYNAMIC_DISPATCH(CopyRowImpl)(dst, src, n); }

HWY_EXPORT(ReverseRow32Impl);
HWY_EXPORT(ReverseRow64Impl);
/// dst[i] = last[-i] for i in [0, m), 4- and 8-byte elements (dst and the source do not overlap).
void reverse_row(uint32_t* dst, const uint32_t* last, int64_t m) { HWY_DYNAMIC_DISPATCH(ReverseRow32Impl)(dst, last, m); }
void reverse_row(uint64_t* dst, const uint64_t* last, int64_t m) { HWY_DYNAMIC_DISPATCH(ReverseRow64Impl)(dst, last, m); }
}  // namespace tensor::cpu
#endif  // HWY_ONCE
