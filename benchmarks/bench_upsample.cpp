// Upsampling cases: bicubic resize (the plain-loop kernel of kernels/cpu/UpsampleKernels.cpp),
// forward and forward + backward, float32.
#include <tensor/tensor.h>

#include "harness.h"

namespace {

namespace F = tensor::nn::functional;

F::InterpolateFuncOptions bicubic_x2() {
  return F::InterpolateFuncOptions().size(std::vector<int64_t>{112, 112}).mode(tensor::kBicubic).align_corners(false);
}

double bicubic_fwd() {
  tensor::Tensor x = tensor::randn({8, 64, 56, 56});
  return bench::median_seconds([&] { tensor::Tensor y = F::interpolate(x, bicubic_x2()); }, 15, 3);
}

double bicubic_fwd_bwd() {
  tensor::Tensor x = tensor::randn({8, 64, 56, 56}).requires_grad_(true);
  return bench::median_seconds([&] { F::interpolate(x, bicubic_x2()).sum().backward(); }, 15, 2);
}

const bench::AddCases kUpsampleCases({
    {"upsample_bicubic2d_8x64x56_to_112", "ms", 0, "(image resize)", bicubic_fwd},
    {"upsample_bicubic2d_fwd_bwd_8x64x56_to_112", "ms", 0, "(image resize, training)", bicubic_fwd_bwd},
});

}  // namespace
