// Transformer case: one TransformerEncoderLayer (d_model 256, 4 heads, feed-forward 1024,
// dropout 0) forward + backward on (seq 128, batch 8, 256) in training mode.
#include <tensor/tensor.h>

#include "harness.h"

namespace {

double transformer_layer_fwd_bwd() {
  tensor::manual_seed(0);
  tensor::nn::TransformerEncoderLayer layer(
      tensor::nn::TransformerEncoderLayerOptions(256, 4).dim_feedforward(1024).dropout(0.0));
  tensor::Tensor x = tensor::randn({128, 8, 256}).requires_grad_(true);
  return bench::median_seconds([&] {
    layer->zero_grad();
    layer(x).sum().backward();
  }, 9);
}

// FLOPs of the matrix products (Note [Case work] in harness.h), backward counted as twice forward:
// over 1024 tokens the q/k/v, output and two feed-forward projections, plus scores and their
// product with v per (batch, head).
constexpr double kLayerFwd = 2.0 * 1024 * (256 * 768 + 256 * 256 + 2 * 256 * 1024) + 2 * 2.0 * 8 * 4 * 128 * 128 * 64;

const bench::AddCases kTransformerCases({
    bench::Case{"transformer_layer_fwd_bwd", "ms", 0, "(d=256, 4 heads, ff=1024, seq 128, batch 8)", transformer_layer_fwd_bwd}
        .with_flops(3 * kLayerFwd),
});

}  // namespace
