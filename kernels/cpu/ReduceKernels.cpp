// CPU reductions, scans and softmax (Note [Reduction kernels]). The float32/float64 inner loops
// are compiled once per Highway target (Note [Per-ISA loops]); the dtype-generic drivers that
// call them are compiled once.
#include "kernels/cpu/Reduce.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <type_traits>

#include "kernels/math/Reduce.h"
#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"

#ifndef TENSOR_KERNELS_CPU_REDUCE_PRIMS_
#define TENSOR_KERNELS_CPU_REDUCE_PRIMS_
namespace tensor::cpu {
// The per-ISA float loops, as one table per Highway target.
struct ReducePrims {
  double (*sum_f32)(const float*, int64_t);
  double (*sum_f64)(const double*, int64_t);
  float (*max_f32)(const float*, int64_t);
  float (*min_f32)(const float*, int64_t);
  double (*max_f64)(const double*, int64_t);
  double (*min_f64)(const double*, int64_t);
  void (*col_sum_f32)(float*, const float*, int64_t);
  void (*col_sum_f64)(double*, const double*, int64_t);
  void (*col_max_f32)(float*, const float*, int64_t);
  void (*col_min_f32)(float*, const float*, int64_t);
  void (*col_max_f64)(double*, const double*, int64_t);
  void (*col_min_f64)(double*, const double*, int64_t);
  void (*softmax_f32)(const float*, float*, int64_t, int64_t);  // rows, row length
  void (*log_softmax_f32)(const float*, float*, int64_t, int64_t);
  void (*softmax_f64)(const double*, double*, int64_t, int64_t);
  void (*log_softmax_f64)(const double*, double*, int64_t, int64_t);
  void (*log_softmax_at_f32)(const float*, int64_t, int64_t, const int64_t*, float*);
  void (*log_softmax_at_f64)(const double*, int64_t, int64_t, const int64_t*, double*);
  void (*exp_sub_sum_f32)(const float*, const float*, float*, float*, int64_t);
  void (*exp_sub_sum_f64)(const double*, const double*, double*, double*, int64_t);
  int64_t (*find_f32)(const float*, int64_t, float);
  int64_t (*find_f64)(const double*, int64_t, double);
  void (*col_argmax_f32)(float*, int32_t*, const float*, int64_t, int32_t);
  void (*col_argmin_f32)(float*, int32_t*, const float*, int64_t, int32_t);
  void (*col_argmax_f64)(double*, int64_t*, const double*, int64_t, int64_t);
  void (*col_argmin_f64)(double*, int64_t*, const double*, int64_t, int64_t);
  float (*prod_f32)(const float*, int64_t);
  double (*prod_f64)(const double*, int64_t);
  double (*sumsq_f32)(const float*, int64_t);
  double (*sumsq_f64)(const double*, int64_t);
  void (*col_sumsq_f32)(float*, const float*, int64_t);
  void (*col_sumsq_f64)(double*, const double*, int64_t);
  void (*layer_norm_row_f32)(const float*, float*, int64_t, const float*, const float*, double, double*, double*);
  void (*sum_dev_f32)(const float*, int64_t, float, double*, double*);
  void (*sum_gx_f32)(const float*, const float*, int64_t, double*, double*);
  void (*affine_f32)(const float*, float*, int64_t, float, float);
  void (*axpbypc_f32)(const float*, const float*, float*, int64_t, float, float, float);
  void (*row_means_f32)(const float*, int64_t, int64_t, float*);
  void (*softplus_neg_f32)(const float*, float*, int64_t);
  void (*softplus_neg_f64)(const double*, double*, int64_t);
};
}  // namespace tensor::cpu
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/ReduceKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace {

// Note [Cascade summation]
// A float32 sum with one float accumulator loses about log2(n) bits over n elements. Runs are
// summed in blocks of kSumBlock elements across four vector accumulators (each lane adds at
// most kSumBlock / (4 * lanes) values), and the block totals add in double. Column sums keep a
// float buffer that is flushed into a double buffer every kFlushRows rows. Both cost nothing
// measurable next to the memory traffic and keep the error near that of a pairwise sum.
constexpr int64_t kSumBlock = 1024;

template <class T>
double SumRun(const T* HWY_RESTRICT p, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  double total = 0;
  int64_t i = 0;
  while (i < n) {
    const int64_t e = std::min(n, i + kSumBlock);
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (; i + 4 * N <= e; i += 4 * N) {
      a0 = hn::Add(a0, hn::LoadU(d, p + i));
      a1 = hn::Add(a1, hn::LoadU(d, p + i + N));
      a2 = hn::Add(a2, hn::LoadU(d, p + i + 2 * N));
      a3 = hn::Add(a3, hn::LoadU(d, p + i + 3 * N));
    }
    for (; i + N <= e; i += N) a0 = hn::Add(a0, hn::LoadU(d, p + i));
    T s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
    for (; i < e; ++i) s += p[i];
    total += static_cast<double>(s);
  }
  return total;
}

// The sum of squares of a run (the 2-norm's reduction), blocked as SumRun: each square is
// added by a fused multiply-add, so it is not rounded on its own.
template <class T>
double SumSqRun(const T* HWY_RESTRICT p, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  double total = 0;
  int64_t i = 0;
  while (i < n) {
    const int64_t e = std::min(n, i + kSumBlock);
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (; i + 4 * N <= e; i += 4 * N) {
      const auto v0 = hn::LoadU(d, p + i), v1 = hn::LoadU(d, p + i + N);
      const auto v2 = hn::LoadU(d, p + i + 2 * N), v3 = hn::LoadU(d, p + i + 3 * N);
      a0 = hn::MulAdd(v0, v0, a0);
      a1 = hn::MulAdd(v1, v1, a1);
      a2 = hn::MulAdd(v2, v2, a2);
      a3 = hn::MulAdd(v3, v3, a3);
    }
    for (; i + N <= e; i += N) {
      const auto v = hn::LoadU(d, p + i);
      a0 = hn::MulAdd(v, v, a0);
    }
    T s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
    for (; i < e; ++i) s += p[i] * p[i];
    total += static_cast<double>(s);
  }
  return total;
}

// Sums of d and d * d, d = x - m, over a float32 row, blocked as SumRun.
void SumDevRunF32(const float* HWY_RESTRICT p, int64_t n, float m, double& sd, double& sq) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vm = hn::Set(d, m);
  sd = 0, sq = 0;
  int64_t i = 0;
  while (i < n) {
    const int64_t e = std::min(n, i + kSumBlock);
    auto s0 = hn::Zero(d), s1 = hn::Zero(d), q0 = hn::Zero(d), q1 = hn::Zero(d);
    for (; i + 2 * N <= e; i += 2 * N) {
      const auto d0 = hn::Sub(hn::LoadU(d, p + i), vm), d1 = hn::Sub(hn::LoadU(d, p + i + N), vm);
      s0 = hn::Add(s0, d0);
      s1 = hn::Add(s1, d1);
      q0 = hn::MulAdd(d0, d0, q0);
      q1 = hn::MulAdd(d1, d1, q1);
    }
    for (; i + N <= e; i += N) {
      const auto d0 = hn::Sub(hn::LoadU(d, p + i), vm);
      s0 = hn::Add(s0, d0);
      q0 = hn::MulAdd(d0, d0, q0);
    }
    float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
    float q = hn::GetLane(hn::SumOfLanes(d, hn::Add(q0, q1)));
    for (; i < e; ++i) {
      const float dv = p[i] - m;
      s += dv, q += dv * dv;
    }
    sd += static_cast<double>(s), sq += static_cast<double>(q);
  }
}

void SumDevF32(const float* HWY_RESTRICT p, int64_t n, float m, double* sd, double* sq) {
  SumDevRunF32(p, n, m, *sd, *sq);
}

// Sums of g * x and of g over float32 rows (a normalization backward's), blocked as SumRun.
void SumGxF32(const float* HWY_RESTRICT g, const float* HWY_RESTRICT x, int64_t n, double* sgx, double* sg) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  double tgx = 0, tg = 0;
  int64_t i = 0;
  while (i < n) {
    const int64_t e = std::min(n, i + kSumBlock);
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), b0 = hn::Zero(d), b1 = hn::Zero(d);
    for (; i + 2 * N <= e; i += 2 * N) {
      const auto g0 = hn::LoadU(d, g + i), g1 = hn::LoadU(d, g + i + N);
      a0 = hn::MulAdd(g0, hn::LoadU(d, x + i), a0);
      a1 = hn::MulAdd(g1, hn::LoadU(d, x + i + N), a1);
      b0 = hn::Add(b0, g0);
      b1 = hn::Add(b1, g1);
    }
    for (; i + N <= e; i += N) {
      const auto g0 = hn::LoadU(d, g + i);
      a0 = hn::MulAdd(g0, hn::LoadU(d, x + i), a0);
      b0 = hn::Add(b0, g0);
    }
    float a = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
    float b = hn::GetLane(hn::SumOfLanes(d, hn::Add(b0, b1)));
    for (; i < e; ++i) a += g[i] * x[i], b += g[i];
    tgx += static_cast<double>(a), tg += static_cast<double>(b);
  }
  *sgx = tgx, *sg = tg;
}

// y = x * scale + shift over a float32 row.
void AffineF32(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n, float scale, float shift) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vs = hn::Set(d, scale), vb = hn::Set(d, shift);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::MulAdd(hn::LoadU(d, x + i), vs, vb), d, y + i);
  for (; i < n; ++i) y[i] = x[i] * scale + shift;
}

// y = a * g + b * x + e over float32 rows.
void AxpbypcF32(const float* HWY_RESTRICT g, const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n, float a,
                float b, float e) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, a), vb = hn::Set(d, b), ve = hn::Set(d, e);
  int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::MulAdd(va, hn::LoadU(d, g + i), hn::MulAdd(vb, hn::LoadU(d, x + i), ve)), d, y + i);
  for (; i < n; ++i) y[i] = a * g[i] + b * x[i] + e;
}

// out[r] = mean of row r of a contiguous [rows, n] float32 block. Rows of up to four vectors
// (global pooling's 7 x 7 planes) are summed inline, the last partial vector masked from a
// full load where the block has that many elements left (the next row's, ignored), so that a
// short row costs a handful of instructions rather than a call of SumRun; longer rows take
// SumRun.
// y = log(1 + e^-x) = max(-x, 0) + log1p(e^-|x|), which never overflows. e^-|x| is 0 below
// exp's range (Highway's Exp is accurate only inside it, Note [Vector math at the edges]); its
// log1p argument stays in [0, 1]. NaN stays NaN; the tail takes the C library's functions.
template <class T>
void SoftplusNeg(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto zero = hn::Zero(d);
  const auto lo = hn::Set(d, sizeof(T) == 4 ? T(-103.972) : T(-745.1332191019411));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    const auto na = hn::Neg(hn::Abs(v));
    const auto e = hn::IfThenElse(hn::Lt(na, lo), zero, hn::Exp(d, na));
    const auto r = hn::Add(hn::Max(hn::Neg(v), zero), hn::Log1p(d, e));
    hn::StoreU(hn::IfThenElse(hn::IsNaN(v), v, r), d, y + i);
  }
  for (; i < n; ++i) y[i] = std::max(-x[i], T(0)) + std::log1p(std::exp(-std::abs(x[i])));
}

void RowMeansF32(const float* HWY_RESTRICT x, int64_t rows, int64_t n, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const double dn = static_cast<double>(n);
  if (n > 4 * N) {
    for (int64_t r = 0; r < rows; ++r) out[r] = static_cast<float>(SumRun<float>(x + r * n, n) / dn);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x + r * n;
    auto acc = hn::Zero(d);
    int64_t i = 0;
    for (; i + N <= n; i += N) acc = hn::Add(acc, hn::LoadU(d, p + i));
    float tail = 0;
    if (i < n) {
      if ((rows - r) * n - i >= N) {
        acc = hn::Add(acc, hn::IfThenElseZero(hn::FirstN(d, static_cast<size_t>(n - i)), hn::LoadU(d, p + i)));
      } else {
        for (; i < n; ++i) tail += p[i];
      }
    }
    const float s = hn::GetLane(hn::SumOfLanes(d, acc)) + tail;
    out[r] = static_cast<float>(static_cast<double>(s) / dn);
  }
}

// One float32 layer_norm row (Note [Small layer_norm] in src/cpu/PoolNormKernel.cpp): the
// moments as the plain loops take them (Note [Blocked float32 sums] in
// kernels/cpu/PoolNormKernels.cpp: the blocked sum's mean rounded to float, then the deviations
// from it, whose mean corrects both moments), then y = (x - mean) * rstd, times w, plus b, with
// the mean subtracted as a float pair (hi + lo) so that a mean far from zero relative to the
// spread loses no more than the float32 inputs carry.
void LayerNormRowF32(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n, const float* HWY_RESTRICT w,
                     const float* HWY_RESTRICT b, double eps, double* mean, double* var) {
  const double dn = static_cast<double>(n);
  const float m0f = static_cast<float>(SumRun<float>(x, n) / dn);
  double sd, sq;
  SumDevRunF32(x, n, m0f, sd, sq);
  const double e = sd / dn, m = m0f + e, v = std::max(sq / dn - e * e, 0.0);
  *mean = m, *var = v;
  const double rstd = 1.0 / std::sqrt(v + eps);
  const float a = static_cast<float>(rstd), hi = static_cast<float>(m), lo = static_cast<float>(m - hi);
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, a), vhi = hn::Set(d, hi), vlo = hn::Set(d, lo);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    auto r = hn::Mul(hn::Sub(hn::Sub(hn::LoadU(d, x + i), vhi), vlo), va);
    if (w != nullptr) r = hn::Mul(r, hn::LoadU(d, w + i));
    if (b != nullptr) r = hn::Add(r, hn::LoadU(d, b + i));
    hn::StoreU(r, d, y + i);
  }
  for (; i < n; ++i) {
    float r = ((x[i] - hi) - lo) * a;
    if (w != nullptr) r *= w[i];
    if (b != nullptr) r += b[i];
    y[i] = r;
  }
}

template <class T>
void ColSumSq(T* HWY_RESTRICT acc, const T* HWY_RESTRICT p, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, p + i);
    hn::StoreU(hn::MulAdd(v, v, hn::LoadU(d, acc + i)), d, acc + i);
  }
  for (; i < n; ++i) acc[i] += p[i] * p[i];
}

// The product of a run. A single running product is a chain of dependent multiplies (one
// element per multiply latency); four vector accumulators keep the multipliers busy.
template <class T>
T ProdRun(const T* HWY_RESTRICT p, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto one = hn::Set(d, T(1));
  auto a0 = one, a1 = one, a2 = one, a3 = one;
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Mul(a0, hn::LoadU(d, p + i));
    a1 = hn::Mul(a1, hn::LoadU(d, p + i + N));
    a2 = hn::Mul(a2, hn::LoadU(d, p + i + 2 * N));
    a3 = hn::Mul(a3, hn::LoadU(d, p + i + 3 * N));
  }
  for (; i + N <= n; i += N) a0 = hn::Mul(a0, hn::LoadU(d, p + i));
  HWY_ALIGN T lanes[hn::MaxLanes(d)];
  hn::Store(hn::Mul(hn::Mul(a0, a1), hn::Mul(a2, a3)), d, lanes);
  T r = 1;
  for (int64_t l = 0; l < N; ++l) r *= lanes[l];
  for (; i < n; ++i) r *= p[i];
  return r;
}

// Max or min of a run; any NaN makes the result NaN (hn::Max alone would drop it).
template <class T, bool kMax>
T MinMaxRun(const T* HWY_RESTRICT p, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  T best = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  int64_t i = 0;
  if (n >= 2 * N) {
    auto m0 = hn::LoadU(d, p), m1 = hn::LoadU(d, p + N);
    auto nan = hn::Or(hn::IsNaN(m0), hn::IsNaN(m1));
    auto m2 = m0, m3 = m1;
    const auto better = [](auto a, auto b) { return kMax ? hn::Max(a, b) : hn::Min(a, b); };
    // Four loads per step, as SumRun (two read max_16M 5-10% below sum_16M's bandwidth).
    for (i = 2 * N; i + 4 * N <= n; i += 4 * N) {
      const auto v0 = hn::LoadU(d, p + i), v1 = hn::LoadU(d, p + i + N);
      const auto v2 = hn::LoadU(d, p + i + 2 * N), v3 = hn::LoadU(d, p + i + 3 * N);
      nan = hn::Or(nan, hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)), hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
      m0 = better(m0, v0), m1 = better(m1, v1), m2 = better(m2, v2), m3 = better(m3, v3);
    }
    for (; i + 2 * N <= n; i += 2 * N) {
      const auto v0 = hn::LoadU(d, p + i), v1 = hn::LoadU(d, p + i + N);
      nan = hn::Or(nan, hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)));
      m0 = better(m0, v0), m1 = better(m1, v1);
    }
    m0 = better(m0, m2), m1 = better(m1, m3);
    if (!hn::AllFalse(d, nan)) return std::numeric_limits<T>::quiet_NaN();
    best = kMax ? hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1))) : hn::GetLane(hn::MinOfLanes(d, hn::Min(m0, m1)));
  }
  for (; i < n; ++i) {
    best = math::minmax_propagate_nan<kMax>(best, p[i]);
    if (best != best) return best;  // a NaN is final
  }
  return best;
}

template <class T>
void ColSum(T* HWY_RESTRICT acc, const T* HWY_RESTRICT p, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    hn::StoreU(hn::Add(hn::LoadU(d, acc + i), hn::LoadU(d, p + i)), d, acc + i);
    hn::StoreU(hn::Add(hn::LoadU(d, acc + i + N), hn::LoadU(d, p + i + N)), d, acc + i + N);
  }
  for (; i + N <= n; i += N) hn::StoreU(hn::Add(hn::LoadU(d, acc + i), hn::LoadU(d, p + i)), d, acc + i);
  for (; i < n; ++i) acc[i] += p[i];
}

// acc = better(v, acc) || isnan(v) ? v : acc, so a NaN, once in, stays.
template <class T, bool kMax>
void ColMinMax(T* HWY_RESTRICT acc, const T* HWY_RESTRICT p, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto a = hn::LoadU(d, acc + i), v = hn::LoadU(d, p + i);
    const auto take = hn::Or(kMax ? hn::Gt(v, a) : hn::Lt(v, a), hn::IsNaN(v));
    hn::StoreU(hn::IfThenElse(take, v, a), d, acc + i);
  }
  for (; i < n; ++i) acc[i] = math::minmax_propagate_nan<kMax>(acc[i], p[i]);
}

// Lane sums of exp(x[i, e) - m) (vm holds m), each exp stored to y when kStore (y unused
// otherwise). One block of ExpSumRow; log_softmax's row groups call it directly.
template <class T, bool kStore, class D, class V>
HWY_INLINE V ExpSumBlock(D d, const T* HWY_RESTRICT x, T* HWY_RESTRICT y, int64_t i, int64_t e, V vm) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);
  for (; i + 2 * N <= e; i += 2 * N) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vm));
    const auto e1 = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i + N), vm));
    if constexpr (kStore) {
      hn::StoreU(e0, d, y + i);
      hn::StoreU(e1, d, y + i + N);
    }
    a0 = hn::Add(a0, e0);
    a1 = hn::Add(a1, e1);
  }
  for (; i + N <= e; i += N) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vm));
    if constexpr (kStore) hn::StoreU(e0, d, y + i);
    a0 = hn::Add(a0, e0);
  }
  if (i < e) {
    // Fewer than N left (all of a 10-class row): one vector over a copy padded with -inf,
    // whose lanes add exp(-inf) = 0, rather than scalar std::exp at ~5 ns an element.
    HWY_ALIGN T pad[hn::MaxLanes(d)];
    std::fill(pad, pad + N, -std::numeric_limits<T>::infinity());
    std::copy(x + i, x + e, pad);
    const auto e0 = hn::Exp(d, hn::Sub(hn::Load(d, pad), vm));
    if constexpr (kStore) {
      hn::Store(e0, d, pad);
      std::copy(pad, pad + (e - i), y + i);
    }
    a0 = hn::Add(a0, hn::IfThenElseZero(hn::FirstN(d, static_cast<size_t>(e - i)), e0));
  }
  return hn::Add(a0, a1);
}

// The sum of exp(x - m) over a row, each exp stored to y when kStore (y unused otherwise).
template <class T, bool kStore>
double ExpSumRow(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, int64_t n, T m) {
  const hn::ScalableTag<T> d;
  const auto vm = hn::Set(d, m);
  double total = 0;
  for (int64_t i = 0; i < n; i += kSumBlock) {
    const int64_t e = std::min(n, i + kSumBlock);
    total += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, ExpSumBlock<T, kStore>(d, x, y, i, e, vm))));
  }
  return total;
}

// Note [Log-softmax row groups]
// log_softmax subtracts log(sum of exp(x - max)) from each row. A scalar logf per row was a
// fifth of a [64, 64] log_softmax (as it was a fifth of a 10-class one in double), so, as
// torch's _vec_log_softmax_lastdim does, rows go in groups of one vector's lanes: the maxes
// of the group's rows, then their sums, one vector log over the sums, then each row's shift.
// Taking all maxes before the sums lets the rows' horizontal max and sum chains (dependent
// shuffles, about a fifth of a 64-float row) overlap. Together: [64, 64] 3.2 -> 2.4 us. A group
// stays in L1 for the shift pass when rows are short (one summation block each); longer rows
// go one at a time (the log is then a small part of the row's cost). log_softmax and
// log_softmax_at both take their maxes and log-sums from GroupMaxLogSums, so the fused
// cross_entropy picks the value log_softmax writes.
constexpr int64_t kLogGroupBytes = 32768;

// log of each lane's row sum, as std::log gives it. hn::Log is valid on (0, max]: a sum is
// >= 1 (the max's own exp(0)) unless the max is +inf or -inf, where x - max holds NaN, whose
// hn::Exp is 0, and a sum of 0 must give -inf (then the row's outputs are NaN, as torch's).
template <class D, class V>
V LogOfSums(D d, V s) {
  using T = hn::TFromD<D>;
  const auto zero = hn::Zero(d);
  const auto other = hn::IfThenElse(hn::Eq(s, zero), hn::Set(d, -std::numeric_limits<T>::infinity()), s);
  return hn::IfThenElse(hn::Gt(s, zero), hn::Log(d, s), other);  // NaN stays NaN
}

// One softmax row: max, exp(x - max) summed and stored, then scaled.
template <class T>
void SoftmaxRow(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const T m = MinMaxRun<T, true>(x, n);
  const double total = ExpSumRow<T, true>(x, y, n, m);
  const T inv = static_cast<T>(1.0 / total);
  const auto vinv = hn::Set(d, inv);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vinv), d, y + i);
  for (; i < n; ++i) y[i] *= inv;
}

// softmax of `rows` contiguous rows of n.
template <class T>
void SoftmaxRows(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow<T>(x + r * n, y + r * n, n);
}

// Grouped rows are one summation block each (Note [Cascade summation]); a group is at most
// kMaxGroup rows (the lanes of a 512-bit float vector), whose sum vectors wait in a buffer.
constexpr int64_t kMaxGroup = 16;

// The maxes m[j] and log-sums ls[j] (LogOfSums) of the k <= kMaxGroup contiguous rows of n at
// x: the maxes first, then the sums' vectors, then their horizontal sums, as each row's
// horizontal max and sum are chains of dependent shuffles, which overlap when independent
// rows' chains sit side by side. ls holds a vector's lanes.
template <class T>
void GroupMaxLogSums(const T* HWY_RESTRICT x, int64_t k, int64_t n, T* HWY_RESTRICT m, T* HWY_RESTRICT ls) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t j = 0; j < k; ++j) m[j] = MinMaxRun<T, true>(x + j * n, n);
  if (n <= kSumBlock) {  // ExpSumRow's sum of one block, inlined
    HWY_ALIGN T acc[kMaxGroup * hn::MaxLanes(d)];
    for (int64_t j = 0; j < k; ++j)
      hn::Store(ExpSumBlock<T, false>(d, x + j * n, static_cast<T*>(nullptr), 0, n, hn::Set(d, m[j])), d, acc + j * N);
    for (int64_t j = 0; j < k; ++j) ls[j] = hn::GetLane(hn::SumOfLanes(d, hn::Load(d, acc + j * N)));
  } else {
    for (int64_t j = 0; j < k; ++j) ls[j] = static_cast<T>(ExpSumRow<T, false>(x + j * n, nullptr, n, m[j]));
  }
  std::fill(ls + k, ls + N, T(1));
  hn::Store(LogOfSums(d, hn::Load(d, ls)), d, ls);
}

// log_softmax of `rows` contiguous rows of n (Note [Log-softmax row groups]).
template <class T>
void LogSoftmaxRows(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, int64_t rows, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  // A group stays in L1 for the shift pass; longer rows go one at a time.
  const bool grouped = N > 1 && n <= kSumBlock && n * N * static_cast<int64_t>(sizeof(T)) <= kLogGroupBytes;
  const int64_t group = grouped ? std::min(N, kMaxGroup) : 1;
  HWY_ALIGN T m[hn::MaxLanes(d)];
  HWY_ALIGN T ls[hn::MaxLanes(d)];
  for (int64_t r0 = 0; r0 < rows; r0 += group) {
    const int64_t k = std::min(group, rows - r0);
    GroupMaxLogSums(x + r0 * n, k, n, m, ls);
    for (int64_t j = 0; j < k; ++j) {
      const T* xr = x + (r0 + j) * n;
      T* yr = y + (r0 + j) * n;
      // (x - m) - log(sum), not x - (m + log(sum)): the latter rounds log(sum) at m's magnitude.
      const auto vm = hn::Set(d, m[j]), vl = hn::Set(d, ls[j]);
      int64_t i = 0;
      for (; i + N <= n; i += N) hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, xr + i), vm), vl), d, yr + i);
      for (; i < n; ++i) yr[i] = (xr[i] - m[j]) - ls[j];
    }
  }
}

// Entry t[r] of the log_softmax of each of `rows` contiguous rows of n, by the same
// GroupMaxLogSums as LogSoftmaxRows without writing the rows (one vector log per row was a
// tenth of cross_entropy on [64, 64]).
template <class T>
void LogSoftmaxAtRows(const T* HWY_RESTRICT x, int64_t rows, int64_t n, const int64_t* HWY_RESTRICT t,
                      T* HWY_RESTRICT out) {
  const hn::ScalableTag<T> d;
  const int64_t group = std::min(static_cast<int64_t>(hn::Lanes(d)), kMaxGroup);
  HWY_ALIGN T m[hn::MaxLanes(d)];
  HWY_ALIGN T ls[hn::MaxLanes(d)];
  for (int64_t r0 = 0; r0 < rows; r0 += group) {
    const int64_t k = std::min(group, rows - r0);
    GroupMaxLogSums(x + r0 * n, k, n, m, ls);
    for (int64_t j = 0; j < k; ++j) out[r0 + j] = (x[(r0 + j) * n + t[r0 + j]] - m[j]) - ls[j];
  }
}

// y = exp(x - m) and s += y, elementwise (softmax along an outer dim).
template <class T>
void ExpSubSum(const T* HWY_RESTRICT x, const T* HWY_RESTRICT m, T* HWY_RESTRICT y, T* HWY_RESTRICT s, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), hn::LoadU(d, m + i)));
    hn::StoreU(e, d, y + i);
    hn::StoreU(hn::Add(hn::LoadU(d, s + i), e), d, s + i);
  }
  for (; i < n; ++i) {
    y[i] = std::exp(x[i] - m[i]);
    s[i] += y[i];
  }
}

// Position of the first element equal to v (the first NaN when v is NaN), or n.
template <class T>
int64_t FindFirst(const T* HWY_RESTRICT p, int64_t n, T v) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const bool nan = v != v;
  const auto vv = hn::Set(d, v);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto x = hn::LoadU(d, p + i);
    const intptr_t k = hn::FindFirstTrue(d, nan ? hn::IsNaN(x) : hn::Eq(x, vv));
    if (k >= 0) return i + k;
  }
  for (; i < n; ++i)
    if (nan ? p[i] != p[i] : p[i] == v) return i;
  return n;
}

// One input row r of a column arg-reduction: best/idx take v and r where v is better, or
// where v is the first NaN (Note [Reduction kernels]). I has T's width so lanes line up.
template <class T, class I, bool kMax>
void ColArg(T* HWY_RESTRICT best, I* HWY_RESTRICT idx, const T* HWY_RESTRICT p, int64_t n, I r) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vr = hn::Set(di, r);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto b = hn::LoadU(d, best + i), v = hn::LoadU(d, p + i);
    const auto take = hn::Or(kMax ? hn::Gt(v, b) : hn::Lt(v, b), hn::AndNot(hn::IsNaN(b), hn::IsNaN(v)));
    hn::StoreU(hn::IfThenElse(take, v, b), d, best + i);
    hn::StoreU(hn::IfThenElse(hn::RebindMask(di, take), vr, hn::LoadU(di, idx + i)), di, idx + i);
  }
  for (; i < n; ++i) {
    const T v = p[i];
    if (math::arg_better<kMax>(v, best[i])) best[i] = v, idx[i] = r;
  }
}

}  // namespace

const ReducePrims* GetReducePrims() {
  static const ReducePrims kPrims = {
      &SumRun<float>, &SumRun<double>,
      &MinMaxRun<float, true>, &MinMaxRun<float, false>, &MinMaxRun<double, true>, &MinMaxRun<double, false>,
      &ColSum<float>, &ColSum<double>,
      &ColMinMax<float, true>, &ColMinMax<float, false>, &ColMinMax<double, true>, &ColMinMax<double, false>,
      &SoftmaxRows<float>, &LogSoftmaxRows<float>, &SoftmaxRows<double>, &LogSoftmaxRows<double>,
      &LogSoftmaxAtRows<float>, &LogSoftmaxAtRows<double>,
      &ExpSubSum<float>, &ExpSubSum<double>,
      &FindFirst<float>, &FindFirst<double>,
      &ColArg<float, int32_t, true>, &ColArg<float, int32_t, false>,
      &ColArg<double, int64_t, true>, &ColArg<double, int64_t, false>,
      &ProdRun<float>, &ProdRun<double>,
      &SumSqRun<float>, &SumSqRun<double>, &ColSumSq<float>, &ColSumSq<double>,
      &LayerNormRowF32, &SumDevF32, &SumGxF32, &AffineF32, &AxpbypcF32, &RowMeansF32,
      &SoftplusNeg<float>, &SoftplusNeg<double>};
  return &kPrims;
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(GetReducePrims);

namespace {

// Note [Reduction kernels]
// A reduction is planned once per call: dims of size 1 are dropped, the rest are ordered by
// input stride (memory order; expanded stride-0 dims outermost) and neighbours of the same kind
// (both reduced, or both kept with matching output strides) are merged. Then:
//  - innermost dim reduced with unit stride ("rows"): every output reduces contiguous runs;
//    threads split the outputs, or, when there are few big outputs (under four per thread),
//    split each output's elements and combine the partial results in order;
//  - innermost dim kept with unit stride ("columns", e.g. sum over dim 0): each output tile
//    of up to kColTileBytes is a vector of accumulators in L1 to which whole input rows are
//    added in memory order, so the input streams once; threads split the tiles, or, when
//    there are few tiles, each tile's rows (per-thread buffers combined in order);
//  - anything else (a strided innermost dim) is copied to contiguous first.
// The SIMD work sits in the per-ISA ReducePrims; everything else is plain C++ per dtype.
// Threads start only above kGrain elements, so small reductions never pay for them.

using detail::kGrain;
using detail::threads_for;
constexpr int64_t kColTileBytes = 16384;
constexpr int64_t kFlushRows = 64;
constexpr int kMaxDims = 16;

const ReducePrims& prims() {
  static const ReducePrims* p = HWY_DYNAMIC_DISPATCH(GetReducePrims)();
  return *p;
}

template <class T> struct FloatPrims;
template <> struct FloatPrims<float> {
  static double sum(const float* p, int64_t n) { return prims().sum_f32(p, n); }
  static float max(const float* p, int64_t n) { return prims().max_f32(p, n); }
  static float min(const float* p, int64_t n) { return prims().min_f32(p, n); }
  static void col_sum(float* a, const float* p, int64_t n) { prims().col_sum_f32(a, p, n); }
  static void col_max(float* a, const float* p, int64_t n) { prims().col_max_f32(a, p, n); }
  static void col_min(float* a, const float* p, int64_t n) { prims().col_min_f32(a, p, n); }
  static void softmax(const float* x, float* y, int64_t rows, int64_t n, bool log) {
    (log ? prims().log_softmax_f32 : prims().softmax_f32)(x, y, rows, n);
  }
  static void exp_sub_sum(const float* x, const float* m, float* y, float* s, int64_t n) {
    prims().exp_sub_sum_f32(x, m, y, s, n);
  }
  static int64_t find(const float* p, int64_t n, float v) { return prims().find_f32(p, n, v); }
  static float prod(const float* p, int64_t n) { return prims().prod_f32(p, n); }
  static double sumsq(const float* p, int64_t n) { return prims().sumsq_f32(p, n); }
  static void col_sumsq(float* a, const float* p, int64_t n) { prims().col_sumsq_f32(a, p, n); }
  using index_t = int32_t;
  static void col_arg(bool is_max, float* b, int32_t* i, const float* p, int64_t n, int32_t r) {
    (is_max ? prims().col_argmax_f32 : prims().col_argmin_f32)(b, i, p, n, r);
  }
};
template <> struct FloatPrims<double> {
  static double sum(const double* p, int64_t n) { return prims().sum_f64(p, n); }
  static double max(const double* p, int64_t n) { return prims().max_f64(p, n); }
  static double min(const double* p, int64_t n) { return prims().min_f64(p, n); }
  static void col_sum(double* a, const double* p, int64_t n) { prims().col_sum_f64(a, p, n); }
  static void col_max(double* a, const double* p, int64_t n) { prims().col_max_f64(a, p, n); }
  static void col_min(double* a, const double* p, int64_t n) { prims().col_min_f64(a, p, n); }
  static void softmax(const double* x, double* y, int64_t rows, int64_t n, bool log) {
    (log ? prims().log_softmax_f64 : prims().softmax_f64)(x, y, rows, n);
  }
  static void exp_sub_sum(const double* x, const double* m, double* y, double* s, int64_t n) {
    prims().exp_sub_sum_f64(x, m, y, s, n);
  }
  static int64_t find(const double* p, int64_t n, double v) { return prims().find_f64(p, n, v); }
  static double prod(const double* p, int64_t n) { return prims().prod_f64(p, n); }
  static double sumsq(const double* p, int64_t n) { return prims().sumsq_f64(p, n); }
  static void col_sumsq(double* a, const double* p, int64_t n) { prims().col_sumsq_f64(a, p, n); }
  using index_t = int64_t;
  static void col_arg(bool is_max, double* b, int64_t* i, const double* p, int64_t n, int64_t r) {
    (is_max ? prims().col_argmax_f64 : prims().col_argmin_f64)(b, i, p, n, r);
  }
};

template <class T> constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T> constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T> constexpr bool kIsInt = std::is_integral_v<T>;  // bool included

/// A heap array without std::vector<bool>'s packed bits (threads write neighbouring entries).
template <class T>
struct Buf {
  std::unique_ptr<T[]> p;
  explicit Buf(int64_t n) : p(new T[static_cast<size_t>(std::max<int64_t>(n, 1))]) {}
  T* get() const { return p.get(); }
  T& operator[](int64_t i) const { return p[i]; }
};

// ---- reduction ops ----
// Each op: acc_t (column buffers), wide_t (row results and what blocks combine in), load,
// identity, combine, row (a contiguous run), col (acc[i] op= p[i]), finish (to the output).

// Integers accumulate in uint64_t so that overflow wraps as in PyTorch instead of being UB.
template <class Tin, class Acc>
inline Acc load_as(Tin v) {
  if constexpr (std::is_same_v<Tin, bool>) return Acc(v ? 1 : 0);
  else if constexpr (kIsInt<Tin>) return static_cast<Acc>(static_cast<int64_t>(v));
  else return static_cast<Acc>(v);
}

template <class Tin>
struct SumOp {
  using in_t = Tin;
  using acc_t = std::conditional_t<kIsInt<Tin>, uint64_t, std::conditional_t<kIsHalf<Tin>, float, Tin>>;
  using wide_t = std::conditional_t<std::is_same_v<acc_t, float>, double,
                                    std::conditional_t<std::is_same_v<Tin, complex64>, complex128, acc_t>>;
  static constexpr bool kCascade = !std::is_same_v<acc_t, wide_t>;
  template <class Tout> static constexpr bool accepts() {
    return std::is_same_v<Tout, Tin> || (kIsInt<Tin> && std::is_same_v<Tout, int64_t>) ||
           (kIsHalf<Tin> && std::is_same_v<Tout, float>);
  }
  static acc_t load(Tin v) { return load_as<Tin, acc_t>(v); }
  static wide_t identity() { return wide_t(0); }
  static acc_t acc_identity() { return acc_t(0); }
  static wide_t combine(wide_t a, wide_t b) { return a + b; }
  static wide_t row(const Tin* p, int64_t n) {
    if constexpr (kIsFloat<Tin>) {
      if (n >= 32) return static_cast<wide_t>(FloatPrims<Tin>::sum(p, n));
      wide_t s = 0;
      for (int64_t i = 0; i < n; ++i) s += p[i];
      return s;
    } else if constexpr (kIsInt<Tin>) {
      uint64_t s = 0;
      for (int64_t i = 0; i < n; ++i) s += load(p[i]);
      return s;
    } else {  // half types and complex: blocks in acc_t, totals in wide_t (Note [Cascade summation])
      wide_t total = 0;
      for (int64_t i = 0; i < n;) {
        const int64_t e = std::min(n, i + 256);
        acc_t s0 = 0, s1 = 0;
        for (; i + 2 <= e; i += 2) {
          s0 += load(p[i]);
          s1 += load(p[i + 1]);
        }
        if (i < e) s0 += load(p[i++]);
        total += static_cast<wide_t>(s0 + s1);
      }
      return total;
    }
  }
  static void col(acc_t* a, const Tin* p, int64_t n) {
    if constexpr (kIsFloat<Tin>) {
      if (n >= 16) return FloatPrims<Tin>::col_sum(a, p, n);  // short ones are not worth a call
    }
    for (int64_t i = 0; i < n; ++i) a[i] += load(p[i]);
  }
  static void flush(wide_t* w, acc_t* a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      w[i] += static_cast<wide_t>(a[i]);
      a[i] = acc_t(0);
    }
  }
  template <class Tout> static Tout finish(wide_t v) {
    if constexpr (kIsInt<Tin>) return convert<Tout>(static_cast<int64_t>(v));
    else return convert<Tout>(v);
  }
};

template <class Tin>
struct ProdOp {
  using in_t = Tin;
  using acc_t = std::conditional_t<kIsInt<Tin>, uint64_t, std::conditional_t<kIsHalf<Tin>, float, Tin>>;
  using wide_t = acc_t;
  static constexpr bool kCascade = false;
  template <class Tout> static constexpr bool accepts() { return SumOp<Tin>::template accepts<Tout>(); }
  static acc_t load(Tin v) { return load_as<Tin, acc_t>(v); }
  static wide_t identity() { return wide_t(1); }
  static acc_t acc_identity() { return acc_t(1); }
  static wide_t combine(wide_t a, wide_t b) { return a * b; }
  static wide_t row(const Tin* p, int64_t n) {
    if constexpr (kIsFloat<Tin>) {
      if (n >= 32) return FloatPrims<Tin>::prod(p, n);
    }
    wide_t r = 1;
    for (int64_t i = 0; i < n; ++i) r *= load(p[i]);
    return r;
  }
  static void col(acc_t* a, const Tin* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) a[i] *= load(p[i]);
  }
  static void flush(wide_t*, acc_t*, int64_t) {}
  template <class Tout> static Tout finish(wide_t v) { return SumOp<Tin>::template finish<Tout>(v); }
};

// Note [Fused 2-norm]
// norm(x, 2) composed of public ops is x * x into a fresh tensor (for 16M floats, 64 MB of
// new pages), then a sum over it, then a sqrt: three passes. This op squares as it reads,
// accumulating as SumOp does (float blocks into double, Note [Cascade summation]), and takes
// the square root of the double total, so it also rounds once where the composite rounded
// every square. float32 and float64 inputs; the output has the input's dtype.
template <class Tin>
struct Norm2Op {
  static_assert(kIsFloat<Tin>, "Norm2Op: float32 and float64 only");
  using in_t = Tin;
  using acc_t = Tin;
  using wide_t = double;
  static constexpr bool kCascade = std::is_same_v<Tin, float>;
  template <class Tout> static constexpr bool accepts() { return std::is_same_v<Tout, Tin>; }
  static wide_t identity() { return 0; }
  static acc_t acc_identity() { return 0; }
  static wide_t combine(wide_t a, wide_t b) { return a + b; }
  static wide_t row(const Tin* p, int64_t n) {
    if (n >= 32) return FloatPrims<Tin>::sumsq(p, n);
    wide_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<wide_t>(p[i]) * static_cast<wide_t>(p[i]);
    return s;
  }
  static void col(acc_t* a, const Tin* p, int64_t n) {
    if (n >= 16) return FloatPrims<Tin>::col_sumsq(a, p, n);
    for (int64_t i = 0; i < n; ++i) a[i] += p[i] * p[i];
  }
  static void flush(wide_t* w, acc_t* a, int64_t n) {
    if constexpr (kCascade) {
      for (int64_t i = 0; i < n; ++i) {
        w[i] += static_cast<wide_t>(a[i]);
        a[i] = acc_t(0);
      }
    }
  }
  template <class Tout> static Tout finish(wide_t v) { return static_cast<Tout>(std::sqrt(v)); }
};

template <class Tin, bool kMax>
struct MinMaxOp {
  using in_t = Tin;
  using acc_t = std::conditional_t<kIsHalf<Tin>, float, Tin>;
  using wide_t = acc_t;
  static constexpr bool kCascade = false;
  static constexpr bool kFloating = std::is_floating_point_v<acc_t>;
  template <class Tout> static constexpr bool accepts() { return std::is_same_v<Tout, Tin>; }
  static acc_t load(Tin v) { return static_cast<acc_t>(v); }
  static wide_t identity() {
    using L = std::numeric_limits<acc_t>;
    if constexpr (kFloating) return kMax ? -L::infinity() : L::infinity();
    else return kMax ? L::lowest() : L::max();
  }
  static acc_t acc_identity() { return identity(); }
  static wide_t combine(wide_t a, wide_t b) { return math::minmax_propagate_nan<kMax>(a, b); }
  static wide_t row(const Tin* p, int64_t n) {
    if constexpr (kIsFloat<Tin>) {
      if (n >= 16) return kMax ? FloatPrims<Tin>::max(p, n) : FloatPrims<Tin>::min(p, n);
    }
    wide_t r = identity();
    for (int64_t i = 0; i < n; ++i) r = combine(r, load(p[i]));
    return r;
  }
  static void col(acc_t* a, const Tin* p, int64_t n) {
    if constexpr (kIsFloat<Tin>) {
      if (n >= 16) return kMax ? FloatPrims<Tin>::col_max(a, p, n) : FloatPrims<Tin>::col_min(a, p, n);
    }
    for (int64_t i = 0; i < n; ++i) a[i] = combine(a[i], load(p[i]));
  }
  static void flush(wide_t*, acc_t*, int64_t) {}
  template <class Tout> static Tout finish(wide_t v) { return convert<Tout>(v); }
};

template <class Tin, bool kAny>
struct AnyAllOp {
  using in_t = Tin;
  using acc_t = bool;
  using wide_t = bool;
  static constexpr bool kCascade = false;
  template <class Tout> static constexpr bool accepts() { return std::is_same_v<Tout, bool>; }
  static bool load(Tin v) {
    if constexpr (kIsHalf<Tin>) return static_cast<float>(v) != 0.f;
    else return v != Tin(0);
  }
  static bool identity() { return !kAny; }
  static bool acc_identity() { return !kAny; }
  static bool combine(bool a, bool b) { return kAny ? (a || b) : (a && b); }
  // Stops at the first block that decides the answer.
  static bool row(const Tin* p, int64_t n) {
    for (int64_t i = 0; i < n;) {
      const int64_t e = std::min(n, i + 256);
      bool r = !kAny;
      if constexpr (kAny) for (; i < e; ++i) r |= load(p[i]);
      else for (; i < e; ++i) r &= load(p[i]);
      if (r == kAny) return kAny;
    }
    return !kAny;
  }
  static void col(bool* a, const Tin* p, int64_t n) {
    if constexpr (kAny) for (int64_t i = 0; i < n; ++i) a[i] |= load(p[i]);
    else for (int64_t i = 0; i < n; ++i) a[i] &= load(p[i]);
  }
  static void flush(bool*, bool*, int64_t) {}
  template <class Tout> static Tout finish(bool v) { return convert<Tout>(v); }
};

// ---- planning (Note [Reduction kernels]) ----
struct RDim {
  int64_t size = 1, in_stride = 0, out_stride = 0;
  bool reduced = false;
};
using RDims = SmallVector<RDim, 8>;

/// A set of dims walked in row-major order with two offsets (input, output) per position.
struct DimSet {
  int n = 0;
  int64_t size[kMaxDims], s0[kMaxDims], s1[kMaxDims];
  void push(int64_t sz, int64_t a, int64_t b) {
    size[n] = sz;
    s0[n] = a;
    s1[n] = b;
    ++n;
  }
  int64_t numel() const {
    int64_t r = 1;
    for (int k = 0; k < n; ++k) r *= size[k];
    return r;
  }
};
struct Cursor {
  int64_t idx[kMaxDims];
  int64_t off0 = 0, off1 = 0;
  void set(const DimSet& ds, int64_t linear) {
    off0 = off1 = 0;
    for (int k = ds.n - 1; k >= 0; --k) {
      idx[k] = linear % ds.size[k];
      linear /= ds.size[k];
      off0 += idx[k] * ds.s0[k];
      off1 += idx[k] * ds.s1[k];
    }
  }
  void next(const DimSet& ds) {
    for (int k = ds.n - 1; k >= 0; --k) {
      off0 += ds.s0[k];
      off1 += ds.s1[k];
      if (++idx[k] < ds.size[k]) return;
      off0 -= idx[k] * ds.s0[k];
      off1 -= idx[k] * ds.s1[k];
      idx[k] = 0;
    }
  }
};

/// `out` has in's dims minus the reduced ones, or all of them when keepdim kept them.
RDims make_dims(const Tensor& in, uint64_t mask, const Tensor& out) {
  const int64_t nd = in.dim();
  const bool keep = out.dim() == nd;
  RDims dims;
  int64_t j = 0;
  for (int64_t d = 0; d < nd; ++d) {
    const bool red = (mask >> d) & 1;
    const int64_t os = red ? 0 : out.stride(j);
    if (!red || keep) ++j;
    if (in.size(d) == 1) continue;
    dims.push_back(RDim{in.size(d), in.stride(d), os, red});
  }
  // Stable insertion sort, largest stride first: a handful of dims, and no temporary buffer
  // (std::stable_sort allocates one on every call).
  auto key = [](const RDim& r) { return r.in_stride == 0 ? std::numeric_limits<int64_t>::max() : r.in_stride; };
  for (size_t i = 1; i < dims.size(); ++i) {
    const RDim cur = dims[i];
    size_t k = i;
    for (; k > 0 && key(dims[k - 1]) < key(cur); --k) dims[k] = dims[k - 1];
    dims[k] = cur;
  }
  RDims merged;
  for (const RDim& dm : dims) {
    if (!merged.empty()) {
      RDim& o = merged.back();
      if (o.reduced == dm.reduced && o.in_stride == dm.in_stride * dm.size && o.out_stride == dm.out_stride * dm.size) {
        o.size *= dm.size;
        o.in_stride = dm.in_stride;
        o.out_stride = dm.out_stride;
        continue;
      }
    }
    merged.push_back(dm);
  }
  if (merged.empty()) merged.push_back(RDim{1, 1, 0, true});
  return merged;
}

inline const RDim& innermost(const RDims& dims) { return dims[dims.size() - 1]; }

bool fits(const RDims& dims) {
  int kept = 0, red = 0;
  for (const RDim& d : dims) (d.reduced ? red : kept)++;
  return kept <= kMaxDims && red <= kMaxDims;
}

/// The plan for `in`, copying it to contiguous when its innermost dim is strided.
RDims plan(Tensor& in, uint64_t mask, const Tensor& out) {
  RDims dims = make_dims(in, mask, out);
  if (innermost(dims).in_stride != 1 || !fits(dims)) {
    in = in.contiguous();
    dims = make_dims(in, mask, out);
  }
  TENSOR_CHECK(fits(dims), "reduction: more than {} dims that cannot be merged are not supported (input {})", kMaxDims,
               in.describe());
  return dims;
}

void split_dims(const RDims& dims, DimSet& kept, DimSet& red) {
  for (size_t k = 0; k + 1 < dims.size(); ++k)
    (dims[k].reduced ? red : kept).push(dims[k].size, dims[k].in_stride, dims[k].out_stride);
}


/// f(begin, end) over nt contiguous chunks of [0, n), chunk t on thread t.
template <class F>
void parallel_ranges(int64_t n, int nt, const F& f) {
  if (nt <= 1 || n <= 1) {
    if (n > 0) f(int64_t(0), n);
    return;
  }
  nt = static_cast<int>(std::min<int64_t>(nt, n));
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t b = n * t / T, e = n * (t + 1) / T;
    if (b < e) f(b, e);
  }
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Innermost dim reduced and contiguous.
template <class Op, class Tout>
void reduce_rows(const RDims& dims, const typename Op::in_t* in, Tout* out) {
  using Tin = typename Op::in_t;
  using W = typename Op::wide_t;
  const int64_t L = innermost(dims).size;
  DimSet kept, red;
  split_dims(dims, kept, red);
  const int64_t n_out = kept.numel(), n_red = red.numel() * L;
  // One output's reduction over the linear range [b, e) of its reduced elements.
  auto reduce_range = [&](const Tin* base, int64_t b, int64_t e) -> W {
    if (red.n == 0) return Op::row(base + b, e - b);
    Cursor rc;
    rc.set(red, b / L);
    int64_t o = b % L;
    W acc = Op::identity();
    for (int64_t pos = b; pos < e;) {
      const int64_t len = std::min(L - o, e - pos);
      acc = Op::combine(acc, Op::row(base + rc.off0 + o, len));
      pos += len;
      o = 0;
      rc.next(red);
    }
    return acc;
  };
  const int nt = threads_for(n_out * n_red);
  // Few big outputs (fewer than 4 per thread): splitting each one keeps threads equally busy.
  if (nt <= 1 || n_out >= 4 * nt || n_red < kGrain) {
    parallel_ranges(n_out, nt, [&](int64_t b, int64_t e) {
      Cursor kc;
      kc.set(kept, b);
      for (int64_t o = b; o < e; ++o) {
        out[kc.off1] = Op::template finish<Tout>(reduce_range(in + kc.off0, 0, n_red));
        kc.next(kept);
      }
    });
    return;
  }
  // Threads split each output's elements; partials combine in order.
  Buf<W> part(nt);
  Cursor kc;
  kc.set(kept, 0);
  for (int64_t o = 0; o < n_out; ++o) {
    for (int t = 0; t < nt; ++t) part[t] = Op::identity();
    parallel_ranges(n_red, nt,
                    [&](int64_t b, int64_t e) { part[omp_get_thread_num()] = reduce_range(in + kc.off0, b, e); });
    W acc = part[0];
    for (int t = 1; t < nt; ++t) acc = Op::combine(acc, part[t]);
    out[kc.off1] = Op::template finish<Tout>(acc);
    kc.next(kept);
  }
}

// Innermost dim kept and contiguous: whole input rows are combined into a tile of accumulators.
template <class Op, class Tout>
void reduce_cols(const RDims& dims, const typename Op::in_t* in, Tout* out) {
  using Tin = typename Op::in_t;
  using A = typename Op::acc_t;
  using W = typename Op::wide_t;
  const int64_t width = innermost(dims).size, ow = innermost(dims).out_stride;
  DimSet kept, red;
  split_dims(dims, kept, red);
  const int64_t n_ko = kept.numel(), n_r = red.numel();
  const int nt = threads_for(n_ko * n_r * width);
  // With few tiles, threads split the rows instead (below): each then streams whole rows, which
  // beats narrower tiles that would read each row in short pieces.
  const int64_t tile = std::min<int64_t>(width, kColTileBytes / static_cast<int64_t>(sizeof(A)));
  const int64_t tiles = ceil_div(width, tile), units = n_ko * tiles;

  // Rows [rb, re) of the reduced space, columns [0, w) from base, into a (and wb when cascading).
  auto accumulate = [&](const Tin* base, int64_t rb, int64_t re, int64_t w, A* a, W* wb) {
    Cursor rc;
    rc.set(red, rb);
    [[maybe_unused]] int64_t since_flush = 0;
    for (int64_t r = rb; r < re; ++r) {
      Op::col(a, base + rc.off0, w);
      rc.next(red);
      if constexpr (Op::kCascade) {
        if (++since_flush == kFlushRows) {
          Op::flush(wb, a, w);
          since_flush = 0;
        }
      }
    }
    if constexpr (Op::kCascade) Op::flush(wb, a, w);
  };
  auto store = [&](Tout* o, const W* v, int64_t w) {
    for (int64_t j = 0; j < w; ++j) o[j * ow] = Op::template finish<Tout>(v[j]);
  };

  if (nt <= 1 || units >= 4 * nt || n_r < 4 * nt) {
    parallel_ranges(units, nt, [&](int64_t ub, int64_t ue) {
      Buf<A> a(tile);
      Buf<W> wb(Op::kCascade ? tile : 1);
      Cursor kc;
      for (int64_t u = ub; u < ue; ++u) {
        const int64_t c0 = (u % tiles) * tile, w = std::min(tile, width - c0);
        kc.set(kept, u / tiles);
        std::fill(a.get(), a.get() + w, Op::acc_identity());
        if constexpr (Op::kCascade) {
          std::fill(wb.get(), wb.get() + w, Op::identity());
          accumulate(in + kc.off0 + c0, 0, n_r, w, a.get(), wb.get());
          store(out + kc.off1 + c0 * ow, wb.get(), w);
        } else {
          accumulate(in + kc.off0 + c0, 0, n_r, w, a.get(), nullptr);
          store(out + kc.off1 + c0 * ow, a.get(), w);
        }
      }
    });
    return;
  }
  // Few tiles (narrow outputs): threads split the rows of each tile, which also balances them.
  Buf<W> part(nt * tile);
  Cursor kc;
  for (int64_t u = 0; u < units; ++u) {
    const int64_t c0 = (u % tiles) * tile, w = std::min(tile, width - c0);
    kc.set(kept, u / tiles);
    std::fill(part.get(), part.get() + nt * w, Op::identity());
    const Tin* base = in + kc.off0 + c0;
    parallel_ranges(n_r, nt, [&](int64_t rb, int64_t re) {
      W* mine = part.get() + omp_get_thread_num() * w;
      if constexpr (Op::kCascade) {
        Buf<A> a(w);
        std::fill(a.get(), a.get() + w, Op::acc_identity());
        accumulate(base, rb, re, w, a.get(), mine);
      } else {
        accumulate(base, rb, re, w, mine, nullptr);
      }
    });
    for (int t = 1; t < nt; ++t)
      for (int64_t j = 0; j < w; ++j) part[j] = Op::combine(part[j], part[t * w + j]);
    store(out + kc.off1 + c0 * ow, part.get(), w);
  }
}

template <class Op>
void run_reduce(const RDims& dims, const Tensor& in, const Tensor& out) {
  using Tin = typename Op::in_t;
  const Tin* ip = static_cast<const Tin*>(in.data_ptr());
  visit_dtype(out.dtype(), "reduce", [&](auto tag) {
    using Tout = typename decltype(tag)::type;
    if constexpr (Op::template accepts<Tout>()) {
      Tout* op = static_cast<Tout*>(out.data_ptr());
      if (innermost(dims).reduced) reduce_rows<Op, Tout>(dims, ip, op);
      else reduce_cols<Op, Tout>(dims, ip, op);
    } else {
      TENSOR_INTERNAL_ASSERT(false && "reduce_kernel: output dtype not supported for this input dtype");
    }
  });
}

// ---- max/min with indices ----
// A later element replaces the best when math::arg_better says so: strictly better, or the
// first NaN; so ties keep the lowest index.
template <class T, bool kMax>
void arg_reduce_impl(const RDims& dims, const T* in, T* vals, int64_t* idx) {
  using V = opmath_t<T>;
  int64_t R = 1, rs = 0;
  DimSet kept;
  for (const RDim& d : dims) {
    if (d.reduced) {
      R = d.size;
      rs = d.in_stride;
    } else {
      kept.push(d.size, d.in_stride, d.out_stride);
    }
  }
  const RDim& inner = innermost(dims);
  const bool columns = !inner.reduced && inner.in_stride == 1 && inner.size >= 16;
  if (!columns) {  // one strided scan per output
    const int64_t n_out = kept.numel();
    parallel_ranges(n_out, threads_for(n_out * R), [&](int64_t b, int64_t e) {
      Cursor kc;
      kc.set(kept, b);
      for (int64_t o = b; o < e; ++o) {
        const T* p = in + kc.off0;
        if constexpr (kIsFloat<T>) {
          // Two vector passes over the (cached) row beat one scalar compare-and-track pass.
          if (rs == 1 && R >= 16) {
            const T m = kMax ? FloatPrims<T>::max(p, R) : FloatPrims<T>::min(p, R);
            const int64_t at = FloatPrims<T>::find(p, R, m);
            if (vals) vals[kc.off1] = p[at];
            idx[kc.off1] = at;
            kc.next(kept);
            continue;
          }
        }
        V best = static_cast<V>(p[0]);
        int64_t bi = 0;
        if (rs == 1) {
          for (int64_t r = 1; r < R; ++r)
            if (math::arg_better<kMax>(static_cast<V>(p[r]), best)) best = static_cast<V>(p[r]), bi = r;
        } else {
          for (int64_t r = 1; r < R; ++r)
            if (math::arg_better<kMax>(static_cast<V>(p[r * rs]), best)) best = static_cast<V>(p[r * rs]), bi = r;
        }
        if (vals) vals[kc.off1] = convert<T>(best);
        idx[kc.off1] = bi;
        kc.next(kept);
      }
    });
    return;
  }
  // Columns: a tile of (best, index) pairs takes the input rows in memory order.
  DimSet outer;
  for (int k = 0; k + 1 < kept.n; ++k) outer.push(kept.size[k], kept.s0[k], kept.s1[k]);
  const int64_t width = inner.size, ow = inner.out_stride, n_ko = outer.numel();
  const int nt = threads_for(n_ko * R * width);
  int64_t tile = std::min<int64_t>(width, 1024);
  if (nt > 1 && n_ko * ceil_div(width, tile) < nt) tile = std::max<int64_t>(16, ceil_div(width, ceil_div(nt, n_ko)));
  const int64_t tiles = ceil_div(width, tile);
  if constexpr (kIsFloat<T>) {
    using I = typename FloatPrims<T>::index_t;
    if (R <= std::numeric_limits<I>::max()) {
      parallel_ranges(n_ko * tiles, nt, [&](int64_t ub, int64_t ue) {
        Buf<T> best(tile);
        Buf<I> bi(tile);
        Cursor kc;
        for (int64_t u = ub; u < ue; ++u) {
          const int64_t c0 = (u % tiles) * tile, w = std::min(tile, width - c0);
          kc.set(outer, u / tiles);
          const T* base = in + kc.off0 + c0;
          std::copy(base, base + w, best.get());
          std::fill(bi.get(), bi.get() + w, I(0));
          for (int64_t r = 1; r < R; ++r)
            FloatPrims<T>::col_arg(kMax, best.get(), bi.get(), base + r * rs, w, static_cast<I>(r));
          for (int64_t j = 0; j < w; ++j) {
            if (vals) vals[kc.off1 + (c0 + j) * ow] = best[j];
            idx[kc.off1 + (c0 + j) * ow] = bi[j];
          }
        }
      });
      return;
    }
  }
  parallel_ranges(n_ko * tiles, nt, [&](int64_t ub, int64_t ue) {
    Buf<V> best(tile);
    Buf<int64_t> bi(tile);
    Cursor kc;
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t c0 = (u % tiles) * tile, w = std::min(tile, width - c0);
      kc.set(outer, u / tiles);
      const T* base = in + kc.off0 + c0;
      for (int64_t j = 0; j < w; ++j) best[j] = static_cast<V>(base[j]), bi[j] = 0;
      for (int64_t r = 1; r < R; ++r) {
        const T* p = base + r * rs;
        for (int64_t j = 0; j < w; ++j) {
          const V v = static_cast<V>(p[j]);
          if (math::arg_better<kMax>(v, best[j])) best[j] = v, bi[j] = r;
        }
      }
      for (int64_t j = 0; j < w; ++j) {
        if (vals) vals[kc.off1 + (c0 + j) * ow] = convert<T>(best[j]);
        idx[kc.off1 + (c0 + j) * ow] = bi[j];
      }
    }
  });
}

// ---- cumsum / cumprod ----
template <class T>
using ScanAcc = std::conditional_t<
    kIsInt<T>, uint64_t,
    std::conditional_t<kIsHalf<T>, float,
                       std::conditional_t<std::is_same_v<T, float>, double,
                                          std::conditional_t<std::is_same_v<T, complex64>, complex128, T>>>>;

template <class T, bool kProd>
void cumulative_impl(const T* in, T* out, int64_t outer, int64_t R, int64_t inner) {
  using A = ScanAcc<T>;
  auto fin = [](A a) -> T {
    if constexpr (kIsInt<T>) return convert<T>(static_cast<int64_t>(a));
    else return convert<T>(a);
  };
  const int nt = threads_for(outer * R * inner);
  if (inner == 1) {
    parallel_ranges(outer, nt, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* p = in + o * R;
        T* q = out + o * R;
        A acc = A(kProd ? 1 : 0);
        for (int64_t r = 0; r < R; ++r) {
          if constexpr (kProd) acc *= load_as<T, A>(p[r]);
          else acc += load_as<T, A>(p[r]);
          q[r] = fin(acc);
        }
      }
    });
    return;
  }
  const int64_t tile = std::min<int64_t>(inner, 1024), tiles = ceil_div(inner, tile);
  parallel_ranges(outer * tiles, nt, [&](int64_t ub, int64_t ue) {
    Buf<A> acc(tile);
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t o = u / tiles, c0 = (u % tiles) * tile, w = std::min(tile, inner - c0);
      std::fill(acc.get(), acc.get() + w, A(kProd ? 1 : 0));
      for (int64_t r = 0; r < R; ++r) {
        const T* p = in + (o * R + r) * inner + c0;
        T* q = out + (o * R + r) * inner + c0;
        for (int64_t j = 0; j < w; ++j) {
          if constexpr (kProd) acc[j] *= load_as<T, A>(p[j]);
          else acc[j] += load_as<T, A>(p[j]);
          q[j] = fin(acc[j]);
        }
      }
    }
  });
}

// ---- softmax ----
template <class T>
void softmax_impl(const T* in, T* out, int64_t outer, int64_t R, int64_t inner, bool log) {
  // exp costs about as much as a few memory passes: start threads at a quarter of the grain.
  const int nt = threads_for(outer * R * inner * 4);
  if (inner == 1) {
    parallel_ranges(outer, nt, [&](int64_t b, int64_t e) {
      FloatPrims<T>::softmax(in + b * R, out + b * R, e - b, R, log);
    });
    return;
  }
  // Softmax along an outer dim: vectors of `inner` columns hold the running max and sum. Wide
  // tiles stream better than tiles narrow enough to stay in L2 across the passes (measured).
  const int64_t tile = std::min<int64_t>(inner, 1024), tiles = ceil_div(inner, tile);
  parallel_ranges(outer * tiles, nt, [&](int64_t ub, int64_t ue) {
    Buf<T> m(tile), s(tile);
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t o = u / tiles, c0 = (u % tiles) * tile, w = std::min(tile, inner - c0);
      const T* x = in + o * R * inner + c0;
      T* y = out + o * R * inner + c0;
      std::fill(m.get(), m.get() + w, -std::numeric_limits<T>::infinity());
      std::fill(s.get(), s.get() + w, T(0));
      for (int64_t r = 0; r < R; ++r) FloatPrims<T>::col_max(m.get(), x + r * inner, w);
      for (int64_t r = 0; r < R; ++r) FloatPrims<T>::exp_sub_sum(x + r * inner, m.get(), y + r * inner, s.get(), w);
      if (!log) {
        for (int64_t j = 0; j < w; ++j) s[j] = T(1) / s[j];
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < w; ++j) y[r * inner + j] *= s[j];
      } else {
        for (int64_t j = 0; j < w; ++j) s[j] = std::log(s[j]);
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < w; ++j) y[r * inner + j] = (x[r * inner + j] - m[j]) - s[j];
      }
    }
  });
}

/// Sizes of `t` split around `dim` into (outer, size(dim), inner); 0-dim tensors are 1, 1, 1.
void split_at(const Tensor& t, int64_t dim, int64_t& outer, int64_t& R, int64_t& inner) {
  outer = 1, R = 1, inner = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) outer *= t.size(d);
    else if (d == dim) R = t.size(d);
    else inner *= t.size(d);
  }
}

}  // namespace

void reduce_kernel(ReduceOp op, const Tensor& in_arg, uint64_t mask, const Tensor& out) {
  TENSOR_INTERNAL_ASSERT(in_arg.numel() > 0 && out.numel() > 0);
  Tensor in = in_arg;
  const RDims dims = plan(in, mask, out);
  // The element type of the visited dtype, for the op templates below.
#define TENSOR_T typename decltype(t)::type
  switch (op) {
    case ReduceOp::Sum:
      visit_dtype(in.dtype(), "sum", [&](auto t) { run_reduce<SumOp<TENSOR_T>>(dims, in, out); });
      break;
    case ReduceOp::Prod:
      visit_dtype(in.dtype(), "prod", [&](auto t) { run_reduce<ProdOp<TENSOR_T>>(dims, in, out); });
      break;
    case ReduceOp::Max:
      visit_dtype<kGroupReal>(in.dtype(), "max", [&](auto t) { run_reduce<MinMaxOp<TENSOR_T, true>>(dims, in, out); });
      break;
    case ReduceOp::Min:
      visit_dtype<kGroupReal>(in.dtype(), "min", [&](auto t) { run_reduce<MinMaxOp<TENSOR_T, false>>(dims, in, out); });
      break;
    case ReduceOp::Any:
      visit_dtype(in.dtype(), "any", [&](auto t) { run_reduce<AnyAllOp<TENSOR_T, true>>(dims, in, out); });
      break;
    case ReduceOp::All:
      visit_dtype(in.dtype(), "all", [&](auto t) { run_reduce<AnyAllOp<TENSOR_T, false>>(dims, in, out); });
      break;
  }
#undef TENSOR_T
}

void norm2_kernel(const Tensor& in_arg, uint64_t mask, const Tensor& out) {
  TENSOR_INTERNAL_ASSERT(in_arg.numel() > 0 && out.numel() > 0 && in_arg.dtype() == out.dtype());
  Tensor in = in_arg;
  const RDims dims = plan(in, mask, out);
  if (in.dtype() == kFloat32) run_reduce<Norm2Op<float>>(dims, in, out);
  else if (in.dtype() == kFloat64) run_reduce<Norm2Op<double>>(dims, in, out);
  else TENSOR_INTERNAL_ASSERT(false && "norm2_kernel: float32 and float64 only");
}

void arg_reduce_kernel(bool is_max, const Tensor& in_arg, int64_t dim, const Tensor& values, const Tensor& indices) {
  TENSOR_INTERNAL_ASSERT(in_arg.numel() > 0 && indices.dtype() == kInt64);
  Tensor in = in_arg;
  const RDims dims = plan(in, uint64_t(1) << dim, indices);
  visit_dtype<kGroupReal>(in.dtype(), is_max ? "max" : "min", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* ip = static_cast<const T*>(in.data_ptr());
    T* vp = values.defined() ? static_cast<T*>(values.data_ptr()) : nullptr;
    int64_t* xp = static_cast<int64_t*>(indices.data_ptr());
    if (is_max) arg_reduce_impl<T, true>(dims, ip, vp, xp);
    else arg_reduce_impl<T, false>(dims, ip, vp, xp);
  });
}

void cumulative_kernel(bool is_prod, const Tensor& in, int64_t dim, const Tensor& out) {
  TENSOR_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous() && in.dtype() == out.dtype());
  int64_t outer, R, inner;
  split_at(in, dim, outer, R, inner);
  visit_dtype(in.dtype(), is_prod ? "cumprod" : "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* ip = static_cast<const T*>(in.data_ptr());
    T* op = static_cast<T*>(out.data_ptr());
    if (is_prod) cumulative_impl<T, true>(ip, op, outer, R, inner);
    else cumulative_impl<T, false>(ip, op, outer, R, inner);
  });
}

void softmax_kernel(const Tensor& in, int64_t dim, bool log, const Tensor& out) {
  TENSOR_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous() && in.dtype() == out.dtype());
  int64_t outer, R, inner;
  split_at(in, dim, outer, R, inner);
  visit_dtype<kGroupFloat>(in.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_impl<T>(static_cast<const T*>(in.data_ptr()), static_cast<T*>(out.data_ptr()), outer, R, inner, log);
  });
}

void log_softmax_at(const float* x, int64_t rows, int64_t n, const int64_t* t, float* out) {
  prims().log_softmax_at_f32(x, rows, n, t, out);
}
void log_softmax_at(const double* x, int64_t rows, int64_t n, const int64_t* t, double* out) {
  prims().log_softmax_at_f64(x, rows, n, t, out);
}

void layer_norm_row(const float* x, float* y, int64_t n, const float* w, const float* b, double eps, double& mean,
                    double& var) {
  prims().layer_norm_row_f32(x, y, n, w, b, eps, &mean, &var);
}

namespace rows {
double sum_f32(const float* x, int64_t n) { return prims().sum_f32(x, n); }
void sum_dev_f32(const float* x, int64_t n, float m, double& sd, double& sq) { prims().sum_dev_f32(x, n, m, &sd, &sq); }
void sum_gx_f32(const float* g, const float* x, int64_t n, double& sgx, double& sg) {
  prims().sum_gx_f32(g, x, n, &sgx, &sg);
}
void affine_f32(const float* x, float* y, int64_t n, float scale, float shift) {
  prims().affine_f32(x, y, n, scale, shift);
}
void axpbypc_f32(const float* g, const float* x, float* y, int64_t n, float a, float b, float e) {
  prims().axpbypc_f32(g, x, y, n, a, b, e);
}
void row_means_f32(const float* x, int64_t rows, int64_t n, float* out) { prims().row_means_f32(x, rows, n, out); }
void softplus_neg(const float* x, float* y, int64_t n) { prims().softplus_neg_f32(x, y, n); }
void softplus_neg(const double* x, double* y, int64_t n) { prims().softplus_neg_f64(x, y, n); }
}  // namespace rows

}  // namespace tensor::cpu
#endif  // HWY_ONCE
