// Pooling and normalization modules and functionals (include/tensor/nn/norm_pool.h): thin
// layers over tensor/pooling.h and tensor/normalization.h, which own the kernels and autograd.
#include "tensor/nn/norm_pool.h"
#include "tensor/nn/pooling1d.h"

#include <ostream>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/normalization.h"
#include "tensor/ops.h"
#include "tensor/pooling.h"

namespace tensor::nn {

namespace {
const char* b(bool v) { return v ? "true" : "false"; }
std::optional<Tensor> opt(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }
void print_shape(std::ostream& s, const std::vector<int64_t>& v) {
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
}
}  // namespace

// ---- functional ----
namespace functional {

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& o) {
  return tensor::max_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& o) {
  return tensor::avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                            o.divisor_override());
}

Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& o) {
  return tensor::adaptive_avg_pool2d(input, o.output_size());
}

Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& o) {
  return tensor::max_pool3d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& o) {
  return tensor::max_pool3d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}

Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& o) {
  return tensor::avg_pool3d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                            o.divisor_override());
}

Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& o) {
  return tensor::adaptive_avg_pool3d(input, o.output_size());
}

Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& o) {
  return std::get<0>(tensor::adaptive_max_pool2d(input, o.output_size()));
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& o) {
  return tensor::adaptive_max_pool2d(input, o.output_size());
}

Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& o) {
  return std::get<0>(tensor::adaptive_max_pool3d(input, o.output_size()));
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& o) {
  return tensor::adaptive_max_pool3d(input, o.output_size());
}

Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& o) {
  return std::get<0>(tensor::adaptive_max_pool1d(input, o.output_size()));
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& o) {
  return tensor::adaptive_max_pool1d(input, o.output_size());
}

namespace {
/// libtorch's LP pooling tail: (sign(out) * relu(|out|) * window)^(1 / p), out the average of
/// input^p. The factor is the full kernel size even for windows ceil_mode clips, as libtorch.
Tensor lp_finish(const Tensor& out, double norm_type, int64_t window) {
  return (out.sign() * out.abs().relu()).mul(Scalar(window)).pow(Scalar(1.0 / norm_type));
}
}  // namespace

Tensor lp_pool1d(const Tensor& input, const LPPool1dFuncOptions& o) {
  const Tensor out = avg_pool1d(input.pow(Scalar(o.norm_type())),
                                AvgPool1dFuncOptions(o.kernel_size()).stride(o.stride()).padding(0).ceil_mode(o.ceil_mode()));
  return lp_finish(out, o.norm_type(), o.kernel_size()[0]);
}

Tensor lp_pool2d(const Tensor& input, const LPPool2dFuncOptions& o) {
  const auto k = o.kernel_size();
  const Tensor out = tensor::avg_pool2d(input.pow(Scalar(o.norm_type())), k, o.stride(), 0, o.ceil_mode(), true);
  return lp_finish(out, o.norm_type(), k[0] * k[1]);
}

Tensor lp_pool3d(const Tensor& input, const LPPool3dFuncOptions& o) {
  const auto k = o.kernel_size();
  const Tensor out = tensor::avg_pool3d(input.pow(Scalar(o.norm_type())), k, o.stride(), 0, o.ceil_mode(), true);
  return lp_finish(out, o.norm_type(), k[0] * k[1] * k[2]);
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o) {
  TENSOR_CHECK(input.defined(), "batch_norm: the input is undefined");
  if (o.training()) {
    // As libtorch: a channel with a single value has no variance to normalize by.
    const int64_t per_channel = input.dim() >= 2 && input.size(1) > 0 ? input.numel() / input.size(1) : 0;
    TENSOR_CHECK(per_channel != 1, "batch_norm: expected more than 1 value per channel when training, got input {}",
                 input.describe());
  }
  // momentum nullopt (cumulative average) is resolved by the module; here it means no update.
  return tensor::batch_norm(input, opt(o.weight()), opt(o.bias()), opt(running_mean), opt(running_var), o.training(),
                            o.momentum().value_or(0.0), o.eps());
}

Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& o) {
  return tensor::layer_norm(input, o.normalized_shape(), opt(o.weight()), opt(o.bias()), o.eps());
}

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o) {
  return tensor::group_norm(input, o.num_groups(), opt(o.weight()), opt(o.bias()), o.eps());
}

}  // namespace functional

namespace F = functional;

// ---- pooling ----

MaxPool2dImpl::MaxPool2dImpl(const MaxPool2dOptions& options_) : Module("tensor::nn::MaxPool2d"), options(options_) {}
Tensor MaxPool2dImpl::forward(const Tensor& input) { return F::max_pool2d(input, options); }
void MaxPool2dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::MaxPool2d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
    << ", padding=" << options.padding() << ", dilation=" << options.dilation() << ", ceil_mode=" << b(options.ceil_mode())
    << ")";
}

AvgPool2dImpl::AvgPool2dImpl(const AvgPool2dOptions& options_) : Module("tensor::nn::AvgPool2d"), options(options_) {}
Tensor AvgPool2dImpl::forward(const Tensor& input) { return F::avg_pool2d(input, options); }
void AvgPool2dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AvgPool2d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
    << ", padding=" << options.padding() << ")";
}

AdaptiveAvgPool2dImpl::AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options_)
    : Module("tensor::nn::AdaptiveAvgPool2d"), options(options_) {}
Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) { return F::adaptive_avg_pool2d(input, options); }
void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AdaptiveAvgPool2d(output_size=" << options.output_size() << ")";
}

MaxPool3dImpl::MaxPool3dImpl(const MaxPool3dOptions& options_) : Module("tensor::nn::MaxPool3d"), options(options_) {}
Tensor MaxPool3dImpl::forward(const Tensor& input) { return F::max_pool3d(input, options); }
std::tuple<Tensor, Tensor> MaxPool3dImpl::forward_with_indices(const Tensor& input) {
  return F::max_pool3d_with_indices(input, options);
}
void MaxPool3dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::MaxPool3d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
    << ", padding=" << options.padding() << ", dilation=" << options.dilation() << ", ceil_mode=" << b(options.ceil_mode())
    << ")";
}

AvgPool3dImpl::AvgPool3dImpl(const AvgPool3dOptions& options_) : Module("tensor::nn::AvgPool3d"), options(options_) {}
Tensor AvgPool3dImpl::forward(const Tensor& input) { return F::avg_pool3d(input, options); }
void AvgPool3dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AvgPool3d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
    << ", padding=" << options.padding() << ")";
}

AdaptiveAvgPool3dImpl::AdaptiveAvgPool3dImpl(const AdaptiveAvgPool3dOptions& options_)
    : Module("tensor::nn::AdaptiveAvgPool3d"), options(options_) {}
Tensor AdaptiveAvgPool3dImpl::forward(const Tensor& input) { return F::adaptive_avg_pool3d(input, options); }
void AdaptiveAvgPool3dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AdaptiveAvgPool3d(output_size=" << options.output_size() << ")";
}

AdaptiveMaxPool1dImpl::AdaptiveMaxPool1dImpl(const AdaptiveMaxPool1dOptions& options_)
    : Module("tensor::nn::AdaptiveMaxPool1d"), options(options_) {}
Tensor AdaptiveMaxPool1dImpl::forward(const Tensor& input) { return F::adaptive_max_pool1d(input, options); }
std::tuple<Tensor, Tensor> AdaptiveMaxPool1dImpl::forward_with_indices(const Tensor& input) {
  return F::adaptive_max_pool1d_with_indices(input, options);
}
void AdaptiveMaxPool1dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AdaptiveMaxPool1d(output_size=" << options.output_size() << ")";
}

AdaptiveMaxPool2dImpl::AdaptiveMaxPool2dImpl(const AdaptiveMaxPool2dOptions& options_)
    : Module("tensor::nn::AdaptiveMaxPool2d"), options(options_) {}
Tensor AdaptiveMaxPool2dImpl::forward(const Tensor& input) { return F::adaptive_max_pool2d(input, options); }
std::tuple<Tensor, Tensor> AdaptiveMaxPool2dImpl::forward_with_indices(const Tensor& input) {
  return F::adaptive_max_pool2d_with_indices(input, options);
}
void AdaptiveMaxPool2dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AdaptiveMaxPool2d(output_size=" << options.output_size() << ")";
}

AdaptiveMaxPool3dImpl::AdaptiveMaxPool3dImpl(const AdaptiveMaxPool3dOptions& options_)
    : Module("tensor::nn::AdaptiveMaxPool3d"), options(options_) {}
Tensor AdaptiveMaxPool3dImpl::forward(const Tensor& input) { return F::adaptive_max_pool3d(input, options); }
std::tuple<Tensor, Tensor> AdaptiveMaxPool3dImpl::forward_with_indices(const Tensor& input) {
  return F::adaptive_max_pool3d_with_indices(input, options);
}
void AdaptiveMaxPool3dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AdaptiveMaxPool3d(output_size=" << options.output_size() << ")";
}

LPPool1dImpl::LPPool1dImpl(const LPPool1dOptions& options_) : Module("tensor::nn::LPPool1d"), options(options_) {}
Tensor LPPool1dImpl::forward(const Tensor& input) { return F::lp_pool1d(input, options); }
void LPPool1dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::LPPool1d(norm_type=" << options.norm_type() << ", kernel_size=" << options.kernel_size()
    << ", stride=" << options.stride() << ", ceil_mode=" << b(options.ceil_mode()) << ")";
}

LPPool2dImpl::LPPool2dImpl(const LPPool2dOptions& options_) : Module("tensor::nn::LPPool2d"), options(options_) {}
Tensor LPPool2dImpl::forward(const Tensor& input) { return F::lp_pool2d(input, options); }
void LPPool2dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::LPPool2d(norm_type=" << options.norm_type() << ", kernel_size=" << options.kernel_size()
    << ", stride=" << options.stride() << ", ceil_mode=" << b(options.ceil_mode()) << ")";
}

LPPool3dImpl::LPPool3dImpl(const LPPool3dOptions& options_) : Module("tensor::nn::LPPool3d"), options(options_) {}
Tensor LPPool3dImpl::forward(const Tensor& input) { return F::lp_pool3d(input, options); }
void LPPool3dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::LPPool3d(norm_type=" << options.norm_type() << ", kernel_size=" << options.kernel_size()
    << ", stride=" << options.stride() << ", ceil_mode=" << b(options.ceil_mode()) << ")";
}

// ---- BatchNorm ----

BatchNormImplBase::BatchNormImplBase(const BatchNormOptions& options_, std::string name, int64_t min_dim,
                                     int64_t max_dim)
    : Module(std::move(name)), options(options_), min_dim_(min_dim), max_dim_(max_dim) {
  TENSOR_CHECK(options.num_features() > 0, "{}: num_features must be positive, got {}", this->name(),
               options.num_features());
  reset();
}

void BatchNormImplBase::reset() {
  const int64_t c = options.num_features();
  for (const char* p : {"weight", "bias"})
    if (parameters_.contains(p)) parameters_.erase(p);
  for (const char* p : {"running_mean", "running_var", "num_batches_tracked"})
    if (buffers_.contains(p)) buffers_.erase(p);
  if (options.affine()) {
    weight = register_parameter("weight", tensor::empty({c}));
    bias = register_parameter("bias", tensor::empty({c}));
  } else {
    weight = register_parameter("weight", Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", tensor::zeros({c}));
    running_var = register_buffer("running_var", tensor::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", tensor::zeros({}, TensorOptions().dtype(kInt64)));
  } else {
    running_mean = register_buffer("running_mean", Tensor());
    running_var = register_buffer("running_var", Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", Tensor());
  }
  reset_parameters();
}

void BatchNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard no_grad;
  running_mean.fill_(0);
  running_var.fill_(1);
  num_batches_tracked.fill_(0);
}

void BatchNormImplBase::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    NoGradGuard no_grad;
    weight.fill_(1);
    bias.fill_(0);
  }
}

Tensor BatchNormImplBase::forward(const Tensor& input) {
  TENSOR_CHECK(input.defined() && input.dim() >= min_dim_ && input.dim() <= max_dim_,
               "{}: expected a {}D{} input, got {}", name(), min_dim_,
               max_dim_ > min_dim_ ? " or " + std::to_string(max_dim_) + "D" : std::string(),
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  TENSOR_CHECK(input.size(1) == options.num_features(), "{}: expected {} channels (dim 1), got input {}", name(),
               options.num_features(), input.describe());
  // As libtorch's BatchNormImplBase::forward: momentum nullopt is a cumulative average.
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    {
      NoGradGuard no_grad;
      num_batches_tracked.add_(1);
    }
    if (!options.momentum().has_value()) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  return F::batch_norm(input, running_mean, running_var,
                       F::BatchNormFuncOptions()
                           .weight(weight)
                           .bias(bias)
                           .training(is_training() || !options.track_running_stats())
                           .momentum(factor)
                           .eps(options.eps()));
}

void BatchNormImplBase::pretty_print(std::ostream& s) const {
  s << name() << "(" << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum().has_value()) s << *options.momentum();
  else s << "None";
  s << ", affine=" << b(options.affine()) << ", track_running_stats=" << b(options.track_running_stats()) << ")";
}

BatchNorm1dImpl::BatchNorm1dImpl(const BatchNormOptions& options_)
    : BatchNormImplBase(options_, "tensor::nn::BatchNorm1d", 2, 3) {}
BatchNorm2dImpl::BatchNorm2dImpl(const BatchNormOptions& options_)
    : BatchNormImplBase(options_, "tensor::nn::BatchNorm2d", 4, 4) {}
BatchNorm3dImpl::BatchNorm3dImpl(const BatchNormOptions& options_)
    : BatchNormImplBase(options_, "tensor::nn::BatchNorm3d", 5, 5) {}

// ---- LayerNorm ----

LayerNormImpl::LayerNormImpl(LayerNormOptions options_) : Module("tensor::nn::LayerNorm"), options(std::move(options_)) {
  reset();
}

void LayerNormImpl::reset() {
  for (const char* p : {"weight", "bias"})
    if (parameters_.contains(p)) parameters_.erase(p);
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", tensor::empty(options.normalized_shape()));
    bias = register_parameter("bias", tensor::empty(options.normalized_shape()));
  } else {
    weight = register_parameter("weight", Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", Tensor(), /*requires_grad=*/false);
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (!options.elementwise_affine()) return;
  NoGradGuard no_grad;
  weight.fill_(1);
  bias.fill_(0);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return F::layer_norm(input, F::LayerNormFuncOptions(options.normalized_shape())
                                  .weight(weight)
                                  .bias(bias)
                                  .eps(options.eps()));
}

void LayerNormImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::LayerNorm(";
  print_shape(s, options.normalized_shape());
  s << ", eps=" << options.eps() << ", elementwise_affine=" << b(options.elementwise_affine()) << ")";
}

// ---- GroupNorm ----

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_) : Module("tensor::nn::GroupNorm"), options(options_) {
  TENSOR_CHECK(options.num_groups() > 0 && options.num_channels() % options.num_groups() == 0,
               "GroupNorm: num_channels ({}) must be divisible by num_groups ({})", options.num_channels(),
               options.num_groups());
  reset();
}

void GroupNormImpl::reset() {
  for (const char* p : {"weight", "bias"})
    if (parameters_.contains(p)) parameters_.erase(p);
  if (options.affine()) {
    weight = register_parameter("weight", tensor::empty({options.num_channels()}));
    bias = register_parameter("bias", tensor::empty({options.num_channels()}));
  } else {
    weight = register_parameter("weight", Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", Tensor(), /*requires_grad=*/false);
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  NoGradGuard no_grad;
  weight.fill_(1);
  bias.fill_(0);
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  return F::group_norm(input, F::GroupNormFuncOptions(options.num_groups()).weight(weight).bias(bias).eps(options.eps()));
}

void GroupNormImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::GroupNorm(" << options.num_groups() << ", " << options.num_channels() << ", eps=" << options.eps()
    << ", affine=" << b(options.affine()) << ")";
}

}  // namespace tensor::nn
