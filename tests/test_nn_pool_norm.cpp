// nn pooling and normalization modules and functionals: against the tensor:: ops they wrap and
// float64 reference loops written here (batch statistics, running-stat updates with the
// unbiased variance, cumulative momentum), train/eval behaviour, buffers in state_dict,
// options, printing and errors.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using namespace tensor;
using tensor::testing::vals;
using tensor::testing::expect_near;
namespace F = tensor::nn::functional;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;

namespace {

std::string printed(const nn::Module& m) {
  std::ostringstream s;
  m.pretty_print(s);
  return s.str();
}

// Per-channel mean and biased / unbiased variance of an (N, C, *) tensor, in float64.
struct Stats {
  std::vector<double> mean, var_b, var_u;
};
Stats channel_stats(const Tensor& x) {
  auto v = vals(x);
  const int64_t n = x.size(0), c = x.size(1), inner = x.numel() / (n * c);
  Stats s{std::vector<double>(c), std::vector<double>(c), std::vector<double>(c)};
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k) sum += v[(i * c + ch) * inner + k];
    const double m = sum / (n * inner);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k) sq += std::pow(v[(i * c + ch) * inner + k] - m, 2);
    s.mean[ch] = m;
    s.var_b[ch] = sq / (n * inner);
    s.var_u[ch] = sq / (n * inner - 1);
  }
  return s;
}

std::vector<double> bn_ref(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& var,
                           const std::vector<double>& w, const std::vector<double>& b, double eps) {
  auto v = vals(x);
  const int64_t n = x.size(0), c = x.size(1), inner = x.numel() / (n * c);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t k = 0; k < inner; ++k) {
        double& e = v[(i * c + ch) * inner + k];
        e = (e - mean[ch]) / std::sqrt(var[ch] + eps) * w[ch] + b[ch];
      }
  return v;
}

}  // namespace

TEST(NNPool, ModulesMatchOps) {
  manual_seed(1);
  Tensor x = randn({2, 3, 7, 9});
  nn::MaxPool2d mp(nn::MaxPool2dOptions({3, 2}).stride({2, 1}).padding(1).dilation({1, 2}).ceil_mode(true));
  expect_near(vals(mp(x)), vals(tensor::max_pool2d(x, {3, 2}, {2, 1}, 1, {1, 2}, true)), 0, "maxpool module");
  expect_near(vals(F::max_pool2d(x, F::MaxPool2dFuncOptions(2))), vals(tensor::max_pool2d(x, 2, 2)), 0, "F::max_pool2d");

  nn::AvgPool2d ap(nn::AvgPool2dOptions(3).stride(2).padding(1).count_include_pad(false));
  expect_near(vals(ap(x)), vals(tensor::avg_pool2d(x, 3, 2, 1, false, false)), 0, "avgpool module");
  expect_near(vals(F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).divisor_override(3))),
              vals(tensor::avg_pool2d(x, 2, 2, 0, false, true, 3)), 0, "F::avg_pool2d divisor");

  nn::AdaptiveAvgPool2d aap(nn::AdaptiveAvgPool2dOptions({2, 3}));
  expect_near(vals(aap(x)), vals(tensor::adaptive_avg_pool2d(x, {2, 3})), 0, "adaptive");
  EXPECT_EQ(aap(x).sizes(), IntArrayRef({2, 3, 2, 3}));
}

TEST(NNPool, HandValuesAndDefaults) {
  // 1 x 1 x 4 x 4 of 0..15: 2x2 max pooling keeps each block's bottom-right element.
  Tensor x = arange(16, TensorOptions().dtype(kFloat64)).reshape({1, 1, 4, 4});
  nn::MaxPool2d mp(2);
  EXPECT_EQ(mp->options.stride()[0], 2);  // stride defaults to the kernel
  expect_near(vals(mp(x)), {5, 7, 13, 15}, 0, "maxpool hand");
  nn::AvgPool2d ap(2);
  expect_near(vals(ap(x)), {2.5, 4.5, 10.5, 12.5}, 0, "avgpool hand");
  nn::AdaptiveAvgPool2d gap(1);
  expect_near(vals(gap(x)), {7.5}, 0, "global avg");
  // Non-contiguous input (a transposed view) goes through unchanged semantics.
  Tensor xt = x.transpose(2, 3);
  expect_near(vals(mp(xt)), {5, 13, 7, 15}, 0, "maxpool transposed");
}

TEST(NNPool, Printing) {
  EXPECT_EQ(printed(*nn::MaxPool2d(2)),
            "tensor::nn::MaxPool2d(kernel_size=[2, 2], stride=[2, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=false)");
  EXPECT_EQ(printed(*nn::AvgPool2d(nn::AvgPool2dOptions({3, 2}).stride(1))),
            "tensor::nn::AvgPool2d(kernel_size=[3, 2], stride=[1, 1], padding=[0, 0])");
  EXPECT_EQ(printed(*nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({5, 7}))), "tensor::nn::AdaptiveAvgPool2d(output_size=[5, 7])");
  EXPECT_THROW(nn::MaxPool2dOptions({1, 2, 3}), tensor::Error);
}

TEST(NNBatchNorm, TrainUsesBatchStatsAndUpdatesRunning) {
  manual_seed(2);
  nn::BatchNorm2d bn(nn::BatchNormOptions(3).momentum(0.2));
  {
    NoGradGuard g;
    bn->weight.copy_(tensor::tensor({1.5, -0.5, 2.0}));
    bn->bias.copy_(tensor::tensor({0.1, 0.2, -0.3}));
  }
  Tensor x = randn({4, 3, 2, 5}) * 2 + 1;
  Stats s = channel_stats(x);
  Tensor y = bn(x);
  expect_near(vals(y), bn_ref(x, s.mean, s.var_b, {1.5, -0.5, 2.0}, {0.1, 0.2, -0.3}, 1e-5), 1e-5, "bn train");
  std::vector<double> rm(3), rv(3);
  for (int c = 0; c < 3; ++c) {
    rm[c] = 0.8 * 0 + 0.2 * s.mean[c];
    rv[c] = 0.8 * 1 + 0.2 * s.var_u[c];  // unbiased variance in the running estimate
  }
  expect_near(vals(bn->running_mean), rm, 1e-5, "running_mean");
  expect_near(vals(bn->running_var), rv, 1e-5, "running_var");
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_EQ(bn->num_batches_tracked.scalar_type(), kInt64);

  // Eval: the running statistics, no update.
  bn->eval();
  Tensor x2 = randn({2, 3, 2, 2});
  expect_near(vals(bn(x2)), bn_ref(x2, rm, rv, {1.5, -0.5, 2.0}, {0.1, 0.2, -0.3}, 1e-5), 1e-5, "bn eval");
  expect_near(vals(bn->running_mean), rm, 1e-6, "eval keeps running_mean");
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);

  // Gradients reach weight and bias (and the input) through tensor::batch_norm.
  bn->train();
  Tensor xi = randn({4, 3, 2, 2}).requires_grad_();
  bn(xi).pow(2).sum().backward();
  EXPECT_TRUE(bn->weight.grad().defined());
  EXPECT_TRUE(bn->bias.grad().defined());
  EXPECT_TRUE(xi.grad().defined());
}

TEST(NNBatchNorm, NonContiguousInput) {
  manual_seed(8);
  // A channels-last view (permuted, not contiguous) normalizes like its contiguous copy.
  nn::BatchNorm2d a(3), b(3);
  Tensor x = randn({2, 4, 5, 3}).permute({0, 3, 1, 2});
  ASSERT_FALSE(x.is_contiguous());
  Stats s = channel_stats(x);
  expect_near(vals(a(x)), bn_ref(x, s.mean, s.var_b, {1, 1, 1}, {0, 0, 0}, 1e-5), 1e-5, "permuted");
  b(x.contiguous());
  expect_near(vals(a->running_var), vals(b->running_var), 1e-6, "running_var from a view");
  nn::LayerNorm ln(nn::LayerNormOptions({4}).elementwise_affine(false));
  Tensor t = randn({4, 3}).t();  // [3, 4] transposed view
  expect_near(vals(ln(t)), vals(ln(t.contiguous())), 1e-6, "layer norm on a view");
}

TEST(NNBatchNorm, CumulativeMomentumAndNoRunningStats) {
  manual_seed(3);
  nn::BatchNorm1d bn(nn::BatchNormOptions(2).momentum(std::nullopt).affine(false));
  Tensor a = randn({5, 2}), b = randn({6, 2, 3});
  bn(a);
  bn(b);
  Stats sa = channel_stats(a), sb = channel_stats(b);
  // momentum None: the running stats are the plain average over the batches seen.
  std::vector<double> rm{(sa.mean[0] + sb.mean[0]) / 2, (sa.mean[1] + sb.mean[1]) / 2};
  std::vector<double> rv{(1 * 0 + sa.var_u[0] + sb.var_u[0]) / 2, (sa.var_u[1] + sb.var_u[1]) / 2};
  expect_near(vals(bn->running_mean), rm, 1e-5, "cumulative mean");
  expect_near(vals(bn->running_var), rv, 1e-5, "cumulative var");
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
  EXPECT_FALSE(bn->weight.defined());
  EXPECT_EQ(bn->parameters().size(), 0u);

  // Without running stats eval still normalizes with the batch statistics.
  nn::BatchNorm1d nb(nn::BatchNormOptions(2).track_running_stats(false));
  nb->eval();
  Stats s = channel_stats(a);
  expect_near(vals(nb(a)), bn_ref(a, s.mean, s.var_b, {1, 1}, {0, 0}, 1e-5), 1e-5, "no running stats eval");
  EXPECT_EQ(nb->buffers().size(), 0u);
}

TEST(NNBatchNorm, BuffersInStateDictAndPrinting) {
  nn::BatchNorm2d bn(4);
  auto sd = bn->state_dict();
  std::vector<std::string> names;
  for (auto& kv : sd) names.push_back(kv.first);
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(bn->parameters().size(), 2u);
  EXPECT_EQ(bn->buffers().size(), 3u);
  expect_near(vals(bn->running_var), {1, 1, 1, 1}, 0, "running_var init");
  expect_near(vals(bn->weight), {1, 1, 1, 1}, 0, "weight init");

  // Round trip: a trained module's statistics load into a fresh one.
  bn(randn({3, 4, 2, 2}));
  nn::BatchNorm2d other(4);
  other->load_state_dict(bn->state_dict());
  expect_near(vals(other->running_mean), vals(bn->running_mean), 0, "loaded running_mean");
  EXPECT_EQ(other->num_batches_tracked.item<int64_t>(), 1);

  EXPECT_EQ(printed(*bn), "tensor::nn::BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
  EXPECT_EQ(printed(*nn::BatchNorm1d(nn::BatchNormOptions(3).momentum(std::nullopt).affine(false))),
            "tensor::nn::BatchNorm1d(3, eps=1e-05, momentum=None, affine=false, track_running_stats=true)");
}

TEST(NNBatchNorm, Errors) {
  nn::BatchNorm2d bn(3);
  expect_error([&] { bn(randn({2, 3, 4})); }, {"BatchNorm2d"});
  expect_error([&] { bn(randn({2, 5, 4, 4})); }, {"expected 3 channels"});
  nn::BatchNorm1d b1(3);
  expect_error([&] { b1(randn({1, 3})); }, {"more than 1 value per channel"});
  expect_error([&] { nn::BatchNorm1d(0); }, {"num_features"});
}

TEST(NNBatchNorm, FunctionalMatchesOp) {
  manual_seed(4);
  Tensor x = randn({3, 2, 4}, TensorOptions().dtype(kFloat64));
  Tensor w = randn({2}, TensorOptions().dtype(kFloat64)), b = randn({2}, TensorOptions().dtype(kFloat64));
  Tensor rm = zeros({2}, TensorOptions().dtype(kFloat64)), rv = ones({2}, TensorOptions().dtype(kFloat64));
  Tensor y = F::batch_norm(x, rm, rv, F::BatchNormFuncOptions().weight(w).bias(b).training(true).momentum(0.1).eps(1e-5));
  Stats s = channel_stats(x);
  expect_near(vals(y), bn_ref(x, s.mean, s.var_b, vals(w), vals(b), 1e-5), 1e-12, "F::batch_norm train");
  expect_near(vals(rm), {0.1 * s.mean[0], 0.1 * s.mean[1]}, 1e-12, "F::batch_norm running mean");
  // Eval with the given statistics.
  Tensor ye = F::batch_norm(x, rm, rv, F::BatchNormFuncOptions().eps(1e-3));
  expect_near(vals(ye), bn_ref(x, vals(rm), vals(rv), {1, 1}, {0, 0}, 1e-3), 1e-12, "F::batch_norm eval");
  check("F::batch_norm gradcheck", [&] {
    return autograd::gradcheck(
        [&](const variable_list& in) {
          return F::batch_norm(in[0], Tensor(), Tensor(),
                               F::BatchNormFuncOptions().weight(in[1]).bias(in[2]).training(true));
        },
        {x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()});
  });
}

TEST(NNLayerNorm, ModuleAndFunctional) {
  manual_seed(5);
  nn::LayerNorm ln(nn::LayerNormOptions({2, 3}).eps(1e-6));
  {
    NoGradGuard g;
    ln->weight.copy_(randn({2, 3}));
    ln->bias.copy_(randn({2, 3}));
  }
  Tensor x = randn({4, 2, 3}, TensorOptions().dtype(kFloat64));
  ln->to(kFloat64);
  Tensor y = ln(x);
  // float64 reference: normalize each sample's 6 values.
  auto xv = vals(x), wv = vals(ln->weight), bv = vals(ln->bias);
  std::vector<double> want(xv.size());
  for (int i = 0; i < 4; ++i) {
    double m = 0, v = 0;
    for (int k = 0; k < 6; ++k) m += xv[i * 6 + k] / 6;
    for (int k = 0; k < 6; ++k) v += std::pow(xv[i * 6 + k] - m, 2) / 6;
    for (int k = 0; k < 6; ++k) want[i * 6 + k] = (xv[i * 6 + k] - m) / std::sqrt(v + 1e-6) * wv[k] + bv[k];
  }
  expect_near(vals(y), want, 1e-10, "layer norm module");
  expect_near(vals(F::layer_norm(x, F::LayerNormFuncOptions({2, 3}).weight(ln->weight).bias(ln->bias).eps(1e-6))), want,
              1e-10, "F::layer_norm");
  EXPECT_EQ(printed(*ln), "tensor::nn::LayerNorm([2, 3], eps=1e-06, elementwise_affine=true)");
  nn::LayerNorm plain(nn::LayerNormOptions({3}).elementwise_affine(false));
  EXPECT_EQ(plain->parameters().size(), 0u);
  expect_error([&] { plain(randn({2, 4})); }, {"layer_norm"});
  check("F::layer_norm gradcheck", [&] {
    return autograd::gradcheck(
        [&](const variable_list& in) {
          return F::layer_norm(in[0], F::LayerNormFuncOptions({3}).weight(in[1]).bias(in[2]));
        },
        {randn({2, 3}, TensorOptions().dtype(kFloat64)).requires_grad_(),
         randn({3}, TensorOptions().dtype(kFloat64)).requires_grad_(),
         randn({3}, TensorOptions().dtype(kFloat64)).requires_grad_()});
  });
}

TEST(NNGroupNorm, ModuleAndFunctional) {
  manual_seed(6);
  nn::GroupNorm gn(nn::GroupNormOptions(2, 4).eps(1e-5));
  Tensor x = randn({3, 4, 5});
  {
    NoGradGuard g;
    gn->weight.copy_(tensor::tensor({1.0f, 2.0f, -1.0f, 0.5f}));
    gn->bias.copy_(tensor::tensor({0.0f, 1.0f, 2.0f, 3.0f}));
  }
  auto xv = vals(x);
  std::vector<double> want(xv.size());
  const double w[4] = {1, 2, -1, 0.5}, b[4] = {0, 1, 2, 3};
  for (int n = 0; n < 3; ++n)
    for (int g = 0; g < 2; ++g) {
      const int base = n * 20 + g * 10;
      double m = 0, v = 0;
      for (int k = 0; k < 10; ++k) m += xv[base + k] / 10;
      for (int k = 0; k < 10; ++k) v += std::pow(xv[base + k] - m, 2) / 10;
      for (int k = 0; k < 10; ++k) {
        const int c = g * 2 + k / 5;
        want[base + k] = (xv[base + k] - m) / std::sqrt(v + 1e-5) * w[c] + b[c];
      }
    }
  expect_near(vals(gn(x)), want, 1e-5, "group norm module");
  expect_near(vals(F::group_norm(x, F::GroupNormFuncOptions(2).weight(gn->weight).bias(gn->bias))), want, 1e-5,
              "F::group_norm");
  EXPECT_EQ(printed(*gn), "tensor::nn::GroupNorm(2, 4, eps=1e-05, affine=true)");
  expect_error([&] { nn::GroupNorm(3, 4); }, {"divisible"});
}

TEST(NNPoolNorm, InSequential) {
  manual_seed(7);
  nn::Sequential net(nn::BatchNorm2d(2), nn::MaxPool2d(2), nn::AdaptiveAvgPool2d(1), nn::Flatten(), nn::LayerNorm(std::vector<int64_t>{2}));
  Tensor y = net->forward(randn({3, 2, 4, 4}));
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(net->named_buffers().size(), 3u);
}
