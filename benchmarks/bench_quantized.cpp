// Quantized (int8, oneDNN) linear and convolution beside their float32 twins in libtensor
// (issue 25, docs/quantization.md "Kernels"): an MLP layer at batch 64, 1024 -> 1024, and a
// ResNet-like 3x3 convolution, 64 -> 64 channels, 56x56, batch 16, padding 1. The int8 figures
// are in GOP/s of the same multiply-adds (2 * MACs) and have no share of the fp32 FMA peak
// (VNNI int8 units; Note [Case work] in harness.h); then quantize, dequantize and quantized add
// in milliseconds per call. Run: bench_ops quantized
#include <tensor/nn/quantized.h>
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

constexpr double kLinearFlops = 2.0 * 64 * 1024 * 1024;
constexpr double kConvFlops = 2.0 * 16 * 64 * 64 * 9 * 56 * 56;

Tensor per_channel_weight(const Tensor& w) {
  const int64_t out = w.size(0);
  Tensor scales = w.reshape({out, -1}).abs().amax(1).to(kFloat64) / 127.0 + 1e-8;
  return quantize_per_channel(w, scales, zeros({out}, TensorOptions().dtype(kInt64)), 0, kQInt8);
}

double linear_f32() {
  Tensor x = randn({64, 1024}), w = randn({1024, 1024}) * 0.03, b = randn({1024});
  return median_seconds([&] { Tensor y = linear(x, w, b); }, 15, 20);
}
double linear_int8(bool relu) {
  Tensor x = randn({64, 1024}), w = randn({1024, 1024}) * 0.03, b = randn({1024});
  auto packed = quantized::linear_prepack(per_channel_weight(w), b);
  Tensor qx = quantize_per_tensor(x, 0.03, 128, kQUInt8);
  return median_seconds(
      [&] {
        Tensor y = relu ? quantized::linear_relu(qx, *packed, 0.05, 128) : quantized::linear(qx, *packed, 0.05, 128);
      },
      15, 20);
}
double linear_dynamic() {
  Tensor x = randn({64, 1024}), w = randn({1024, 1024}) * 0.03, b = randn({1024});
  auto packed = quantized::linear_prepack(per_channel_weight(w), b);
  return median_seconds([&] { Tensor y = quantized::linear_dynamic(x, *packed); }, 15, 20);
}

double conv_f32(bool channels_last) {
  Tensor x = randn({16, 64, 56, 56}), w = randn({64, 64, 3, 3}) * 0.05, b = randn({64});
  if (channels_last) x = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  return median_seconds([&] { Tensor y = conv2d(x, w, b, 1, 1); }, 11);
}
double conv_int8(bool relu) {
  Tensor x = randn({16, 64, 56, 56}), w = randn({64, 64, 3, 3}) * 0.05, b = randn({64});
  auto packed = quantized::conv_prepack(per_channel_weight(w), b, {1}, {1}, {1}, 1);
  // A channels-last quantized input, as the previous quantized conv of a network leaves it.
  Tensor qx = quantized::conv(
      quantize_per_tensor(x, 0.03, 128, kQUInt8),
      *quantized::conv_prepack(per_channel_weight(randn({64, 64, 1, 1})), std::nullopt, {1}, {0}, {1}, 1), 0.05, 128);
  return median_seconds(
      [&] { Tensor y = relu ? quantized::conv_relu(qx, *packed, 0.05, 128) : quantized::conv(qx, *packed, 0.05, 128); },
      11);
}

// Quantize / dequantize of 16M float32 elements (a [16, 64, 128, 128] activation) and the
// quantized add of two such tensors, contiguous, and of two channels-last [16, 64, 56, 56]
// conv outputs (a ResNet block's skip add); milliseconds per call.
double quantize_16m() {
  Tensor x = randn({16, 64, 128, 128});
  return median_seconds([&] { Tensor q = quantize_per_tensor(x, 0.02, 128, kQUInt8); }, 11);
}
double dequantize_16m() {
  Tensor q = quantize_per_tensor(randn({16, 64, 128, 128}), 0.02, 128, kQUInt8);
  return median_seconds([&] { Tensor y = q.dequantize(); }, 11);
}
double qadd_16m(bool relu) {
  Tensor a = quantize_per_tensor(randn({16, 64, 128, 128}), 0.02, 128, kQUInt8);
  Tensor b = quantize_per_tensor(randn({16, 64, 128, 128}), 0.03, 120, kQUInt8);
  return median_seconds([&] { Tensor y = relu ? quantized::add_relu(a, b, 0.04, 0) : quantized::add(a, b, 0.04, 128); },
                        11);
}
double qadd_relu_nhwc() {
  auto id = quantized::conv_prepack(per_channel_weight(randn({64, 64, 1, 1})), std::nullopt, {1}, {0}, {1}, 1);
  Tensor a = quantized::conv(quantize_per_tensor(randn({16, 64, 56, 56}), 0.03, 128, kQUInt8), *id, 0.05, 128);
  Tensor b = quantized::conv(quantize_per_tensor(randn({16, 64, 56, 56}), 0.03, 128, kQUInt8), *id, 0.04, 120);
  return median_seconds([&] { Tensor y = quantized::add_relu(a, b, 0.06, 0); }, 11);
}
bench::Case ms_case(const char* name, std::function<double()> fn) {
  return bench::Case{name, "ms", 0, "(info)", std::move(fn)}.without_limit();
}

// An "(info)" case in GFLOP/s; int8 ones have no fp32 FMA share (Note [Case work]).
bench::Case info_case(const char* name, double flops, std::function<double()> fn, bool int8) {
  bench::Case c;
  c.name = name;
  c.unit = "GFLOP/s";
  c.work = flops;
  c.goal = "(info)";
  c.ours = std::move(fn);
  c.no_limit = int8;
  return c;
}

const bench::AddCases kQuantizedCases({
    info_case(
        "linear_b64_1024_f32", kLinearFlops, [] { return linear_f32(); }, false),
    info_case(
        "linear_b64_1024_int8", kLinearFlops, [] { return linear_int8(false); }, true),
    info_case(
        "linear_relu_b64_1024_int8", kLinearFlops, [] { return linear_int8(true); }, true),
    info_case(
        "linear_dynamic_b64_1024_int8", kLinearFlops, [] { return linear_dynamic(); }, true),
    info_case(
        "qconv3x3_b16_64ch_56_f32", kConvFlops, [] { return conv_f32(false); }, false),
    info_case(
        "qconv3x3_b16_64ch_56_f32_nhwc", kConvFlops, [] { return conv_f32(true); }, false),
    info_case(
        "qconv3x3_b16_64ch_56_int8", kConvFlops, [] { return conv_int8(false); }, true),
    info_case(
        "qconv3x3_relu_b16_64ch_56_int8", kConvFlops, [] { return conv_int8(true); }, true),
    ms_case("quantize_per_tensor_16m_quint8", [] { return quantize_16m(); }),
    ms_case("dequantize_16m_quint8", [] { return dequantize_16m(); }),
    ms_case("qadd_16m_quint8", [] { return qadd_16m(false); }),
    ms_case("qadd_relu_16m_quint8", [] { return qadd_16m(true); }),
    ms_case("qadd_relu_b16_64ch_56_nhwc", [] { return qadd_relu_nhwc(); }),
});

}  // namespace
