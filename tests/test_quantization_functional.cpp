// nn::quantized::FloatFunctional and QFunctional (issue 25): the float methods and their
// observation, the quantized methods against float64 references (add/mul/cat exact, the scalar
// forms hand-computed), and a residual block (conv-bn-relu, conv-bn, skip add through a
// FloatFunctional, relu) fused, prepared, calibrated and converted, checked stage by stage
// against dequantize -> float64 op -> quantize and against the float model within a bound
// derived from the scales.
#include <gtest/gtest.h>

#include <tensor/nn/quantized.h>
#include <tensor/quantization.h>
#include <tensor/serialize.h>
#include <tensor/tensor.h>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
namespace q = tensor::quantization;
namespace nnq = tensor::nn::quantized;
using tensor::testing::expect_error;

namespace {

// The real values of a quantized tensor in float64, from its integers (dequantize() rounds to float32).
Tensor real_of(const Tensor& qt) {
  return (qt.int_repr().to(kFloat64) - static_cast<double>(qt.q_zero_point())) * qt.q_scale();
}

// clamp(nearbyint(real / scale) + zero_point) in float64 (ties to even), as int64.
Tensor requantize_ref(const Tensor& real, double scale, int64_t zero_point, double lo = 0, double hi = 255) {
  return (real / scale).round().add(static_cast<double>(zero_point)).clamp(lo, hi).to(kInt64);
}

int64_t max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kInt64) - b.to(kInt64)).abs().max().item<int64_t>();
}

template <typename T>
T* child(nn::Module& m, const std::string& name) {
  return m.named_modules()[name]->as<T>();
}

// QuantStub -> conv1-bn1-relu1 -> conv2-bn2 -> skip add (FloatFunctional) -> relu2 -> DeQuantStub.
struct ResBlock : nn::Module {
  ResBlock()
      : quant(register_module("quant", q::QuantStub())),
        conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(1)))),
        bn1(register_module("bn1", nn::BatchNorm2d(4))),
        relu1(register_module("relu1", nn::ReLU())),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(1)))),
        bn2(register_module("bn2", nn::BatchNorm2d(4))),
        skip_add(register_module("skip_add", nnq::FloatFunctional())),
        relu2(register_module("relu2", nn::ReLU())),
        dequant(register_module("dequant", q::DeQuantStub())) {}
  Tensor forward(const Tensor& x) {
    const Tensor h = quant(x);
    return dequant(relu2(skip_add->add(bn2(conv2(relu1(bn1(conv1(h))))), h)));
  }
  q::QuantStub quant;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::ReLU relu1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nnq::FloatFunctional skip_add;
  nn::ReLU relu2;
  q::DeQuantStub dequant;
};

void randomize_bn(nn::BatchNorm2dImpl& bn) {
  NoGradGuard no_grad;
  bn.running_mean.copy_(randn({4}) * 0.1);
  bn.running_var.copy_(rand({4}) + 0.5);
  bn.weight.copy_(rand({4}) + 0.5);
  bn.bias.copy_(randn({4}) * 0.1);
}

std::shared_ptr<ResBlock> make_block(uint64_t seed) {
  tensor::manual_seed(seed);
  auto net = std::make_shared<ResBlock>();
  randomize_bn(*net->bn1);
  randomize_bn(*net->bn2);
  net->eval();
  return net;
}

const std::vector<std::vector<std::string>> kGroups{{"conv1", "bn1", "relu1"}, {"conv2", "bn2"}};

}  // namespace

TEST(QuantizationFunctional, FloatFunctionalComputesInFloatAndIsObservedOncePrepared) {
  tensor::manual_seed(1);
  nnq::FloatFunctional ff;
  const Tensor a = randn({3, 4}), b = randn({4});
  EXPECT_TRUE(ff->add(a, b).equal(a + b));
  EXPECT_TRUE(ff->add_relu(a, b).equal(relu(a + b)));
  EXPECT_TRUE(ff->mul(a, b).equal(a * b));
  EXPECT_TRUE(ff->mul_relu(a, b).equal(relu(a * b)));
  EXPECT_TRUE(ff->cat({a, a * 2.0}, 1).equal(cat({a, a * 2.0}, 1)));
  EXPECT_TRUE(ff->add_scalar(a, 0.5).equal(a + 0.5));
  EXPECT_TRUE(ff->mul_scalar(a, -2.0).equal(a * -2.0));

  // Prepared inside a parent: the observer records add/mul/cat results, not the scalar forms.
  auto parent = std::make_shared<nn::Module>();
  parent->register_module("ff", ff);
  auto observed = q::prepare(*parent, q::default_qconfig());
  ASSERT_EQ(observed.size(), 1u);
  EXPECT_EQ(observed[0].name, "ff");
  auto* obs = dynamic_cast<q::MinMaxObserver*>(observed[0].activation_post_process.get());
  ASSERT_NE(obs, nullptr);
  ff->add_scalar(a, 100.0);
  ff->mul_scalar(a, 100.0);
  EXPECT_GT(obs->min_val.item<double>(), obs->max_val.item<double>());  // nothing seen yet
  const Tensor s = ff->add(a, b);
  EXPECT_EQ(obs->min_val.item<double>(), s.min().item<double>());
  EXPECT_EQ(obs->max_val.item<double>(), s.max().item<double>());
  const Tensor m = ff->mul(a, b * 10.0);
  EXPECT_EQ(obs->max_val.item<double>(), std::max(s.max().item<double>(), m.max().item<double>()));
  // PyTorch's state_dict key of the observer.
  auto sd = parent->state_dict();
  EXPECT_TRUE(sd.contains("ff.activation_post_process.min_val"));
}

TEST(QuantizationFunctional, QFunctionalMatchesFloat64References) {
  tensor::manual_seed(2);
  const double s = 0.07;
  const int64_t z = 37;
  nnq::QFunctional qf(s, z);
  const Tensor qa = quantize_per_tensor(randn({5, 6}), 0.03, 120, kQUInt8);
  const Tensor qb = quantize_per_tensor(randn({6}) * 2.0, 0.05, 90, kQUInt8);
  const Tensor ra = real_of(qa), rb = real_of(qb);

  auto check = [&](const Tensor& got, const Tensor& want_ints) {
    ASSERT_TRUE(got.is_quantized());
    EXPECT_EQ(got.q_scale(), s);
    EXPECT_EQ(got.q_zero_point(), z);
    EXPECT_TRUE(got.int_repr().to(kInt64).equal(want_ints));
  };
  check(qf->add(qa, qb), requantize_ref(ra + rb, s, z));
  check(qf->add_relu(qa, qb), requantize_ref(relu(ra + rb), s, z));
  check(qf->mul(qa, qb), requantize_ref(ra * rb, s, z));
  check(qf->mul_relu(qa, qb), requantize_ref(relu(ra * rb), s, z));
  check(qf->cat({qa, qa}, 0), requantize_ref(cat({ra, ra}, 0), s, z));

  // state_dict: the output's parameters, PyTorch's keys; load_state_dict restores them.
  auto sd = qf->state_dict();
  ASSERT_TRUE(sd.contains("scale") && sd.contains("zero_point"));
  EXPECT_EQ(sd["scale"].item<double>(), s);
  EXPECT_EQ(sd["zero_point"].item<int64_t>(), z);
  nnq::QFunctional other;
  other->load_state_dict({{"scale", sd["scale"]}, {"zero_point", sd["zero_point"]}});
  EXPECT_TRUE(other->add(qa, qb).int_repr().equal(qf->add(qa, qb).int_repr()));
}

TEST(QuantizationFunctional, QFunctionalScalarFormsKeepOrMirrorTheIntegers) {
  // quint8 integers 0, 10, 100, 255 with scale 0.5, zero point 100: reals -50, -45, 0, 77.5.
  const Tensor ints = tensor::tensor(std::vector<int64_t>{0, 10, 100, 255}).to(kUInt8);
  const Tensor qa = _make_per_tensor_quantized_tensor(ints, 0.5, 100);
  nnq::QFunctional qf;

  // mul_scalar by 3: the same integers, scale 1.5.
  Tensor r = qf->mul_scalar(qa, 3.0);
  EXPECT_TRUE(r.int_repr().equal(ints));
  EXPECT_EQ(r.q_scale(), 1.5);
  EXPECT_EQ(r.q_zero_point(), 100);
  // by -2: mirrored integers 255 - q, zero point 155, scale 1: reals 100, 90, 0, -155.
  r = qf->mul_scalar(qa, -2.0);
  EXPECT_TRUE(r.int_repr().to(kInt64).equal(tensor::tensor(std::vector<int64_t>{255, 245, 155, 0})));
  EXPECT_EQ(r.q_scale(), 1.0);
  EXPECT_EQ(r.q_zero_point(), 155);
  EXPECT_TRUE(real_of(r).equal(real_of(qa) * -2.0));
  // by 0: zeros.
  r = qf->mul_scalar(qa, 0.0);
  EXPECT_TRUE(real_of(r).equal(zeros({4}, kFloat64)));
  // qint8 mirrors around -1: q' = -1 - q.
  const Tensor qi =
      _make_per_tensor_quantized_tensor(tensor::tensor(std::vector<int64_t>{-128, 0, 127}).to(kInt8), 0.1, 3);
  r = qf->mul_scalar(qi, -1.0);
  EXPECT_TRUE(r.int_repr().to(kInt64).equal(tensor::tensor(std::vector<int64_t>{127, -1, -128})));
  EXPECT_EQ(r.q_zero_point(), -4);

  // add_scalar 10.2: c_q = round(10.2 / 0.5) = 20, zero point 80, the same integers: reals + 10.
  r = qf->add_scalar(qa, 10.2);
  EXPECT_TRUE(r.int_repr().equal(ints));
  EXPECT_EQ(r.q_scale(), 0.5);
  EXPECT_EQ(r.q_zero_point(), 80);
  // add_scalar 100: c_q = 200, z - c_q = -100 < 0: zero point 0, scale (255 + 100) / 255 * 0.5;
  // the reals (q + 100) * 0.5 = 50, 55, 100, 177.5 requantized in float64.
  r = qf->add_scalar(qa, 100.0);
  const double s2 = 355.0 / 255.0 * 0.5;
  EXPECT_DOUBLE_EQ(r.q_scale(), s2);
  EXPECT_EQ(r.q_zero_point(), 0);
  std::vector<int64_t> want;
  for (double v : {50.0, 55.0, 100.0, 177.5}) want.push_back(static_cast<int64_t>(std::nearbyint(v / r.q_scale())));
  EXPECT_TRUE(r.int_repr().to(kInt64).equal(tensor::tensor(want)));
  EXPECT_EQ(want.back(), 255);
  // add_scalar -100: z - c_q = 300 > 255: zero point 255, scale (300 - 0) / 255 * 0.5; reals -150 .. -22.5.
  r = qf->add_scalar(qa, -100.0);
  EXPECT_EQ(r.q_zero_point(), 255);
  EXPECT_DOUBLE_EQ(r.q_scale(), 300.0 / 255.0 * 0.5);
  EXPECT_EQ(r.int_repr()[0].item<int64_t>(), 0);
  EXPECT_LE(std::abs(real_of(r)[3].item<double>() - (-22.5)), r.q_scale() / 2);

  expect_error([&] { qf->add_scalar(randn({2}), 1.0); }, {"add_scalar", "per-tensor quantized"});
}

TEST(QuantizationFunctional, ResidualBlockConvertsAndMatchesStepByStepReferences) {
  auto net = make_block(3);
  const Tensor x = randn({8, 4, 6, 6});
  NoGradGuard no_grad;
  q::fuse_modules(*net, kGroups);
  auto observed = q::prepare(*net, q::default_per_channel_qconfig());
  std::vector<std::string> names;
  for (const auto& o : observed) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"quant", "conv1", "conv2", "skip_add", "relu2"}));
  net->forward(randn({8, 4, 6, 6}));
  net->forward(x);
  q::convert(*net);

  // The tree holds a QFunctional; the block's own member now sends its calls there.
  auto* qf = child<nnq::QFunctionalImpl>(*net, "skip_add");
  ASSERT_NE(qf, nullptr);
  EXPECT_EQ(net->skip_add->redirect().get(), qf);
  auto sd = net->state_dict();
  EXPECT_TRUE(sd.contains("skip_add.scale") && sd.contains("skip_add.zero_point"));
  EXPECT_EQ(sd["skip_add.scale"].item<double>(), static_cast<double>(qf->scale));

  auto* quant = child<q::QuantizeImpl>(*net, "quant");
  auto* qc1 = child<nnq::ConvReLU2dImpl>(*net, "conv1");
  auto* qc2 = child<nnq::Conv2dImpl>(*net, "conv2");
  ASSERT_TRUE(quant && qc1 && qc2);
  const Tensor qx = net->quant(x);
  EXPECT_TRUE(qx.int_repr().equal(
      quantize_per_tensor(x, quant->scale.item<double>(), quant->zero_point.item<int64_t>(), kQUInt8).int_repr()));
  // conv1 + relu, conv2: within one integer step of the float64 reference (Note [Requantization in oneDNN]).
  const Tensor q1 = net->conv1(qx);
  const Tensor ref1 = requantize_ref(
      relu(conv2d(real_of(qx), qc1->weight().dequantize().to(kFloat64), qc1->bias()->to(kFloat64), 1, 1)), qc1->scale,
      qc1->zero_point);
  EXPECT_LE(max_abs_diff(q1.int_repr(), ref1), 1);
  const Tensor q2 = net->conv2(q1);
  const Tensor ref2 =
      requantize_ref(conv2d(real_of(q1), qc2->weight().dequantize().to(kFloat64), qc2->bias()->to(kFloat64), 1, 1),
                     qc2->scale, qc2->zero_point);
  EXPECT_LE(max_abs_diff(q2.int_repr(), ref2), 1);
  EXPECT_GT((q2.int_repr().to(kInt64) == ref2).to(kFloat64).mean().item<double>(), 0.95);
  // The skip add through the block's member: exact against the float64 reference.
  const Tensor qs = net->skip_add->add(q2, qx);
  EXPECT_EQ(qs.q_scale(), static_cast<double>(qf->scale));
  EXPECT_EQ(qs.q_zero_point(), static_cast<int64_t>(qf->zero_point));
  EXPECT_TRUE(qs.int_repr().to(kInt64).equal(requantize_ref(real_of(q2) + real_of(qx), qf->scale, qf->zero_point)));
  // relu keeps the parameters: max(q, zero_point); the whole forward is its DeQuantize.
  const Tensor qr = net->relu2(qs);
  EXPECT_TRUE(qr.int_repr().to(kInt64).equal(qs.int_repr().to(kInt64).clamp_min(qs.q_zero_point())));
  EXPECT_TRUE(net->forward(x).equal(qr.dequantize()));
}

// The float model and the converted one agree within a bound derived from the scales (as
// tests/test_quantization_convert.cpp's, with K = 36 inputs per output of a 3x3 conv over 4 channels):
//   e_in  = s_x / 2                                                    (quantizing the input)
//   e_c1  = max_c (s_w1[c] / 2 * K (max|x| + e_in) + e_in |w1_c|_1) + 1.5 s_c1
//   e_c2  = max_c (s_w2[c] / 2 * K (max|h1| + e_c1) + e_c1 |w2_c|_1) + 1.5 s_c2
//   e_add = e_c2 + e_in + s_add / 2                                    (the add rounds once, exactly)
// (weight rounding bounded by the largest input, input error through the weights, output rounding
// and the kernels' float32 step; relu does not grow errors; calibration covered x, so nothing clips).
TEST(QuantizationFunctional, ResidualBlockWithinTheQuantizationErrorBoundOfTheFloatModel) {
  auto net = make_block(5);
  const Tensor x = randn({16, 4, 6, 6});
  NoGradGuard no_grad;
  const Tensor y_float = net->forward(x).to(kFloat64);
  const Tensor h1_float = relu(net->bn1(net->conv1(x)));
  q::fuse_modules(*net, kGroups);
  const Tensor w1 = child<nn::intrinsic::ConvReLU2dImpl>(*net, "conv1")->conv->weight.detach().to(kFloat64);
  const Tensor w2 = child<nn::Conv2dImpl>(*net, "conv2")->weight.detach().to(kFloat64);
  q::prepare(*net, q::default_per_channel_qconfig());
  net->forward(randn({16, 4, 6, 6}));
  net->forward(x);
  q::convert(*net);
  const Tensor y_q = net->forward(x).to(kFloat64);

  auto* quant = child<q::QuantizeImpl>(*net, "quant");
  auto* qc1 = child<nnq::ConvReLU2dImpl>(*net, "conv1");
  auto* qc2 = child<nnq::Conv2dImpl>(*net, "conv2");
  auto* qf = child<nnq::QFunctionalImpl>(*net, "skip_add");
  const double K = 36;
  const double e_in = quant->scale.item<double>() / 2;
  const double e_c1 =
      (qc1->weight().q_per_channel_scales().to(kFloat64) / 2 * K * (x.abs().max().item<double>() + e_in) +
       e_in * w1.abs().sum({1, 2, 3}))
          .max()
          .item<double>() +
      1.5 * static_cast<double>(qc1->scale);
  const double e_c2 =
      (qc2->weight().q_per_channel_scales().to(kFloat64) / 2 * K * (h1_float.abs().max().item<double>() + e_c1) +
       e_c1 * w2.abs().sum({1, 2, 3}))
          .max()
          .item<double>() +
      1.5 * static_cast<double>(qc2->scale);
  const double e_add = e_c2 + e_in + static_cast<double>(qf->scale) / 2;
  const double err = (y_q - y_float).abs().max().item<double>();
  const double spread = (y_float.max() - y_float.min()).item<double>();
  std::printf("residual block float vs int8: max |error| %.4f, bound %.4f, output spread %.3f\n", err, e_add, spread);
  EXPECT_LE(err, e_add);
  EXPECT_LT(e_add, 0.5 * spread);  // the bound says something
}

TEST(QuantizationFunctional, ConvertedBlockSavesAndLoads) {
  auto net = make_block(7);
  const Tensor x = randn({4, 4, 6, 6});
  NoGradGuard no_grad;
  q::fuse_modules(*net, kGroups);
  q::prepare(*net, q::default_per_channel_qconfig());
  net->forward(x);
  q::convert(*net);
  const Tensor y = net->forward(x);
  const std::string path = ::testing::TempDir() + "q8_functional_block.safetensors";
  tensor::save(net, path);

  // A skeleton calibrated on other data: every parameter differs until loaded.
  auto other = make_block(8);
  q::fuse_modules(*other, kGroups);
  q::prepare(*other, q::default_per_channel_qconfig());
  other->forward(randn({4, 4, 6, 6}) * 3.0);
  q::convert(*other);
  EXPECT_FALSE(other->forward(x).equal(y));
  tensor::load(other, path);
  EXPECT_TRUE(other->forward(x).equal(y));
  std::remove(path.c_str());
}

// Note [Converting for loading]: a fresh float model, prepared and converted without any
// calibration batch, takes a converted model's file and computes the same bits.
TEST(QuantizationFunctional, UncalibratedSkeletonLoadsAConvertedModel) {
  auto net = make_block(9);
  const Tensor x = randn({4, 4, 6, 6});
  NoGradGuard no_grad;
  q::fuse_modules(*net, kGroups);
  q::prepare(*net, q::get_default_qconfig("x86"));  // histogram activations, per-channel weights
  net->forward(randn({4, 4, 6, 6}));
  net->forward(x);
  q::convert(*net);
  const Tensor y = net->forward(x);
  const std::string path = ::testing::TempDir() + "q8_functional_uncalibrated.safetensors";
  tensor::save(net, path);

  auto skeleton = make_block(10);  // other float weights
  q::fuse_modules(*skeleton, kGroups);
  q::prepare(*skeleton, q::get_default_qconfig("x86"));
  // Without the option, convert still refuses observers that saw nothing.
  expect_error([&] { q::convert(*skeleton); }, {"convert", "has seen no data", "allow_uncalibrated"});
  q::convert(*skeleton, q::ConvertOptions().allow_uncalibrated(true));
  // Placeholders until the load: scale 1, zero point 0.
  auto* qf = child<nnq::QFunctionalImpl>(*skeleton, "skip_add");
  ASSERT_NE(qf, nullptr);
  EXPECT_EQ(static_cast<double>(qf->scale), 1.0);
  EXPECT_EQ(static_cast<int64_t>(qf->zero_point), 0);
  EXPECT_FALSE(skeleton->forward(x).equal(y));
  tensor::load(skeleton, path);
  EXPECT_TRUE(skeleton->forward(x).equal(y));
  EXPECT_EQ(static_cast<double>(qf->scale), static_cast<double>(child<nnq::QFunctionalImpl>(*net, "skip_add")->scale));
  auto* a = child<nnq::ConvReLU2dImpl>(*net, "conv1");
  auto* b = child<nnq::ConvReLU2dImpl>(*skeleton, "conv1");
  EXPECT_TRUE(b->weight().int_repr().equal(a->weight().int_repr()));
  EXPECT_TRUE(b->weight().q_per_channel_scales().equal(a->weight().q_per_channel_scales()));
  std::remove(path.c_str());
}
