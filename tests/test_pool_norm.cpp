// Pooling and normalization forward: each op against float64 reference loops written here
// (themselves checked on hand-computed cases), over batch 1, odd sizes, 1 and 3 channels,
// unbatched, non-contiguous and channels-last inputs, ceil_mode, padding, dilation,
// count_include_pad both ways and divisor_override; float64 and float32 (oneDNN) against the
// reference, bfloat16 within bfloat16 tolerance; running statistics by hand; error messages.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;

namespace {

using Vec = std::vector<double>;

Vec vals(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return Vec(p, p + c.numel());
}

void expect_close(const Vec& got, const Vec& want, double atol, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    if (!ok) {
      ADD_FAILURE() << what << ": at " << i << " got " << got[i] << " want " << want[i];
      ++bad;
    }
  }
}

/// Layouts every op is tried on.
enum class Layout { Contiguous, Strided, ChannelsLast };
const char* name(Layout l) { return l == Layout::Contiguous ? "contiguous" : l == Layout::Strided ? "strided" : "channels-last"; }

/// A random input of `shape` laid out as asked (channels-last needs 4 dims; others fall back).
Tensor make_input(std::vector<int64_t> shape, Layout l, ScalarType dt = kFloat64) {
  if (l == Layout::ChannelsLast && shape.size() == 4) {
    Tensor t = randn({shape[0], shape[2], shape[3], shape[1]}, dtype(dt)).permute({0, 3, 1, 2});
    return t;
  }
  if (l == Layout::Strided) {
    std::vector<int64_t> big = shape;
    big.back() *= 2;
    Tensor t = randn(big, dtype(dt)).slice(static_cast<int64_t>(shape.size()) - 1, 0, big.back(), 2);
    EXPECT_FALSE(t.is_contiguous());
    return t;
  }
  return randn(shape, dtype(dt));
}

// ---------------- float64 references ----------------
struct Geo {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  bool ceil = false;
};

int64_t out_size(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil) {
  const double num = static_cast<double>(in + 2 * p - d * (k - 1) - 1);
  int64_t o = static_cast<int64_t>(ceil ? std::ceil(num / s) : std::floor(num / s)) + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}

/// Pools each (H, W) plane of x (shape [..., H, W]); fn(plane, oy, ox) gives (value, index).
struct Pooled {
  Vec out;
  std::vector<int64_t> idx;
  int64_t oh, ow;
};

Pooled ref_max_pool(const Tensor& x, const Geo& g) {
  const int64_t H = x.size(-2), W = x.size(-1), P = x.numel() / (H * W);
  const Vec v = vals(x);
  Pooled r;
  r.oh = out_size(H, g.kh, g.ph, g.sh, g.dh, g.ceil);
  r.ow = out_size(W, g.kw, g.pw, g.sw, g.dw, g.ceil);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oy = 0; oy < r.oh; ++oy)
      for (int64_t ox = 0; ox < r.ow; ++ox) {
        double best = -INFINITY;
        int64_t bi = -1;
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t y = oy * g.sh - g.ph + ky * g.dh, xx = ox * g.sw - g.pw + kx * g.dw;
            if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
            const double e = v[p * H * W + y * W + xx];
            if (bi < 0 || e > best) best = e, bi = y * W + xx;  // first maximum
          }
        r.out.push_back(best);
        r.idx.push_back(bi);
      }
  return r;
}

Pooled ref_avg_pool(const Tensor& x, const Geo& g, bool cip, int64_t divisor) {
  const int64_t H = x.size(-2), W = x.size(-1), P = x.numel() / (H * W);
  const Vec v = vals(x);
  Pooled r;
  r.oh = out_size(H, g.kh, g.ph, g.sh, 1, g.ceil);
  r.ow = out_size(W, g.kw, g.pw, g.sw, 1, g.ceil);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oy = 0; oy < r.oh; ++oy)
      for (int64_t ox = 0; ox < r.ow; ++ox) {
        double s = 0;
        int64_t inside = 0, padded = 0;  // elements in the input; in the input or its padding
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t y = oy * g.sh - g.ph + ky, xx = ox * g.sw - g.pw + kx;
            if (y < H + g.ph && xx < W + g.pw) ++padded;  // window clipped to the padded input
            if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
            s += v[p * H * W + y * W + xx];
            ++inside;
          }
        r.out.push_back(divisor ? s / divisor : s / (cip ? padded : inside));
      }
  return r;
}

Vec ref_adaptive(const Tensor& x, int64_t oh, int64_t ow) {
  const int64_t H = x.size(-2), W = x.size(-1), P = x.numel() / (H * W);
  const Vec v = vals(x);
  Vec out;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t h0 = static_cast<int64_t>(std::floor(double(i * H) / oh)),
                      h1 = static_cast<int64_t>(std::ceil(double((i + 1) * H) / oh));
        const int64_t w0 = static_cast<int64_t>(std::floor(double(j * W) / ow)),
                      w1 = static_cast<int64_t>(std::ceil(double((j + 1) * W) / ow));
        double s = 0;
        for (int64_t y = h0; y < h1; ++y)
          for (int64_t xx = w0; xx < w1; ++xx) s += v[p * H * W + y * W + xx];
        out.push_back(s / double((h1 - h0) * (w1 - w0)));
      }
  return out;
}

/// Normalizes x viewed as (outer, groups, inner) blocks: statistics per (outer, group) over
/// inner when per_block, or per group over (outer, inner) (batch_norm); affine per `affine_of`.
struct NormRef {
  Vec out, mean, var;
};
NormRef ref_norm(const Vec& x, int64_t outer, int64_t groups, int64_t inner, bool stats_per_outer, double eps,
                 const std::function<double(int64_t o, int64_t g, int64_t i, double)>& affine, const Vec* given_mean = nullptr,
                 const Vec* given_var = nullptr) {
  NormRef r;
  r.out.resize(x.size());
  const int64_t nstat = stats_per_outer ? outer * groups : groups;
  r.mean.assign(static_cast<size_t>(nstat), 0);
  r.var.assign(static_cast<size_t>(nstat), 0);
  auto sid = [&](int64_t o, int64_t g) { return static_cast<size_t>(stats_per_outer ? o * groups + g : g); };
  auto at = [&](int64_t o, int64_t g, int64_t i) { return static_cast<size_t>((o * groups + g) * inner + i); };
  const double cnt = static_cast<double>(stats_per_outer ? inner : outer * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t i = 0; i < inner; ++i) r.mean[sid(o, g)] += x[at(o, g, i)] / cnt;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t i = 0; i < inner; ++i) {
        const double d = x[at(o, g, i)] - r.mean[sid(o, g)];
        r.var[sid(o, g)] += d * d / cnt;
      }
  if (given_mean) r.mean = *given_mean, r.var = *given_var;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t i = 0; i < inner; ++i) {
        const double xh = (x[at(o, g, i)] - r.mean[sid(o, g)]) / std::sqrt(r.var[sid(o, g)] + eps);
        r.out[at(o, g, i)] = affine(o, g, i, xh);
      }
  return r;
}

int64_t prod_from(const Tensor& t, int64_t d) {
  int64_t p = 1;
  for (int64_t i = d; i < t.dim(); ++i) p *= t.size(i);
  return p;
}

NormRef ref_batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Vec* rm = nullptr,
                       const Vec* rv = nullptr) {
  const Vec wv = w.defined() ? vals(w) : Vec(), bv = b.defined() ? vals(b) : Vec();
  return ref_norm(vals(x), x.size(0), x.size(1), prod_from(x, 2), false, eps,
                  [&](int64_t, int64_t c, int64_t, double xh) {
                    return xh * (wv.empty() ? 1 : wv[c]) + (bv.empty() ? 0 : bv[c]);
                  }, rm, rv);
}

NormRef ref_layer_norm(const Tensor& x, int64_t k, const Tensor& w, const Tensor& b, double eps) {
  const Vec wv = w.defined() ? vals(w) : Vec(), bv = b.defined() ? vals(b) : Vec();
  const int64_t cols = prod_from(x, x.dim() - k);
  return ref_norm(vals(x), x.numel() / cols, 1, cols, true, eps, [&](int64_t, int64_t, int64_t i, double xh) {
    return xh * (wv.empty() ? 1 : wv[i]) + (bv.empty() ? 0 : bv[i]);
  });
}

NormRef ref_group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps) {
  const Vec wv = w.defined() ? vals(w) : Vec(), bv = b.defined() ? vals(b) : Vec();
  const int64_t s = prod_from(x, 2), cpg = x.size(1) / groups;
  return ref_norm(vals(x), x.size(0), groups, cpg * s, true, eps, [&](int64_t, int64_t g, int64_t i, double xh) {
    const int64_t c = g * cpg + i / s;
    return xh * (wv.empty() ? 1 : wv[c]) + (bv.empty() ? 0 : bv[c]);
  });
}

/// Tolerances for comparing a dtype's result with the float64 reference.
struct Tol {
  double atol, rtol;
};
Tol tol_for(ScalarType t) {
  if (t == kFloat64) return {1e-12, 1e-12};
  if (t == kFloat32) return {2e-5, 2e-5};
  return {3e-2, 2e-2};  // bfloat16: 8 bits of mantissa, on values of order 1
}

}  // namespace

// ---------------- the references on hand-computed cases ----------------
TEST(PoolNormReference, HandComputed) {
  Tensor x = arange(16, dtype(kFloat64)).view({1, 1, 4, 4});
  Pooled m = ref_max_pool(x, {2, 2, 2, 2, 0, 0});
  EXPECT_EQ(m.out, (Vec{5, 7, 13, 15}));
  EXPECT_EQ(m.idx, (std::vector<int64_t>{5, 7, 13, 15}));
  Tensor ones3 = ones({1, 1, 3, 3}, kFloat64);
  // k=2, s=1, p=1 on 3x3 ones: 4x4 output; a corner window holds one input element.
  Pooled a = ref_avg_pool(ones3, {2, 2, 1, 1, 1, 1}, true, 0);
  EXPECT_EQ(a.oh, 4);
  EXPECT_DOUBLE_EQ(a.out[0], 0.25);
  EXPECT_DOUBLE_EQ(a.out[1], 0.5);
  EXPECT_DOUBLE_EQ(a.out[5], 1.0);
  EXPECT_DOUBLE_EQ(ref_avg_pool(ones3, {2, 2, 1, 1, 1, 1}, false, 0).out[0], 1.0);
  EXPECT_DOUBLE_EQ(ref_avg_pool(ones3, {2, 2, 1, 1, 1, 1}, true, 3).out[5], 4.0 / 3);
  // Windows of 5 -> 2: [0, 3) and [2, 5).
  EXPECT_EQ(ref_adaptive(tensor::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64).view({1, 1, 1, 5}), 1, 2), (Vec{2, 4}));
  // batch_norm over [1, 2, 3, 4]: mean 2.5, biased variance 1.25.
  NormRef bn = ref_batch_norm(tensor::tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).view({4, 1}), Tensor(), Tensor(), 0.0);
  EXPECT_DOUBLE_EQ(bn.mean[0], 2.5);
  EXPECT_DOUBLE_EQ(bn.var[0], 1.25);
  EXPECT_NEAR(bn.out[0], -1.5 / std::sqrt(1.25), 1e-15);
  NormRef ln = ref_layer_norm(tensor::tensor({1.0, 2.0, 3.0}, kFloat64).view({1, 3}), 1, Tensor(), Tensor(), 0.0);
  EXPECT_NEAR(ln.out[2], 1.0 / std::sqrt(2.0 / 3), 1e-15);
  NormRef gn = ref_group_norm(tensor::tensor({1.0, 3.0, 2.0, 6.0}, kFloat64).view({1, 4, 1}), 2, Tensor(), Tensor(), 0.0);
  EXPECT_EQ(gn.out, (Vec{-1, 1, -1, 1}));
  EXPECT_EQ(gn.var, (Vec{1, 4}));
}

// ---------------- the ops on hand-computed cases ----------------
TEST(PoolNorm, HandComputedValues) {
  for (ScalarType dt : {kFloat64, kFloat32}) {
    Tensor x = arange(16, dtype(dt)).view({1, 1, 4, 4});
    auto [v, i] = max_pool2d_with_indices(x, {2});
    EXPECT_EQ(vals(v), (Vec{5, 7, 13, 15}));
    EXPECT_EQ(vals(i.to(kFloat64)), (Vec{5, 7, 13, 15}));
    EXPECT_EQ(i.dtype(), kInt64);
    EXPECT_EQ(vals(max_pool2d(x, {2})), (Vec{5, 7, 13, 15}));
    EXPECT_EQ(vals(avg_pool2d(x, {2})), (Vec{2.5, 4.5, 10.5, 12.5}));
    EXPECT_EQ(vals(adaptive_avg_pool2d(x, {1, 1})), (Vec{7.5}));
    // Ties: the first maximum in row-major window order.
    Tensor t = tensor::tensor({1.0, 3.0, 3.0, 3.0}, dt).view({1, 2, 2});
    EXPECT_EQ(std::get<1>(max_pool2d_with_indices(t, {2})).item<int64_t>(), 1);
    Tensor bn = batch_norm(tensor::tensor({1.0, 2.0, 3.0, 4.0}, dt).view({4, 1}), {}, {}, {}, {}, true, 0.1, 0.0);
    expect_close(vals(bn), {-1.5 / std::sqrt(1.25), -0.5 / std::sqrt(1.25), 0.5 / std::sqrt(1.25), 1.5 / std::sqrt(1.25)},
                 1e-6, 1e-6, "batch_norm by hand");
    Tensor gn = group_norm(tensor::tensor({1.0, 3.0, 2.0, 6.0}, dt).view({1, 4, 1}), 2, {}, {}, 0.0);
    expect_close(vals(gn), {-1, 1, -1, 1}, 1e-6, 1e-6, "group_norm by hand");
  }
}

TEST(PoolNorm, RunningStatsByHand) {
  for (ScalarType dt : {kFloat64, kFloat32}) {
    SCOPED_TRACE(to_string(dt));
    Tensor x = tensor::tensor({1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0}, dt).view({2, 2, 2});  // (N=2, C=2, L=2)
    // channel 0: {1, 2, 10, 20}: mean 8.25, unbiased var 232.75 / 3; channel 1: {3, 4, 30, 40}: mean 19.25
    Tensor rm = tensor::tensor({0.5, -1.0}, dt), rv = tensor::tensor({2.0, 3.0}, dt);
    Tensor y = batch_norm(x, {}, {}, rm, rv, true, 0.1, 1e-5);
    expect_close(vals(rm), {0.9 * 0.5 + 0.1 * 8.25, 0.9 * -1.0 + 0.1 * 19.25}, 1e-6, 1e-6, "running_mean");
    const double v0 = (std::pow(1 - 8.25, 2) + std::pow(2 - 8.25, 2) + std::pow(10 - 8.25, 2) + std::pow(20 - 8.25, 2)) / 3;
    const double v1 = (std::pow(3 - 19.25, 2) + std::pow(4 - 19.25, 2) + std::pow(30 - 19.25, 2) + std::pow(40 - 19.25, 2)) / 3;
    EXPECT_NEAR(v0, 232.75 / 3, 1e-12);
    EXPECT_NEAR(v1, 1042.75 / 3, 1e-12);
    expect_close(vals(rv), {0.9 * 2.0 + 0.1 * v0, 0.9 * 3.0 + 0.1 * v1}, 1e-5, 1e-6, "running_var (unbiased)");
    // The output used the biased batch variance.
    EXPECT_NEAR(vals(y)[0], (1 - 8.25) / std::sqrt(v0 * 3 / 4 + 1e-5), 1e-5);
    // Eval mode uses the running statistics and leaves them alone.
    const Vec rm_before = vals(rm), rv_before = vals(rv);
    Tensor ye = batch_norm(x, {}, {}, rm, rv, false, 0.1, 1e-5);
    EXPECT_EQ(vals(rm), rm_before);
    EXPECT_EQ(vals(rv), rv_before);
    EXPECT_NEAR(vals(ye)[0], (1 - rm_before[0]) / std::sqrt(rv_before[0] + 1e-5), 1e-5);
    EXPECT_NEAR(vals(ye)[2], (3 - rm_before[1]) / std::sqrt(rv_before[1] + 1e-5), 1e-5);
  }
}

// ---------------- pooling against the references ----------------
namespace {
std::vector<std::vector<int64_t>> pool_shapes() { return {{1, 1, 5, 5}, {2, 3, 7, 6}, {1, 3, 8, 9}, {3, 9, 7}}; }

struct PoolCase {
  Geo g;
  const char* what;
};
std::vector<PoolCase> max_cases() {
  return {{{2, 2, 2, 2, 0, 0}, "k2 s2"},
          {{3, 3, 2, 2, 1, 1}, "k3 s2 p1"},
          {{3, 3, 2, 2, 1, 1, 1, 1, true}, "k3 s2 p1 ceil"},
          {{2, 2, 2, 2, 0, 0, 1, 1, true}, "k2 s2 ceil"},
          {{3, 2, 2, 1, 1, 0}, "k(3,2) s(2,1) p(1,0)"},
          {{3, 3, 1, 1, 1, 1, 2, 2}, "k3 s1 p1 dilation 2"},
          {{2, 3, 1, 2, 0, 1, 2, 1, true}, "k(2,3) s(1,2) p(0,1) dilation (2,1) ceil"}};
}
std::string tag(const std::vector<int64_t>& s, Layout l, ScalarType dt, const char* what) {
  std::string r = "[";
  for (int64_t v : s) r += std::to_string(v) + ",";
  return r + "] " + name(l) + " " + to_string(dt) + " " + what;
}
}  // namespace

TEST(PoolNorm, MaxPoolMatchesReference) {
  manual_seed(1);
  for (const auto& shape : pool_shapes())
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast})
      for (ScalarType dt : {kFloat64, kFloat32, kBFloat16})
        for (const PoolCase& pc : max_cases()) {
          const Geo& g = pc.g;
          const std::string what = tag(shape, l, dt, pc.what);
          Tensor x = make_input(shape, l, dt);
          if (out_size(x.size(-2), g.kh, g.ph, g.sh, g.dh, g.ceil) < 1 || out_size(x.size(-1), g.kw, g.pw, g.sw, g.dw, g.ceil) < 1)
            continue;
          Pooled r = ref_max_pool(x, g);  // x in its own dtype: maxima are exact
          Tensor y = max_pool2d(x, {g.kh, g.kw}, {g.sh, g.sw}, {g.ph, g.pw}, {g.dh, g.dw}, g.ceil);
          ASSERT_EQ(y.dim(), x.dim()) << what;
          EXPECT_EQ(y.size(-2), r.oh) << what;
          EXPECT_EQ(y.size(-1), r.ow) << what;
          EXPECT_EQ(y.dtype(), dt);
          expect_close(vals(y), r.out, 0, 0, what);
          auto [v, i] = max_pool2d_with_indices(x, {g.kh, g.kw}, {g.sh, g.sw}, {g.ph, g.pw}, {g.dh, g.dw}, g.ceil);
          expect_close(vals(v), r.out, 0, 0, what + " with_indices");
          Vec want_idx(r.idx.begin(), r.idx.end());
          expect_close(vals(i), want_idx, 0, 0, what + " indices");
        }
}

TEST(PoolNorm, MaxPoolTiesAndDefaults) {
  // Integer-valued inputs make many ties; the index is the first maximum, as libtorch.
  manual_seed(2);
  Tensor x = randint(0, 3, {2, 3, 6, 7}).to(kFloat32);
  Pooled r = ref_max_pool(x, {3, 3, 2, 2, 1, 1});
  auto [v, i] = max_pool2d_with_indices(x, {3}, {2}, {1});
  expect_close(vals(i), Vec(r.idx.begin(), r.idx.end()), 0, 0, "tie indices");
  // stride defaults to the kernel size.
  EXPECT_EQ(vals(max_pool2d(x, {2})), vals(max_pool2d(x, {2}, {2})));
  EXPECT_EQ(max_pool2d(x, {2}).sizes(), IntArrayRef({2, 3, 3, 3}));
  // An empty batch gives an empty result.
  EXPECT_EQ(max_pool2d(zeros({0, 3, 4, 4}), {2}).sizes(), IntArrayRef({0, 3, 2, 2}));
  // NaN wins in the indexed form (and so under autograd), as libtorch; the oneDNN form's NaN
  // handling is oneDNN's (Note [Max pooling and NaN]).
  Tensor n = tensor::tensor({1.0, std::nan(""), 5.0, 2.0}, kFloat32).view({1, 2, 2});
  auto [nv, ni] = max_pool2d_with_indices(n, {2});
  EXPECT_TRUE(std::isnan(nv.item<double>()));
  EXPECT_EQ(ni.item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(max_pool2d(n.to(kFloat64), {2}).item<double>()));
}

TEST(PoolNorm, AvgPoolMatchesReference) {
  manual_seed(3);
  std::vector<PoolCase> cases = {{{2, 2, 2, 2, 0, 0}, "k2 s2"},
                                 {{3, 3, 2, 2, 1, 1}, "k3 s2 p1"},
                                 {{3, 3, 2, 2, 1, 1, 1, 1, true}, "k3 s2 p1 ceil"},
                                 {{2, 2, 2, 2, 1, 1, 1, 1, true}, "k2 s2 p1 ceil"},
                                 {{3, 2, 2, 1, 1, 0}, "k(3,2) s(2,1) p(1,0)"},
                                 {{3, 3, 3, 3, 0, 0, 1, 1, true}, "k3 s3 ceil"}};
  for (const auto& shape : pool_shapes())
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast})
      for (ScalarType dt : {kFloat64, kFloat32, kBFloat16})
        for (const PoolCase& pc : cases)
          for (bool cip : {true, false})
            for (int64_t div : {0, 3}) {
              const Geo& g = pc.g;
              std::string what = tag(shape, l, dt, pc.what) + (cip ? " include_pad" : " exclude_pad") +
                                 (div ? " divisor 3" : "");
              Tensor x = make_input(shape, l, dt);
              if (out_size(x.size(-2), g.kh, g.ph, g.sh, 1, g.ceil) < 1 || out_size(x.size(-1), g.kw, g.pw, g.sw, 1, g.ceil) < 1)
                continue;
              Pooled r = ref_avg_pool(x, g, cip, div);
              std::optional<int64_t> d = div ? std::optional<int64_t>(div) : std::nullopt;
              Tensor y = avg_pool2d(x, {g.kh, g.kw}, {g.sh, g.sw}, {g.ph, g.pw}, g.ceil, cip, d);
              EXPECT_EQ(y.size(-2), r.oh) << what;
              EXPECT_EQ(y.size(-1), r.ow) << what;
              const Tol t = tol_for(dt);
              expect_close(vals(y), r.out, t.atol, t.rtol, what);
            }
}

TEST(PoolNorm, AdaptiveAvgPoolMatchesReference) {
  manual_seed(4);
  std::vector<std::vector<int64_t>> outs = {{1, 1}, {2, 2}, {3, 2}, {5, 4}, {7, 6}, {4, 9}};
  for (const auto& shape : pool_shapes())
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast})
      for (ScalarType dt : {kFloat64, kFloat32, kBFloat16})
        for (const auto& o : outs) {
          std::string what = tag(shape, l, dt, "adaptive") + " -> " + std::to_string(o[0]) + "x" + std::to_string(o[1]);
          Tensor x = make_input(shape, l, dt);
          Tensor y = adaptive_avg_pool2d(x, o);
          EXPECT_EQ(y.size(-2), o[0]) << what;
          EXPECT_EQ(y.size(-1), o[1]) << what;
          const Tol t = tol_for(dt);
          expect_close(vals(y), ref_adaptive(x, o[0], o[1]), t.atol, t.rtol, what);
        }
}

// ---------------- normalization against the references ----------------
TEST(PoolNorm, BatchNormMatchesReference) {
  manual_seed(5);
  std::vector<std::vector<int64_t>> shapes = {{5, 3}, {1, 1, 7}, {2, 3, 7}, {2, 3, 5, 4}, {1, 3, 3, 3}, {2, 3, 2, 3, 4}};
  for (const auto& shape : shapes)
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast})
      for (ScalarType dt : {kFloat64, kFloat32, kBFloat16})
        for (bool affine : {true, false})
          for (bool training : {true, false}) {
            std::string what = tag(shape, l, dt, training ? "train" : "eval") + (affine ? " affine" : "");
            Tensor x = make_input(shape, l, dt);
            const int64_t c = shape[1];
            // Weights in the input dtype, as a module converted with .to(dtype) holds them.
            Tensor w = affine ? randn({c}, dtype(dt)) : Tensor(), b = affine ? randn({c}, dtype(dt)) : Tensor();
            Tensor rm = randn({c}, dtype(kFloat32)), rv = rand({c}, dtype(kFloat32)) + 0.5;
            const Vec rm0 = vals(rm), rv0 = vals(rv);
            Tensor y = batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5);
            NormRef r = training ? ref_batch_norm(x, w, b, 1e-5) : ref_batch_norm(x, w, b, 1e-5, &rm0, &rv0);
            ASSERT_EQ(y.sizes(), x.sizes()) << what;
            const Tol t = tol_for(dt);
            expect_close(vals(y), r.out, t.atol * 4, t.rtol, what);
            if (!training) {
              EXPECT_EQ(vals(rm), rm0) << what;
              continue;
            }
            const double n = static_cast<double>(x.numel() / c);
            Vec want_m, want_v;
            for (int64_t i = 0; i < c; ++i) {
              want_m.push_back(0.9 * rm0[i] + 0.1 * r.mean[i]);
              want_v.push_back(0.9 * rv0[i] + 0.1 * r.var[i] * n / (n - 1));
            }
            const double st = dt == kBFloat16 ? 1e-2 : 1e-5;
            expect_close(vals(rm), want_m, st, st, what + " running_mean");
            expect_close(vals(rv), want_v, st, st, what + " running_var");
          }
}

TEST(PoolNorm, LayerNormMatchesReference) {
  manual_seed(6);
  struct C {
    std::vector<int64_t> shape, ns;
  };
  std::vector<C> cases = {{{6, 8}, {8}}, {{2, 3, 4, 5}, {4, 5}}, {{3, 7}, {3, 7}}, {{1, 5}, {5}}, {{2, 3, 9}, {9}}};
  for (const C& c : cases)
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast})
      for (ScalarType dt : {kFloat64, kFloat32, kBFloat16})
        for (bool affine : {true, false}) {
          std::string what = tag(c.shape, l, dt, "layer_norm") + (affine ? " affine" : "");
          Tensor x = make_input(c.shape, l, dt);
          Tensor w = affine ? randn(c.ns, dtype(dt)) : Tensor(), b = affine ? randn(c.ns, dtype(dt)) : Tensor();
          Tensor y = layer_norm(x, c.ns, w, b, 1e-5);
          const Tol t = tol_for(dt);
          expect_close(vals(y), ref_layer_norm(x, static_cast<int64_t>(c.ns.size()), w, b, 1e-5).out, t.atol * 4, t.rtol,
                       what);
        }
}

TEST(PoolNorm, SmallFloat32LayerNormMatchesReference) {
  // Float32 under the parallel grain takes the Highway row loop (Note [Small layer_norm]):
  // rows shorter than a vector, ragged ones, one over the summation block (1024), a mean far
  // from zero relative to the spread, and the saved mean and variance (read by the backward,
  // checked through the gradient against float64 autograd).
  manual_seed(16);
  struct C {
    int64_t rows, cols;
    double offset, scale;
  };
  for (const C& c : {C{64, 64, 0, 1}, C{5, 7, 0, 1}, C{3, 1500, 0, 1}, C{4, 100, 50, 0.5}, C{2, 33, -300, 2}})
    for (bool affine : {true, false}) {
      const std::string what = "layer_norm [" + std::to_string(c.rows) + ", " + std::to_string(c.cols) + "] offset " +
                               std::to_string(c.offset) + (affine ? " affine" : "");
      Tensor x = (randn({c.rows, c.cols}, kFloat64) * c.scale + c.offset).to(kFloat32);
      Tensor w = affine ? randn({c.cols}) : Tensor(), b = affine ? randn({c.cols}) : Tensor();
      Tensor xg = x.detach().requires_grad_(true);
      Tensor y = layer_norm(xg, {c.cols}, w, b, 1e-5);
      expect_close(vals(y), ref_layer_norm(x, 1, w, b, 1e-5).out, 1e-5, 1e-5, what);
      Tensor g = randn({c.rows, c.cols});
      y.backward(g);
      Tensor x64 = x.to(kFloat64).requires_grad_(true);
      layer_norm(x64, {c.cols}, affine ? w.to(kFloat64) : Tensor(), affine ? b.to(kFloat64) : Tensor(), 1e-5)
          .backward(g.to(kFloat64));
      expect_close(vals(xg.grad()), vals(x64.grad()), 2e-4, 2e-4, what + " grad");
    }
}

TEST(PoolNorm, GroupNormMatchesReference) {
  manual_seed(7);
  struct C {
    std::vector<int64_t> shape;
    int64_t groups;
  };
  std::vector<C> cases = {{{2, 6, 5}, 3}, {{2, 6, 4, 3}, 2}, {{1, 3, 5, 5}, 1}, {{2, 3, 4, 4}, 3}, {{3, 4}, 2}, {{1, 1, 7}, 1}};
  for (const C& c : cases)
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::ChannelsLast})
      for (ScalarType dt : {kFloat64, kFloat32, kBFloat16})
        for (bool affine : {true, false}) {
          std::string what = tag(c.shape, l, dt, "group_norm") + " groups " + std::to_string(c.groups) + (affine ? " affine" : "");
          Tensor x = make_input(c.shape, l, dt);
          Tensor w = affine ? randn({c.shape[1]}, dtype(dt)) : Tensor(), b = affine ? randn({c.shape[1]}, dtype(dt)) : Tensor();
          Tensor y = group_norm(x, c.groups, w, b, 1e-5);
          const Tol t = tol_for(dt);
          expect_close(vals(y), ref_group_norm(x, c.groups, w, b, 1e-5).out, t.atol * 4, t.rtol, what);
        }
}

TEST(PoolNorm, Float32GroupNormAndBatchNormGradientsMatchFloat64) {
  // The float32 loops' row sums and affine passes (cpu::rows, Note [Blocked float32 sums]):
  // planes shorter than a vector, ragged ones, ones over the summation block (1024), against
  // the float64 loops (gradchecked in test_pool_norm_gradcheck.cpp).
  manual_seed(17);
  struct C {
    std::vector<int64_t> shape;
    int64_t groups;
  };
  for (const C& c : {C{{3, 4, 5}, 2}, C{{8, 64, 7, 7}, 32}, C{{2, 6, 33, 35}, 3}})
    for (bool group : {true, false}) {
      const std::string what = std::string(group ? "group_norm " : "batch_norm ") + std::to_string(c.shape[2]);
      const int64_t ch = c.shape[1];
      Tensor x = randn(c.shape) * 2 + 0.5, g = randn(c.shape);
      Tensor w = randn({ch}) + 1, b = randn({ch});
      auto run = [&](ScalarType dt) {
        Tensor xi = x.to(dt).detach().requires_grad_(true), wi = w.to(dt).detach().requires_grad_(true);
        Tensor bi = b.to(dt).detach().requires_grad_(true);
        Tensor y = group ? group_norm(xi, c.groups, wi, bi, 1e-5)
                         : batch_norm(xi, wi, bi, std::nullopt, std::nullopt, /*training=*/true, 0.1, 1e-5);
        y.backward(g.to(dt));
        return std::vector<Tensor>{y.detach(), xi.grad(), wi.grad(), bi.grad()};
      };
      const std::vector<Tensor> f32 = run(kFloat32), f64 = run(kFloat64);
      const char* names[] = {" out", " grad_input", " grad_weight", " grad_bias"};
      for (size_t i = 0; i < 4; ++i) {
        const double tol = i < 2 ? 1e-4 : 1e-4 * std::sqrt(static_cast<double>(x.numel() / ch));
        expect_close(vals(f32[i]), vals(f64[i]), tol, 1e-4, what + names[i]);
      }
    }
}

TEST(PoolNorm, Float16UsesTheLoops) {
  manual_seed(8);
  Tensor x = randn({2, 3, 6, 6});
  Tensor h = x.to(kFloat16);
  expect_close(vals(max_pool2d(h, {2})), vals(max_pool2d(h.to(kFloat32), {2})), 0, 0, "float16 max_pool2d");
  expect_close(vals(avg_pool2d(h, {3}, {2}, {1})), ref_avg_pool(h, {3, 3, 2, 2, 1, 1}, true, 0).out, 1e-2, 1e-2,
               "float16 avg_pool2d");
  expect_close(vals(layer_norm(h, {6})), ref_layer_norm(h, 1, Tensor(), Tensor(), 1e-5).out, 1e-2, 1e-2,
               "float16 layer_norm");
  expect_close(vals(batch_norm(h, {}, {}, {}, {}, true, 0.1, 1e-5)), ref_batch_norm(h, Tensor(), Tensor(), 1e-5).out, 1e-2,
               1e-2, "float16 batch_norm");
}

TEST(PoolNorm, PrimitiveCacheIsReused) {
  Tensor x = randn({2, 4, 10, 10});
  Tensor w = ones({4}), b = zeros({4});
  (void)max_pool2d(x, {2});
  (void)batch_norm(x, w, b, {}, {}, true, 0.1, 1e-5);
  (void)layer_norm(x, {10});
  const size_t misses = onednn::primitive_cache_misses();
  for (int i = 0; i < 3; ++i) {
    (void)max_pool2d(x, {2});
    (void)batch_norm(x, w, b, {}, {}, true, 0.1, 1e-5);
    (void)layer_norm(x, {10});
  }
  EXPECT_EQ(onednn::primitive_cache_misses(), misses);
  (void)max_pool2d(x, {3});  // another kernel size is another primitive
  EXPECT_EQ(onednn::primitive_cache_misses(), misses + 1);
}

TEST(PoolNorm, MetaTensorsGiveShapes) {
  Tensor x = empty({2, 3, 9, 8}, TensorOptions().device(kMeta));
  EXPECT_EQ(max_pool2d(x, {3}, {2}, {1}, {1}, true).sizes(), IntArrayRef({2, 3, 5, 5}));
  EXPECT_EQ(max_pool2d(x, {3}, {2}, {0}, {1}, true).sizes(), IntArrayRef({2, 3, 4, 4}));
  EXPECT_EQ(avg_pool2d(x, {2}).sizes(), IntArrayRef({2, 3, 4, 4}));
  EXPECT_EQ(adaptive_avg_pool2d(x, {3, 3}).sizes(), IntArrayRef({2, 3, 3, 3}));
  EXPECT_EQ(batch_norm(x, {}, {}, {}, {}, true, 0.1, 1e-5).sizes(), x.sizes());
  EXPECT_EQ(group_norm(x, 3).sizes(), x.sizes());
  EXPECT_EQ(layer_norm(x, {9, 8}).sizes(), x.sizes());
}

// Every pooling and normalization op (and, through autograd, its backward) is a front end: on
// meta tensors it checks and sizes the results and touches no data.
TEST(PoolNorm, MetaShapesWithoutData) {
  const TensorOptions meta = TensorOptions().dtype(kFloat32).device(kMeta);
  auto expect_meta = [](const Tensor& t, const std::vector<int64_t>& sizes, ScalarType dt, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(t.sizes().vec(), sizes);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_THROW(t.data_ptr(), Error);
  };
  Tensor big = empty({4096, 256, 224, 224}, meta);
  expect_meta(max_pool2d(big, {2}), {4096, 256, 112, 112}, kFloat32, "max_pool2d");
  auto [v, i] = max_pool2d_with_indices(empty({3, 9, 8}, meta.dtype(kFloat64)), {3}, {2}, {1}, {1}, true);
  expect_meta(v, {3, 5, 5}, kFloat64, "max_pool2d_with_indices values");
  expect_meta(i, {3, 5, 5}, kInt64, "max_pool2d_with_indices indices");
  expect_meta(avg_pool2d(big.to(kBFloat16), {3}, {2}, {1}), {4096, 256, 112, 112}, kBFloat16, "avg_pool2d");
  expect_meta(adaptive_avg_pool2d(big, {7, 7}), {4096, 256, 7, 7}, kFloat32, "adaptive_avg_pool2d");
  expect_meta(adaptive_avg_pool2d(big, {1, 1}), {4096, 256, 1, 1}, kFloat32, "global pooling");
  Tensor rm = empty({256}, meta), rv = empty({256}, meta);
  expect_meta(batch_norm(big, {}, {}, rm, rv, true, 0.1, 1e-5), {4096, 256, 224, 224}, kFloat32, "batch_norm");
  expect_meta(batch_norm(big.to(kFloat64), {}, {}, rm, rv, false, 0.1, 1e-5), {4096, 256, 224, 224}, kFloat64,
              "batch_norm eval float64");
  expect_meta(layer_norm(big, {224, 224}), {4096, 256, 224, 224}, kFloat32, "layer_norm");
  expect_meta(group_norm(big, 32), {4096, 256, 224, 224}, kFloat32, "group_norm");
  // The same checks as on the CPU.
  expect_error([&] { max_pool2d(big, {7}, {1}, {4}); }, {"max_pool2d", "half of kernel size"});
  expect_error([&] { group_norm(big, 3); }, {"group_norm", "divisible by num_groups"});
  // The backward ops, through autograd.
  auto grad_of = [&](const std::function<Tensor(const Tensor&)>& f, const Tensor& x0) {
    Tensor x = x0.detach().requires_grad_(true);
    f(x).sum().backward();
    return x.grad();
  };
  Tensor x = empty({8, 16, 10, 10}, meta);
  expect_meta(grad_of([](const Tensor& t) { return max_pool2d(t, {2}); }, x), {8, 16, 10, 10}, kFloat32,
              "max_pool2d backward");
  expect_meta(grad_of([](const Tensor& t) { return avg_pool2d(t, {3}, {2}, {1}); }, x), {8, 16, 10, 10}, kFloat32,
              "avg_pool2d backward");
  expect_meta(grad_of([](const Tensor& t) { return adaptive_avg_pool2d(t, {3, 3}); }, x), {8, 16, 10, 10}, kFloat32,
              "adaptive_avg_pool2d backward");
  expect_meta(grad_of([](const Tensor& t) { return batch_norm(t, {}, {}, {}, {}, true, 0.1, 1e-5); }, x),
              {8, 16, 10, 10}, kFloat32, "batch_norm backward");
  expect_meta(grad_of([](const Tensor& t) { return layer_norm(t, {10, 10}); }, x), {8, 16, 10, 10}, kFloat32,
              "layer_norm backward");
  expect_meta(grad_of([](const Tensor& t) { return group_norm(t, 4); }, x), {8, 16, 10, 10}, kFloat32,
              "group_norm backward");
}

// ---------------- errors ----------------

TEST(PoolNorm, ErrorsNameOpAndShapes) {
  Tensor x = randn({2, 3, 5, 5});
  expect_error([&] { max_pool2d(randn({5, 5}), {2}); }, {"max_pool2d", "[5, 5]"});
  expect_error([&] { max_pool2d(x, {7}); }, {"max_pool2d", "[2, 3, 5, 5]", "too small"});
  expect_error([&] { max_pool2d(x, {2}, {2}, {2}); }, {"max_pool2d", "half of kernel size", "[2, 3, 5, 5]"});
  expect_error([&] { max_pool2d(x, {0}); }, {"max_pool2d", "kernel_size", "greater than zero"});
  expect_error([&] { max_pool2d(x, {2}, {-1}); }, {"max_pool2d", "stride"});
  expect_error([&] { max_pool2d(x, {2, 2, 2}); }, {"max_pool2d", "kernel_size", "[2, 2, 2]"});
  expect_error([&] { max_pool2d(x, {2}, {}, 0, {0}); }, {"max_pool2d", "dilation"});
  expect_error([&] { max_pool2d(randint(0, 5, {1, 4, 4}), {2}); }, {"max_pool2d", "floating point", "int64"});
  expect_error([&] { max_pool2d(randn({2, 0, 4, 4}), {2}); }, {"max_pool2d", "[2, 0, 4, 4]"});
  expect_error([&] { max_pool2d_with_indices(x, {6}); }, {"max_pool2d_with_indices", "too small"});
  expect_error([&] { avg_pool2d(x, {3}, {1}, {2}); }, {"avg_pool2d", "half of kernel size"});
  expect_error([&] { avg_pool2d(x, {2}, {}, 0, false, true, 0); }, {"avg_pool2d", "divisor_override"});
  expect_error([&] { avg_pool2d(randn({4}), {2}); }, {"avg_pool2d", "[4]"});
  expect_error([&] { adaptive_avg_pool2d(x, {2}); }, {"adaptive_avg_pool2d", "output_size", "[2, 3, 5, 5]"});
  expect_error([&] { adaptive_avg_pool2d(x, {-1, 2}); }, {"adaptive_avg_pool2d", "output_size"});
  expect_error([&] { adaptive_avg_pool2d(randn({3, 4}), {2, 2}); }, {"adaptive_avg_pool2d", "[3, 4]"});

  expect_error([&] { batch_norm(randn({4}), {}, {}, {}, {}, true, 0.1, 1e-5); }, {"batch_norm", "[4]"});
  expect_error([&] { batch_norm(x, ones({4}), {}, {}, {}, true, 0.1, 1e-5); }, {"batch_norm", "weight", "[4]", "[2, 3, 5, 5]"});
  expect_error([&] { batch_norm(x, {}, zeros({2}), {}, {}, true, 0.1, 1e-5); }, {"batch_norm", "bias", "[2]"});
  expect_error([&] { batch_norm(x, {}, {}, zeros({5}), ones({3}), true, 0.1, 1e-5); }, {"batch_norm", "running_mean", "[5]"});
  expect_error([&] { batch_norm(x, {}, {}, zeros({3}), ones({4}), true, 0.1, 1e-5); }, {"batch_norm", "running_var", "[4]"});
  expect_error([&] { batch_norm(x, {}, {}, {}, {}, false, 0.1, 1e-5); }, {"batch_norm", "evaluation mode"});
  expect_error([&] { batch_norm(randn({1, 3}), {}, {}, {}, {}, true, 0.1, 1e-5); }, {"batch_norm", "more than 1 value", "[1, 3]"});
  expect_error([&] { batch_norm(randint(0, 3, {4, 3}), {}, {}, {}, {}, true, 0.1, 1e-5); }, {"batch_norm", "int64"});

  expect_error([&] { layer_norm(x, {4}); }, {"layer_norm", "normalized_shape=[4]", "[2, 3, 5, 5]"});
  expect_error([&] { layer_norm(x, {3, 5, 5, 5, 5}); }, {"layer_norm", "normalized_shape"});
  expect_error([&] { layer_norm(x, {5}, ones({4})); }, {"layer_norm", "weight", "[4]", "[5]"});
  expect_error([&] { layer_norm(x, {5, 5}, {}, zeros({25})); }, {"layer_norm", "bias", "[25]", "[5, 5]"});

  expect_error([&] { group_norm(x, 2); }, {"group_norm", "divisible by num_groups", "[2, 3, 5, 5]", "num_groups=2"});
  expect_error([&] { group_norm(x, 0); }, {"group_norm", "num_groups"});
  expect_error([&] { group_norm(x, 3, ones({6})); }, {"group_norm", "weight", "[6]"});
  expect_error([&] { group_norm(randn({4}), 1); }, {"group_norm", "[4]"});
}

TEST(PoolNorm, DilatedTapsMissingTheInput) {
  // k=2, dilation 2, padding 1 on width 1: the taps sit at -1 and 1, both outside. The result
  // is -inf (as libtorch) and the gradient goes nowhere.
  Tensor x = ones({1, 1, 3, 1}, kFloat64).requires_grad_(true);
  Tensor y = max_pool2d(x, {1, 2}, {1, 1}, {0, 1}, {1, 2});
  ASSERT_EQ(y.sizes(), IntArrayRef({1, 1, 3, 1}));
  EXPECT_TRUE(std::isinf(y.detach()[0][0][0][0].item<double>()));
  y.sum().backward();
  EXPECT_EQ(vals(x.grad()), (Vec{0, 0, 0}));
}
