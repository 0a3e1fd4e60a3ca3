// The PyTorch (libtorch CUDA) twin of benchmarks/bench_cuda.cpp: the same case names, sizes,
// byte counts and timing (Note [GPU timing] there), so scripts/gpu_check.sh can put both
// figures side by side. Prints one tab-separated line per case:
//   <case> <seconds per call> <GB/s, or TFLOP/s for products>     or     <case> error <message>
// Usage: torch_cuda_twin [SUBSTRING...]   (only the cases whose name contains one)
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr int64_t k16M = int64_t(16) << 20;
constexpr int64_t k256M = int64_t(256) << 20;
constexpr int64_t k4K = 4096;

// `expected_seconds` only sizes the batches (about 2 ms of work), as in bench_cuda.cpp.
double gpu_seconds(const std::function<void()>& fn, double expected_seconds, int reps = 15) {
  const int inner = std::max(1, int(std::ceil(2e-3 / expected_seconds)));
  for (int i = 0; i < 3; ++i) fn();
  torch::cuda::synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) fn();
    torch::cuda::synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(t1 - t0).count() / inner);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

torch::TensorOptions on_gpu(torch::ScalarType t = torch::kFloat32) {
  return torch::TensorOptions().dtype(t).device(torch::kCUDA);
}

struct Case {
  std::string name;
  double bytes;
  std::function<std::function<void()>()> body;  // allocates the inputs, returns the timed call
  // Products (Note [GPU matmul cases] in bench_cuda.cpp): FLOPs per call and the rate assumed
  // to size the batches; 0 for the memory-bound cases, which size them at 3 TB/s.
  double flops = 0;
  double assumed_flops_per_s = 0;

  double expected_seconds() const { return flops > 0 ? flops / assumed_flops_per_s : bytes / 3e12; }
  /// The figure: TFLOP/s for products, GB/s otherwise.
  double figure(double sec) const { return flops > 0 ? flops / sec / 1e12 : bytes / sec / 1e9; }
};

Case add_case(const char* name, int64_t n, torch::ScalarType t) {
  return {name, 3.0 * c10::elementSize(t) * n, [n, t] {
            auto a = torch::rand({n}, on_gpu(t)), b = torch::rand({n}, on_gpu(t)), c = torch::empty({n}, on_gpu(t));
            return std::function<void()>([a, b, c]() mutable { torch::add_out(c, a, b); });
          }};
}
Case mul_case(const char* name, int64_t n) {
  return {name, 3.0 * 4 * n, [n] {
            auto a = torch::rand({n}, on_gpu()), b = torch::rand({n}, on_gpu());
            return std::function<void()>([a, b] { auto c = a * b; });
          }};
}
Case exp_case(const char* name, int64_t n) {
  return {name, 2.0 * 4 * n, [n] {
            auto a = torch::rand({n}, on_gpu());
            return std::function<void()>([a] { auto c = torch::exp(a); });
          }};
}

Case mm_case(const char* name, int64_t n, int64_t k, int64_t m, torch::ScalarType t) {
  Case c{name, 0, [n, k, m, t] {
           auto a = torch::rand({n, k}, on_gpu(t)), b = torch::rand({k, m}, on_gpu(t));
           return std::function<void()>([a, b] { auto r = torch::mm(a, b); });
         }};
  c.flops = 2.0 * n * k * m;
  c.assumed_flops_per_s = t == torch::kFloat32 ? 50e12 : 600e12;
  return c;
}

std::vector<Case> cases() {
  return {
      {"cuda_copy_256M", 2.0 * 4 * k256M, [] {
         auto src = torch::rand({k256M}, on_gpu()), dst = torch::empty({k256M}, on_gpu());
         return std::function<void()>([src, dst]() mutable { dst.copy_(src); });
       }},
      add_case("cuda_add_16M", k16M, torch::kFloat32),
      add_case("cuda_add_256M", k256M, torch::kFloat32),
      mul_case("cuda_mul_16M", k16M),
      mul_case("cuda_mul_256M", k256M),
      exp_case("cuda_exp_16M", k16M),
      exp_case("cuda_exp_256M", k256M),
      add_case("cuda_add_bf16_16M", k16M, torch::kBFloat16),
      add_case("cuda_add_bf16_256M", k256M, torch::kBFloat16),
      add_case("cuda_add_f16_256M", k256M, torch::kHalf),
      {"cuda_sum_256M", 4.0 * k256M, [] {
         auto a = torch::rand({k256M}, on_gpu());
         return std::function<void()>([a] { auto s = a.sum(); });
       }},
      {"cuda_sum_lastdim_4096", 4.0 * (k4K * k4K + k4K), [] {
         auto a = torch::rand({k4K, k4K}, on_gpu());
         return std::function<void()>([a] { auto s = a.sum(1); });
       }},
      {"cuda_softmax_4096", 4.0 * 2 * k4K * k4K, [] {
         auto a = torch::rand({k4K, k4K}, on_gpu());
         return std::function<void()>([a] { auto s = torch::softmax(a, 1); });
       }},
      mm_case("cuda_mm_4096", k4K, k4K, k4K, torch::kFloat32),
      mm_case("cuda_mm_bf16_4096", k4K, k4K, k4K, torch::kBFloat16),
      mm_case("cuda_mm_128x784x1024", 128, 784, 1024, torch::kFloat32),
      [] {
        Case c{"cuda_linear_128x784x1024", 0, [] {
                 auto x = torch::rand({128, 784}, on_gpu()), w = torch::rand({1024, 784}, on_gpu()),
                      b = torch::rand({1024}, on_gpu());
                 return std::function<void()>([x, w, b] { auto y = torch::linear(x, w, b); });
               }};
        c.flops = 2.0 * 128 * 784 * 1024;
        c.assumed_flops_per_s = 50e12;
        return c;
      }(),
  };
}

bool selected(const std::string& name, int argc, char** argv) {
  if (argc < 2) return true;
  for (int i = 1; i < argc; ++i)
    if (name.find(argv[i]) != std::string::npos) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::printf("# no GPU visible to libtorch\n");
    return 2;
  }
  std::printf("# torch_cuda_twin: libtorch %s, %d CUDA device(s)\n", TORCH_VERSION,
              int(torch::cuda::device_count()));
  int errors = 0;
  for (const Case& c : cases()) {
    if (!selected(c.name, argc, argv)) continue;
    try {
      const double sec = gpu_seconds(c.body(), c.expected_seconds());
      std::printf("%s\t%.9g\t%.1f\n", c.name.c_str(), sec, c.figure(sec));
    } catch (const std::exception& e) {
      std::string msg = e.what();
      std::printf("%s\terror\t%s\n", c.name.c_str(), msg.substr(0, msg.find('\n')).c_str());
      ++errors;
    }
    std::fflush(stdout);
  }
  return errors ? 3 : 0;
}
