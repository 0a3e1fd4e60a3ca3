// The contract between src/cuda/CUDAIndex.cpp and the indexing launchers of
// kernels/cuda/IndexKernels.cu (Note [CUDA index geometry] in kernels/cuda/IndexBody.h). Plain
// data: the geometry travels in an ElementwiseLaunch of three operands (dense, index, self).
#pragma once

#include <cstdint>

#include "kernels/cuda/ElementwiseLaunch.h"

namespace tensor::cuda_kernels {

enum class IndexMode {
  Gather,  // gather, index_select: dense = self[index]
  Scatter,  // scatter: self[index] = dense
  Add,  // scatter_add, index_add: self[index] += alpha * dense
};

/// The indexed dim beside the geometry: self.size(dim), self.stride(dim) in bytes, the index
/// dtype (int32 or int64) and the element dtype (l.dtype).
struct IndexDim {
  int64_t size = 0;
  int64_t stride = 0;
  ScalarType index_dtype = ScalarType::Int64;
};

/// One indexing launch over `l` (operands dense, index, self; fits 32-bit indexing). Gather and
/// Scatter move any element size; Add serves the real dtypes (kNoKernelForDtype otherwise).
LaunchStatus launch_index(IndexMode mode, const ElementwiseLaunch& l, const IndexDim& dim, ScalarArg alpha);

/// The range check: atomically lowers *first_bad (device memory, preset to all ones) to the
/// smallest linear position of `l` (one operand: the index tensor, dtype l.dtype) whose value
/// lies outside [0, size).
LaunchStatus launch_index_check(const ElementwiseLaunch& l, int64_t size, unsigned long long* first_bad);

}  // namespace tensor::cuda_kernels
