// nn::init, following torch/csrc/api/src/nn/init.cpp (libtorch 1.13).
#include "tensor/nn/init.h"

#include <cmath>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::nn::init {

namespace {

void check_defined(const Tensor& t, const char* op) { TENSOR_CHECK(t.defined(), "init::{}: the tensor is undefined", op); }

// Random numbers are drawn in float32 for half types (their own precision would bias the
// distribution's tails), in the tensor's dtype otherwise.
TensorOptions draw_options(const Tensor& t) {
  ScalarType d = t.dtype() == kFloat16 || t.dtype() == kBFloat16 ? kFloat32 : t.dtype();
  return TensorOptions(d).device(t.device());
}

void check_floating(const Tensor& t, const char* op) {
  check_defined(t, op);
  TENSOR_CHECK(t.is_floating_point(), "init::{}: the tensor must be floating point, got {}", op, t.describe());
}

double fan(const Tensor& t, FanMode mode, const char* op) {
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(t);
  (void)op;
  return static_cast<double>(mode == kFanIn ? fan_in : fan_out);
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity.kind()) {
    case Nonlinearity::Tanh: return 5.0 / 3.0;
    case Nonlinearity::ReLU: return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU: return std::sqrt(2.0 / (1 + param * param));
    case Nonlinearity::SELU: return 3.0 / 4.0;
    default: return 1.0;  // linear, conv*, conv_transpose*, sigmoid
  }
}

std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor) {
  check_defined(tensor, "_calculate_fan_in_and_fan_out");
  TENSOR_CHECK(tensor.dim() >= 2,
               "init: fan in and fan out can not be computed for a tensor with fewer than 2 dimensions, got {}",
               tensor.describe());
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

Tensor constant_(Tensor tensor, const Scalar& value) {
  check_defined(tensor, "constant_");
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}

Tensor zeros_(Tensor tensor) { return constant_(std::move(tensor), 0); }

Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1); }

Tensor eye_(Tensor tensor) {
  check_defined(tensor, "eye_");
  TENSOR_CHECK(tensor.dim() == 2, "init::eye_: only 2-d tensors are supported, got {}", tensor.describe());
  NoGradGuard no_grad;
  tensor.copy_(tensor::eye(tensor.size(0), tensor.size(1), TensorOptions(tensor.dtype()).device(tensor.device())));
  return tensor;
}

Tensor normal_(Tensor tensor, double mean, double std) {
  check_floating(tensor, "normal_");
  TENSOR_CHECK(std >= 0, "init::normal_: std must be non-negative, got {}", std);
  NoGradGuard no_grad;
  tensor.copy_(tensor::randn(tensor.sizes(), draw_options(tensor)) * std + mean);
  return tensor;
}

Tensor uniform_(Tensor tensor, double low, double high) {
  check_floating(tensor, "uniform_");
  TENSOR_CHECK(low <= high, "init::uniform_: expects low <= high, got low = {}, high = {}", low, high);
  NoGradGuard no_grad;
  tensor.copy_(tensor::rand(tensor.sizes(), draw_options(tensor)) * (high - low) + low);
  return tensor;
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  check_floating(tensor, "kaiming_uniform_");
  if (tensor.numel() == 0) return tensor;  // libtorch warns and leaves it
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(fan(tensor, mode, "kaiming_uniform_"));
  const double bound = std::sqrt(3.0) * std;  // U(-b, b) has std b / sqrt(3)
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  check_floating(tensor, "kaiming_normal_");
  if (tensor.numel() == 0) return tensor;
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(fan(tensor, mode, "kaiming_normal_"));
  return normal_(std::move(tensor), 0, std);
}

Tensor xavier_uniform_(Tensor tensor, double gain) {
  check_floating(tensor, "xavier_uniform_");
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double a = std::sqrt(3.0) * std;
  return uniform_(std::move(tensor), -a, a);
}

Tensor xavier_normal_(Tensor tensor, double gain) {
  check_floating(tensor, "xavier_normal_");
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return normal_(std::move(tensor), 0, std);
}

}  // namespace tensor::nn::init
