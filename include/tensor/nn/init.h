// nn::init: in-place initializers, as libtorch's torch::nn::init. Each runs under no-grad,
// fills `tensor` in place and returns it.
#pragma once

#include <tuple>

#include "tensor/core/Tensor.h"
#include "tensor/nn/enum.h"

namespace tensor::nn::init {

/// The recommended gain for a nonlinearity: 1 (linear, conv, sigmoid), 5/3 (tanh), sqrt(2) (relu),
/// sqrt(2 / (1 + param^2)) (leaky relu with negative slope `param`), 3/4 (selu).
TENSOR_API double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
/// (fan_in, fan_out) = (size(1), size(0)) times the receptive field (product of dims 2..);
/// tensor::Error for fewer than 2 dims.
TENSOR_API std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor);

TENSOR_API Tensor constant_(Tensor tensor, const Scalar& value);
TENSOR_API Tensor zeros_(Tensor tensor);
TENSOR_API Tensor ones_(Tensor tensor);
/// The identity matrix (2-d tensors).
TENSOR_API Tensor eye_(Tensor tensor);
/// N(mean, std^2).
TENSOR_API Tensor normal_(Tensor tensor, double mean = 0, double std = 1);
/// U(low, high).
TENSOR_API Tensor uniform_(Tensor tensor, double low = 0, double high = 1);
/// U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a).
TENSOR_API Tensor kaiming_uniform_(Tensor tensor, double a = 0, FanMode mode = kFanIn,
                                   Nonlinearity nonlinearity = kLeakyReLU);
/// N(0, std^2) with std = gain / sqrt(fan).
TENSOR_API Tensor kaiming_normal_(Tensor tensor, double a = 0, FanMode mode = kFanIn,
                                  Nonlinearity nonlinearity = kLeakyReLU);
/// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
TENSOR_API Tensor xavier_uniform_(Tensor tensor, double gain = 1.0);
/// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
TENSOR_API Tensor xavier_normal_(Tensor tensor, double gain = 1.0);

}  // namespace tensor::nn::init
