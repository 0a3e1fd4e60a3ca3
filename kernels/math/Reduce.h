// Reduction steps shared by the CPU and CUDA kernels: NaN-propagating max/min, the argmax/argmin
// combine, Welford's mean and variance, and an online logsumexp. Each has an identity (or
// init), a per-element update, a combine of two partial results (for threads, blocks and
// CUDA warps) and, where the result is not the state itself, a project.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/math/Macros.h"

namespace tensor::math {

/// +inf of T; INFINITY rather than std::numeric_limits, whose constexpr host functions nvcc
/// refuses in device code without --expt-relaxed-constexpr.
template <class T>
TENSOR_HD_INLINE T infinity() {
  return static_cast<T>(INFINITY);
}

namespace detail {
// Whether v is NaN; false for integers (no self-comparison for them to warn about).
template <class T>
TENSOR_HD_INLINE bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}
}  // namespace detail

// ---- max / min ----
// A NaN anywhere makes the result NaN (torch.max, amax): b replaces a when it is better or NaN,
// and a NaN accumulator is never replaced, since nothing compares greater or less than it.

/// max(a, b), NaN if either is NaN.
template <class T>
TENSOR_HD_INLINE T max_propagate_nan(T a, T b) {
  return (b > a || detail::is_nan(b)) ? b : a;
}
/// min(a, b), NaN if either is NaN.
template <class T>
TENSOR_HD_INLINE T min_propagate_nan(T a, T b) {
  return (b < a || detail::is_nan(b)) ? b : a;
}
/// The max (kMax) or min, NaN-propagating.
template <bool kMax, class T>
TENSOR_HD_INLINE T minmax_propagate_nan(T a, T b) {
  return kMax ? max_propagate_nan(a, b) : min_propagate_nan(a, b);
}

// ---- argmax / argmin ----
// NaN counts as larger and smaller than everything, so the first NaN wins; among equal values
// the lowest index wins (torch.argmax, torch.max(dim)).

/// Whether `v`, at a later index than `best`'s, replaces it: strictly better, or the first NaN.
template <bool kMax, class T>
TENSOR_HD_INLINE bool arg_better(T v, T best) {
  if constexpr (std::is_floating_point_v<T>) return (kMax ? v > best : v < best) || (v != v && best == best);
  else return kMax ? v > best : v < best;
}

/// A candidate of an argmax/argmin: a value and its index along the reduced dim.
template <class T, class Index = int64_t>
struct ValueIndex {
  T value;
  Index index;
};

/// The winner of two candidates in either order (a parallel combine): a NaN beats a number,
/// a better value beats a worse one, and otherwise the lower index wins.
template <bool kMax, class T, class Index>
TENSOR_HD_INLINE ValueIndex<T, Index> arg_combine(ValueIndex<T, Index> a, ValueIndex<T, Index> b) {
  const bool an = detail::is_nan(a.value), bn = detail::is_nan(b.value);
  bool take_b;
  if (an || bn) take_b = an && bn ? b.index < a.index : bn;
  else if (a.value == b.value) take_b = b.index < a.index;
  else take_b = kMax ? b.value > a.value : b.value < a.value;
  return take_b ? b : a;
}

// ---- Welford ----
// Note [Welford]
// Mean and sum of squared deviations (m2) in one pass: each element moves the mean by
// delta / n, and m2 grows by delta * (x - new mean), which stays accurate where the
// sum-of-squares formula cancels. Partial states (threads, blocks) merge by Chan, Golub and
// LeVeque's update: with delta = mean_b - mean_a and n = n_a + n_b,
//   mean = mean_a + delta * n_b / n,  m2 = m2_a + m2_b + delta^2 * n_a * n_b / n.

/// The state of a Welford reduction over `n` elements. An aggregate: zero-initialize it
/// (`Welford<double> w{}`) or take welford_init().
template <class T>
struct Welford {
  T mean;
  T m2;
  int64_t n;
};

/// The empty state.
template <class T>
TENSOR_HD_INLINE Welford<T> welford_init() {
  return {T(0), T(0), 0};
}
/// `s` with one more element `x`.
template <class T>
TENSOR_HD_INLINE Welford<T> welford_update(Welford<T> s, T x) {
  s.n += 1;
  const T delta = x - s.mean;
  s.mean += delta / static_cast<T>(s.n);
  s.m2 += delta * (x - s.mean);
  return s;
}
/// The state of the union of a's and b's elements (Note [Welford]).
template <class T>
TENSOR_HD_INLINE Welford<T> welford_combine(Welford<T> a, Welford<T> b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  const int64_t n = a.n + b.n;
  const T delta = b.mean - a.mean, nb_over_n = static_cast<T>(b.n) / static_cast<T>(n);
  return {a.mean + delta * nb_over_n, a.m2 + b.m2 + delta * delta * static_cast<T>(a.n) * nb_over_n, n};
}
/// The variance m2 / max(0, n - correction), as torch.var: inf or NaN (0 / 0) when
/// n <= correction.
template <class T>
TENSOR_HD_INLINE T welford_var(Welford<T> s, int64_t correction) {
  const int64_t dof = s.n > correction ? s.n - correction : 0;
  return s.m2 / static_cast<T>(dof);
}
/// sqrt of welford_var.
template <class T>
TENSOR_HD_INLINE T welford_std(Welford<T> s, int64_t correction) {
  using std::sqrt;
  return sqrt(welford_var(s, correction));
}

// ---- logsumexp ----
// Note [Online logsumexp]
// The state is the running max m and s = sum of exp(x - m) over the elements so far; a larger
// element rescales s by exp(m_old - m_new). The result is m + log(s), as PyTorch's
// log(sum(exp(x - m))) + m, with its special cases: an infinite m stands for itself (all -inf
// or nothing gives -inf, any +inf gives +inf) and a NaN anywhere gives NaN. Infinite and NaN
// maxima never enter exp(x - m), where inf - inf would make a NaN of them.

/// The state of an online logsumexp.
template <class T>
struct LogSumExp {
  T max;
  T sum;
};

/// The empty state: max -inf, sum 0 (its result is -inf).
template <class T>
TENSOR_HD_INLINE LogSumExp<T> logsumexp_init() {
  return {-infinity<T>(), T(0)};
}
/// `s` with one more element `x`.
template <class T>
TENSOR_HD_INLINE LogSumExp<T> logsumexp_update(LogSumExp<T> s, T x) {
  using std::exp;
  if (x > s.max) {  // neither is NaN; s.max may be -inf (s.sum is then 0 and exp gives 0)
    s.sum = s.sum * exp(s.max - x) + T(1);
    s.max = x;
  } else if (detail::is_nan(x)) {
    s.max = x;
  } else if (x == s.max) {  // exp(0), and no inf - inf when both are infinite
    s.sum += T(1);
  } else if (!detail::is_nan(s.max)) {  // x < s.max: a finite x or -inf, which adds exp(-inf) = 0
    s.sum += exp(x - s.max);
  }
  return s;
}
/// The state over the union of a's and b's elements.
template <class T>
TENSOR_HD_INLINE LogSumExp<T> logsumexp_combine(LogSumExp<T> a, LogSumExp<T> b) {
  using std::exp;
  if (detail::is_nan(a.max)) return a;
  if (detail::is_nan(b.max)) return b;
  const T m = b.max > a.max ? b.max : a.max;
  if (m == infinity<T>() || m == -infinity<T>())
    return {m, a.sum + b.sum};  // the result is m itself; the sum is not used
  return {m, a.sum * exp(a.max - m) + b.sum * exp(b.max - m)};
}
/// log(sum(exp(x))) over the state's elements.
template <class T>
TENSOR_HD_INLINE T logsumexp_project(LogSumExp<T> s) {
  using std::log;
  if (detail::is_nan(s.max) || s.max == infinity<T>() || s.max == -infinity<T>())
    return s.max;
  return log(s.sum) + s.max;
}

}  // namespace tensor::math
