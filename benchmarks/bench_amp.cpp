// Mixed precision: one training step (forward, backward, optimizer step) in float32 against the
// same step under AutocastGuard(kCPU, kBFloat16) with a GradScaler, for an MLP, a small CNN and a
// transformer encoder layer. Each bf16 case prints its speedup over the float32 case before it.
// Run: build/benchmarks/bench_ops amp_   (figures in docs/amp.md)
#include <tensor/amp.h>
#include <tensor/tensor.h>

#include <cstdio>
#include <memory>

#include "harness.h"
#include "models.h"

namespace {

using tensor::Tensor;
namespace nn = tensor::nn;
namespace F = tensor::nn::functional;

// Seconds per training step of `forward` (which returns the loss) with autocast bf16 on or off.
template <class Forward>
double train_step_seconds(std::vector<Tensor> params, bool bf16, Forward forward, int reps = 9) {
  tensor::optim::SGD opt(params, tensor::optim::SGDOptions(0.01).momentum(0.9));
  tensor::amp::GradScaler scaler(tensor::amp::GradScalerOptions().enabled(bf16));
  return bench::median_seconds([&] {
    opt.zero_grad();
    Tensor loss;
    {
      tensor::autocast::AutocastGuard ac(tensor::kCPU, tensor::kBFloat16, /*enabled=*/bf16);
      loss = forward();
    }
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
  }, reps);
}

// Each float32 case stores its time here; the bf16 case after it prints the ratio.
double& last_f32() {
  static double t = 0;
  return t;
}
double f32_case(double seconds) {
  last_f32() = seconds;
  return seconds;
}
double bf16_case(const char* what, double seconds) {
  if (last_f32() > 0)
    std::printf("  %s: bf16 autocast step %.2f ms vs float32 %.2f ms: speedup %.2fx\n", what, seconds * 1e3,
                last_f32() * 1e3, last_f32() / seconds);
  return seconds;
}

// ---- MLP: TARGETS.md's 784-1024-1024-10 at batch 128 ----
double mlp(bool bf16) {
  tensor::manual_seed(0);
  auto net = std::make_shared<bench::MLP>();
  Tensor x = tensor::randn({bench::MLP::kBatch, bench::MLP::kIn});
  Tensor y = tensor::randint(bench::MLP::kClasses, {bench::MLP::kBatch}, tensor::TensorOptions(tensor::kInt64));
  return train_step_seconds(net->parameters(), bf16, [&] { return F::cross_entropy(net->forward(x), y); });
}

// ---- a small CNN: two 3x3 convolutions (3->32->64) with pooling on 32x32 images, batch 32 ----
struct SmallCNN : nn::Module {
  SmallCNN()
      : c1(register_module("c1", nn::Conv2d(nn::Conv2dOptions(3, 32, 3).padding(1)))),
        c2(register_module("c2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc(register_module("fc", nn::Linear(64 * 8 * 8, 10))) {}
  Tensor forward(const Tensor& x) {
    Tensor h = F::max_pool2d(tensor::relu(c1(x)), F::MaxPool2dFuncOptions(2));
    h = F::max_pool2d(tensor::relu(c2(h)), F::MaxPool2dFuncOptions(2));
    return fc(h.flatten(1));
  }
  nn::Conv2d c1, c2;
  nn::Linear fc;
};
double cnn(bool bf16) {
  tensor::manual_seed(0);
  auto net = std::make_shared<SmallCNN>();
  Tensor x = tensor::randn({32, 3, 32, 32});
  Tensor y = tensor::randint(10, {32}, tensor::TensorOptions(tensor::kInt64));
  return train_step_seconds(net->parameters(), bf16, [&] { return F::cross_entropy(net->forward(x), y); }, 7);
}

// ---- a transformer encoder layer: d_model 256, 4 heads, feed-forward 1024, seq 128, batch 8 ----
double transformer(bool bf16) {
  tensor::manual_seed(0);
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(256, 4).dim_feedforward(1024).dropout(0.0));
  Tensor x = tensor::randn({128, 8, 256});
  return train_step_seconds(layer->parameters(), bf16, [&] { return layer(x).pow(2).mean(); }, 7);
}

const bench::AddCases kAmpCases({
    {"amp_mlp_f32", "ms", 0, "MLP 784-1024-1024-10, batch 128, train step", [] { return f32_case(mlp(false)); }},
    {"amp_mlp_bf16", "ms", 0, "same, autocast bf16 + GradScaler", [] { return bf16_case("mlp", mlp(true)); }},
    {"amp_cnn_f32", "ms", 0, "CNN conv3x3 3-32-64 + pool + fc, 32x32, batch 32", [] { return f32_case(cnn(false)); }},
    {"amp_cnn_bf16", "ms", 0, "same, autocast bf16 + GradScaler", [] { return bf16_case("cnn", cnn(true)); }},
    {"amp_transformer_f32", "ms", 0, "encoder layer d=256, 4 heads, ff 1024, seq 128, batch 8",
     [] { return f32_case(transformer(false)); }},
    {"amp_transformer_bf16", "ms", 0, "same, autocast bf16 + GradScaler",
     [] { return bf16_case("transformer", transformer(true)); }},
});

}  // namespace
