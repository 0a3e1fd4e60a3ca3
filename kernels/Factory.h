// Internal: the backend-neutral contract of the filling factories (arange, linspace; the random
// factories take only seeds and counters): the parameters every backend's kernel takes, fixed
// by the front end in src/ops/FactoryOps.cpp. The per-element formulas are
// kernels/cuda/RandomBody.h's, which the CPU and CUDA kernels both run.
#pragma once

#include <cstdint>

namespace tensor::kernels {

/// arange's element i is start + i * step: in int64 when start, end and step are all integral
/// (exact, as PyTorch), else in double; then cast to the output dtype.
struct ArangeParams {
  bool integral = false;
  int64_t istart = 0, istep = 0;  // used when integral
  double start = 0, step = 0;     // used otherwise
};

/// linspace's element i of `steps`: the first half counts up from start by step, the second
/// half back from end (PyTorch's symmetric formula), in double; then cast.
struct LinspaceParams {
  double start = 0, end = 0, step = 0;
  int64_t steps = 0;
};

}  // namespace tensor::kernels
