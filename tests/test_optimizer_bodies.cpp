// The fused optimizer kernels' per-index bodies (kernels/cuda/OptimizerBody.h), run on the CPU
// for every dtype the CUDA kernel takes and every flag combination, against float64 loops
// written from torch.optim's formulas. The CPU's fused loops share kernels/math/Optim.h and
// are checked against the tensor-op form in tests/test_optim.cpp.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/OptimizerBody.h"

using namespace tensor;

namespace {

constexpr int kN = 257;

// Relative to the operands' scale (about 1), not the result's: a momentum update can cancel.
template <class T>
double tol(double ref) {
  double rel = std::is_same_v<T, double> ? 1e-14 : std::is_same_v<T, float> ? 2e-6
               : std::is_same_v<T, Half>  ? 2e-3
                                          : 1.6e-2;
  return rel * (std::abs(ref) + 1.0);
}

template <class T>
std::vector<T> random_values(std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(kN);
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

template <class T>
void expect_near_all(const std::vector<T>& got, const std::vector<double>& want, const char* what) {
  for (int i = 0; i < kN; ++i) {
    const double g = static_cast<double>(static_cast<math::opmath_t<T>>(got[i]));
    ASSERT_NEAR(g, want[i], tol<T>(want[i])) << what << " at " << i;
  }
}

template <class T>
void check_sgd() {
  std::mt19937 rng(7);
  for (int flags = 0; flags < 32; ++flags) {
    const bool maximize = flags & 1, decay = flags & 2, momentum = flags & 4, first = flags & 8, nesterov = flags & 16;
    if (nesterov && !momentum) continue;
    const double lr = 0.05, mom = momentum ? 0.9 : 0.0, damp = 0.1, wd = decay ? 0.01 : 0.0;
    std::vector<T> p = random_values<T>(rng, -2, 2), g = random_values<T>(rng, -1, 1), buf = random_values<T>(rng, -1, 1);
    std::vector<double> pr(kN), br(kN);
    for (int i = 0; i < kN; ++i) {
      // torch.optim.SGD, one element in float64.
      double pi = double(static_cast<math::opmath_t<T>>(p[i])), gi = double(static_cast<math::opmath_t<T>>(g[i]));
      double bi = double(static_cast<math::opmath_t<T>>(buf[i]));
      double d = maximize ? -gi : gi;
      d += wd * pi;
      if (momentum) {
        bi = first ? d : mom * bi + (1 - damp) * d;
        d = nesterov ? d + mom * bi : bi;
      }
      pr[i] = pi - lr * d;
      br[i] = bi;
    }
    const math::optim::SgdCoeffs<math::opmath_t<T>> c(lr, mom, damp, wd, nesterov, maximize, first);
    // Without momentum the buffer must not be touched: pass none.
    for (int64_t i = 0; i < kN; ++i) cuda_kernels::fused_sgd_body(p.data(), g.data(), momentum ? buf.data() : nullptr, i, c);
    SCOPED_TRACE(::testing::Message() << "flags " << flags);
    expect_near_all(p, pr, "param");
    if (momentum) expect_near_all(buf, br, "momentum_buffer");
  }
}

template <class T>
void check_adam() {
  std::mt19937 rng(11);
  for (int flags = 0; flags < 16; ++flags) {
    const bool maximize = flags & 1, decay = flags & 2, decoupled = flags & 4, amsgrad = flags & 8;
    const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = decay ? 0.05 : 0.0;
    const int step = 3;
    const double bc1 = 1 - std::pow(b1, step), bc2_sqrt = std::sqrt(1 - std::pow(b2, step));
    const double step_size = lr / bc1;
    std::vector<T> p = random_values<T>(rng, -2, 2), g = random_values<T>(rng, -1, 1);
    std::vector<T> m = random_values<T>(rng, -0.5, 0.5), v = random_values<T>(rng, 0, 0.5),
                   vmax = random_values<T>(rng, 0, 0.5);
    std::vector<double> pr(kN), mr(kN), vr(kN), vmr(kN);
    auto f = [](T x) { return double(static_cast<math::opmath_t<T>>(x)); };
    for (int i = 0; i < kN; ++i) {
      // torch.optim.adam / adamw (single tensor), one element in float64.
      double pi = f(p[i]), gi = maximize ? -f(g[i]) : f(g[i]);
      if (decoupled) pi *= 1 - lr * wd;
      else gi += wd * pi;
      mr[i] = b1 * f(m[i]) + (1 - b1) * gi;
      vr[i] = b2 * f(v[i]) + (1 - b2) * gi * gi;
      vmr[i] = std::max(f(vmax[i]), vr[i]);
      const double denom = std::sqrt(amsgrad ? vmr[i] : vr[i]) / bc2_sqrt + eps;
      pr[i] = pi - step_size * mr[i] / denom;
    }
    const math::optim::AdamCoeffs<math::opmath_t<T>> c(lr, b1, b2, eps, wd, step_size, bc2_sqrt, amsgrad, maximize,
                                                       decoupled);
    for (int64_t i = 0; i < kN; ++i)
      cuda_kernels::fused_adam_body(p.data(), g.data(), m.data(), v.data(), amsgrad ? vmax.data() : nullptr, i, c);
    SCOPED_TRACE(::testing::Message() << "flags " << flags);
    expect_near_all(p, pr, "param");
    expect_near_all(m, mr, "exp_avg");
    expect_near_all(v, vr, "exp_avg_sq");
    if (amsgrad) expect_near_all(vmax, vmr, "max_exp_avg_sq");
  }
}

}  // namespace

TEST(OptimizerBodies, SgdMatchesFloat64Formulas) {
  check_sgd<float>();
  check_sgd<double>();
  check_sgd<Half>();
  check_sgd<BFloat16>();
}

TEST(OptimizerBodies, AdamMatchesFloat64Formulas) {
  check_adam<float>();
  check_adam<double>();
  check_adam<Half>();
  check_adam<BFloat16>();
}
