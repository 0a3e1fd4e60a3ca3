// Whole networks quantized with the eager-mode workflow (issue 25, docs/quantization.md): the
// Fashion-MNIST CNN of the examples at batch 64, a ResNet-18-shaped network on 224x224 at batch
// 16 and an MLP (1024 -> 1024 x3 -> 10) at batch 64, each built from nn modules, fused,
// prepared, calibrated on random data and converted; float32 and int8 forward beside each other
// in milliseconds per batch; and a one-layer LSTM (256 -> 256, 64 steps, batch 32) in float32
// and after quantize_dynamic, the int8 case printing the ratio. Run: bench_ops qmodel
#include <tensor/nn/quantized.h>
#include <tensor/quantization.h>
#include <tensor/tensor.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;
namespace q = tensor::quantization;

namespace {

// ---- the Fashion-MNIST CNN (examples/quantize_fashion_mnist) ----
struct Cnn : nn::Module {
  Cnn()
      : quant(register_module("quant", q::QuantStub())),
        conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)))),
        relu1(register_module("relu1", nn::ReLU())),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        relu2(register_module("relu2", nn::ReLU())),
        fc1(register_module("fc1", nn::Linear(64 * 7 * 7, 128))),
        relu3(register_module("relu3", nn::ReLU())),
        fc2(register_module("fc2", nn::Linear(128, 10))),
        dequant(register_module("dequant", q::DeQuantStub())) {}
  Tensor forward(Tensor x) {
    x = quant(x);
    x = max_pool2d(relu1(conv1(x)), {2, 2});
    x = max_pool2d(relu2(conv2(x)), {2, 2});
    return dequant(fc2(relu3(fc1(x.flatten(1)))));
  }
  q::QuantStub quant;
  nn::Conv2d conv1;
  nn::ReLU relu1;
  nn::Conv2d conv2;
  nn::ReLU relu2;
  nn::Linear fc1;
  nn::ReLU relu3;
  nn::Linear fc2;
  q::DeQuantStub dequant;
};

// ---- a ResNet-18-shaped network ----
// Note [Residual add in the benchmark]: two variants of the residual add.
//   workflow   (qmodel_resnet18_224_b16_int8): as eager-mode PyTorch's quantizable ResNet,
//              the block adds through a FloatFunctional (`skip_add->add_relu(out, identity)`),
//              which prepare observes and convert turns into a QFunctional: the converted conv2,
//              then quantized::add_relu on the two int8 tensors. No hand work.
//   hand-fused (qmodel_resnet18_224_b16_int8_convadd): the block observes relu(out + identity)
//              with an nn::ReLU module, reads that observer's scale and zero point before
//              convert, and once its input is quantized runs the converted conv2's packed weights
//              through quantized::conv_add_relu: the convolution, the residual add and the ReLU
//              in one oneDNN primitive (what PyTorch's x86 backend fuses in FX mode).
// docs/quantization.md gives both figures.
nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

struct BasicBlock : nn::Module {
  BasicBlock(int64_t in, int64_t out, int64_t stride, bool hand_fused)
      : conv1(register_module("conv1", conv(in, out, 3, stride, 1))),
        bn1(register_module("bn1", nn::BatchNorm2d(out))),
        relu1(register_module("relu1", nn::ReLU())),
        conv2(register_module("conv2", conv(out, out, 3, 1, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(out))) {
    if (hand_fused)
      add_relu = register_module("add_relu", nn::ReLU());
    else
      skip_add = register_module("skip_add", nn::quantized::FloatFunctional());
    if (stride != 1 || in != out) {
      down_conv = register_module("down_conv", conv(in, out, 1, stride, 0));
      down_bn = register_module("down_bn", nn::BatchNorm2d(out));
    }
  }
  Tensor forward(const Tensor& x) {
    Tensor identity = down_conv ? down_bn(down_conv(x)) : x;
    if (skip_add) return skip_add->add_relu(bn2(conv2(relu1(bn1(conv1(x))))), identity);
    if (x.is_quantized()) {
      // conv2 (bn2 folded), the residual add and the ReLU in one oneDNN call.
      Tensor out = relu1(bn1(conv1(x)));
      auto* qconv2 = named_children()["conv2"]->as<nn::quantized::Conv2dImpl>();
      return quantized::conv_add_relu(out, qconv2->packed_params(), identity, add_scale, add_zero_point);
    }
    return add_relu(bn2(conv2(relu1(bn1(conv1(x))))) + identity);
  }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::ReLU relu1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::ReLU add_relu{nullptr};
  nn::quantized::FloatFunctional skip_add{nullptr};
  nn::Conv2d down_conv{nullptr};
  nn::BatchNorm2d down_bn{nullptr};
  double add_scale = 1.0;
  int64_t add_zero_point = 0;
};

struct ResNet18 : nn::Module {
  explicit ResNet18(bool hand_fused = false)
      : quant(register_module("quant", q::QuantStub())),
        conv1(register_module("conv1", conv(3, 64, 7, 2, 3))),
        bn1(register_module("bn1", nn::BatchNorm2d(64))),
        relu(register_module("relu", nn::ReLU())),
        fc(nullptr),
        dequant(nullptr) {
    const int64_t widths[] = {64, 128, 256, 512};
    int64_t in = 64;
    for (int s = 0; s < 4; ++s) {
      for (int b = 0; b < 2; ++b) {
        const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
        blocks.push_back(register_module("layer" + std::to_string(s + 1) + "_" + std::to_string(b),
                                         std::make_shared<BasicBlock>(in, widths[s], stride, hand_fused)));
        in = widths[s];
      }
    }
    fc = register_module("fc", nn::Linear(512, 1000));
    dequant = register_module("dequant", q::DeQuantStub());
  }
  Tensor forward(const Tensor& input) {
    Tensor x = max_pool2d(relu(bn1(conv1(quant(input)))), {3, 3}, {2, 2}, {1, 1});
    for (auto& b : blocks) x = b->forward(x);
    return dequant(fc(adaptive_avg_pool2d(x, {1, 1}).flatten(1)));
  }
  // Fusion groups: the stem, each block's conv+bn(+relu), the shortcuts.
  std::vector<std::vector<std::string>> fusion_groups() const {
    std::vector<std::vector<std::string>> g{{"conv1", "bn1", "relu"}};
    for (const auto& item : named_children()) {
      auto* b = item.value()->as<BasicBlock>();
      if (!b) continue;
      const std::string p = item.key() + ".";
      g.push_back({p + "conv1", p + "bn1", p + "relu1"});
      g.push_back({p + "conv2", p + "bn2"});
      if (b->down_conv) g.push_back({p + "down_conv", p + "down_bn"});
    }
    return g;
  }
  // Note [Residual add in the benchmark]: each block's add takes its observed ReLU's qparams.
  void set_add_qparams() {
    for (const auto& s : q::get_observer_state(*this)) {
      for (const auto& item : named_children()) {
        auto* b = item.value()->as<BasicBlock>();
        if (b && s.name == item.key() + ".add_relu") {
          b->add_scale = s.scale.item<double>();
          b->add_zero_point = s.zero_point.item<int64_t>();
        }
      }
    }
  }
  q::QuantStub quant;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::ReLU relu;
  std::vector<std::shared_ptr<BasicBlock>> blocks;
  nn::Linear fc;
  q::DeQuantStub dequant;
};

// ---- an MLP ----
struct Mlp : nn::Module {
  Mlp()
      : quant(register_module("quant", q::QuantStub())),
        fc1(register_module("fc1", nn::Linear(1024, 1024))),
        relu1(register_module("relu1", nn::ReLU())),
        fc2(register_module("fc2", nn::Linear(1024, 1024))),
        relu2(register_module("relu2", nn::ReLU())),
        fc3(register_module("fc3", nn::Linear(1024, 1024))),
        relu3(register_module("relu3", nn::ReLU())),
        fc4(register_module("fc4", nn::Linear(1024, 10))),
        dequant(register_module("dequant", q::DeQuantStub())) {}
  Tensor forward(const Tensor& x) { return dequant(fc4(relu3(fc3(relu2(fc2(relu1(fc1(quant(x))))))))); }
  q::QuantStub quant;
  nn::Linear fc1;
  nn::ReLU relu1;
  nn::Linear fc2;
  nn::ReLU relu2;
  nn::Linear fc3;
  nn::ReLU relu3;
  nn::Linear fc4;
  q::DeQuantStub dequant;
};

// Seconds per forward of `model` on `x` (float32, or int8 after fuse/prepare/calibrate/convert).
template <typename Model>
double model_seconds(std::shared_ptr<Model> model, const std::vector<std::vector<std::string>>& groups, const Tensor& x,
                     bool int8, int reps) {
  NoGradGuard no_grad;
  model->eval();
  if (int8) {
    q::fuse_modules(*model, groups);
    q::prepare(*model, q::default_per_channel_qconfig());
    for (int i = 0; i < 2; ++i) model->forward(randn(x.sizes()));
    model->forward(x);
    if constexpr (std::is_same_v<Model, ResNet18>) model->set_add_qparams();
    q::convert(*model);
  }
  return median_seconds([&] { Tensor y = model->forward(x); }, reps, 1, 1);
}

double cnn(bool int8) {
  return model_seconds(std::make_shared<Cnn>(), {{"conv1", "relu1"}, {"conv2", "relu2"}, {"fc1", "relu3"}},
                       rand({64, 1, 28, 28}), int8, 15);
}
double resnet18(bool int8, bool hand_fused = false) {
  auto m = std::make_shared<ResNet18>(hand_fused);
  return model_seconds(m, m->fusion_groups(), randn({16, 3, 224, 224}), int8, 3);
}
double mlp(bool int8) {
  return model_seconds(std::make_shared<Mlp>(), {{"fc1", "relu1"}, {"fc2", "relu2"}, {"fc3", "relu3"}},
                       randn({64, 1024}), int8, 15);
}

// ---- an LSTM: float32 against quantize_dynamic (nn::quantized::dynamic::LSTM) ----
// One layer, 256 -> 256, a sequence of 64 steps at batch 32, forward only (eval, no grad). The
// float32 case keeps its time so that the int8 case, run next, prints the ratio of the same run.
double& last_lstm_f32() {
  static double t = 0;
  return t;
}
double lstm(bool int8) {
  struct Net : nn::Module {
    Net() : lstm(register_module("lstm", nn::LSTM(nn::LSTMOptions(256, 256)))) {}
    Tensor forward(const Tensor& x) { return std::get<0>(lstm(x)); }
    nn::LSTM lstm;
  };
  tensor::manual_seed(0);
  auto net = std::make_shared<Net>();
  net->eval();
  NoGradGuard no_grad;
  if (int8) q::quantize_dynamic(*net);
  const Tensor x = randn({64, 32, 256});
  const double s = median_seconds([&] { Tensor y = net->forward(x); }, 15, 1, 2);
  if (!int8) {
    last_lstm_f32() = s;
  } else if (last_lstm_f32() > 0) {
    std::printf("  lstm T64 b32 256->256: dynamic int8 %.2f ms vs float32 %.2f ms: speedup %.2fx\n", s * 1e3,
                last_lstm_f32() * 1e3, last_lstm_f32() / s);
  }
  return s;
}

bench::Case ms_case(const char* name, std::function<double()> fn) {
  return bench::Case{name, "ms", 0, "(info)", std::move(fn)}.without_limit();
}

const bench::AddCases kQuantizedModelCases({
    ms_case("qmodel_fashion_cnn_b64_f32", [] { return cnn(false); }),
    ms_case("qmodel_fashion_cnn_b64_int8", [] { return cnn(true); }),
    ms_case("qmodel_resnet18_224_b16_f32", [] { return resnet18(false); }),
    ms_case("qmodel_resnet18_224_b16_int8", [] { return resnet18(true); }),
    ms_case("qmodel_resnet18_224_b16_int8_convadd", [] { return resnet18(true, /*hand_fused=*/true); }),
    ms_case("qmodel_mlp_b64_1024_f32", [] { return mlp(false); }),
    ms_case("qmodel_mlp_b64_1024_int8", [] { return mlp(true); }),
    ms_case("qmodel_lstm_t64_b32_256_f32", [] { return lstm(false); }),
    ms_case("qmodel_lstm_t64_b32_256_int8", [] { return lstm(true); }),
});

}  // namespace
