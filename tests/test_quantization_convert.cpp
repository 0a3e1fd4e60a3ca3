// quantization::convert and quantize_dynamic (issue 25): a small CNN prepared, calibrated and
// converted, checked against float64 references that dequantize, run the float op and quantize
// again, step by step; the float model within a bound derived from the scales; state_dict,
// save and load of the converted model; errors.
#include <gtest/gtest.h>

#include <tensor/nn/quantized.h>
#include <tensor/quantization.h>
#include <tensor/serialize.h>
#include <tensor/tensor.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
namespace q = tensor::quantization;
using tensor::testing::expect_error;

namespace {

// QuantStub -> conv -> bn -> relu -> max pool -> flatten -> fc -> DeQuantStub, as the example's CNN.
struct SmallNet : nn::Module {
  SmallNet()
      : quant(register_module("quant", q::QuantStub())),
        conv(register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)))),
        bn(register_module("bn", nn::BatchNorm2d(4))),
        relu(register_module("relu", nn::ReLU())),
        fc(register_module("fc", nn::Linear(4 * 4 * 4, 5))),
        dequant(register_module("dequant", q::DeQuantStub())) {}
  Tensor features(const Tensor& x) { return max_pool2d(relu(bn(conv(quant(x)))), {2, 2}).flatten(1); }
  Tensor forward(const Tensor& x) { return dequant(fc(features(x))); }
  q::QuantStub quant;
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
  nn::ReLU relu;
  nn::Linear fc;
  q::DeQuantStub dequant;
};

// A trained-looking network: random weights and batch-norm statistics, eval mode.
std::shared_ptr<SmallNet> make_net(uint64_t seed) {
  tensor::manual_seed(seed);
  auto net = std::make_shared<SmallNet>();
  NoGradGuard no_grad;
  net->bn->running_mean.copy_(randn({4}) * 0.1);
  net->bn->running_var.copy_(rand({4}) + 0.5);
  net->bn->weight.copy_(rand({4}) + 0.5);
  net->bn->bias.copy_(randn({4}) * 0.1);
  net->eval();
  return net;
}

// Fused, prepared with per-channel weights and MinMax activations, calibrated on `batches`.
void quantize(SmallNet& net, const std::vector<Tensor>& batches) {
  q::fuse_modules(net, {{"conv", "bn", "relu"}});
  q::prepare(net, q::default_per_channel_qconfig());
  for (const auto& b : batches) net.forward(b);
  q::convert(net);
}

template <typename T>
T* child(nn::Module& m, const std::string& name) {
  return m.named_modules()[name]->as<T>();
}

// round(real / scale) + zero_point clamped to quint8, in float64 (ties to even, as the kernels).
Tensor requantize_ref(const Tensor& real, double scale, int64_t zero_point) {
  return (real.to(kFloat64) / scale).round().add(static_cast<double>(zero_point)).clamp(0.0, 255.0).to(kInt64);
}

int64_t max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kInt64) - b.to(kInt64)).abs().max().item<int64_t>();
}

}  // namespace

TEST(QuantizationConvert, SmallCnnSwapsModulesAndMatchesStepByStepReferences) {
  auto net = make_net(3);
  const Tensor x = randn({16, 1, 8, 8});
  std::vector<Tensor> calib{randn({16, 1, 8, 8}), x, randn({16, 1, 8, 8}) * 0.5};
  quantize(*net, calib);

  // The tree holds the quantized modules; the observers are gone.
  ASSERT_NE(child<q::QuantizeImpl>(*net, "quant"), nullptr);
  auto* qconv = child<nn::quantized::ConvReLU2dImpl>(*net, "conv");
  ASSERT_NE(qconv, nullptr);
  auto* qfc = child<nn::quantized::LinearImpl>(*net, "fc");
  ASSERT_NE(qfc, nullptr);
  ASSERT_NE(child<q::DeQuantizeImpl>(*net, "dequant"), nullptr);
  EXPECT_NE(child<nn::IdentityImpl>(*net, "bn"), nullptr);
  EXPECT_TRUE(q::observed_modules(*net).empty());
  for (const auto& item : net->state_dict())
    EXPECT_EQ(item.key().find("activation_post_process"), std::string::npos) << item.key();
  EXPECT_EQ(qconv->weight().qscheme(), QScheme::PerChannelAffine);
  EXPECT_EQ(qfc->weight().qscheme(), QScheme::PerChannelAffine);

  // Step by step through the model's own members (the redirects reach the quantized modules).
  auto* quant = child<q::QuantizeImpl>(*net, "quant");
  const double s0 = quant->scale.item<double>();
  const int64_t z0 = quant->zero_point.item<int64_t>();
  const Tensor qx = net->quant(x);
  ASSERT_TRUE(qx.is_quantized());
  EXPECT_TRUE(qx.int_repr().equal(quantize_per_tensor(x, s0, z0, kQUInt8).int_repr()));

  // conv + relu: dequantize, float64 conv with the dequantized weight, relu, quantize.
  const Tensor qc = net->conv(qx);
  ASSERT_TRUE(qc.is_quantized());
  EXPECT_EQ(qc.q_scale(), static_cast<double>(qconv->scale));
  EXPECT_EQ(qc.q_zero_point(), static_cast<int64_t>(qconv->zero_point));
  const Tensor conv_real = conv2d(qx.dequantize().to(kFloat64), qconv->weight().dequantize().to(kFloat64),
                                  qconv->bias()->to(kFloat64), 1, 1);
  const Tensor conv_ref = requantize_ref(relu(conv_real), qconv->scale, qconv->zero_point);
  // oneDNN scales in float32: one integer step at most (Note [Requantization in oneDNN]).
  EXPECT_LE(max_abs_diff(qc.int_repr(), conv_ref), 1);
  EXPECT_GT((qc.int_repr().to(kInt64) == conv_ref).to(kFloat64).mean().item<double>(), 0.95);

  // bn and relu are Identity now; pooling and flatten work on the integers, exactly.
  const Tensor qh = net->features(x);
  ASSERT_TRUE(qh.is_quantized());
  EXPECT_EQ(qh.q_scale(), qc.q_scale());
  const Tensor pool_ref = max_pool2d(qc.int_repr().to(kFloat64), {2, 2}).flatten(1).to(kInt64);
  EXPECT_TRUE(qh.int_repr().to(kInt64).equal(pool_ref));

  // fc: dequantize, float64 linear, quantize.
  const Tensor qy = net->fc(qh);
  const Tensor fc_real =
      linear(qh.dequantize().to(kFloat64), qfc->weight().dequantize().to(kFloat64), qfc->bias()->to(kFloat64));
  const Tensor fc_ref = requantize_ref(fc_real, qfc->scale, qfc->zero_point);
  EXPECT_LE(max_abs_diff(qy.int_repr(), fc_ref), 1);

  // The whole forward: the DeQuantize of those integers, exactly.
  const Tensor y = net->forward(x);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_TRUE(y.equal(qy.dequantize()));
}

// The float model and the converted one agree within a bound derived from the scales:
//   e_in   = s_x / 2                                      (quantizing the input)
//   e_conv = max_c (s_w[c] / 2 * max_window sum(|x| + e_in) + e_in * |w_c|_1) + 1.5 s_conv
//   e_fc   = max_o (s_W[o] / 2 * max_sample sum(|h| + e_conv) + e_conv * |W_o|_1) + 1.5 s_fc
// (weight rounding, input error through the weights, the output rounding and the kernels' one
// float32 step; relu, max pooling and flatten do not grow errors; calibration covered x, so
// nothing clips).
TEST(QuantizationConvert, SmallCnnWithinTheQuantizationErrorBoundOfTheFloatModel) {
  auto net = make_net(5);
  const Tensor x = randn({32, 1, 8, 8});
  NoGradGuard no_grad;
  const Tensor y_float = net->forward(x);
  const Tensor h_float = net->features(x);
  q::fuse_modules(*net, {{"conv", "bn", "relu"}});
  // The folded float weights, before convert quantizes them.
  const Tensor w_conv = child<nn::intrinsic::ConvReLU2dImpl>(*net, "conv")->conv->weight.detach().to(kFloat64);
  const Tensor w_fc = net->fc->weight.detach().to(kFloat64);
  q::prepare(*net, q::default_per_channel_qconfig());
  net->forward(randn({32, 1, 8, 8}));
  net->forward(x);
  q::convert(*net);
  const Tensor y_q = net->forward(x);

  auto* quant = child<q::QuantizeImpl>(*net, "quant");
  auto* qconv = child<nn::quantized::ConvReLU2dImpl>(*net, "conv");
  auto* qfc = child<nn::quantized::LinearImpl>(*net, "fc");
  const double e_in = quant->scale.item<double>() / 2;
  const Tensor sw_conv = qconv->weight().q_per_channel_scales().to(kFloat64);
  const Tensor sw_fc = qfc->weight().q_per_channel_scales().to(kFloat64);
  // The largest sum of |input| over one 3x3 window, and over one sample's 64 features.
  const double window_l1 =
      conv2d(x.abs().to(kFloat64) + e_in, ones({1, 1, 3, 3}, kFloat64), std::nullopt, 1, 1).max().item<double>();
  const double e_conv = (sw_conv / 2 * window_l1 + e_in * w_conv.abs().sum({1, 2, 3})).max().item<double>() +
                        1.5 * static_cast<double>(qconv->scale);
  const double sample_l1 = (h_float.abs().to(kFloat64) + e_conv).sum({1}).max().item<double>();
  const double e_fc = (sw_fc / 2 * sample_l1 + e_conv * w_fc.abs().sum({1})).max().item<double>() +
                      1.5 * static_cast<double>(qfc->scale);
  const double err = (y_q - y_float).abs().max().item<double>();
  const double spread = (y_float.max() - y_float.min()).item<double>();
  std::printf("float vs int8: max |error| %.4f, bound %.4f, output spread %.3f\n", err, e_fc, spread);
  EXPECT_LE(err, e_fc);
  // The bound says something: below half the outputs' spread (a worst case: the error seen is ~30x smaller).
  EXPECT_LT(e_fc, 0.5 * spread);
}

TEST(QuantizationConvert, StateDictSaveAndLoadIntoAConvertedSkeleton) {
  auto net = make_net(7);
  const Tensor x = randn({8, 1, 8, 8});
  quantize(*net, {randn({8, 1, 8, 8}), x});
  const Tensor y = net->forward(x);

  auto sd = net->state_dict();
  std::vector<std::string> keys;
  for (const auto& item : sd) keys.push_back(item.key());
  for (const char* k : {"quant.scale", "quant.zero_point", "conv.weight", "conv.bias", "conv.scale", "conv.zero_point",
                        "fc.weight", "fc.bias", "fc.scale", "fc.zero_point"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  EXPECT_TRUE(sd["conv.weight"].is_quantized());
  EXPECT_EQ(sd["fc.scale"].dtype(), kFloat64);
  EXPECT_EQ(sd["fc.scale"].item<double>(), static_cast<double>(child<nn::quantized::LinearImpl>(*net, "fc")->scale));
  EXPECT_EQ(sd["fc.zero_point"].dtype(), kInt64);

  const std::string path = ::testing::TempDir() + "q8_convert_small_net.safetensors";
  tensor::save(net, path);

  // A skeleton: another model, calibrated on other data, so every parameter differs until loaded.
  auto skeleton = make_net(8);
  quantize(*skeleton, {randn({8, 1, 8, 8}) * 3.0});
  EXPECT_FALSE(skeleton->forward(x).equal(y));
  tensor::load(skeleton, path);
  const Tensor y2 = skeleton->forward(x);
  EXPECT_TRUE(y2.equal(y));
  auto* a = child<nn::quantized::ConvReLU2dImpl>(*net, "conv");
  auto* b = child<nn::quantized::ConvReLU2dImpl>(*skeleton, "conv");
  EXPECT_TRUE(b->weight().q_per_channel_scales().equal(a->weight().q_per_channel_scales()));
  EXPECT_TRUE(b->weight().int_repr().equal(a->weight().int_repr()));
  EXPECT_EQ(static_cast<double>(b->scale), static_cast<double>(a->scale));
  EXPECT_EQ(static_cast<int64_t>(b->zero_point), static_cast<int64_t>(a->zero_point));
  std::remove(path.c_str());

  // load_state_dict alone (no file) does the same, and a later in-place write repacks too.
  auto other = make_net(9);
  quantize(*other, {randn({8, 1, 8, 8}) * 2.0});
  std::vector<std::pair<std::string, Tensor>> state;
  for (const auto& item : sd) state.emplace_back(item.key(), item.value());
  other->load_state_dict(state);
  EXPECT_TRUE(other->forward(x).equal(y));
}

TEST(QuantizationConvert, UncalibratedSkeletonLoadsAConvertedModel) {
  // Note [Converting for loading]: no calibration batch for the skeleton, only prepare.
  auto net = make_net(13);
  const Tensor x = randn({8, 1, 8, 8});
  quantize(*net, {randn({8, 1, 8, 8}), x});
  const Tensor y = net->forward(x);
  std::vector<std::pair<std::string, Tensor>> state;
  for (const auto& item : net->state_dict()) state.emplace_back(item.key(), item.value());

  auto skeleton = make_net(14);
  q::fuse_modules(*skeleton, {{"conv", "bn", "relu"}});
  q::prepare(*skeleton, q::default_per_channel_qconfig());
  q::convert(*skeleton, q::ConvertOptions().allow_uncalibrated(true));
  ASSERT_NE(child<nn::quantized::LinearImpl>(*skeleton, "fc"), nullptr);
  EXPECT_EQ(child<q::QuantizeImpl>(*skeleton, "quant")->scale.item<double>(), 1.0);
  skeleton->load_state_dict(state);
  EXPECT_TRUE(skeleton->forward(x).equal(y));
}

TEST(QuantizationConvert, ModuleStateRoundTripsThroughLoadStateDict) {
  // One module on its own: the weight, bias and output parameters reach the packed kernel.
  tensor::manual_seed(11);
  nn::quantized::Linear a(6, 3), b(6, 3);
  a->set_weight_bias(quantize_per_channel(randn({3, 6}), tensor::tensor(std::vector<double>{0.01, 0.02, 0.03}),
                                          zeros({3}, kInt64), 0, kQInt8),
                     randn({3}));
  a->scale = 0.05;
  a->zero_point = 100;
  std::vector<std::pair<std::string, Tensor>> state;
  for (const auto& item : a->state_dict()) state.emplace_back(item.key(), item.value());
  b->load_state_dict(state);
  const Tensor qx = quantize_per_tensor(randn({4, 6}), 0.02, 128, kQUInt8);
  EXPECT_TRUE(b(qx).int_repr().equal(a(qx).int_repr()));
  EXPECT_EQ(b(qx).q_scale(), 0.05);
  EXPECT_EQ(b(qx).q_zero_point(), 100);
  // Assigning between modules copies the value, not the buffer.
  b->scale = a->scale;
  a->scale = 0.5;
  EXPECT_EQ(static_cast<double>(b->scale), 0.05);
}

TEST(QuantizationConvert, ReluAndSequentialModels) {
  // An unfused ReLU keeps working on quantized tensors; a Sequential reaches the swapped modules.
  tensor::manual_seed(12);
  auto seq = nn::Sequential(q::QuantStub(), nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 4), q::DeQuantStub());
  seq->eval();
  const Tensor x = randn({10, 8});
  const Tensor y_float = seq->forward(x);
  q::prepare(*seq, q::default_qconfig());
  seq->forward(x);
  q::convert(*seq);
  EXPECT_NE(child<nn::quantized::LinearImpl>(*seq, "1"), nullptr);
  EXPECT_NE(child<nn::ReLUImpl>(*seq, "2"), nullptr);
  const Tensor y = seq->forward(x);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_LT((y - y_float).abs().max().item<double>(), 0.1 * y_float.abs().max().item<double>());
}

TEST(QuantizationConvert, DeQuantStubUnderANullOverrideStays) {
  // As PyTorch: a DeQuantStub without a QConfig is not converted, so the output stays quantized.
  auto net = make_net(2);
  const Tensor x = randn({4, 1, 8, 8});
  q::fuse_modules(*net, {{"conv", "bn", "relu"}});
  q::prepare(*net, q::default_qconfig(), {{"dequant", std::nullopt}});
  EXPECT_FALSE(child<q::DeQuantStubImpl>(*net, "dequant")->prepared());
  net->forward(x);
  q::convert(*net);
  auto* stub = child<q::DeQuantStubImpl>(*net, "dequant");
  ASSERT_NE(stub, nullptr);
  EXPECT_FALSE(stub->prepared());
  const Tensor y = net->forward(x);
  EXPECT_TRUE(y.is_quantized());
  EXPECT_EQ(y.q_scale(), static_cast<double>(child<nn::quantized::LinearImpl>(*net, "fc")->scale));
}

TEST(QuantizationConvert, Errors) {
  const Tensor x = randn({4, 1, 8, 8});
  {
    auto net = make_net(1);
    expect_error([&] { q::convert(*net); }, {"convert", "no observers", "prepare"});
  }
  {
    // Never calibrated: nothing changes.
    auto net = make_net(1);
    q::fuse_modules(*net, {{"conv", "bn", "relu"}});
    q::prepare(*net, q::default_qconfig());
    expect_error([&] { q::convert(*net); }, {"convert", "'quant' (QuantStub)", "seen no data"});
    EXPECT_EQ(q::observed_modules(*net).size(), 3u);
    EXPECT_NE(child<nn::intrinsic::ConvReLU2dImpl>(*net, "conv"), nullptr);
  }
  {
    // An unfused batch norm has no quantized module.
    auto net = make_net(1);
    q::prepare(*net, q::default_qconfig());
    net->forward(x);
    expect_error([&] { q::convert(*net); }, {"convert", "'bn' (BatchNorm2d)", "no quantized module", "fuse_modules"});
    EXPECT_FALSE(q::observed_modules(*net).empty());
    EXPECT_NE(child<nn::Conv2dImpl>(*net, "conv"), nullptr);
  }
  {
    // A dynamic QConfig in static convert.
    auto net = make_net(1);
    q::fuse_modules(*net, {{"conv", "bn", "relu"}});
    q::prepare(*net, q::default_dynamic_qconfig());
    net->forward(x);
    expect_error([&] { q::convert(*net); }, {"convert", "dynamic QConfig", "quantize_dynamic"});
  }
  {
    // Converting twice: the observers are gone.
    auto net = make_net(1);
    quantize(*net, {x});
    expect_error([&] { q::convert(*net); }, {"convert", "no observers"});
  }
  {
    nn::Sequential seq(nn::Conv2d(nn::Conv2dOptions(1, 2, 3).padding_mode(kReflect).padding(1)));
    seq->eval();
    q::prepare(*seq, q::default_qconfig());
    seq->forward(x);
    expect_error([&] { q::convert(*seq); }, {"convert", "'0' (Conv2d)", "padding_mode 'reflect'"});
  }
  {
    nn::Sequential seq{nn::ReLU()};
    expect_error([&] { q::quantize_dynamic(*seq); }, {"quantize_dynamic", "no Linear"});
  }
}

// Dynamic quantization: float in and out, each batch quantized from its own range; checked
// against dequantize -> float64 linear with the dequantized weight.
TEST(QuantizationConvert, QuantizeDynamicMatchesTheDequantizedReference) {
  tensor::manual_seed(21);
  struct Mlp : nn::Module {
    Mlp()
        : fc1(register_module("fc1", nn::Linear(12, 20))),
          relu(register_module("relu", nn::ReLU())),
          fc2(register_module("fc2", nn::Linear(20, 3))) {}
    Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))); }
    nn::Linear fc1;
    nn::ReLU relu;
    nn::Linear fc2;
  };
  auto net = std::make_shared<Mlp>();
  net->eval();
  const Tensor x = randn({7, 12});
  const Tensor y_float = net->forward(x);
  const Tensor w1 = net->fc1->weight.detach().clone(), b1 = net->fc1->bias.detach().clone();
  q::fuse_modules(*net, {{"fc1", "relu"}});
  const auto names = q::quantize_dynamic(*net);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1", "fc2"}));
  auto* d2 = child<nn::quantized::dynamic::LinearImpl>(*net, "fc2");
  ASSERT_NE(d2, nullptr);
  EXPECT_NE(child<nn::quantized::dynamic::LinearImpl>(*net, "fc1.0"), nullptr);
  const Tensor y = net->forward(x);

  // The reference, layer by layer, from the same float input of each layer.
  auto dyn_ref = [](const Tensor& in, const Tensor& qw, const Tensor& bias) {
    const auto qp = quantized::choose_qparams(in.min().item<double>(), in.max().item<double>(), 0, 255);
    const Tensor qin = quantize_per_tensor(in, std::get<0>(qp), std::get<1>(qp), kQUInt8);
    return linear(qin.dequantize().to(kFloat64), qw.dequantize().to(kFloat64), bias.to(kFloat64));
  };
  auto* d1 = child<nn::quantized::dynamic::LinearImpl>(*net, "fc1.0");
  const Tensor h_ref = relu(dyn_ref(x, d1->weight(), *d1->bias())).to(kFloat32);
  const Tensor h = net->fc1(x);
  EXPECT_TRUE(allclose(h.to(kFloat64), h_ref.to(kFloat64), 1e-5, 1e-5));
  const Tensor y_ref = dyn_ref(h, d2->weight(), *d2->bias());
  EXPECT_TRUE(allclose(y.to(kFloat64), y_ref, 1e-5, 1e-5));
  // And near the float model (8-bit weights and activations).
  EXPECT_LT((y - y_float).abs().max().item<double>(), 0.05 * y_float.abs().max().item<double>() + 0.02);
  // The quantized weight is the per-tensor symmetric one of the default dynamic QConfig.
  EXPECT_EQ(d1->weight().qscheme(), QScheme::PerTensorAffine);
  EXPECT_TRUE(d1->weight().dequantize().allclose(w1, 0, d1->weight().q_scale() / 2 + 1e-7));
  (void)b1;
}

// Note [Channels-last quantized max pooling]: the int8 convolutions' channels-last outputs are
// pooled in place; the integers equal those of the same tensor made contiguous.
TEST(QuantizationConvert, MaxPoolOfChannelsLastQuantizedTensorsMatchesContiguous) {
  tensor::manual_seed(31);
  for (ScalarType dt : {kQUInt8, kQInt8}) {
    const Tensor x = quantize_per_tensor(randn({2, 5, 9, 11}), 0.05, dt == kQUInt8 ? 128 : 0, dt);
    const Tensor cl = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    ASSERT_EQ(cl.stride(1), 1);
    struct Geometry {
      std::vector<int64_t> k, s, p, d;
      bool ceil;
    };
    for (const auto& g : std::vector<Geometry>{{{2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
                                               {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
                                               {{3, 2}, {2, 1}, {1, 0}, {2, 1}, true},
                                               {{2, 3}, {3, 2}, {0, 1}, {1, 1}, true}}) {
      const Tensor a = max_pool2d(cl, g.k, g.s, g.p, g.d, g.ceil);
      const Tensor b = max_pool2d(x, g.k, g.s, g.p, g.d, g.ceil);
      ASSERT_EQ(a.sizes(), b.sizes());
      EXPECT_EQ(a.stride(1), 1);  // channels-last in, channels-last out
      EXPECT_TRUE(a.int_repr().equal(b.int_repr()));
      EXPECT_EQ(a.q_scale(), 0.05);
      EXPECT_EQ(a.q_zero_point(), x.q_zero_point());
    }
  }
}
