// Plain-loop bicubic upsampling (kernels/cpu/UpsampleKernels.h), with PyTorch's source index
// rules (aten/src/ATen/native/UpSample.h): the scale and source positions in the opmath type,
// cubic convolution with A = -0.75 over 4 taps per dim, taps outside the input clamped to the
// border row or column. Threads split planes; each output element (forward) or each plane of
// the input gradient (backward) is written by one thread, so results do not depend on the
// thread count.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "kernels/cpu/UpsampleKernels.h"
#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"

namespace tensor::cpu {
namespace loops {
namespace {

using tensor::detail::parallel_range;
using tensor::detail::threads_for;

// PyTorch's area_pixel_compute_scale.
template <class A>
A compute_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : static_cast<A>(0);
  return scale.has_value() && *scale > 0 ? static_cast<A>(1.0 / *scale) : static_cast<A>(in) / static_cast<A>(out);
}

// The 4 taps (clamped source indices) and their weights of every output position along a dim.
template <class A>
struct Taps {
  std::vector<std::array<int64_t, 4>> index;
  std::vector<std::array<A, 4>> weight;
};

template <class A>
Taps<A> cubic_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale_opt) {
  constexpr A kA = static_cast<A>(-0.75);
  // cubic_convolution1 for |x| <= 1, cubic_convolution2 for 1 < |x| < 2.
  auto conv1 = [](A x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; };
  auto conv2 = [](A x) { return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA; };
  const A scale = compute_scale<A>(in, out, align_corners, scale_opt);
  Taps<A> t;
  t.index.resize(static_cast<size_t>(out));
  t.weight.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    // area_pixel_compute_source_index with cubic = true: no clamping of negative positions.
    const A real = align_corners ? scale * static_cast<A>(o) : scale * (static_cast<A>(o) + static_cast<A>(0.5)) - static_cast<A>(0.5);
    // guard_index_and_lambda.
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const A l = std::min(std::max(real - static_cast<A>(i0), static_cast<A>(0)), static_cast<A>(1));
    t.weight[static_cast<size_t>(o)] = {conv2(l + 1), conv1(l), conv1(1 - l), conv2(2 - l)};
    for (int64_t j = 0; j < 4; ++j)
      t.index[static_cast<size_t>(o)][static_cast<size_t>(j)] = std::max<int64_t>(std::min(i0 - 1 + j, in - 1), 0);
  }
  return t;
}

}  // namespace

void upsample_bicubic2d(const Tensor& x, const Upsample2d& g, const Tensor& out) {
  visit_dtype<kGroupFloating>(x.dtype(), "upsample_bicubic2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const Taps<A> ty = cubic_taps<A>(g.ih, g.oh, g.align_corners, g.scales_h);
    const Taps<A> tx = cubic_taps<A>(g.iw, g.ow, g.align_corners, g.scales_w);
    const T* xd = x.data_ptr<T>();
    T* od = out.data_ptr<T>();
    const int64_t in_plane = g.ih * g.iw, out_plane = g.oh * g.ow;
    parallel_range(g.planes, threads_for(g.planes * out_plane * 16), [&](int64_t pl_begin, int64_t pl_end) {
      for (int64_t pl = pl_begin; pl < pl_end; ++pl) {
        const T* xp = xd + pl * in_plane;
        T* op = od + pl * out_plane;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const auto& iy = ty.index[static_cast<size_t>(oy)];
          const auto& wy = ty.weight[static_cast<size_t>(oy)];
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const auto& ix = tx.index[static_cast<size_t>(ox)];
            const auto& wx = tx.weight[static_cast<size_t>(ox)];
            A acc = 0;
            for (size_t j = 0; j < 4; ++j) {
              const T* row = xp + iy[j] * g.iw;
              A r = 0;
              for (size_t i = 0; i < 4; ++i) r += wx[i] * static_cast<A>(row[ix[i]]);
              acc += wy[j] * r;
            }
            op[oy * g.ow + ox] = convert<T>(acc);
          }
        }
      }
    });
  });
}

void upsample_bicubic2d_backward(const Tensor& grad_out, const Upsample2d& g, const Tensor& grad_in) {
  visit_dtype<kGroupFloating>(grad_out.dtype(), "upsample_bicubic2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const Taps<A> ty = cubic_taps<A>(g.ih, g.oh, g.align_corners, g.scales_h);
    const Taps<A> tx = cubic_taps<A>(g.iw, g.ow, g.align_corners, g.scales_w);
    const T* gd = grad_out.data_ptr<T>();
    T* gi = grad_in.data_ptr<T>();
    const int64_t in_plane = g.ih * g.iw, out_plane = g.oh * g.ow;
    parallel_range(g.planes, threads_for(g.planes * out_plane * 16), [&](int64_t pl_begin, int64_t pl_end) {
      for (int64_t pl = pl_begin; pl < pl_end; ++pl) {
        // Accumulate the plane in the opmath type (clamped taps hit the border many times).
        std::vector<A> acc(static_cast<size_t>(in_plane), A(0));
        const T* gp = gd + pl * out_plane;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const auto& iy = ty.index[static_cast<size_t>(oy)];
          const auto& wy = ty.weight[static_cast<size_t>(oy)];
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const auto& ix = tx.index[static_cast<size_t>(ox)];
            const auto& wx = tx.weight[static_cast<size_t>(ox)];
            const A v = static_cast<A>(gp[oy * g.ow + ox]);
            for (size_t j = 0; j < 4; ++j)
              for (size_t i = 0; i < 4; ++i) acc[static_cast<size_t>(iy[j] * g.iw + ix[i])] += v * wy[j] * wx[i];
          }
        }
        T* out = gi + pl * in_plane;
        for (int64_t k = 0; k < in_plane; ++k) out[k] = convert<T>(acc[static_cast<size_t>(k)]);
      }
    });
  });
}

}  // namespace loops
}  // namespace tensor::cpu
