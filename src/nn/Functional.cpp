// nn::functional layers and activations, composed of public differentiable ops.
#include "tensor/nn/functional.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/core/Check.h"
#include "tensor/amp/autocast.h"
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
  // In an autocast region the dispatched op casts its inputs first, then checks their dtypes.
  const bool autocast = autocast::is_autocast_enabled(input.device().type());
  TENSOR_CHECK(autocast || input.dtype() == weight.dtype(), "linear: input {} and weight {} must have the same dtype",
               input.describe(), weight.describe());
  if (bias.defined()) {
    TENSOR_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0),
                 "linear: bias must be 1-d with out_features = {} elements, got {}", weight.size(0), bias.describe());
    TENSOR_CHECK(autocast || bias.dtype() == weight.dtype(), "linear: bias {} and weight {} must have the same dtype",
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

Tensor pad(const Tensor& input, const PadFuncOptions& options) {
  const std::vector<int64_t>& p = options.pad();
  const PadMode mode = options.mode();
  TENSOR_CHECK(p.size() % 2 == 0, "pad: padding length must be divisible by 2, but got {} values ({})", p.size(),
               detail::shape_str(p));
  const int64_t k = static_cast<int64_t>(p.size()) / 2;
  TENSOR_CHECK(k <= input.dim(), "pad: padding length {} is too large for an input of shape {} (at most 2 per dim)",
               p.size(), detail::shape_str(input.sizes()));
  if (mode == kConstant) {
    // Crop the negative amounts, then copy into a tensor filled with the value: the copy into a
    // view is recorded, so the gradient is the matching slice of the output's.
    Tensor x = input;
    DimVector out_sizes(input.sizes());
    for (int64_t j = 0; j < k; ++j) {
      const int64_t d = input.dim() - 1 - j, l = p[2 * j], r = p[2 * j + 1];
      const int64_t n = out_sizes[d] + l + r;
      TENSOR_CHECK(n >= 0, "pad: padding ({}, {}) of dim {} leaves a negative size for an input of shape {}", l, r, d,
                   detail::shape_str(input.sizes()));
      x = x.narrow(d, std::max<int64_t>(-l, 0), std::max<int64_t>(x.size(d) + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0), 0));
      out_sizes[d] = n;
    }
    Tensor out = full(out_sizes, options.value(), input.options().requires_grad(false));
    Tensor region = out;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t d = input.dim() - 1 - j;
      region = region.narrow(d, std::max<int64_t>(p[2 * j], 0), x.size(d));
    }
    if (x.numel() > 0) region.copy_(x);
    return out;
  }
  // reflect, replicate, circular: each padded dim is an index_select of the source positions,
  // so the gradient scatters back through index_select's backward.
  Tensor x = input;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t d = input.dim() - 1 - j, l = p[2 * j], r = p[2 * j + 1], n = input.size(d);
    TENSOR_CHECK(l >= 0 && r >= 0, "pad: {} padding cannot be negative, but got ({}, {}) for dim {}", mode.name(), l, r,
                 d);
    if (mode == kReflect)
      TENSOR_CHECK(l < n && r < n, "pad: reflect padding ({}, {}) must be less than the size {} of dim {} (input shape {})",
                   l, r, n, d, detail::shape_str(input.sizes()));
    else if (mode == kCircular)
      TENSOR_CHECK(l <= n && r <= n, "pad: circular padding ({}, {}) must be at most the size {} of dim {} (input shape {})",
                   l, r, n, d, detail::shape_str(input.sizes()));
    else
      TENSOR_CHECK(n > 0, "pad: replicate padding needs a non-empty dim {} (input shape {})", d,
                   detail::shape_str(input.sizes()));
    if (l == 0 && r == 0) continue;
    std::vector<int64_t> idx(static_cast<size_t>(n + l + r));
    for (int64_t i = -l; i < n + r; ++i) {
      int64_t s = i;
      if (mode == kReflect) s = i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
      else if (mode == kReplicate) s = std::clamp<int64_t>(i, 0, n - 1);
      else s = ((i % n) + n) % n;
      idx[static_cast<size_t>(i + l)] = s;
    }
    x = index_select(x, d, tensor::tensor(idx, kInt64));
  }
  return x;
}

Tensor one_hot(const Tensor& t, int64_t num_classes) {
  TENSOR_CHECK(t.defined() && t.scalar_type() == kInt64,
               "one_hot is only applicable to index tensors of dtype int64, but got {} (shape {})",
               t.defined() ? t.scalar_type() : ScalarType::Undefined, t.defined() ? detail::shape_str(t.sizes()) : "[]");
  if (t.numel() == 0) {
    TENSOR_CHECK(num_classes > 0, "one_hot: can not infer the total number of classes from an empty tensor (shape {})",
                 detail::shape_str(t.sizes()));
  } else {
    const int64_t lo = t.min().item<int64_t>(), hi = t.max().item<int64_t>();
    TENSOR_CHECK(lo >= 0, "one_hot: class values must be non-negative, but got {}", lo);
    if (num_classes == -1) num_classes = hi + 1;
    TENSOR_CHECK(hi < num_classes, "one_hot: class values must be smaller than num_classes ({}), but got {}", num_classes,
                 hi);
  }
  DimVector sizes(t.sizes());
  sizes.push_back(num_classes);
  Tensor out = zeros(sizes, TensorOptions().dtype(kInt64).device(t.device()));
  if (t.numel() > 0) out = out.scatter(-1, t.unsqueeze(-1), Scalar(int64_t{1}));
  return out;
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
  return tensor::gelu(input, options.approximate());
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
