// Quantized tensors (docs/quantization.md): quantize/dequantize against hand-computed values
// (ties round to even, clamping), per-channel along each axis, non-contiguous inputs, views that
// keep or adjust the parameters, the errors of bad parameters and of ops without a quantized
// kernel, printing, and save/load round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <tensor/tensor.h>
#include <vector>

#include "tests/temp_dir_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;
using tensor::testing::temp_path;

namespace {

template <class T>
std::vector<T> values(const Tensor& t) {
  Tensor c = t.contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}
std::vector<int64_t> ints(const Tensor& q) { return values<int64_t>(q.int_repr().to(kInt64)); }
std::vector<double> reals(const Tensor& q) { return values<double>(q.dequantize().to(kFloat64)); }

Tensor f32(std::vector<float> v, std::vector<int64_t> shape) {
  return tensor::tensor(v).to(kFloat32).reshape(shape).clone();
}

// x = [[-1, 0.3, 2.6], [0.5, -0.75, 10]]; its per-channel forms are worked out by hand below.
Tensor sample() { return f32({-1.0f, 0.3f, 2.6f, 0.5f, -0.75f, 10.0f}, {2, 3}); }
Tensor per_channel_axis1() {
  return quantize_per_channel(sample(), tensor::tensor({0.5, 0.25, 1.0}), tensor::tensor({0, 2, -1}), 1, kQInt8);
}

}  // namespace

// ---- dtypes ----

TEST(QuantizedDtype, NamesSizesAndPredicates) {
  EXPECT_STREQ(to_string(kQInt8), "qint8");
  EXPECT_STREQ(to_string(kQUInt8), "quint8");
  EXPECT_STREQ(to_string(kQInt32), "qint32");
  EXPECT_EQ(element_size(kQInt8), 1);
  EXPECT_EQ(element_size(kQUInt8), 1);
  EXPECT_EQ(element_size(kQInt32), 4);
  EXPECT_EQ(element_size(ScalarType::Undefined), 0);
  for (ScalarType t : {kQInt8, kQUInt8, kQInt32}) {
    EXPECT_TRUE(isQIntType(t));
    EXPECT_FALSE(is_integral(t, true));
    EXPECT_FALSE(is_floating_point(t));
  }
  EXPECT_FALSE(is_qint_type(kInt8));
  EXPECT_FALSE(is_qint_type(kFloat32));
  EXPECT_TRUE(is_signed(kQInt8));
  EXPECT_FALSE(is_signed(kQUInt8));
  EXPECT_EQ(to_underlying(kQInt8), kInt8);
  EXPECT_EQ(to_underlying(kQUInt8), kUInt8);
  EXPECT_EQ(to_underlying(kQInt32), kInt32);
  EXPECT_EQ(to_underlying(kFloat32), kFloat32);
  EXPECT_STREQ(to_string(kPerTensorAffine), "per_tensor_affine");
  EXPECT_STREQ(to_string(kPerChannelAffine), "per_channel_affine");
  expect_error([] { promote_types(kQInt8, kFloat32); }, {"promote_types", "qint8", "float32"});
}

// ---- quantize_per_tensor ----

TEST(QuantizePerTensor, TiesRoundToEvenAndClamp) {
  // x / 0.5 = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 200, -200, 0]: halves go to the even neighbour,
  // and +-200 clamp to qint8's [-128, 127].
  Tensor x = f32({-1.25f, -0.75f, -0.25f, 0.25f, 0.75f, 1.25f, 100.0f, -100.0f, 0.0f}, {9});
  Tensor q = quantize_per_tensor(x, 0.5, 0, kQInt8);
  EXPECT_EQ(q.dtype(), kQInt8);
  EXPECT_TRUE(q.is_quantized());
  EXPECT_EQ(q.qscheme(), kPerTensorAffine);
  EXPECT_EQ(q.q_scale(), 0.5);
  EXPECT_EQ(q.q_zero_point(), 0);
  EXPECT_EQ(ints(q), (std::vector<int64_t>{-2, -2, 0, 0, 2, 2, 127, -128, 0}));
  EXPECT_EQ(reals(q), (std::vector<double>{-1, -1, 0, 0, 1, 1, 63.5, -64, 0}));
  EXPECT_EQ(q.int_repr().dtype(), kInt8);
  EXPECT_EQ(q.dequantize().dtype(), kFloat32);
  EXPECT_EQ(q.sizes(), x.sizes());
}

TEST(QuantizePerTensor, QUInt8WithZeroPoint) {
  // x / 0.5 = [-2.5, 0.5, 1.5, 128, -129, 127.5] -> [-2, 0, 2, 128, -129, 128] + 128, clamped to [0, 255].
  Tensor x = f32({-1.25f, 0.25f, 0.75f, 64.0f, -64.5f, 63.75f}, {2, 3});
  Tensor q = quantize_per_tensor(x, 0.5, 128, kQUInt8);
  EXPECT_EQ(q.int_repr().dtype(), kUInt8);
  EXPECT_EQ(ints(q), (std::vector<int64_t>{126, 128, 130, 255, 0, 255}));
  EXPECT_EQ(reals(q), (std::vector<double>{-1, 0, 1, 63.5, -64, 63.5}));
}

TEST(QuantizePerTensor, QInt32AndAScaleThatIsNotAPowerOfTwo) {
  // x * 4 = [4, -0.5, 1.5, 4e10] -> [4, 0, 2, clamp] - 3.
  Tensor q = quantize_per_tensor(f32({1.0f, -0.125f, 0.375f, 1e10f}, {4}), 0.25, -3, kQInt32);
  EXPECT_EQ(q.int_repr().dtype(), kInt32);
  EXPECT_EQ(ints(q), (std::vector<int64_t>{1, -3, -1, 2147483647}));
  std::vector<double> r = reals(q);
  EXPECT_EQ(r[0], 1.0);
  EXPECT_EQ(r[1], 0.0);
  EXPECT_EQ(r[2], 0.5);
  EXPECT_EQ(r[3], static_cast<double>(static_cast<float>((2147483647.0 + 3) * 0.25)));
  // 0.26 / 0.1 = 2.6 -> 3, + 10 = 13; (13 - 10) * 0.1 = 0.3 in float32.
  Tensor p = quantize_per_tensor(f32({0.26f, -0.04f}, {2}), 0.1, 10, kQInt8);
  EXPECT_EQ(ints(p), (std::vector<int64_t>{13, 10}));
  EXPECT_EQ(values<float>(p.dequantize()), (std::vector<float>{0.3f, 0.0f}));
}

TEST(QuantizePerTensor, MatchesAFloat64ReferenceLoop) {
  // scale 2^-3: x * 8 is exact in float32 and in float64, so the reference may divide in double.
  manual_seed(3);
  Tensor x = randn({5, 7}) * 10;
  Tensor q = quantize_per_tensor(x, 0.125, 5, kQInt8);
  std::vector<float> xv = values<float>(x);
  std::vector<int64_t> got = ints(q);
  for (size_t i = 0; i < xv.size(); ++i) {
    double r = std::nearbyint(static_cast<double>(xv[i]) / 0.125) + 5;
    r = std::min(127.0, std::max(-128.0, r));
    EXPECT_EQ(got[i], static_cast<int64_t>(r)) << "at " << i << " x=" << xv[i];
  }
}

TEST(QuantizePerTensor, NonContiguousInputAndTensorOverload) {
  Tensor base = f32({-1.25f, 0.75f, -0.25f, 1.25f, 2.0f, 3.0f}, {3, 2});
  Tensor x = base.t();  // [[-1.25, -0.25, 2], [0.75, 1.25, 3]]
  ASSERT_FALSE(x.is_contiguous());
  Tensor q = quantize_per_tensor(x, tensor::tensor({0.5}), tensor::tensor({1}), kQInt8);
  EXPECT_EQ(q.q_scale(), 0.5);
  EXPECT_EQ(q.q_zero_point(), 1);
  // x / 0.5 = [[-2.5, -0.5, 4], [1.5, 2.5, 6]] -> [[-2, 0, 4], [2, 2, 6]] + 1.
  EXPECT_EQ(ints(q), (std::vector<int64_t>{-1, 1, 5, 3, 3, 7}));
}

TEST(QuantizePerTensor, BadArguments) {
  Tensor x = f32({1.0f, 2.0f}, {2});
  expect_error([&] { quantize_per_tensor(x, 0.0, 0, kQInt8); }, {"quantize_per_tensor", "scale must be a positive"});
  expect_error([&] { quantize_per_tensor(x, -1.0, 0, kQInt8); }, {"scale must be a positive finite number, got -1"});
  expect_error([&] { quantize_per_tensor(x, NAN, 0, kQInt8); }, {"scale must be a positive"});
  expect_error([&] { quantize_per_tensor(x, INFINITY, 0, kQInt8); }, {"scale must be a positive"});
  expect_error([&] { quantize_per_tensor(x, 1e-60, 0, kQInt8); }, {"too small", "overflows float32"});
  expect_error([&] { quantize_per_tensor(x, 0.1, 256, kQUInt8); }, {"zero_point 256 is out of range for quint8 [0, 255]"});
  expect_error([&] { quantize_per_tensor(x, 0.1, -1, kQUInt8); }, {"zero_point -1 is out of range for quint8"});
  expect_error([&] { quantize_per_tensor(x, 0.1, 128, kQInt8); }, {"zero_point 128 is out of range for qint8 [-128, 127]"});
  expect_error([&] { quantize_per_tensor(x, 0.1, 0, kInt8); }, {"dtype must be a quantized type", "got int8"});
  expect_error([&] { quantize_per_tensor(x.to(kFloat64), 0.1, 0, kQInt8); }, {"expected a float32 tensor", "float64"});
  Tensor q = quantize_per_tensor(x, 0.1, 0, kQInt8);
  expect_error([&] { quantize_per_tensor(q, 0.1, 0, kQInt8); }, {"already quantized"});
  expect_error([&] { quantize_per_tensor(x, tensor::tensor({0.1, 0.2}), tensor::tensor({0}), kQInt8); },
               {"one element each"});
  expect_error([&] { quantize_per_tensor(x, tensor::tensor({0.1}), tensor::tensor({0.5}), kQInt8); },
               {"zero_point must be an integer tensor"});
}

// ---- quantize_per_channel ----

TEST(QuantizePerChannel, AlongAxis1) {
  // Column c uses scales[c], zero_points[c]: -1/.5=-2; .5/.5=1 | .3*4=1.2->1, -.75*4=-3, +2 |
  // 2.6->3, 10, -1.
  Tensor q = per_channel_axis1();
  EXPECT_EQ(q.qscheme(), kPerChannelAffine);
  EXPECT_EQ(q.q_per_channel_axis(), 1);
  EXPECT_EQ(values<double>(q.q_per_channel_scales()), (std::vector<double>{0.5, 0.25, 1.0}));
  EXPECT_EQ(q.q_per_channel_scales().dtype(), kFloat64);
  EXPECT_EQ(values<int64_t>(q.q_per_channel_zero_points()), (std::vector<int64_t>{0, 2, -1}));
  EXPECT_EQ(q.q_per_channel_zero_points().dtype(), kInt64);
  EXPECT_EQ(ints(q), (std::vector<int64_t>{-2, 3, 2, 1, -1, 9}));
  EXPECT_EQ(reals(q), (std::vector<double>{-1, 0.25, 3, 0.5, -0.75, 10}));
}

TEST(QuantizePerChannel, AlongAxis0WithFloat32ScalesAndInt32ZeroPoints) {
  // Row 0: scale .5, zp 1: [-2, 0.6->1, 5.2->5] + 1. Row 1: scale 2, zp -2: [0.25->0, -0.375->0, 5] - 2.
  Tensor q = quantize_per_channel(sample(), tensor::tensor({0.5, 2.0}).to(kFloat32), tensor::tensor({1, -2}).to(kInt32),
                                  0, kQInt8);
  EXPECT_EQ(q.q_per_channel_axis(), 0);
  EXPECT_EQ(ints(q), (std::vector<int64_t>{-1, 2, 6, -2, -2, 3}));
  EXPECT_EQ(reals(q), (std::vector<double>{-1, 0.5, 2.5, 0, 0, 10}));
  // A negative axis counts from the end.
  Tensor r = quantize_per_channel(sample(), tensor::tensor({0.5, 2.0}), tensor::tensor({1, -2}), -2, kQInt8);
  EXPECT_EQ(r.q_per_channel_axis(), 0);
  EXPECT_EQ(ints(r), ints(q));
}

TEST(QuantizePerChannel, NonContiguousInput) {
  Tensor base = f32({-1.0f, 0.5f, 0.3f, -0.75f, 2.6f, 10.0f}, {3, 2});
  Tensor x = base.t();  // equals sample()
  ASSERT_FALSE(x.is_contiguous());
  Tensor q = quantize_per_channel(x, tensor::tensor({0.5, 0.25, 1.0}), tensor::tensor({0, 2, -1}), 1, kQInt8);
  EXPECT_EQ(ints(q), ints(per_channel_axis1()));
}

TEST(QuantizePerChannel, MatchesAFloat64ReferenceLoop) {
  manual_seed(11);
  Tensor x = randn({3, 4, 5}) * 20;
  const std::vector<double> s = {0.125, 0.25, 0.5, 1.0};
  const std::vector<int64_t> z = {0, 10, 128, 255};
  Tensor q = quantize_per_channel(x, tensor::tensor(s), tensor::tensor(z), 1, kQUInt8);
  std::vector<float> xv = values<float>(x);
  std::vector<int64_t> got = ints(q);
  std::vector<double> deq = reals(q);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t k = 0; k < 5; ++k) {
        const size_t at = static_cast<size_t>((i * 4 + c) * 5 + k);
        double r = std::nearbyint(static_cast<double>(xv[at]) / s[c]) + static_cast<double>(z[c]);
        r = std::min(255.0, std::max(0.0, r));
        EXPECT_EQ(got[at], static_cast<int64_t>(r)) << "at " << at;
        EXPECT_EQ(deq[at], (r - static_cast<double>(z[c])) * s[c]) << "at " << at;
      }
}

TEST(QuantizePerChannel, BadArguments) {
  Tensor x = sample();
  Tensor s = tensor::tensor({0.5, 0.25, 1.0}), z = tensor::tensor({0, 2, -1});
  expect_error([&] { quantize_per_channel(x, s, z, 2, kQInt8); }, {"quantize_per_channel", "axis 2 is out of range"});
  expect_error([&] { quantize_per_channel(x, s, z, 0, kQInt8); }, {"expected 2 scales and zero_points", "got 3"});
  expect_error([&] { quantize_per_channel(x, s, z.slice(0, 0, 2), 1, kQInt8); }, {"same number of entries"});
  expect_error([&] { quantize_per_channel(x, s, z.to(kFloat32), 1, kQInt8); }, {"zero_points must be an integer tensor"});
  expect_error([&] { quantize_per_channel(x, s.reshape({3, 1}), z, 1, kQInt8); }, {"must be 1-D"});
  expect_error([&] { quantize_per_channel(x, tensor::tensor({0.5, 0.0, 1.0}), z, 1, kQInt8); },
               {"scale must be a positive finite number, got 0"});
  expect_error([&] { quantize_per_channel(x, s, tensor::tensor({0, 300, 0}), 1, kQUInt8); },
               {"zero_point 300 is out of range for quint8"});
  expect_error([&] { quantize_per_channel(x, s, z, 1, kFloat32); }, {"dtype must be a quantized type"});
}

TEST(QuantizedAccessors, WrongSchemeOrNotQuantized) {
  Tensor pt = quantize_per_tensor(sample(), 0.1, 0, kQInt8);
  Tensor pc = per_channel_axis1();
  expect_error([&] { pc.q_scale(); }, {"q_scale: expected a per-tensor quantized tensor", "q_per_channel_scales()"});
  expect_error([&] { pc.q_zero_point(); }, {"q_zero_point: expected a per-tensor"});
  expect_error([&] { pt.q_per_channel_scales(); }, {"q_per_channel_scales: expected a per-channel"});
  expect_error([&] { pt.q_per_channel_zero_points(); }, {"expected a per-channel"});
  expect_error([&] { pt.q_per_channel_axis(); }, {"expected a per-channel"});
  Tensor f = sample();
  EXPECT_FALSE(f.is_quantized());
  expect_error([&] { f.q_scale(); }, {"q_scale: expected a quantized tensor", "float32"});
  expect_error([&] { f.dequantize(); }, {"dequantize: expected a quantized tensor"});
  expect_error([&] { f.int_repr(); }, {"int_repr: expected a quantized tensor"});
  expect_error([&] { f.qscheme(); }, {"qscheme: expected a quantized tensor"});
}

// ---- views and copies ----

TEST(QuantizedViews, PerTensorViewsKeepTheParameters) {
  Tensor q = quantize_per_tensor(sample(), 0.25, 3, kQInt8);
  Tensor d = q.dequantize();
  const std::vector<std::pair<Tensor, Tensor>> cases = {
      {q.select(0, 1), d.select(0, 1)},           {q.slice(1, 0, 2), d.slice(1, 0, 2)},
      {q.reshape({3, 2}), d.reshape({3, 2})},     {q.view({6}), d.view({6})},
      {q.transpose(0, 1), d.transpose(0, 1)},     {q.t().contiguous(), d.t()},
      {q.clone(), d},                             {q[1][2], d[1][2]},
      {q.unsqueeze(0).expand({2, 2, 3}), d.unsqueeze(0).expand({2, 2, 3})},
      {q.flatten(), d.flatten()},                 {q.detach(), d},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Tensor& v = cases[i].first;
    SCOPED_TRACE(i);
    EXPECT_EQ(v.dtype(), kQInt8);
    EXPECT_EQ(v.qscheme(), kPerTensorAffine);
    EXPECT_EQ(v.q_scale(), 0.25);
    EXPECT_EQ(v.q_zero_point(), 3);
    EXPECT_EQ(v.sizes(), cases[i].second.sizes());
    EXPECT_TRUE(v.dequantize().equal(cases[i].second));
  }
  // A view shares memory: writing through the integers of one shows in the other.
  Tensor row = q.select(0, 0);
  EXPECT_EQ(row.unsafeGetTensorImpl()->storage(), q.unsafeGetTensorImpl()->storage());
  Tensor c = q.t().contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.unsafeGetTensorImpl()->storage(), q.unsafeGetTensorImpl()->storage());
}

TEST(QuantizedViews, PerChannelViewsFollowTheChannelAxis) {
  Tensor q = per_channel_axis1();  // [2, 3], channels along dim 1
  Tensor d = q.dequantize();

  Tensor tr = q.transpose(0, 1);
  EXPECT_EQ(tr.q_per_channel_axis(), 0);
  EXPECT_TRUE(tr.dequantize().equal(d.t()));
  EXPECT_EQ(q.t().q_per_channel_axis(), 0);
  EXPECT_EQ(q.permute({1, 0}).q_per_channel_axis(), 0);

  Tensor row = q.select(0, 1);  // the channels stay, now along dim 0
  EXPECT_EQ(row.qscheme(), kPerChannelAffine);
  EXPECT_EQ(row.q_per_channel_axis(), 0);
  EXPECT_EQ(ints(row), (std::vector<int64_t>{1, -1, 9}));
  EXPECT_TRUE(row.dequantize().equal(d.select(0, 1)));

  Tensor col = q.select(1, 2);  // one channel: per-tensor with its parameters
  EXPECT_EQ(col.qscheme(), kPerTensorAffine);
  EXPECT_EQ(col.q_scale(), 1.0);
  EXPECT_EQ(col.q_zero_point(), -1);
  EXPECT_TRUE(col.dequantize().equal(d.select(1, 2)));

  Tensor sl = q.slice(1, 1, 3);
  EXPECT_EQ(values<double>(sl.q_per_channel_scales()), (std::vector<double>{0.25, 1.0}));
  EXPECT_EQ(values<int64_t>(sl.q_per_channel_zero_points()), (std::vector<int64_t>{2, -1}));
  EXPECT_TRUE(sl.dequantize().equal(d.slice(1, 1, 3)));
  Tensor stepped = q.slice(1, 0, 3, 2);
  EXPECT_EQ(values<double>(stepped.q_per_channel_scales()), (std::vector<double>{0.5, 1.0}));
  EXPECT_TRUE(stepped.dequantize().equal(d.slice(1, 0, 3, 2)));

  EXPECT_EQ(q.unsqueeze(0).q_per_channel_axis(), 2);
  EXPECT_EQ(q.unsqueeze(2).q_per_channel_axis(), 1);
  EXPECT_EQ(q.unsqueeze(0).squeeze().q_per_channel_axis(), 1);
  EXPECT_EQ(q.view({2, 3, 1}).q_per_channel_axis(), 1);
  EXPECT_EQ(q.view({1, 2, 3}).q_per_channel_axis(), 2);
  EXPECT_EQ(q.expand({4, 2, 3}).q_per_channel_axis(), 2);
  EXPECT_TRUE(q.view({1, 2, 3}).dequantize().equal(d.view({1, 2, 3})));

  // contiguous() and clone() copy the integers and keep the (moved) channel axis.
  Tensor c = tr.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.q_per_channel_axis(), 0);
  EXPECT_EQ(ints(c), (std::vector<int64_t>{-2, 1, 3, -1, 2, 9}));
  EXPECT_TRUE(c.dequantize().equal(d.t()));
  EXPECT_TRUE(q.clone().dequantize().equal(d));

  expect_error([&] { q.view({6}); }, {"view: shape [6] would split or merge dim 1 (the channel axis)"});
  expect_error([&] { q.diagonal(); }, {"diagonal: not supported for per-channel quantized tensors"});
  expect_error([&] { q.as_strided({2}, {1}); }, {"as_strided: not supported for per-channel"});
}

TEST(QuantizedCopies, CopyAndTo) {
  Tensor q = quantize_per_tensor(sample(), 0.5, 0, kQInt8);
  // A float source is quantized with the destination's parameters.
  Tensor dst = quantize_per_tensor(f32({0, 0, 0}, {3}), 0.25, 1, kQInt8);
  dst.copy_(f32({1.0f, -0.125f, 0.375f}, {3}));  // * 4 = [4, -0.5, 1.5] -> [4, 0, 2] + 1
  EXPECT_EQ(ints(dst), (std::vector<int64_t>{5, 1, 3}));
  EXPECT_EQ(dst.q_scale(), 0.25);
  // Quantized into quantized: a whole tensor takes the source's parameters, as libtorch.
  Tensor whole = quantize_per_tensor(f32({0, 0, 0, 0, 0, 0}, {2, 3}), 0.1, 0, kQInt8);
  whole.copy_(q);
  EXPECT_EQ(whole.q_scale(), 0.5);
  EXPECT_EQ(ints(whole), ints(q));
  // Equal parameters: integers copied into a view.
  Tensor twin = quantize_per_tensor(f32({0, 0, 0, 0, 0, 0}, {2, 3}), 0.5, 0, kQInt8);
  twin.select(0, 0).copy_(q.select(0, 1));
  EXPECT_EQ(ints(twin), (std::vector<int64_t>{1, -2, 20, 0, 0, 0}));
  expect_error([&] { whole.select(0, 0).copy_(quantize_per_tensor(f32({1, 2, 3}, {3}), 0.3, 0, kQInt8)); },
               {"copy_", "different quantization parameters"});
  expect_error([&] { sample().copy_(q); }, {"copying from a quantized tensor", "dequantize()"});
  expect_error([&] { dst.copy_(quantize_per_tensor(f32({1, 2, 3}, {3}), 0.3, 0, kQUInt8)); },
               {"cannot copy a quint8 tensor into a qint8 tensor"});
  expect_error([&] { q.to(kFloat32); }, {"to: converting a quantized tensor", "dequantize()"});
  expect_error([&] { q.to(kQUInt8); }, {"cannot convert a qint8 tensor to quint8"});
  EXPECT_TRUE(q.to(kQInt8).is_same(q));
  Tensor copied = q.to(kQInt8, false, /*copy=*/true);
  EXPECT_FALSE(copied.is_same(q));
  EXPECT_EQ(ints(copied), ints(q));
  expect_error([] { empty({2}, kQInt8); }, {"empty: cannot make a qint8 tensor without quantization parameters"});
  expect_error([&] { empty_like(q); }, {"cannot make a qint8 tensor"});
  expect_error([&] { q.requires_grad_(); }, {"requires_grad"});
}

TEST(QuantizedCopies, MakeQuantizedFromIntegers) {
  Tensor i8 = tensor::tensor({-3, 0, 7}).to(kInt8);
  Tensor q = _make_per_tensor_quantized_tensor(i8, 0.5, -1);
  EXPECT_EQ(q.dtype(), kQInt8);
  EXPECT_EQ(reals(q), (std::vector<double>{-1, 0.5, 4}));
  Tensor u8 = tensor::tensor({10, 20, 30, 40}).to(kUInt8).reshape({2, 2});
  Tensor pc = _make_per_channel_quantized_tensor(u8, tensor::tensor({0.5, 2.0}), tensor::tensor({10, 0}), 0);
  EXPECT_EQ(pc.dtype(), kQUInt8);
  EXPECT_EQ(reals(pc), (std::vector<double>{0, 5, 60, 80}));
  Tensor i32 = _make_per_tensor_quantized_tensor(tensor::tensor({5}).to(kInt32), 1.0, 0);
  EXPECT_EQ(i32.dtype(), kQInt32);
  expect_error([] { _make_per_tensor_quantized_tensor(tensor::tensor({1.0}), 0.5, 0); },
               {"expected an int8, uint8 or int32 tensor"});
}

// ---- ops without a quantized kernel ----

TEST(QuantizedOps, OpsWithoutAQuantizedKernelRaise) {
  Tensor q = quantize_per_tensor(sample(), 0.5, 0, kQInt8);
  Tensor sq = quantize_per_tensor(f32({1, 2, 3, 4}, {2, 2}), 0.5, 0, kQInt8);
  const std::string no_kernel = "no kernel for dtype qint8 (quantized tensors support";
  // add and mul need an output scale: their Quantized slots point at tensor::quantized::add/mul.
  expect_error([&] { (void)(q + q); }, {"add: ", "needs an output scale", "quantized::add"});
  expect_error([&] { (void)(q * 2); }, {"mul: ", "needs an output scale", "quantized::mul"});
  expect_error([&] { (void)(q + sample()); }, {"add: ", "quantized::add"});
  expect_error([&] { q.sum(); }, {"sum: ", no_kernel});
  expect_error([&] { q.max(); }, {no_kernel});
  expect_error([&] { matmul(sq, sq); }, {"matmul: ", no_kernel});
  expect_error([&] { sq.mm(sq); }, {no_kernel});
  expect_error([&] { q.fill_(1); }, {"fill_: ", no_kernel});
  expect_error([&] { q.index_select(0, tensor::tensor({0})); }, {no_kernel});
  // relu, pooling and cat have quantized kernels (tests/test_quantized_kernels.cpp); cat still
  // refuses to mix quantized and float tensors.
  expect_error([&] { cat({q, sample()}); }, {"cat: ", "expected a quint8 or qint8 input"});
  expect_error([&] { q.eq(q); }, {no_kernel});
  expect_error([&] { q.var(); }, {"var: ", no_kernel});
  expect_error([&] { per_channel_axis1().exp(); }, {"exp: ", no_kernel});
  // The operands are untouched.
  EXPECT_EQ(ints(q), (std::vector<int64_t>{-2, 1, 5, 1, -2, 20}));
}

// ---- printing ----

TEST(QuantizedPrint, PerTensorShowsRealValuesAndParameters) {
  // [1, 2] / 0.1 + 10 = [20, 30]; dequantized back to [1, 2].
  Tensor q = quantize_per_tensor(f32({1.0f, 2.0f}, {2}), 0.1, 10, kQInt8);
  std::ostringstream ss;
  ss << q;
  EXPECT_EQ(ss.str(), " 1\n 2\n[ QuantizedCPUQInt8Type{2}, qscheme: per_tensor_affine, scale: 0.1, zero_point: 10 ]");
  std::ostringstream s0;
  s0 << q[1];
  EXPECT_EQ(s0.str(), "2\n[ QuantizedCPUQInt8Type{}, qscheme: per_tensor_affine, scale: 0.1, zero_point: 10 ]");
}

TEST(QuantizedPrint, PerChannelShowsScalesZeroPointsAndAxis) {
  std::ostringstream ss;
  ss << quantize_per_channel(f32({1, 2, 3, 4}, {2, 2}), tensor::tensor({0.5, 1.0}), tensor::tensor({0, 1}), 0, kQUInt8);
  const std::string s = ss.str();
  EXPECT_EQ(s.rfind(" 1  2\n 3  4\n[ QuantizedCPUQUInt8Type{2,2}, qscheme: per_channel_affine, scales: ", 0), 0u) << s;
  EXPECT_NE(s.find("zero_points: "), std::string::npos) << s;
  EXPECT_NE(s.find("[ CPULongType{2} ], axis: 0 ]"), std::string::npos) << s;
}

// ---- save / load ----

TEST(QuantizedIO, SaveAndLoadRoundTrip) {
  Tensor pt = quantize_per_tensor(sample(), 0.1, -7, kQInt8);
  const std::string p1 = temp_path("q_one.safetensors");
  tensor::save(pt, p1);
  Tensor back;
  tensor::load(back, p1);
  EXPECT_EQ(back.dtype(), kQInt8);
  EXPECT_EQ(back.qscheme(), kPerTensorAffine);
  EXPECT_EQ(back.q_scale(), 0.1);
  EXPECT_EQ(back.q_zero_point(), -7);
  EXPECT_EQ(ints(back), ints(pt));

  // Several dtypes and schemes, a non-contiguous view, and a plain tensor beside them.
  Tensor u8 = quantize_per_tensor(sample(), 0.05, 200, kQUInt8);
  Tensor i32 = quantize_per_tensor(sample(), 1e-3, -100000, kQInt32);
  Tensor pc = per_channel_axis1().t();  // axis 0 after the transpose, not contiguous
  std::vector<Tensor> all = {u8, i32, pc, sample()};
  const std::string p2 = temp_path("q_many.safetensors");
  tensor::save(all, p2);
  std::vector<Tensor> got;
  tensor::load(got, p2);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].dtype(), kQUInt8);
  EXPECT_EQ(got[0].q_zero_point(), 200);
  EXPECT_EQ(ints(got[0]), ints(u8));
  EXPECT_EQ(got[1].dtype(), kQInt32);
  EXPECT_EQ(got[1].q_scale(), 1e-3);
  EXPECT_EQ(ints(got[1]), ints(i32));
  EXPECT_EQ(got[2].qscheme(), kPerChannelAffine);
  EXPECT_EQ(got[2].q_per_channel_axis(), 0);
  EXPECT_EQ(got[2].sizes(), pc.sizes());
  EXPECT_EQ(values<double>(got[2].q_per_channel_scales()), (std::vector<double>{0.5, 0.25, 1.0}));
  EXPECT_EQ(ints(got[2]), ints(pc));
  EXPECT_TRUE(got[3].equal(sample()));
}

TEST(QuantizedIO, SafetensorsLayoutIsPlainTensorsAndMetadata) {
  const std::string p = temp_path("q_layout.safetensors");
  io::save({{"w", per_channel_axis1()}, {"b", quantize_per_tensor(sample(), 0.5, 3, kQUInt8)}}, p, {{"epoch", "2"}});
  // The header, read as bytes: integers in I8/U8, parameters as F64/I64 siblings.
  std::ifstream f(p, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  f.read(header.data(), static_cast<std::streamsize>(n));
  EXPECT_NE(header.find("\"w\":{\"dtype\":\"I8\",\"shape\":[2,3]"), std::string::npos) << header;
  EXPECT_NE(header.find("\"w.q_scale\":{\"dtype\":\"F64\",\"shape\":[3]"), std::string::npos) << header;
  EXPECT_NE(header.find("\"w.q_zero_point\":{\"dtype\":\"I64\",\"shape\":[3]"), std::string::npos) << header;
  EXPECT_NE(header.find("\"b\":{\"dtype\":\"U8\",\"shape\":[2,3]"), std::string::npos) << header;
  EXPECT_NE(header.find("\"b.q_scale\":{\"dtype\":\"F64\",\"shape\":[]"), std::string::npos) << header;
  io::Metadata raw = io::load_metadata(p);
  EXPECT_EQ(raw["libtensor.quantized.w"], "per_channel_affine axis=1");
  EXPECT_EQ(raw["libtensor.quantized.b"], "per_tensor_affine");

  // io::load puts them back together and hides the bookkeeping.
  io::Metadata meta;
  io::NamedTensors back = io::load(p, &meta);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].first, "b");
  EXPECT_EQ(back[1].first, "w");
  EXPECT_EQ(meta, (io::Metadata{{"epoch", "2"}}));
  EXPECT_EQ(back[0].second.q_zero_point(), 3);
  EXPECT_EQ(back[1].second.q_per_channel_axis(), 1);
  EXPECT_EQ(ints(back[1].second), ints(per_channel_axis1()));

  // In place: a quantized target takes the file's integers and parameters.
  Tensor target = quantize_per_tensor(f32({0, 0, 0, 0, 0, 0}, {2, 3}), 1.0, 0, kQUInt8);
  io::load(io::NamedTensors{{"b", target}}, p, /*strict=*/false);
  EXPECT_EQ(target.q_scale(), 0.5);
  EXPECT_EQ(target.q_zero_point(), 3);
  EXPECT_EQ(ints(target), ints(back[0].second));
}

TEST(QuantizedIO, Errors) {
  Tensor q = quantize_per_tensor(sample(), 0.5, 0, kQInt8);
  const std::string p = temp_path("q_bad.safetensors");
  expect_error([&] { io::save({{"w", q}, {"w.q_scale", sample()}}, p); }, {"'w' is quantized", "'w.q_scale'"});
  expect_error([&] { io::save({{"w", sample()}}, p, {{"libtensor.quantized.w", "per_tensor_affine"}}); },
               {"metadata key 'libtensor.quantized.w' is reserved"});
  // Files (written by hand) whose metadata names a quantized tensor its siblings do not match.
  auto write = [&](const std::string& header, const std::string& data) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    const uint64_t n = header.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << header << data;
  };
  write(R"({"__metadata__":{"libtensor.quantized.w":"per_tensor_affine"},"w":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})",
        std::string("\x01\x02", 2));
  expect_error([&] { io::load(p); }, {"not a valid safetensors file", "no tensor 'w.q_scale'"});
  write(R"({"__metadata__":{"libtensor.quantized.w":"per_tensor_affine"},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
        R"("w.q_scale":{"dtype":"F64","shape":[],"data_offsets":[4,12]},"w.q_zero_point":{"dtype":"I64","shape":[],"data_offsets":[12,20]}})",
        std::string(20, '\0'));
  expect_error([&] { io::load(p); }, {"quantized tensor 'w'", "expected an int8, uint8 or int32 tensor"});
}
