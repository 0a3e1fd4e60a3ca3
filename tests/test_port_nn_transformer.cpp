// Ported-program test for the transformer stacks (issue 14), in libtorch's spelling:
// nn::TransformerEncoder, nn::TransformerDecoderLayer, nn::TransformerDecoder and
// nn::Transformer against PyTorch's outputs and gradients (tests/reference/torch_nn_port.py:
// dropout 0, causal and key-padding masks, pre-norm with GELU, batch_first), parameter names
// (state dicts carry over), layer copies, AnyModule and error messages.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/reference/torch_nn_port_ref.h"
#include "tests/port_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::det;
namespace nn = tensor::nn;
using tensor::testing::expect_error;
using tensor::testing::expect_near;
using tensor::testing::vals;

namespace {

// float64, then parameter k of the sorted names gets det(shape, 200 + k, -0.5, 0.5); returns
// the sorted names joined by ','.
std::string fill_sorted(nn::Module& m) {
  m.to(kFloat64);
  auto named = m.named_parameters();
  std::vector<std::string> names;
  for (auto& item : named) names.push_back(item.key());
  std::sort(names.begin(), names.end());
  NoGradGuard g;
  std::string joined;
  for (size_t k = 0; k < names.size(); ++k) {
    Tensor& p = named[names[k]];
    p.copy_(det(p.sizes().vec(), 200 + static_cast<int>(k), -0.5, 0.5));
    joined += (k ? "," : "") + names[k];
  }
  return joined;
}

Tensor weighted_sum(const Tensor& out) { return (out * det(out.sizes().vec(), 7)).sum(); }

Tensor req(const Tensor& t) { return t.detach().clone().requires_grad_(true); }

Tensor bool_mask(const std::vector<std::vector<int>>& rows) {
  std::vector<int64_t> v;
  for (auto& r : rows) v.insert(v.end(), r.begin(), r.end());
  return tensor::tensor(v, kInt64).reshape({static_cast<int64_t>(rows.size()), -1}).to(kBool);
}

constexpr int64_t E = 4, NH = 2, FF = 6;

}  // namespace

TEST(PortNNTransformer, EncoderMatchesPyTorch) {
  using namespace torch_ref;
  nn::TransformerEncoder enc(
      nn::TransformerEncoderOptions(nn::TransformerEncoderLayerOptions(E, NH).dim_feedforward(FF).dropout(0.0), 2)
          .norm(nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({E})))));
  EXPECT_EQ(fill_sorted(*enc), tenc_names);
  Tensor src = req(det({3, 2, E}, 80));
  Tensor mask = nn::TransformerImpl::generate_square_subsequent_mask(3).to(kFloat64);
  Tensor out = enc(src, mask, bool_mask({{0, 0, 1}, {0, 0, 0}}));
  expect_near(vals(out), tenc_out, 1e-9, "TransformerEncoder out");
  auto g = autograd::grad({weighted_sum(out)}, {src, enc->named_parameters()["layers.1.linear1.weight"]});
  expect_near(vals(g[0]), tenc_grad0, 1e-9, "TransformerEncoder grad src");
  expect_near(vals(g[1]), tenc_grad1, 1e-9, "TransformerEncoder grad layers.1.linear1.weight");
}

TEST(PortNNTransformer, DecoderMatchesPyTorch) {
  using namespace torch_ref;
  nn::TransformerDecoderLayer layer(nn::TransformerDecoderLayerOptions(E, NH).dim_feedforward(FF).dropout(0.0));
  nn::TransformerDecoder dec(
      nn::TransformerDecoderOptions(layer, 2).norm(nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({E})))));
  EXPECT_EQ(fill_sorted(*dec), tdec_names);
  Tensor tgt = req(det({3, 2, E}, 81)), mem = req(det({5, 2, E}, 82));
  Tensor mkpm = bool_mask({{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}});
  Tensor out = dec(tgt, mem, nn::TransformerImpl::generate_square_subsequent_mask(3).to(kFloat64), Tensor(), Tensor(),
                   mkpm);
  expect_near(vals(out), tdec_out, 1e-9, "TransformerDecoder out");
  auto g = autograd::grad({weighted_sum(out)},
                          {tgt, mem, dec->named_parameters()["layers.0.multihead_attn.in_proj_weight"]});
  expect_near(vals(g[0]), tdec_grad0, 1e-9, "TransformerDecoder grad tgt");
  expect_near(vals(g[1]), tdec_grad1, 1e-9, "TransformerDecoder grad memory");
  expect_near(vals(g[2]), tdec_grad2, 1e-9, "TransformerDecoder grad in_proj_weight");
}

TEST(PortNNTransformer, PreNormGeluBatchFirstDecoderLayerMatchesPyTorch) {
  using namespace torch_ref;
  nn::TransformerDecoderLayer layer(nn::TransformerDecoderLayerOptions(E, NH)
                                        .dim_feedforward(FF)
                                        .dropout(0.0)
                                        .activation(kGELU)
                                        .batch_first(true)
                                        .norm_first(true));
  EXPECT_EQ(fill_sorted(*layer), tdecl_pre_names);
  Tensor tgt = req(det({2, 3, E}, 83)), mem = req(det({2, 4, E}, 84));
  Tensor out = layer(tgt, mem, nn::TransformerImpl::generate_square_subsequent_mask(3).to(kFloat64));
  expect_near(vals(out), tdecl_pre_out, 1e-9, "TransformerDecoderLayer pre-norm out");
  auto g = autograd::grad({weighted_sum(out)}, {tgt, mem});
  expect_near(vals(g[0]), tdecl_pre_grad0, 1e-9, "TransformerDecoderLayer grad tgt");
  expect_near(vals(g[1]), tdecl_pre_grad1, 1e-9, "TransformerDecoderLayer grad memory");
}

TEST(PortNNTransformer, TransformerMatchesPyTorch) {
  using namespace torch_ref;
  nn::Transformer tr(nn::TransformerOptions(E, NH, 2, 1).dim_feedforward(FF).dropout(0.0));
  EXPECT_EQ(fill_sorted(*tr), tfull_names);
  Tensor src = req(det({5, 2, E}, 85)), tgt = req(det({3, 2, E}, 86));
  Tensor out = tr(src, tgt, Tensor(), tr->generate_square_subsequent_mask(3).to(kFloat64));
  EXPECT_EQ(out.sizes(), IntArrayRef({3, 2, E}));
  expect_near(vals(out), tfull_out, 1e-9, "Transformer out");
  auto g = autograd::grad({weighted_sum(out)}, {src, tgt});
  expect_near(vals(g[0]), tfull_grad0, 1e-9, "Transformer grad src");
  expect_near(vals(g[1]), tfull_grad1, 1e-9, "Transformer grad tgt");
}

TEST(PortNNTransformer, LayersStartAsCopiesAndMasksAndErrors) {
  // The stack's layers start from the prototype's weights (libtorch clones it) but are
  // separate parameters.
  nn::TransformerEncoderLayer proto(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  nn::TransformerEncoder enc(proto, 3);
  ASSERT_EQ(enc->layers->size(), 3u);
  auto p = enc->named_parameters();
  EXPECT_TRUE(p["layers.0.linear1.weight"].equal(proto->linear1->weight));
  EXPECT_TRUE(p["layers.2.linear1.weight"].equal(proto->linear1->weight));
  EXPECT_FALSE(p["layers.0.linear1.weight"].is_same(p["layers.1.linear1.weight"]));
  EXPECT_EQ(enc->parameters().size(), 3 * proto->parameters().size());
  EXPECT_FALSE(p.contains("norm.weight"));

  Tensor m = nn::TransformerImpl::generate_square_subsequent_mask(3);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(vals(m), std::vector<double>({0, -inf, -inf, 0, 0, -inf, 0, 0, 0}));

  // Every weight matrix of nn::Transformer is xavier_uniform_-initialized.
  nn::Transformer tr(nn::TransformerOptions(8, 2, 1, 1).dim_feedforward(16));
  for (auto& item : tr->named_parameters()) {
    const Tensor& t = item.value();
    if (t.dim() < 2) continue;
    const double bound = std::sqrt(6.0 / static_cast<double>(t.size(0) + t.size(1)));
    EXPECT_LE(t.abs().max().item<double>(), bound + 1e-6) << item.key();
  }
  tr->eval();
  Tensor out = tr(randn({4, 2, 8}), randn({5, 2, 8}));
  EXPECT_EQ(out.sizes(), IntArrayRef({5, 2, 8}));
  expect_error([&] { tr(randn({4, 2, 8}), randn({5, 3, 8})); }, {"Transformer", "batch", "[4, 2, 8]", "[5, 3, 8]"});
  expect_error([&] { tr(randn({4, 2, 6}), randn({5, 2, 6})); }, {"Transformer", "d_model", "8"});

  // AnyModule: forward with defaulted trailing arguments, typed spelling, empty checks.
  nn::AnyModule any(nn::LayerNorm(nn::LayerNormOptions({8})));
  Tensor x = randn({2, 8});
  EXPECT_TRUE(any.forward(x).allclose(any.forward<Tensor>(x)));
  EXPECT_NE(any.ptr<nn::LayerNormImpl>(), nullptr);
  nn::AnyModule empty;
  EXPECT_TRUE(empty.is_empty());
  expect_error([&] { empty.forward(x); }, {"AnyModule", "empty"});
}
