// libtorch twins of bench_upsample.cpp.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

namespace F = torch::nn::functional;

F::InterpolateFuncOptions bicubic_x2() {
  return F::InterpolateFuncOptions().size(std::vector<int64_t>{112, 112}).mode(torch::kBicubic).align_corners(false);
}

TwinTable upsample_twins() {
  TwinTable t;
  t["upsample_bicubic2d_8x64x56_to_112"] = [] {
    torch::Tensor x = torch::randn({8, 64, 56, 56});
    return median_seconds([&] { torch::Tensor y = F::interpolate(x, bicubic_x2()); }, 15, 3);
  };
  t["upsample_bicubic2d_fwd_bwd_8x64x56_to_112"] = [] {
    torch::Tensor x = torch::randn({8, 64, 56, 56}).requires_grad_(true);
    return median_seconds([&] { F::interpolate(x, bicubic_x2()).sum().backward(); }, 15, 2);
  };
  return t;
}
const AddTwins kUpsampleTwins(upsample_twins());

}  // namespace
}  // namespace bench
