// A byte copy of one row through Highway vectors, per target: the row copies of cat along an
// inner dim (cat_rows, kernels/cpu/CatKernels.cpp; Note [Row copies by vectors]).
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
}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(CopyRowImpl);

/// Copies n bytes from src to dst (which do not overlap) with vector loads and stores.
void copy_row(char* dst, const char* src, size_t n) { HWY_DYNAMIC_DISPATCH(CopyRowImpl)(dst, src, n); }
}  // namespace tensor::cpu
#endif  // HWY_ONCE
