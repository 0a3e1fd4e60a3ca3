// Convolution cases of TARGETS.md (3x3, batch 8, 64 -> 64 channels, 56x56, padding 1, with
// bias, float32), forward and forward + backward, plus channels-last and bfloat16 variants for
// information. Figures in GFLOP/s: 2 * N * C_out * C_in * 9 * 56 * 56 per pass; forward +
// backward counts three passes (forward, grad_input, grad_weight). im2col / col2im (F::unfold /
// F::fold) of the same activation with a 3x3 kernel, padding 1, in GB/s of bytes read + written.
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

constexpr double kConvFlops = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;

Tensor channels_last(const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }

double conv_fwd(ScalarType t, bool cl) {
  Tensor x = randn({8, 64, 56, 56}).to(t), w = randn({64, 64, 3, 3}).to(t), b = randn({64}).to(t);
  if (cl) x = channels_last(x);
  return median_seconds([&] { Tensor y = conv2d(x, w, b, 1, 1); });
}

double conv_fwd_bwd(ScalarType t, bool cl) {
  Tensor x = randn({8, 64, 56, 56}).to(t), w = randn({64, 64, 3, 3}).to(t), b = randn({64}).to(t);
  Tensor g = randn({8, 64, 56, 56}).to(t);
  if (cl) {
    x = channels_last(x);
    g = channels_last(g);
  }
  x.requires_grad_(true);
  w.requires_grad_(true);
  b.requires_grad_(true);
  return median_seconds([&] {
    Tensor y = conv2d(x, w, b, 1, 1);
    y.backward(g);
  });
}

// im2col reads the image and writes nine times its size; col2im the reverse.
constexpr double kColBytes = 4.0 * (8 * 64 * 56 * 56 + 8 * 64 * 9 * 56 * 56);

double im2col_3x3() {
  Tensor x = randn({8, 64, 56, 56});
  return median_seconds([&] { Tensor c = im2col(x, {3, 3}, {1, 1}, {1, 1}, {1, 1}); });
}

double col2im_3x3() {
  Tensor c = randn({8, 64 * 9, 56 * 56});
  return median_seconds([&] { Tensor x = col2im(c, {56, 56}, {3, 3}, {1, 1}, {1, 1}, {1, 1}); });
}

const bench::AddCases kConvCases({
    {"conv3x3_fwd", "GFLOP/s", kConvFlops, ">= 1.0x", [] { return conv_fwd(kFloat32, false); }},
    {"conv3x3_fwd_bwd", "GFLOP/s", 3 * kConvFlops, ">= 1.0x", [] { return conv_fwd_bwd(kFloat32, false); }},
    {"conv3x3_fwd_nhwc", "GFLOP/s", kConvFlops, "(info)", [] { return conv_fwd(kFloat32, true); }},
    {"conv3x3_fwd_bwd_nhwc", "GFLOP/s", 3 * kConvFlops, "(info)", [] { return conv_fwd_bwd(kFloat32, true); }},
    // bf16: no share of the fp32 FMA peak (Note [Case work] in harness.h).
    bench::Case{"conv3x3_bf16_fwd", "GFLOP/s", kConvFlops, "(info)", [] { return conv_fwd(kBFloat16, false); }}
        .without_limit(),
    bench::Case{"conv3x3_bf16_fwd_bwd", "GFLOP/s", 3 * kConvFlops, "(info)",
                [] { return conv_fwd_bwd(kBFloat16, false); }}.without_limit(),
    {"im2col_3x3", "GB/s", kColBytes, "(info)", im2col_3x3},
    {"col2im_3x3", "GB/s", kColBytes, "(info)", col2im_3x3},
});

}  // namespace
