// Max ulp error of each float32 transcendental against its float64 value, over the whole float32
// domain: every 1021st bit pattern of all 2^32 (4.2M inputs per op, a stride coprime with the
// mantissa so every exponent and low mantissa bits are covered), and with TENSOR_ULP_STRIDE=1
// all of them (the figures of docs/benchmarks.md, "Transcendental accuracy"). The ops run
// through the public API on contiguous tensors, so this measures the vector paths
// (kernels/cpu/UnaryKernels.cpp, kernels/cpu/VecMath-inl.h) and oneDNN where it serves.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>
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
      // oneDNN's logistic (Note [oneDNN eltwise]) loses results near FLT_MIN (x < -87) to 0.
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_ref, 5, 1.2e7},
      {"erf", [](const Tensor& x) { return erf(x); }, [](double v) { return std::erf(v); }, 2},
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
