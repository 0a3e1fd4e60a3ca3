// The vector maximum of an index buffer read as unsigned values, per Highway target: the fast
// path of the index range check (index_values_in_range, kernels/cpu/IndexKernels.cpp).
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/IndexRangeKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Four independent accumulators, so that the loop does not wait on one chain of maxima.
template <class U, class I>
U UnsignedMax(const I* p, int64_t n) {
  const hn::ScalableTag<U> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const U* u = reinterpret_cast<const U*>(p);
  auto m0 = hn::Zero(d), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    m0 = hn::Max(m0, hn::LoadU(d, u + i));
    m1 = hn::Max(m1, hn::LoadU(d, u + i + N));
    m2 = hn::Max(m2, hn::LoadU(d, u + i + 2 * N));
    m3 = hn::Max(m3, hn::LoadU(d, u + i + 3 * N));
  }
  for (; i + N <= n; i += N) m0 = hn::Max(m0, hn::LoadU(d, u + i));
  U m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  for (; i < n; ++i) m = u[i] > m ? u[i] : m;
  return m;
}

uint64_t IndexMaxU64Impl(const int64_t* p, int64_t n) { return UnsignedMax<uint64_t>(p, n); }
uint32_t IndexMaxU32Impl(const int32_t* p, int64_t n) { return UnsignedMax<uint32_t>(p, n); }
}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(IndexMaxU64Impl);
HWY_EXPORT(IndexMaxU32Impl);

/// The largest of p[0, n) read as uint64 (a negative index reads above every size).
uint64_t index_max_unsigned(const int64_t* p, int64_t n) { return HWY_DYNAMIC_DISPATCH(IndexMaxU64Impl)(p, n); }
/// The largest of p[0, n) read as uint32.
uint32_t index_max_unsigned(const int32_t* p, int64_t n) { return HWY_DYNAMIC_DISPATCH(IndexMaxU32Impl)(p, n); }
}  // namespace tensor::cpu
#endif  // HWY_ONCE
