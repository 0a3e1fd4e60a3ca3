// Channels-last layout (src/cpu/Layout.{h,cpp}, Note [Channels-last layout]): the two
// predicates on hand-built strides, and the layout (strides) and values of conv2d, max_pool2d,
// batch_norm and group_norm on tensors that are contiguous and channels-last at once, against
// float64 loops written here. The expected strides are libtorch 1.13.1's, measured on the same
// inputs (suggest_memory_format decides; batch_norm keeps NCHW strides for contiguous inputs).
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "src/cpu/Layout.h"

using namespace tensor;

namespace {

using Vec = std::vector<double>;
using Dims = std::vector<int64_t>;

Dims strides_of(const Tensor& t) { return Dims(t.strides().begin(), t.strides().end()); }

/// Values in row-major (NCHW) order, in float64.
Vec vals(const Tensor& t) {
  Tensor c = empty(t.sizes(), t.options().dtype(kFloat64));
  c.copy_(t.detach());
  const double* p = c.data_ptr<double>();
  return Vec(p, p + c.numel());
}

void expect_close(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
}

/// (N, C, H, W) values laid out channels-last: a permute of an (N, H, W, C) tensor.
Tensor cl_randn(int64_t n, int64_t c, int64_t h, int64_t w, ScalarType t) {
  return randn({n, h, w, c}, TensorOptions().dtype(t)).permute({0, 3, 1, 2});
}

/// The same values in a tensor allocated NCHW (empty() strides, size-1 dims included).
Tensor nchw_copy(const Tensor& x) { return empty(x.sizes(), x.options()).copy_(x); }

// ---- float64 references over row-major values ----

/// y[n, o, i, j] = b[o] + sum_{c, u, v} x[n, c, i + u - pad, j + v - pad] w[o, c, u, v] (stride 1).
Vec ref_conv2d(const Vec& x, Dims xs, const Vec& w, Dims ws, const Vec& b, int64_t pad) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], KH = ws[2], KW = ws[3];
  const int64_t OH = H + 2 * pad - KH + 1, OW = W + 2 * pad - KW + 1;
  Vec y(static_cast<size_t>(N * O * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = b[o];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t u = 0; u < KH; ++u)
              for (int64_t v = 0; v < KW; ++v) {
                const int64_t hi = i + u - pad, wi = j + v - pad;
                if (hi < 0 || hi >= H || wi < 0 || wi >= W) continue;
                s += x[((n * C + c) * H + hi) * W + wi] * w[((o * C + c) * KH + u) * KW + v];
              }
          y[((n * O + o) * OH + i) * OW + j] = s;
        }
  return y;
}

/// k x k max pooling, stride k, no padding.
Vec ref_max_pool(const Vec& x, Dims xs, int64_t k) {
  const int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3], OH = H / k, OW = W / k;
  Vec y(static_cast<size_t>(P * OH * OW));
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double m = -INFINITY;
        for (int64_t u = 0; u < k; ++u)
          for (int64_t v = 0; v < k; ++v) m = std::max(m, x[(p * H + i * k + u) * W + j * k + v]);
        y[(p * OH + i) * OW + j] = m;
      }
  return y;
}

/// Normalizes x (N, C, S) over each (n, group of C / G channels) when per_sample, else over
/// each channel across N and S (batch_norm, training); then y = x_hat * w[c] + b[c].
Vec ref_norm(const Vec& x, Dims xs, int64_t groups, bool per_sample, const Vec& w, const Vec& b, double eps) {
  const int64_t N = xs[0], C = xs[1], S = static_cast<int64_t>(x.size()) / (N * C), G = per_sample ? groups : C;
  const int64_t cg = C / G;
  Vec y(x.size());
  for (int64_t n0 = 0; n0 < (per_sample ? N : 1); ++n0)
    for (int64_t g = 0; g < G; ++g) {
      double s = 0, ss = 0, cnt = 0;
      auto each = [&](auto f) {
        for (int64_t n = per_sample ? n0 : 0; n < (per_sample ? n0 + 1 : N); ++n)
          for (int64_t c = g * cg; c < (g + 1) * cg; ++c)
            for (int64_t i = 0; i < S; ++i) f(static_cast<size_t>((n * C + c) * S + i), c);
      };
      each([&](size_t i, int64_t) { s += x[i], cnt += 1; });
      const double mean = s / cnt;
      each([&](size_t i, int64_t) { ss += (x[i] - mean) * (x[i] - mean); });
      const double rstd = 1 / std::sqrt(ss / cnt + eps);
      each([&](size_t i, int64_t c) { y[i] = (x[i] - mean) * rstd * w[c] + b[c]; });
    }
  return y;
}

Dims dims(IntArrayRef s) { return Dims(s.begin(), s.end()); }

double tol_of(ScalarType t) { return t == kFloat64 ? 1e-12 : 1e-4; }

/// The ambiguous inputs: contiguous and channels-last at once, in both spellings.
struct Ambiguous {
  std::string name;
  Tensor x;
  bool prefers_cl;
};

std::vector<Ambiguous> ambiguous_inputs(ScalarType t) {
  Tensor n1hw_cl = cl_randn(2, 1, 4, 6, t), nc11_cl = cl_randn(2, 3, 1, 1, t);
  return {{"(N,1,H,W) channels-last strides", n1hw_cl, true},
          {"(N,1,H,W) NCHW strides", nchw_copy(n1hw_cl), false},
          {"(N,C,1,1) channels-last strides", nc11_cl, true},
          {"(N,C,1,1) NCHW strides", nchw_copy(nc11_cl), false}};
}

const ScalarType kTypes[] = {kFloat32, kFloat64};

/// Runs body(a, t) for every ambiguous input in float32 and float64, under a SCOPED_TRACE naming
/// the case. A fatal failure in body ends only that case; the test still fails.
template <typename Body>
void for_each_ambiguous(Body&& body) {
  for (ScalarType t : kTypes) {
    for (const Ambiguous& a : ambiguous_inputs(t)) {
      SCOPED_TRACE(a.name + (t == kFloat64 ? " float64" : " float32"));
      body(a, t);
    }
  }
}

}  // namespace

TEST(ChannelsLastLayout, PredicatesOnHandBuiltStrides) {
  struct Case {
    std::string name;
    Tensor t;
    bool contiguous, cl_contiguous, prefers;
  };
  Tensor base = randn({2, 4, 6, 3});
  const std::vector<Case> cases = {
      {"NCHW", randn({2, 3, 4, 5}), true, false, false},
      {"channels-last (permute)", base.permute({0, 3, 1, 2}), false, true, true},
      {"channels-last, batch 1", randn({1, 4, 5, 3}).permute({0, 3, 1, 2}), false, true, true},
      {"(N,C,1,1) contiguous", randn({2, 3, 1, 1}), true, true, false},
      {"(N,C,1,1) channels-last strides", randn({2, 1, 1, 3}).permute({0, 3, 1, 2}), true, true, true},
      {"(1,C,1,1) channels-last strides", randn({1, 1, 1, 3}).permute({0, 3, 1, 2}), true, true, true},
      {"(N,1,H,W) contiguous", randn({2, 1, 4, 5}), true, true, false},
      {"(N,1,H,W) channels-last strides", randn({2, 4, 5, 1}).permute({0, 3, 1, 2}), true, true, true},
      {"(N,1,H,1) channels-last strides", randn({2, 4}).as_strided({2, 1, 4, 1}, {4, 1, 1, 1}), true, true, true},
      // N's stride equal to C's: NCHW by default (libtorch's N111 rule).
      {"(N,1,1,1)", randn({2, 1, 1, 1}).permute({0, 3, 1, 2}), true, true, false},
      {"expanded batch", randn({1, 4, 5, 3}).permute({0, 3, 1, 2}).expand({2, 3, 4, 5}), false, false, false},
      {"expanded channels", randn({2, 1, 4, 5}).expand({2, 3, 4, 5}), false, false, false},
      // Not dense: libtorch's suggest_memory_format says channels-last; here it is copied to NCHW.
      {"sliced W of channels-last", base.permute({0, 3, 1, 2}).slice(3, 0, 6, 2), false, false, false},
      {"sliced C of channels-last", base.permute({0, 3, 1, 2}).slice(1, 0, 2), false, false, false},
      {"sliced H of NCHW", randn({2, 3, 8, 5}).slice(2, 0, 4), false, false, false},
      // Dense channels-last, but a size-1 dim's stride breaks libtorch's order walk: NCHW there too.
      {"(N,C,H,1) odd W stride", randn({2, 4, 3}).as_strided({2, 3, 4, 1}, {12, 1, 3, 999}), false, true, false},
      {"(N,C,L) channels-last", randn({2, 5, 3}).permute({0, 2, 1}), false, true, true},
      {"(N,C,D,H,W) channels-last", randn({2, 2, 3, 4, 3}).permute({0, 4, 1, 2, 3}), false, true, true},
      {"2-d", randn({3, 4}).t(), false, false, false},
      {"empty", randn({0, 4, 5, 3}).permute({0, 3, 1, 2}), true, true, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.t.is_contiguous(), c.contiguous);
    EXPECT_EQ(cpu::is_channels_last_contiguous(c.t), c.cl_contiguous);
    EXPECT_EQ(cpu::prefers_channels_last(c.t), c.prefers);
  }
}

TEST(ChannelsLastLayout, Conv2dOnAmbiguousInputs) {
  manual_seed(1);
  for_each_ambiguous([&](const Ambiguous& a, ScalarType t) {
    const int64_t N = a.x.size(0), C = a.x.size(1), H = a.x.size(2), W = a.x.size(3);
    Tensor w = randn({4, C, 3, 3}, TensorOptions().dtype(t)), b = randn({4}, TensorOptions().dtype(t));
    // padding 1: a (N, C, 1, 1) input gives a (N, 4, 1, 1) output; padding 2 a real (N, 4, 3, 3) one.
    for (int64_t pad : {1, 2}) {
      SCOPED_TRACE("padding " + std::to_string(pad));
      Tensor y = conv2d(a.x, w, b, 1, pad);
      const int64_t OH = H + 2 * pad - 2, OW = W + 2 * pad - 2;
      ASSERT_EQ(dims(y.sizes()), (Dims{N, 4, OH, OW}));
      // libtorch: channels-last strides exactly when the input's suggest_memory_format is.
      const Dims want = a.prefers_cl ? Dims{OH * OW * 4, 1, OW * 4, 4} : Dims{OH * OW * 4, OH * OW, OW, 1};
      EXPECT_EQ(strides_of(y), want);
      expect_close(vals(y), ref_conv2d(vals(a.x), dims(a.x.sizes()), vals(w), dims(w.sizes()), vals(b), pad),
                   tol_of(t), "conv2d");
      expect_close(vals(y), vals(conv2d(nchw_copy(a.x), w, b, 1, pad)), tol_of(t), "conv2d vs NCHW input");
    }
    // The input gradient takes the input's layout (seen by a hook: accumulating it into .grad()
    // clones it), with the same values as from an NCHW input.
    Tensor xg = a.x.detach().requires_grad_(true), xn = nchw_copy(a.x).requires_grad_(true);
    bool grad_prefers_cl = !a.prefers_cl;
    xg.register_hook([&](Tensor g) {
      grad_prefers_cl = cpu::prefers_channels_last(g);
      return Tensor();
    });
    conv2d(xg, w, b, 1, 2).sum().backward();
    conv2d(xn, w, b, 1, 2).sum().backward();
    EXPECT_EQ(grad_prefers_cl, a.prefers_cl);
    expect_close(vals(xg.grad()), vals(xn.grad()), tol_of(t), "conv2d input gradient");
  });
}

TEST(ChannelsLastLayout, Conv2dOddSizeOneStrideTakesNchw) {
  // Dense channels-last but libtorch's suggest_memory_format says NCHW: the output is NCHW.
  Tensor x = randn({2, 4, 3}).as_strided({2, 3, 4, 1}, {12, 1, 3, 999});
  Tensor w = randn({4, 3, 1, 1});
  Tensor y = conv2d(x, w);
  EXPECT_EQ(strides_of(y), (Dims{16, 4, 1, 1}));
  expect_close(vals(y), ref_conv2d(vals(x), {2, 3, 4, 1}, vals(w), {4, 3, 1, 1}, Vec(4, 0.0), 0), 1e-4, "conv2d");
}

TEST(ChannelsLastLayout, MaxPool2dOnAmbiguousInputs) {
  manual_seed(2);
  for_each_ambiguous([&](const Ambiguous& a, ScalarType t) {
    const int64_t N = a.x.size(0), C = a.x.size(1);
    const int64_t k = a.x.size(2) == 1 ? 1 : 2, OH = a.x.size(2) / k, OW = a.x.size(3) / k;
    const Dims want = a.prefers_cl ? Dims{OH * OW * C, 1, OW * C, C} : Dims{C * OH * OW, OH * OW, OW, 1};
    const Vec ref = ref_max_pool(vals(a.x), dims(a.x.sizes()), k);
    Tensor y = max_pool2d(a.x, {k, k});  // oneDNN for float32, the loops for float64
    ASSERT_EQ(dims(y.sizes()), (Dims{N, C, OH, OW}));
    EXPECT_EQ(strides_of(y), want);
    expect_close(vals(y), ref, tol_of(t), "max_pool2d");
    auto [yi, idx] = max_pool2d_with_indices(a.x, {k, k});  // always the loops
    EXPECT_EQ(strides_of(yi), want);
    EXPECT_EQ(strides_of(idx), want);
    expect_close(vals(yi), ref, tol_of(t), "max_pool2d_with_indices");
    // Under autograd the indexed form runs; the gradient reaches each window's maximum.
    Tensor xg = a.x.detach().requires_grad_(true);
    max_pool2d(xg, {k, k}).sum().backward();
    const Vec g = vals(xg.grad()), xv = vals(a.x), yv = vals(y);
    double total = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      total += g[i];
      if (g[i] != 0) EXPECT_TRUE(std::find(yv.begin(), yv.end(), xv[i]) != yv.end());
    }
    EXPECT_EQ(total, static_cast<double>(N * C * OH * OW));
  });
}

TEST(ChannelsLastLayout, BatchNormOnAmbiguousInputs) {
  manual_seed(3);
  for_each_ambiguous([&](const Ambiguous& a, ScalarType t) {
    const int64_t C = a.x.size(1);
    Tensor w = randn({C}, TensorOptions().dtype(t)), b = randn({C}, TensorOptions().dtype(t));
    Tensor y = batch_norm(a.x, w, b, std::nullopt, std::nullopt, /*training=*/true, 0.1, 1e-5);
    // libtorch's batch_norm gives a contiguous input NCHW strides, whatever its size-1 strides.
    EXPECT_EQ(strides_of(y), strides_of(empty(a.x.sizes())));
    expect_close(vals(y), ref_norm(vals(a.x), dims(a.x.sizes()), 0, false, vals(w), vals(b), 1e-5), 10 * tol_of(t),
                 "batch_norm");
    Tensor rm = zeros({C}, TensorOptions().dtype(t)), rv = ones({C}, TensorOptions().dtype(t));
    Tensor ye = batch_norm(a.x, w, b, rm, rv, /*training=*/false, 0.1, 1e-5);
    EXPECT_EQ(strides_of(ye), strides_of(empty(a.x.sizes())));
    Vec want = vals(a.x);
    const Vec wv = vals(w), bv = vals(b);
    const int64_t S = a.x.size(2) * a.x.size(3);
    for (size_t i = 0; i < want.size(); ++i) {
      const int64_t c = static_cast<int64_t>(i) / S % C;
      want[i] = want[i] / std::sqrt(1 + 1e-5) * wv[c] + bv[c];
    }
    expect_close(vals(ye), want, tol_of(t), "batch_norm eval");
  });
  // A channels-last input that is not contiguous keeps channels-last (float32: oneDNN's nhwc kernel).
  Tensor x = cl_randn(2, 3, 4, 5, kFloat32);
  Tensor y = batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5);
  EXPECT_EQ(strides_of(y), (Dims{60, 1, 15, 3}));
  expect_close(vals(y), ref_norm(vals(x), {2, 3, 4, 5}, 0, false, Vec(3, 1.0), Vec(3, 0.0), 1e-5), 1e-4, "batch_norm");
}

TEST(ChannelsLastLayout, GroupNormOnAmbiguousInputs) {
  manual_seed(4);
  for_each_ambiguous([&](const Ambiguous& a, ScalarType t) {
    const int64_t N = a.x.size(0), C = a.x.size(1), H = a.x.size(2), W = a.x.size(3);
    // (N, C, 1, 1) with one channel per group would normalize single values: use one group there.
    const int64_t groups = C == 1 || H * W == 1 ? 1 : C;
    Tensor w = randn({C}, TensorOptions().dtype(t)), b = randn({C}, TensorOptions().dtype(t));
    Tensor y = group_norm(a.x, groups, w, b, 1e-5);
    // libtorch: the input's suggest_memory_format (same memory order either way here).
    const Dims want = a.prefers_cl ? Dims{H * W * C, 1, W * C, C} : Dims{C * H * W, H * W, W, 1};
    EXPECT_EQ(strides_of(y), want);
    expect_close(vals(y), ref_norm(vals(a.x), {N, C, H, W}, groups, true, vals(w), vals(b), 1e-5), 10 * tol_of(t),
                 "group_norm");
    expect_close(vals(y), vals(group_norm(nchw_copy(a.x), groups, w, b, 1e-5)), tol_of(t), "group_norm vs NCHW");
  });
}

TEST(ChannelsLastLayout, AmbiguousLayoutCarriesThroughAChain) {
  // group_norm keeps the channels-last strides of a (N, 1, H, W) input, so the following
  // convolution still sees a channels-last-preferring tensor and returns channels-last, as libtorch.
  manual_seed(5);
  Tensor x = cl_randn(2, 1, 4, 6, kFloat32);
  Tensor w = randn({4, 1, 3, 3});
  Tensor y = conv2d(group_norm(x, 1), w, std::nullopt, 1, 1);
  EXPECT_EQ(strides_of(y), (Dims{96, 1, 24, 4}));
  Tensor yn = conv2d(group_norm(nchw_copy(x), 1), w, std::nullopt, 1, 1);
  EXPECT_EQ(strides_of(yn), (Dims{96, 24, 6, 1}));
  expect_close(vals(y), vals(yn), 1e-4, "chain");
}

TEST(ChannelsLastLayout, UnbatchedChannelsLastTakesNchw) {
  // An unbatched (C, H, W) view of an (H, W, C) image becomes (1, C, H, W) with N's stride C,
  // which libtorch's suggest_memory_format reads as NCHW: its conv2d and max_pool2d return
  // NCHW strides (measured), and so do these.
  manual_seed(6);
  Tensor x = randn({4, 6, 3}).permute({2, 0, 1});
  Tensor w = randn({5, 3, 1, 1});
  Tensor y = conv2d(x, w);
  EXPECT_EQ(strides_of(y), (Dims{24, 6, 1}));
  expect_close(vals(y), ref_conv2d(vals(x), {1, 3, 4, 6}, vals(w), {5, 3, 1, 1}, Vec(5, 0.0), 0), 1e-4, "conv2d");
  Tensor p = max_pool2d(x, {2, 2});
  EXPECT_EQ(strides_of(p), (Dims{6, 3, 1}));
  expect_close(vals(p), ref_max_pool(vals(x), {1, 3, 4, 6}, 2), 0, "max_pool2d");
}
