// libtorch's in-place random fills (Tensor::uniform_, normal_, bernoulli_, random_, ...).
//
// Note [In-place random fills]
// Each draws with the factories (rand, randn, randint: the global generator, so manual_seed
// makes them repeat) in float64 for a float64 tensor and float32 otherwise, transforms the
// draw with public ops, and writes it with copy_. So the profiler sees the ops they are made
// of, strided and broadcast-expanded targets are written as copy_ writes them, and a tensor
// with history gets copy_'s node, whose gradient for the old values is zero, as libtorch's
// fills record. A leaf that requires grad is refused here, naming the fill.
#include <cmath>
#include <cstdint>
#include <limits>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {
namespace {
void check_target(const Tensor& t, const char* op) {
  TENSOR_CHECK(t.defined(), "{}: called on an undefined tensor", op);
  TENSOR_CHECK(!t.is_complex(), "{}: complex tensors are not supported, got {}", op, t.describe());
  TENSOR_CHECK(!(t.is_leaf() && t.requires_grad() && GradMode::is_enabled()),
               "{}: a leaf Variable that requires grad is being used in an in-place operation ({}); do it under "
               "NoGradGuard", op, t.describe());
}
void check_floating(const Tensor& t, const char* op) {
  check_target(t, op);
  TENSOR_CHECK(t.is_floating_point(), "{}: expected a floating point tensor, got {}", op, t.describe());
}
// Draws for t are float64 for a float64 tensor, float32 for the others.
TensorOptions draw_options(const Tensor& t) {
  return TensorOptions(t.dtype() == kFloat64 ? kFloat64 : kFloat32).device(t.device());
}
// Uniform on [0, 1), and standard normal, in t's shape.
Tensor u01(const Tensor& t) { return rand(t.sizes(), draw_options(t)); }
Tensor normal01(const Tensor& t) { return randn(t.sizes(), draw_options(t)); }
// The largest integer the dtype holds, and every integer below it, exactly.
int64_t exact_max(ScalarType d) {
  switch (d) {
    case kBool: return 1;
    case kUInt8: return 255;
    case kInt8: return 127;
    case kInt16: return 32767;
    case kInt32: return 2147483647;
    case kInt64: return std::numeric_limits<int64_t>::max();
    case kFloat16: return int64_t(1) << 11;
    case kBFloat16: return int64_t(1) << 8;
    case kFloat32: return int64_t(1) << 24;
    default: return int64_t(1) << 53;
  }
}
int64_t exact_min(ScalarType d) {
  switch (d) {
    case kBool:
    case kUInt8: return 0;
    case kInt8: return -128;
    case kInt16: return -32768;
    case kInt32: return -2147483647 - 1;
    case kInt64: return std::numeric_limits<int64_t>::min();
    default: return -exact_max(d);
  }
}
}  // namespace

Tensor& Tensor::uniform_(double from, double to) const {
  check_floating(*this, "uniform_");
  TENSOR_CHECK(from <= to && std::isfinite(to - from),
               "uniform_: expects to return a [from, to) range, but found from={} > to={} (or a range wider "
               "than the largest double)", from, to);
  return copy_(u01(*this) * (to - from) + from);
}

Tensor& Tensor::normal_(double mean, double std) const {
  check_floating(*this, "normal_");
  TENSOR_CHECK(std >= 0, "normal_: expects std >= 0.0, but found std {}", std);
  return copy_(normal01(*this) * std + mean);
}

Tensor& Tensor::bernoulli_(double p) const {
  check_target(*this, "bernoulli_");
  TENSOR_CHECK(p >= 0 && p <= 1, "bernoulli_: expects 0 <= p <= 1, but got p={}", p);
  return copy_(u01(*this).lt(p));
}

Tensor& Tensor::bernoulli_(const Tensor& p) const {
  check_target(*this, "bernoulli_");
  TENSOR_CHECK(p.defined() && p.is_floating_point(),
               "bernoulli_: expected a floating point probability tensor, got {}", p.defined() ? p.describe() : "undefined");
  Tensor probs;
  {
    NoGradGuard no_grad;
    probs = p.expand(sizes());  // raises naming both shapes when p does not broadcast to this one
    TENSOR_CHECK(probs.numel() == 0 || (probs.min().item<double>() >= 0 && probs.max().item<double>() <= 1),
                 "bernoulli_: expected all probabilities in [0, 1], got {} with min {} and max {}", p.describe(),
                 probs.min().item<double>(), probs.max().item<double>());
  }
  return copy_(u01(*this).lt(probs.to(draw_options(*this).dtype())));
}

Tensor& Tensor::random_(int64_t from, std::optional<int64_t> to) const {
  check_target(*this, "random_");
  const ScalarType d = dtype();
  // Without `to`: up to the largest exact integer, inclusive (int64's own maximum is excluded).
  const int64_t hi = to ? *to : (d == kInt64 ? exact_max(d) : exact_max(d) + 1);
  TENSOR_CHECK(from < hi, "random_: expects 'from' to be less than 'to', but got from={} >= to={}", from, hi);
  TENSOR_CHECK(from >= exact_min(d) && hi - 1 <= exact_max(d),
               "random_: the range [{}, {}) does not fit {} (its integers run from {} to {})", from, hi,
               to_string(d), exact_min(d), exact_max(d));
  return copy_(randint(from, hi, sizes(), TensorOptions(kInt64).device(device())));
}

Tensor& Tensor::random_(int64_t to) const { return random_(0, to); }

Tensor& Tensor::random_() const { return random_(0, std::nullopt); }

Tensor& Tensor::exponential_(double lambd) const {
  check_floating(*this, "exponential_");
  TENSOR_CHECK(lambd > 0, "exponential_: expects lambd > 0.0, but found lambd={}", lambd);
  return copy_(u01(*this).neg().log1p().neg() / lambd);  // 1 - u is in (0, 1]: finite
}

Tensor& Tensor::log_normal_(double mean, double std) const {
  check_floating(*this, "log_normal_");
  TENSOR_CHECK(std > 0, "log_normal_: expects std > 0.0, but found std={}", std);
  return copy_((normal01(*this) * std + mean).exp());
}

Tensor& Tensor::cauchy_(double median, double sigma) const {
  check_floating(*this, "cauchy_");
  TENSOR_CHECK(sigma > 0, "cauchy_: expects sigma > 0.0, but found sigma={}", sigma);
  return copy_(((u01(*this) - 0.5) * 3.14159265358979323846).tan() * sigma + median);
}

Tensor& Tensor::geometric_(double p) const {
  check_target(*this, "geometric_");
  TENSOR_CHECK(dtype() != kBool, "geometric_: bool tensors are not supported, got {}", describe());
  TENSOR_CHECK(p > 0 && p < 1, "geometric_: expects p to be in (0, 1), but got p={}", p);
  return copy_((u01(*this).neg().log1p() / std::log1p(-p)).ceil().clamp_min(1));
}

Tensor bernoulli(const Tensor& p) {
  TENSOR_CHECK(p.defined() && p.is_floating_point(), "bernoulli: expected a floating point probability tensor, got {}",
               p.defined() ? p.describe() : "undefined");
  Tensor out = empty(p.sizes(), TensorOptions(p.dtype()).device(p.device()));
  out.bernoulli_(p);
  return out;
}

// torch::normal: mean + std * z with z ~ N(0, 1) drawn in the result's shape, so the gradient
// reaches mean (1) and std (z), as libtorch's normal derivatives give.
namespace {
Tensor normal_from(const Tensor& mean, const Tensor& std, IntArrayRef shape, const TensorOptions& o) {
  Tensor z = empty(shape, o).normal_(0, 1);
  return mean + z * std;
}
void check_normal_tensor(const Tensor& t, const char* what) {
  TENSOR_CHECK(t.defined() && t.is_floating_point(), "normal: expected a floating point {} tensor, got {}", what,
               t.defined() ? t.describe() : "undefined");
}
void check_std_tensor(const Tensor& std) {
  check_normal_tensor(std, "std");
  TENSOR_CHECK(std.numel() == 0 || std.is_meta() || std.detach().min().item<double>() >= 0,
               "normal: expects all elements of std >= 0.0 (std {})", std.describe());
}
}  // namespace

Tensor normal(const Tensor& mean, double std) {
  check_normal_tensor(mean, "mean");
  TENSOR_CHECK(std >= 0, "normal: expects std >= 0.0, but found std={} (mean {})", std, mean.describe());
  return mean + empty(mean.sizes(), mean.options()).normal_(0, 1) * std;
}

Tensor normal(double mean, const Tensor& std) {
  check_std_tensor(std);
  return normal_from(scalar_tensor(mean, std.options()), std, std.sizes(), std.options());
}

Tensor normal(const Tensor& mean, const Tensor& std) {
  check_normal_tensor(mean, "mean");
  check_std_tensor(std);
  TENSOR_CHECK(mean.device() == std.device(), "normal: mean ({}) and std ({}) must be on one device", mean.describe(),
               std.describe());
  const std::vector<int64_t> shape = broadcast_shapes(mean.sizes(), std.sizes());
  return normal_from(mean, std, shape, mean.options().dtype(promote_types(mean.dtype(), std.dtype())));
}

Tensor normal(double mean, double std, IntArrayRef size, const TensorOptions& o) {
  TENSOR_CHECK(std >= 0, "normal: expects std >= 0.0, but found std={} (size {})", std, detail::shape_str(size));
  return empty(size, o).normal_(mean, std);
}

}  // namespace tensor
