// The contract between src/cuda/CUDARandom.cpp and the factory kernels of
// kernels/cuda/RandomKernels.cu (rand, randn, randint), RangeKernels.cu (arange, linspace) and
// RandpermKernels.cu:
// a fresh contiguous output and the front end's parameters (Note [Factory kernels] in
// src/ops/FactoryOps.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/Factory.h"
#include "kernels/cuda/ElementwiseLaunch.h"
#include "tensor/core/ScalarType.h"

namespace tensor::cuda_kernels {

/// A contiguous output of n elements of `dtype` on the current device, written on `stream`.
struct FactoryLaunch {
  ScalarType dtype = ScalarType::Float;
  int64_t n = 0;
  void* out = nullptr;
  void* stream = nullptr;  // cudaStream_t
};

/// rand (normal = false) or randn into a floating output: pair i from Philox counter base + i.
LaunchStatus launch_random(const FactoryLaunch& l, uint64_t seed, uint64_t base, bool normal);
/// randint in [low, low + range) into a real output: element i from counter base + i.
LaunchStatus launch_randint(const FactoryLaunch& l, uint64_t seed, uint64_t base, int64_t low, uint64_t range);
/// arange into a real output.
LaunchStatus launch_arange(const FactoryLaunch& l, const kernels::ArangeParams& p);
/// linspace into a real output.
LaunchStatus launch_linspace(const FactoryLaunch& l, const kernels::LinspaceParams& p);

/// The device scratch bytes launch_randperm needs for n keys (CUB's radix sort storage plus the
/// sorted keys and the index sequence, each 256-byte aligned).
size_t randperm_scratch_bytes(int64_t n);
/// randperm's stable argsort (Note [randperm by sorted keys] in src/ops/FactoryOps.cpp): perm[i]
/// is the index of the i-th smallest of n keys in [0, 2^62), equal keys in index order.
LaunchStatus launch_randperm(const int64_t* keys, int64_t* perm, int64_t n, void* scratch, size_t scratch_bytes,
                             void* stream);

}  // namespace tensor::cuda_kernels
