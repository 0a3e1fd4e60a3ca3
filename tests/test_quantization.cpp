// The quantization workflow (docs/quantization.md, "The workflow"): observers' qparams against
// hand-computed values of PyTorch's formulas, the histogram observer's L2 error against a
// numerical integral, QConfigs, stubs, forward hooks and redirects, fuse_modules against the
// unfused modules in float64, prepare and calibration, and the errors of bad input.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <tensor/quantization.h>
#include <tensor/quantized.h>
#include <tensor/tensor.h>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;
namespace q = tensor::quantization;

namespace {

Tensor f32(std::vector<float> v) { return tensor::tensor(v, kFloat32); }

template <class T>
std::vector<T> values(const Tensor& t) {
  Tensor c = t.contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

double scale_of(const std::tuple<Tensor, Tensor>& qp) { return std::get<0>(qp).item<double>(); }
int64_t zp_of(const std::tuple<Tensor, Tensor>& qp) { return std::get<1>(qp).item<int64_t>(); }

// Observes the batches {-1.5, 0.3} and {3.2, 1.0}: the running range is [-1.5, 3.2].
template <class Obs>
std::tuple<Tensor, Tensor> qparams_of_range(q::ObserverOptions o) {
  Obs obs(o);
  obs.forward(f32({-1.5f, 0.3f}));
  obs.forward(f32({3.2f, 1.0f}));
  return obs.calculate_qparams();
}

}  // namespace

// ---- MinMaxObserver: PyTorch's formulas, by hand ----

TEST(Observers, MinMaxAffineQUInt8) {
  q::MinMaxObserver obs;
  obs.forward(f32({-1.5f, 0.3f}));
  obs.forward(f32({3.2f, 1.0f}));
  EXPECT_FLOAT_EQ(obs.min_val.item<float>(), -1.5f);
  EXPECT_FLOAT_EQ(obs.max_val.item<float>(), 3.2f);
  auto qp = obs.calculate_qparams();
  // scale = (3.2 + 1.5) / 255; zero_point = 0 - round(-1.5 / scale) = round(81.38) = 81.
  EXPECT_NEAR(scale_of(qp), 4.7 / 255, 1e-8);
  EXPECT_EQ(zp_of(qp), 81);
  EXPECT_EQ(std::get<0>(qp).scalar_type(), kFloat32);
  EXPECT_EQ(std::get<1>(qp).scalar_type(), kInt64);
  EXPECT_EQ(std::get<0>(qp).sizes(), (std::vector<int64_t>{1}));
}

TEST(Observers, MinMaxAffineQInt8AndReduceRange) {
  // qint8: quant_min = -128, so zero_point = -128 + 81 = -47.
  auto qp = qparams_of_range<q::MinMaxObserver>(q::ObserverOptions().dtype(kQInt8));
  EXPECT_NEAR(scale_of(qp), 4.7 / 255, 1e-8);
  EXPECT_EQ(zp_of(qp), -47);
  // reduce_range quint8: 0..127, scale = 4.7 / 127, zero_point = round(1.5 / scale) = round(40.53) = 41.
  qp = qparams_of_range<q::MinMaxObserver>(q::ObserverOptions().reduce_range(true));
  EXPECT_NEAR(scale_of(qp), 4.7 / 127, 1e-8);
  EXPECT_EQ(zp_of(qp), 41);
  // reduce_range qint8: -64..63, zero_point = -64 + 41 = -23.
  qp = qparams_of_range<q::MinMaxObserver>(q::ObserverOptions().dtype(kQInt8).reduce_range(true));
  EXPECT_NEAR(scale_of(qp), 4.7 / 127, 1e-8);
  EXPECT_EQ(zp_of(qp), -23);
}

TEST(Observers, MinMaxSymmetric) {
  // scale = max(1.5, 3.2) / ((127 - (-128)) / 2) = 3.2 / 127.5; zero point 0 for qint8.
  auto qp = qparams_of_range<q::MinMaxObserver>(q::ObserverOptions().dtype(kQInt8).qscheme(kPerTensorSymmetric));
  EXPECT_NEAR(scale_of(qp), 3.2 / 127.5, 1e-8);
  EXPECT_EQ(zp_of(qp), 0);
  // quint8 symmetric: zero point 128.
  qp = qparams_of_range<q::MinMaxObserver>(q::ObserverOptions().qscheme(kPerTensorSymmetric));
  EXPECT_NEAR(scale_of(qp), 3.2 / 127.5, 1e-8);
  EXPECT_EQ(zp_of(qp), 128);
  // A custom quint8 range 0..127: zero point (0 + 127) // 2 = 63, scale 3.2 / 63.5.
  qp = qparams_of_range<q::MinMaxObserver>(
      q::ObserverOptions().qscheme(kPerTensorSymmetric).quant_min(0).quant_max(127));
  EXPECT_NEAR(scale_of(qp), 3.2 / 63.5, 1e-8);
  EXPECT_EQ(zp_of(qp), 63);
  // -1.5 dominates when it is larger in magnitude: [-4, 1] -> 4 / 127.5.
  q::MinMaxObserver obs(q::ObserverOptions().dtype(kQInt8).qscheme(kPerTensorSymmetric));
  obs.forward(f32({-4.0f, 1.0f}));
  EXPECT_NEAR(scale_of(obs.calculate_qparams()), 4.0 / 127.5, 1e-8);
}

TEST(Observers, MinMaxWidensToZeroAndFloorsAtEps) {
  // All positive: min widens to 0 -> scale 2 / 255, zero point 0.
  q::MinMaxObserver pos;
  pos.forward(f32({0.5f, 2.0f}));
  auto qp = pos.calculate_qparams();
  EXPECT_NEAR(scale_of(qp), 2.0 / 255, 1e-8);
  EXPECT_EQ(zp_of(qp), 0);
  // All negative: max widens to 0 -> zero point 255 (0 sits at the top of the range).
  q::MinMaxObserver neg;
  neg.forward(f32({-2.0f, -0.5f}));
  qp = neg.calculate_qparams();
  EXPECT_NEAR(scale_of(qp), 2.0 / 255, 1e-8);
  EXPECT_EQ(zp_of(qp), 255);
  // All zeros: the scale is floored at float32 epsilon.
  q::MinMaxObserver zero;
  zero.forward(zeros({3}));
  qp = zero.calculate_qparams();
  EXPECT_EQ(scale_of(qp), static_cast<double>(FLT_EPSILON));
  EXPECT_EQ(zp_of(qp), 0);
  // Nothing observed yet: PyTorch's defaults (1.0, 0).
  q::MinMaxObserver fresh;
  qp = fresh.calculate_qparams();
  EXPECT_EQ(scale_of(qp), 1.0);
  EXPECT_EQ(zp_of(qp), 0);
}

TEST(Observers, ForwardReturnsInputAndRecordsNoGraph) {
  q::MinMaxObserver obs;
  Tensor x = randn({4, 5}, kFloat64).requires_grad_(true);
  Tensor y = obs.forward(x);
  EXPECT_TRUE(y.is_same(x));
  EXPECT_FALSE(obs.min_val.requires_grad());
  Tensor xf = x.detach();
  EXPECT_FLOAT_EQ(obs.min_val.item<float>(), static_cast<float>(xf.min().item<double>()));
  EXPECT_FLOAT_EQ(obs.max_val.item<float>(), static_cast<float>(xf.max().item<double>()));
  // Empty tensors are ignored.
  obs.forward(empty({0}, kFloat32));
  EXPECT_FLOAT_EQ(obs.max_val.item<float>(), static_cast<float>(xf.max().item<double>()));
  // The statistics are buffers: state_dict saves them.
  auto sd = obs.state_dict();
  EXPECT_TRUE(sd.contains("min_val"));
  EXPECT_TRUE(sd.contains("max_val"));
  obs.reset_min_max_vals();
  EXPECT_EQ(scale_of(obs.calculate_qparams()), 1.0);
}

TEST(Observers, MovingAverageMinMax) {
  q::MovingAverageMinMaxObserver obs;
  EXPECT_DOUBLE_EQ(obs.averaging_constant(), 0.01);
  obs.forward(f32({-1.0f, 1.0f}));  // the first batch sets the range
  EXPECT_FLOAT_EQ(obs.min_val.item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(obs.max_val.item<float>(), 1.0f);
  obs.forward(f32({-3.0f, 5.0f}));  // then min += 0.01 * (-3 - (-1)), max += 0.01 * (5 - 1)
  EXPECT_NEAR(obs.min_val.item<float>(), -1.02, 1e-6);
  EXPECT_NEAR(obs.max_val.item<float>(), 1.04, 1e-6);
  auto qp = obs.calculate_qparams();
  EXPECT_NEAR(scale_of(qp), 2.06 / 255, 1e-7);
  EXPECT_EQ(zp_of(qp), 126);  // round(1.02 / (2.06 / 255)) = round(126.26)
  q::MovingAverageMinMaxObserver half(q::ObserverOptions().averaging_constant(0.5));
  half.forward(f32({0.0f, 2.0f}));
  half.forward(f32({0.0f, 4.0f}));
  EXPECT_FLOAT_EQ(half.max_val.item<float>(), 3.0f);
}

// ---- per-channel ----

TEST(Observers, PerChannelMinMax) {
  // Rows are channels (ch_axis 0).
  Tensor w = f32({-1.0f, 0.5f, 2.0f,     //
                  -0.25f, 0.1f, 0.2f,    //
                  0.3f, 0.6f, 0.9f})
                 .reshape({3, 3});
  q::PerChannelMinMaxObserver sym(q::ObserverOptions().dtype(kQInt8).qscheme(kPerChannelSymmetric));
  EXPECT_EQ(sym.min_val.numel(), 0);
  sym.forward(w);
  EXPECT_EQ(values<float>(sym.min_val), (std::vector<float>{-1.0f, -0.25f, 0.3f}));
  EXPECT_EQ(values<float>(sym.max_val), (std::vector<float>{2.0f, 0.2f, 0.9f}));
  auto [scales, zps] = sym.calculate_qparams();
  auto s = values<float>(scales);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_NEAR(s[0], 2.0 / 127.5, 1e-8);
  EXPECT_NEAR(s[1], 0.25 / 127.5, 1e-8);
  EXPECT_NEAR(s[2], 0.9 / 127.5, 1e-8);
  EXPECT_EQ(values<int64_t>(zps), (std::vector<int64_t>{0, 0, 0}));

  // Affine quint8 along ch_axis 1 of the transpose: the same channels.
  q::PerChannelMinMaxObserver aff(q::ObserverOptions().ch_axis(1));
  aff.forward(w.t());
  auto [s2, z2] = aff.calculate_qparams();
  auto sv = values<float>(s2);
  EXPECT_NEAR(sv[0], 3.0 / 255, 1e-8);
  EXPECT_NEAR(sv[1], 0.45 / 255, 1e-8);
  EXPECT_NEAR(sv[2], 0.9 / 255, 1e-8);  // min widened to 0
  // zero points: round(1 / (3/255)) = 85, round(0.25 / (0.45/255)) = round(141.67) = 142, 0.
  EXPECT_EQ(values<int64_t>(z2), (std::vector<int64_t>{85, 142, 0}));

  // A second batch keeps the running per-channel extremes; a negative ch_axis counts back.
  q::PerChannelMinMaxObserver last(q::ObserverOptions().ch_axis(-1));
  last.forward(w.t());
  last.forward(w.t() * 2.0);
  EXPECT_EQ(values<float>(last.max_val), (std::vector<float>{4.0f, 0.4f, 1.8f}));
  EXPECT_EQ(values<float>(last.min_val), (std::vector<float>{-2.0f, -0.5f, 0.3f}));
  EXPECT_TRUE(last.state_dict().contains("min_val"));
}

TEST(Observers, MovingAveragePerChannel) {
  q::MovingAveragePerChannelMinMaxObserver obs(q::ObserverOptions().averaging_constant(0.5));
  obs.forward(f32({0.0f, 2.0f, -1.0f, 1.0f}).reshape({2, 2}));
  obs.forward(f32({0.0f, 4.0f, -3.0f, 1.0f}).reshape({2, 2}));
  EXPECT_EQ(values<float>(obs.max_val), (std::vector<float>{3.0f, 1.0f}));
  EXPECT_EQ(values<float>(obs.min_val), (std::vector<float>{0.0f, -2.0f}));
}

TEST(Observers, Errors) {
  expect_error([] { q::MinMaxObserver(q::ObserverOptions().quant_min(5).quant_max(3)); },
               {"MinMaxObserver", "quant_min (5) must be less than quant_max (3)"});
  expect_error([] { q::MinMaxObserver(q::ObserverOptions().quant_min(1).quant_max(100)); }, {"must include 0"});
  expect_error([] { q::MinMaxObserver(q::ObserverOptions().quant_min(0)); }, {"both quant_min and quant_max"});
  expect_error([] { q::MinMaxObserver(q::ObserverOptions().dtype(kQInt8).quant_min(-200).quant_max(100)); },
               {"does not fit dtype"});
  expect_error([] { q::MinMaxObserver(q::ObserverOptions().dtype(kInt8)); }, {"dtype must be kQUInt8 or kQInt8"});
  expect_error([] { q::MinMaxObserver(q::ObserverOptions().qscheme(kPerChannelAffine)); },
               {"MinMaxObserver", "per_tensor_affine or per_tensor_symmetric"});
  expect_error([] { q::PerChannelMinMaxObserver(q::ObserverOptions().qscheme(kPerTensorAffine)); },
               {"PerChannelMinMaxObserver", "per_channel_affine or per_channel_symmetric"});
  expect_error([] { q::MinMaxObserver(q::ObserverOptions().qscheme(kPerTensorSymmetric).reduce_range(true)); },
               {"reduce_range", "symmetric", "quint8"});
  expect_error([] { q::MovingAverageMinMaxObserver(q::ObserverOptions().averaging_constant(0)); },
               {"averaging_constant"});
  expect_error([] { q::HistogramObserver(q::ObserverOptions().bins(0)); }, {"bins must be positive"});
  expect_error(
      [] {
        q::PerChannelMinMaxObserver obs(q::ObserverOptions().ch_axis(2));
        obs.forward(zeros({3, 4}));
      },
      {"PerChannelMinMaxObserver", "ch_axis 2 is out of range", "[3, 4]"});
  expect_error(
      [] {
        q::PerChannelMinMaxObserver obs;
        obs.forward(zeros({3, 4}));
        obs.forward(zeros({5, 4}));
      },
      {"5 channels", "earlier inputs had 3"});
  expect_error([] { q::MinMaxObserver().forward(zeros({2}, kInt64)); }, {"floating-point", "int64"});
  expect_error([] { q::PlaceholderObserver().calculate_qparams(); }, {"PlaceholderObserver", "per batch"});
}

// ---- HistogramObserver ----

namespace {

// The L2 error of quantizing the histogram with the range [start_bin, end_bin + 1) into 256
// levels, integrated numerically: each source bin's mass spread uniformly, each point mapped to
// the center of its (clamped) level. The independent reference for quantization_error.
double numeric_error(const q::HistogramObserver& h, int64_t start_bin, int64_t end_bin) {
  const auto hist = values<float>(h.histogram);
  const double lo = h.min_val.item<double>(), hi = h.max_val.item<double>();
  const double bw = (hi - lo) / h.bins();
  const double dw = bw * (end_bin - start_bin + 1) / 256.0;
  const int samples = 4000;
  double total = 0;
  for (int64_t i = 0; i < h.bins(); ++i) {
    if (hist[i] == 0) continue;
    double acc = 0;
    for (int k = 0; k < samples; ++k) {
      const double x = (i - start_bin) * bw + (k + 0.5) * bw / samples;  // relative to the range start
      const double level = std::min(std::max(std::floor(x / dw), 0.0), 255.0);
      const double d = x - (level + 0.5) * dw;
      acc += d * d;
    }
    total += hist[i] / bw * acc * (bw / samples);
  }
  return total;
}

}  // namespace

TEST(HistogramObserver, ErrorMatchesNumericIntegral) {
  q::HistogramObserver h(q::ObserverOptions().bins(64));
  manual_seed(3);
  h.forward(randn({5000}));
  for (auto [s, e] : std::vector<std::pair<int64_t, int64_t>>{{0, 63}, {10, 50}, {20, 21}, {31, 31}, {0, 5}}) {
    const double ref = numeric_error(h, s, e);
    EXPECT_NEAR(h.quantization_error(s, e), ref, 1e-4 * ref + 1e-12) << "bins " << s << ".." << e;
  }
}

TEST(HistogramObserver, KeepsMassAndRangeAcrossBatches) {
  q::HistogramObserver h;
  EXPECT_EQ(h.bins(), 2048);
  EXPECT_EQ(h.quant_min(), 0);
  EXPECT_EQ(h.quant_max(), 255);
  manual_seed(0);
  h.forward(rand({1000}));                // [0, 1)
  h.forward(rand({3000}) * 4.0 - 2.0);    // [-2, 2): widens the range, re-bins the first batch
  h.forward(rand({500}) * 0.5);           // inside the range: added bin by bin
  const float inf = std::numeric_limits<float>::infinity();
  h.forward(f32({inf, -inf, 0.25f}));     // infinities are ignored
  auto hist = values<float>(h.histogram);
  double mass = 0;
  for (float v : hist) mass += v;
  EXPECT_NEAR(mass, 1000 + 3000 + 500 + 1, 1e-2);
  EXPECT_GE(h.min_val.item<float>(), -2.0f);
  EXPECT_LT(h.min_val.item<float>(), -1.9f);
  EXPECT_LE(h.max_val.item<float>(), 2.0f);
  EXPECT_GT(h.max_val.item<float>(), 1.9f);
}

TEST(HistogramObserver, SearchClipsOutliers) {
  manual_seed(1);
  // 200000 values in [-1, 1] and one at 100: MinMax stretches its range to 100. The search
  // narrows by quantile steps of 1e-5 (2 values here), so its first step on the right jumps
  // over the empty bins between 1 and 100 to the data, and clipping more data costs more than
  // it saves: the range ends near 1. (With fewer than 1e5 values the outlier is above every
  // quantile step and PyTorch's search keeps it, as this one does.)
  Tensor x = cat({rand({200000}) * 2.0 - 1.0, f32({100.0f})});
  q::HistogramObserver h;
  q::MinMaxObserver mm;
  h.forward(x);
  mm.forward(x);
  auto [lo, hi] = h.non_linear_param_search();
  EXPECT_LT(hi, 1.2);
  EXPECT_GT(hi, 0.9);
  EXPECT_LT(lo, -0.9);
  EXPECT_GT(lo, -1.1);
  auto qh = h.calculate_qparams();
  EXPECT_LT(scale_of(qh), scale_of(mm.calculate_qparams()) / 10);
  // The qparams are MinMax's formula applied to the searched range.
  q::MinMaxObserver same;
  same.forward(f32({static_cast<float>(lo), static_cast<float>(hi)}));
  EXPECT_FLOAT_EQ(static_cast<float>(scale_of(qh)), static_cast<float>(scale_of(same.calculate_qparams())));
  EXPECT_EQ(zp_of(qh), zp_of(same.calculate_qparams()));
  // Clipping one more bin of the data on either side would cost more.
  const double bw = (h.max_val.item<double>() - h.min_val.item<double>()) / h.bins();
  const auto start = static_cast<int64_t>(std::lround((lo - h.min_val.item<double>()) / bw));
  const auto end = static_cast<int64_t>(std::lround((hi - h.min_val.item<double>()) / bw)) - 1;
  EXPECT_LT(h.quantization_error(start, end), h.quantization_error(start, end - 1));
  EXPECT_LT(h.quantization_error(start, end), h.quantization_error(start + 1, end));
}

TEST(HistogramObserver, UniformDataKeepsNearlyTheFullRange) {
  q::HistogramObserver h;
  h.forward(linspace(0.0, 1.0, 20001));
  auto [lo, hi] = h.non_linear_param_search();
  EXPECT_NEAR(lo, 0.0, 0.02);
  EXPECT_NEAR(hi, 1.0, 0.02);
  // Before any batch: PyTorch's defaults.
  q::HistogramObserver fresh;
  EXPECT_EQ(scale_of(fresh.calculate_qparams()), 1.0);
  EXPECT_EQ(zp_of(fresh.calculate_qparams()), 0);
  // A constant input: the histogram gets a range of its own; qparams stay finite.
  q::HistogramObserver constant;
  constant.forward(full({10}, 0.5));
  EXPECT_TRUE(std::isfinite(scale_of(constant.calculate_qparams())));
}

// ---- QConfig ----

TEST(QConfig, Defaults) {
  auto dq = q::default_qconfig();
  auto act = dq.activation();
  ASSERT_NE(dynamic_cast<q::MinMaxObserver*>(act.get()), nullptr);
  EXPECT_EQ(act->dtype(), kQUInt8);
  EXPECT_EQ(act->quant_min(), 0);
  EXPECT_EQ(act->quant_max(), 127);
  auto w = dq.weight();
  EXPECT_EQ(w->dtype(), kQInt8);
  EXPECT_EQ(w->qscheme(), kPerTensorSymmetric);

  auto x86 = q::get_default_qconfig("x86");
  auto xa = x86.activation();
  ASSERT_NE(dynamic_cast<q::HistogramObserver*>(xa.get()), nullptr);
  EXPECT_TRUE(xa->reduce_range());
  EXPECT_EQ(xa->quant_max(), 127);
  auto xw = x86.weight();
  ASSERT_NE(dynamic_cast<q::PerChannelMinMaxObserver*>(xw.get()), nullptr);
  EXPECT_EQ(xw->dtype(), kQInt8);
  EXPECT_EQ(xw->qscheme(), kPerChannelSymmetric);
  EXPECT_FALSE(q::get_default_qconfig("onednn").activation()->reduce_range());
  EXPECT_EQ(q::get_default_qconfig("qnnpack").weight()->qscheme(), kPerTensorSymmetric);

  auto pc = q::default_per_channel_qconfig();
  EXPECT_EQ(pc.weight()->qscheme(), kPerChannelSymmetric);
  EXPECT_EQ(pc.activation()->quant_max(), 127);
  auto dyn = q::default_dynamic_qconfig();
  ASSERT_NE(dynamic_cast<q::PlaceholderObserver*>(dyn.activation().get()), nullptr);
  EXPECT_EQ(dyn.weight()->qscheme(), kPerTensorSymmetric);
  // Each call makes a fresh observer.
  EXPECT_NE(dq.activation().get(), dq.activation().get());
  expect_error([] { q::get_default_qconfig("arm"); }, {"get_default_qconfig", "unknown backend 'arm'"});
  expect_error([] { q::observer_factory<q::MinMaxObserver>(q::ObserverOptions().quant_min(3).quant_max(1)); },
               {"quant_min (3) must be less than quant_max (1)"});
}

TEST(QConfig, QuantizeWeight) {
  Tensor w = f32({-1.0f, 0.5f, 2.0f, -0.25f, 0.1f, 0.2f}).reshape({2, 3});
  Tensor qw = q::quantize_weight(q::default_per_channel_qconfig(), w);
  EXPECT_EQ(qw.scalar_type(), kQInt8);
  EXPECT_EQ(qw.qscheme(), kPerChannelAffine);
  EXPECT_EQ(qw.q_per_channel_axis(), 0);
  auto s = values<double>(qw.q_per_channel_scales().to(kFloat64));
  EXPECT_NEAR(s[0], 2.0 / 127.5, 1e-7);
  EXPECT_NEAR(s[1], 0.25 / 127.5, 1e-7);
  // 2.0 / (2 / 127.5) = 127.5 -> 128 (ties to even) clamps to 127.
  EXPECT_EQ(values<int8_t>(qw.int_repr())[2], 127);
  Tensor qt = q::quantize_weight(q::default_qconfig(), w);
  EXPECT_EQ(qt.qscheme(), kPerTensorAffine);
  EXPECT_NEAR(qt.q_scale(), 2.0 / 127.5, 1e-7);
  EXPECT_EQ(qt.q_zero_point(), 0);
}

// ---- stubs ----

TEST(Stubs, IdentityAndQuantizeModules) {
  q::QuantStub qs;
  q::DeQuantStub ds;
  Tensor x = f32({-1.0f, 0.0f, 0.52f});
  EXPECT_TRUE(qs(x).is_same(x));
  EXPECT_TRUE(ds(x).is_same(x));
  q::Quantize quant(0.1, 10, kQUInt8);
  Tensor qx = quant(x);
  EXPECT_EQ(qx.scalar_type(), kQUInt8);
  // The scale is a float32 buffer, as nnq.Quantize's: 0.1 as float32.
  EXPECT_EQ(qx.q_scale(), static_cast<double>(0.1f));
  EXPECT_EQ(qx.q_zero_point(), 10);
  EXPECT_EQ(values<uint8_t>(qx.int_repr()), (std::vector<uint8_t>{0, 10, 15}));
  EXPECT_TRUE(quant->state_dict().contains("scale"));
  q::DeQuantize dq;
  EXPECT_TRUE(allclose(dq(qx), f32({-1.0f, 0.0f, 0.5f})));
  expect_error([] { q::Quantize(-1.0, 0, kQUInt8); }, {"scale"});
  expect_error([&] { dq(x); }, {"DeQuantize", "quantized tensor"});
}

// ---- forward hooks and redirects (nn::Module) ----

TEST(ForwardHooks, RunThroughHoldersSequentialAndAnyModule) {
  nn::Linear fc(3, 2);
  int calls = 0;
  uint64_t h = fc->register_forward_hook([&](nn::Module& m, const Tensor& in, const Tensor& out) {
    ++calls;
    EXPECT_EQ(&m, fc.get());
    EXPECT_EQ(in.size(-1), 3);
    return out * 2.0;
  });
  Tensor x = randn({4, 3});
  Tensor plain = fc->forward(x);  // a direct forward runs no hooks
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(allclose(fc(x), plain * 2.0));
  EXPECT_EQ(calls, 1);
  nn::Sequential seq(fc);
  EXPECT_TRUE(allclose(seq->forward(x), plain * 2.0));
  EXPECT_EQ(calls, 2);
  nn::AnyModule any(fc);
  EXPECT_TRUE(allclose(any.forward(x), plain * 2.0));
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(fc->remove_forward_hook(h));
  EXPECT_FALSE(fc->remove_forward_hook(h));
  EXPECT_FALSE(fc->intercepts_forward());
  EXPECT_TRUE(allclose(fc(x), plain));
  EXPECT_EQ(calls, 3);

  nn::ReLU relu;
  fc->redirect_forward([&](const Tensor& t) { return relu(t); });
  EXPECT_TRUE(allclose(fc(x), x.clamp_min(0.0)));
  EXPECT_TRUE(allclose(seq->forward(x), x.clamp_min(0.0)));
  fc->redirect_forward(nullptr);
  EXPECT_TRUE(allclose(fc(x), plain));
}

// ---- fuse_modules ----

namespace {

struct ConvBnReLU : nn::Module {
  explicit ConvBnReLU(bool conv_bias = true)
      : conv(register_module("conv", nn::Conv2d(nn::Conv2dOptions(3, 4, 3).padding(1).bias(conv_bias)))),
        bn(register_module("bn", nn::BatchNorm2d(4))),
        relu(register_module("relu", nn::ReLU())) {}
  Tensor forward(const Tensor& x) { return relu(bn(conv(x))); }
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
  nn::ReLU relu;
};

// Running statistics and affine parameters far from the identity, as after training.
void randomize_bn(nn::BatchNormImplBase& bn) {
  NoGradGuard g;
  const int64_t c = bn.options.num_features();
  bn.running_mean.copy_(randn({c}, bn.running_mean.scalar_type()));
  bn.running_var.copy_(rand({c}, bn.running_var.scalar_type()) + 0.5);
  bn.weight.copy_(randn({c}, bn.weight.scalar_type()));
  bn.bias.copy_(randn({c}, bn.bias.scalar_type()));
}

}  // namespace

TEST(FuseModules, ConvBnReLUMatchesUnfusedInFloat64) {
  manual_seed(7);
  for (bool conv_bias : {true, false}) {
    auto net = std::make_shared<ConvBnReLU>(conv_bias);
    net->to(kFloat64);
    randomize_bn(*net->bn);
    net->eval();
    Tensor x = randn({2, 3, 5, 5}, kFloat64);
    Tensor ref = net->forward(x);
    // The folded weights by the formula, elementwise: w' = w * g / sqrt(v + eps), b' = (b - m) * g / sqrt(v + eps) + beta.
    auto w = values<double>(net->conv->weight.detach());
    auto g = values<double>(net->bn->weight.detach()), beta = values<double>(net->bn->bias.detach());
    auto m = values<double>(net->bn->running_mean), v = values<double>(net->bn->running_var);
    std::vector<double> b = conv_bias ? values<double>(net->conv->bias.detach()) : std::vector<double>(4, 0.0);
    const double eps = net->bn->options.eps();

    q::fuse_modules(*net, {{"conv", "bn", "relu"}});
    auto mods = net->named_modules();
    auto* fused = mods["conv"]->as<nn::intrinsic::ConvReLU2dImpl>();
    ASSERT_NE(fused, nullptr);
    EXPECT_NE(mods["bn"]->as<nn::IdentityImpl>(), nullptr);
    EXPECT_NE(mods["relu"]->as<nn::IdentityImpl>(), nullptr);
    EXPECT_TRUE(mods.contains("conv.0"));
    EXPECT_TRUE(mods.contains("conv.1"));
    auto fw = values<double>(fused->conv->weight.detach());
    auto fb = values<double>(fused->conv->bias.detach());
    const size_t per = fw.size() / 4;
    for (size_t o = 0; o < 4; ++o) {
      const double k = g[o] / std::sqrt(v[o] + eps);
      for (size_t i = 0; i < per; ++i) EXPECT_NEAR(fw[o * per + i], w[o * per + i] * k, 1e-14);
      EXPECT_NEAR(fb[o], (b[o] - m[o]) * k + beta[o], 1e-14);
    }
    // The user's forward, unchanged, now runs the fused module.
    Tensor out = net->forward(x);
    EXPECT_EQ(out.scalar_type(), kFloat64);
    EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12)) << (out - ref).abs().max().item<double>();
    EXPECT_TRUE(net->state_dict().contains("conv.0.weight"));
  }
}

TEST(FuseModules, PatternsInSequential) {
  manual_seed(11);
  // conv + bn inside a Sequential: folded into a plain Conv2d.
  nn::Sequential seq(nn::Conv2d(nn::Conv2dOptions(2, 3, 3)), nn::BatchNorm2d(3), nn::Linear(4, 4));
  seq->to(kFloat64);
  randomize_bn(*seq->ptr<nn::BatchNorm2dImpl>(1));
  seq->eval();
  Tensor x = randn({2, 2, 6, 6}, kFloat64);
  Tensor ref = seq->forward(x);
  q::fuse_modules(*seq, {{"0", "1"}});
  EXPECT_NE(seq->named_children()["0"]->as<nn::Conv2dImpl>(), nullptr);
  EXPECT_TRUE(seq->named_children()["0"]->as<nn::Conv2dImpl>()->bias.defined());
  EXPECT_NE(seq->named_children()["1"]->as<nn::IdentityImpl>(), nullptr);
  EXPECT_TRUE(allclose(seq->forward(x), ref, 1e-12, 1e-12));

  // linear + relu and linear + bn1d.
  nn::Sequential mlp(nn::Linear(5, 6), nn::ReLU(), nn::Linear(6, 3), nn::BatchNorm1d(3));
  mlp->to(kFloat64);
  randomize_bn(*mlp->ptr<nn::BatchNorm1dImpl>(3));
  mlp->eval();
  Tensor y = randn({4, 5}, kFloat64);
  Tensor yref = mlp->forward(y);
  q::fuse_modules(*mlp, {{"0", "1"}, {"2", "3"}});
  EXPECT_NE(mlp->named_children()["0"]->as<nn::intrinsic::LinearReLUImpl>(), nullptr);
  EXPECT_NE(mlp->named_children()["2"]->as<nn::LinearImpl>(), nullptr);
  EXPECT_TRUE(allclose(mlp->forward(y), yref, 1e-12, 1e-12));

  // conv1d + bn1d + relu, and conv3d + relu, nested one level down.
  nn::Sequential outer;
  outer->push_back(nn::Sequential(nn::Conv1d(2, 4, 3), nn::BatchNorm1d(4), nn::ReLU()));
  outer->push_back(nn::Sequential(nn::Conv3d(1, 2, 2), nn::ReLU()));
  outer->to(kFloat64);
  randomize_bn(*outer->ptr<nn::SequentialImpl>(0)->ptr<nn::BatchNorm1dImpl>(1));
  outer->eval();
  Tensor z1 = randn({2, 2, 7}, kFloat64);
  Tensor z3 = randn({1, 1, 3, 3, 3}, kFloat64);
  Tensor r1 = outer->ptr<nn::SequentialImpl>(0)->forward(z1);
  Tensor r3 = outer->ptr<nn::SequentialImpl>(1)->forward(z3);
  q::fuse_modules(*outer, {{"0.0", "0.1", "0.2"}, {"1.0", "1.1"}});
  auto mods = outer->named_modules();
  EXPECT_NE(mods["0.0"]->as<nn::intrinsic::ConvReLU1dImpl>(), nullptr);
  EXPECT_NE(mods["1.0"]->as<nn::intrinsic::ConvReLU3dImpl>(), nullptr);
  EXPECT_TRUE(allclose(outer->ptr<nn::SequentialImpl>(0)->forward(z1), r1, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(outer->ptr<nn::SequentialImpl>(1)->forward(z3), r3, 1e-12, 1e-12));
}

TEST(FuseModules, Errors) {
  auto net = std::make_shared<ConvBnReLU>();
  net->eval();
  expect_error([&] { q::fuse_modules(*net, {{"cnv", "bn"}}); },
               {"fuse_modules", "no submodule named 'cnv'", "conv, bn, relu"});
  expect_error([&] { q::fuse_modules(*net, {{"relu", "conv"}}); },
               {"cannot fuse ['relu', 'conv']", "(ReLU, Conv2d)", "supported patterns"});
  expect_error([&] { q::fuse_modules(*net, {{"conv"}}); }, {"2 or 3 submodules"});
  expect_error([&] { q::fuse_modules(*net, {{"conv", "bn"}, {"bn", "relu"}}); }, {"'bn' appears in more than one group"});
  expect_error([&] { q::fuse_modules(*net, {{"", "bn"}}); }, {"names the module itself"});
  // A bad second group leaves the first unapplied.
  expect_error([&] { q::fuse_modules(*net, {{"conv", "bn"}, {"relu", "nope"}}); }, {"no submodule named 'nope'"});
  EXPECT_NE(net->named_modules()["conv"]->as<nn::Conv2dImpl>(), nullptr);
  EXPECT_NE(net->named_modules()["bn"]->as<nn::BatchNorm2dImpl>(), nullptr);
  // Training mode cannot fold batch norms.
  net->train();
  expect_error([&] { q::fuse_modules(*net, {{"conv", "bn"}}); }, {"eval mode"});
  // Channel counts must match.
  nn::Sequential bad(nn::Conv2d(1, 4, 3), nn::BatchNorm2d(5));
  bad->eval();
  expect_error([&] { q::fuse_modules(*bad, {{"0", "1"}}); }, {"'0' has 4 output channels", "'1' has 5 features"});
  // Mismatched dimensionality is not a pattern.
  nn::Sequential mixed(nn::Conv2d(1, 4, 3), nn::BatchNorm1d(4));
  mixed->eval();
  expect_error([&] { q::fuse_modules(*mixed, {{"0", "1"}}); }, {"cannot fuse", "(Conv2d, BatchNorm1d)"});
}

// ---- prepare and calibration ----

namespace {

struct QNet : nn::Module {
  QNet()
      : quant(register_module("quant", q::QuantStub())),
        conv(register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 2, 3).padding(1)))),
        bn(register_module("bn", nn::BatchNorm2d(2))),
        relu(register_module("relu", nn::ReLU())),
        fc(register_module("fc", nn::Linear(2 * 4 * 4, 3))),
        dequant(register_module("dequant", q::DeQuantStub())) {}
  Tensor forward(const Tensor& x) {
    Tensor h = relu(bn(conv(quant(x))));
    return dequant(fc(h.flatten(1)));
  }
  q::QuantStub quant;
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
  nn::ReLU relu;
  nn::Linear fc;
  q::DeQuantStub dequant;
};

std::vector<std::string> names_of(const std::vector<q::ObservedModule>& v) {
  std::vector<std::string> out;
  for (const auto& o : v) out.push_back(o.name);
  return out;
}

}  // namespace

TEST(Prepare, FuseThenCalibrate) {
  manual_seed(5);
  auto net = std::make_shared<QNet>();
  randomize_bn(*net->bn);
  net->eval();
  q::fuse_modules(*net, {{"conv", "bn", "relu"}});
  auto observed = q::prepare(*net, q::default_qconfig());
  EXPECT_EQ(names_of(observed), (std::vector<std::string>{"quant", "conv", "fc"}));
  EXPECT_EQ(names_of(q::observed_modules(*net)), names_of(observed));
  // The record convert reads: the module, its observer (a child) and the QConfig.
  EXPECT_NE(observed[1].module->as<nn::intrinsic::ConvReLU2dImpl>(), nullptr);
  EXPECT_EQ(observed[1].module->named_children()["activation_post_process"].get(),
            static_cast<nn::Module*>(observed[1].activation_post_process.get()));
  EXPECT_EQ(observed[2].qconfig.weight()->qscheme(), kPerTensorSymmetric);
  EXPECT_NE(observed[2].activation_post_process->qconfig(), nullptr);

  // Calibration: the observers see the stub's input and the modules' outputs.
  std::vector<Tensor> batches;
  for (int i = 0; i < 3; ++i) batches.push_back(randn({4, 1, 4, 4}) * (i + 1.0));
  double in_min = 1e9, in_max = -1e9, fc_min = 1e9, fc_max = -1e9, conv_max = -1e9;
  for (const Tensor& b : batches) {
    // The float reference of each stage, run on the fused module's pieces directly.
    auto* fused = observed[1].module->as<nn::intrinsic::ConvReLU2dImpl>();
    Tensor h = fused->forward(b);
    Tensor o = net->fc->forward(h.flatten(1));
    Tensor out = net->forward(b);
    EXPECT_TRUE(allclose(out, o));  // observers leave values unchanged
    in_min = std::min(in_min, b.min().item<double>());
    in_max = std::max(in_max, b.max().item<double>());
    fc_min = std::min(fc_min, o.min().item<double>());
    fc_max = std::max(fc_max, o.max().item<double>());
    conv_max = std::max(conv_max, h.max().item<double>());
  }
  auto state = q::get_observer_state(*net);
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[0].name, "quant");
  EXPECT_FLOAT_EQ(state[0].min_val.item<float>(), static_cast<float>(in_min));
  EXPECT_FLOAT_EQ(state[0].max_val.item<float>(), static_cast<float>(in_max));
  EXPECT_FLOAT_EQ(state[1].min_val.item<float>(), 0.0f);  // after the fused ReLU
  EXPECT_FLOAT_EQ(state[1].max_val.item<float>(), static_cast<float>(conv_max));
  EXPECT_FLOAT_EQ(state[2].min_val.item<float>(), static_cast<float>(fc_min));
  EXPECT_FLOAT_EQ(state[2].max_val.item<float>(), static_cast<float>(fc_max));
  // default_qconfig's activations: quint8 over 0..127.
  const double lo = std::min(0.0, fc_min), hi = std::max(0.0, fc_max);
  EXPECT_NEAR(state[2].scale.item<double>(), (hi - lo) / 127, 1e-6);
  EXPECT_EQ(state[2].zero_point.item<int64_t>(), static_cast<int64_t>(std::nearbyint(-lo / ((hi - lo) / 127))));
  EXPECT_EQ(state[2].dtype, kQUInt8);
  // The statistics are in the state dict under PyTorch's names.
  auto sd = net->state_dict();
  EXPECT_TRUE(sd.contains("fc.activation_post_process.min_val"));
  EXPECT_TRUE(sd.contains("quant.activation_post_process.max_val"));

  // A second prepared model loads the calibrated statistics and gives the same qparams.
  auto other = std::make_shared<QNet>();
  other->eval();
  q::fuse_modules(*other, {{"conv", "bn", "relu"}});
  q::prepare(*other, q::default_qconfig());
  std::vector<std::pair<std::string, Tensor>> items;
  for (const auto& item : sd) items.emplace_back(item.key(), item.value());
  other->load_state_dict(items);
  auto loaded = q::get_observer_state(*other);
  ASSERT_EQ(loaded.size(), state.size());
  for (size_t i = 0; i < state.size(); ++i) {
    EXPECT_EQ(loaded[i].name, state[i].name);
    EXPECT_EQ(loaded[i].scale.item<double>(), state[i].scale.item<double>());
    EXPECT_EQ(loaded[i].zero_point.item<int64_t>(), state[i].zero_point.item<int64_t>());
  }

  expect_error([&] { q::prepare(*net, q::default_qconfig()); }, {"already prepared", "remove_observers"});
  q::remove_observers(*net);
  EXPECT_TRUE(q::observed_modules(*net).empty());
  EXPECT_FALSE(net->state_dict().contains("fc.activation_post_process.min_val"));
  EXPECT_FALSE(net->fc->intercepts_forward());
}

TEST(Prepare, OverridesSequentialAndHistogram) {
  manual_seed(9);
  nn::Sequential mlp(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
  // "2" not quantized; everything else with the x86 default (histogram activations).
  auto observed = q::prepare(*mlp, q::get_default_qconfig("x86"), {{"2", std::nullopt}});
  EXPECT_EQ(names_of(observed), (std::vector<std::string>{"0", "1"}));
  ASSERT_NE(dynamic_cast<q::HistogramObserver*>(observed[0].activation_post_process.get()), nullptr);
  Tensor x = randn({64, 4});
  mlp->forward(x);
  Tensor h = mlp->ptr<nn::LinearImpl>(0)->forward(x);
  auto state = q::get_observer_state(*mlp);
  EXPECT_FLOAT_EQ(state[0].min_val.item<float>(), h.min().item<float>());
  EXPECT_FLOAT_EQ(state[0].max_val.item<float>(), h.max().item<float>());
  EXPECT_EQ(state[1].min_val.item<float>(), 0.0f);
  EXPECT_GT(state[0].scale.item<double>(), 0.0);
  EXPECT_EQ(state[0].zero_point.numel(), 1);

  // A per-submodule QConfig wins over the global one; an override must name a submodule.
  nn::Sequential two(nn::Linear(2, 2), nn::Linear(2, 2));
  auto obs2 = q::prepare(*two, q::default_qconfig(), {{"1", q::get_default_qconfig("x86")}});
  EXPECT_NE(dynamic_cast<q::MinMaxObserver*>(obs2[0].activation_post_process.get()), nullptr);
  EXPECT_NE(dynamic_cast<q::HistogramObserver*>(obs2[1].activation_post_process.get()), nullptr);
  nn::Sequential three(nn::Linear(2, 2));
  expect_error([&] { q::prepare(*three, q::default_qconfig(), {{"fc9", std::nullopt}}); },
               {"prepare", "'fc9'", "not a submodule"});
  expect_error([&] { q::prepare(*three, q::QConfig{}); }, {"no activation observer factory"});
}
