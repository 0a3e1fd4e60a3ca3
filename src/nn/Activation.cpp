// Activation functionals and modules (include/tensor/nn/activation.h) over the torch::
// spellings of include/tensor/nn/functions.h.
#include "tensor/nn/activation.h"

#include <ostream>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/functions.h"
#include "tensor/nn/init.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace functional {

Tensor elu(Tensor input, const ELUFuncOptions& options) {
  return options.inplace() ? tensor::elu_(input, options.alpha()) : tensor::elu(input, options.alpha());
}

Tensor selu(Tensor input, const SELUFuncOptions& options) {
  return options.inplace() ? tensor::selu_(input) : tensor::selu(input);
}

Tensor celu(Tensor input, const CELUFuncOptions& options) {
  return options.inplace() ? tensor::celu_(input, options.alpha()) : tensor::celu(input, options.alpha());
}

Tensor leaky_relu(Tensor input, const LeakyReLUFuncOptions& options) {
  return options.inplace() ? tensor::leaky_relu_(input, options.negative_slope())
                           : tensor::leaky_relu(input, options.negative_slope());
}

Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options) {
  return options.inplace() ? tensor::hardtanh_(input, options.min_val(), options.max_val())
                           : tensor::hardtanh(input, options.min_val(), options.max_val());
}

Tensor relu6(Tensor input, const ReLU6FuncOptions& options) {
  return options.inplace() ? tensor::relu6_(input) : tensor::relu6(input);
}

Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options) {
  return tensor::softplus(input, options.beta(), options.threshold());
}

Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& options) {
  return tensor::softshrink(input, options.lambda());
}

Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& options) {
  return tensor::hardshrink(input, options.lambda());
}

Tensor threshold(Tensor input, const ThresholdFuncOptions& options) {
  return options.inplace() ? tensor::threshold_(input, options.threshold(), options.value())
                           : tensor::threshold(input, options.threshold(), options.value());
}

Tensor glu(const Tensor& input, const GLUFuncOptions& options) { return tensor::glu(input, options.dim()); }

Tensor mish(const Tensor& input) { return tensor::mish(input); }

Tensor logsigmoid(const Tensor& input) { return tensor::log_sigmoid(input); }

Tensor softsign(const Tensor& input) {
  TENSOR_CHECK(input.defined() && input.is_floating_point(), "softsign: input must be a floating point tensor, got {}",
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  return input / (input.abs() + 1);
}

Tensor tanhshrink(const Tensor& input) {
  TENSOR_CHECK(input.defined() && input.is_floating_point(),
               "tanhshrink: input must be a floating point tensor, got {}",
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  return input - tensor::tanh(input);
}

Tensor prelu(const Tensor& input, const Tensor& weight) { return tensor::prelu(input, weight); }

Tensor rrelu(Tensor input, const RReLUFuncOptions& options) {
  Tensor out = tensor::rrelu(input, options.lower(), options.upper(), options.training());
  if (!options.inplace()) return out;
  input.copy_(out);
  return input;
}

Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& options) {
  TENSOR_CHECK(logits.defined() && logits.is_floating_point() && logits.dim() >= 1,
               "gumbel_softmax: logits must be a floating point tensor with at least one dim, got {}",
               logits.defined() ? logits.describe() : std::string("an undefined tensor"));
  TENSOR_CHECK(options.tau() > 0, "gumbel_softmax: tau must be positive, got {}", options.tau());
  // g = -log(E), E ~ Exp(1) = -log(U), U ~ U(0, 1) kept away from 0.
  Tensor u = tensor::rand(logits.sizes(), logits.options().requires_grad(false)).clamp_min(1e-20);
  Tensor gumbels = -tensor::log(-tensor::log(u));
  Tensor y_soft = tensor::softmax((logits + gumbels) / options.tau(), options.dim());
  if (!options.hard()) return y_soft;
  Tensor index = std::get<1>(y_soft.max(options.dim(), /*keepdim=*/true));
  Tensor y_hard = zeros_like(logits).scatter(options.dim(), index, Scalar(1.0));
  return y_hard - y_soft.detach() + y_soft;
}

Tensor softmin(const Tensor& input, const SoftminFuncOptions& options) {
  return tensor::softmax(-input, options.dim(), options.dtype());
}

}  // namespace functional

namespace F = functional;

// ---- modules ----

ELUImpl::ELUImpl(const ELUOptions& options_) : Module("tensor::nn::ELU"), options(options_) {}
Tensor ELUImpl::forward(Tensor input) { return F::elu(std::move(input), options); }
void ELUImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::ELU(alpha=" << options.alpha() << (options.inplace() ? ", inplace=true" : "") << ")";
}

SELUImpl::SELUImpl(const SELUOptions& options_) : Module("tensor::nn::SELU"), options(options_) {}
Tensor SELUImpl::forward(Tensor input) { return F::selu(std::move(input), options); }
void SELUImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::SELU(" << (options.inplace() ? "inplace=true" : "") << ")";
}

CELUImpl::CELUImpl(const CELUOptions& options_) : Module("tensor::nn::CELU"), options(options_) {}
Tensor CELUImpl::forward(Tensor input) { return F::celu(std::move(input), options); }
void CELUImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::CELU(alpha=" << options.alpha() << (options.inplace() ? ", inplace=true" : "") << ")";
}

LeakyReLUImpl::LeakyReLUImpl(const LeakyReLUOptions& options_) : Module("tensor::nn::LeakyReLU"), options(options_) {}
Tensor LeakyReLUImpl::forward(Tensor input) { return F::leaky_relu(std::move(input), options); }
void LeakyReLUImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::LeakyReLU(negative_slope=" << options.negative_slope()
    << (options.inplace() ? ", inplace=true" : "") << ")";
}

HardtanhImpl::HardtanhImpl(const HardtanhOptions& options_) : Module("tensor::nn::Hardtanh"), options(options_) {
  TENSOR_CHECK(options.max_val() > options.min_val(), "Hardtanh: max_val ({}) must be greater than min_val ({})",
               options.max_val(), options.min_val());
}
Tensor HardtanhImpl::forward(Tensor input) { return F::hardtanh(std::move(input), options); }
void HardtanhImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val()
    << (options.inplace() ? ", inplace=true" : "") << ")";
}

ReLU6Impl::ReLU6Impl(const ReLU6Options& options_) : Module("tensor::nn::ReLU6"), options(options_) {}
Tensor ReLU6Impl::forward(Tensor input) { return F::relu6(std::move(input), options); }
void ReLU6Impl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::ReLU6(" << (options.inplace() ? "inplace=true" : "") << ")";
}

SoftplusImpl::SoftplusImpl(const SoftplusOptions& options_) : Module("tensor::nn::Softplus"), options(options_) {}
Tensor SoftplusImpl::forward(const Tensor& input) { return F::softplus(input, options); }
void SoftplusImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Softplus(beta=" << options.beta() << ", threshold=" << options.threshold() << ")";
}

SoftshrinkImpl::SoftshrinkImpl(const SoftshrinkOptions& options_)
    : Module("tensor::nn::Softshrink"), options(options_) {}
Tensor SoftshrinkImpl::forward(const Tensor& input) { return F::softshrink(input, options); }
void SoftshrinkImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Softshrink(" << options.lambda() << ")";
}

HardshrinkImpl::HardshrinkImpl(const HardshrinkOptions& options_)
    : Module("tensor::nn::Hardshrink"), options(options_) {}
Tensor HardshrinkImpl::forward(const Tensor& input) { return F::hardshrink(input, options); }
void HardshrinkImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Hardshrink(" << options.lambda() << ")";
}

GLUImpl::GLUImpl(const GLUOptions& options_) : Module("tensor::nn::GLU"), options(options_) {}
Tensor GLUImpl::forward(const Tensor& input) { return F::glu(input, options); }
void GLUImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::GLU(dim=" << options.dim() << ")"; }

RReLUImpl::RReLUImpl(const RReLUOptions& options_) : Module("tensor::nn::RReLU"), options(options_) {}
Tensor RReLUImpl::forward(Tensor input) {
  return F::rrelu(std::move(input), F::RReLUFuncOptions()
                                        .lower(options.lower())
                                        .upper(options.upper())
                                        .inplace(options.inplace())
                                        .training(is_training()));
}
void RReLUImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::RReLU(lower=" << options.lower() << ", upper=" << options.upper()
    << (options.inplace() ? ", inplace=true" : "") << ")";
}

ThresholdImpl::ThresholdImpl(const ThresholdOptions& options_) : Module("tensor::nn::Threshold"), options(options_) {}
Tensor ThresholdImpl::forward(Tensor input) { return F::threshold(std::move(input), options); }
void ThresholdImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Threshold(threshold=" << options.threshold() << ", value=" << options.value()
    << (options.inplace() ? ", inplace=true" : "") << ")";
}

SoftminImpl::SoftminImpl(const SoftminOptions& options_) : Module("tensor::nn::Softmin"), options(options_) {}
Tensor SoftminImpl::forward(const Tensor& input) { return F::softmin(input, F::SoftminFuncOptions(options.dim())); }
void SoftminImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::Softmin(dim=" << options.dim() << ")"; }

MishImpl::MishImpl() : Module("tensor::nn::Mish") {}
Tensor MishImpl::forward(const Tensor& input) { return F::mish(input); }
void MishImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::Mish()"; }

LogSigmoidImpl::LogSigmoidImpl() : Module("tensor::nn::LogSigmoid") {}
Tensor LogSigmoidImpl::forward(const Tensor& input) { return F::logsigmoid(input); }
void LogSigmoidImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::LogSigmoid()"; }

SoftsignImpl::SoftsignImpl() : Module("tensor::nn::Softsign") {}
Tensor SoftsignImpl::forward(const Tensor& input) { return F::softsign(input); }
void SoftsignImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::Softsign()"; }

TanhshrinkImpl::TanhshrinkImpl() : Module("tensor::nn::Tanhshrink") {}
Tensor TanhshrinkImpl::forward(const Tensor& input) { return F::tanhshrink(input); }
void TanhshrinkImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::Tanhshrink()"; }

PReLUImpl::PReLUImpl(const PReLUOptions& options_) : Module("tensor::nn::PReLU"), options(options_) {
  TENSOR_CHECK(options.num_parameters() >= 1, "PReLU: num_parameters must be at least 1, got {}",
               options.num_parameters());
  reset();
}
void PReLUImpl::reset() {
  if (parameters_.contains("weight")) parameters_.erase("weight");
  weight = register_parameter("weight", tensor::full({options.num_parameters()}, options.init()));
}
Tensor PReLUImpl::forward(const Tensor& input) { return F::prelu(input, weight); }
void PReLUImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::PReLU(num_parameters=" << options.num_parameters() << ")";
}

}  // namespace tensor::nn
