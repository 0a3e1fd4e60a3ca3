// Attention cases (docs/attention.md): scaled_dot_product_attention forward + backward on
// float32 q, k, v [B=1, H=8, L, 64] at L = 512, 2048 and 8192 positions, the fused kernel
// (sdpa_kernel Flash) against the math path (sdpa_kernel Math). The math path is skipped at 8192:
// its [8, 8192, 8192] float32 score matrices are 2 GiB each and its backward keeps several alive.
// Before timing, each case prints the peak resident memory that one forward + backward adds
// (Note [Attention peak memory]).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <omp.h>
#include <tensor/tensor.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "harness.h"

namespace {

using tensor::nn::attention::SDPBackend;

// Note [Attention peak memory]
// The library has no allocator statistics, and its caching allocator keeps freed blocks
// resident, so the process's own peak says little about one call. Each case forks: the child
// reads its resident set size, runs one forward + backward, and reports getrusage's ru_maxrss
// (its peak) minus that. The child runs single-threaded (OpenMP thread pools do not survive a
// fork); the memory of one call does not depend on the thread count beyond per-thread tiles.
long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

double peak_mib(const std::function<void()>& fn) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    omp_set_num_threads(1);
    const long before = rss_kib();
    fn();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const long delta = ru.ru_maxrss - before;
    ssize_t w = write(fd[1], &delta, sizeof delta);
    (void)w;
    _exit(0);
  }
  close(fd[1]);
  long delta = -1;
  ssize_t r = read(fd[0], &delta, sizeof delta);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return r == sizeof delta ? static_cast<double>(delta) / 1024.0 : -1;
}

double sdpa_fwd_bwd(int64_t L, SDPBackend backend, int reps) {
  tensor::manual_seed(0);
  const int64_t B = 1, H = 8, D = 64;
  tensor::Tensor q = tensor::randn({B, H, L, D}).requires_grad_(true);
  tensor::Tensor k = tensor::randn({B, H, L, D}).requires_grad_(true);
  tensor::Tensor v = tensor::randn({B, H, L, D}).requires_grad_(true);
  tensor::Tensor g = tensor::randn({B, H, L, D});
  auto step = [&] {
    tensor::nn::attention::sdpa_kernel guard(backend);
    tensor::nn::functional::scaled_dot_product_attention(q, k, v).backward(g);
    q.mutable_grad() = tensor::Tensor();
    k.mutable_grad() = tensor::Tensor();
    v.mutable_grad() = tensor::Tensor();
  };
  std::printf("%-22s %14s peak +%.0f MiB (forked, one thread)\n", "", "",
              peak_mib(step));
  return bench::median_seconds(step, reps, 1, reps > 1 ? 2 : 0);
}

// One thread: a 64 x 64 x 64 float32 product through tensor::mm (oneDNN), and the fused
// forward's time per 64 x 64 tile (two such products plus the online softmax) on [1, 1, 4096,
// 64]: whether oneDNN would be faster for the kernel's tile products (docs/attention.md).
double tile_mm_onednn() {
  const int threads = tensor::get_num_threads();
  tensor::set_num_threads(1);
  tensor::Tensor a = tensor::randn({64, 64}), b = tensor::randn({64, 64});
  const double t = bench::median_seconds([&] { (void)tensor::mm(a, b); }, 15, 200);
  tensor::set_num_threads(threads);
  return t;
}
double tile_flash_forward() {
  const int threads = tensor::get_num_threads();
  tensor::set_num_threads(1);
  tensor::Tensor q = tensor::randn({1, 1, 4096, 64}), k = tensor::randn({1, 1, 4096, 64}),
                 v = tensor::randn({1, 1, 4096, 64});
  const double t =
      bench::median_seconds([&] { (void)tensor::_scaled_dot_product_flash_attention_for_cpu(q, k, v); }, 5);
  tensor::set_num_threads(threads);
  return t / (64.0 * 64.0);
}

const bench::AddCases kAttentionCases({
    {"sdpa_tile_onednn_mm", "us", 0, "one 64x64x64 f32 mm, 1 thread", tile_mm_onednn},
    {"sdpa_tile_flash_fwd", "us", 0, "per 64x64 tile: 2 products + softmax, 1 thread", tile_flash_forward},
    {"sdpa_512_flash", "ms", 0, "fwd+bwd B=1 H=8 D=64 f32", [] { return sdpa_fwd_bwd(512, SDPBackend::Flash, 7); }},
    {"sdpa_512_math", "ms", 0, "fwd+bwd B=1 H=8 D=64 f32", [] { return sdpa_fwd_bwd(512, SDPBackend::Math, 7); }},
    {"sdpa_2048_flash", "ms", 0, "fwd+bwd B=1 H=8 D=64 f32", [] { return sdpa_fwd_bwd(2048, SDPBackend::Flash, 3); }},
    {"sdpa_2048_math", "ms", 0, "fwd+bwd B=1 H=8 D=64 f32", [] { return sdpa_fwd_bwd(2048, SDPBackend::Math, 3); }},
    {"sdpa_8192_flash", "ms", 0, "fwd+bwd B=1 H=8 D=64 f32 (math skipped)",
     [] { return sdpa_fwd_bwd(8192, SDPBackend::Flash, 1); }},
});

}  // namespace
