// The vectorized quantize, dequantize and quantized add/mul loops (Note [Vectorized quantize
// loops] in kernels/cpu/QuantizeKernels.cpp) against the scalar definitions written out here:
// bit for bit on random values and on the edges (ties, NaN, infinities, saturation, zero points
// at the ends of the range), lengths with vector tails, tensors large enough for the threaded
// chunks, non-contiguous and channels-last inputs, per-channel rows.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <tensor/nn/quantized.h>
#include <tensor/tensor.h>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace tensor;

namespace {

int64_t qlo(ScalarType t) { return t == kQInt8 ? -128 : 0; }
int64_t qhi(ScalarType t) { return t == kQInt8 ? 127 : 255; }

// The definition (docs/quantization.md): nearbyint(x * float32(1 / scale)) + zp, clamped, NaN -> lowest.
int64_t quantize_ref(float x, double scale, int64_t zp, ScalarType t) {
  const float inv = 1.0f / static_cast<float>(scale);
  const double r = static_cast<double>(std::nearbyint(x * inv)) + static_cast<double>(zp);
  if (!(r >= static_cast<double>(qlo(t)))) return qlo(t);
  if (r > static_cast<double>(qhi(t))) return qhi(t);
  return static_cast<int64_t>(r);
}
// (q - zp) * scale in float64, rounded once to float32.
float dequantize_ref(int64_t q, double scale, int64_t zp) {
  return static_cast<float>((static_cast<double>(q) - static_cast<double>(zp)) * scale);
}

std::vector<float> floats(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}
std::vector<int64_t> ints(const Tensor& q) {
  Tensor c = q.int_repr().to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Random values of several magnitudes, then the edges: exact ties of a power-of-two scale
// (k + 0.5) * 2^-4, NaN, +-inf, -0, huge values, denormals, values just past the range.
Tensor edge_input(int64_t n) {
  tensor::manual_seed(21);
  std::vector<float> v = floats(cat({randn({n / 2}) * 3.0, randn({n - n / 2}) * 300.0}));
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> edges{std::nanf(""), inf,       -inf,  -0.0f,  0.0f,  3e38f, -3e38f,      1e-40f,
                                 -1e-40f,       0.5f,      1.5f,  2.5f,   -0.5f, -1.5f, -2.5f,       7.96875f,
                                 8.03125f,      -8.03125f, 16.0f, -16.0f, 1e9f,  -1e9f, 16777217.0f, -16777216.0f};
  for (size_t i = 0; i < edges.size(); ++i) v[i * 37 % v.size()] = edges[i];
  for (int64_t k = -300; k < 300; ++k) v[(1000 + k * 7) % v.size()] = (static_cast<float>(k) + 0.5f) * 0.0625f;
  return tensor::tensor(v).to(kFloat32);
}

}  // namespace

TEST(QuantizeVectorized, PerTensorBitExactOnRandomAndEdgeValues) {
  // 200003: several threaded chunks of 65536 and a tail shorter than any vector.
  const Tensor x = edge_input(200003);
  const std::vector<float> xv = floats(x);
  struct P {
    double scale;
    int64_t zp;
  };
  for (ScalarType t : {kQUInt8, kQInt8}) {
    for (P p : {P{0.0625, qlo(t)}, P{0.0625, qhi(t)}, P{0.1, 0}, P{1.0 / 3.0, t == kQInt8 ? -5 : 128},
                P{1e-3, t == kQInt8 ? 127 : 0}, P{1000.0, t == kQInt8 ? -128 : 255}, P{0.02, 17}}) {
      const Tensor q = quantize_per_tensor(x, p.scale, p.zp, t);
      const std::vector<int64_t> got = ints(q);
      int64_t bad = 0, lows = 0, highs = 0;
      for (size_t i = 0; i < xv.size(); ++i) {
        const int64_t want = quantize_ref(xv[i], p.scale, p.zp, t);
        bad += got[i] != want;
        lows += want == qlo(t);
        highs += want == qhi(t);
      }
      EXPECT_EQ(bad, 0) << t << " scale " << p.scale << " zp " << p.zp;
      EXPECT_GT(lows, 0);  // NaN and -inf at least: the clamps ran
      EXPECT_GT(highs, 0);
    }
  }
  // Hand-checked ties with scale 1/16: 7.96875 = 127.5 steps -> 128 (even), 8.03125 = 128.5 -> 128.
  const Tensor ties = quantize_per_tensor(tensor::tensor(std::vector<float>{7.96875f, 8.03125f, -8.03125f, 2.5f / 16}),
                                          0.0625, 0, kQInt8);
  EXPECT_EQ(ints(ties), (std::vector<int64_t>{127, 127, -128, 2}));
  const Tensor ties_u = quantize_per_tensor(
      tensor::tensor(std::vector<float>{7.96875f, 8.03125f, 0.5f / 16, 1.5f / 16}), 0.0625, 0, kQUInt8);
  EXPECT_EQ(ints(ties_u), (std::vector<int64_t>{128, 128, 0, 2}));
}

TEST(QuantizeVectorized, DequantizeBitExactAgainstTheFloat64Definition) {
  tensor::manual_seed(22);
  for (ScalarType t : {kQUInt8, kQInt8}) {
    // Every integer, many times over, in a length with a tail; large enough for threads.
    std::vector<int64_t> raw;
    for (int64_t i = 0; i < 200003; ++i) raw.push_back(qlo(t) + (i * 97) % 256);
    const Tensor ints_t = tensor::tensor(raw).to(t == kQInt8 ? kInt8 : kUInt8);
    for (double scale : {0.1, 1.0 / 3.0, 0.0123456789, 1e-7, 12345.678}) {
      for (int64_t zp : {qlo(t), qhi(t), t == kQInt8 ? int64_t{3} : int64_t{128}}) {
        const Tensor q = _make_per_tensor_quantized_tensor(ints_t, scale, zp);
        const std::vector<float> got = floats(q.dequantize());
        int64_t bad = 0;
        for (size_t i = 0; i < raw.size(); ++i) bad += !same_bits(got[i], dequantize_ref(raw[i], scale, zp));
        EXPECT_EQ(bad, 0) << t << " scale " << scale << " zp " << zp;
      }
    }
  }
  // The float64 step matters: float32 arithmetic gives other bits for some integers at scale 0.1.
  int64_t differ = 0;
  for (int64_t k = -255; k <= 255; ++k) differ += !same_bits(static_cast<float>(k) * 0.1f, dequantize_ref(k, 0.1, 0));
  EXPECT_GT(differ, 0);
}

TEST(QuantizeVectorized, NonContiguousAndPerChannelInputs) {
  tensor::manual_seed(23);
  // A transposed and a strided input: the same integers as the reference, element by element.
  const Tensor base = randn({300, 257}) * 2.0;
  for (const Tensor& x : {base.t(), base.slice(1, 0, 257, 3)}) {
    const Tensor q = quantize_per_tensor(x, 0.05, 3, kQInt8);
    const std::vector<float> xv = floats(x);
    const std::vector<int64_t> got = ints(q);
    int64_t bad = 0;
    for (size_t i = 0; i < xv.size(); ++i) bad += got[i] != quantize_ref(xv[i], 0.05, 3, kQInt8);
    EXPECT_EQ(bad, 0);
    const Tensor back = q.dequantize();
    const std::vector<float> bv = floats(back);
    bad = 0;
    for (size_t i = 0; i < bv.size(); ++i) bad += !same_bits(bv[i], dequantize_ref(got[i], 0.05, 3));
    EXPECT_EQ(bad, 0);
  }
  // Per channel along dim 0 (rows of 257: the vector path), dim 1 and the last dim (short rows).
  const Tensor x = randn({6, 5, 257}) * 2.0;
  const std::vector<float> xv = floats(x);
  for (int64_t axis : {0, 1, 2}) {
    const int64_t C = x.size(axis);
    const Tensor scales = rand({C}, TensorOptions().dtype(kFloat64)) * 0.1 + 0.01;
    std::vector<int64_t> zv;
    for (int64_t c = 0; c < C; ++c) zv.push_back(c * 37 % 256);
    const Tensor zps = tensor::tensor(zv);
    const Tensor q = quantize_per_channel(x, scales, zps, axis, kQUInt8);
    const std::vector<int64_t> got = ints(q);
    const std::vector<float> back = floats(q.dequantize());
    int64_t bad = 0, bad_back = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t idx[3] = {i / (5 * 257), (i / 257) % 5, i % 257};
      const int64_t c = idx[axis];
      const double s = scales[c].item<double>();
      const int64_t z = zps[c].item<int64_t>();
      bad += got[i] != quantize_ref(xv[i], s, z, kQUInt8);
      bad_back += !same_bits(back[i], dequantize_ref(got[i], s, z));
    }
    EXPECT_EQ(bad, 0) << "axis " << axis;
    EXPECT_EQ(bad_back, 0) << "axis " << axis;
  }
}

TEST(QuantizedAddMulVectorized, ExactOnLargeAndChannelsLastInputs) {
  tensor::manual_seed(24);
  auto rand_q = [](std::vector<int64_t> shape, double s, int64_t z, ScalarType t) {
    const Tensor ints_t = randint(qlo(t), qhi(t) + 1, shape, TensorOptions().dtype(kInt64));
    return _make_per_tensor_quantized_tensor(ints_t.to(t == kQInt8 ? kInt8 : kUInt8), s, z);
  };
  auto reference = [](const Tensor& a, const Tensor& b, double s, int64_t z, bool mul, bool relu, ScalarType t) {
    const std::vector<int64_t> ai = ints(a), bi = ints(b);
    std::vector<int64_t> want;
    for (size_t i = 0; i < ai.size(); ++i) {
      const double ra = static_cast<double>(ai[i] - a.q_zero_point()) * a.q_scale();
      const double rb = static_cast<double>(bi[i] - b.q_zero_point()) * b.q_scale();
      double v = (mul ? ra * rb : ra + rb) / s;
      double r = std::nearbyint(v) + static_cast<double>(z);
      r = std::min(std::max(r, static_cast<double>(qlo(t))), static_cast<double>(qhi(t)));
      if (relu) r = std::max(r, static_cast<double>(z));
      want.push_back(static_cast<int64_t>(r));
    }
    return want;
  };
  for (ScalarType t : {kQUInt8, kQInt8}) {
    // [2, 3, 101, 113]: 68478 elements, two chunks and a tail; channels-last copies of both.
    const Tensor a = rand_q({2, 3, 101, 113}, 0.037, t == kQInt8 ? -128 : 255, t);
    const Tensor b = rand_q({2, 3, 101, 113}, 0.11, t == kQInt8 ? 127 : 0, t);
    const Tensor a_cl = a.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    const Tensor b_cl = b.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    ASSERT_EQ(ints(a_cl), ints(a));
    for (int op = 0; op < 4; ++op) {
      const bool mul = op >= 2, relu = op % 2 == 1;
      const double s = mul ? 0.09 : 0.021;  // small enough to saturate
      const int64_t z = t == kQUInt8 ? 20 : -7;
      auto run = [&](const Tensor& x, const Tensor& y) {
        return mul ? (relu ? quantized::mul_relu(x, y, s, z) : quantized::mul(x, y, s, z))
                   : (relu ? quantized::add_relu(x, y, s, z) : quantized::add(x, y, s, z));
      };
      const std::vector<int64_t> want = reference(a, b, s, z, mul, relu, t);
      const Tensor y = run(a, b);
      EXPECT_EQ(ints(y), want) << t << " op " << op;
      EXPECT_TRUE(y.is_contiguous());
      // Both channels-last: walked in memory order, the output channels-last too, the same values.
      const Tensor y_cl = run(a_cl, b_cl);
      EXPECT_EQ(ints(y_cl), want) << t << " op " << op << " channels-last";
      EXPECT_EQ(y_cl.strides(), a_cl.strides());
      EXPECT_EQ(y_cl.q_scale(), s);
      // Mixed layouts: copied to contiguous first.
      EXPECT_EQ(ints(run(a_cl, b)), want) << t << " op " << op << " mixed";
    }
  }
}

// Every Highway target this machine runs gives the same bits: the dispatch is forced to each in
// turn (Highway's test hook; libhwy is shared, so it reaches libtensor's dispatch tables). The
// library has AVX-512, AVX2 and the baseline, whose plain loops SSSE3/SSE4 fall back to
// (CMakeLists.txt disables those targets).
TEST(QuantizeVectorized, EveryHighwayTargetGivesTheSameBits) {
  const Tensor x = edge_input(5003);
  const std::vector<float> xv = floats(x);
  std::vector<int64_t> raw;
  for (int64_t i = 0; i < 1031; ++i) raw.push_back(i % 256);
  const Tensor qu = _make_per_tensor_quantized_tensor(tensor::tensor(raw).to(kUInt8), 1.0 / 3.0, 101);
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  EXPECT_GE(targets.size(), 2u);
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    const char* name = hwy::TargetName(target);
    for (ScalarType t : {kQUInt8, kQInt8}) {
      const std::vector<int64_t> got = ints(quantize_per_tensor(x, 0.0625, qhi(t), t));
      int64_t bad = 0;
      for (size_t i = 0; i < xv.size(); ++i) bad += got[i] != quantize_ref(xv[i], 0.0625, qhi(t), t);
      EXPECT_EQ(bad, 0) << name << " " << t;
    }
    const std::vector<float> back = floats(qu.dequantize());
    int64_t bad = 0;
    for (size_t i = 0; i < raw.size(); ++i) bad += !same_bits(back[i], dequantize_ref(raw[i], 1.0 / 3.0, 101));
    EXPECT_EQ(bad, 0) << name;
    const Tensor qb = _make_per_tensor_quantized_tensor(tensor::tensor(raw).to(kUInt8).flip({0}), 0.11, 0);
    const std::vector<int64_t> ai = raw, bi = ints(qb);
    for (bool mul : {false, true}) {
      const double s = mul ? 0.09 : 0.021;
      const std::vector<int64_t> got = ints(mul ? quantized::mul(qu, qb, s, 20) : quantized::add_relu(qu, qb, s, 20));
      bad = 0;
      for (size_t i = 0; i < ai.size(); ++i) {
        const double ra = static_cast<double>(ai[i] - 101) * (1.0 / 3.0), rb = static_cast<double>(bi[i]) * 0.11;
        double r = std::nearbyint((mul ? ra * rb : ra + rb) / s) + 20.0;
        r = std::min(std::max(r, mul ? 0.0 : 20.0), 255.0);
        bad += got[i] != static_cast<int64_t>(r);
      }
      EXPECT_EQ(bad, 0) << name << (mul ? " mul" : " add_relu");
    }
  }
  hwy::SetSupportedTargetsForTest(0);  // back to what the CPU supports
}
