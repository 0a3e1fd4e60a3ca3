// libtorch twins of benchmarks/bench_quantized.cpp: the same shapes, parameters and harness, on
// libtorch's quantized ops (torch.ops.quantized.*, called through its dispatcher: the C++ API has
// no functions for them) with its default quantized engine (oneDNN in Debian's build, which has
// no FBGEMM).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

// Calls a quantized op through libtorch's dispatcher and returns its first output.
c10::IValue call_op(const char* name, const char* overload, std::vector<c10::IValue> args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  op.callBoxed(&args);
  return args.at(0);
}

torch::Tensor per_channel_weight(const torch::Tensor& w) {
  const int64_t out = w.size(0);
  auto scales = w.reshape({out, -1}).abs().amax(1).to(torch::kFloat64) / 127.0 + 1e-8;
  return torch::quantize_per_channel(w, scales, torch::zeros({out}, torch::kInt64), 0, torch::kQInt8);
}

double linear_f32() {
  torch_available();
  auto x = torch::randn({64, 1024}), w = torch::randn({1024, 1024}) * 0.03, b = torch::randn({1024});
  torch::NoGradGuard no_grad;
  return median_seconds([&] { auto y = torch::linear(x, w, b); }, 15, 20);
}
double linear_int8(const char* op, bool dynamic) {
  torch_available();
  auto x = torch::randn({64, 1024}), w = torch::randn({1024, 1024}) * 0.03, b = torch::randn({1024});
  c10::IValue packed = call_op("quantized::linear_prepack", "", {per_channel_weight(w), b});
  auto qx = torch::quantize_per_tensor(x, 0.03, 128, torch::kQUInt8);
  torch::NoGradGuard no_grad;
  if (dynamic) return median_seconds([&] { auto y = call_op(op, "", {x, packed, false}); }, 15, 20);
  return median_seconds([&] { auto y = call_op(op, "", {qx, packed, 0.05, int64_t{128}}); }, 15, 20);
}

double conv_f32(bool channels_last) {
  torch_available();
  auto x = torch::randn({16, 64, 56, 56}), w = torch::randn({64, 64, 3, 3}) * 0.05, b = torch::randn({64});
  if (channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  torch::NoGradGuard no_grad;
  return median_seconds([&] { auto y = torch::conv2d(x, w, b, 1, 1); }, 11);
}
double conv_int8(const char* op) {
  torch_available();
  auto x = torch::randn({16, 64, 56, 56}), w = torch::randn({64, 64, 3, 3}) * 0.05, b = torch::randn({64});
  const std::vector<int64_t> one{1, 1}, zero{0, 0};
  c10::IValue packed = call_op("quantized::conv2d_prepack", "", {per_channel_weight(w), b, one, one, one, int64_t{1}});
  c10::IValue pre =
      call_op("quantized::conv2d_prepack", "",
              {per_channel_weight(torch::randn({64, 64, 1, 1})), c10::IValue(), one, zero, one, int64_t{1}});
  // The input as a previous quantized conv leaves it (libtorch's are channels-last too).
  auto qx = call_op("quantized::conv2d", "new",
                    {torch::quantize_per_tensor(x, 0.03, 128, torch::kQUInt8), pre, 0.05, int64_t{128}})
                .toTensor();
  torch::NoGradGuard no_grad;
  return median_seconds([&] { auto y = call_op(op, "new", {qx, packed, 0.05, int64_t{128}}); }, 11);
}

TwinTable quantized_twins() {
  TwinTable t;
  t["linear_b64_1024_f32"] = linear_f32;
  t["linear_b64_1024_int8"] = [] { return linear_int8("quantized::linear", false); };
  t["linear_relu_b64_1024_int8"] = [] { return linear_int8("quantized::linear_relu", false); };
  t["linear_dynamic_b64_1024_int8"] = [] { return linear_int8("quantized::linear_dynamic", true); };
  t["qconv3x3_b16_64ch_56_f32"] = [] { return conv_f32(false); };
  t["qconv3x3_b16_64ch_56_f32_nhwc"] = [] { return conv_f32(true); };
  t["qconv3x3_b16_64ch_56_int8"] = [] { return conv_int8("quantized::conv2d"); };
  t["qconv3x3_relu_b16_64ch_56_int8"] = [] { return conv_int8("quantized::conv2d_relu"); };
  return t;
}
const AddTwins kQuantizedTwins(quantized_twins());

}  // namespace
}  // namespace bench
