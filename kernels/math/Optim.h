// The per-element updates of the fused optimizer steps (Note [Fused optimizer steps] in
// kernels/cpu/OptimizerKernels.h), shared by the CPU loops and the CUDA kernel (Note [Shared
// kernel math]). The flags are ordinary arguments: the CPU loops pass compile-time constants
// (so each inlined body is branch-free and vectorizes), the CUDA kernel passes them at run time
// (the branches are uniform across a launch, so they cost no divergence).
#pragma once

#include <cmath>

#include "kernels/math/Macros.h"

namespace tensor::math::optim {

/// torch.optim.SGD's constants, in the compute type T.
template <class T>
struct SgdCoeffs {
  T lr, momentum, weight_decay, keep;  // keep = 1 - dampening
  bool maximize, decay, use_momentum, first_step, nesterov;

  SgdCoeffs() = default;
  TENSOR_HD_INLINE SgdCoeffs(double lr_, double momentum_, double dampening, double weight_decay_, bool nesterov_,
                             bool maximize_, bool first_step_)
      : lr(static_cast<T>(lr_)),
        momentum(static_cast<T>(momentum_)),
        weight_decay(static_cast<T>(weight_decay_)),
        keep(static_cast<T>(1 - dampening)),
        maximize(maximize_),
        decay(weight_decay_ != 0),
        use_momentum(momentum_ != 0),
        first_step(first_step_),
        nesterov(nesterov_) {}
};

/// One SGD element: p -= lr * d, where d is the (negated, decayed) gradient through the
/// momentum buffer (first step: the buffer starts as d; nesterov: d + momentum * buffer).
/// `buf` is only touched when use_momentum. Flags as SgdCoeffs' members, passed separately so
/// the CPU can make them constants.
template <class T>
TENSOR_HD_INLINE void sgd_step(T& p, T g, T& buf, const SgdCoeffs<T>& c, bool maximize, bool decay, bool momentum,
                               bool first, bool nesterov) {
  T d = maximize ? -g : g;
  if (decay) d += c.weight_decay * p;
  if (momentum) {
    const T nb = first ? d : c.momentum * buf + c.keep * d;
    buf = nb;
    d = nesterov ? d + c.momentum * nb : nb;
  }
  p -= c.lr * d;
}

/// torch.optim.Adam(W)'s constants for one step, in the compute type T.
template <class T>
struct AdamCoeffs {
  T beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay, decay_factor, bias_correction2_sqrt, step_size;
  bool maximize, decoupled, l2, amsgrad;

  AdamCoeffs() = default;
  TENSOR_HD_INLINE AdamCoeffs(double lr, double beta1_, double beta2_, double eps_, double weight_decay_,
                              double step_size_, double bias_correction2_sqrt_, bool amsgrad_, bool maximize_,
                              bool decoupled_)
      : beta1(static_cast<T>(beta1_)),
        beta2(static_cast<T>(beta2_)),
        one_minus_beta1(static_cast<T>(1 - beta1_)),
        one_minus_beta2(static_cast<T>(1 - beta2_)),
        eps(static_cast<T>(eps_)),
        weight_decay(static_cast<T>(weight_decay_)),
        decay_factor(static_cast<T>(1 - lr * weight_decay_)),
        bias_correction2_sqrt(static_cast<T>(bias_correction2_sqrt_)),
        step_size(static_cast<T>(step_size_)),
        maximize(maximize_),
        decoupled(decoupled_ && weight_decay_ != 0),
        l2(!decoupled_ && weight_decay_ != 0),
        amsgrad(amsgrad_) {}
};

/// One Adam(W) element, torch.optim.adam's single-tensor formulas: decoupled decay scales p,
/// L2 decay adds to the gradient; m and v are the moment estimates; with amsgrad, vmax keeps
/// the running max of v and is what the denominator uses (only then is vmax touched).
template <class T>
TENSOR_HD_INLINE void adam_step(T& p, T g, T& m, T& v, T& vmax, const AdamCoeffs<T>& c, bool maximize,
                                bool decoupled, bool l2, bool amsgrad) {
  using std::sqrt;
  T gi = maximize ? -g : g;
  T pi = p;
  if (decoupled) pi *= c.decay_factor;
  if (l2) gi += c.weight_decay * pi;
  const T mi = c.beta1 * m + c.one_minus_beta1 * gi;
  const T vi = c.beta2 * v + c.one_minus_beta2 * (gi * gi);
  m = mi;
  v = vi;
  T vd = vi;
  if (amsgrad) {
    vd = vmax > vi ? vmax : vi;
    vmax = vd;
  }
  const T denom = sqrt(vd) / c.bias_correction2_sqrt + c.eps;
  p = pi - c.step_size * (mi / denom);
}

}  // namespace tensor::math::optim
