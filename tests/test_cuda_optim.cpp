// CUDA's fused optimizer steps and GradScaler ops against the CPU: every flag combination of
// _fused_sgd_ / _fused_adam_ in float32, float64, float16 and bfloat16 (the half types against
// the CPU step in float32, since CUDA computes them in float), a non-contiguous parameter (the
// tensor-op form), and unscale / update_scale with and without infinities. Skips without a device.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <limits>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;

namespace {

const Device kGpu(kCUDA, 0);

double rtol_of(ScalarType t) {
  switch (t) {
    case kFloat64: return 1e-12;
    case kFloat32: return 1e-5;
    case kFloat16: return 2e-3;
    default: return 1.6e-2;
  }
}

// The CPU reference works in float32 for the half types (CUDA's compute type for them).
ScalarType cpu_type(ScalarType t) { return t == kFloat16 || t == kBFloat16 ? kFloat32 : t; }

void expect_close(const Tensor& gpu, const Tensor& cpu, ScalarType t, const std::string& what) {
  ASSERT_TRUE(gpu.is_cuda()) << what;
  const double r = rtol_of(t);
  EXPECT_TRUE(allclose(gpu.cpu().to(kFloat64), cpu.to(t).to(kFloat64), r, r)) << what;
}

}  // namespace

TEST(CudaOptim, FusedSgdMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (int flags = 0; flags < 16; ++flags) {
      const bool maximize = flags & 1, decay = flags & 2, nesterov = flags & 4, first = flags & 8;
      manual_seed(flags);
      std::vector<Tensor> cpu = {randn({37, 5}).to(t), randn({37, 5}).to(t), randn({37, 5}).to(t)};
      std::vector<Tensor> gpu, ref;
      for (const Tensor& x : cpu) {
        gpu.push_back(x.to(kGpu));
        ref.push_back(x.to(cpu_type(t)));
      }
      // One step for the half types: CUDA rounds their state to half after each step, the float32
      // reference does not, and the difference would compound.
      const int steps = cpu_type(t) == t ? 3 : 1;
      for (int step = 0; step < steps; ++step) {
        const bool first_step = first && step == 0;
        _fused_sgd_(ref[0], ref[1], ref[2], 0.1, 0.9, 0.1, decay ? 0.01 : 0.0, nesterov, maximize, first_step);
        _fused_sgd_(gpu[0], gpu[1], gpu[2], 0.1, 0.9, 0.1, decay ? 0.01 : 0.0, nesterov, maximize, first_step);
      }
      const std::string what = std::string(to_string(t)) + " flags " + std::to_string(flags);
      expect_close(gpu[0], ref[0], t, what + " param");
      expect_close(gpu[2], ref[2], t, what + " momentum_buffer");
    }
}

TEST(CudaOptim, FusedAdamMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (int flags = 0; flags < 8; ++flags) {
      const bool maximize = flags & 1, decoupled = flags & 2, amsgrad = flags & 4;
      manual_seed(100 + flags);
      std::vector<Tensor> cpu = {randn({129}).to(t), randn({129}).to(t), randn({129}).mul(0.1).to(t),
                                 randn({129}).abs().mul(0.1).to(t), randn({129}).abs().mul(0.1).to(t)};
      std::vector<Tensor> gpu, ref;
      for (const Tensor& x : cpu) {
        gpu.push_back(x.to(kGpu));
        ref.push_back(x.to(cpu_type(t)));
      }
      for (auto* v : {&ref, &gpu})
        _fused_adam_((*v)[0], (*v)[1], (*v)[2], (*v)[3], (*v)[4], 1e-2, 0.9, 0.999, 1e-8, 0.05, 1e-2 / 0.271,
                     0.0447, amsgrad, maximize, decoupled);
      const std::string what = std::string(to_string(t)) + " flags " + std::to_string(flags);
      const char* names[] = {"param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
      for (int k : {0, 2, 3, 4}) expect_close(gpu[k], ref[k], t, what + " " + names[k]);
    }
}

// A transposed parameter takes the tensor-op form on CUDA; the result is the same step.
TEST(CudaOptim, NonContiguousParameterTakesTheTensorOpForm) {
  REQUIRE_CUDA();
  manual_seed(5);
  Tensor p = randn({6, 4}), g = randn({4, 6}).t(), b = randn({6, 4});
  Tensor pg = p.to(kGpu).t().contiguous().t(), gg = g.to(kGpu), bg = b.to(kGpu);
  ASSERT_FALSE(pg.is_contiguous());
  _fused_sgd_(p, g, b, 0.1, 0.9, 0.0, 0.0, false, false, false);
  _fused_sgd_(pg, gg, bg, 0.1, 0.9, 0.0, 0.0, false, false, false);
  expect_close(pg, p, kFloat32, "param");
  expect_close(bg, b, kFloat32, "momentum_buffer");
}

TEST(CudaAmp, UnscaleFindsInfinitiesAndUnscales) {
  REQUIRE_CUDA();
  for (ScalarType t : {kFloat32, kFloat16, kBFloat16, kFloat64}) {
    Tensor a = randn({1000}).to(t), b = randn({3, 7}).to(t).t();  // a strided gradient too
    Tensor a_gpu = a.to(kGpu), b_gpu = b.to(kGpu).t().contiguous().t();
    Tensor found = zeros({1}, TensorOptions(kFloat32).device(kGpu));
    Tensor inv = full({1}, 0.25, TensorOptions(kFloat32).device(kGpu));
    _amp_foreach_non_finite_check_and_unscale_({a_gpu, b_gpu}, found, inv);
    EXPECT_EQ(found.item<float>(), 0.0f) << to_string(t);
    expect_close(a_gpu, a.to(kFloat32) * 0.25, t, "unscaled a");
    expect_close(b_gpu, b.to(kFloat32) * 0.25, t, "unscaled b (strided)");
    // An infinity in the second gradient sets found_inf; NaN too.
    for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
      b_gpu.select(0, 2).select(0, 1).fill_(bad);
      found.zero_();
      _amp_foreach_non_finite_check_and_unscale_({a_gpu, b_gpu}, found, inv);
      EXPECT_EQ(found.item<float>(), 1.0f) << to_string(t);
    }
  }
}

TEST(CudaAmp, UpdateScaleFollowsTheCpuSequence) {
  REQUIRE_CUDA();
  Tensor scale = full({1}, 65536.0, TensorOptions(kFloat32)), tracker = zeros({1}, TensorOptions(kInt32));
  Tensor scale_g = scale.to(kGpu), tracker_g = tracker.to(kGpu);
  const std::vector<float> infs = {0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
  for (float f : infs) {
    Tensor found = full({1}, f, TensorOptions(kFloat32));
    _amp_update_scale_(scale, tracker, found, 2.0, 0.5, 2);
    _amp_update_scale_(scale_g, tracker_g, found.to(kGpu), 2.0, 0.5, 2);
    EXPECT_EQ(scale_g.item<float>(), scale.item<float>());
    EXPECT_EQ(tracker_g.item<int32_t>(), tracker.item<int32_t>());
  }
}
