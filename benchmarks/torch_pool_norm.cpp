// libtorch twins of benchmarks/bench_pool_norm.cpp: same shapes, same threads, same harness.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {
TwinTable pool_norm_twins() {
  TwinTable t;
  t["max_pool2d_2x2_64x32x28"] = [] {
    auto x = torch::randn({64, 32, 28, 28});
    return median_seconds([&] { auto y = torch::max_pool2d(x, {2}); }, 15, 5);
  };
  t["max_pool2d_fb_64x32x28"] = [] {
    auto x = torch::randn({64, 32, 28, 28}).requires_grad_(true);
    auto g = torch::randn({64, 32, 14, 14});
    return median_seconds([&] { torch::max_pool2d(x, {2}).backward(g); }, 15, 3);
  };
  t["avg_pool2d_3s2p1_8x64x56"] = [] {
    auto x = torch::randn({8, 64, 56, 56});
    return median_seconds([&] { auto y = torch::avg_pool2d(x, {3}, {2}, {1}); }, 15, 5);
  };
  t["adaptive_pool_7to1_64x512"] = [] {
    auto x = torch::randn({64, 512, 7, 7});
    return median_seconds([&] { auto y = torch::adaptive_avg_pool2d(x, {1, 1}); }, 15, 10);
  };
  t["adaptive_pool_16to4_32x256"] = [] {
    auto x = torch::randn({32, 256, 16, 16});
    return median_seconds([&] { auto y = torch::adaptive_avg_pool2d(x, {4, 4}); }, 15, 10);
  };
  t["batch_norm_train_fb_8x64x56"] = [] {
    auto x = torch::randn({8, 64, 56, 56}).requires_grad_(true);
    auto g = torch::randn({8, 64, 56, 56});
    auto w = torch::ones({64}).requires_grad_(true), b = torch::zeros({64}).requires_grad_(true);
    auto rm = torch::zeros({64}), rv = torch::ones({64});
    return median_seconds([&] { torch::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5, false).backward(g); });
  };
  t["batch_norm_eval_8x64x56"] = [] {
    auto x = torch::randn({8, 64, 56, 56});
    auto w = torch::ones({64}), b = torch::zeros({64}), rm = torch::zeros({64}), rv = torch::ones({64});
    return median_seconds([&] { auto y = torch::batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5, false); }, 15, 3);
  };
  t["layer_norm_fb_1024x256"] = [] {
    auto x = torch::randn({8 * 128, 256}).requires_grad_(true);
    auto g = torch::randn({8 * 128, 256});
    auto w = torch::ones({256}).requires_grad_(true), b = torch::zeros({256}).requires_grad_(true);
    return median_seconds([&] { torch::layer_norm(x, {256}, w, b).backward(g); }, 15, 5);
  };
  t["group_norm_fb_8x64x56_g32"] = [] {
    auto x = torch::randn({8, 64, 56, 56}).requires_grad_(true);
    auto g = torch::randn({8, 64, 56, 56});
    auto w = torch::ones({64}).requires_grad_(true), b = torch::zeros({64}).requires_grad_(true);
    return median_seconds([&] { torch::group_norm(x, 32, w, b).backward(g); });
  };
  t["max_pool3d_2x2x2_8x32x16x32"] = [] {
    auto x = torch::randn({8, 32, 16, 32, 32});
    return median_seconds([&] { auto y = torch::max_pool3d(x, {2}); }, 15, 3);
  };
  t["max_pool3d_fb_8x32x16x32"] = [] {
    auto x = torch::randn({8, 32, 16, 32, 32}).requires_grad_(true);
    auto g = torch::randn({8, 32, 8, 16, 16});
    return median_seconds([&] { torch::max_pool3d(x, {2}).backward(g); }, 15, 3);
  };
  t["avg_pool3d_3s2p1_8x32x16x32"] = [] {
    auto x = torch::randn({8, 32, 16, 32, 32});
    return median_seconds([&] { auto y = torch::avg_pool3d(x, {3}, {2}, {1}); }, 15, 3);
  };
  t["adaptive_avg_pool3d_to4_8x32x16x32"] = [] {
    auto x = torch::randn({8, 32, 16, 32, 32});
    return median_seconds([&] { auto y = torch::adaptive_avg_pool3d(x, {4, 4, 4}); }, 15, 3);
  };
  return t;
}
const AddTwins kPoolNormTwins(pool_norm_twins());
}  // namespace
}  // namespace bench
