// Pooling and normalization cases (Note [Benchmark registry] in harness.h); libtorch twins in
// torch_pool_norm.cpp. "fb" cases time forward + backward (input, weight and bias gradients).
// The adaptive pair measures Note [Adaptive pooling kernels]: the same 7x7 -> 1x1 mean through
// adaptive_avg_pool2d (the plain loop) and through avg_pool2d with a 7x7 kernel (oneDNN).
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

double max_pool() {
  Tensor x = randn({64, 32, 28, 28});
  return median_seconds([&] { Tensor y = max_pool2d(x, {2}); }, 15, 5);
}
double max_pool_fb() {
  Tensor x = randn({64, 32, 28, 28}).requires_grad_(true), g = randn({64, 32, 14, 14});
  return median_seconds([&] { max_pool2d(x, {2}).backward(g); }, 15, 3);
}
double avg_pool() {
  Tensor x = randn({8, 64, 56, 56});
  return median_seconds([&] { Tensor y = avg_pool2d(x, {3}, {2}, {1}); }, 15, 5);
}
double adaptive_loop() {
  Tensor x = randn({64, 512, 7, 7});
  return median_seconds([&] { Tensor y = adaptive_avg_pool2d(x, {1, 1}); }, 15, 10);
}
double adaptive_as_avg_pool() {
  Tensor x = randn({64, 512, 7, 7});
  return median_seconds([&] { Tensor y = avg_pool2d(x, {7}); }, 15, 10);
}
double adaptive_loop_4() {
  Tensor x = randn({32, 256, 16, 16});
  return median_seconds([&] { Tensor y = adaptive_avg_pool2d(x, {4, 4}); }, 15, 10);
}
double adaptive_as_avg_pool_4() {
  Tensor x = randn({32, 256, 16, 16});
  return median_seconds([&] { Tensor y = avg_pool2d(x, {4}); }, 15, 10);
}
double batch_norm_fb() {
  Tensor x = randn({8, 64, 56, 56}).requires_grad_(true), g = randn({8, 64, 56, 56});
  Tensor w = ones({64}).requires_grad_(true), b = zeros({64}).requires_grad_(true);
  Tensor rm = zeros({64}), rv = ones({64});
  return median_seconds([&] { batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5).backward(g); });
}
double batch_norm_eval() {
  Tensor x = randn({8, 64, 56, 56}), w = ones({64}), b = zeros({64}), rm = zeros({64}), rv = ones({64});
  return median_seconds([&] { Tensor y = batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5); }, 15, 3);
}
double layer_norm_fb() {
  Tensor x = randn({8 * 128, 256}).requires_grad_(true), g = randn({8 * 128, 256});
  Tensor w = ones({256}).requires_grad_(true), b = zeros({256}).requires_grad_(true);
  return median_seconds([&] { layer_norm(x, {256}, w, b).backward(g); }, 15, 5);
}
double group_norm_fb() {
  Tensor x = randn({8, 64, 56, 56}).requires_grad_(true), g = randn({8, 64, 56, 56});
  Tensor w = ones({64}).requires_grad_(true), b = zeros({64}).requires_grad_(true);
  return median_seconds([&] { group_norm(x, 32, w, b).backward(g); });
}
// 3-d pooling: max_pool3d runs the plain loop; avg_pool3d and adaptive_avg_pool3d are two 2-d
// poolings (Note [3-d pooling by composition] in src/ops/PoolNormOps.cpp).
double max_pool3d_case() {
  Tensor x = randn({8, 32, 16, 32, 32});
  return median_seconds([&] { Tensor y = max_pool3d(x, {2}); }, 15, 3);
}
double max_pool3d_fb() {
  Tensor x = randn({8, 32, 16, 32, 32}).requires_grad_(true), g = randn({8, 32, 8, 16, 16});
  return median_seconds([&] { max_pool3d(x, {2}).backward(g); }, 15, 3);
}
double avg_pool3d_case() {
  Tensor x = randn({8, 32, 16, 32, 32});
  return median_seconds([&] { Tensor y = avg_pool3d(x, {3}, {2}, {1}); }, 15, 3);
}
double adaptive_avg_pool3d_case() {
  Tensor x = randn({8, 32, 16, 32, 32});
  return median_seconds([&] { Tensor y = adaptive_avg_pool3d(x, {4, 4, 4}); }, 15, 3);
}

// Elements of the inputs above, for the cases' bytes (Note [Case work] in harness.h).
constexpr double kPool = 64.0 * 32 * 28 * 28, kNorm = 8.0 * 64 * 56 * 56, k7 = 64.0 * 512 * 7 * 7,
                 k16 = 32.0 * 256 * 16 * 16, k3d = 8.0 * 32 * 16 * 32 * 32;

const bench::AddCases kPoolNormCases({
    // Bytes of the forward-only cases: the input read once and the output written once.
    bench::Case{"max_pool2d_2x2_64x32x28", "ms", 0, ">= 1.0x", max_pool}.with_bytes(4.0 * (kPool + kPool / 4)),
    {"max_pool2d_fb_64x32x28", "ms", 0, "", max_pool_fb},
    bench::Case{"avg_pool2d_3s2p1_8x64x56", "ms", 0, "", avg_pool}.with_bytes(4.0 * (kNorm + kNorm / 4)),
    bench::Case{"adaptive_pool_7to1_64x512", "ms", 0, "loop vs oneDNN below", adaptive_loop}
        .with_bytes(4.0 * (k7 + k7 / 49)),
    bench::Case{"avg_pool_7x7_64x512 (oneDNN)", "ms", 0, "same work as above", adaptive_as_avg_pool}
        .with_bytes(4.0 * (k7 + k7 / 49)),
    bench::Case{"adaptive_pool_16to4_32x256", "ms", 0, "loop vs oneDNN below", adaptive_loop_4}
        .with_bytes(4.0 * (k16 + k16 / 16)),
    bench::Case{"avg_pool_4x4_32x256 (oneDNN)", "ms", 0, "same work as above", adaptive_as_avg_pool_4}
        .with_bytes(4.0 * (k16 + k16 / 16)),
    {"batch_norm_train_fb_8x64x56", "ms", 0, ">= 1.0x", batch_norm_fb},
    bench::Case{"batch_norm_eval_8x64x56", "ms", 0, "", batch_norm_eval}.with_bytes(4.0 * 2 * kNorm),
    {"layer_norm_fb_1024x256", "ms", 0, ">= 1.0x", layer_norm_fb},
    {"group_norm_fb_8x64x56_g32", "ms", 0, "", group_norm_fb},
    bench::Case{"max_pool3d_2x2x2_8x32x16x32", "ms", 0, "", max_pool3d_case}.with_bytes(4.0 * (k3d + k3d / 8)),
    {"max_pool3d_fb_8x32x16x32", "ms", 0, "", max_pool3d_fb},
    bench::Case{"avg_pool3d_3s2p1_8x32x16x32", "ms", 0, "", avg_pool3d_case}.with_bytes(4.0 * (k3d + k3d / 8)),
    bench::Case{"adaptive_avg_pool3d_to4_8x32x16x32", "ms", 0, "", adaptive_avg_pool3d_case}.with_bytes(4.0 * k3d),
});

}  // namespace
