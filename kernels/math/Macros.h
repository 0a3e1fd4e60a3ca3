// Shared by every kernels/math header (Note [Shared kernel math]).
#pragma once

// Note [Shared kernel math]
// kernels/math holds the per-element math, index arithmetic, reduction combine steps and the
// Philox generator that the CPU kernels and the CUDA kernels both instantiate, so each formula
// is written once and the CPU test suite (tests/test_math_shared.cpp) tests what the GPU runs.
// The headers compile under g++ -std=c++17 and under nvcc: they include only the C++ standard
// library's light headers and tensor/core, never fmt, OpenMP, Highway or CUDA headers, and
// every function a kernel calls is TENSOR_HD_INLINE. tests/cuda/math_device_check.cu compiles
// each of them in device code.
#include "tensor/core/HostDevice.h"

#include <stdexcept>

/// Checks a precondition of a host-side constructor (an IntDivider's divisor, an
/// OffsetCalculator's shape): throws std::invalid_argument with `msg` when `cond` is false.
/// Callers check user input with TENSOR_CHECK first; this guards the kernel's invariants.
#define TENSOR_MATH_REQUIRE(cond, msg) \
  do {                                 \
    if (!(cond)) throw std::invalid_argument(msg); \
  } while (0)
