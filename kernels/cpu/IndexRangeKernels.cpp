// Highway loops of the indexing ops, per target: the vector maximum of an index buffer read as
// unsigned values (the fast path of the index range check, index_values_in_range) and the
// gather of 4-byte rows (kernels/cpu/IndexKernels.cpp).
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

// Note [Vector row gather]
// gather along the last dim of 4-byte elements: o[j] = s[idx[j]] for a row. The scalar loop
// (a load of the index, a dependent load, a store per element) ran [64, 64] float32 at 3.1 us
// a call, or at 5.5 us where the output's address made the CPU hold the loads behind the
// stores they might alias (the same program, only the output block alternating; sweep
// gather_dim1_4K read 1.1-2.2x torch from one process to the next). Here the low halves of
// two vectors of int64 indices (in range and below 2^31, checked by the caller) make one vector
// of int32 offsets, a hardware gather loads the elements, and one store writes them.
void GatherRow32Impl(const uint32_t* HWY_RESTRICT s, const int64_t* HWY_RESTRICT idx, uint32_t* HWY_RESTRICT o,
                     int64_t k) {
  const hn::ScalableTag<int32_t> d;
  const hn::Repartition<int64_t, decltype(d)> d64;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int32_t* base = reinterpret_cast<const int32_t*>(s);
  int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR  // one lane: no pairs of index vectors to interleave
  for (; j + N <= k; j += N) {
    const auto lo = hn::BitCast(d, hn::LoadU(d64, idx + j));
    const auto hi = hn::BitCast(d, hn::LoadU(d64, idx + j + N / 2));
    hn::StoreU(hn::GatherIndex(d, base, hn::ConcatEven(d, hi, lo)), d, reinterpret_cast<int32_t*>(o + j));
  }
#endif
  for (; j < k; ++j) o[j] = s[idx[j]];
}
}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(IndexMaxU64Impl);
HWY_EXPORT(IndexMaxU32Impl);
HWY_EXPORT(GatherRow32Impl);

/// The largest of p[0, n) read as uint64 (a negative index reads above every size).
uint64_t index_max_unsigned(const int64_t* p, int64_t n) { return HWY_DYNAMIC_DISPATCH(IndexMaxU64Impl)(p, n); }
/// The largest of p[0, n) read as uint32.
uint32_t index_max_unsigned(const int32_t* p, int64_t n) { return HWY_DYNAMIC_DISPATCH(IndexMaxU32Impl)(p, n); }
/// o[j] = s[idx[j]] for j < k, 4-byte elements, every idx[j] in [0, 2^31) (Note [Vector row gather]).
void gather_row32(const uint32_t* s, const int64_t* idx, uint32_t* o, int64_t k) {
  HWY_DYNAMIC_DISPATCH(GatherRow32Impl)(s, idx, o, k);
}
}  // namespace tensor::cpu
#endif  // HWY_ONCE
