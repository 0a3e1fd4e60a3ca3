// The bodies of the CUDA indexing kernels (index_select, gather, scatter, scatter_add,
// index_add), as host/device functions of the element index (Note [Kernel bodies run on the
// CPU] in kernels/cuda/ElementwiseBody.h); kernels/cuda/IndexKernels.cu wraps them in __global__
// shells and tests/test_index_bodies.cpp runs them per index against the CPU kernels.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/math/Cast.h"
#include "kernels/math/Macros.h"
#include "kernels/math/OffsetCalculator.h"

namespace tensor::cuda_kernels {

// Note [CUDA index geometry]
// As the CPU loops (Note [Index loop geometry] in kernels/cpu/IndexLoops.h), every indexing
// kernel walks one iteration shape keeping three byte offsets in step: operand 0 the "dense"
// tensor (gather's and index_select's output, scatter's and index_add's source), operand 1 the
// index tensor, operand 2 the indexed tensor `self`, whose stride is 0 along the indexed dim.
// The element an iteration position touches in self is at its offset plus index * dim_stride.
// The offsets are 32-bit (Note [32-bit indexing]); the index term is added in 64 bits, so only
// the other dims of self must fit. An index outside [0, dim_size) touches nothing: the host
// checks every index before launching, and the guard keeps even an unchecked launch in bounds.

/// What an indexing body reads. I: the index type (int32_t or int64_t).
template <class I>
struct IndexArgs {
  char* dense;
  const char* index;
  char* self;
  int64_t dim_size;    // self.size(dim)
  int64_t dim_stride;  // self.stride(dim), bytes
  math::OffsetCalculator<3> offsets;
};

/// The byte offsets of position i in the dense tensor and in self; false when its index lies
/// outside [0, dim_size).
template <class I>
TENSOR_HD_INLINE bool index_offsets(const IndexArgs<I>& a, uint32_t i, uint32_t& dense_off, int64_t& self_off) {
  const math::Offsets<3> o = a.offsets.get(i);
  const int64_t v = static_cast<int64_t>(*reinterpret_cast<const I*>(a.index + o[1]));
  if (v < 0 || v >= a.dim_size) return false;
  dense_off = o[0];
  self_off = static_cast<int64_t>(o[2]) + v * a.dim_stride;
  return true;
}

/// gather and index_select: dense[i] = self[index[i]]. E: an unsigned type as wide as one
/// element (moves need no per-dtype code).
template <class E, class I>
TENSOR_HD_INLINE void gather_body(const IndexArgs<I>& a, uint32_t i) {
  uint32_t d;
  int64_t s;
  if (index_offsets(a, i, d, s)) *reinterpret_cast<E*>(a.dense + d) = *reinterpret_cast<const E*>(a.self + s);
}

/// scatter: self[index[i]] = dense[i]. With repeated indices one of the written values wins,
/// which one is unspecified on the GPU (as libtorch's scatter_).
template <class E, class I>
TENSOR_HD_INLINE void scatter_body(const IndexArgs<I>& a, uint32_t i) {
  uint32_t d;
  int64_t s;
  if (index_offsets(a, i, d, s)) *reinterpret_cast<E*>(a.self + s) = *reinterpret_cast<const E*>(a.dense + d);
}

/// old + alpha * v as the CPU loops compute it: in opmath, rounded once to T; bool is
/// old || (alpha && v).
template <class T>
TENSOR_HD_INLINE T add_scaled(T old, T v, math::opmath_t<T> alpha) {
  if constexpr (std::is_same_v<T, bool>) {
    return old || (alpha && v);
  } else {
    using M = math::opmath_t<T>;
    return math::cast<T>(static_cast<M>(static_cast<M>(old) + alpha * static_cast<M>(v)));
  }
}

#if defined(__CUDA_ARCH__)
/// Device: *p = add_scaled(*p, v, alpha) atomically. float, double, int32 and int64 use the
/// hardware atomicAdd (int64 as unsigned: two's complement addition is the same); the 1- and
/// 2-byte types a compare-and-swap loop on the aligned 32-bit word that holds the element.
template <class T>
__device__ __forceinline__ void atomic_add_scaled(T* p, T v, math::opmath_t<T> alpha) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>) {
    atomicAdd(p, static_cast<T>(alpha * v));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(alpha * v));
  } else {
    static_assert(sizeof(T) <= 2, "sub-word types only");
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
    const unsigned int shift = static_cast<unsigned int>(addr & 3) * 8;
    constexpr unsigned int mask = sizeof(T) == 1 ? 0xffu : 0xffffu;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      T cur;
      const auto bits = static_cast<std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>>((assumed >> shift) & mask);
      memcpy(&cur, &bits, sizeof(T));
      const T next = add_scaled(cur, v, alpha);
      std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t> nb;
      memcpy(&nb, &next, sizeof(T));
      const unsigned int updated = (assumed & ~(mask << shift)) | (static_cast<unsigned int>(nb) << shift);
      old = atomicCAS(word, assumed, updated);
    } while (old != assumed);
  }
}
#endif

/// scatter_add and index_add: self[index[i]] += alpha * dense[i] (alpha 1 for scatter_add). On
/// the GPU an atomic add (as libtorch), so repeated indices sum in an unspecified order: for
/// floating types the result may differ between runs in the last bits (non-deterministic).
/// On the host a plain read-modify-write, serial as the CPU loops.
template <class T, class I>
TENSOR_HD_INLINE void index_add_body(const IndexArgs<I>& a, uint32_t i, math::opmath_t<T> alpha) {
  uint32_t d;
  int64_t s;
  if (!index_offsets(a, i, d, s)) return;
  T* dst = reinterpret_cast<T*>(a.self + s);
  const T v = *reinterpret_cast<const T*>(a.dense + d);
#if defined(__CUDA_ARCH__)
  atomic_add_scaled(dst, v, alpha);
#else
  *dst = add_scaled(*dst, v, alpha);
#endif
}

/// The range check before a launch: true when the index at byte offset `off` lies outside
/// [0, size). The kernel records the smallest such position.
template <class I>
TENSOR_HD_INLINE bool index_out_of_range(const char* index, uint32_t off, int64_t size) {
  const int64_t v = static_cast<int64_t>(*reinterpret_cast<const I*>(index + off));
  return v < 0 || v >= size;
}

}  // namespace tensor::cuda_kernels
