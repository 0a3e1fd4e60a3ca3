// Plain-loop pooling and normalization (kernels/cpu/PoolNormKernels.h): the float64 path, the fallback
// for dtypes and modes oneDNN lacks, and the reference of the tests. Inputs arrive contiguous;
// weight, bias and statistics arrive in the statistics dtype (float64 for float64 inputs,
// float32 otherwise). Sums accumulate in double, so the float32 results are as close to the
// float64 ones as their rounding allows. Threads split planes, rows or channels; each output
// element is written by one thread, so results do not depend on the thread count.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"
#include "kernels/cpu/PoolNormKernels.h"
#include "kernels/cpu/Reduce.h"

namespace tensor::cpu {
namespace loops {
namespace {

using tensor::detail::kGrain;
using tensor::detail::parallel_range;
using tensor::detail::threads_for;

// The loops over planes, channels and rows run through parallel_range (Note [One-thread
// parallel regions] in src/core/Parallel.h).

template <class T> using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;
template <class T> inline double ld(T v) { return static_cast<double>(static_cast<opmath_t<T>>(v)); }
template <class T> inline T st(double v) { return convert<T>(static_cast<opmath_t<T>>(v)); }

template <class F>
void visit(const Tensor& t, const char* op, F&& f) {
  visit_dtype<kGroupFloating>(t.dtype(), op, std::forward<F>(f));
}

template <class S> const S* opt_ptr(const Tensor& t) { return t.defined() ? t.data_ptr<S>() : nullptr; }
template <class S> S* opt_mut(const Tensor& t) { return t.defined() ? t.data_ptr<S>() : nullptr; }

/// Per-thread partial sums merged at the end (reductions across rows or samples).
struct Partials {
  std::vector<std::vector<double>> bufs;
  Partials(int threads, size_t n) : bufs(static_cast<size_t>(threads), std::vector<double>(n, 0.0)) {}
  double total(size_t i) const {
    double s = 0;
    for (const auto& b : bufs) s += b[i];
    return s;
  }
};


// Note [Blocked float32 sums]
// A `double` simd reduction over float32 converts every element (cvtps2pd) and chains every
// add on one SSE2 accumulator of 2 doubles: on baseline x86-64 it ran at about 2 cycles per
// element, and group_norm and global average pooling were compute bound on it. The float32
// sums below keep float vector accumulators over blocks of 1024 elements and fold every block
// into a double (Note [Cascade summation]): the error stays within a few float32 ulps of the
// block sum, far below the float32 tolerance. They and the float32 affine passes are
// Highway loops (cpu::rows in kernels/cpu/Reduce.h), compiled for the CPU's widest ISA: this
// file is built for the baseline, whose SSE2 loops were the hottest code of group_norm.
using rows::sum_f32;
using rows::sum_dev_f32;
using rows::sum_gx_f32;

// Note [Average pooling divisors]
// libtorch clips each window to the padded input [-pad, size + pad) first; count_include_pad
// divides by that clipped window, otherwise by the part inside the input; divisor_override
// replaces both. Windows that ceil_mode adds past the right padding are therefore smaller than
// the kernel, which oneDNN's include-padding mode does not do (it divides by the kernel size).
struct Window {
  int64_t h0, h1, w0, w1;  // the part inside the input
  int64_t divisor;
};
inline Window avg_window(const Pool2d& p, int64_t oy, int64_t ox) {
  int64_t h0 = oy * p.sh - p.ph, w0 = ox * p.sw - p.pw;
  int64_t h1 = std::min(h0 + p.kh, p.ih + p.ph), w1 = std::min(w0 + p.kw, p.iw + p.pw);
  const int64_t pool = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, p.ih);
  w1 = std::min(w1, p.iw);
  const int64_t div = p.divisor ? p.divisor : p.count_include_pad ? pool : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, div};
}

// libtorch's adaptive window: [floor(i * in / out), ceil((i + 1) * in / out)).
inline int64_t ada_start(int64_t i, int64_t out, int64_t in) { return (i / out) * in + ((i % out) * in) / out; }
inline int64_t ada_end(int64_t i, int64_t out, int64_t in) { return 1 + ((i + 1) * in - 1) / out; }

}  // namespace

/// The kernel taps k in [lo, hi) whose input position start + k * dil lies in [0, size).
inline void tap_range(int64_t start, int64_t k, int64_t dil, int64_t size, int64_t& lo, int64_t& hi) {
  if (dil == 1) {  // no divisions on the common path (they dominated the loop's time)
    lo = std::max<int64_t>(0, -start);
    hi = std::max<int64_t>(0, std::min(k, size - start));
    return;
  }
  lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
  hi = start >= size ? 0 : std::min(k, (size - 1 - start) / dil + 1);
}

// Note [Max pooling fast path]
// Windows wholly inside the input (no padding, dilation 1, no ceil_mode overhang) with a
// fixed 2x2 or 3x3 kernel take an unrolled loop whose selects the compiler vectorizes across
// output columns (omp simd): no tap ranges, no per-window index arithmetic beyond one add.
// Same rule as the general loop (the first maximum wins, a NaN wins over everything, the last
// NaN over earlier ones), so values and indices are identical. max_pool2d_with_indices on
// (64, 32, 28, 28) float 2x2, one thread, A/B in one session: 3.9 ms -> 0.97 ms (the
// general loop's tap ranges and index arithmetic per window dominated).
// take ? a : b on the bits: the compiler keeps it branch-free (a branch mispredicts on random data).
template <class T>
inline T select(int64_t take, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  U ua, ub;
  std::memcpy(&ua, &a, sizeof(T));
  std::memcpy(&ub, &b, sizeof(T));
  const U m = static_cast<U>(0) - static_cast<U>(take);
  ub = (ua & m) | (ub & ~m);
  std::memcpy(&b, &ub, sizeof(T));
  return b;
}

template <int KH, int KW, class T>
void max_pool2d_fixed(const T* xd, T* od, int64_t* id, const Pool2d& p) {
  const int64_t P = p.planes(), in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
  const int64_t iw = p.iw, ow = p.ow, sh = p.sh, sw = p.sw;
  parallel_range(P, threads_for(P * out_plane * KH * KW), [&](int64_t pl0, int64_t pl1) {
    for (int64_t pl = pl0; pl < pl1; ++pl) {
      const T* xp = xd + pl * in_plane;
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        const int64_t rbase = oy * sh * iw;
        T* orow = od + pl * out_plane + oy * ow;
        int64_t* irow = id ? id + pl * out_plane + oy * ow : nullptr;
        if (irow) {
#pragma omp simd
          for (int64_t ox = 0; ox < ow; ++ox) {
            const int64_t b0 = rbase + ox * sw;
            T best = xp[b0];
            int64_t bi = b0;
            for (int ky = 0; ky < KH; ++ky)
              for (int kx = 0; kx < KW; ++kx) {
                if (ky == 0 && kx == 0) continue;
                const int64_t i = b0 + ky * iw + kx;
                const T v = xp[i];
                const int64_t take = static_cast<int64_t>((v > best) | (v != v));
                best = select(take, v, best);
                bi ^= (bi ^ i) & -take;
              }
            orow[ox] = best;
            irow[ox] = bi;
          }
        } else {
#pragma omp simd
          for (int64_t ox = 0; ox < ow; ++ox) {
            const int64_t b0 = rbase + ox * sw;
            T best = xp[b0];
            for (int ky = 0; ky < KH; ++ky)
              for (int kx = 0; kx < KW; ++kx) {
                if (ky == 0 && kx == 0) continue;
                const T v = xp[b0 + ky * iw + kx];
                best = select(static_cast<int64_t>((v > best) | (v != v)), v, best);
              }
            orow[ox] = best;
          }
        }
      }
    }
  });
}

template <class T>
bool max_pool2d_fast(const T* xd, T* od, int64_t* id, const Pool2d& p) {
  if (!od || p.ph != 0 || p.pw != 0 || p.dh != 1 || p.dw != 1) return false;
  if ((p.oh - 1) * p.sh + p.kh > p.ih || (p.ow - 1) * p.sw + p.kw > p.iw) return false;
  if (p.kh == 2 && p.kw == 2) max_pool2d_fixed<2, 2>(xd, od, id, p);
  else if (p.kh == 3 && p.kw == 3) max_pool2d_fixed<3, 3>(xd, od, id, p);
  else return false;
  return true;
}

void max_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out, const Tensor& indices) {
  visit(x, "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = opmath_t<T>;
    const T* xd = x.data_ptr<T>();
    T* od = out.defined() ? out.data_ptr<T>() : nullptr;
    int64_t* id = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
    if constexpr (std::is_same_v<T, O>) {
      if (max_pool2d_fast(xd, od, id, p)) return;
    }
    const int64_t P = p.planes(), in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    parallel_range(P, threads_for(P * out_plane * p.kh * p.kw), [&](int64_t pl0, int64_t pl1) {
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        const T* xp = xd + pl * in_plane;
        for (int64_t oy = 0; oy < p.oh; ++oy) {
          const int64_t h0 = oy * p.sh - p.ph;
          int64_t ky0, ky1;
          tap_range(h0, p.kh, p.dh, p.ih, ky0, ky1);
          for (int64_t ox = 0; ox < p.ow; ++ox) {
            const int64_t w0 = ox * p.sw - p.pw;
            int64_t kx0, kx1;
            tap_range(w0, p.kw, p.dw, p.iw, kx0, kx1);
            const int64_t o = pl * out_plane + oy * p.ow + ox;
            if (ky0 >= ky1 || kx0 >= kx1) {
              // Dilated taps can all miss a tiny input: -inf and no index (backward skips it).
              if (od) od[o] = convert<T>(-std::numeric_limits<O>::infinity());
              if (id) id[o] = -1;
              continue;
            }
            // libtorch's rule: the first maximum wins, and any NaN (the last one) wins.
            int64_t bi = (h0 + ky0 * p.dh) * p.iw + w0 + kx0 * p.dw;
            O best = static_cast<O>(xp[bi]);
            for (int64_t ky = ky0; ky < ky1; ++ky) {
              const int64_t row = (h0 + ky * p.dh) * p.iw;
              for (int64_t kx = kx0; kx < kx1; ++kx) {
                const int64_t i = row + w0 + kx * p.dw;
                const O v = static_cast<O>(xp[i]);
                // Branch-free select: on random data a branch mispredicts about half the time
                // (3.0 ms -> 1.9 ms on (64, 32, 28, 28), 2x2).
                const int64_t take = static_cast<int64_t>((v > best) | (v != v));
                bi ^= (bi ^ i) & -take;
                best = static_cast<O>(xp[bi]);
              }
            }
            if (od) od[o] = xp[bi];
            if (id) id[o] = bi;
          }
        }
      }
    });
  });
}

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Pool2d& p, const Tensor& grad_in) {
  visit(grad_out, "max_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = opmath_t<T>;
    const T* g = grad_out.data_ptr<T>();
    const int64_t* id = indices.data_ptr<int64_t>();
    T* gi = grad_in.data_ptr<T>();
    const int64_t P = p.planes(), in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    parallel_range(P, threads_for(P * (in_plane + out_plane)), [&](int64_t pl0, int64_t pl1) {
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        T* gp = gi + pl * in_plane;
        const T* gq = g + pl * out_plane;
        const int64_t* iq = id + pl * out_plane;
        // Overlapping windows may send several gradients to one input: accumulate in opmath.
        if constexpr (std::is_same_v<T, O>) {
          std::fill(gp, gp + in_plane, T(0));
          for (int64_t o = 0; o < out_plane; ++o)
            if (iq[o] >= 0) gp[iq[o]] += gq[o];
        } else {
          std::vector<O> acc(static_cast<size_t>(in_plane), O(0));
          for (int64_t o = 0; o < out_plane; ++o)
            if (iq[o] >= 0) acc[static_cast<size_t>(iq[o])] += static_cast<O>(gq[o]);
          for (int64_t i = 0; i < in_plane; ++i) gp[i] = convert<T>(acc[static_cast<size_t>(i)]);
        }
      }
    });
  });
}

void avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out) {
  visit(x, "avg_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = x.data_ptr<T>();
    T* od = out.data_ptr<T>();
    const int64_t P = p.planes(), in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    parallel_range(P, threads_for(P * out_plane * p.kh * p.kw), [&](int64_t pl0, int64_t pl1) {
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        const T* xp = xd + pl * in_plane;
        for (int64_t oy = 0; oy < p.oh; ++oy) {
          for (int64_t ox = 0; ox < p.ow; ++ox) {
            const Window w = avg_window(p, oy, ox);
            double s = 0;
            for (int64_t iy = w.h0; iy < w.h1; ++iy)
              for (int64_t ix = w.w0; ix < w.w1; ++ix) s += ld(xp[iy * p.iw + ix]);
            // An empty window (all padding) gives 0, as libtorch.
            od[pl * out_plane + oy * p.ow + ox] = st<T>(w.h0 >= w.h1 || w.w0 >= w.w1 ? 0.0 : s / w.divisor);
          }
        }
      }
    });
  });
}

void avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in) {
  visit(grad_out, "avg_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = grad_out.data_ptr<T>();
    T* gi = grad_in.data_ptr<T>();
    const int64_t P = p.planes(), in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    parallel_range(P, threads_for(P * out_plane * p.kh * p.kw), [&](int64_t pl0, int64_t pl1) {
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        std::vector<double> acc(static_cast<size_t>(in_plane), 0.0);
        for (int64_t oy = 0; oy < p.oh; ++oy) {
          for (int64_t ox = 0; ox < p.ow; ++ox) {
            const Window w = avg_window(p, oy, ox);
            const double v = ld(g[pl * out_plane + oy * p.ow + ox]) / static_cast<double>(w.divisor);
            for (int64_t iy = w.h0; iy < w.h1; ++iy)
              for (int64_t ix = w.w0; ix < w.w1; ++ix) acc[iy * p.iw + ix] += v;
          }
        }
        T* gp = gi + pl * in_plane;
        for (int64_t i = 0; i < in_plane; ++i) gp[i] = st<T>(acc[i]);
      }
    });
  });
}

void adaptive_avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out) {
  visit(x, "adaptive_avg_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = x.data_ptr<T>();
    T* od = out.data_ptr<T>();
    const int64_t P = p.planes(), in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    if (out_plane == 1) {  // global pooling: one contiguous sum per plane
      parallel_range(P, threads_for(P * in_plane), [&](int64_t pl0, int64_t pl1) {
        if constexpr (std::is_same_v<T, float>) {
          rows::row_means_f32(xd + pl0 * in_plane, pl1 - pl0, in_plane, od + pl0);  // Note [Blocked float32 sums]
        } else {
          for (int64_t pl = pl0; pl < pl1; ++pl) {
            const T* xp = xd + pl * in_plane;
            double s = 0;
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < in_plane; ++i) s += ld(xp[i]);
            od[pl] = st<T>(s / static_cast<double>(in_plane));
          }
        }
      });
      return;
    }
    parallel_range(P, threads_for(P * in_plane), [&](int64_t pl0, int64_t pl1) {
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        const T* xp = xd + pl * in_plane;
        for (int64_t oy = 0; oy < p.oh; ++oy) {
          const int64_t h0 = ada_start(oy, p.oh, p.ih), h1 = ada_end(oy, p.oh, p.ih);
          for (int64_t ox = 0; ox < p.ow; ++ox) {
            const int64_t w0 = ada_start(ox, p.ow, p.iw), w1 = ada_end(ox, p.ow, p.iw);
            double s = 0;
            for (int64_t iy = h0; iy < h1; ++iy) {
              const T* row = xp + iy * p.iw;
#pragma omp simd reduction(+ : s)
              for (int64_t ix = w0; ix < w1; ++ix) s += ld(row[ix]);
            }
            od[pl * out_plane + oy * p.ow + ox] = st<T>(s / static_cast<double>((h1 - h0) * (w1 - w0)));
          }
        }
      }
    });
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in) {
  visit(grad_out, "adaptive_avg_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = grad_out.data_ptr<T>();
    T* gi = grad_in.data_ptr<T>();
    const int64_t P = p.planes(), in_plane = p.ih * p.iw, out_plane = p.oh * p.ow;
    parallel_range(P, threads_for(P * in_plane), [&](int64_t pl0, int64_t pl1) {
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        std::vector<double> acc(static_cast<size_t>(in_plane), 0.0);
        for (int64_t oy = 0; oy < p.oh; ++oy) {
          const int64_t h0 = ada_start(oy, p.oh, p.ih), h1 = ada_end(oy, p.oh, p.ih);
          for (int64_t ox = 0; ox < p.ow; ++ox) {
            const int64_t w0 = ada_start(ox, p.ow, p.iw), w1 = ada_end(ox, p.ow, p.iw);
            const double v = ld(g[pl * out_plane + oy * p.ow + ox]) / static_cast<double>((h1 - h0) * (w1 - w0));
            for (int64_t iy = h0; iy < h1; ++iy)
              for (int64_t ix = w0; ix < w1; ++ix) acc[iy * p.iw + ix] += v;
          }
        }
        T* gp = gi + pl * in_plane;
        for (int64_t i = 0; i < in_plane; ++i) gp[i] = st<T>(acc[i]);
      }
    });
  });
}

// ---- 3-d max pooling and adaptive max pooling ----
// The same selection rule as max_pool2d (libtorch's): taps in row-major (d, h, w) order, the
// first maximum wins and a NaN wins over everything (the last NaN over earlier ones).
// Cubic 2x2x2 and 3x3x3 windows wholly inside the input take the unrolled, branch-free loop of
// Note [Max pooling fast path], vectorized across output columns; same selection rule.
template <int K, class T>
void max_pool3d_fixed(const T* xd, T* od, int64_t* id, const Pool3d& p) {
  const int64_t P = p.planes(), in_plane = p.in_plane(), out_plane = p.out_plane();
  const int64_t iw = p.iw, hw = p.ih * p.iw, ow = p.ow, sw = p.sw;
  parallel_range(P, threads_for(P * out_plane * K * K * K), [&](int64_t pl0, int64_t pl1) {
    for (int64_t pl = pl0; pl < pl1; ++pl) {
      const T* xp = xd + pl * in_plane;
      for (int64_t oz = 0; oz < p.od; ++oz)
        for (int64_t oy = 0; oy < p.oh; ++oy) {
          const int64_t base = oz * p.sd * hw + oy * p.sh * iw;
          const int64_t o0 = pl * out_plane + (oz * p.oh + oy) * ow;
          T* orow = od + o0;
          int64_t* irow = id + o0;
#pragma omp simd
          for (int64_t ox = 0; ox < ow; ++ox) {
            const int64_t b0 = base + ox * sw;
            T best = xp[b0];
            int64_t bi = b0;
            for (int kz = 0; kz < K; ++kz)
              for (int ky = 0; ky < K; ++ky)
                for (int kx = 0; kx < K; ++kx) {
                  if (kz == 0 && ky == 0 && kx == 0) continue;
                  const int64_t i = b0 + kz * hw + ky * iw + kx;
                  const T v = xp[i];
                  const int64_t take = static_cast<int64_t>((v > best) | (v != v));
                  best = select(take, v, best);
                  bi ^= (bi ^ i) & -take;
                }
            orow[ox] = best;
            irow[ox] = bi;
          }
        }
    }
  });
}

template <class T>
bool max_pool3d_fast(const T* xd, T* od, int64_t* id, const Pool3d& p) {
  if (p.pd || p.ph || p.pw || p.dd != 1 || p.dh != 1 || p.dw != 1) return false;
  if (p.kd != p.kh || p.kh != p.kw || (p.kd != 2 && p.kd != 3)) return false;
  if ((p.od - 1) * p.sd + p.kd > p.id || (p.oh - 1) * p.sh + p.kh > p.ih || (p.ow - 1) * p.sw + p.kw > p.iw)
    return false;
  if (p.kd == 2) max_pool3d_fixed<2>(xd, od, id, p);
  else max_pool3d_fixed<3>(xd, od, id, p);
  return true;
}

void max_pool3d(const Tensor& x, const Pool3d& p, const Tensor& out, const Tensor& indices) {
  visit(x, "max_pool3d_with_indices", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = opmath_t<T>;
    const T* xd = x.data_ptr<T>();
    T* od = out.data_ptr<T>();
    int64_t* id = indices.data_ptr<int64_t>();
    if constexpr (std::is_same_v<T, O>) {
      if (max_pool3d_fast(xd, od, id, p)) return;
    }
    const int64_t P = p.planes(), in_plane = p.in_plane(), out_plane = p.out_plane(), hw = p.ih * p.iw;
    parallel_range(P, threads_for(P * out_plane * p.kd * p.kh * p.kw), [&](int64_t pl0, int64_t pl1) {
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        const T* xp = xd + pl * in_plane;
        for (int64_t oz = 0; oz < p.od; ++oz) {
          const int64_t d0 = oz * p.sd - p.pd;
          int64_t kz0, kz1;
          tap_range(d0, p.kd, p.dd, p.id, kz0, kz1);
          for (int64_t oy = 0; oy < p.oh; ++oy) {
            const int64_t h0 = oy * p.sh - p.ph;
            int64_t ky0, ky1;
            tap_range(h0, p.kh, p.dh, p.ih, ky0, ky1);
            for (int64_t ox = 0; ox < p.ow; ++ox) {
              const int64_t w0 = ox * p.sw - p.pw;
              int64_t kx0, kx1;
              tap_range(w0, p.kw, p.dw, p.iw, kx0, kx1);
              const int64_t o = pl * out_plane + (oz * p.oh + oy) * p.ow + ox;
              if (kz0 >= kz1 || ky0 >= ky1 || kx0 >= kx1) {
                // Dilated taps can all miss a tiny input: -inf and no index (backward skips it).
                od[o] = convert<T>(-std::numeric_limits<O>::infinity());
                id[o] = -1;
                continue;
              }
              int64_t bi = (d0 + kz0 * p.dd) * hw + (h0 + ky0 * p.dh) * p.iw + w0 + kx0 * p.dw;
              O best = static_cast<O>(xp[bi]);
              for (int64_t kz = kz0; kz < kz1; ++kz)
                for (int64_t ky = ky0; ky < ky1; ++ky) {
                  const int64_t row = (d0 + kz * p.dd) * hw + (h0 + ky * p.dh) * p.iw + w0;
                  for (int64_t kx = kx0; kx < kx1; ++kx) {
                    const int64_t i = row + kx * p.dw;
                    const O v = static_cast<O>(xp[i]);
                    if (v > best || v != v) best = v, bi = i;
                  }
                }
              od[o] = xp[bi];
              id[o] = bi;
            }
          }
        }
      }
    });
  });
}

void adaptive_max_pool3d(const Tensor& x, const Pool3d& p, const Tensor& out, const Tensor& indices) {
  visit(x, "adaptive_max_pool3d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = opmath_t<T>;
    const T* xd = x.data_ptr<T>();
    T* od = out.data_ptr<T>();
    int64_t* id = indices.data_ptr<int64_t>();
    const int64_t P = p.planes(), in_plane = p.in_plane(), out_plane = p.out_plane(), hw = p.ih * p.iw;
    parallel_range(P, threads_for(P * in_plane), [&](int64_t pl0, int64_t pl1) {
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        const T* xp = xd + pl * in_plane;
        for (int64_t oz = 0; oz < p.od; ++oz) {
          const int64_t z0 = ada_start(oz, p.od, p.id), z1 = ada_end(oz, p.od, p.id);
          for (int64_t oy = 0; oy < p.oh; ++oy) {
            const int64_t y0 = ada_start(oy, p.oh, p.ih), y1 = ada_end(oy, p.oh, p.ih);
            for (int64_t ox = 0; ox < p.ow; ++ox) {
              const int64_t x0 = ada_start(ox, p.ow, p.iw), x1 = ada_end(ox, p.ow, p.iw);
              int64_t bi = z0 * hw + y0 * p.iw + x0;  // adaptive windows are never empty
              O best = static_cast<O>(xp[bi]);
              for (int64_t iz = z0; iz < z1; ++iz)
                for (int64_t iy = y0; iy < y1; ++iy)
                  for (int64_t ix = x0; ix < x1; ++ix) {
                    const int64_t i = iz * hw + iy * p.iw + ix;
                    const O v = static_cast<O>(xp[i]);
                    if (v > best || v != v) best = v, bi = i;
                  }
              const int64_t o = pl * out_plane + (oz * p.oh + oy) * p.ow + ox;
              od[o] = xp[bi];
              id[o] = bi;
            }
          }
        }
      }
    });
  });
}

// ---- normalization ----
namespace {
/// Mean and biased variance of n values (two passes: no cancellation).
template <class T>
void moments(const T* x, int64_t n, double& mean, double& var) {
  if constexpr (std::is_same_v<T, float>) {  // Note [Blocked float32 sums]
    const double m0 = sum_f32(x, n) / static_cast<double>(n);
    // Deviations from the float-rounded mean m0f; their mean e corrects both moments exactly.
    const float m0f = static_cast<float>(m0);
    double sd, sq;
    sum_dev_f32(x, n, m0f, sd, sq);
    const double e = sd / static_cast<double>(n);
    mean = m0f + e;
    var = std::max(sq / static_cast<double>(n) - e * e, 0.0);
    return;
  }
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += ld(x[i]);
  const double m = s / static_cast<double>(n);
  double q = 0;
#pragma omp simd reduction(+ : q)
  for (int64_t i = 0; i < n; ++i) {
    const double d = ld(x[i]) - m;
    q += d * d;
  }
  mean = m;
  var = q / static_cast<double>(n);
}

/// out = x * scale + shift over one row; float32 stays in float (rows::affine_f32).
template <class T>
inline void affine_row(const T* x, T* out, int64_t n, double scale, double shift) {
  if constexpr (std::is_same_v<T, float>) {
    rows::affine_f32(x, out, n, static_cast<float>(scale), static_cast<float>(shift));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = st<T>(ld(x[i]) * scale + shift);
  }
}

/// out = a * g + b * x + e over one row (the normalization backward, elementwise part).
template <class T>
inline void axpbypc_row(const T* g, const T* x, T* out, int64_t n, double a, double b, double e) {
  if constexpr (std::is_same_v<T, float>) {
    rows::axpbypc_f32(g, x, out, n, static_cast<float>(a), static_cast<float>(b), static_cast<float>(e));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = st<T>(a * ld(g[i]) + b * ld(x[i]) + e);
  }
}

/// Shape of a batch_norm input as (N, C, S).
struct NCS {
  int64_t n, c, s;
};
NCS ncs_of(const Tensor& x) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) s *= x.size(d);
  return {x.size(0), x.size(1), s};
}
}  // namespace

void batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& mean, const Tensor& var,
                bool compute_stats, double eps, const Tensor& out) {
  const NCS d = ncs_of(x);
  visit(x, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    const T* xd = x.data_ptr<T>();
    T* od = out.data_ptr<T>();
    const S* wd = opt_ptr<S>(w);
    const S* bd = opt_ptr<S>(b);
    S* md = mean.data_ptr<S>();
    S* vd = var.data_ptr<S>();
    const int nt = threads_for(x.numel());
    parallel_range(d.c, nt, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double m, v;
        if (compute_stats && std::is_same_v<T, float>) {
          // float32 is a fast path (Note [batch_norm kernels]): one pass of double sums.
          double s = 0, q = 0;
          for (int64_t n = 0; n < d.n; ++n) {
            const T* row = xd + (n * d.c + c) * d.s;
#pragma omp simd reduction(+ : s, q)
            for (int64_t i = 0; i < d.s; ++i) {
              const double e = ld(row[i]);
              s += e;
              q += e * e;
            }
          }
          const double cnt = static_cast<double>(d.n * d.s);
          m = s / cnt;
          v = std::max(q / cnt - m * m, 0.0);
          md[c] = static_cast<S>(m);
          vd[c] = static_cast<S>(v);
        } else if (compute_stats) {
          double s = 0;
          for (int64_t n = 0; n < d.n; ++n) {
            const T* row = xd + (n * d.c + c) * d.s;
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < d.s; ++i) s += ld(row[i]);
          }
          m = s / static_cast<double>(d.n * d.s);
          double q = 0;
          for (int64_t n = 0; n < d.n; ++n) {
            const T* row = xd + (n * d.c + c) * d.s;
#pragma omp simd reduction(+ : q)
            for (int64_t i = 0; i < d.s; ++i) {
              const double e = ld(row[i]) - m;
              q += e * e;
            }
          }
          v = q / static_cast<double>(d.n * d.s);
          md[c] = static_cast<S>(m);
          vd[c] = static_cast<S>(v);
        } else {
          m = md[c];
          v = vd[c];
        }
        const double scale = (wd ? static_cast<double>(wd[c]) : 1.0) / std::sqrt(v + eps);
        const double shift = (bd ? static_cast<double>(bd[c]) : 0.0) - m * scale;
        for (int64_t n = 0; n < d.n; ++n) {
          const T* row = xd + (n * d.c + c) * d.s;
          T* orow = od + (n * d.c + c) * d.s;
          affine_row(row, orow, d.s, scale, shift);
        }
      }
    });
  });
}

void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& var,
                         bool training, double eps, const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  const NCS d = ncs_of(x);
  visit(x, "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    const T* xd = x.data_ptr<T>();
    const T* gd = g.data_ptr<T>();
    T* gxd = opt_mut<T>(gx);
    const S* wd = opt_ptr<S>(w);
    const S* md = mean.data_ptr<S>();
    const S* vd = var.data_ptr<S>();
    S* gwd = opt_mut<S>(gw);
    S* gbd = opt_mut<S>(gb);
    const double count = static_cast<double>(d.n * d.s);
    parallel_range(d.c, threads_for(x.numel()), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const double m = md[c], invstd = 1.0 / std::sqrt(static_cast<double>(vd[c]) + eps);
        double sg = 0, sgx = 0;  // sum of g, sum of g * (x - mean)
        for (int64_t n = 0; n < d.n; ++n) {
          const T* xr = xd + (n * d.c + c) * d.s;
          const T* gr = gd + (n * d.c + c) * d.s;
#pragma omp simd reduction(+ : sg, sgx)
          for (int64_t i = 0; i < d.s; ++i) {
            const double gv = ld(gr[i]);
            sg += gv;
            sgx += gv * (ld(xr[i]) - m);
          }
        }
        if (gwd) gwd[c] = static_cast<S>(sgx * invstd);
        if (gbd) gbd[c] = static_cast<S>(sg);
        if (!gxd) continue;
        const double k = (wd ? static_cast<double>(wd[c]) : 1.0) * invstd;
        // gx = w * invstd * (g - mean(g) - xhat * mean(g * xhat)) with batch statistics.
        const double mg = training ? sg / count : 0.0;
        const double mgx = training ? sgx * invstd * invstd / count : 0.0;  // mean(g * xhat) * invstd
        // As a * g + bx * x + e, one fused pass.
        const double a = k, bx = -k * mgx, e = k * (m * mgx - mg);
        for (int64_t n = 0; n < d.n; ++n) {
          const T* xr = xd + (n * d.c + c) * d.s;
          const T* gr = gd + (n * d.c + c) * d.s;
          T* out = gxd + (n * d.c + c) * d.s;
          axpbypc_row(gr, xr, out, d.s, a, bx, e);
        }
      }
    });
  });
}

void layer_norm(const Tensor& x, int64_t rows, int64_t cols, const Tensor& w, const Tensor& b, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& var) {
  visit(x, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    const T* xd = x.data_ptr<T>();
    T* od = out.data_ptr<T>();
    const S* wd = opt_ptr<S>(w);
    const S* bd = opt_ptr<S>(b);
    S* md = mean.data_ptr<S>();
    S* vd = var.data_ptr<S>();
    parallel_range(rows, threads_for(rows * cols), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = xd + r * cols;
        T* orow = od + r * cols;
        double m, v;
        if constexpr (std::is_same_v<T, float>) {
          // The same moments, and the affine pass in float (as oneDNN), in Highway's widest ISA.
          cpu::layer_norm_row(xr, orow, cols, wd, bd, eps, m, v);
          md[r] = static_cast<S>(m);
          vd[r] = static_cast<S>(v);
          continue;
        }
        moments(xr, cols, m, v);
        md[r] = static_cast<S>(m);
        vd[r] = static_cast<S>(v);
        const double rstd = 1.0 / std::sqrt(v + eps);
        for (int64_t j = 0; j < cols; ++j) {
          const double y = (ld(xr[j]) - m) * rstd;
          orow[j] = st<T>(y * (wd ? static_cast<double>(wd[j]) : 1.0) + (bd ? static_cast<double>(bd[j]) : 0.0));
        }
      }
    });
  });
}

void layer_norm_backward(const Tensor& g, const Tensor& x, int64_t rows, int64_t cols, const Tensor& w,
                         const Tensor& mean, const Tensor& var, double eps, const Tensor& gx, const Tensor& gw,
                         const Tensor& gb) {
  visit(x, "layer_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    const T* xd = x.data_ptr<T>();
    const T* gd = g.data_ptr<T>();
    T* gxd = opt_mut<T>(gx);
    const S* wd = opt_ptr<S>(w);
    const S* md = mean.data_ptr<S>();
    const S* vd = var.data_ptr<S>();
    const int nt = threads_for(rows * cols);
    Partials pw(nt, static_cast<size_t>(cols)), pb(nt, static_cast<size_t>(cols));
    // Chunk t of parallel_range's split adds into partial buffer t (Note [One-thread parallel
    // regions]: one thread runs inline).
    const int64_t per = (rows + nt - 1) / std::max(nt, 1);
    parallel_range(rows, nt, [&](int64_t rb, int64_t re) {
      const size_t t = static_cast<size_t>(per > 0 ? rb / per : 0);
      std::vector<double>& aw = pw.bufs[t];
      std::vector<double>& ab = pb.bufs[t];
      for (int64_t r = rb; r < re; ++r) {
        const T* xr = xd + r * cols;
        const T* gr = gd + r * cols;
        const double m = md[r], rstd = 1.0 / std::sqrt(static_cast<double>(vd[r]) + eps);
        double s1 = 0, s2 = 0;  // sums of gxhat and gxhat * xhat, gxhat = g * w
        for (int64_t j = 0; j < cols; ++j) {
          const double xh = (ld(xr[j]) - m) * rstd, gv = ld(gr[j]);
          const double gh = gv * (wd ? static_cast<double>(wd[j]) : 1.0);
          s1 += gh;
          s2 += gh * xh;
          aw[j] += gv * xh;
          ab[j] += gv;
        }
        if (!gxd) continue;
        const double m1 = s1 / static_cast<double>(cols), m2 = s2 / static_cast<double>(cols);
        T* out = gxd + r * cols;
        for (int64_t j = 0; j < cols; ++j) {
          const double xh = (ld(xr[j]) - m) * rstd;
          const double gh = ld(gr[j]) * (wd ? static_cast<double>(wd[j]) : 1.0);
          out[j] = st<T>(rstd * (gh - m1 - xh * m2));
        }
      }
    });
    S* gwd = opt_mut<S>(gw);
    S* gbd = opt_mut<S>(gb);
    for (int64_t j = 0; j < cols; ++j) {
      if (gwd) gwd[j] = static_cast<S>(pw.total(static_cast<size_t>(j)));
      if (gbd) gbd[j] = static_cast<S>(pb.total(static_cast<size_t>(j)));
    }
  });
}

void group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps, const Tensor& out,
                const Tensor& mean, const Tensor& var) {
  const NCS d = ncs_of(x);
  const int64_t cpg = d.c / groups, len = cpg * d.s;
  visit(x, "group_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    const T* xd = x.data_ptr<T>();
    T* od = out.data_ptr<T>();
    const S* wd = opt_ptr<S>(w);
    const S* bd = opt_ptr<S>(b);
    S* md = mean.data_ptr<S>();
    S* vd = var.data_ptr<S>();
    parallel_range(d.n * groups, threads_for(x.numel()), [&](int64_t ng0, int64_t ng1) {
      for (int64_t ng = ng0; ng < ng1; ++ng) {
        const T* xg = xd + ng * len;
        double m, v;
        moments(xg, len, m, v);
        md[ng] = static_cast<S>(m);
        vd[ng] = static_cast<S>(v);
        const double rstd = 1.0 / std::sqrt(v + eps);
        const int64_t c0 = (ng % groups) * cpg;
        for (int64_t k = 0; k < cpg; ++k) {
          const int64_t c = c0 + k;
          const double scale = (wd ? static_cast<double>(wd[c]) : 1.0) * rstd;
          const double shift = (bd ? static_cast<double>(bd[c]) : 0.0) - m * scale;
          const T* xr = xg + k * d.s;
          T* orow = od + ng * len + k * d.s;
          affine_row(xr, orow, d.s, scale, shift);
        }
      }
    });
  });
}

void group_norm_backward(const Tensor& g, const Tensor& x, int64_t groups, const Tensor& w, const Tensor& mean,
                         const Tensor& var, double eps, const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  const NCS d = ncs_of(x);
  const int64_t cpg = d.c / groups;
  const double len = static_cast<double>(cpg * d.s);
  visit(x, "group_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    const T* xd = x.data_ptr<T>();
    const T* gd = g.data_ptr<T>();
    T* gxd = opt_mut<T>(gx);
    const S* wd = opt_ptr<S>(w);
    const S* md = mean.data_ptr<S>();
    const S* vd = var.data_ptr<S>();
    // Pass 1: per (n, c) sums of g and g * x (libtorch's ds, db).
    std::vector<double> ds(static_cast<size_t>(d.n * d.c)), db(static_cast<size_t>(d.n * d.c));
    const int nt = threads_for(x.numel());
    parallel_range(d.n * d.c, nt, [&](int64_t nc0, int64_t nc1) {
      for (int64_t nc = nc0; nc < nc1; ++nc) {
        const T* xr = xd + nc * d.s;
        const T* gr = gd + nc * d.s;
        double a = 0, bsum = 0;
        if constexpr (std::is_same_v<T, float>) {
          sum_gx_f32(gr, xr, d.s, a, bsum);  // Note [Blocked float32 sums]
        } else {
#pragma omp simd reduction(+ : a, bsum)
          for (int64_t i = 0; i < d.s; ++i) {
            const double gv = ld(gr[i]);
            a += gv * ld(xr[i]);
            bsum += gv;
          }
        }
        ds[static_cast<size_t>(nc)] = a;
        db[static_cast<size_t>(nc)] = bsum;
      }
    });
    // Pass 2: gx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)) per group.
    if (gxd) {
      parallel_range(d.n * groups, nt, [&](int64_t ng0, int64_t ng1) {
        for (int64_t ng = ng0; ng < ng1; ++ng) {
          const int64_t n = ng / groups, c0 = (ng % groups) * cpg;
          const double m = md[ng], rstd = 1.0 / std::sqrt(static_cast<double>(vd[ng]) + eps);
          double s1 = 0, s2 = 0;  // sum of g * w, sum of g * w * (x - m)
          for (int64_t k = 0; k < cpg; ++k) {
            const size_t i = static_cast<size_t>(n * d.c + c0 + k);
            const double wc = wd ? static_cast<double>(wd[c0 + k]) : 1.0;
            s1 += wc * db[i];
            s2 += wc * (ds[i] - m * db[i]);
          }
          const double m1 = s1 / len, m2 = s2 * rstd * rstd / len;
          for (int64_t k = 0; k < cpg; ++k) {
            const int64_t c = c0 + k;
            const double wc = wd ? static_cast<double>(wd[c]) : 1.0;
            const T* xr = xd + (n * d.c + c) * d.s;
            const T* gr = gd + (n * d.c + c) * d.s;
            T* out = gxd + (n * d.c + c) * d.s;
            // rstd * (g * w - m1 - (x - m) * rstd * rstd * s2 / len), as a * g + b * x + e.
            const double a = rstd * wc, bx = -rstd * m2, e = rstd * (m * m2 - m1);
            axpbypc_row(gr, xr, out, d.s, a, bx, e);
          }
        }
      });
    }
    S* gwd = opt_mut<S>(gw);
    S* gbd = opt_mut<S>(gb);
    for (int64_t c = 0; c < d.c; ++c) {
      double sw = 0, sb = 0;
      const int64_t grp = c / cpg;
      for (int64_t n = 0; n < d.n; ++n) {
        const size_t i = static_cast<size_t>(n * d.c + c);
        const int64_t ng = n * groups + grp;
        const double rstd = 1.0 / std::sqrt(static_cast<double>(vd[ng]) + eps);
        sw += (ds[i] - static_cast<double>(md[ng]) * db[i]) * rstd;
        sb += db[i];
      }
      if (gwd) gwd[c] = static_cast<S>(sw);
      if (gbd) gbd[c] = static_cast<S>(sb);
    }
  });
}

}  // namespace loops
}  // namespace tensor::cpu
