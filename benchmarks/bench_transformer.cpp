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

const bench::AddCases kTransformerCases({
    {"transformer_layer_fwd_bwd", "ms", 0, "(d=256, 4 heads, ff=1024, seq 128, batch 8)", transformer_layer_fwd_bwd},
});

}  // namespace
