// Convolutions (src/ops/ConvOps.cpp, src/cpu/Conv.cpp, kernels/cpu/ConvKernels.cpp): forward values
// against hand-computed cases and an independent direct-definition loop in this file, over
// batch 1, odd sizes, channels 1 and 3, groups (depthwise too), stride, dilation, every padding
// form, unbatched, non-contiguous and channels-last inputs; float32 (oneDNN) and bfloat16
// against float64; meta shapes; the primitive cache; argument errors.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;

namespace {

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

/// One convolution, described as the internal op sees it: per-dim stride, left and right
/// padding, dilation; transposed weights are (C_in, C_out / g, k...).
struct Spec {
  std::string name;
  std::vector<int64_t> x;  // input shape (batched or not)
  std::vector<int64_t> w;  // weight shape
  std::vector<int64_t> stride, pad, dilation, out_pad;
  int64_t groups = 1;
  bool bias = true;
  bool transposed = false;
};

int64_t nd_of(const Spec& s) { return static_cast<int64_t>(s.w.size()) - 2; }

/// The direct definition, in float64, independent of the library's loops:
///   conv:       y[n, co, o] = b[co] + sum_{ci in group, k} x[n, ci, o*s + k*d - p] w[co, ci', k]
///   transposed: y[n, co, i*s + k*d - p] += x[n, ci, i] w[ci, co', k]
Tensor direct(const Spec& s, const Tensor& x_in, const Tensor& w_in, const Tensor& b_in) {
  const int64_t nd = nd_of(s);
  const bool unbatched = static_cast<int64_t>(s.x.size()) == nd + 1;
  Tensor x = (unbatched ? x_in.unsqueeze(0) : x_in).to(kFloat64).contiguous();
  Tensor w = w_in.to(kFloat64).contiguous();
  const int64_t N = x.size(0), C = x.size(1), G = s.groups;
  const int64_t cout = s.transposed ? w.size(1) * G : w.size(0);
  std::vector<int64_t> in(3, 1), k(3, 1), st(3, 1), pd(3, 0), dl(3, 1), out(3, 1);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t j = 3 - nd + i;
    in[j] = x.size(2 + i);
    k[j] = w.size(2 + i);
    st[j] = s.stride[i];
    pd[j] = s.pad[i];
    dl[j] = s.dilation[i];
    out[j] = s.transposed ? (in[j] - 1) * st[j] - 2 * pd[j] + dl[j] * (k[j] - 1) + 1 + s.out_pad[i]
                          : (in[j] + 2 * pd[j] - dl[j] * (k[j] - 1) - 1) / st[j] + 1;
  }
  std::vector<int64_t> ysz{N, cout};
  for (int64_t i = 0; i < nd; ++i) ysz.push_back(out[3 - nd + i]);
  Tensor y = zeros(ysz, kFloat64);
  double* yp = y.data_ptr<double>();
  const double* xp = x.data_ptr<double>();
  const double* wp = w.data_ptr<double>();
  const int64_t kvol = k[0] * k[1] * k[2], ivol = in[0] * in[1] * in[2], ovol = out[0] * out[1] * out[2];
  const int64_t cin_g = C / G, cout_g = cout / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t co_l = 0; co_l < cout_g; ++co_l) {
        const int64_t g = ci / cin_g, co = g * cout_g + co_l, ci_l = ci % cin_g;
        for (int64_t kk = 0; kk < kvol; ++kk) {
          const int64_t kd = kk / (k[1] * k[2]), kh = kk / k[2] % k[1], kw = kk % k[2];
          const double wv = s.transposed ? wp[(ci * cout_g + co_l) * kvol + kk] : wp[(co * cin_g + ci_l) * kvol + kk];
          // Every (small side, big side) pair linked by this kernel offset.
          const int64_t qn[3] = {s.transposed ? in[0] : out[0], s.transposed ? in[1] : out[1],
                                 s.transposed ? in[2] : out[2]};
          const int64_t pn[3] = {s.transposed ? out[0] : in[0], s.transposed ? out[1] : in[1],
                                 s.transposed ? out[2] : in[2]};
          for (int64_t q0 = 0; q0 < qn[0]; ++q0)
            for (int64_t q1 = 0; q1 < qn[1]; ++q1)
              for (int64_t q2 = 0; q2 < qn[2]; ++q2) {
                const int64_t p0 = q0 * st[0] + kd * dl[0] - pd[0], p1 = q1 * st[1] + kh * dl[1] - pd[1],
                              p2 = q2 * st[2] + kw * dl[2] - pd[2];
                if (p0 < 0 || p0 >= pn[0] || p1 < 0 || p1 >= pn[1] || p2 < 0 || p2 >= pn[2]) continue;
                const int64_t q = (q0 * qn[1] + q1) * qn[2] + q2, p = (p0 * pn[1] + p1) * pn[2] + p2;
                if (!s.transposed) yp[(n * cout + co) * ovol + q] += wv * xp[(n * C + ci) * ivol + p];
                else yp[(n * cout + co) * ovol + p] += wv * xp[(n * C + ci) * ivol + q];
              }
        }
      }
  if (b_in.defined()) y = y + b_in.to(kFloat64).reshape({1, cout}).reshape([&] {
                        std::vector<int64_t> r{1, cout};
                        for (int64_t i = 0; i < nd; ++i) r.push_back(1);
                        return r;
                      }());
  return unbatched ? y.squeeze(0) : y;
}

/// The library call for a spec (libtorch's public spelling).
Tensor call(const Spec& s, const Tensor& x, const Tensor& w, const Tensor& b) {
  std::optional<Tensor> bias = b.defined() ? std::optional<Tensor>(b) : std::nullopt;
  switch (nd_of(s) * 2 + s.transposed) {
    case 2: return conv1d(x, w, bias, s.stride, s.pad, s.dilation, s.groups);
    case 3: return conv_transpose1d(x, w, bias, s.stride, s.pad, s.out_pad, s.groups, s.dilation);
    case 4: return conv2d(x, w, bias, s.stride, s.pad, s.dilation, s.groups);
    case 5: return conv_transpose2d(x, w, bias, s.stride, s.pad, s.out_pad, s.groups, s.dilation);
    case 6: return conv3d(x, w, bias, s.stride, s.pad, s.dilation, s.groups);
    default: return conv_transpose3d(x, w, bias, s.stride, s.pad, s.out_pad, s.groups, s.dilation);
  }
}

Spec conv(std::string name, std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> stride,
          std::vector<int64_t> pad, std::vector<int64_t> dil, int64_t groups = 1, bool bias = true) {
  return Spec{name, x, w, stride, pad, dil, std::vector<int64_t>(w.size() - 2, 0), groups, bias, false};
}
Spec tconv(std::string name, std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> stride,
           std::vector<int64_t> pad, std::vector<int64_t> out_pad, std::vector<int64_t> dil, int64_t groups = 1,
           bool bias = true) {
  return Spec{name, x, w, stride, pad, dil, out_pad, groups, bias, true};
}

std::vector<Spec> specs() {
  return {
      conv("2d basic", {2, 3, 7, 9}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}),
      conv("2d batch 1 channels 1", {1, 1, 5, 6}, {2, 1, 2, 3}, {1, 1}, {0, 0}, {1, 1}),
      conv("2d stride 2 pad 1", {2, 3, 9, 8}, {5, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}),
      conv("2d per-dim stride/pad/dilation", {1, 3, 11, 10}, {2, 3, 3, 2}, {2, 1}, {1, 2}, {2, 3}),
      conv("2d groups 2", {2, 4, 6, 7}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2),
      conv("2d depthwise", {2, 3, 8, 8}, {3, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3),
      conv("2d depthwise multiplier 2", {1, 3, 7, 5}, {6, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 3),
      conv("2d no bias 1x1", {3, 5, 4, 4}, {7, 5, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, false),
      conv("2d kernel = input", {2, 2, 5, 5}, {3, 2, 5, 5}, {1, 1}, {0, 0}, {1, 1}),
      conv("2d big pad", {1, 2, 3, 3}, {2, 2, 3, 3}, {1, 1}, {3, 3}, {1, 1}),
      conv("2d unbatched", {3, 6, 7}, {2, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}),
      conv("2d wide 17 channels", {2, 17, 6, 6}, {19, 17, 3, 3}, {1, 1}, {1, 1}, {1, 1}),
      conv("1d basic", {2, 3, 11}, {4, 3, 3}, {1}, {0}, {1}),
      conv("1d stride dilation pad", {2, 3, 13}, {4, 3, 3}, {2}, {2}, {2}),
      conv("1d groups", {1, 6, 9}, {3, 2, 4}, {1}, {1}, {1}, 3),
      conv("1d unbatched", {3, 10}, {5, 3, 2}, {1}, {1}, {1}),
      conv("3d basic", {2, 2, 5, 6, 4}, {3, 2, 3, 3, 2}, {1, 1, 1}, {1, 0, 1}, {1, 1, 1}),
      conv("3d stride dilation groups", {1, 4, 7, 6, 7}, {4, 2, 2, 3, 2}, {2, 1, 2}, {1, 1, 0}, {2, 1, 2}, 2),
      conv("3d unbatched", {2, 4, 4, 5}, {3, 2, 2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}),
      tconv("t2d basic", {2, 3, 5, 4}, {3, 4, 3, 3}, {1, 1}, {0, 0}, {0, 0}, {1, 1}),
      tconv("t2d stride 2 pad 1 outpad 1", {2, 3, 4, 5}, {3, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}),
      tconv("t2d outpad > pad", {1, 2, 3, 3}, {2, 3, 2, 2}, {3, 2}, {0, 0}, {2, 1}, {1, 1}),
      tconv("t2d dilation groups", {2, 4, 5, 5}, {4, 3, 3, 2}, {2, 1}, {1, 0}, {0, 0}, {2, 2}, 2),
      tconv("t2d depthwise", {1, 3, 4, 4}, {3, 1, 3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 1}, 3),
      tconv("t2d unbatched no bias", {2, 4, 3}, {2, 3, 2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 1, false),
      tconv("t1d", {2, 3, 6}, {3, 2, 3}, {2}, {1}, {1}, {1}),
      tconv("t3d", {1, 2, 3, 3, 2}, {2, 2, 2, 2, 2}, {2, 1, 2}, {0, 0, 1}, {1, 0, 0}, {1, 1, 1}),
  };
}

struct Data {
  Tensor x, w, b;
};

Data make_data(const Spec& s, ScalarType t) {
  Tensor x = randn(s.x, kFloat64), w = randn(s.w, kFloat64);
  const int64_t cout = s.transposed ? s.w[1] * s.groups : s.w[0];
  Tensor b = s.bias ? randn({cout}, kFloat64) : Tensor();
  return {x.to(t), w.to(t), s.bias ? b.to(t) : b};
}

/// Max |a - b| relative to max |b| (and 1).
double rel_err(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  if (a.sizes() != b.sizes()) return 1e9;
  std::vector<double> va = values(a), vb = values(b);
  double diff = 0, scale = 1;
  for (size_t i = 0; i < va.size(); ++i) {
    diff = std::max(diff, std::abs(va[i] - vb[i]));
    scale = std::max(scale, std::abs(vb[i]));
  }
  return diff / scale;
}

/// A copy of t whose strides are not contiguous: t's data every other element of a wider tensor.
Tensor strided_copy(const Tensor& t) {
  std::vector<int64_t> wide(t.sizes().begin(), t.sizes().end());
  wide.back() *= 2;
  Tensor big = zeros(wide, t.options());
  Tensor v = big.slice(t.dim() - 1, 0, wide.back(), 2);
  v.copy_(t);
  EXPECT_FALSE(v.is_contiguous());
  return v;
}

/// The same values laid out channels-last (C innermost).
Tensor channels_last(const Tensor& t) {
  std::vector<int64_t> to{0}, back{0, t.dim() - 1};
  for (int64_t d = 2; d < t.dim(); ++d) to.push_back(d);
  to.push_back(1);
  for (int64_t d = 1; d < t.dim() - 1; ++d) back.push_back(d);
  return t.permute(to).contiguous().permute(back);
}

bool is_channels_last_dense(const Tensor& t) {
  int64_t expect = 1;
  if (t.stride(1) != 1) return false;
  expect = t.size(1);
  for (int64_t d = t.dim() - 1; d >= 2; --d) {
    if (t.stride(d) != expect) return false;
    expect *= t.size(d);
  }
  return t.stride(0) == expect;
}

}  // namespace

// ---- the reference path (float64) against hand-computed values ----

TEST(ConvReference, HandComputed2d) {
  Tensor x = tensor::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}, kFloat64).reshape({1, 1, 3, 3});
  Tensor w = tensor::tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).reshape({1, 1, 2, 2});
  Tensor b = tensor::tensor({0.5}, kFloat64);
  // y[i][j] = x[i][j] + 2 x[i][j+1] + 3 x[i+1][j] + 4 x[i+1][j+1] + 0.5
  EXPECT_EQ(values(conv2d(x, w, b)), (std::vector<double>{37.5, 47.5, 67.5, 77.5}));
  // Stride 2, padding 1: windows at (-1,-1), (-1,1), (1,-1), (1,1).
  // y[0][0] = 4*1; y[0][1] = 3*2 + 4*3; y[1][0] = 2*4 + 4*7; y[1][1] = 1*5 + 2*6 + 3*8 + 4*9
  EXPECT_EQ(values(conv2d(x, w, {}, 2, 1)), (std::vector<double>{4, 18, 36, 77}));
  // The same in float32 through oneDNN.
  EXPECT_EQ(values(conv2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32))),
            (std::vector<double>{37.5, 47.5, 67.5, 77.5}));
}

TEST(ConvReference, HandComputed1dDilationAndTranspose) {
  Tensor x = tensor::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64).reshape({1, 1, 5});
  Tensor w = tensor::tensor({1.0, -1.0}, kFloat64).reshape({1, 1, 2});
  // dilation 2: y[o] = x[o] - x[o+2]
  EXPECT_EQ(values(conv1d(x, w, {}, 1, 0, 2)), (std::vector<double>{-2, -2, -2}));
  // transposed, stride 2: y[2i] += x[i], y[2i+1] -= x[i]
  Tensor xt = tensor::tensor({1.0, 2.0, 3.0}, kFloat64).reshape({1, 1, 3});
  EXPECT_EQ(values(conv_transpose1d(xt, w, {}, 2)), (std::vector<double>{1, -1, 2, -2, 3, -3}));
  // 2-D transposed with a 2x2 kernel of ones sums the overlapping windows.
  Tensor x2 = tensor::tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).reshape({1, 1, 2, 2});
  EXPECT_EQ(values(conv_transpose2d(x2, ones({1, 1, 2, 2}, kFloat64))),
            (std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
  // output_padding adds a row and a column that only the bias reaches.
  Tensor y = conv_transpose2d(x2, ones({1, 1, 2, 2}, kFloat64), tensor::tensor({10.0}, kFloat64), 2, 0, 1);
  EXPECT_EQ(y.sizes(), IntArrayRef({1, 1, 5, 5}));
  EXPECT_EQ(y[0][0][4][4].item<double>(), 10.0);
  EXPECT_EQ(y[0][0][0][0].item<double>(), 11.0);
}

TEST(ConvReference, MatchesDirectDefinition) {
  manual_seed(1);
  for (const Spec& s : specs()) {
    SCOPED_TRACE(s.name);
    Data d = make_data(s, kFloat64);
    Tensor y = call(s, d.x, d.w, d.b);
    EXPECT_LT(rel_err(y, direct(s, d.x, d.w, d.b)), 1e-12);
  }
}

// ---- oneDNN (float32, bfloat16) and float16 against float64 ----

TEST(Conv, Float32MatchesFloat64) {
  manual_seed(2);
  for (const Spec& s : specs()) {
    SCOPED_TRACE(s.name);
    Data d = make_data(s, kFloat64);
    Tensor ref = direct(s, d.x, d.w, d.b);
    Tensor b32 = d.b.defined() ? d.b.to(kFloat32) : Tensor();
    Tensor y = call(s, d.x.to(kFloat32), d.w.to(kFloat32), b32);
    EXPECT_EQ(y.dtype(), kFloat32);
    EXPECT_LT(rel_err(y, ref), 1e-5);
  }
}

TEST(Conv, NonContiguousAndChannelsLast) {
  manual_seed(3);
  for (ScalarType t : {kFloat32, kFloat64}) {
    for (const Spec& s : specs()) {
      SCOPED_TRACE(s.name + " " + to_string(t));
      Data d = make_data(s, t);
      Tensor ref = direct(s, d.x, d.w, d.b);
      const double tol = t == kFloat32 ? 1e-5 : 1e-12;
      // Inputs and weights with gaps between elements.
      EXPECT_LT(rel_err(call(s, strided_copy(d.x), strided_copy(d.w), d.b), ref), tol);
      // A transposed view of the input (non-contiguous, not channels-last).
      if (d.x.dim() >= 3) {
        Tensor xt = d.x.transpose(-1, -2).contiguous().transpose(-1, -2);
        EXPECT_LT(rel_err(call(s, xt, d.w, d.b), ref), tol);
      }
      // Channels-last input: computed in place, and the output stays channels-last.
      if (static_cast<int64_t>(s.x.size()) == nd_of(s) + 2 && d.x.size(1) > 1) {
        Tensor xc = channels_last(d.x);
        ASSERT_TRUE(is_channels_last_dense(xc));
        Tensor y = call(s, xc, channels_last(d.w), d.b);
        EXPECT_LT(rel_err(y, ref), tol);
        if (y.size(1) > 1 && y.numel() / y.size(0) / y.size(1) > 1) {
          EXPECT_TRUE(is_channels_last_dense(y));
        }
      }
    }
  }
}

TEST(Conv, BFloat16WithinBFloat16Tolerance) {
  manual_seed(4);
  for (const Spec& s : specs()) {
    SCOPED_TRACE(s.name);
    Data d = make_data(s, kFloat32);
    // Round the inputs to bf16 first so both sides see the same numbers.
    Tensor x = d.x.to(kBFloat16), w = d.w.to(kBFloat16), b = d.b.defined() ? d.b.to(kBFloat16) : d.b;
    Tensor y = call(s, x, w, b);
    EXPECT_EQ(y.dtype(), kBFloat16);
    Tensor ref = call(s, x.to(kFloat32), w.to(kFloat32), b.defined() ? b.to(kFloat32) : b);
    // bf16 has 8 significant bits: the output's own rounding is 2^-8 relative.
    EXPECT_LT(rel_err(y, ref), 1.5e-2);
  }
}

TEST(Conv, Float16ComputesThroughFloat32) {
  manual_seed(5);
  Spec s = specs()[2];
  Data d = make_data(s, kFloat32);
  Tensor x = d.x.to(kFloat16), w = d.w.to(kFloat16), b = d.b.to(kFloat16);
  Tensor y = call(s, x, w, b);
  EXPECT_EQ(y.dtype(), kFloat16);
  Tensor ref = direct(s, x, w, b);
  EXPECT_LT(rel_err(y, ref), 2e-3);
}

// ---- padding strings ----

TEST(Conv, PaddingSameAndValid) {
  manual_seed(6);
  Tensor x = randn({2, 3, 9, 10}, kFloat64);
  for (std::vector<int64_t> k : {std::vector<int64_t>{3, 3}, {4, 2}, {2, 5}}) {
    for (int64_t dil : {1, 2}) {
      SCOPED_TRACE("kernel " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + " dilation " + std::to_string(dil));
      Tensor w = randn({4, 3, k[0], k[1]}, kFloat64), b = randn({4}, kFloat64);
      Tensor y = conv2d(x, w, b, 1, "same", dil);
      ASSERT_EQ(y.sizes(), IntArrayRef({2, 4, 9, 10}));
      // libtorch: total padding dilation * (k - 1), the odd one on the right. Check against
      // an explicitly padded input.
      std::vector<int64_t> pl, pr;
      for (int64_t kk : k) {
        pl.push_back(dil * (kk - 1) / 2);
        pr.push_back(dil * (kk - 1) - dil * (kk - 1) / 2);
      }
      Tensor xp = zeros({2, 3, 9 + pl[0] + pr[0], 10 + pl[1] + pr[1]}, kFloat64);
      xp.slice(2, pl[0], pl[0] + 9).slice(3, pl[1], pl[1] + 10).copy_(x);
      Tensor ref = conv2d(xp, w, b, 1, 0, dil);
      EXPECT_LT(rel_err(y, ref), 1e-12);
      // float32 through oneDNN (asymmetric padding in the primitive, no padded copy).
      EXPECT_LT(rel_err(conv2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), 1, "same", dil), ref), 1e-5);
      // valid = no padding
      EXPECT_LT(rel_err(conv2d(x, w, b, 1, "valid", dil), conv2d(x, w, b, 1, 0, dil)), 1e-15);
    }
  }
  // 1-D and 3-D, and std::string arguments.
  Tensor x1 = randn({2, 2, 7}, kFloat64), w1 = randn({3, 2, 4}, kFloat64);
  EXPECT_EQ(conv1d(x1, w1, {}, 1, std::string("same")).sizes(), IntArrayRef({2, 3, 7}));
  Tensor x3 = randn({1, 2, 4, 5, 3}, kFloat32), w3 = randn({2, 2, 2, 3, 2}, kFloat32);
  EXPECT_EQ(conv3d(x3, w3, {}, 1, "same").sizes(), IntArrayRef({1, 2, 4, 5, 3}));
  EXPECT_EQ(conv3d(x3, w3, {}, 1, "valid").sizes(), IntArrayRef({1, 2, 3, 3, 2}));
  // Unbatched "same".
  EXPECT_EQ(conv2d(x[0], randn({5, 3, 2, 2}, kFloat64), {}, 1, "same").sizes(), IntArrayRef({5, 9, 10}));
}

TEST(Conv, UnbatchedEqualsBatchOfOne) {
  manual_seed(7);
  Tensor x = randn({3, 8, 7}), w = randn({4, 3, 3, 3}), b = randn({4});
  Tensor y = conv2d(x, w, b, 2, 1);
  EXPECT_EQ(y.sizes(), IntArrayRef({4, 4, 4}));
  EXPECT_TRUE(y.equal(conv2d(x.unsqueeze(0), w, b, 2, 1)[0]));
  Tensor wt = randn({3, 2, 3, 3});
  EXPECT_TRUE(conv_transpose2d(x, wt, {}, 2).equal(conv_transpose2d(x.unsqueeze(0), wt, {}, 2)[0]));
}

TEST(Conv, EmptyBatchAndZeroInputChannels) {
  Tensor y = conv2d(zeros({0, 3, 5, 5}), ones({2, 3, 3, 3}), ones({2}));
  EXPECT_EQ(y.sizes(), IntArrayRef({0, 2, 3, 3}));
  // No input channels: only the bias.
  Tensor y2 = conv2d(zeros({2, 0, 5, 5}), ones({2, 0, 3, 3}), tensor::tensor({1.5f, -2.0f}));
  EXPECT_EQ(y2.sizes(), IntArrayRef({2, 2, 3, 3}));
  EXPECT_EQ(y2[1][1][2][2].item<float>(), -2.0f);
  EXPECT_EQ(y2[0][0][0][0].item<float>(), 1.5f);
}

// ---- meta tensors: shapes without data ----

TEST(Conv, MetaShapes) {
  Tensor x = empty({8, 64, 56, 56}, TensorOptions().device(kMeta));
  Tensor w = empty({128, 64, 3, 3}, TensorOptions().device(kMeta));
  Tensor y = conv2d(x, w, {}, 2, 1);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.sizes(), IntArrayRef({8, 128, 28, 28}));
  Tensor wt = empty({64, 16, 4, 4}, TensorOptions().device(kMeta));
  Tensor yt = conv_transpose2d(x, wt, {}, 2, 1, 0, 2);
  EXPECT_EQ(yt.sizes(), IntArrayRef({8, 32, 112, 112}));
  EXPECT_EQ(conv2d(x, w, {}, 1, "same").sizes(), IntArrayRef({8, 128, 56, 56}));
  Tensor x1 = empty({3, 10}, TensorOptions().device(kMeta)), w1 = empty({5, 3, 4}, TensorOptions().device(kMeta));
  EXPECT_EQ(conv1d(x1, w1, {}, 3, 1).sizes(), IntArrayRef({5, 3}));
  // Meta inputs are checked like real ones.
  EXPECT_THROW(conv2d(x, empty({128, 32, 3, 3}, TensorOptions().device(kMeta))), Error);
}

// convolution and convolution_backward are front ends: on meta tensors they check, size and
// lay out the results and touch no data (these activations would not fit in memory).
TEST(Conv, MetaShapesWithoutData) {
  const TensorOptions meta = TensorOptions().dtype(kFloat32).device(kMeta);
  auto expect_meta = [](const Tensor& t, const std::vector<int64_t>& sizes, ScalarType dt, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(t.sizes().vec(), sizes);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_THROW(t.data_ptr(), Error);
  };
  Tensor x = empty({4096, 256, 224, 224}, meta), w = empty({512, 256, 3, 3}, meta), b = empty({512}, meta);
  expect_meta(conv2d(x, w, b, 1, 1), {4096, 512, 224, 224}, kFloat32, "conv2d");
  expect_meta(conv2d(x.to(kBFloat16), w.to(kBFloat16), {}, 2), {4096, 512, 111, 111}, kBFloat16, "conv2d bfloat16");
  expect_meta(conv2d(empty({2, 3, 9, 9}, meta.dtype(kFloat16)), empty({4, 3, 3, 3}, meta.dtype(kFloat16))),
              {2, 4, 7, 7}, kFloat16, "conv2d float16");
  expect_meta(conv3d(empty({2, 4, 6, 7, 8}, meta.dtype(kFloat64)), empty({6, 2, 3, 3, 3}, meta.dtype(kFloat64)), {}, 1,
                     0, 1, 2),
              {2, 6, 4, 5, 6}, kFloat64, "conv3d grouped float64");
  expect_meta(conv_transpose2d(x, empty({256, 8, 4, 4}, meta), {}, 2, 1, 1, 2), {4096, 16, 449, 449}, kFloat32,
              "conv_transpose2d, output_padding");
  expect_meta(conv1d(empty({3, 10}, meta), empty({5, 3, 4}, meta), {}, 1, "same"), {5, 10}, kFloat32,
              "conv1d unbatched same");
  // The output keeps a channels-last input's layout, as on the CPU.
  Tensor xcl = channels_last(empty({8, 16, 10, 10}, meta));
  Tensor ycl = conv2d(xcl, empty({32, 16, 3, 3}, meta));
  expect_meta(ycl, {8, 32, 8, 8}, kFloat32, "channels-last conv2d");
  EXPECT_TRUE(is_channels_last_dense(ycl));
  // The same checks as on the CPU.
  expect_error([&] { conv2d(x, empty({512, 128, 3, 3}, meta)); }, {"conv2d", "256 channels", "[4096, 256, 224, 224]"});
  expect_error([&] { conv2d(x, w, empty({3}, meta)); }, {"conv2d", "bias", "[512]"});
  // convolution_backward through autograd: meta gradients of the input's, weight's and bias's
  // shapes and layouts.
  Tensor xg = empty({8, 16, 10, 10}, meta).requires_grad_(true), wg = empty({32, 16, 3, 3}, meta).requires_grad_(true),
         bg = empty({32}, meta).requires_grad_(true);
  conv2d(xg, wg, bg, 2, 1).sum().backward();
  expect_meta(xg.grad(), {8, 16, 10, 10}, kFloat32, "grad input");
  expect_meta(wg.grad(), {32, 16, 3, 3}, kFloat32, "grad weight");
  expect_meta(bg.grad(), {32}, kFloat32, "grad bias");
  Tensor xt = empty({2, 6, 5, 5}, meta.dtype(kFloat64)).requires_grad_(true),
         wt = empty({6, 2, 3, 3}, meta.dtype(kFloat64)).requires_grad_(true);
  conv_transpose2d(xt, wt, {}, 2, 1, 1, 3).sum().backward();
  expect_meta(xt.grad(), {2, 6, 5, 5}, kFloat64, "transposed grad input");
  expect_meta(wt.grad(), {6, 2, 3, 3}, kFloat64, "transposed grad weight");
}

// ---- the primitive cache ----

TEST(Conv, PrimitiveCacheHitsOnRepeatedCalls) {
  Tensor x = randn({2, 8, 12, 12}), w = randn({16, 8, 3, 3}, tensor::requires_grad()),
         b = randn({16}, tensor::requires_grad());
  Tensor xr = x.clone().requires_grad_(true);
  auto step = [&] {
    Tensor y = conv2d(xr, w, b, 1, 1);
    y.sum().backward();
  };
  step();  // creates the forward, backward-data and backward-weights primitives and reorders
  const size_t misses = onednn::primitive_cache_misses();
  for (int i = 0; i < 3; ++i) step();
  EXPECT_EQ(onednn::primitive_cache_misses(), misses);
  // Channels-last and forward-only calls as well.
  Tensor xc = channels_last(x);
  conv2d(xc, w.detach(), {}, 2);
  const size_t m2 = onednn::primitive_cache_misses();
  conv2d(xc, w.detach(), {}, 2);
  EXPECT_EQ(onednn::primitive_cache_misses(), m2);
  // A different shape makes new primitives.
  conv2d(randn({3, 8, 12, 12}), w.detach());
  EXPECT_GT(onednn::primitive_cache_misses(), m2);
}

TEST(Conv, ChannelsLastNeedsNoActivationReorder) {
  // Note [Convolution layouts]: channels-last activations go to oneDNN as they are. A first
  // call creates the convolution and at most the weight reorder, never a reorder of the input
  // or the output (each reorder is a cached primitive, so it would count as a miss).
  for (ScalarType t : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(to_string(t));
    Tensor x = channels_last(randn({2, 32, 13, 11}).to(t)), w = randn({48, 32, 3, 3}).to(t);
    const size_t before = onednn::primitive_cache_misses();
    Tensor y = conv2d(x, w, {}, 1, 1);
    EXPECT_LE(onednn::primitive_cache_misses() - before, 2u);
    EXPECT_TRUE(is_channels_last_dense(y));
    EXPECT_LT(rel_err(y, conv2d(x.to(kFloat64), w.to(kFloat64), {}, 1, 1)), t == kFloat32 ? 1e-5 : 1.5e-2);
  }
}

// ---- argument errors ----

TEST(Conv, Errors) {
  Tensor x = randn({2, 4, 8, 8}), w = randn({6, 4, 3, 3});
  // channel mismatch
  expect_error([&] { conv2d(x, randn({6, 3, 3, 3})); }, {"conv2d", "[2, 4, 8, 8]", "[6, 3, 3, 3]", "channels"});
  // groups must divide the channels
  expect_error([&] { conv2d(x, randn({6, 2, 3, 3}), {}, 1, 0, 1, 3); }, {"conv2d", "groups", "[6, 2, 3, 3]"});
  expect_error([&] { conv2d(x, randn({5, 2, 3, 3}), {}, 1, 0, 1, 2); }, {"conv2d", "divisible by groups"});
  expect_error([&] { conv2d(x, w, {}, 1, 0, 1, 0); }, {"conv2d", "groups must be positive"});
  // kernel larger than the padded input
  expect_error([&] { conv2d(randn({1, 4, 2, 2}), w); }, {"conv2d", "kernel", "[1, 4, 2, 2]", "[6, 4, 3, 3]"});
  expect_error([&] { conv2d(randn({1, 4, 5, 5}), w, {}, 1, 0, 3); }, {"conv2d", "padded input size 5", "kernel size 7"});
  // wrong ranks
  expect_error([&] { conv2d(randn({4, 8}), w); }, {"conv2d", "3-D (unbatched) or 4-D (batched)", "[4, 8]"});
  expect_error([&] { conv2d(x, randn({6, 4, 3})); }, {"conv2d", "4-D weight", "[6, 4, 3]"});
  expect_error([&] { conv1d(x, w); }, {"conv1d", "2-D (unbatched) or 3-D (batched)"});
  // dtypes
  expect_error([&] { conv2d(x, w.to(kFloat64)); }, {"conv2d", "same dtype", "float32", "float64"});
  expect_error([&] { conv2d(x.to(kInt64), w.to(kInt64)); }, {"conv2d", "floating point", "int64"});
  expect_error([&] { conv2d(x, w, randn({6}, kFloat64)); }, {"conv2d", "bias", "float64"});
  expect_error([&] { conv2d(x, w, randn({5})); }, {"conv2d", "bias of shape [6]", "[5]"});
  // parameters
  expect_error([&] { conv2d(x, w, {}, 0); }, {"conv2d", "stride must be positive", "[0, 0]"});
  expect_error([&] { conv2d(x, w, {}, {1, -1}); }, {"conv2d", "stride must be positive"});
  expect_error([&] { conv2d(x, w, {}, 1, -1); }, {"conv2d", "padding must be non-negative"});
  expect_error([&] { conv2d(x, w, {}, 1, 0, 0); }, {"conv2d", "dilation must be positive"});
  expect_error([&] { conv2d(x, w, {}, {1, 1, 1}); }, {"conv2d", "stride", "list of 2 values", "[1, 1, 1]"});
  expect_error([&] { conv2d(x, w, {}, 2, "same"); }, {"conv2d", "'same'", "strided"});
  expect_error([&] { conv2d(x, w, {}, 1, "full"); }, {"conv2d", "invalid padding string 'full'"});
  // transposed
  Tensor wt = randn({4, 3, 3, 3});
  expect_error([&] { conv_transpose2d(x, randn({3, 3, 3, 3})); }, {"conv_transpose2d", "channels", "[3, 3, 3, 3]"});
  expect_error([&] { conv_transpose2d(x, wt, {}, 1, 0, 1); }, {"conv_transpose2d", "output_padding", "smaller"});
  expect_error([&] { conv_transpose2d(x, wt, {}, 1, 0, 0, 3); }, {"conv_transpose2d", "divisible by groups"});
  expect_error([&] { conv_transpose2d(x, wt, randn({4})); }, {"conv_transpose2d", "bias of shape [3]"});
  expect_error([&] { conv_transpose2d(randn({1, 4, 1, 1}), wt, {}, 1, 2); }, {"conv_transpose2d", "not positive"});
  // undefined
  expect_error([&] { conv2d(Tensor(), w); }, {"conv2d", "undefined"});
}
