// Quantized kernels (tensor/nn/quantized.h, docs/quantization.md "Kernels"): oneDNN int8 linear
// and convolution, quantized add/mul/relu/pooling/cat, against float64 reference loops written
// here (integers in, float64 arithmetic, nearbyint ties-to-even, clamp), independent of the
// library's kernels. Exact equality where the kernel's arithmetic is exact (power-of-two scales
// for oneDNN; every elementwise op), at most one step otherwise (Note [Requantization in oneDNN]
// in src/ops/QuantizedLinear.cpp). Inputs are non-contiguous where it matters, zero points sit at
// the ends of the range, and outputs saturate.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <tensor/nn/quantized.h>
#include <tensor/onednn.h>
#include <tensor/tensor.h>
#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;

namespace {

// ---- reading tensors (plain copies; no kernel under test involved) ----
std::vector<int64_t> ints(const Tensor& q) {
  Tensor c = q.int_repr().to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
std::vector<double> f64(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
int64_t qlo(ScalarType t) { return t == kQUInt8 ? 0 : -128; }
int64_t qhi(ScalarType t) { return t == kQUInt8 ? 255 : 127; }
// The documented requantization: nearbyint (ties to even), plus the zero point, clamped.
int64_t requant(double v, int64_t zp, ScalarType t) {
  return std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(v)) + zp, qlo(t), qhi(t));
}
std::vector<double> weight_scales(const Tensor& qw) {
  if (qw.qscheme() == kPerChannelAffine) return f64(qw.q_per_channel_scales());
  return std::vector<double>(static_cast<size_t>(qw.size(0)), qw.q_scale());
}

// Random integers in [lo, hi] as a float tensor (so that quantize with scale 1 and zero point 0
// gives them exactly), for building quantized tensors of known integers.
Tensor rand_ints(std::vector<int64_t> shape, int64_t lo, int64_t hi) {
  return tensor::randint(lo, hi + 1, shape).to(kFloat32);
}
// A quantized tensor holding exactly these integers.
Tensor make_q(const Tensor& int_values, double scale, int64_t zp, ScalarType t) {
  const ScalarType u = t == kQUInt8 ? kUInt8 : kInt8;
  return _make_per_tensor_quantized_tensor(int_values.to(u), scale, zp);
}
Tensor make_qw_per_channel(const Tensor& int_values, std::vector<double> scales) {
  return _make_per_channel_quantized_tensor(
      int_values.to(kInt8), tensor::tensor(scales),
      tensor::zeros({static_cast<int64_t>(scales.size())}, TensorOptions().dtype(kInt64)), 0);
}

// ---- reference loops ----

// y[m, n] = requant((sum_k (x - zx) * w[n, k]) * sx * sw[n] + b[n]) / sy), with ReLU on the real value.
// With zp_before_rounding, round(v + zy) instead of round(v) + zy (oneDNN's order; Note
// [Requantization in oneDNN]): they differ only at exact halves with an odd zero point.
std::vector<int64_t> ref_linear(const Tensor& qx, const Tensor& qw, const std::vector<double>& bias, double sy,
                                int64_t zy, bool relu, bool zp_before_rounding = false) {
  const std::vector<int64_t> x = ints(qx), w = ints(qw);
  const std::vector<double> sw = weight_scales(qw);
  const int64_t N = qw.size(0), K = qw.size(1), M = qx.numel() / K;
  const double sx = qx.q_scale();
  const int64_t zx = qx.q_zero_point();
  std::vector<int64_t> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (x[m * K + k] - zx) * w[n * K + k];
      double v = (static_cast<double>(acc) * sx * sw[n] + (bias.empty() ? 0.0 : bias[n])) / sy;
      if (relu) v = std::max(v, 0.0);
      y[m * N + n] =
          zp_before_rounding ? requant(v + static_cast<double>(zy), 0, qx.dtype()) : requant(v, zy, qx.dtype());
    }
  return y;
}

struct ConvGeom {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};
// Direct convolution over 1 to 3 spatial dims (flattened as [N, C, D, H, W] with missing dims 1).
std::vector<int64_t> ref_conv(const Tensor& qx, const Tensor& qw, const std::vector<double>& bias, const ConvGeom& g,
                              double sy, int64_t zy, bool relu, const Tensor* residual = nullptr,
                              bool zp_before_rounding = false) {
  const int64_t S = qw.dim() - 2;
  auto pad3 = [&](IntArrayRef v, int64_t fill) {
    std::vector<int64_t> r(3, fill);
    for (int64_t i = 0; i < S; ++i) r[3 - S + i] = v[i];
    return r;
  };
  const std::vector<int64_t> x = ints(qx), w = ints(qw);
  const std::vector<double> sw = weight_scales(qw);
  const int64_t N = qx.size(0), C = qx.size(1), OC = qw.size(0), CG = qw.size(1), OG = OC / g.groups;
  const auto in = pad3(qx.sizes().slice(2), 1), k = pad3(qw.sizes().slice(2), 1);
  const auto st = pad3(g.stride, 1), pd = pad3(g.padding, 0), dl = pad3(g.dilation, 1);
  std::vector<int64_t> out(3);
  for (int i = 0; i < 3; ++i) out[i] = (in[i] + 2 * pd[i] - dl[i] * (k[i] - 1) - 1) / st[i] + 1;
  std::vector<int64_t> r;
  std::vector<double> res_real;
  if (residual) {
    for (int64_t v : ints(*residual))
      res_real.push_back(static_cast<double>(v - residual->q_zero_point()) * residual->q_scale());
  }
  const double sx = qx.q_scale();
  const int64_t zx = qx.q_zero_point();
  std::vector<int64_t> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc)
      for (int64_t od = 0; od < out[0]; ++od)
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (int64_t ow = 0; ow < out[2]; ++ow) {
            const int64_t grp = oc / OG;
            int64_t acc = 0;
            for (int64_t c = 0; c < CG; ++c)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t b = 0; b < k[1]; ++b)
                  for (int64_t e = 0; e < k[2]; ++e) {
                    const int64_t id = od * st[0] - pd[0] + a * dl[0], ih = oh * st[1] - pd[1] + b * dl[1],
                                  iw = ow * st[2] - pd[2] + e * dl[2];
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                    const int64_t ci = grp * CG + c;
                    const int64_t xv = x[(((n * C + ci) * in[0] + id) * in[1] + ih) * in[2] + iw];
                    const int64_t wv = w[(((oc * CG + c) * k[0] + a) * k[1] + b) * k[2] + e];
                    acc += (xv - zx) * wv;
                  }
            double real = static_cast<double>(acc) * sx * sw[oc] + (bias.empty() ? 0.0 : bias[oc]);
            if (residual) real += res_real[y.size()];
            double v = real / sy;
            if (relu) v = std::max(v, 0.0);
            y.push_back(zp_before_rounding ? requant(v + static_cast<double>(zy), 0, qx.dtype())
                                           : requant(v, zy, qx.dtype()));
          }
  return y;
}

// At most one step apart everywhere, and equal on all but a few (Note [Requantization in oneDNN]).
void expect_within_one_step(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  ASSERT_EQ(got.size(), want.size());
  size_t off = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::abs(got[i] - want[i]), 1) << "at " << i << ": " << got[i] << " vs " << want[i];
    off += got[i] != want[i];
  }
  EXPECT_LE(off, got.size() / 100 + 1) << off << " of " << got.size() << " differ by one step";
}

int64_t count_saturated(const std::vector<int64_t>& v, ScalarType t) {
  return std::count_if(v.begin(), v.end(), [&](int64_t x) { return x == qlo(t) || x == qhi(t); });
}

}  // namespace

// ---- linear ----

// Power-of-two scales and a bias in whole accumulator units: oneDNN's float32 arithmetic is exact
// and must equal the reference integer for integer; the input is a transposed (non-contiguous)
// view; zero points at both ends of the range; many outputs saturate.
TEST(QuantizedLinear, ExactWithPowerOfTwoScalesPerChannel) {
  tensor::manual_seed(1);
  const int64_t M = 13, K = 70, N = 19;
  std::vector<double> sw;
  for (int64_t n = 0; n < N; ++n) sw.push_back(std::ldexp(1.0, -static_cast<int>(3 + n % 4)));
  const Tensor qw = make_qw_per_channel(rand_ints({N, K}, -128, 127), sw);
  std::vector<double> bias;
  for (int64_t n = 0; n < N; ++n) bias.push_back(static_cast<double>((n * 37) % 2001 - 1000) * 0.0625 * sw[n]);
  const Tensor b = tensor::tensor(bias).to(kFloat32);
  auto packed = quantized::linear_prepack(qw, b);
  for (int64_t zx : {0, 128, 255}) {
    const Tensor qx = make_q(rand_ints({K, M}, 0, 255), 0.0625, zx, kQUInt8).t();  // [M, K], non-contiguous
    ASSERT_FALSE(qx.is_contiguous());
    for (int64_t zy : {0, 77, 255}) {
      for (bool relu : {false, true}) {
        const double sy = 0.25;
        Tensor y = relu ? quantized::linear_relu(qx, *packed, sy, zy) : quantized::linear(qx, *packed, sy, zy);
        EXPECT_EQ(y.dtype(), kQUInt8);
        EXPECT_EQ(y.sizes(), IntArrayRef({M, N}));
        EXPECT_EQ(y.q_scale(), sy);
        EXPECT_EQ(y.q_zero_point(), zy);
        const std::vector<int64_t> got = ints(y), want = ref_linear(qx, qw, bias, sy, zy, relu);
        EXPECT_EQ(got, ref_linear(qx, qw, bias, sy, zy, relu, /*zp_before_rounding=*/true))
            << "zx " << zx << " zy " << zy << " relu " << relu;
        for (size_t i = 0; i < got.size(); ++i) ASSERT_LE(std::abs(got[i] - want[i]), 1) << i;
        if (zy % 2 == 0) {
          EXPECT_EQ(got, want);
        }
        if (!relu && zy == 77) {
          EXPECT_GT(count_saturated(want, kQUInt8), 10);
        }
      }
    }
  }
}

TEST(QuantizedLinear, ExactPerTensorWeightsQInt8ActivationsBatchedInput) {
  tensor::manual_seed(2);
  const int64_t K = 33, N = 8;
  const Tensor qw = make_q(rand_ints({N, K}, -128, 127), 0.125, 0, kQInt8);
  auto packed = quantized::linear_prepack(qw);  // no bias
  // [2, 3, K] qint8 with zero points at both ends.
  for (int64_t zx : {-128, 0, 127}) {
    const Tensor qx = make_q(rand_ints({2, 3, K}, -128, 127), 0.5, zx, kQInt8);
    Tensor y = quantized::linear(qx, *packed, 4.0, -5);
    EXPECT_EQ(y.dtype(), kQInt8);
    EXPECT_EQ(y.sizes(), IntArrayRef({2, 3, N}));
    EXPECT_EQ(ints(y), ref_linear(qx, qw, {}, 4.0, -5, false, true)) << "zx " << zx;
  }
}

// The static linear's scales and input zero point are fixed in its oneDNN primitive (Note
// [Constant scales in the int8 matmul]): calls that differ only in them, same shapes and weights,
// must each get their own primitive and their own exact result.
TEST(QuantizedLinear, CallsDifferingOnlyInScalesOrZeroPointGetTheirOwnResult) {
  tensor::manual_seed(5);
  const int64_t M = 4, K = 16, N = 6;
  const Tensor qw = make_q(rand_ints({N, K}, -128, 127), 0.125, 0, kQInt8);
  auto packed = quantized::linear_prepack(qw);
  const Tensor ints_x = rand_ints({M, K}, 0, 255);
  for (int rep = 0; rep < 2; ++rep)  // the second round hits the cached primitives
    for (double sx : {0.0625, 0.125})
      for (int64_t zx : {0, 64})
        for (double sy : {0.25, 1.0}) {
          const Tensor qx = make_q(ints_x, sx, zx, kQUInt8);
          EXPECT_EQ(ints(quantized::linear(qx, *packed, sy, 10)), ref_linear(qx, qw, {}, sy, 10, false, true))
              << "sx " << sx << " zx " << zx << " sy " << sy;
        }
}

// Arbitrary scales: float32 requantization inside oneDNN, at most one step from float64.
TEST(QuantizedLinear, ArbitraryScalesWithinOneStep) {
  tensor::manual_seed(3);
  const int64_t M = 64, K = 256, N = 48;
  const Tensor w = tensor::randn({N, K}) * 0.05;
  const Tensor scales = (tensor::rand({N}) * 0.002 + 0.0005).to(kFloat64);
  const Tensor qw = quantize_per_channel(w, scales, tensor::zeros({N}, TensorOptions().dtype(kInt64)), 0, kQInt8);
  const Tensor b = tensor::randn({N}) * 0.3;
  auto packed = quantized::linear_prepack(qw, b);
  const Tensor qx = quantize_per_tensor(tensor::randn({M, K}), 0.0271, 131, kQUInt8);
  for (bool relu : {false, true}) {
    Tensor y = relu ? quantized::linear_relu(qx, *packed, 0.0437, 100) : quantized::linear(qx, *packed, 0.0437, 100);
    expect_within_one_step(ints(y), ref_linear(qx, qw, f64(b), 0.0437, 100, relu));
  }
}

TEST(QuantizedLinear, DynamicMatchesFloatReference) {
  tensor::manual_seed(4);
  const int64_t M = 16, K = 96, N = 24;
  const Tensor qw = quantize_per_channel(tensor::randn({N, K}) * 0.1, (tensor::rand({N}) * 0.003 + 0.001).to(kFloat64),
                                         tensor::zeros({N}, TensorOptions().dtype(kInt64)), 0, kQInt8);
  const Tensor b = tensor::randn({N});
  auto packed = quantized::linear_prepack(qw, b);
  const Tensor x = tensor::randn({K, M}).t() * 3 + 0.5;  // non-contiguous float input
  // The reference: choose_qparams from min/max (range widened to hold 0), quantize, int dot, float.
  const std::vector<double> xv = f64(x);
  const double lo = std::min(0.0, *std::min_element(xv.begin(), xv.end()));
  const double hi = std::max(0.0, *std::max_element(xv.begin(), xv.end()));
  const double sx = static_cast<float>((hi - lo) / 255.0);
  const int64_t zx = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(-lo / sx)), 0, 255);
  auto [s, z] = quantized::choose_qparams(lo, hi, 0, 255);
  EXPECT_EQ(s, sx);
  EXPECT_EQ(z, zx);
  const float inv = 1.0f / static_cast<float>(sx);
  std::vector<int64_t> xq;
  for (double v : xv)
    xq.push_back(std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(static_cast<float>(v) * inv)) + zx, 0, 255));
  const std::vector<int64_t> w = ints(qw);
  const std::vector<double> sw = weight_scales(qw), bv = f64(b);
  for (bool relu : {false, true}) {
    const Tensor y = relu ? quantized::linear_relu_dynamic(x, *packed) : quantized::linear_dynamic(x, *packed);
    EXPECT_EQ(y.dtype(), kFloat32);
    const std::vector<double> got = f64(y);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += (xq[m * K + k] - zx) * w[n * K + k];
        double want = static_cast<double>(acc) * sx * sw[n] + bv[n];
        if (relu) want = std::max(want, 0.0);
        // float32 arithmetic inside oneDNN: relative 1e-6 of the accumulator's magnitude.
        EXPECT_NEAR(got[m * N + n], want, 1e-5 * (std::abs(want) + 1.0)) << m << "," << n;
      }
  }
}

TEST(QuantizedLinear, BadParametersRaise) {
  const Tensor qw = quantize_per_tensor(tensor::randn({4, 3}), 0.1, 0, kQInt8);
  auto packed = quantized::linear_prepack(qw);
  const Tensor qx = quantize_per_tensor(tensor::randn({2, 3}), 0.1, 128, kQUInt8);
  expect_error(
      [&] {
        quantized::linear_prepack(quantize_per_tensor(tensor::randn({4, 3}), 0.1, 128, kQUInt8));
      },
      {"quantized::linear_prepack", "expected a qint8 weight", "quint8"});
  expect_error(
      [&] {
        quantized::linear_prepack(tensor::randn({4, 3}));
      },
      {"linear_prepack", "qint8 weight", "float32"});
  expect_error(
      [&] {
        quantized::linear_prepack(quantize_per_tensor(tensor::randn({4, 3}), 0.1, 3, kQInt8));
      },
      {"linear_prepack", "zero point must be 0", "got 3", "[4, 3]"});
  expect_error(
      [&] {
        quantized::linear_prepack(quantize_per_channel(tensor::randn({4, 3}), tensor::ones({3}),
                                                       tensor::zeros({3}, TensorOptions().dtype(kInt64)), 1, kQInt8));
      },
      {"linear_prepack", "along dim 0", "axis 1"});
  expect_error([&] { quantized::linear_prepack(qw, tensor::zeros({5})); },
               {"linear_prepack", "bias of shape [4]", "[5]"});
  expect_error(
      [&] {
        quantized::linear(quantize_per_tensor(tensor::randn({2, 5}), 0.1, 128, kQUInt8), *packed, 0.1, 0);
      },
      {"quantized::linear", "in_features = 3", "[2, 5]", "quint8"});
  expect_error(
      [&] {
        quantized::linear(tensor::randn({2, 3}), *packed, 0.1, 0);
      },
      {"quantized::linear", "expected a quantized input", "float32"});
  expect_error([&] { quantized::linear(qx, *packed, 0.0, 0); }, {"quantized::linear", "output scale must be positive"});
  expect_error([&] { quantized::linear(qx, *packed, 0.1, 256); },
               {"quantized::linear", "output zero point 256", "quint8", "[0, 255]"});
  expect_error(
      [&] {
        quantized::linear(quantize_per_tensor(tensor::randn({2, 3}), 0.1, 0, kQInt32), *packed, 0.1, 0);
      },
      {"quantized::linear", "quint8 or qint8", "qint32"});
  expect_error([&] { quantized::linear_dynamic(qx, *packed); }, {"quantized::linear_dynamic", "float32"});
  // A range that is not finite has no scale.
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    Tensor x = tensor::randn({4, 3});
    x.index_put_({2, 1}, bad);
    expect_error([&] { quantized::linear_dynamic(x, *packed); }, {"quantized::linear_dynamic", "NaN or infinite"});
    // 120 values: index 16 is inside the range's vector loop, 119 in its scalar tail.
    for (int64_t at : {16, 119}) {
      Tensor big = tensor::randn({40, 3});
      big.view({-1}).index_put_({at}, bad);
      expect_error([&] { quantized::linear_dynamic(big, *packed); }, {"quantized::linear_dynamic", "NaN or infinite"});
    }
  }
}

// ---- convolution ----

namespace {
struct ConvCase {
  std::vector<int64_t> x_shape, w_shape;
  ConvGeom g;
};
void check_conv_exact(const ConvCase& c, int64_t zx, int64_t zy, bool relu, bool channels_last_input,
                      ScalarType t = kQUInt8) {
  const int64_t OC = c.w_shape[0];
  std::vector<double> sw;
  for (int64_t o = 0; o < OC; ++o) sw.push_back(std::ldexp(1.0, -static_cast<int>(4 + o % 3)));
  const Tensor qw = make_qw_per_channel(rand_ints(c.w_shape, -128, 127), sw);
  std::vector<double> bias;
  for (int64_t o = 0; o < OC; ++o) bias.push_back(static_cast<double>(o * 29 % 301 - 150) * 0.125 * sw[o]);
  auto packed =
      quantized::conv_prepack(qw, tensor::tensor(bias).to(kFloat32), c.g.stride, c.g.padding, c.g.dilation, c.g.groups);
  Tensor qx;
  if (channels_last_input) {
    // An [N, C, spatial...] view of channels-last integers (no copy needed by the kernel).
    std::vector<int64_t> cl{c.x_shape[0]};
    cl.insert(cl.end(), c.x_shape.begin() + 2, c.x_shape.end());
    cl.push_back(c.x_shape[1]);
    std::vector<int64_t> back{0, static_cast<int64_t>(cl.size()) - 1};
    for (size_t i = 1; i + 1 < cl.size(); ++i) back.push_back(static_cast<int64_t>(i));
    qx = make_q(rand_ints(cl, qlo(t), qhi(t)), 0.5, zx, t).permute(back);
  } else {
    // Every other row of a taller input: a strided NCHW view.
    std::vector<int64_t> tall = c.x_shape;
    tall.back() *= 2;
    qx = make_q(rand_ints(tall, qlo(t), qhi(t)), 0.5, zx, t).slice(-1, 0, c.x_shape.back() * 2, 2);
  }
  ASSERT_EQ(qx.sizes(), IntArrayRef(c.x_shape));
  const double sy = 8.0;
  Tensor y = relu ? quantized::conv_relu(qx, *packed, sy, zy) : quantized::conv(qx, *packed, sy, zy);
  EXPECT_EQ(y.q_scale(), sy);
  EXPECT_EQ(y.q_zero_point(), zy);
  // oneDNN's convolution adds the output zero point before rounding (Note [Requantization in
  // oneDNN]): exact against that reference, and at most one step (at exact halves, with an odd
  // zero point) from the round-then-add one.
  const std::vector<int64_t> got = ints(y);
  EXPECT_EQ(got, ref_conv(qx, qw, bias, c.g, sy, zy, relu, nullptr, /*zp_before_rounding=*/true))
      << "w " << ::testing::PrintToString(c.w_shape) << " groups " << c.g.groups << " zx " << zx << " zy " << zy
      << " relu " << relu << " channels-last input " << channels_last_input;
  const std::vector<int64_t> want = ref_conv(qx, qw, bias, c.g, sy, zy, relu);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_LE(std::abs(got[i] - want[i]), 1) << i;
  if (zy % 2 == 0) {
    EXPECT_EQ(got, want);
  }
}
}  // namespace

TEST(QuantizedConv, Conv2dExactStridePaddingDilationGroups) {
  tensor::manual_seed(5);
  const std::vector<ConvCase> cases = {
      {{2, 8, 9, 11}, {16, 8, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
      {{1, 6, 10, 7}, {9, 2, 3, 2}, {{2, 1}, {1, 0}, {2, 1}, 3}},  // groups 3, dilation, asymmetric
      {{2, 4, 6, 6}, {4, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 4}},   // depthwise
      {{1, 3, 5, 5}, {5, 3, 1, 1}, {{2, 2}, {0, 0}, {1, 1}, 1}},   // 1x1, stride 2
  };
  for (const ConvCase& c : cases)
    for (int64_t zx : {0, 255})
      for (int64_t zy : {0, 128, 255})
        for (bool relu : {false, true}) check_conv_exact(c, zx, zy, relu, /*channels_last_input=*/zy == 128);
}

TEST(QuantizedConv, Conv1dAndConv3dExact) {
  tensor::manual_seed(6);
  check_conv_exact({{2, 4, 13}, {6, 2, 3}, {{2}, {1}, {2}, 2}}, 3, 250, false, false);
  check_conv_exact({{2, 4, 13}, {6, 4, 5}, {{1}, {2}, {1}, 1}}, 200, 10, true, true);
  check_conv_exact({{1, 4, 5, 6, 7}, {8, 2, 3, 3, 2}, {{1, 2, 1}, {1, 1, 0}, {1, 1, 2}, 2}}, 128, 60, false, false);
}

TEST(QuantizedConv, QInt8ActivationsExact) {
  tensor::manual_seed(15);
  const ConvCase c{{2, 6, 8, 9}, {6, 3, 3, 3}, {{1, 2}, {1, 1}, {1, 1}, 2}};
  for (int64_t zx : {-128, 0, 127})
    for (int64_t zy : {-128, 0, 127}) check_conv_exact(c, zx, zy, zy == 0, zx == 0, kQInt8);
}

TEST(QuantizedConv, ArbitraryScalesWithinOneStepAndSaturation) {
  tensor::manual_seed(7);
  const Tensor qw =
      quantize_per_channel(tensor::randn({16, 8, 3, 3}) * 0.1, (tensor::rand({16}) * 0.003 + 0.001).to(kFloat64),
                           tensor::zeros({16}, TensorOptions().dtype(kInt64)), 0, kQInt8);
  const Tensor b = tensor::randn({16});
  const ConvGeom g{{1, 1}, {1, 1}, {1, 1}, 1};
  auto packed = quantized::conv_prepack(qw, b, g.stride, g.padding, g.dilation, 1);
  const Tensor qx = quantize_per_tensor(tensor::randn({2, 8, 12, 12}), 0.031, 120, kQUInt8);
  for (double sy : {0.05, 0.004}) {  // the small scale saturates many outputs
    const Tensor y = quantized::conv(qx, *packed, sy, 128);
    const std::vector<int64_t> want = ref_conv(qx, qw, f64(b), g, sy, 128, false);
    expect_within_one_step(ints(y), want);
    if (sy < 0.01) {
      EXPECT_GT(count_saturated(want, kQUInt8), 100);
    }
  }
}

TEST(QuantizedConv, AddAndAddReLUFuseTheResidual) {
  tensor::manual_seed(8);
  std::vector<double> sw{0.0625, 0.125, 0.03125, 0.0625};
  const Tensor qw = make_qw_per_channel(rand_ints({4, 4, 3, 3}, -128, 127), sw);
  const ConvGeom g{{1, 1}, {1, 1}, {1, 1}, 1};
  auto packed = quantized::conv_prepack(qw, std::nullopt, g.stride, g.padding, g.dilation, 1);
  const Tensor qx = make_q(rand_ints({2, 4, 7, 7}, 0, 255), 0.5, 100, kQUInt8);
  // A residual with its own parameters, non-contiguous (transposed spatial dims).
  const Tensor res = make_q(rand_ints({2, 4, 7, 7}, 0, 255), 2.0, 64, kQUInt8).transpose(2, 3);
  for (bool relu : {false, true}) {
    const Tensor y =
        relu ? quantized::conv_add_relu(qx, *packed, res, 4.0, 32) : quantized::conv_add(qx, *packed, res, 4.0, 32);
    EXPECT_EQ(ints(y), ref_conv(qx, qw, {}, g, 4.0, 32, relu, &res)) << "relu " << relu;
  }
}

TEST(QuantizedConv, BadParametersRaise) {
  const Tensor qw = quantize_per_tensor(tensor::randn({4, 2, 3, 3}), 0.1, 0, kQInt8);
  auto packed = quantized::conv_prepack(qw, std::nullopt, {1}, {0}, {1}, 2);
  expect_error([&] { quantized::conv_prepack(qw, std::nullopt, {1}, {0}, {1}, 3); },
               {"quantized::conv_prepack", "groups", "divide the 4 output channels", "got 3"});
  expect_error([&] { quantized::conv_prepack(qw, std::nullopt, {0}, {0}, {1}, 1); },
               {"conv_prepack", "stride must be >= 1"});
  expect_error(
      [&] {
        quantized::conv_prepack(qw, std::nullopt, {1, 1, 1}, {0}, {1}, 1);
      },
      {"conv_prepack", "stride with 1 or 2 values"});
  expect_error(
      [&] {
        quantized::conv(quantize_per_tensor(tensor::randn({1, 3, 5, 5}), 0.1, 0, kQUInt8), *packed, 0.1, 0);
      },
      {"quantized::conv", "3 channels", "[4, 2, 3, 3]", "groups = 2 expects 4"});
  expect_error(
      [&] {
        quantized::conv(quantize_per_tensor(tensor::randn({4, 5, 5}), 0.1, 0, kQUInt8), *packed, 0.1, 0);
      },
      {"quantized::conv", "batched input", "[4, 5, 5]"});
  expect_error(
      [&] {
        quantized::conv(quantize_per_tensor(tensor::randn({1, 4, 2, 2}), 0.1, 0, kQUInt8), *packed, 0.1, 0);
      },
      {"quantized::conv", "smaller than the dilated kernel"});
  const Tensor qx = quantize_per_tensor(tensor::randn({1, 4, 5, 5}), 0.1, 0, kQUInt8);
  expect_error(
      [&] {
        quantized::conv_add(qx, *packed, quantize_per_tensor(tensor::randn({1, 4, 5, 5}), 0.1, 0, kQUInt8), 0.1, 0);
      },
      {"quantized::conv_add", "residual must have the output's dtype quint8 and shape [1, 4, 3, 3]", "[1, 4, 5, 5]"});
  expect_error(
      [&] {
        quantized::conv_prepack(quantize_per_channel(tensor::randn({4, 2, 3, 3}), tensor::ones({4}),
                                                     tensor::ones({4}, TensorOptions().dtype(kInt64)), 0, kQInt8),
                                std::nullopt, {1}, {0}, {1}, 1);
      },
      {"conv_prepack", "zero points must be 0", "channel 0"});
}

// ---- elementwise, pooling, cat ----

TEST(QuantizedElementwise, AddMulExactWithBroadcastingAndSaturation) {
  tensor::manual_seed(9);
  for (ScalarType t : {kQUInt8, kQInt8}) {
    const Tensor a = make_q(rand_ints({5, 6}, qlo(t), qhi(t)), 0.037, t == kQUInt8 ? 255 : -128, t).t();  // [6, 5]
    const Tensor b = make_q(rand_ints({1, 5}, qlo(t), qhi(t)), 0.11, t == kQUInt8 ? 0 : 127, t);
    const std::vector<int64_t> ai = ints(a), bi = ints(b);
    for (int op = 0; op < 4; ++op) {
      const bool mul = op >= 2, relu = op % 2 == 1;
      const double s = mul ? 0.09 : 0.021;  // small enough to saturate
      const int64_t z = t == kQUInt8 ? 20 : 0;
      Tensor y = mul ? (relu ? quantized::mul_relu(a, b, s, z) : quantized::mul(a, b, s, z))
                     : (relu ? quantized::add_relu(a, b, s, z) : quantized::add(a, b, s, z));
      EXPECT_EQ(y.sizes(), IntArrayRef({6, 5}));
      std::vector<int64_t> want;
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          const double ra = static_cast<double>(ai[i * 5 + j] - a.q_zero_point()) * a.q_scale();
          const double rb = static_cast<double>(bi[j] - b.q_zero_point()) * b.q_scale();
          double v = (mul ? ra * rb : ra + rb) / s;
          if (relu) v = std::max(v, 0.0);
          want.push_back(requant(v, z, t));
        }
      EXPECT_EQ(ints(y), want) << t << " op " << op;
      if (!relu) {
        EXPECT_GT(count_saturated(want, t), 0);
      }
    }
  }
}

TEST(QuantizedElementwise, ReluKeepsParametersAndWorksInPlace) {
  tensor::manual_seed(10);
  const Tensor q = make_q(rand_ints({4, 6}, 0, 255), 0.2, 90, kQUInt8).slice(1, 0, 6, 2);  // non-contiguous
  const Tensor y = relu(q);
  EXPECT_EQ(y.q_scale(), 0.2);
  EXPECT_EQ(y.q_zero_point(), 90);
  std::vector<int64_t> want = ints(q);
  for (int64_t& v : want) v = std::max<int64_t>(v, 90);
  EXPECT_EQ(ints(y), want);
  Tensor base = make_q(rand_ints({4, 6}, -128, 127), 0.2, -3, kQInt8);
  Tensor view = base.slice(1, 1, 6, 2);
  std::vector<int64_t> before = ints(base);
  view.relu_();
  std::vector<int64_t> after = ints(base);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const int64_t b = before[i * 6 + j];
      EXPECT_EQ(after[i * 6 + j], j % 2 == 1 ? std::max<int64_t>(b, -3) : b);
    }
  // nn::functional::relu and flatten/reshape views on a quantized tensor.
  EXPECT_EQ(ints(nn::functional::relu(q)), want);
  EXPECT_EQ(ints(relu(q).flatten()), want);
  EXPECT_EQ(relu(q).reshape({-1}).q_zero_point(), 90);
}

namespace {
// Reference pooling over [planes, H, W] integers (libtorch's window rules).
std::vector<int64_t> ref_pool(const Tensor& q, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                              int64_t dh, int64_t dw, bool ceil_mode, bool max, bool count_include_pad, int64_t divisor,
                              std::vector<int64_t>* out_hw) {
  const std::vector<int64_t> x = ints(q);
  const int64_t H = q.size(-2), W = q.size(-1), P = q.numel() / (H * W), zp = q.q_zero_point();
  auto outsz = [&](int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
    const int64_t num = in + 2 * p - d * (k - 1) - 1;
    int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) --o;
    return o;
  };
  const int64_t OH = outsz(H, kh, sh, ph, dh), OW = outsz(W, kw, sw, pw, dw);
  *out_hw = {OH, OW};
  std::vector<int64_t> y;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        if (max) {
          int64_t m = INT64_MIN;
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t b = 0; b < kw; ++b) {
              const int64_t iy = oy * sh - ph + a * dh, ix = ox * sw - pw + b * dw;
              if (iy >= 0 && iy < H && ix >= 0 && ix < W) m = std::max(m, x[(p * H + iy) * W + ix]);
            }
          y.push_back(m);
        } else {
          const int64_t y0 = oy * sh - ph, x0 = ox * sw - pw;
          const int64_t y1 = std::min(y0 + kh, H + ph), x1 = std::min(x0 + kw, W + pw);
          const int64_t padded = (y1 - y0) * (x1 - x0);
          int64_t sum = 0, n = 0;
          for (int64_t iy = std::max<int64_t>(y0, 0); iy < std::min(y1, H); ++iy)
            for (int64_t ix = std::max<int64_t>(x0, 0); ix < std::min(x1, W); ++ix, ++n)
              sum += x[(p * H + iy) * W + ix] - zp;
          const int64_t div = divisor ? divisor : count_include_pad ? padded : n;
          y.push_back(requant(static_cast<double>(sum) / static_cast<double>(div), zp, q.dtype()));
        }
      }
  return y;
}
}  // namespace

TEST(QuantizedPooling, MaxAndAvgPool2dExact) {
  tensor::manual_seed(11);
  const Tensor q =
      make_q(rand_ints({2, 3, 9, 8}, 0, 255), 0.3, 255, kQUInt8).transpose(2, 3).contiguous().transpose(2, 3);
  ASSERT_FALSE(q.is_contiguous());
  std::vector<int64_t> hw;
  for (bool ceil_mode : {false, true}) {
    Tensor m = max_pool2d(q, {3, 2}, {2, 2}, {1, 0}, {1, 2}, ceil_mode);
    EXPECT_EQ(ints(m), ref_pool(q, 3, 2, 2, 2, 1, 0, 1, 2, ceil_mode, true, true, 0, &hw));
    EXPECT_EQ(m.sizes(), IntArrayRef({2, 3, hw[0], hw[1]}));
    EXPECT_EQ(m.q_scale(), 0.3);
    EXPECT_EQ(m.q_zero_point(), 255);
    for (bool cip : {false, true}) {
      Tensor a = avg_pool2d(q, {3, 3}, {2, 2}, {1, 1}, ceil_mode, cip);
      EXPECT_EQ(ints(a), ref_pool(q, 3, 3, 2, 2, 1, 1, 1, 1, ceil_mode, false, cip, 0, &hw)) << ceil_mode << cip;
      EXPECT_EQ(a.sizes(), IntArrayRef({2, 3, hw[0], hw[1]}));
    }
  }
  const Tensor qs = make_q(rand_ints({3, 7, 7}, -128, 127), 0.3, -128, kQInt8);  // 3-d, qint8
  EXPECT_EQ(ints(avg_pool2d(qs, {2, 2}, {2, 2}, {0, 0}, false, true, 3)),
            ref_pool(qs, 2, 2, 2, 2, 0, 0, 1, 1, false, false, true, 3, &hw));
  EXPECT_EQ(ints(max_pool2d(qs, {2, 2})), ref_pool(qs, 2, 2, 2, 2, 0, 0, 1, 1, false, true, true, 0, &hw));
}

TEST(QuantizedPooling, AdaptiveAvgPool2dExact) {
  tensor::manual_seed(12);
  const Tensor q = make_q(rand_ints({2, 3, 7, 10}, 0, 255), 0.05, 17, kQUInt8).slice(3, 0, 10, 1);
  for (auto os : std::vector<std::vector<int64_t>>{{1, 1}, {3, 4}, {7, 10}, {5, 3}}) {
    Tensor y = adaptive_avg_pool2d(q, os);
    const std::vector<int64_t> x = ints(q);
    std::vector<int64_t> want;
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t i = 0; i < os[0]; ++i)
        for (int64_t j = 0; j < os[1]; ++j) {
          const int64_t y0 = static_cast<int64_t>(std::floor(i * 7.0 / os[0])),
                        y1 = static_cast<int64_t>(std::ceil((i + 1) * 7.0 / os[0]));
          const int64_t x0 = static_cast<int64_t>(std::floor(j * 10.0 / os[1])),
                        x1 = static_cast<int64_t>(std::ceil((j + 1) * 10.0 / os[1]));
          int64_t sum = 0;
          for (int64_t a = y0; a < y1; ++a)
            for (int64_t b = x0; b < x1; ++b) sum += x[(p * 7 + a) * 10 + b] - 17;
          want.push_back(requant(static_cast<double>(sum) / static_cast<double>((y1 - y0) * (x1 - x0)), 17, kQUInt8));
        }
    EXPECT_EQ(ints(y), want) << os[0] << "x" << os[1];
    EXPECT_EQ(y.q_zero_point(), 17);
  }
}

TEST(QuantizedCat, KeepsTheFirstParametersAndRequantizesOthers) {
  tensor::manual_seed(13);
  const Tensor a = make_q(rand_ints({2, 3}, 0, 255), 0.5, 100, kQUInt8);
  const Tensor b = make_q(rand_ints({3, 2}, 0, 255), 0.7, 3, kQUInt8).t();  // non-contiguous [2, 3]
  const Tensor y = cat({a, b}, 0);
  EXPECT_EQ(y.q_scale(), 0.5);
  EXPECT_EQ(y.q_zero_point(), 100);
  std::vector<int64_t> want = ints(a);
  for (int64_t v : ints(b)) want.push_back(requant(static_cast<double>(v - 3) * 0.7 / 0.5, 100, kQUInt8));
  EXPECT_EQ(ints(y), want);
  // quantized::cat with its own parameters, along dim 1.
  const Tensor z = quantized::cat({a, b}, 1, 0.25, 0);
  const std::vector<int64_t> ai = ints(a), bi = ints(b);
  std::vector<int64_t> wz;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) wz.push_back(requant((ai[i * 3 + j] - 100) * 0.5 / 0.25, 0, kQUInt8));
    for (int64_t j = 0; j < 3; ++j) wz.push_back(requant((bi[i * 3 + j] - 3) * 0.7 / 0.25, 0, kQUInt8));
  }
  EXPECT_EQ(ints(z), wz);
  expect_error(
      [&] {
        cat({a, make_q(rand_ints({2, 3}, -5, 5), 0.5, 0, kQInt8)}, 0);
      },
      {"cat: ", "one dtype", "quint8", "qint8"});
}

TEST(QuantizedElementwise, BadParametersRaise) {
  const Tensor a = quantize_per_tensor(tensor::randn({2, 3}), 0.1, 128, kQUInt8);
  const Tensor b8 = quantize_per_tensor(tensor::randn({2, 3}), 0.1, 0, kQInt8);
  expect_error([&] { quantized::add(a, b8, 0.1, 0); }, {"quantized::add", "one dtype", "quint8", "qint8"});
  expect_error(
      [&] {
        quantized::add(a, tensor::randn({2, 3}), 0.1, 0);
      },
      {"quantized::add", "second input", "float32"});
  expect_error([&] { quantized::add(a, quantize_per_tensor(tensor::randn({4}), 0.1, 0, kQUInt8), 0.1, 0); },
               {"quantized::add", "do not broadcast"});
  expect_error([&] { quantized::mul(a, a, -1.0, 0); }, {"quantized::mul", "output scale must be positive"});
  expect_error([&] { quantized::add(a, a, 0.1, -1); }, {"quantized::add", "zero point -1", "quint8"});
  const Tensor pc = quantize_per_channel(tensor::randn({2, 3}), tensor::ones({2}),
                                         tensor::zeros({2}, TensorOptions().dtype(kInt64)), 0, kQUInt8);
  expect_error([&] { relu(pc); }, {"relu", "per-tensor", "per-channel"});
  expect_error([&] { max_pool2d(a, {2, 2}); }, {"max_pool2d", "3-d or 4-d input"});
  expect_error([&] { (void)(a + a); }, {"add: ", "quantized::add"});
}

// ---- modules ----

TEST(QuantizedModules, LinearConvAndDynamicLinearForward) {
  tensor::manual_seed(14);
  nn::quantized::Linear fc(8, 4);
  EXPECT_EQ(fc->weight().dtype(), kQInt8);
  const Tensor qw = make_qw_per_channel(rand_ints({4, 8}, -128, 127), {0.5, 0.25, 0.125, 0.5});
  std::vector<double> bias{1.0, -2.0, 0.5, 0.0};
  fc->set_weight_bias(qw, tensor::tensor(bias).to(kFloat32));
  fc->scale = 2.0;
  fc->zero_point = 10;
  const Tensor qx = make_q(rand_ints({3, 8}, 0, 255), 0.25, 128, kQUInt8);
  EXPECT_EQ(ints(fc(qx)), ref_linear(qx, qw, bias, 2.0, 10, false, true));
  nn::quantized::LinearReLU fr(8, 4);
  fr->set_weight_bias(qw, std::nullopt);
  fr->scale = 2.0;
  EXPECT_EQ(ints(fr(qx)), ref_linear(qx, qw, {}, 2.0, 0, true));
  std::ostringstream s;
  fc->pretty_print(s);
  EXPECT_EQ(s.str(),
            "QuantizedLinear(in_features=8, out_features=4, scale=2, zero_point=10, qscheme=per_channel_affine)");
  expect_error(
      [&] {
        fc->set_weight_bias(make_q(rand_ints({4, 7}, -5, 5), 0.5, 0, kQInt8), std::nullopt);
      },
      {"nn::quantized::Linear::set_weight_bias", "[4, 8]", "[4, 7]"});

  nn::quantized::QuantizedConvArgs ca;
  ca.stride = 2;
  ca.padding = 1;
  ca.groups = 2;
  ca.bias = false;
  nn::quantized::ConvReLU2d conv(4, 6, 3, ca);
  const Tensor cw = make_q(rand_ints({6, 2, 3, 3}, -128, 127), 0.125, 0, kQInt8);
  conv->set_weight_bias(cw, std::nullopt);
  conv->scale = 4.0;
  conv->zero_point = 7;
  const Tensor cx = make_q(rand_ints({1, 4, 8, 8}, 0, 255), 0.5, 60, kQUInt8);
  EXPECT_EQ(ints(conv(cx)), ref_conv(cx, cw, {}, {{2, 2}, {1, 1}, {1, 1}, 2}, 4.0, 7, true, nullptr, true));

  nn::quantized::QuantizedConvArgs pa;
  pa.padding = 1;
  nn::quantized::ConvAddReLU2d block(4, 4, 3, pa);
  const Tensor bw = make_q(rand_ints({4, 4, 3, 3}, -128, 127), 0.0625, 0, kQInt8);
  block->set_weight_bias(bw, std::nullopt);
  block->scale = 2.0;
  const Tensor res = make_q(rand_ints({1, 4, 8, 8}, 0, 255), 1.0, 128, kQUInt8);
  EXPECT_EQ(ints(block->forward(cx, res)), ref_conv(cx, bw, {}, {{1, 1}, {1, 1}, {1, 1}, 1}, 2.0, 0, true, &res));
  expect_error([&] { block->forward(cx); }, {"forward needs the residual"});

  // The per-dim constructor (a float Conv2d's options): a 3x1 kernel, stride (2, 1), padding (1, 0).
  using V = std::vector<int64_t>;
  nn::quantized::Conv2d rect(4, 4, V{3, 1}, V{2, 1}, V{1, 0}, V{1, 1});
  const Tensor rw = make_q(rand_ints({4, 4, 3, 1}, -128, 127), 0.125, 0, kQInt8);
  rect->set_weight_bias(rw, std::nullopt);
  rect->scale = 4.0;
  rect->zero_point = 20;
  EXPECT_EQ(ints(rect(cx)), ref_conv(cx, rw, {}, {{2, 1}, {1, 0}, {1, 1}, 1}, 4.0, 20, false, nullptr, true));
  expect_error(
      [] {
        using V = std::vector<int64_t>;
        nn::quantized::Conv2d(4, 4, V{3}, V{1}, V{0}, V{1});
      },
      {"nn::quantized::Conv2d", "kernel_size with 2 values", "[3]"});

  nn::quantized::dynamic::Linear dl(8, 4);
  dl->set_weight_bias(qw, tensor::tensor(bias).to(kFloat32));
  const Tensor x = tensor::randn({5, 8});
  const Tensor y = dl(x);
  EXPECT_EQ(y.dtype(), kFloat32);
  // Against the float layer with the dequantized weight: input quantization error only.
  const Tensor yf = tensor::matmul(x, qw.dequantize().t()) + tensor::tensor(bias).to(kFloat32);
  EXPECT_LT((y - yf).abs().max().item<double>(), 0.01 * yf.abs().max().item<double>());
}

// Weights are packed and primitives made once: repeated calls with the same shapes and
// parameters miss the primitive cache no more (Note [Weights packed once]).
TEST(QuantizedModules, RepeatedCallsReuseThePrimitivesAndPackedWeights) {
  tensor::manual_seed(16);
  nn::quantized::Linear fc(32, 16);
  fc->set_weight_bias(make_q(rand_ints({16, 32}, -128, 127), 0.125, 0, kQInt8), std::nullopt);
  fc->scale = 4.0;
  fc->zero_point = 3;
  nn::quantized::Conv2d conv(8, 16, 3);
  conv->set_weight_bias(make_qw_per_channel(rand_ints({16, 8, 3, 3}, -128, 127), std::vector<double>(16, 0.0625)),
                        tensor::zeros({16}));
  conv->scale = 8.0;
  const Tensor qx = make_q(rand_ints({4, 32}, 0, 255), 0.5, 128, kQUInt8);
  const Tensor cx = make_q(rand_ints({2, 8, 10, 10}, 0, 255), 0.5, 128, kQUInt8);
  const Tensor y0 = fc(qx), c0 = conv(cx);
  const size_t misses = onednn::primitive_cache_misses();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ints(fc(qx)), ints(y0));
    EXPECT_EQ(ints(conv(cx)), ints(c0));
  }
  EXPECT_EQ(onednn::primitive_cache_misses(), misses);
}

TEST(QuantizedLinear, EmptyBatchZeroInFeaturesAndReduceRange) {
  tensor::manual_seed(17);
  auto packed = quantized::linear_prepack(make_q(rand_ints({3, 4}, -128, 127), 0.5, 0, kQInt8));
  const Tensor empty_batch = make_q(rand_ints({0, 4}, 0, 255), 0.5, 0, kQUInt8);
  EXPECT_EQ(quantized::linear(empty_batch, *packed, 1.0, 0).sizes(), IntArrayRef({0, 3}));
  // in_features 0: the output is the requantized bias alone.
  auto no_in = quantized::linear_prepack(make_q(tensor::zeros({3, 0}), 1.0, 0, kQInt8),
                                         tensor::tensor(std::vector<double>{1.0, -2.5, 300.0}).to(kFloat32));
  const Tensor y = quantized::linear(make_q(tensor::zeros({2, 0}), 0.5, 0, kQUInt8), *no_in, 0.5, 10);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{12, 5, 255, 12, 5, 255}));
  // reduce_range: 7-bit activations; the result stays close to the float product.
  const Tensor w = tensor::randn({8, 16}) * 0.1;
  auto pw = quantized::linear_prepack(quantize_per_tensor(w, 0.002, 0, kQInt8));
  const Tensor x = tensor::randn({5, 16});
  const Tensor yf = tensor::matmul(x, quantize_per_tensor(w, 0.002, 0, kQInt8).dequantize().t());
  for (bool rr : {false, true}) {
    const double err = (quantized::linear_dynamic(x, *pw, rr) - yf).abs().max().item<double>();
    EXPECT_LT(err, 0.05 * yf.abs().max().item<double>()) << "reduce_range " << rr;
  }
}

// Past the OpenMP grain (65536 elements): the threaded loops give the same integers.
TEST(QuantizedElementwise, LargeInputsTakeTheThreadedPathExactly) {
  tensor::manual_seed(18);
  const Tensor a = make_q(rand_ints({3, 70000}, 0, 255), 0.02, 100, kQUInt8);
  const Tensor b = make_q(rand_ints({3, 70000}, 0, 255), 0.03, 140, kQUInt8);
  const std::vector<int64_t> ai = ints(a), bi = ints(b);
  std::vector<int64_t> want;
  for (size_t i = 0; i < ai.size(); ++i)
    want.push_back(requant(((ai[i] - 100) * 0.02 + (bi[i] - 140) * 0.03) / 0.04, 120, kQUInt8));
  EXPECT_EQ(ints(quantized::add(a, b, 0.04, 120)), want);
  const Tensor q = make_q(rand_ints({2, 8, 130, 130}, 0, 255), 0.1, 7, kQUInt8);
  std::vector<int64_t> hw;
  EXPECT_EQ(ints(avg_pool2d(q, {3, 3}, {2, 2}, {1, 1}, true, false)),
            ref_pool(q, 3, 3, 2, 2, 1, 1, 1, 1, true, false, false, 0, &hw));
  EXPECT_EQ(ints(max_pool2d(q, {2, 2})), ref_pool(q, 2, 2, 2, 2, 0, 0, 1, 1, false, true, true, 0, &hw));
}
