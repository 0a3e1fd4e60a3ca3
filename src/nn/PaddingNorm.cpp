// Padding modules (nn/padding.h), instance norm (nn/instancenorm.h), 1-d pooling
// (nn/pooling1d.h) and Softmax2d (nn/activation.h), composed of F::pad, reductions and the 2-d
// pooling ops.
#include <ostream>
#include <string>
#include <vector>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/activation.h"
#include "tensor/nn/functional.h"
#include "tensor/nn/instancenorm.h"
#include "tensor/nn/padding.h"
#include "tensor/nn/pooling1d.h"
#include "tensor/ops.h"
#include "tensor/pooling.h"

namespace tensor::nn {

namespace F = functional;

// ---- padding ----

namespace detail {

Tensor pad_nd(const char* name, const Tensor& input, IntArrayRef padding, PadMode mode, double value, size_t dims) {
  TENSOR_CHECK(input.defined(), "{}: input must be defined", name);
  const int64_t d = static_cast<int64_t>(dims);
  TENSOR_CHECK(input.dim() == d + 1 || input.dim() == d + 2,
               "{}: expected a {}-d (unbatched) or {}-d (batched) input, got {}", name, d + 1, d + 2, input.describe());
  return F::pad(input, F::PadFuncOptions(padding.vec()).mode(mode).value(value));
}

void print_pad(std::ostream& s, const char* name, IntArrayRef padding, const double* value) {
  s << name << "(padding=[";
  for (size_t i = 0; i < padding.size(); ++i) s << (i ? ", " : "") << padding[i];
  s << "]";
  if (value) s << ", value=" << *value;
  s << ")";
}

}  // namespace detail

// ---- instance norm ----

namespace functional {

Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options) {
  const char* op = "instance_norm";
  TENSOR_CHECK(input.defined() && input.is_floating_point(), "{}: input must be a floating point tensor, got {}", op,
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  TENSOR_CHECK(input.dim() >= 3, "{}: expected an input (N, C, *) with at least one spatial dim, got {}", op,
               input.describe());
  const int64_t c = input.size(1);
  std::vector<int64_t> dims, stat_shape(static_cast<size_t>(input.dim()), 1);
  int64_t spatial = 1;
  for (int64_t i = 2; i < input.dim(); ++i) {
    dims.push_back(i);
    spatial *= input.size(i);
  }
  stat_shape[1] = c;
  auto check_c = [&](const Tensor& t, const char* what) {
    if (t.defined())
      TENSOR_CHECK(t.dim() == 1 && t.size(0) == c, "{}: {} must be 1-d with one entry per channel ({}), got {}", op,
                   what, c, t.describe());
  };
  check_c(options.running_mean(), "running_mean");
  check_c(options.running_var(), "running_var");
  check_c(options.weight(), "weight");
  check_c(options.bias(), "bias");
  Tensor mean, var;
  if (options.use_input_stats()) {
    TENSOR_CHECK(spatial > 1, "{}: expected more than 1 spatial element when training, got input {}", op,
                 input.describe());
    mean = input.mean(dims, /*keepdim=*/true);
    var = input.var(dims, /*correction=*/0, /*keepdim=*/true);
    Tensor rm = options.running_mean();
    Tensor rv = options.running_var();
    if (rm.defined() || rv.defined()) {
      NoGradGuard no_grad;
      const double m = options.momentum();
      if (rm.defined()) rm.mul_(1 - m).add_(mean.detach().flatten(1).mean(std::vector<int64_t>{0}).to(rm.dtype()) * m);
      if (rv.defined()) {
        Tensor unbiased = var.detach().flatten(1) * (static_cast<double>(spatial) / static_cast<double>(spatial - 1));
        rv.mul_(1 - m).add_(unbiased.mean(std::vector<int64_t>{0}).to(rv.dtype()) * m);
      }
    }
  } else {
    TENSOR_CHECK(options.running_mean().defined() && options.running_var().defined(),
                 "{}: running_mean and running_var are needed when use_input_stats is false", op);
    mean = options.running_mean().reshape(stat_shape);
    var = options.running_var().reshape(stat_shape);
  }
  Tensor y = (input - mean) / tensor::sqrt(var + options.eps());
  if (options.weight().defined()) y = y * options.weight().reshape(stat_shape);
  if (options.bias().defined()) y = y + options.bias().reshape(stat_shape);
  return y;
}

}  // namespace functional

InstanceNormImplBase::InstanceNormImplBase(const InstanceNormOptions& options_, std::string name, int64_t spatial_dims)
    : Module(std::move(name)), options(options_), spatial_dims_(spatial_dims) {
  TENSOR_CHECK(options.num_features() > 0, "{}: num_features must be positive, got {}", this->name(),
               options.num_features());
  reset();
}

void InstanceNormImplBase::reset() {
  const int64_t c = options.num_features();
  for (const char* n : {"weight", "bias"})
    if (parameters_.contains(n)) parameters_.erase(n);
  for (const char* n : {"running_mean", "running_var", "num_batches_tracked"})
    if (buffers_.contains(n)) buffers_.erase(n);
  if (options.affine()) {
    weight = register_parameter("weight", tensor::ones({c}));
    bias = register_parameter("bias", tensor::zeros({c}));
  } else {
    weight = register_parameter("weight", Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", tensor::zeros({c}));
    running_var = register_buffer("running_var", tensor::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", tensor::zeros({}, kInt64));
  } else {
    running_mean = register_buffer("running_mean", Tensor());
    running_var = register_buffer("running_var", Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", Tensor());
  }
}

void InstanceNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard g;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void InstanceNormImplBase::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    NoGradGuard g;
    weight.fill_(1);
    bias.zero_();
  }
}

Tensor InstanceNormImplBase::forward(const Tensor& input) {
  TENSOR_CHECK(input.defined(), "{}: input must be defined", name());
  TENSOR_CHECK(input.dim() == spatial_dims_ + 1 || input.dim() == spatial_dims_ + 2,
               "{}: expected a {}-d (unbatched) or {}-d (batched) input, got {}", name(), spatial_dims_ + 1,
               spatial_dims_ + 2, input.describe());
  const bool unbatched = input.dim() == spatial_dims_ + 1;
  Tensor x = unbatched ? input.unsqueeze(0) : input;
  if (options.affine() || options.track_running_stats())
    TENSOR_CHECK(x.size(1) == options.num_features(),
                 "{}: expected input's size at dim 1 (channels) to match num_features ({}), got input {}", name(),
                 options.num_features(), input.describe());
  const bool use_input_stats = is_training() || !options.track_running_stats();
  if (use_input_stats && is_training() && options.track_running_stats()) {
    NoGradGuard g;
    num_batches_tracked.add_(1);
  }
  Tensor y = F::instance_norm(x, F::InstanceNormFuncOptions()
                                     .running_mean(running_mean)
                                     .running_var(running_var)
                                     .weight(weight)
                                     .bias(bias)
                                     .use_input_stats(use_input_stats)
                                     .momentum(options.momentum())
                                     .eps(options.eps()));
  return unbatched ? y.squeeze(0) : y;
}

void InstanceNormImplBase::pretty_print(std::ostream& s) const {
  s << name() << "(" << options.num_features() << ", eps=" << options.eps() << ", momentum=" << options.momentum()
    << ", affine=" << (options.affine() ? "true" : "false")
    << ", track_running_stats=" << (options.track_running_stats() ? "true" : "false") << ")";
}

// ---- Softmax2d ----

Softmax2dImpl::Softmax2dImpl() : Module("tensor::nn::Softmax2d") {}
Tensor Softmax2dImpl::forward(const Tensor& input) {
  TENSOR_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4),
               "Softmax2d: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got {}",
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  return tensor::softmax(input, -3);
}
void Softmax2dImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::Softmax2d()"; }

// ---- 1-d pooling ----

namespace functional {

namespace {
void check_1d(const char* op, const Tensor& input) {
  TENSOR_CHECK(input.defined() && (input.dim() == 2 || input.dim() == 3),
               "{}: expected a 2-d (C, L) or 3-d (N, C, L) input, got {}", op,
               input.defined() ? input.describe() : std::string("an undefined tensor"));
}
}  // namespace

Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& o) {
  check_1d("max_pool1d", input);
  return tensor::max_pool2d(input.unsqueeze(-2), {1, o.kernel_size()[0]}, {1, o.stride()[0]}, {0, o.padding()[0]},
                            {1, o.dilation()[0]}, o.ceil_mode())
      .squeeze(-2);
}

Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& o) {
  check_1d("avg_pool1d", input);
  return tensor::avg_pool2d(input.unsqueeze(-2), {1, o.kernel_size()[0]}, {1, o.stride()[0]}, {0, o.padding()[0]},
                            o.ceil_mode(), o.count_include_pad())
      .squeeze(-2);
}

Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& o) {
  check_1d("adaptive_avg_pool1d", input);
  return tensor::adaptive_avg_pool2d(input.unsqueeze(-2), {1, o.output_size()[0]}).squeeze(-2);
}

}  // namespace functional

MaxPool1dImpl::MaxPool1dImpl(const MaxPool1dOptions& options_) : Module("tensor::nn::MaxPool1d"), options(options_) {}
Tensor MaxPool1dImpl::forward(const Tensor& input) { return F::max_pool1d(input, options); }
void MaxPool1dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::MaxPool1d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
    << ", padding=" << options.padding() << ", dilation=" << options.dilation()
    << ", ceil_mode=" << (options.ceil_mode() ? "true" : "false") << ")";
}

AvgPool1dImpl::AvgPool1dImpl(const AvgPool1dOptions& options_) : Module("tensor::nn::AvgPool1d"), options(options_) {}
Tensor AvgPool1dImpl::forward(const Tensor& input) { return F::avg_pool1d(input, options); }
void AvgPool1dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AvgPool1d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
    << ", padding=" << options.padding() << ")";
}

AdaptiveAvgPool1dImpl::AdaptiveAvgPool1dImpl(const AdaptiveAvgPool1dOptions& options_)
    : Module("tensor::nn::AdaptiveAvgPool1d"), options(options_) {}
Tensor AdaptiveAvgPool1dImpl::forward(const Tensor& input) { return F::adaptive_avg_pool1d(input, options); }
void AdaptiveAvgPool1dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AdaptiveAvgPool1d(output_size=" << options.output_size() << ")";
}

}  // namespace tensor::nn
