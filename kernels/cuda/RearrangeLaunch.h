// The launcher of tril/triu's kernel (kernels/cuda/TriangleKernels.cu), called by
// src/cuda/CUDARearrange.cpp. Plain data only (kernels/cuda/ElementwiseLaunch.h).
#pragma once

#include <cstdint>

#include "kernels/cuda/ElementwiseLaunch.h"

namespace tensor::cuda_kernels {

/// Zeroes the dropped triangle of every matrix of a contiguous [lines / rows, rows, cols] tensor
/// whose elements are elem_size bytes (1, 2, 4, 8 or 16; all-zero bytes are every dtype's zero):
/// lower (tril) drops the elements with col - row > diagonal, upper (triu) those with
/// col - row < diagonal. diagonal must lie in [-rows, cols] (the caller clamps it).
LaunchStatus launch_zero_triangle(void* data, int64_t elem_size, int64_t lines, int64_t rows, int64_t cols,
                                  int64_t diagonal, bool lower, void* stream);

}  // namespace tensor::cuda_kernels
