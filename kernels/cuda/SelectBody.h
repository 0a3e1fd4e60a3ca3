// The bodies of the CUDA where kernels (and so masked_fill's), as host/device functions of the
// element index (Note [Kernel bodies run on the CPU] in kernels/cuda/ElementwiseBody.h).
// where has a bool input beside its value inputs, so it cannot use the engine's bodies, whose
// inputs share one dtype; it reuses the engine's vectors and offset calculator.
#pragma once

#include <cstdint>

#include "kernels/cuda/ElementwiseBody.h"
#include "kernels/math/Select.h"

namespace tensor::cuda_kernels {

/// What a where body reads: out, cond, a, b. `U` is an unsigned type as wide as one element
/// (where only moves values). scalar_mask bit 0: cond is a CPU scalar (cond_scalar); bit 1
/// and 2: a and b are (a_scalar, b_scalar, already in the element's bits).
template <class U>
struct WhereArgs {
  char* out;
  const char* cond;
  const char* a;
  const char* b;
  U a_scalar, b_scalar;
  bool cond_scalar;
  unsigned scalar_mask;
  math::OffsetCalculator<4> offsets;  // strided path only
};

/// Strided path: element i through the offset calculator.
template <class U>
TENSOR_HD_INLINE void where_strided_body(const WhereArgs<U>& w, uint32_t i) {
  const math::Offsets<4> o = w.offsets.get(i);
  const bool c = (w.scalar_mask & 1u) ? w.cond_scalar : *reinterpret_cast<const bool*>(w.cond + o[1]);
  const U a = (w.scalar_mask & 2u) ? w.a_scalar : *reinterpret_cast<const U*>(w.a + o[2]);
  const U b = (w.scalar_mask & 4u) ? w.b_scalar : *reinterpret_cast<const U*>(w.b + o[3]);
  *reinterpret_cast<U*>(w.out + o[0]) = math::where_select(c, a, b);
}

/// Contiguous path: vector `vi` (elements [vi * VEC, vi * VEC + VEC) of n), one aligned load per
/// memory input and one store; the last, partial vector element by element.
template <int VEC, class U>
TENSOR_HD_INLINE void where_vectorized_body(const WhereArgs<U>& w, uint32_t vi, uint32_t n) {
  const uint32_t base = vi * VEC;
  if (base >= n) return;
  if (base + VEC <= n) {
    AlignedVector<bool, VEC> c{};
    AlignedVector<U, VEC> a{}, b{};
    if (!(w.scalar_mask & 1u)) c = reinterpret_cast<const AlignedVector<bool, VEC>*>(w.cond)[vi];
    if (!(w.scalar_mask & 2u)) a = reinterpret_cast<const AlignedVector<U, VEC>*>(w.a)[vi];
    if (!(w.scalar_mask & 4u)) b = reinterpret_cast<const AlignedVector<U, VEC>*>(w.b)[vi];
    AlignedVector<U, VEC> out;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < VEC; ++j)
      out.val[j] = math::where_select((w.scalar_mask & 1u) ? w.cond_scalar : c.val[j],
                                      (w.scalar_mask & 2u) ? w.a_scalar : a.val[j],
                                      (w.scalar_mask & 4u) ? w.b_scalar : b.val[j]);
    reinterpret_cast<AlignedVector<U, VEC>*>(w.out)[vi] = out;
    return;
  }
  for (uint32_t i = base; i < n; ++i) {
    const bool c = (w.scalar_mask & 1u) ? w.cond_scalar : reinterpret_cast<const bool*>(w.cond)[i];
    const U a = (w.scalar_mask & 2u) ? w.a_scalar : reinterpret_cast<const U*>(w.a)[i];
    const U b = (w.scalar_mask & 4u) ? w.b_scalar : reinterpret_cast<const U*>(w.b)[i];
    reinterpret_cast<U*>(w.out)[i] = math::where_select(c, a, b);
  }
}

}  // namespace tensor::cuda_kernels
