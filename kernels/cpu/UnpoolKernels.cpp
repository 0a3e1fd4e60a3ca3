// Plain loops of max unpooling and fractional max pooling (kernels/cpu/UnpoolKernels.h).
// Threads split planes; each plane is written by one thread, so the results (including which
// of repeated indices lands, and the order of the backward's sums) do not depend on the thread
// count. A bad index is reported, not thrown: throwing inside a parallel region would
// terminate, so each plane stops at its first bad index and the smallest plane's wins.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/UnpoolKernels.h"
#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"

namespace tensor::cpu {
namespace loops {
namespace {

using tensor::detail::parallel_range;
using tensor::detail::threads_for;

template <class F>
void visit(const Tensor& t, const char* op, F&& f) {
  visit_dtype<kGroupFloating>(t.dtype(), op, std::forward<F>(f));
}

/// Keeps the first bad index (by plane) any thread found.
struct BadIndex {
  std::vector<int64_t> per_plane;
  explicit BadIndex(int64_t planes) : per_plane(static_cast<size_t>(planes), -1) {}
  int64_t first() const {
    for (int64_t v : per_plane)
      if (v != -1) return v;
    return -1;
  }
};

/// One step of T's arithmetic: the half types round each result to T (c10's operators return
/// Half / BFloat16); float and double round to themselves.
template <class T>
inline opmath_t<T> r(opmath_t<T> v) {
  if constexpr (std::is_same_v<T, opmath_t<T>>) return v;
  else return static_cast<opmath_t<T>>(T(v));
}

template <class T>
void intervals(T sample, int64_t in, int64_t out, int64_t k, int64_t* starts) {
  using O = opmath_t<T>;
  const O u = static_cast<O>(sample);
  if (out > 1) {
    const O alpha = r<T>(r<T>(static_cast<O>(in - k)) / r<T>(static_cast<O>(out - 1)));
    const O base = r<T>(u * alpha);
    for (int64_t i = 0; i < out - 1; ++i) {
      const O t = r<T>(r<T>(static_cast<O>(i)) + u);
      starts[i] = static_cast<int64_t>(static_cast<int>(r<T>(t * alpha))) - static_cast<int64_t>(static_cast<int>(base));
    }
  }
  if (out > 0) starts[out - 1] = in - k;
}

}  // namespace

void fractional_intervals(ScalarType dtype, double u, int64_t in, int64_t out, int64_t k, int64_t* starts) {
  visit_dtype<kGroupFloating>(dtype, "fractional_max_pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    intervals<T>(convert<T>(u), in, out, k, starts);
  });
}

int64_t max_unpool(const Tensor& x, const Tensor& indices, int64_t planes, int64_t in_plane, int64_t out_plane,
                   const Tensor& out) {
  BadIndex bad(planes);
  visit(x, "max_unpool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = x.data_ptr<T>();
    const int64_t* id = indices.data_ptr<int64_t>();
    T* od = out.data_ptr<T>();
    parallel_range(planes, threads_for(planes * (in_plane + out_plane)), [&](int64_t p_begin, int64_t p_end) {
      for (int64_t p = p_begin; p < p_end; ++p) {
        T* op = od + p * out_plane;
        std::fill(op, op + out_plane, T(0));
        const T* xp = xd + p * in_plane;
        const int64_t* ip = id + p * in_plane;
        for (int64_t i = 0; i < in_plane; ++i) {
          const int64_t j = ip[i];
          if (j < 0 || j >= out_plane) {
            bad.per_plane[static_cast<size_t>(p)] = j;
            break;
          }
          op[j] = xp[i];
        }
      }
    });
  });
  return bad.first();
}

int64_t fractional_max_pool_backward(const Tensor& grad, const Tensor& indices, int64_t planes, int64_t out_plane,
                                     int64_t in_plane, const Tensor& grad_in) {
  BadIndex bad(planes);
  visit(grad, "fractional_max_pool_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = opmath_t<T>;
    const T* gd = grad.data_ptr<T>();
    const int64_t* id = indices.data_ptr<int64_t>();
    T* gi = grad_in.data_ptr<T>();
    parallel_range(planes, threads_for(planes * (in_plane + out_plane)), [&](int64_t p_begin, int64_t p_end) {
      for (int64_t p = p_begin; p < p_end; ++p) {
        // Overlapping windows may send several gradients to one input: sum in opmath.
        std::vector<O> acc(static_cast<size_t>(in_plane), O(0));
        const T* gp = gd + p * out_plane;
        const int64_t* ip = id + p * out_plane;
        for (int64_t o = 0; o < out_plane; ++o) {
          const int64_t j = ip[o];
          if (j < 0 || j >= in_plane) {
            bad.per_plane[static_cast<size_t>(p)] = j;
            break;
          }
          acc[static_cast<size_t>(j)] += static_cast<O>(gp[o]);
        }
        T* gq = gi + p * in_plane;
        for (int64_t i = 0; i < in_plane; ++i) gq[i] = convert<T>(acc[static_cast<size_t>(i)]);
      }
    });
  });
  return bad.first();
}

void fractional_max_pool(const Tensor& x, const Tensor& samples, const FractionalPool& g, const Tensor& out,
                         const Tensor& indices) {
  visit(x, "fractional_max_pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = opmath_t<T>;
    const T* xd = x.data_ptr<T>();
    const T* sd = samples.data_ptr<T>();
    T* od = out.data_ptr<T>();
    int64_t* id = indices.data_ptr<int64_t>();
    const int64_t P = g.planes(), in_plane = g.in_plane(), out_plane = g.out_plane();
    const int64_t ih = g.in[1], iw = g.in[2];
    const int64_t kt = g.k[0], kh = g.k[1], kw = g.k[2];
    parallel_range(P, threads_for(P * out_plane * kt * kh * kw), [&](int64_t p_begin, int64_t p_end) {
      for (int64_t p = p_begin; p < p_end; ++p) {
        // Planes are (n, c) in order, and so are the samples' first two dims.
        const T* sp = sd + p * g.samples_per_plane;
        std::array<std::vector<int64_t>, 3> starts;
        for (size_t d = 0; d < 3; ++d) {
          starts[d].resize(static_cast<size_t>(g.out[d]));
          // (A dim of one output, as the 2-d problem's depth, reads no sample: its start is in - k.)
          intervals<T>(sp[g.sample_of[d]], g.in[d], g.out[d], g.k[d], starts[d].data());
        }
        const T* xp = xd + p * in_plane;
        T* op = od + p * out_plane;
        int64_t* ip = id + p * out_plane;
        int64_t o = 0;
        for (int64_t ot = 0; ot < g.out[0]; ++ot)
          for (int64_t oy = 0; oy < g.out[1]; ++oy)
            for (int64_t ox = 0; ox < g.out[2]; ++ox, ++o) {
              const int64_t t0 = starts[0][static_cast<size_t>(ot)], y0 = starts[1][static_cast<size_t>(oy)],
                            x0 = starts[2][static_cast<size_t>(ox)];
              // libtorch's scan: strictly greater wins (the first of equal maxima), NaN always
              // wins (the last NaN); a window of -inf keeps its first position.
              O best = -std::numeric_limits<O>::infinity();
              int64_t best_i = (t0 * ih + y0) * iw + x0;
              for (int64_t t = t0; t < t0 + kt; ++t)
                for (int64_t y = y0; y < y0 + kh; ++y)
                  for (int64_t xx = x0; xx < x0 + kw; ++xx) {
                    const int64_t i = (t * ih + y) * iw + xx;
                    const O v = static_cast<O>(xp[i]);
                    if (v > best || std::isnan(v)) {
                      best = v;
                      best_i = i;
                    }
                  }
              op[o] = convert<T>(best);
              ip[o] = best_i;
            }
      }
    });
  });
}

}  // namespace loops
}  // namespace tensor::cpu
