// The bodies of the CUDA elementwise kernels, as host/device functions of the element index
// (Note [Kernel bodies run on the CPU]). kernels/cuda/Loops.cuh wraps them in __global__
// functions; tests/test_kernel_bodies.cpp runs them per index on the CPU.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/math/Cast.h"
#include "kernels/math/Macros.h"
#include "kernels/math/OffsetCalculator.h"

namespace tensor::cuda_kernels {

// Note [Kernel bodies run on the CPU]
// A CUDA kernel here is a thin __global__ shell: it computes its element (or vector) index from
// the thread and block indices and calls a body written as a TENSOR_HD_INLINE function of that
// index. The body does all the work: offsets, loads with conversion to opmath, the shared
// functor of kernels/math, the cast on store. Built for the host, the same body runs for every
// index in a CPU test and must reproduce the CPU kernel's output, so the index arithmetic,
// vector tails and casts are tested on machines without a GPU; only the shell is not.

/// What a body reads: the output and NIN inputs of one launch (after 32-bit splitting). An
/// input whose bit is set in scalar_mask is a CPU scalar, read from `scalar`, not memory.
template <class in_t, int NIN>
struct ElementwiseArgs {
  using op_t = math::opmath_t<in_t>;
  char* out;
  const char* in[NIN];
  op_t scalar[NIN];
  unsigned scalar_mask;
  math::OffsetCalculator<NIN + 1> offsets;  // strided path only
};

/// 16-byte (or smaller) aligned vectors for the contiguous path's loads and stores.
template <class T, int VEC>
struct alignas(sizeof(T) * VEC) AlignedVector {
  T val[VEC];
};

/// Elements per vector on the contiguous path: 16 bytes of the widest operand.
template <class out_t, class in_t>
constexpr int vec_size() {
  constexpr int w = sizeof(in_t) > sizeof(out_t) ? sizeof(in_t) : sizeof(out_t);
  return 16 / w;
}

template <class F, class op_t>
TENSOR_HD_INLINE auto apply(const F& f, const op_t (&v)[1]) { return f(v[0]); }
template <class F, class op_t>
TENSOR_HD_INLINE auto apply(const F& f, const op_t (&v)[2]) { return f(v[0], v[1]); }

/// Input k of element `i` given its byte offset: the scalar, or the loaded element as opmath.
template <class in_t, int NIN>
TENSOR_HD_INLINE math::opmath_t<in_t> load_input(const ElementwiseArgs<in_t, NIN>& a, int k, uint32_t byte_off) {
  using op_t = math::opmath_t<in_t>;
  if ((a.scalar_mask >> k) & 1u) return a.scalar[k];
  return static_cast<op_t>(*reinterpret_cast<const in_t*>(a.in[k] + byte_off));
}

/// Strided path: element i through the offset calculator.
template <class out_t, class in_t, int NIN, class F>
TENSOR_HD_INLINE void strided_body(const ElementwiseArgs<in_t, NIN>& a, uint32_t i, const F& f) {
  const math::Offsets<NIN + 1> o = a.offsets.get(i);
  math::opmath_t<in_t> v[NIN];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; k < NIN; ++k) v[k] = load_input(a, k, o[k + 1]);
  *reinterpret_cast<out_t*>(a.out + o[0]) = math::cast<out_t>(apply(f, v));
}

/// Contiguous path: vector `vi` (elements [vi * VEC, vi * VEC + VEC) of n) with one aligned
/// load per input and one store; the last, partial vector element by element.
template <int VEC, class out_t, class in_t, int NIN, class F>
TENSOR_HD_INLINE void vectorized_body(const ElementwiseArgs<in_t, NIN>& a, uint32_t vi, uint32_t n, const F& f) {
  using op_t = math::opmath_t<in_t>;
  const uint32_t base = vi * VEC;
  if (base >= n) return;
  if (base + VEC <= n) {
    AlignedVector<in_t, VEC> in[NIN];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int k = 0; k < NIN; ++k)
      if (!((a.scalar_mask >> k) & 1u)) in[k] = reinterpret_cast<const AlignedVector<in_t, VEC>*>(a.in[k])[vi];
    AlignedVector<out_t, VEC> out;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < VEC; ++j) {
      op_t v[NIN];
      for (int k = 0; k < NIN; ++k)
        v[k] = ((a.scalar_mask >> k) & 1u) ? a.scalar[k] : static_cast<op_t>(in[k].val[j]);
      out.val[j] = math::cast<out_t>(apply(f, v));
    }
    reinterpret_cast<AlignedVector<out_t, VEC>*>(a.out)[vi] = out;
    return;
  }
  for (uint32_t i = base; i < n; ++i) {
    op_t v[NIN];
    for (int k = 0; k < NIN; ++k)
      v[k] = ((a.scalar_mask >> k) & 1u) ? a.scalar[k] : static_cast<op_t>(reinterpret_cast<const in_t*>(a.in[k])[i]);
    reinterpret_cast<out_t*>(a.out)[i] = math::cast<out_t>(apply(f, v));
  }
}

}  // namespace tensor::cuda_kernels
