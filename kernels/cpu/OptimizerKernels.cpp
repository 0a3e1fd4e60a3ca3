#include "kernels/cpu/OptimizerKernels.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/math/Optim.h"
#include "src/core/Parallel.h"

namespace tensor::cpu {

namespace {

using tensor::detail::parallel_range;

// The flags are template parameters so that each inlined body is branch-free and vectorizes;
// the formula is kernels/math/Optim.h's, which the CUDA kernel runs too.
template <typename T, bool Maximize, bool Decay, bool Momentum, bool First, bool Nesterov>
void sgd_kernel(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t b, int64_t e,
                const math::optim::SgdCoeffs<T>& c) {
  T unused = 0;
#pragma omp simd
  for (int64_t i = b; i < e; ++i)
    math::optim::sgd_step(p[i], g[i], Momentum ? buf[i] : unused, c, Maximize, Decay, Momentum, First, Nesterov);
}

template <typename T, bool Maximize, bool Decay, bool Momentum, bool First>
void sgd_dispatch_nesterov(T* p, const T* g, T* buf, int64_t n, const SGDScalars& s) {
  const math::optim::SgdCoeffs<T> c(s.lr, s.momentum, s.dampening, s.weight_decay, s.nesterov, s.maximize,
                                    s.first_step);
  parallel_range(n, [&](int64_t b, int64_t e) {
    if (s.nesterov) sgd_kernel<T, Maximize, Decay, Momentum, First, true>(p, g, buf, b, e, c);
    else sgd_kernel<T, Maximize, Decay, Momentum, First, false>(p, g, buf, b, e, c);
  });
}

template <typename T>
void sgd_loop(T* p, const T* g, T* buf, int64_t n, const SGDScalars& s) {
  const bool decay = s.weight_decay != 0, momentum = s.momentum != 0;
  auto go = [&](auto maximize) {
    constexpr bool M = decltype(maximize)::value;
    if (!momentum) {
      if (decay) sgd_dispatch_nesterov<T, M, true, false, false>(p, g, buf, n, s);
      else sgd_dispatch_nesterov<T, M, false, false, false>(p, g, buf, n, s);
    } else if (s.first_step) {
      if (decay) sgd_dispatch_nesterov<T, M, true, true, true>(p, g, buf, n, s);
      else sgd_dispatch_nesterov<T, M, false, true, true>(p, g, buf, n, s);
    } else {
      if (decay) sgd_dispatch_nesterov<T, M, true, true, false>(p, g, buf, n, s);
      else sgd_dispatch_nesterov<T, M, false, true, false>(p, g, buf, n, s);
    }
  };
  if (s.maximize) go(std::true_type{});
  else go(std::false_type{});
}

template <typename T, bool Maximize, bool Decoupled, bool L2, bool Amsgrad>
void adam_kernel(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, T* __restrict vmax,
                 int64_t b, int64_t e, const math::optim::AdamCoeffs<T>& c) {
  T unused = 0;
#pragma omp simd
  for (int64_t i = b; i < e; ++i)
    math::optim::adam_step(p[i], g[i], m[i], v[i], Amsgrad ? vmax[i] : unused, c, Maximize, Decoupled, L2, Amsgrad);
}

template <typename T>
void adam_loop(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamScalars& s) {
  const bool decay = s.weight_decay != 0;
  const math::optim::AdamCoeffs<T> c(s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, s.step_size,
                                     s.bias_correction2_sqrt, s.amsgrad, s.maximize, s.decoupled);
  auto go = [&](auto maximize, auto amsgrad) {
    constexpr bool M = decltype(maximize)::value, A = decltype(amsgrad)::value;
    parallel_range(n, [&](int64_t b, int64_t e) {
      if (!decay) adam_kernel<T, M, false, false, A>(p, g, m, v, vmax, b, e, c);
      else if (s.decoupled) adam_kernel<T, M, true, false, A>(p, g, m, v, vmax, b, e, c);
      else adam_kernel<T, M, false, true, A>(p, g, m, v, vmax, b, e, c);
    });
  };
  if (s.maximize) {
    if (s.amsgrad) go(std::true_type{}, std::true_type{});
    else go(std::true_type{}, std::false_type{});
  } else {
    if (s.amsgrad) go(std::false_type{}, std::true_type{});
    else go(std::false_type{}, std::false_type{});
  }
}

}  // namespace

bool fused_ok(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> state) {
  const ScalarType t = p.dtype();
  if (!p.is_cpu() || (t != kFloat32 && t != kFloat64) || !p.is_contiguous()) return false;
  auto same = [&](const Tensor& x) {
    return x.is_cpu() && x.dtype() == t && x.is_contiguous() && x.sizes() == p.sizes() && !x.is_conj();
  };
  if (!same(grad)) return false;
  for (const Tensor* s : state)
    if (s->defined() && !same(*s)) return false;
  return true;
}

void sgd_fused(const Tensor& p, const Tensor& grad, const Tensor& buf, const SGDScalars& s) {
  if (p.dtype() == kFloat32) {
    sgd_loop(p.data_ptr<float>(), grad.data_ptr<float>(), buf.defined() ? buf.data_ptr<float>() : nullptr, p.numel(), s);
  } else {
    sgd_loop(p.data_ptr<double>(), grad.data_ptr<double>(), buf.defined() ? buf.data_ptr<double>() : nullptr,
             p.numel(), s);
  }
  // Writes through raw pointers bypass the ops that bump version counters; autograd must still
  // see that these tensors changed.
  p.unsafeGetTensorImpl()->bump_version();
  if (buf.defined()) buf.unsafeGetTensorImpl()->bump_version();
}

void adam_fused(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v, const Tensor& vmax,
                const AdamScalars& s) {
  if (p.dtype() == kFloat32) {
    adam_loop(p.data_ptr<float>(), grad.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
              vmax.defined() ? vmax.data_ptr<float>() : nullptr, p.numel(), s);
  } else {
    adam_loop(p.data_ptr<double>(), grad.data_ptr<double>(), m.data_ptr<double>(), v.data_ptr<double>(),
              vmax.defined() ? vmax.data_ptr<double>() : nullptr, p.numel(), s);
  }
  for (const Tensor* t : {&p, &m, &v, &vmax})
    if (t->defined()) t->unsafeGetTensorImpl()->bump_version();
}

}  // namespace tensor::cpu
