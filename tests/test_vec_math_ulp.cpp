// Max ulp error of each float32 transcendental against its float64 value, over the whole float32
// domain: every 1021st bit pattern of all 2^32 (4.2M inputs per op, a stride coprime with the
// mantissa so every exponent and low mantissa bits are covered), and with TENSOR_ULP_STRIDE=1
// all of them (the figures of docs/benchmarks.md, "Transcendental accuracy"). The ops run
// through the public API on contiguous tensors, so this measures the vector paths
// (kernels/cpu/UnaryKernels.cpp, kernels/cpu/VecMath-inl.h) and oneDNN where it serves.
#include <gtest/gtest.h>
#include <hwy/targets.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace tensor;

namespace {

/// |got - want| in float32 ulps of want (subnormal ulp 2^-149 at the bottom; inf counts as
/// 2^128, the next power of two past FLT_MAX). NaN, or a want that rounds to inf in float32,
/// must match exactly.
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  // Past FLT_MAX by half an ulp or more, the float result is inf.
  if (std::isinf(static_cast<float>(want))) return got == static_cast<float>(want) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  const double g = std::isinf(got) ? std::copysign(std::ldexp(1.0, 128), got) : got;
  int e = 0;
  std::frexp(std::min(std::abs(want), double(std::numeric_limits<float>::max())), &e);
  return std::abs(g - want) / std::ldexp(1.0, std::max(e - 24, -149));
}

struct Case {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  double (*ref)(double);
  double bound;  // asserted max ulp (docs/benchmarks.md states the measured figure)
  // Asserted max ulp where the exact result is below 2^-100 (near or past float32's underflow
  // threshold, 2^-126) in magnitude; <0: `bound` holds there too.
  double subnormal_bound = -1;
};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * std::erfc(-x * M_SQRT1_2); }

struct Worst {
  double ulp = 0;
  float at = 0;
};
struct Result {
  Worst all, normal;  // normal: inputs whose exact result is 0 or at least 2^-100 in magnitude
};

/// The worst error of `c` over bit patterns start, start + stride, ... below 2^32.
Result measure(const Case& c, uint64_t stride) {
  constexpr int64_t kChunk = 1 << 22;
  Result worst;
  std::vector<float> in(kChunk);
  Tensor x = from_blob(in.data(), {kChunk});
  for (uint64_t base = 0; base < (uint64_t(1) << 32); base += uint64_t(kChunk) * stride) {
    int64_t n = 0;
    for (uint64_t u = base; n < kChunk && u < (uint64_t(1) << 32); u += stride, ++n) {
      const uint32_t bits = static_cast<uint32_t>(u);
      std::memcpy(&in[n], &bits, 4);
    }
    Tensor y = c.op(x.narrow(0, 0, n)).contiguous();
    const float* py = y.data_ptr<float>();
    // The float64 references dominate the time: split them over two threads.
    Result part[2];
    auto work = [&](int t) {
      for (int64_t i = t; i < n; i += 2) {
        const double want = c.ref(in[i]);
        const double e = ulp_error(py[i], want);
        if (e > part[t].all.ulp) part[t].all = {e, in[i]};
        if (e > part[t].normal.ulp && !(std::abs(want) < 0x1p-100 && want != 0))
          part[t].normal = {e, in[i]};
      }
    };
    std::thread th(work, 1);
    work(0);
    th.join();
    for (const Result& w : part) {
      if (w.all.ulp > worst.all.ulp) worst.all = w.all;
      if (w.normal.ulp > worst.normal.ulp) worst.normal = w.normal;
    }
  }
  return worst;
}

/// TENSOR_ULP_OPS: a comma-separated list of op names to measure (default: all).
bool selected(const char* name) {
  const char* s = std::getenv("TENSOR_ULP_OPS");
  if (s == nullptr) return true;
  const std::string list = std::string(",") + s + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}

uint64_t stride_from_env() {
  const char* s = std::getenv("TENSOR_ULP_STRIDE");
  return s ? std::max<uint64_t>(1, std::strtoull(s, nullptr, 10)) : 1021;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> cs = {
      {"exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }, 2},
      {"exp2", [](const Tensor& x) { return exp2(x); }, [](double v) { return std::exp2(v); }, 2},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](double v) { return std::expm1(v); }, 4},
      {"log", [](const Tensor& x) { return log(x); }, [](double v) { return std::log(v); }, 2},
      {"log2", [](const Tensor& x) { return log2(x); }, [](double v) { return std::log2(v); }, 3},
      {"log10", [](const Tensor& x) { return log10(x); }, [](double v) { return std::log10(v); }, 3},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double v) { return std::log1p(v); }, 3},
      {"sin", [](const Tensor& x) { return sin(x); }, [](double v) { return std::sin(v); }, 3},
      {"cos", [](const Tensor& x) { return cos(x); }, [](double v) { return std::cos(v); }, 3},
      {"tan", [](const Tensor& x) { return tan(x); }, [](double v) { return std::tan(v); }, 8},
      {"asin", [](const Tensor& x) { return asin(x); }, [](double v) { return std::asin(v); }, 3},
      {"acos", [](const Tensor& x) { return acos(x); }, [](double v) { return std::acos(v); }, 3},
      {"atan", [](const Tensor& x) { return atan(x); }, [](double v) { return std::atan(v); }, 4},
      {"sinh", [](const Tensor& x) { return sinh(x); }, [](double v) { return std::sinh(v); }, 5},
      {"cosh", [](const Tensor& x) { return cosh(x); }, [](double v) { return std::cosh(v); }, 4},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double v) { return std::tanh(v); }, 5},
      // Below -88.72 exp(-x) overflows a float and sigmoid is 0, as torch's, where the exact
      // value is a subnormal of up to 2.1e6 ulp (Note [Sigmoid and silu edges]).
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_ref, 5, 2.2e6},
      {"erf", [](const Tensor& x) { return erf(x); }, [](double v) { return std::erf(v); }, 2},
      // Below 2^-100 the results near float32's underflow threshold (x < -13.2, gelu exactly 0
      // past -13.27, Note [Vector gelu]) are subnormals of up to 2.4e6 ulp.
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_ref, 9, 2.4e6},
  };
  return cs;
}

}  // namespace

TEST(VecMathUlp, EveryTranscendentalWithinItsBound) {
  const uint64_t stride = stride_from_env();
  for (const Case& c : cases()) {
    if (!selected(c.name)) continue;
    const Result r = measure(c, stride);
    std::printf("%-8s max %.3f ulp at %a; normal results %.3f ulp at %a (stride %llu)\n", c.name, r.all.ulp,
                static_cast<double>(r.all.at), r.normal.ulp, static_cast<double>(r.normal.at),
                static_cast<unsigned long long>(stride));
    EXPECT_LE(r.normal.ulp, c.bound) << c.name << " at x = " << r.normal.at;
    EXPECT_LE(r.all.ulp, c.subnormal_bound < 0 ? c.bound : c.subnormal_bound) << c.name << " at x = " << r.all.at;
  }
}

// Hand-checked values at the ends of each erf piece (Note [Vector erf]) and its special values.
TEST(VecMathUlp, ErfPiecesAndSpecialValues) {
  const std::vector<float> xs = {0.0f, -0.0f, 1e-30f, 0.5f, 0.999999f, 1.0f, -1.0f, 2.0f, 3.9f, 4.0f, 10.0f,
                                 INFINITY, -INFINITY};
  Tensor y = erf(tensor::tensor(xs));
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_LE(ulp_error(y[static_cast<int64_t>(i)].item<float>(), std::erf(double(xs[i]))), 1.0) << xs[i];
  EXPECT_TRUE(std::signbit(y[1].item<float>()));  // erf(-0) = -0
  EXPECT_TRUE(std::isnan(erf(tensor::tensor({NAN})).item<float>()));
}

// gelu at its special values and around its cut-off (Note [Vector gelu]), through the vector
// path (a contiguous float32 tensor) and the scalar one (a strided view), which agree.
TEST(VecMathUlp, GeluSpecialValuesAndTail) {
  const std::vector<float> xs = {0.0f,  -0.0f, 1e-30f, -1e-30f, 1e-3f,  0.5f,   1.0f,   -1.0f,  2.0f,   -3.0f,
                                 5.66f, -5.66f, -8.0f, -11.0f,  -13.0f, -13.3f, -100.0f, 13.3f, 1e38f, FLT_MAX,
                                 -FLT_MAX, INFINITY, -INFINITY, NAN};
  Tensor x = tensor::tensor(xs);
  Tensor strided = tensor::zeros({static_cast<int64_t>(xs.size()), 2}).select(1, 0);
  strided.copy_(x);
  for (const Tensor& y : {gelu(x), gelu(strided)}) {
    for (size_t i = 0; i < xs.size(); ++i) {
      const float got = y[static_cast<int64_t>(i)].item<float>();
      const double want = 0.5 * double(xs[i]) * std::erfc(-double(xs[i]) * M_SQRT1_2);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << xs[i];  // NaN, and -inf * 0 at -inf (torch's value)
      } else if (xs[i] <= -13.27f) {
        // Past the vector path's cut-off (0 there); the exact value is below 2^-126.
        EXPECT_LE(std::abs(got), FLT_MIN) << xs[i];
      } else {
        EXPECT_LE(ulp_error(got, want), 8.0) << xs[i];
      }
    }
    EXPECT_TRUE(std::signbit(y[1].item<float>()));  // gelu(-0) = -0
    EXPECT_EQ(y[xs.size() - 3].item<float>(), INFINITY);
  }
  // Where 1 + erf cancels, the value keeps its digits: gelu(-8) = -4.9e-15.
  EXPECT_NEAR(gelu(tensor::tensor({-8.0f})).item<float>() / (-8.0 * 0.5 * std::erfc(8.0 * M_SQRT1_2)), 1.0, 1e-6);
}

// The two gelu paths (Note [Gelu by table]): vectors whose lanes are all below 4 in magnitude
// take the table on AVX-512, and one lane past 4 sends the whole vector down the general path.
// Values on both sides of every table interval's ends (k / 4) and random ones in (-4, 4), as
// all-small vectors and again with lane 0 of every 16 set to 5, on every Highway target here.
TEST(VecMathUlp, GeluTablePathAndGeneralPathAgree) {
  std::vector<float> xs;
  for (int k = 0; k <= 16; ++k)
    for (float sign : {1.0f, -1.0f}) {
      const float e = sign * static_cast<float>(k) / 4;
      for (float v : {std::nextafter(e, -INFINITY), e, std::nextafter(e, INFINITY)})
        if (std::abs(v) < 4) xs.push_back(v);
    }
  uint64_t s = 0x2545F4914F6CDD1Dull;
  while (xs.size() % 16 != 0 || xs.size() < 4096) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64
    xs.push_back(static_cast<float>(static_cast<double>(s >> 11) * 0x1p-53 * 8 - 4));
  }
  std::vector<float> mixed = xs;
  for (size_t i = 0; i < mixed.size(); i += 16) mixed[i] = 5.0f;
  const Tensor tx = tensor::tensor(xs), tm = tensor::tensor(mixed);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    const std::string name = hwy::TargetName(target);
    // The table needs 16 float lanes; elsewhere both inputs take the general path (8.54 ulp).
    const bool table = target == HWY_AVX3 || target == HWY_AVX3_DL;
    const Tensor gx = gelu(tx).contiguous(), gm = gelu(tm).contiguous();
    const float *px = gx.data_ptr<float>(), *pm = gm.data_ptr<float>();
    double worst_table = 0, worst_general = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      worst_table = std::max(worst_table, ulp_error(px[i], gelu_ref(xs[i])));
      worst_general = std::max(worst_general, ulp_error(pm[i], gelu_ref(mixed[i])));
    }
    std::printf("gelu, %s: all-small vectors %.3f ulp, vectors with a lane past 4 %.3f ulp\n", name.c_str(),
                worst_table, worst_general);
    EXPECT_LE(worst_table, table ? 3.5 : 9.0) << name;
    EXPECT_LE(worst_general, 9.0) << name;
    EXPECT_TRUE(std::signbit(gelu(tensor::tensor({-0.0f, 1.0f})).contiguous().data_ptr<float>()[0])) << name;
  }
  hwy::SetSupportedTargetsForTest(0);  // back to what the CPU supports
}

// ---- binary ops with vector paths (Note [Vector binary math] in kernels/cpu/BinaryKernels.cpp) ----

namespace {

/// Pairs of float32 inputs: random bit patterns over the whole domain (every exponent, NaN
/// and inf included), random pairs of moderate magnitude, and every pair of special values.
std::vector<std::pair<float, float>> binary_inputs(int64_t n_random) {
  std::vector<std::pair<float, float>> v;
  uint64_t s = 0x9E3779B97F4A7C15ull;
  auto next = [&] {  // splitmix64
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  for (int64_t i = 0; i < n_random; ++i) {
    const uint64_t r = next();
    v.emplace_back(bits(static_cast<uint32_t>(r)), bits(static_cast<uint32_t>(r >> 32)));
    // Moderate magnitudes: exponents within 2^-20..2^20, either sign.
    const uint64_t q = next();
    const float a = std::ldexp(1.0f + static_cast<float>(q & 0xFFFFFF) * 0x1p-24f, static_cast<int>((q >> 24) % 41) - 20);
    const float b = std::ldexp(1.0f + static_cast<float>((q >> 30) & 0xFFFFFF) * 0x1p-24f, static_cast<int>((q >> 54) % 41) - 20);
    v.emplace_back((q >> 62) & 1 ? -a : a, (q >> 63) & 1 ? -b : b);
  }
  const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 1.5f, -2.5f, 1e-40f, -1e-40f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX,
                      INFINITY, -INFINITY, NAN};
  for (float a : sp)
    for (float b : sp) v.emplace_back(a, b);
  return v;
}

/// The op's float32 results on the pairs, through the public API on contiguous tensors (the
/// vector path; special lanes take the scalar formula inside it).
std::vector<float> run_binary(const std::function<Tensor(const Tensor&, const Tensor&)>& op,
                              const std::vector<std::pair<float, float>>& in) {
  std::vector<float> a, b;
  for (const auto& p : in) a.push_back(p.first), b.push_back(p.second);
  Tensor y = op(tensor::tensor(a), tensor::tensor(b)).contiguous();
  const float* py = y.data_ptr<float>();
  return std::vector<float>(py, py + y.numel());
}

bool same_bits(float x, float y) { return std::memcmp(&x, &y, 4) == 0 || (std::isnan(x) && std::isnan(y)); }

}  // namespace

// atan2, hypot and logaddexp against float64 references, within stated ulp bounds (the
// figures of docs/benchmarks.md, "Transcendental accuracy").
TEST(VecMathUlp, BinaryTranscendentalsWithinTheirBounds) {
  const auto in = binary_inputs(1 << 20);
  struct BCase {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<double(double, double)> ref;
    double bound;
  };
  const std::vector<BCase> cs = {
      {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); },
       [](double y, double x) { return std::atan2(y, x); }, 4},
      {"hypot", [](const Tensor& a, const Tensor& b) { return hypot(a, b); },
       [](double x, double y) { return std::hypot(x, y); }, 1},
      // exp(b log a) in float64 lanes (Note [Vector binary math]): measured max 0.68 ulp (the
      // float64 Log's error, times a large exponent), within torch's Sleef pow bound of 1.
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double x, double y) { return std::pow(x, y); }, 1},
      // a times Highway's Log (Note [Vector binary math]); b made positive so that the vector
      // path, not the scalar fallback for b <= 0, takes most rows: measured max 1.67 ulp.
      {"xlogy", [](const Tensor& a, const Tensor& b) { return xlogy(a, abs(b)); },
       [](double x, double y) {
         y = std::fabs(y);
         if (std::isnan(y)) return y;
         return x == 0 ? 0.0 : x * std::log(y);
       },
       2},
      // Measured in ulps of max(|a|, |b|, |result|): near a zero result the sum cancels (it
      // does in the C library's float formula too), so the error is stated at the inputs' scale.
      {"logaddexp", [](const Tensor& a, const Tensor& b) { return logaddexp(a, b); },
       [](double x, double y) {
         if (std::isinf(x) && x == y) return x;
         return std::max(x, y) + std::log1p(std::exp(-std::fabs(x - y)));
       },
       4},
  };
  for (const BCase& c : cs) {
    const std::vector<float> got = run_binary(c.op, in);
    double worst = 0;
    std::pair<float, float> at{0, 0};
    for (size_t i = 0; i < in.size(); ++i) {
      const double want = c.ref(in[i].first, in[i].second);
      double e = ulp_error(got[i], want);
      if (std::string(c.name) == "logaddexp" && std::isfinite(want) && std::isfinite(got[i])) {
        const double scale = std::max({std::fabs(want), std::fabs(double(in[i].first)), std::fabs(double(in[i].second))});
        e = std::fabs(got[i] - want) / std::ldexp(1.0, std::max(std::ilogb(std::max(scale, 0x1p-126)) - 23, -149));
      }
      if (e > worst) worst = e, at = in[i];
    }
    std::printf("%-9s max %.3f ulp at (%a, %a)\n", c.name, worst, static_cast<double>(at.first),
                static_cast<double>(at.second));
    EXPECT_LE(worst, c.bound) << c.name << " at (" << at.first << ", " << at.second << ")";
  }
}

// float32 pow on a dense grid (Note [Vector pow]): a over every binade from the smallest
// subnormal to FLT_MAX (16 mantissas per binade, plus 1 +- a few ulps), y the integers in
// [-200, 200] and 2048 other values there, plus for each a the exponents that put a^y at the
// edges of overflow, of the normal range and of the subnormal range (and past them, where the
// result is inf or 0). Each pair against std::pow in float64; results that are subnormal,
// 0 or inf are held to the same bound in units of 2^-149 (ulp_error), so the rounding at
// underflow and overflow is checked too. Measured max (2026-11-28, AMD EPYC), normal results /
// below FLT_MIN: AVX-512 (Note [Vector pow]) 0.5001 / 0.5000 ulp, AVX2 (Highway's float64
// exp and log) 0.5000 / 0.5000, the baseline (glibc's powf) 0.5124 / 0.5085.
TEST(VecMathUlp, PowDenseGridWithinItsBound) {
  std::vector<float> as;
  for (int e = -149; e <= 127; ++e)
    for (int m = 0; m < 16; ++m) {
      const float a = std::ldexp(1.0f + static_cast<float>((m * 2654435761u) & 0x7FFFFF) * 0x1p-23f, e);
      if (a > 0 && std::isfinite(a)) as.push_back(a);
    }
  for (int k = -8; k <= 8; ++k) as.push_back(std::nextafter(1.0f, k < 0 ? 0.0f : 2.0f) + 0x1p-23f * static_cast<float>(k));
  as.push_back(FLT_MAX), as.push_back(FLT_MIN), as.push_back(std::numeric_limits<float>::denorm_min());
  std::vector<float> ys;
  for (int k = -200; k <= 200; ++k) ys.push_back(static_cast<float>(k));
  uint64_t st = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 2048; ++i) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    const float u = static_cast<float>(st >> 40) * 0x1p-24f;  // [0, 1)
    // Half uniform over [-200, 200], half log-uniform magnitudes 2^-20..2^7.6.
    ys.push_back(i % 2 ? 400.0f * u - 200.0f : std::copysign(std::exp2(27.6f * u - 20.0f), (st >> 20) & 1 ? 1.0f : -1.0f));
  }
  std::vector<float> a_in, y_in;
  for (float a : as)
    for (float y : ys) a_in.push_back(a), y_in.push_back(y);
  // Exponents aimed at log2(a^y) = target: overflow (128), the normal range's bottom (-126),
  // inside and at the bottom of the subnormal range (-140, -149, -150), past it (-151).
  const double aims[] = {127.9, 128.0, 128.1, -125.9, -126.0, -126.1, -140.3, -149.0, -149.5, -150.0, -151.0};
  for (float a : as) {
    const double l = std::log2(static_cast<double>(a));
    if (l == 0) continue;
    for (double tg : aims)
      for (int d = -2; d <= 2; ++d) {
        const float y = std::nextafter(static_cast<float>(tg / l), d < 0 ? -INFINITY : INFINITY);
        if (std::abs(y) > 1e6f) continue;
        a_in.push_back(a), y_in.push_back(d == 0 ? static_cast<float>(tg / l) : y);
      }
  }
  std::vector<double> want(a_in.size());
  for (size_t i = 0; i < a_in.size(); ++i) want[i] = std::pow(static_cast<double>(a_in[i]), static_cast<double>(y_in[i]));
  const Tensor ta = tensor::tensor(a_in), ty = tensor::tensor(y_in);
  // Every Highway target this machine runs (Highway's test hook, as in
  // test_quantized_vectorized.cpp): AVX-512 takes Note [Vector pow], AVX2 Highway's float64
  // exp(b log a), the baseline the C library's powf per element (glibc: not correctly rounded).
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    const std::string name = hwy::TargetName(target);
    const bool own = target == HWY_AVX3 || target == HWY_AVX3_DL;
    Tensor got = pow(ta, ty).contiguous();
    const float* pg = got.data_ptr<float>();
    double worst_normal = 0, worst_tiny = 0;
    size_t at_normal = 0, at_tiny = 0;
    int64_t n_tiny = 0, n_inf = 0, n_zero = 0;
    for (size_t i = 0; i < a_in.size(); ++i) {
      const double e = ulp_error(pg[i], want[i]);
      const float wf = static_cast<float>(want[i]);
      n_inf += std::isinf(wf), n_zero += wf == 0;
      if (std::abs(want[i]) < FLT_MIN) {
        n_tiny += wf != 0;
        if (e > worst_tiny) worst_tiny = e, at_tiny = i;
      } else if (e > worst_normal) {
        worst_normal = e, at_normal = i;
      }
    }
    std::printf("pow grid, %s: %zu pairs (%lld subnormal, %lld zero, %lld inf results): max %.4f ulp at (%a, %a), "
                "%.4f ulp (units of 2^-149) below FLT_MIN at (%a, %a)\n",
                name.c_str(), a_in.size(), static_cast<long long>(n_tiny), static_cast<long long>(n_zero),
                static_cast<long long>(n_inf), worst_normal, static_cast<double>(a_in[at_normal]),
                static_cast<double>(y_in[at_normal]), worst_tiny, static_cast<double>(a_in[at_tiny]),
                static_cast<double>(y_in[at_tiny]));
    EXPECT_GT(n_tiny, 1000);  // the grid does reach the subnormal, zero and inf results
    EXPECT_GT(n_zero, 1000);
    EXPECT_GT(n_inf, 1000);
    const double bound = own ? 0.51 : 1.0;
    EXPECT_LE(worst_normal, bound) << name << " at (" << a_in[at_normal] << ", " << y_in[at_normal] << ")";
    EXPECT_LE(worst_tiny, bound) << name << " at (" << a_in[at_tiny] << ", " << y_in[at_tiny] << ")";
    // Exact powers stay exact: 2^k, 3^5, 0.5^-3, 4^0.5, 10^7, a^0 and 1^y.
    const std::vector<float> ea = {2.0f, 2.0f, 3.0f, 0.5f, 4.0f, 7.25f, 1.0f, 1.0f, 10.0f};
    const std::vector<float> ey = {-149.0f, 127.0f, 5.0f, -3.0f, 0.5f, 0.0f, 150.0f, -1e30f, 7.0f};
    const std::vector<float> ew = {0x1p-149f, 0x1p127f, 243.0f, 8.0f, 2.0f, 1.0f, 1.0f, 1.0f, 1e7f};
    Tensor ex = pow(tensor::tensor(ea), tensor::tensor(ey));
    for (size_t i = 0; i < ea.size(); ++i)
      EXPECT_EQ(ex[static_cast<int64_t>(i)].item<float>(), ew[i]) << name << " " << ea[i] << "^" << ey[i];
  }
  hwy::SetSupportedTargetsForTest(0);  // back to what the CPU supports
}

// fmod, remainder, floor and truncating division are exact operations: the vector path must
// give the bits of the C library's fmod and trunc and of the formulas built on them (PyTorch's,
// written out here).
TEST(VecMathUlp, FmodRemainderFloorDivideAreBitExact) {
  const auto in = binary_inputs(1 << 19);
  auto py_mod = [](float a, float b) {
    float r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  };
  auto floor_div = [](float a, float b) {
    if (b == 0) return a / b;
    const float mod = std::fmod(a, b);
    float div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0f;
    if (div != 0) {
      float fl = std::floor(div);
      if (div - fl > 0.5f) fl += 1.0f;
      return fl;
    }
    return std::copysign(0.0f, a / b);
  };
  struct ECase {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<float(float, float)> ref;
  };
  const std::vector<ECase> cs = {
      {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); }, [](float a, float b) { return std::fmod(a, b); }},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, py_mod},
      {"floor_divide", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }, floor_div},
      {"trunc_divide", [](const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); },
       [](float a, float b) { return std::trunc(a / b); }},
  };
  for (const ECase& c : cs) {
    const std::vector<float> got = run_binary(c.op, in);
    int64_t bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const float want = c.ref(in[i].first, in[i].second);
      if (!same_bits(got[i], want) && bad++ < 5)
        ADD_FAILURE() << c.name << "(" << in[i].first << ", " << in[i].second << ") = " << got[i] << ", want " << want;
    }
    EXPECT_EQ(bad, 0) << c.name;
  }
  // float64 and a broadcast scalar divisor take the same vector path.
  Tensor a = tensor::tensor(std::vector<double>{7.5, -7.5, 1e300, -0.0, 5.0, 1.0}, kFloat64);
  Tensor m = fmod(a, tensor::tensor(std::vector<double>{2.0}, kFloat64));
  const std::vector<double> want = {1.5, -1.5, std::fmod(1e300, 2.0), -0.0, 1.0, 1.0};
  for (int64_t i = 0; i < 6; ++i) {
    const double g = m[i].item<double>();
    EXPECT_EQ(g, want[static_cast<size_t>(i)]) << i;
    EXPECT_EQ(std::signbit(g), std::signbit(want[static_cast<size_t>(i)])) << i;
  }
}
