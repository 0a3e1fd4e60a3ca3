// Linear element index -> byte offset of that element in each of NARGS strided tensors, as
// ATen's OffsetCalculator: the strided path of the elementwise engine calls get() per element.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/math/IntDivider.h"
#include "kernels/math/Macros.h"

namespace tensor::math {

/// The byte offsets of one element in each of N tensors.
template <int N>
struct Offsets {
  uint32_t v[N > 0 ? N : 1];
  TENSOR_HD_INLINE uint32_t& operator[](int i) { return v[i]; }
  TENSOR_HD_INLINE const uint32_t& operator[](int i) const { return v[i]; }
};

/// Maps a linear index over a shape (innermost dim varying fastest) to NARGS byte offsets.
/// Built on the host and passed by value to kernels. 32-bit indexing: the caller ensures that
/// the element count and every byte offset fit in uint32_t (splitting larger launches), and
/// that strides are non-negative.
template <int NARGS>
struct OffsetCalculator {
  static constexpr int kMaxDims = 8;

  OffsetCalculator() = default;
  /// `sizes[d]` and `strides[arg][d]` (in bytes) for d in [0, ndim), dim 0 innermost;
  /// requires 0 <= ndim <= kMaxDims, 1 <= sizes[d] <= 2^31 and 0 <= strides < 2^32.
  OffsetCalculator(int ndim, const int64_t* sizes, const int64_t* const* strides) : dims(ndim) {
    TENSOR_MATH_REQUIRE(ndim >= 0 && ndim <= kMaxDims, "OffsetCalculator: at most 8 dims");
    for (int d = 0; d < kMaxDims; ++d) {
      const bool used = d < ndim;
      if (used)
        TENSOR_MATH_REQUIRE(sizes[d] >= 1 && sizes[d] <= (int64_t(1) << 31), "OffsetCalculator: size out of range");
      sizes_[d] = IntDivider<uint32_t>(used ? static_cast<uint32_t>(sizes[d]) : 1u);
      for (int a = 0; a < NARGS; ++a) {
        const int64_t s = used ? strides[a][d] : 0;
        TENSOR_MATH_REQUIRE(s >= 0 && s <= int64_t(UINT32_MAX), "OffsetCalculator: stride out of range");
        strides_[d][a] = static_cast<uint32_t>(s);
      }
    }
  }

  /// The byte offsets of element `linear_idx` in each argument.
  TENSOR_HD_INLINE Offsets<NARGS> get(uint32_t linear_idx) const {
    Offsets<NARGS> out;
    for (int a = 0; a < NARGS; ++a) out[a] = 0;
    // A fixed trip count with an early exit lets nvcc unroll and keep sizes_ in registers.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == dims) break;
      const DivMod<uint32_t> qr = sizes_[d].divmod(linear_idx);
      linear_idx = qr.div;
      for (int a = 0; a < NARGS; ++a) out[a] += qr.mod * strides_[d][a];
    }
    return out;
  }

  int dims;
  IntDivider<uint32_t> sizes_[kMaxDims];
  uint32_t strides_[kMaxDims][NARGS > 0 ? NARGS : 1];
};

static_assert(std::is_trivially_copyable_v<OffsetCalculator<3>>, "OffsetCalculator is passed by value to kernels");

}  // namespace tensor::math
