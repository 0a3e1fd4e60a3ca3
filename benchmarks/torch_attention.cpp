// libtorch twin of bench_attention.cpp. Debian's libtorch 1.13 has no fused CPU attention
// kernel (scaled_dot_product_attention arrived in 2.0), so every twin is libtorch's attention
// as 1.13's MultiheadAttention computes it: softmax(q k^T * scale) v with public ops, the
// [B, H, L, L] scores materialized. The twin of the 8192 case is skipped, as our math path:
// it would need several 2 GiB score matrices.
#include <torch/torch.h>

#include <cmath>

#include "harness.h"

namespace bench {
namespace {

double torch_sdpa_fwd_bwd(int64_t L, int reps) {
  torch::manual_seed(0);
  const int64_t B = 1, H = 8, D = 64;
  torch::Tensor q = torch::randn({B, H, L, D}).requires_grad_(true);
  torch::Tensor k = torch::randn({B, H, L, D}).requires_grad_(true);
  torch::Tensor v = torch::randn({B, H, L, D}).requires_grad_(true);
  torch::Tensor g = torch::randn({B, H, L, D});
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  return median_seconds([&] {
    torch::Tensor w = torch::softmax(torch::matmul(q * scale, k.transpose(-2, -1)), -1);
    torch::matmul(w, v).backward(g);
    q.mutable_grad() = torch::Tensor();
    k.mutable_grad() = torch::Tensor();
    v.mutable_grad() = torch::Tensor();
  }, reps, 1, 1);
}

TwinTable attention_twins() {
  TwinTable t;
  t["sdpa_512_flash"] = [] { return torch_sdpa_fwd_bwd(512, 7); };
  t["sdpa_512_math"] = [] { return torch_sdpa_fwd_bwd(512, 7); };
  t["sdpa_2048_flash"] = [] { return torch_sdpa_fwd_bwd(2048, 3); };
  t["sdpa_2048_math"] = [] { return torch_sdpa_fwd_bwd(2048, 3); };
  return t;
}
const AddTwins kAttentionTwins(attention_twins());

}  // namespace
}  // namespace bench
