// libtorch twin of bench_transformer.cpp.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

TwinTable transformer_twins() {
  TwinTable t;
  t["transformer_layer_fwd_bwd"] = [] {
    torch::manual_seed(0);
    torch::nn::TransformerEncoderLayer layer(torch::nn::TransformerEncoderLayerOptions(256, 4).dim_feedforward(1024).dropout(0.0));
    torch::Tensor x = torch::randn({128, 8, 256}).requires_grad_(true);
    return median_seconds([&] {
      layer->zero_grad();
      layer(x).sum().backward();
    }, 9);
  };
  return t;
}
const AddTwins kTransformerTwins(transformer_twins());

}  // namespace
}  // namespace bench
