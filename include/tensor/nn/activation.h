// Activation modules, their options and their nn::functional forms, as libtorch's
// torch/nn/{options,functional,modules}/activation.h: ELU, SELU, CELU, LeakyReLU, Hardtanh,
// ReLU6, Softplus, Softshrink, Hardshrink, Threshold, GLU, Mish, LogSigmoid, Softsign,
// Tanhshrink, PReLU, RReLU, Softmin. (ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax and LogSoftmax
// are in modules.h.) The math is in tensor/nn/functions.h (the torch:: spellings).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

// ---- options ----

struct ELUOptions {
  TENSOR_ARG(double, alpha) = 1.0;
  TENSOR_ARG(bool, inplace) = false;
};

struct SELUOptions {
  /* implicit */ SELUOptions(bool inplace = false) : inplace_(inplace) {}
  TENSOR_ARG(bool, inplace);
};

struct CELUOptions {
  TENSOR_ARG(double, alpha) = 1.0;
  TENSOR_ARG(bool, inplace) = false;
};

struct LeakyReLUOptions {
  TENSOR_ARG(double, negative_slope) = 1e-2;
  TENSOR_ARG(bool, inplace) = false;
};

struct HardtanhOptions {
  TENSOR_ARG(double, min_val) = -1.0;
  TENSOR_ARG(double, max_val) = 1.0;
  TENSOR_ARG(bool, inplace) = false;
};

struct ReLU6Options {
  /* implicit */ ReLU6Options(bool inplace = false) : inplace_(inplace) {}
  TENSOR_ARG(bool, inplace);
};

/// log(1 + exp(beta * x)) / beta, linear above threshold.
struct SoftplusOptions {
  TENSOR_ARG(double, beta) = 1.0;
  TENSOR_ARG(double, threshold) = 20.0;
};

struct SoftshrinkOptions {
  /* implicit */ SoftshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}
  TENSOR_ARG(double, lambda);
};

struct HardshrinkOptions {
  /* implicit */ HardshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}
  TENSOR_ARG(double, lambda);
};

/// x if x > threshold else value.
struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  TENSOR_ARG(double, threshold);
  TENSOR_ARG(double, value);
  TENSOR_ARG(bool, inplace) = false;
};

struct GLUOptions {
  /* implicit */ GLUOptions(int64_t dim = -1) : dim_(dim) {}
  TENSOR_ARG(int64_t, dim);
};

/// nn::PReLU's learned slope: num_parameters (1 or the channel count), initialized to init.
struct PReLUOptions {
  TENSOR_ARG(int64_t, num_parameters) = 1;
  TENSOR_ARG(double, init) = 0.25;
};

struct RReLUOptions {
  TENSOR_ARG(double, lower) = 1.0 / 8.0;
  TENSOR_ARG(double, upper) = 1.0 / 3.0;
  TENSOR_ARG(bool, inplace) = false;
};

struct SoftminOptions {
  SoftminOptions(int64_t dim) : dim_(dim) {}
  TENSOR_ARG(int64_t, dim);
};

namespace functional {

using ELUFuncOptions = ELUOptions;
using SELUFuncOptions = SELUOptions;
using CELUFuncOptions = CELUOptions;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using HardtanhFuncOptions = HardtanhOptions;
using ReLU6FuncOptions = ReLU6Options;
using SoftplusFuncOptions = SoftplusOptions;
using SoftshrinkFuncOptions = SoftshrinkOptions;
using HardshrinkFuncOptions = HardshrinkOptions;
using ThresholdFuncOptions = ThresholdOptions;
using GLUFuncOptions = GLUOptions;

/// F::rrelu: random slopes only when training (false by default, as libtorch).
struct RReLUFuncOptions {
  TENSOR_ARG(double, lower) = 1.0 / 8.0;
  TENSOR_ARG(double, upper) = 1.0 / 3.0;
  TENSOR_ARG(bool, training) = false;
  TENSOR_ARG(bool, inplace) = false;
};

struct SoftminFuncOptions {
  SoftminFuncOptions(int64_t dim) : dim_(dim) {}
  TENSOR_ARG(int64_t, dim);
  TENSOR_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};

/// F::gumbel_softmax: temperature tau, hard (one-hot forward, soft gradient) and dim.
struct GumbelSoftmaxFuncOptions {
  TENSOR_ARG(double, tau) = 1.0;
  TENSOR_ARG(bool, hard) = false;
  TENSOR_ARG(int, dim) = -1;
};

/// softmax((logits + g) / tau) with Gumbel(0, 1) noise g; with hard, the one-hot of its argmax
/// in the forward pass and the soft sample's gradient (straight-through).
TENSOR_API Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& options = {});

/// alpha * (exp(x) - 1) for x <= 0, x above.
TENSOR_API Tensor elu(Tensor input, const ELUFuncOptions& options = {});
/// Scaled ELU with the self-normalizing constants.
TENSOR_API Tensor selu(Tensor input, const SELUFuncOptions& options = {});
/// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
TENSOR_API Tensor celu(Tensor input, const CELUFuncOptions& options = {});
/// x if x > 0 else negative_slope * x.
TENSOR_API Tensor leaky_relu(Tensor input, const LeakyReLUFuncOptions& options = {});
/// Clamps to [min_val, max_val].
TENSOR_API Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options = {});
/// min(max(x, 0), 6).
TENSOR_API Tensor relu6(Tensor input, const ReLU6FuncOptions& options = {});
TENSOR_API Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options = {});
TENSOR_API Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& options = {});
TENSOR_API Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& options = {});
TENSOR_API Tensor threshold(Tensor input, const ThresholdFuncOptions& options);
/// First half of options.dim() times the sigmoid of the second half.
TENSOR_API Tensor glu(const Tensor& input, const GLUFuncOptions& options = {});
/// x * tanh(softplus(x)).
TENSOR_API Tensor mish(const Tensor& input);
/// log(sigmoid(x)).
TENSOR_API Tensor logsigmoid(const Tensor& input);
/// x / (1 + |x|).
TENSOR_API Tensor softsign(const Tensor& input);
/// x - tanh(x).
TENSOR_API Tensor tanhshrink(const Tensor& input);
/// x if x > 0 else weight * x (weight: 1 element or one per channel).
TENSOR_API Tensor prelu(const Tensor& input, const Tensor& weight);
TENSOR_API Tensor rrelu(Tensor input, const RReLUFuncOptions& options = {});
/// softmax(-x) over options.dim().
TENSOR_API Tensor softmin(const Tensor& input, const SoftminFuncOptions& options);

}  // namespace functional

// ---- modules ----

/// Declares a stateless activation module XImpl(options) with forward(input) and its holder X.
#define TENSOR_ACTIVATION_MODULE(Name, Options, InputType)                          \
  class TENSOR_API Name##Impl : public Module {                                     \
   public:                                                                          \
    explicit Name##Impl(const Options& options_ = {});                              \
    Tensor forward(InputType input);                                                \
    void reset() {}                                                                 \
    void pretty_print(std::ostream& stream) const override;                         \
    Options options;                                                                \
  };                                                                                \
  TENSOR_MODULE(Name)

TENSOR_ACTIVATION_MODULE(ELU, ELUOptions, Tensor);
TENSOR_ACTIVATION_MODULE(SELU, SELUOptions, Tensor);
TENSOR_ACTIVATION_MODULE(CELU, CELUOptions, Tensor);
TENSOR_ACTIVATION_MODULE(LeakyReLU, LeakyReLUOptions, Tensor);
TENSOR_ACTIVATION_MODULE(Hardtanh, HardtanhOptions, Tensor);
TENSOR_ACTIVATION_MODULE(ReLU6, ReLU6Options, Tensor);
TENSOR_ACTIVATION_MODULE(Softplus, SoftplusOptions, const Tensor&);
TENSOR_ACTIVATION_MODULE(Softshrink, SoftshrinkOptions, const Tensor&);
TENSOR_ACTIVATION_MODULE(Hardshrink, HardshrinkOptions, const Tensor&);
TENSOR_ACTIVATION_MODULE(GLU, GLUOptions, const Tensor&);
TENSOR_ACTIVATION_MODULE(RReLU, RReLUOptions, Tensor);
#undef TENSOR_ACTIVATION_MODULE

/// x if x > threshold else value.
class TENSOR_API ThresholdImpl : public Module {
 public:
  ThresholdImpl(double threshold, double value) : ThresholdImpl(ThresholdOptions(threshold, value)) {}
  explicit ThresholdImpl(const ThresholdOptions& options_);
  Tensor forward(Tensor input);
  void reset() {}
  void pretty_print(std::ostream& stream) const override;
  ThresholdOptions options;
};
TENSOR_MODULE(Threshold);

/// softmax(-x) over dim.
class TENSOR_API SoftminImpl : public Module {
 public:
  explicit SoftminImpl(int64_t dim) : SoftminImpl(SoftminOptions(dim)) {}
  explicit SoftminImpl(const SoftminOptions& options_);
  Tensor forward(const Tensor& input);
  void reset() {}
  void pretty_print(std::ostream& stream) const override;
  SoftminOptions options;
};
TENSOR_MODULE(Softmin);

/// Declares an option-less activation module XImpl() with forward(const Tensor&).
#define TENSOR_PLAIN_MODULE(Name)                                   \
  class TENSOR_API Name##Impl : public Module {                     \
   public:                                                          \
    Name##Impl();                                                   \
    Tensor forward(const Tensor& input);                            \
    void reset() {}                                                 \
    void pretty_print(std::ostream& stream) const override;         \
  };                                                                \
  TENSOR_MODULE(Name)

TENSOR_PLAIN_MODULE(Mish);
TENSOR_PLAIN_MODULE(LogSigmoid);
TENSOR_PLAIN_MODULE(Softsign);
TENSOR_PLAIN_MODULE(Tanhshrink);
/// softmax over the channel dim (-3) of a (N, C, H, W) or (C, H, W) input.
TENSOR_PLAIN_MODULE(Softmax2d);
#undef TENSOR_PLAIN_MODULE

/// x if x > 0 else weight * x with a learned weight [num_parameters] filled with init.
class TENSOR_API PReLUImpl : public Module {
 public:
  explicit PReLUImpl(const PReLUOptions& options_ = {});
  void reset();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  PReLUOptions options;
  Tensor weight;
};
TENSOR_MODULE(PReLU);

}  // namespace tensor::nn
