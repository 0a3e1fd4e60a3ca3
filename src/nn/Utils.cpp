// nn::utils: gradient clipping (torch/csrc/api/include/torch/nn/utils/clip_grad.h) and
// parameter flattening.
#include "tensor/nn/utils.h"

#include <cmath>
#include <limits>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::nn::utils {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  NoGradGuard no_grad;
  const bool inf = std::isinf(norm_type) && norm_type > 0;
  // The norm of the per-tensor norms (in float64, so mixed-dtype parameters combine), as
  // PyTorch's clip_grad_norm_.
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  for (const Tensor& g : grads) {
    Tensor n = inf ? g.abs().amax() : g.norm(norm_type);
    norms.push_back(n.to(kFloat64).cpu());
  }
  Tensor all = tensor::stack(norms);
  const double total = (inf ? all.amax() : all.norm(norm_type)).item<double>();
  TENSOR_CHECK(!error_if_nonfinite || std::isfinite(total),
               "clip_grad_norm_: the total norm of order {} of the gradients is non-finite ({}), so it cannot be "
               "clipped; pass error_if_nonfinite=false to clip anyway",
               norm_type, total);
  const double clip_coef = max_norm / (total + 1e-6);
  if (clip_coef < 1) {
    for (Tensor& g : grads) g.mul_(clip_coef);
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    if (!p.defined() || !p.grad().defined()) continue;
    p.mutable_grad().clamp_(-clip_value, clip_value);
  }
}

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> flat;
  flat.reserve(parameters.size());
  for (const Tensor& p : parameters) flat.push_back(p.reshape({-1}));
  return tensor::cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  TENSOR_CHECK(vec.dim() == 1, "vector_to_parameters: expected a 1-d vector, got {}", vec.describe());
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  TENSOR_CHECK(total == vec.numel(), "vector_to_parameters: the vector has {} elements but the parameters need {}",
               vec.numel(), total);
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : parameters) {
    Tensor dst = p;
    dst.copy_(vec.narrow(0, offset, p.numel()).reshape(p.sizes()));
    offset += p.numel();
  }
}

}  // namespace tensor::nn::utils
