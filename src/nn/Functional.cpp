// nn::functional layers and activations, composed of public differentiable ops.
#include "tensor/nn/functional.h"

#include <cmath>

#include "src/core/Check.h"
#include "src/cpu/Eltwise.h"
#include "tensor/autograd/autograd.h"
#include "tensor/linalg.h"
#include "tensor/ops.h"

namespace tensor::nn {


namespace functional {

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  TENSOR_CHECK(input.defined() && weight.defined(), "linear: input and weight must be defined");
  TENSOR_CHECK(weight.dim() == 2, "linear: weight must be 2-d [out_features, in_features], got {}", weight.describe());
  TENSOR_CHECK(input.dim() >= 1 && input.size(-1) == weight.size(1),
               "linear: input {} does not match weight {}: the input's last dim must equal in_features = {}",
               input.describe(), weight.describe(), weight.size(1));
  TENSOR_CHECK(input.dtype() == weight.dtype(), "linear: input {} and weight {} must have the same dtype",
               input.describe(), weight.describe());
  if (bias.defined()) {
    TENSOR_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0),
                 "linear: bias must be 1-d with out_features = {} elements, got {}", weight.size(0), bias.describe());
    TENSOR_CHECK(bias.dtype() == weight.dtype(), "linear: bias {} and weight {} must have the same dtype",
                 bias.describe(), weight.describe());
  }
  return tensor::linear(input, weight, bias);  // oneDNN with the bias fused
}

Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options) {
  TENSOR_CHECK(input.defined() && weight.defined(), "embedding: input and weight must be defined");
  TENSOR_CHECK(weight.dim() == 2, "embedding: weight must be 2-d [num_embeddings, embedding_dim], got {}",
               weight.describe());
  TENSOR_CHECK(is_integral(input.dtype(), /*include_bool=*/false),
               "embedding: indices must be an integer tensor (int64 or int32), got {}", input.describe());
  TENSOR_CHECK(!options.max_norm().has_value(), "embedding: max_norm is not supported yet");
  TENSOR_CHECK(!options.scale_grad_by_freq(), "embedding: scale_grad_by_freq is not supported yet");
  TENSOR_CHECK(!options.sparse(), "embedding: sparse gradients are not supported yet");
  const int64_t n = weight.size(0);
  Tensor idx = input.dtype() == kInt64 ? input.flatten() : input.flatten().to(kInt64);
  Tensor rows = weight.index_select(0, idx);
  if (options.padding_idx().has_value()) {
    int64_t pad = *options.padding_idx();
    TENSOR_CHECK(pad >= -n && pad < n, "embedding: padding_idx {} is out of range for {} embeddings", pad, n);
    if (pad < 0) pad += n;
    // The padding row keeps its value in the output but passes no gradient back to the weight.
    if (rows.requires_grad()) rows = where((idx == pad).unsqueeze(1), rows.detach(), rows);
  }
  std::vector<int64_t> shape = input.sizes().vec();
  shape.push_back(weight.size(1));
  return rows.reshape(shape);
}

Tensor dropout(Tensor input, const DropoutFuncOptions& options) {
  const double p = options.p();
  TENSOR_CHECK(p >= 0 && p <= 1, "dropout: probability has to be between 0 and 1, but got {}", p);
  TENSOR_CHECK(input.defined(), "dropout: input must be defined");
  if (!options.training() || p == 0) return input;
  TENSOR_CHECK(input.is_floating_point(), "dropout: input must be floating point, got {}", input.describe());
  if (p == 1) return options.inplace() ? input.mul_(0) : input * 0;
  // Keep with probability 1 - p (u < 1 - p for u ~ U[0, 1)), scaled so the expectation is kept.
  // The noise is drawn in float32 (float64 for float64 inputs) whatever the input precision.
  ScalarType noise_t = input.dtype() == kFloat64 ? kFloat64 : kFloat32;
  Tensor u = tensor::rand(input.sizes(), TensorOptions(noise_t).device(input.device()));
  Tensor mask = (u < (1 - p)).to(input.dtype()) * (1.0 / (1 - p));
  return options.inplace() ? input.mul_(mask) : input * mask;
}

Tensor relu(Tensor input, const ReLUFuncOptions& options) {
  return options.inplace() ? input.relu_() : tensor::relu(input);
}

Tensor gelu(const Tensor& input, const GELUFuncOptions& options) {
  const std::string& a = options.approximate();
  if (a == "none") return tensor::gelu(input);
  TENSOR_CHECK(a == "tanh", "gelu: approximate must be \"none\" or \"tanh\", got \"{}\"", a);
  // Without a gradient to record, one oneDNN pass instead of 8 ops (Note [oneDNN eltwise]).
  if (!(autograd::GradMode::is_enabled() && input.requires_grad())) {
    Tensor y = cpu::onednn_gelu_tanh(input);
    if (y.defined()) return y;
  }
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as PyTorch's tanh approximation.
  const double k = std::sqrt(2.0 / M_PI);
  Tensor inner = (input + input * input * input * 0.044715) * k;
  return input * 0.5 * (tensor::tanh(inner) + 1);
}

Tensor silu(const Tensor& input) { return tensor::silu(input); }

Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options) {
  return tensor::softmax(input, options.dim(), options.dtype());
}

Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options) {
  return tensor::log_softmax(input, options.dim(), options.dtype());
}

}  // namespace functional
}  // namespace tensor::nn
