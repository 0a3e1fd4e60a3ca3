// libtorch twins of benchmarks/bench_conv.cpp: same shapes, bias, threads and harness.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

torch::Tensor channels_last(const torch::Tensor& t) { return t.contiguous(torch::MemoryFormat::ChannelsLast); }

double conv_fwd(torch::ScalarType t, bool cl) {
  torch_available();
  auto x = torch::randn({8, 64, 56, 56}).to(t), w = torch::randn({64, 64, 3, 3}).to(t), b = torch::randn({64}).to(t);
  if (cl) x = channels_last(x);
  torch::NoGradGuard no_grad;
  return median_seconds([&] { auto y = torch::conv2d(x, w, b, 1, 1); });
}

double conv_fwd_bwd(torch::ScalarType t, bool cl) {
  torch_available();
  auto x = torch::randn({8, 64, 56, 56}).to(t), w = torch::randn({64, 64, 3, 3}).to(t), b = torch::randn({64}).to(t);
  auto g = torch::randn({8, 64, 56, 56}).to(t);
  if (cl) {
    x = channels_last(x);
    g = channels_last(g);
  }
  x.requires_grad_(true);
  w.requires_grad_(true);
  b.requires_grad_(true);
  return median_seconds([&] {
    auto y = torch::conv2d(x, w, b, 1, 1);
    y.backward(g);
  });
}

double im2col_3x3() {
  torch_available();
  auto x = torch::randn({8, 64, 56, 56});
  torch::NoGradGuard no_grad;
  return median_seconds([&] { auto c = torch::im2col(x, {3, 3}, {1, 1}, {1, 1}, {1, 1}); });
}

double col2im_3x3() {
  torch_available();
  auto c = torch::randn({8, 64 * 9, 56 * 56});
  torch::NoGradGuard no_grad;
  return median_seconds([&] { auto x = torch::col2im(c, {56, 56}, {3, 3}, {1, 1}, {1, 1}, {1, 1}); });
}

TwinTable conv_twins() {
  TwinTable t;
  t["conv3x3_fwd"] = [] { return conv_fwd(torch::kFloat32, false); };
  t["conv3x3_fwd_bwd"] = [] { return conv_fwd_bwd(torch::kFloat32, false); };
  t["conv3x3_fwd_nhwc"] = [] { return conv_fwd(torch::kFloat32, true); };
  t["conv3x3_fwd_bwd_nhwc"] = [] { return conv_fwd_bwd(torch::kFloat32, true); };
  t["conv3x3_bf16_fwd"] = [] { return conv_fwd(torch::kBFloat16, false); };
  t["conv3x3_bf16_fwd_bwd"] = [] { return conv_fwd_bwd(torch::kBFloat16, false); };
  t["im2col_3x3"] = im2col_3x3;
  t["col2im_3x3"] = col2im_3x3;
  return t;
}
const AddTwins kConvTwins(conv_twins());

}  // namespace
}  // namespace bench
