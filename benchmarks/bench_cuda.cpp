// GPU cases (TARGETS.md "GPU"): elementwise, reductions and softmax on the CUDA device, each in
// GB/s and held against the device copy bandwidth measured in the same run (Note [GPU timing]),
// and matrix products in TFLOP/s (Note [GPU matmul cases]).
// Without a device every case is skipped ("no GPU"); an op that raises on the device reports
// its error in its row. The PyTorch figures come from benchmarks/torch_cuda_twin, run beside
// this by scripts/gpu_check.sh (docs/cuda.md "GPU benchmarks").
#include <tensor/tensor.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

#include "harness.h"

using namespace tensor;

namespace {

constexpr int64_t k16M = int64_t(16) << 20;
constexpr int64_t k256M = int64_t(256) << 20;
constexpr int64_t k4K = 4096;

// Note [GPU timing]
// Kernels run asynchronously, so each timed batch starts after a synchronize() and ends with
// one: the figure is device time plus one launch-and-sync per batch. Batches hold enough calls
// (about 2 ms of work at copy speed, or at an assumed FLOP rate for products) that the sync is a few percent at most. The PyTorch twin
// (benchmarks/torch_cuda_twin) times the same way, so the ratio compares like with like.
/// Median seconds per call of fn; `expected_seconds` (a guess of one call's time) only sizes
/// the batches.
double gpu_seconds_per_call(const std::function<void()>& fn, double expected_seconds, int reps = 15) {
  const int inner = std::max(1, int(std::ceil(2e-3 / expected_seconds)));
  for (int i = 0; i < 3; ++i) fn();
  cuda::synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) fn();
    cuda::synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(t1 - t0).count() / inner);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}
/// gpu_seconds_per_call for a memory-bound call of bytes_per_call bytes.
double gpu_seconds(const std::function<void()>& fn, double bytes_per_call) {
  constexpr double kAssumedBps = 3e12;  // H100 copy speed, only to size the batches
  return gpu_seconds_per_call(fn, bytes_per_call / kAssumedBps);
}

void require_gpu() {
  if (!cuda::is_available()) throw bench::Skipped("no GPU");
}

TensorOptions on_gpu(ScalarType t = kFloat32) { return TensorOptions().dtype(t).device(Device(kCUDA)); }

// Values do not change these kernels' speed, so where rand has no CUDA kernel yet a filled
// tensor keeps the case measurable.
Tensor input(IntArrayRef sizes, ScalarType t = kFloat32) {
  try {
    return tensor::rand(sizes, on_gpu(t));
  } catch (const Error&) {
    return tensor::empty(sizes, on_gpu(t)).fill_(0.5);
  }
}

// The limit of every case: a device-to-device copy_ of 256M floats (1 GiB each way), read +
// written bytes over time, measured once per run.
constexpr double kCopyBytes = 2.0 * 4 * k256M;
double copy_seconds() {
  static const double sec = [] {
    require_gpu();
    Tensor src = input({k256M}), dst = tensor::empty({k256M}, on_gpu());
    return gpu_seconds([&] { dst.copy_(src); }, kCopyBytes);
  }();
  return sec;
}
double device_copy_bps() { return kCopyBytes / copy_seconds(); }

using Body = std::function<std::function<void()>()>;  // allocates the inputs, returns the timed call

bench::Case gpu_case(const char* name, double bytes, const char* goal, Body body) {
  return bench::Case{name, "GB/s", bytes, goal, [bytes, body] {
                       require_gpu();
                       copy_seconds();  // the limit first, before this case's tensors take memory
                       const std::function<void()> call = body();
                       return gpu_seconds(call, bytes);
                     }}
      .with_device_bandwidth(device_copy_bps);
}

constexpr const char* kEltGoal = ">= 85% copy, <= 1.0x torch";
constexpr const char* kGoal = "<= 1.0x torch";

bench::Case add_case(const char* name, int64_t n, ScalarType t) {
  const double bytes = 3.0 * element_size(t) * n;
  return gpu_case(name, bytes, kEltGoal, [n, t] {
    Tensor a = input({n}, t), b = input({n}, t), c = tensor::empty({n}, on_gpu(t));
    return [a, b, c]() mutable { tensor::add_out(c, a, b); };
  });
}
bench::Case mul_case(const char* name, int64_t n) {
  return gpu_case(name, 3.0 * 4 * n, kEltGoal, [n] {
    Tensor a = input({n}), b = input({n});
    return [a, b] { Tensor c = a * b; };
  });
}
bench::Case exp_case(const char* name, int64_t n) {
  return gpu_case(name, 2.0 * 4 * n, kEltGoal, [n] {
    Tensor a = input({n});
    return [a] { Tensor c = tensor::exp(a); };
  });
}

// Note [GPU matmul cases]
// Matrix products are compute-bound: their figure is TFLOP/s (2 * n * k * m per call). The
// harness shows `work / seconds / 1e9` in the case's unit, so a TFLOP/s case declares its work
// in thousands of FLOPs. Their limit (the tensor cores' peak) is not measured in the run, so
// they have no share of a limit; the ratio to PyTorch (benchmarks/torch_cuda_twin, same shapes,
// same timing) is the figure that matters. float32 runs in full fp32 on both sides (libtorch's
// default allows no TF32 for matmul); bfloat16 accumulates in fp32. The batches are sized by an
// assumed H100 rate (fp32 50 TFLOP/s, bf16 600), which only sets how many calls a batch holds.
bench::Case matmul_case(const char* name, double flops, double assumed_flops_per_s,
                        std::function<std::function<void()>()> body) {
  return bench::Case{name, "TFLOP/s", flops / 1e3, kGoal, [flops, assumed_flops_per_s, body] {
                       require_gpu();
                       const std::function<void()> call = body();
                       return gpu_seconds_per_call(call, flops / assumed_flops_per_s);
                     }}
      .without_limit();
}

bench::Case mm_case(const char* name, int64_t n, int64_t k, int64_t m, ScalarType t) {
  return matmul_case(name, 2.0 * n * k * m, t == kFloat32 ? 50e12 : 600e12, [n, k, m, t] {
    Tensor a = input({n, k}, t), b = input({k, m}, t);
    return [a, b] { Tensor c = tensor::mm(a, b); };
  });
}

const bench::AddCases kCudaCases({
    bench::Case{"cuda_copy_256M", "GB/s", kCopyBytes, "device reference", [] { return copy_seconds(); }}
        .with_device_bandwidth(device_copy_bps),
    add_case("cuda_add_16M", k16M, kFloat32),
    add_case("cuda_add_256M", k256M, kFloat32),
    mul_case("cuda_mul_16M", k16M),
    mul_case("cuda_mul_256M", k256M),
    exp_case("cuda_exp_16M", k16M),
    exp_case("cuda_exp_256M", k256M),
    add_case("cuda_add_bf16_16M", k16M, kBFloat16),
    add_case("cuda_add_bf16_256M", k256M, kBFloat16),
    add_case("cuda_add_f16_256M", k256M, kFloat16),
    gpu_case("cuda_sum_256M", 4.0 * k256M, kGoal, [] {
      Tensor a = input({k256M});
      return [a] { Tensor s = a.sum(); };
    }),
    gpu_case("cuda_sum_lastdim_4096", 4.0 * (k4K * k4K + k4K), kGoal, [] {
      Tensor a = input({k4K, k4K});
      return [a] { Tensor s = a.sum({1}); };
    }),
    gpu_case("cuda_softmax_4096", 4.0 * 2 * k4K * k4K, kGoal, [] {
      Tensor a = input({k4K, k4K});
      return [a] { Tensor s = tensor::softmax(a, 1); };
    }),
    mm_case("cuda_mm_4096", k4K, k4K, k4K, kFloat32),
    mm_case("cuda_mm_bf16_4096", k4K, k4K, k4K, kBFloat16),
    mm_case("cuda_mm_128x784x1024", 128, 784, 1024, kFloat32),
    // The MLP's first layer as nn::Linear runs it: x @ w.t() + bias (the bias epilogue).
    matmul_case("cuda_linear_128x784x1024", 2.0 * 128 * 784 * 1024, 50e12, [] {
      Tensor x = input({128, 784}), w = input({1024, 784}), b = input({1024});
      return [x, w, b] { Tensor y = tensor::linear(x, w, b); };
    }),
});

}  // namespace
