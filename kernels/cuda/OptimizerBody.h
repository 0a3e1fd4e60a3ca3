// The per-index bodies of the fused optimizer kernels (kernels/cuda/OptimizerKernels.cu): load
// one element of each tensor in the compute type, step it with kernels/math/Optim.h, store it
// back in the storage type. Host/device, so tests/test_optimizer_bodies.cpp runs them on the
// CPU for every dtype the kernel takes, half types included (Note [Kernel bodies run on the CPU]).
#pragma once

#include <cstdint>

#include "kernels/math/Cast.h"
#include "kernels/math/Optim.h"

namespace tensor::cuda_kernels {

/// Element i of an SGD step; buf is read only after the first step and written only with momentum.
template <class T>
TENSOR_HD_INLINE void fused_sgd_body(T* p, const T* g, T* buf, int64_t i,
                                     const math::optim::SgdCoeffs<math::opmath_t<T>>& c) {
  using C = math::opmath_t<T>;
  C pi = static_cast<C>(p[i]);
  C bi = c.use_momentum && !c.first_step ? static_cast<C>(buf[i]) : C(0);
  math::optim::sgd_step(pi, static_cast<C>(g[i]), bi, c, c.maximize, c.decay, c.use_momentum, c.first_step,
                        c.nesterov);
  p[i] = static_cast<T>(pi);
  if (c.use_momentum) buf[i] = static_cast<T>(bi);
}

/// Element i of an Adam(W) step; vmax is read and written only with amsgrad.
template <class T>
TENSOR_HD_INLINE void fused_adam_body(T* p, const T* g, T* m, T* v, T* vmax, int64_t i,
                                      const math::optim::AdamCoeffs<math::opmath_t<T>>& c) {
  using C = math::opmath_t<T>;
  C pi = static_cast<C>(p[i]), mi = static_cast<C>(m[i]), vi = static_cast<C>(v[i]);
  C vmi = c.amsgrad ? static_cast<C>(vmax[i]) : C(0);
  math::optim::adam_step(pi, static_cast<C>(g[i]), mi, vi, vmi, c, c.maximize, c.decoupled, c.l2, c.amsgrad);
  p[i] = static_cast<T>(pi);
  m[i] = static_cast<T>(mi);
  v[i] = static_cast<T>(vi);
  if (c.amsgrad) vmax[i] = static_cast<T>(vmi);
}

}  // namespace tensor::cuda_kernels
