// libtorch's torch:: nn free functions (include/tensor/nn/functions.h), composed of public
// differentiable ops following ATen's definitions (aten/src/ATen/native/Activation.cpp,
// Loss.cpp, Dropout.cpp, Distance.cpp, RNN.cpp) term by term.
//
// Note [Masked branches]
// A composite `where(c, f(x), g(x))` differentiates both branches and masks the gradients; a
// branch that overflows where it is not selected (exp of a large x) would turn the masked zero
// into 0 * inf = NaN. Each such branch is therefore fed a clamped input (expm1(min(x, 0)))
// so that its unused values, and their gradients, stay finite.
#include "tensor/nn/functions.h"

#include <cmath>
#include <vector>

#include "src/core/Check.h"
#include "src/ops/LossOps.h"
#include "tensor/autograd/Function.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/functional.h"
#include "tensor/ops.h"

namespace tensor {

namespace {

Tensor opt(const std::optional<Tensor>& t) { return t.has_value() ? *t : Tensor(); }

void check_defined(const char* op, const char* what, const Tensor& t) {
  TENSOR_CHECK(t.defined(), "{}: {} must be a defined tensor", op, what);
}

void check_floating(const char* op, const char* what, const Tensor& t) {
  check_defined(op, what, t);
  TENSOR_CHECK(t.is_floating_point(), "{}: {} must be floating point, got {}", op, what, t.describe());
}

nn::LossReduction to_reduction(const char* op, int64_t r) {
  switch (r) {
    case Reduction::None: return kNone;
    case Reduction::Mean: return kMean;
    case Reduction::Sum: return kSum;
    default: break;
  }
  TENSOR_ERROR("{}: reduction must be Reduction::None (0), Mean (1) or Sum (2), got {}", op, r);
}

Tensor apply_reduction(const Tensor& loss, int64_t reduction, const char* op) {
  switch (to_reduction(op, reduction).kind()) {
    case nn::LossReduction::None: return loss;
    case nn::LossReduction::Sum: return loss.sum();
    case nn::LossReduction::Mean: return loss.mean();
  }
  return loss;
}

// input and target broadcast (libtorch warns when the sizes differ; it still broadcasts).
void check_pair(const char* op, const Tensor& input, const Tensor& target, bool target_floating = true) {
  check_floating(op, "input", input);
  if (target_floating) check_floating(op, "target", target);
  else check_defined(op, "target", target);
  if (input.sizes() == target.sizes()) return;
  bool ok = true;
  try {
    broadcast_shapes(input.sizes(), target.sizes());
  } catch (const Error&) {
    ok = false;
  }
  TENSOR_CHECK(ok, "{}: input {} and target {} have shapes that do not broadcast", op, input.describe(),
               target.describe());
}

// Writes `value` into `self` in place (the in-place forms of the composite activations).
Tensor& assign(Tensor& self, const Tensor& value) {
  self.copy_(value);
  return self;
}

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

}  // namespace

// ---- activations ----

Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope) {
  check_floating("leaky_relu", "input", self);
  return where(self > 0, self, self * negative_slope);
}
Tensor& leaky_relu_(Tensor& self, const Scalar& negative_slope) { return assign(self, leaky_relu(self, negative_slope)); }

Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  check_floating("elu", "input", self);
  const double a = alpha.to_double(), s = scale.to_double(), is = input_scale.to_double();
  // Note [Masked branches]: the exponential branch only sees x <= 0.
  Tensor neg = tensor::expm1(self.clamp_max(0) * is) * (a * s);
  return where(self > 0, self * s, neg);
}
Tensor& elu_(Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  return assign(self, elu(self, alpha, scale, input_scale));
}

Tensor selu(const Tensor& self) { return elu(self, kSeluAlpha, kSeluScale, 1.0); }
Tensor& selu_(Tensor& self) { return assign(self, selu(self)); }

Tensor celu(const Tensor& self, const Scalar& alpha) {
  const double a = alpha.to_double();
  TENSOR_CHECK(a != 0, "celu: alpha must not be 0 (it divides the input), got {}", a);
  return elu(self, a, 1.0, 1.0 / a);
}
Tensor& celu_(Tensor& self, const Scalar& alpha) { return assign(self, celu(self, alpha)); }

Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  check_floating("softplus", "input", self);
  const double b = beta.to_double(), t = threshold.to_double();
  Tensor bx = self * b;
  // Note [Masked branches]: log1p(exp(.)) only sees beta * x <= threshold.
  Tensor soft = tensor::log1p(tensor::exp(bx.clamp_max(t))) / b;
  return where(bx > t, self, soft);
}

Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  check_floating("hardtanh", "input", self);
  TENSOR_CHECK(min_val.to_double() <= max_val.to_double(), "hardtanh: min_val ({}) must be at most max_val ({})",
               min_val.to_double(), max_val.to_double());
  // where() rather than clamp: the gradient is 0 at the bounds themselves, as ATen's.
  return where(self <= min_val, min_val, where(self >= max_val, max_val, self));
}
Tensor& hardtanh_(Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  return assign(self, hardtanh(self, min_val, max_val));
}

Tensor relu6(const Tensor& self) { return hardtanh(self, 0.0, 6.0); }
Tensor& relu6_(Tensor& self) { return assign(self, relu6(self)); }

Tensor log_sigmoid(const Tensor& self) {
  check_floating("log_sigmoid", "input", self);
  return -softplus(-self, 1.0, 20.0);
}

Tensor hardsigmoid(const Tensor& self) {
  check_floating("hardsigmoid", "input", self);
  return hardtanh(self + 3.0, 0.0, 6.0) / 6.0;
}

Tensor hardswish(const Tensor& self) {
  check_floating("hardswish", "input", self);
  return self * (hardtanh(self + 3.0, 0.0, 6.0) / 6.0);
}

Tensor mish(const Tensor& self) {
  check_floating("mish", "input", self);
  return self * tensor::tanh(softplus(self, 1.0, 20.0));
}

Tensor glu(const Tensor& self, int64_t dim) {
  check_floating("glu", "input", self);
  TENSOR_CHECK(self.dim() > 0, "glu: does not support a 0-dim input {}", self.describe());
  const int64_t d = detail::wrap_dim(dim, self.dim(), "glu");
  const int64_t n = self.size(d);
  TENSOR_CHECK(n % 2 == 0, "glu: halving dimension must be even, but dimension {} is size {} (input {})", d, n,
               self.describe());
  Tensor a = self.narrow(d, 0, n / 2), b = self.narrow(d, n / 2, n / 2);
  return a * tensor::sigmoid(b);
}

Tensor threshold(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  check_defined("threshold", "input", self);
  return where(self > threshold, self, value);
}
Tensor& threshold_(Tensor& self, const Scalar& th, const Scalar& value) {
  return assign(self, threshold(self, th, value));
}

Tensor prelu(const Tensor& self, const Tensor& weight) {
  check_floating("prelu", "input", self);
  check_floating("prelu", "weight", weight);
  const int64_t n = weight.numel();
  Tensor w = weight;
  if (n != 1) {
    TENSOR_CHECK(self.dim() >= 1, "prelu: a 0-dim input {} needs a weight of 1 element, got {}", self.describe(),
                 weight.describe());
    const int64_t channels = self.dim() >= 2 ? self.size(1) : self.size(0);
    TENSOR_CHECK(weight.dim() == 1 && n == channels,
                 "prelu: mismatch in the number of parameters ({}) and the input's channel size ({}): weight {} for "
                 "input {} (give 1 parameter or one per channel, dim 1)",
                 n, channels, weight.describe(), self.describe());
    std::vector<int64_t> shape(static_cast<size_t>(self.dim()), 1);
    shape[self.dim() >= 2 ? 1 : 0] = n;
    w = weight.reshape(shape);
  } else {
    w = weight.reshape({});
  }
  return where(self > 0, self, w * self);
}

Tensor softshrink(const Tensor& self, const Scalar& lambd) {
  check_floating("softshrink", "input", self);
  const double l = lambd.to_double();
  TENSOR_CHECK(l >= 0, "softshrink: lambda must be greater or equal to 0, but found to be {}", l);
  return where(self > l, self - l, where(self < -l, self + l, zeros_like(self)));
}

Tensor hardshrink(const Tensor& self, const Scalar& lambd) {
  check_floating("hardshrink", "input", self);
  const double l = lambd.to_double();
  return where(self.abs() > l, self, zeros_like(self));
}

Tensor rrelu(const Tensor& self, const Scalar& lower, const Scalar& upper, bool training) {
  check_floating("rrelu", "input", self);
  const double lo = lower.to_double(), hi = upper.to_double();
  TENSOR_CHECK(lo <= hi, "rrelu: lower bound ({}) must be less than or equal to upper bound ({})", lo, hi);
  if (!training) return leaky_relu(self, (lo + hi) / 2);
  Tensor slope = tensor::rand(self.sizes(), self.options().requires_grad(false)) * (hi - lo) + lo;
  return where(self >= 0, self, self * slope);
}

// ---- dropout ----

namespace {
// ATen's _dropout_impl: noise of the input's shape, or [N, C, 1, ...] for feature dropout.
Tensor dropout_impl(const char* op, const Tensor& input, double p, bool train, bool feature, bool alpha) {
  check_defined(op, "input", input);
  TENSOR_CHECK(p >= 0 && p <= 1, "{}: dropout probability has to be between 0 and 1, but got {}", op, p);
  if (!train || p == 0 || input.numel() == 0) return input;
  TENSOR_CHECK(input.is_floating_point(), "{}: input must be floating point, got {}", op, input.describe());
  if (p == 1) return input * zeros({}, input.options().requires_grad(false));
  std::vector<int64_t> noise_shape = input.sizes().vec();
  if (feature) {
    TENSOR_CHECK(input.dim() >= 2,
                 "{}: feature dropout needs an input of at least 2 dims (N, C, *), got {}", op, input.describe());
    for (size_t i = 2; i < noise_shape.size(); ++i) noise_shape[i] = 1;
  }
  // Bernoulli(1 - p) from uniform draws (float32 noise for reduced precision inputs).
  ScalarType noise_t = input.dtype() == kFloat64 ? kFloat64 : kFloat32;
  Tensor keep = (tensor::rand(noise_shape, TensorOptions(noise_t).device(input.device())) < (1 - p)).to(input.dtype());
  if (!alpha) return input * (keep * (1.0 / (1 - p)));
  constexpr double kAlpha = 1.7580993408473766;
  const double a = 1. / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
  Tensor b = (keep - 1) * (kAlpha * a) + kAlpha * a * p;
  return input * (keep * a) + b;
}
}  // namespace

Tensor dropout(const Tensor& input, double p, bool train) {
  return dropout_impl("dropout", input, p, train, /*feature=*/false, /*alpha=*/false);
}
Tensor& dropout_(Tensor& self, double p, bool train) {
  if (!train || p == 0) return self;
  return assign(self, dropout(self, p, train));
}
Tensor feature_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl("feature_dropout", input, p, train, /*feature=*/true, /*alpha=*/false);
}
Tensor alpha_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl("alpha_dropout", input, p, train, /*feature=*/false, /*alpha=*/true);
}
Tensor feature_alpha_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl("feature_alpha_dropout", input, p, train, /*feature=*/true, /*alpha=*/true);
}

// ---- losses ----

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                int64_t ignore_index) {
  return nn::functional::nll_loss(self, target,
                                  nn::functional::NLLLossFuncOptions()
                                      .weight(opt(weight))
                                      .reduction(to_reduction("nll_loss", reduction))
                                      .ignore_index(ignore_index));
}

Tensor nll_loss2d(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                  int64_t ignore_index) {
  TENSOR_CHECK(self.dim() == 4, "nll_loss2d: input must be 4-d [N, C, H, W], got {}", self.describe());
  return nll_loss(self, target, weight, reduction, ignore_index);
}

Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t reduction, int64_t ignore_index, double label_smoothing) {
  return nn::functional::cross_entropy(self, target,
                                       nn::functional::CrossEntropyFuncOptions()
                                           .weight(opt(weight))
                                           .reduction(to_reduction("cross_entropy_loss", reduction))
                                           .ignore_index(ignore_index)
                                           .label_smoothing(label_smoothing));
}

// Note [Binary cross entropy gradient]
// The loss clamps each log at -100 so that p = 0 or 1 gives a finite value, but differentiating
// that composite gives 0 * inf = NaN at p = 0 or 1 (the clamp passes no gradient, log's is
// 1 / 0). libtorch's own derivative (binary_cross_entropy_backward) is instead
// (p - y) / max((1 - p) p, 1e-12): finite and large at the ends, which a ported training loop
// relies on. So the unreduced loss is a Function with that backward; for the target it is
// log(1 - p) - log(p) (libtorch's -logit(p)). Both are written in public ops, so double
// backward works; weight and reduction stay outside, as ordinary differentiable ops.
struct BinaryCrossEntropyFunction : autograd::Function<BinaryCrossEntropyFunction> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& p, const Tensor& y) {
    ctx->save_for_backward({p, y});
    Tensor log_p = tensor::log(p).clamp_min(-100);
    Tensor log_1mp = tensor::log(1 - p).clamp_min(-100);
    return -(y * log_p + (1 - y) * log_1mp);
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list grads) {
    const autograd::variable_list saved = ctx->get_saved_variables();
    const Tensor &p = saved[0], &y = saved[1];
    const Tensor& g = grads[0];
    constexpr double kEps = 1e-12;  // libtorch's EPSILON in binary_cross_entropy_backward
    Tensor gp = g * (p - y) / ((1 - p) * p).clamp_min(kEps);
    Tensor gy = ctx->needs_input_grad(1) ? g * (tensor::log(1 - p) - tensor::log(p)) : Tensor();
    return {gp, gy};
  }
};

Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                            int64_t reduction) {
  const char* op = "binary_cross_entropy";
  check_floating(op, "input", self);
  check_floating(op, "target", target);
  TENSOR_CHECK(self.sizes() == target.sizes(),
               "{}: using a target size {} that is different to the input size {} is not supported; please ensure "
               "they have the same size",
               op, detail::shape_str(target.sizes()), detail::shape_str(self.sizes()));
  if (self.numel() > 0) {
    NoGradGuard no_grad;
    // Written as "all in [0, 1]" so that NaN, which compares false both ways, fails too (libtorch's
    // CPU kernel checks input >= 0 && input <= 1 per element).
    TENSOR_CHECK(self.ge(0).logical_and(self.le(1)).all().item<bool>(),
                 "{}: all elements of input should be between 0 and 1 (input {}); for logits use "
                 "binary_cross_entropy_with_logits",
                 op, self.describe());
  }
  // Each log is clamped at -100, so that x = 0 or 1 gives a finite loss (ATen's convention),
  // with libtorch's gradient there (Note [Binary cross entropy gradient]).
  Tensor loss = BinaryCrossEntropyFunction::apply(self, target);
  Tensor w = opt(weight);
  if (w.defined()) {
    check_floating(op, "weight", w);
    loss = loss * w;
  }
  return apply_reduction(loss, reduction, op);
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight, int64_t reduction) {
  return nn::functional::binary_cross_entropy_with_logits(
      self, target,
      nn::functional::BinaryCrossEntropyWithLogitsFuncOptions()
          .weight(opt(weight))
          .pos_weight(opt(pos_weight))
          .reduction(to_reduction("binary_cross_entropy_with_logits", reduction)));
}

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return nn::functional::mse_loss(self, target, nn::functional::MSELossFuncOptions(to_reduction("mse_loss", reduction)));
}

Tensor l1_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return nn::functional::l1_loss(self, target, nn::functional::L1LossFuncOptions(to_reduction("l1_loss", reduction)));
}

namespace {

Tensor smooth_l1_composite(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  const char* op = "smooth_l1_loss";
  Tensor d = (self - target).abs();
  if (beta == 0) return apply_reduction(d, reduction, op);
  Tensor loss = where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta);
  return apply_reduction(loss, reduction, op);
}

Tensor huber_composite(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  Tensor d = (self - target).abs();
  Tensor loss = where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta);
  return apply_reduction(loss, reduction, "huber_loss");
}

// Note [Huber loss Function]
// Recorded as its composite, huber_loss's backward ran the backward of abs, sub, where, and
// three muls over the input's shape. As a Function it runs its forward as one kernel on CPU
// (Note [Fused CPU losses]; the composite elsewhere) and its backward as one formula:
// d loss / d input = clamp(input - target, -delta, delta) (d inside the quadratic part,
// delta * sign(d) outside), times the incoming gradient (over numel for the mean); the target's
// is its negative. Written in public ops, so double backward works (clamp passes 1 inside).
// Same-shape inputs only: a broadcast target keeps the composite, whose gradients sum down.
// smooth_l1_loss with beta > 0 is the Huber loss with delta = beta, divided by beta: the same
// Function with smooth_l1 set (its forward in the composite's own formula, its gradient the
// clamp over beta).
struct HuberLossFunction : autograd::Function<HuberLossFunction> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& input, const Tensor& target, int64_t reduction,
                        double delta, bool smooth_l1) {
    ctx->save_for_backward({input, target});
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["delta"] = delta;
    ctx->saved_data["smooth_l1"] = smooth_l1;
    Tensor fused = ops::fused_huber_loss(input, target, reduction, delta, smooth_l1);
    if (fused.defined()) return fused;
    return smooth_l1 ? smooth_l1_composite(input, target, reduction, delta)
                     : huber_composite(input, target, reduction, delta);
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list grads) {
    const autograd::variable_list saved = ctx->get_saved_variables();
    const Tensor &input = saved[0], &target = saved[1];
    const double delta = ctx->saved_data["delta"].to_double();
    Tensor g = grads[0];
    if (ctx->saved_data["reduction"].to_int() == Reduction::Mean) g = g / static_cast<double>(input.numel());
    if (ctx->saved_data["smooth_l1"].to_bool()) g = g / delta;
    Tensor gi = (input - target).clamp(-delta, delta) * g;
    Tensor gt = ctx->needs_input_grad(1) ? -gi : Tensor();
    return {gi, gt, Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  const char* op = "huber_loss";
  check_pair(op, self, target);
  TENSOR_CHECK(delta > 0, "{}: delta must be positive, got {}", op, delta);
  to_reduction(op, reduction);  // an invalid reduction raises here, before any path
  // One kernel where nothing records (Note [Fused CPU losses]); else the Function (Note [Huber
  // loss Function]) for same-shape inputs, the composite for a broadcast target.
  Tensor fused = ops::fused_huber_loss(self, target, reduction, delta);
  if (fused.defined()) return fused;
  if (self.sizes() == target.sizes()) return HuberLossFunction::apply(self, target, reduction, delta, false);
  return huber_composite(self, target, reduction, delta);
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  const char* op = "smooth_l1_loss";
  check_pair(op, self, target);
  TENSOR_CHECK(beta >= 0, "{}: beta must be non-negative, got {}", op, beta);
  to_reduction(op, reduction);  // an invalid reduction raises here, before any path
  if (beta == 0) return smooth_l1_composite(self, target, reduction, beta);  // the L1 loss
  // As huber_loss (Note [Huber loss Function]): one kernel where nothing records, else the
  // Function for same-shape inputs, the composite for a broadcast target.
  Tensor fused = ops::fused_huber_loss(self, target, reduction, beta, /*smooth_l1=*/true);
  if (fused.defined()) return fused;
  if (self.sizes() == target.sizes()) return HuberLossFunction::apply(self, target, reduction, beta, true);
  return smooth_l1_composite(self, target, reduction, beta);
}

Tensor kl_div(const Tensor& self, const Tensor& target, int64_t reduction, bool log_target) {
  const char* op = "kl_div";
  check_pair(op, self, target);
  Tensor loss = log_target ? tensor::exp(target) * (target - self) : tensor::xlogy(target, target) - target * self;
  return apply_reduction(loss, reduction, op);
}

Tensor soft_margin_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  const char* op = "soft_margin_loss";
  check_pair(op, self, target);
  // log(1 + exp(z)) = softplus(z) without overflow for large z.
  return apply_reduction(softplus(-self * target, 1.0, 20.0), reduction, op);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           int64_t reduction) {
  const char* op = "margin_ranking_loss";
  check_floating(op, "input1", input1);
  check_floating(op, "input2", input2);
  check_defined(op, "target", target);
  TENSOR_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(),
               "{}: all input tensors should have the same number of dims, got input1 {}, input2 {}, target {}", op,
               input1.describe(), input2.describe(), target.describe());
  Tensor loss = (-target * (input1 - input2) + margin).clamp_min(0);
  return apply_reduction(loss, reduction, op);
}

Tensor hinge_embedding_loss(const Tensor& self, const Tensor& target, double margin, int64_t reduction) {
  const char* op = "hinge_embedding_loss";
  check_pair(op, self, target, /*target_floating=*/false);
  Tensor zero = zeros({}, self.options().requires_grad(false));
  Tensor margin_clamp = (margin - self).clamp_min(0);
  Tensor out_margin = where(target != 1, margin_clamp, zero);
  Tensor out_self = where(target != -1, self, zero);
  return apply_reduction(out_margin + out_self, reduction, op);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             int64_t reduction) {
  const char* op = "cosine_embedding_loss";
  check_floating(op, "input1", input1);
  check_floating(op, "input2", input2);
  check_defined(op, "target", target);
  const int64_t td = target.dim();
  TENSOR_CHECK(td <= 1, "{}: 0-d or 1-d target tensor expected (multi-target not supported), got {}", op,
               target.describe());
  TENSOR_CHECK(input1.sizes() == input2.sizes(), "{}: input1 {} and input2 {} must have the same shape", op,
               input1.describe(), input2.describe());
  TENSOR_CHECK(input1.dim() == td + 1,
               "{}: {}-d target expects {}-d inputs ([N, D] with a [N] target, [D] with a 0-d one), got input1 {}", op,
               td, td + 1, input1.describe());
  TENSOR_CHECK(td == 0 || target.size(0) == input1.size(0),
               "{}: target {} must have one entry per row of input1 {}", op, target.describe(), input1.describe());
  constexpr double kEps = 1e-12;
  const int64_t d = td;  // the feature dim
  Tensor prod_sum = (input1 * input2).sum({d});
  Tensor mag1 = (input1 * input1).sum({d}) + kEps;
  Tensor mag2 = (input2 * input2).sum({d}) + kEps;
  Tensor cos = prod_sum / tensor::sqrt(mag1 * mag2);
  Tensor zero = zeros({}, cos.options().requires_grad(false));
  Tensor pos = 1 - cos, neg = (cos - margin).clamp_min(0);
  Tensor loss = where(target == 1, pos, zero) + where(target == -1, neg, zero);
  return apply_reduction(loss, reduction, op);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        int64_t reduction) {
  const char* op = "poisson_nll_loss";
  check_pair(op, input, target);
  Tensor loss = log_input ? tensor::exp(input) - target * input : input - target * tensor::log(input + eps);
  if (full) {
    Tensor t = target.detach();
    // Stirling: t log t - t + 0.5 log(2 pi t), only where t > 1 (the log sees 1 elsewhere).
    Tensor safe = where(t > 1, t, ones_like(t));
    Tensor stirling = safe * tensor::log(safe) - safe + 0.5 * tensor::log(2 * M_PI * safe);
    loss = loss + where(t > 1, stirling, zeros_like(t));
  }
  return apply_reduction(loss, reduction, op);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  const char* op = "cosine_similarity";
  check_floating(op, "x1", x1);
  check_floating(op, "x2", x2);
  std::vector<int64_t> shape;
  try {
    shape = broadcast_shapes(x1.sizes(), x2.sizes());
  } catch (const Error&) {
    TENSOR_ERROR("{}: x1 {} and x2 {} do not broadcast", op, x1.describe(), x2.describe());
  }
  const int64_t d = detail::wrap_dim(dim, static_cast<int64_t>(shape.size()), op);
  Tensor a = x1.expand(shape), b = x2.expand(shape);
  // Each vector is divided by its norm (clamped at eps) before the dot product, as ATen.
  Tensor n1 = a.norm(2, {d}, true).clamp_min(eps);
  Tensor n2 = b.norm(2, {d}, true).clamp_min(eps);
  return ((a / n1) * (b / n2)).sum({d});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  const char* op = "pairwise_distance";
  check_floating(op, "x1", x1);
  check_floating(op, "x2", x2);
  const int64_t out_dim = std::max(x1.dim(), x2.dim());
  TENSOR_CHECK(out_dim > 0, "{}: x1 {} and x2 {} must have at least one dim", op, x1.describe(), x2.describe());
  Tensor diff;
  try {
    diff = x1 - x2;
  } catch (const Error&) {
    TENSOR_ERROR("{}: x1 {} and x2 {} do not broadcast", op, x1.describe(), x2.describe());
  }
  return (diff + eps).norm(p, {out_dim - 1}, keepdim);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, int64_t reduction) {
  const char* op = "triplet_margin_loss";
  check_floating(op, "anchor", anchor);
  check_floating(op, "positive", positive);
  check_floating(op, "negative", negative);
  TENSOR_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
               "{}: all inputs should have the same number of dimensions, got anchor {}, positive {}, negative {}", op,
               anchor.describe(), positive.describe(), negative.describe());
  Tensor d_pos = pairwise_distance(anchor, positive, p, eps);
  Tensor d_neg = pairwise_distance(anchor, negative, p, eps);
  if (swap) d_neg = tensor::minimum(d_neg, pairwise_distance(positive, negative, p, eps));
  return apply_reduction((margin + d_pos - d_neg).clamp_min(0), reduction, op);
}

namespace {

// multi_margin_loss of a 2-d [N, C] input from public ops (the recording path's formula).
Tensor multi_margin_composite(const Tensor& x, const Tensor& y, int64_t pv, double margin, const Tensor& w,
                              int64_t reduction) {
  const char* op = "multi_margin_loss";
  const int64_t n = x.size(0), c = x.size(1);
  if (n > 0) {
    NoGradGuard g;
    TENSOR_CHECK(!(y.lt(0).logical_or(y.ge(c))).any().item<bool>(), "{}: target out of range for {} classes", op, c);
  }
  Tensor idx = y.unsqueeze(1);
  Tensor xy = x.gather(1, idx);                    // [N, 1]
  Tensor m = (margin - xy + x).clamp_min(0);       // [N, C]
  if (pv == 2) m = m * m;
  if (w.defined()) m = m * w.index_select(0, y).unsqueeze(1);
  Tensor not_target = ones({n, c}, x.options().requires_grad(false)).scatter(1, idx, Scalar(0.0));
  Tensor loss = (m * not_target).sum({1}) / static_cast<double>(c);
  return apply_reduction(loss, reduction, op);
}

// Note [Multi-margin loss Function]
// Recorded as its composite, multi_margin_loss's backward ran those of clamp_min, the squaring,
// the weight's mul, the mask's mul, sum, div and gather (its scatter into a zeroed [N, C]):
// some ten passes over N x C. As a Function (2-d inputs after the 1-d case is unsqueezed; a
// weight that needs a gradient keeps the composite) its forward is the fused kernel on CPU
// (Note [Fused CPU losses]; the composite elsewhere) and its backward one pass over the input
// (cpu::multi_margin_loss_backward): with s = g_n w[y] / C and m_c = margin - x_y + x_c, class
// c != y gets s (p 1) or 2 m_c s (p 2) where m_c > 0 (libtorch's kernel's rule; clamp_min's
// derivative differs only at m_c = 0, where for p 2 it is 0 either way), class y minus their sum.
// Under create_graph, or where the kernel does not apply, the same formula is recorded from
// public ops on the input, so double backward works.
struct MultiMarginLossFunction : autograd::Function<MultiMarginLossFunction> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& input, const Tensor& target, int64_t p,
                        double margin, const Tensor& weight, int64_t reduction) {
    ctx->save_for_backward({input});
    ctx->saved_data["target"] = target;
    ctx->saved_data["weight"] = weight;
    ctx->saved_data["p"] = p;
    ctx->saved_data["margin"] = margin;
    ctx->saved_data["reduction"] = reduction;
    Tensor fused = ops::fused_multi_margin_loss(input, target, p, margin, weight, reduction);
    return fused.defined() ? fused : multi_margin_composite(input, target, p, margin, weight, reduction);
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list grads) {
    const Tensor input = ctx->get_saved_variables()[0];
    const Tensor& target = ctx->saved_data["target"].to_tensor();
    const Tensor& weight = ctx->saved_data["weight"].to_tensor();
    const int64_t p = ctx->saved_data["p"].to_int(), reduction = ctx->saved_data["reduction"].to_int();
    const double margin = ctx->saved_data["margin"].to_double();
    const Tensor& g = grads[0];
    const autograd::variable_list none(5);
    auto result = [&](const Tensor& gi) {
      autograd::variable_list r = {gi};
      r.insert(r.end(), none.begin(), none.end());
      return r;
    };
    if (!autograd::GradMode::is_enabled()) {
      Tensor gi = ops::fused_multi_margin_loss_backward(g, input, target, p, margin, weight, reduction);
      if (gi.defined()) return result(gi);
    }
    const int64_t n = input.size(0), c = input.size(1);
    const Tensor idx = target.unsqueeze(1);
    const TensorOptions opts = input.options().requires_grad(false);
    const Tensor not_target = ones({n, c}, opts).scatter(1, idx, Scalar(0.0));
    Tensor m = margin - input.gather(1, idx) + input;  // [N, C]
    Tensor active;
    {
      NoGradGuard no_grad;
      active = m.detach().gt(0).to(input.dtype()) * not_target;
    }
    Tensor s = reduction == Reduction::None ? g.unsqueeze(1) : g;  // [N, 1], or a scalar
    if (reduction == Reduction::Mean) s = s / static_cast<double>(n);
    s = s / static_cast<double>(c);
    if (weight.defined()) s = s * weight.index_select(0, target).unsqueeze(1);
    Tensor per = (p == 2 ? 2 * m * active : active) * s;  // class c != y's share
    return result(per - (1 - not_target) * per.sum({1}, true));
  }
};

}  // namespace

Tensor multi_margin_loss(const Tensor& self, const Tensor& target, const Scalar& p, const Scalar& margin,
                         const std::optional<Tensor>& weight, int64_t reduction) {
  const char* op = "multi_margin_loss";
  check_floating(op, "input", self);
  check_defined(op, "target", target);
  const int64_t pv = p.to_long();
  TENSOR_CHECK(pv == 1 || pv == 2, "{}: only p == 1 and p == 2 are supported, got {}", op, pv);
  TENSOR_CHECK(self.dim() == 1 || self.dim() == 2, "{}: expected a 1-d [C] or 2-d [N, C] input, got {}", op,
               self.describe());
  TENSOR_CHECK(is_integral(target.dtype(), false), "{}: target must be an integer tensor of class indices, got {}", op,
               target.describe());
  to_reduction(op, reduction);  // an invalid reduction raises here, before any path
  // One kernel where nothing records (Note [Fused CPU losses]); else the Function (Note
  // [Multi-margin loss Function]), or the composite for a weight that needs a gradient.
  Tensor fused = ops::fused_multi_margin_loss(self, target, pv, margin.to_double(), opt(weight), reduction);
  if (fused.defined()) return fused;
  Tensor x = self.dim() == 1 ? self.unsqueeze(0) : self;
  Tensor y = (target.dim() == 0 ? target.reshape({1}) : target).to(kInt64);
  const int64_t c = x.size(1);
  TENSOR_CHECK(y.dim() == 1 && y.size(0) == x.size(0),
               "{}: inconsistent target {} for input {} (expected {} class indices)", op, target.describe(),
               self.describe(), x.size(0));
  Tensor w = opt(weight);
  if (w.defined())
    TENSOR_CHECK(w.dim() == 1 && w.numel() == c, "{}: weight must be 1-d with {} entries, got {}", op, c, w.describe());
  Tensor loss = w.defined() && w.requires_grad()
                    ? multi_margin_composite(x, y, pv, margin.to_double(), w, reduction)
                    : MultiMarginLossFunction::apply(x, y, pv, margin.to_double(), w, reduction);
  if (self.dim() == 1 && reduction == Reduction::None) loss = loss.reshape({});
  return loss;
}

Tensor multilabel_margin_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  const char* op = "multilabel_margin_loss";
  check_floating(op, "input", self);
  check_defined(op, "target", target);
  TENSOR_CHECK(self.dim() == 1 || self.dim() == 2, "{}: expected a 1-d [C] or 2-d [N, C] input, got {}", op,
               self.describe());
  TENSOR_CHECK(target.sizes() == self.sizes() && is_integral(target.dtype(), false),
               "{}: target must be an integer tensor of the input's shape, got target {} for input {}", op,
               target.describe(), self.describe());
  Tensor x = self.dim() == 1 ? self.unsqueeze(0) : self;
  // The target is read on the host (a CUDA one too; its masks then go to the input's device).
  Tensor y = (self.dim() == 1 ? target.unsqueeze(0) : target).to(Device(kCPU), kInt64).contiguous();
  const int64_t n = x.size(0), c = x.size(1);
  // From the (non-differentiable) target: valid[n, j] for the targets before the first -1,
  // is_target[n, i] for the classes among them.
  std::vector<double> valid(static_cast<size_t>(n * c), 0.0), is_target(static_cast<size_t>(n * c), 0.0);
  std::vector<int64_t> safe(static_cast<size_t>(n * c), 0);
  const int64_t* yp = y.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < c; ++j) {
      const int64_t t = yp[r * c + j];
      if (t < 0) break;
      TENSOR_CHECK(t < c, "{}: target {} is out of range for {} classes", op, t, c);
      valid[static_cast<size_t>(r * c + j)] = 1.0;
      safe[static_cast<size_t>(r * c + j)] = t;
      is_target[static_cast<size_t>(r * c + t)] = 1.0;
    }
  }
  Tensor valid_t = tensor::tensor(valid, kFloat64).reshape({n, c}).to(x.device(), x.dtype());
  Tensor not_target = 1 - tensor::tensor(is_target, kFloat64).reshape({n, c}).to(x.device(), x.dtype());
  Tensor safe_t = tensor::tensor(safe, kInt64).reshape({n, c}).to(x.device());
  Tensor xy = x.gather(1, safe_t);                                          // [N, J]
  Tensor h = (1 - xy.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0);           // [N, J, I]
  Tensor w = valid_t.unsqueeze(2) * not_target.unsqueeze(1);
  Tensor loss = (h * w).sum({1, 2}) / static_cast<double>(c);
  if (self.dim() == 1) loss = loss.reshape({});
  return apply_reduction(loss, reduction, op);
}

// ---- layers ----

Tensor pixel_shuffle(const Tensor& self, int64_t r) {
  const char* op = "pixel_shuffle";
  check_defined(op, "input", self);
  TENSOR_CHECK(self.dim() >= 3, "{}: expected an input of at least 3 dims [*, C, H, W], got {}", op, self.describe());
  TENSOR_CHECK(r > 0, "{}: upscale_factor must be greater than 0, got {}", op, r);
  const int64_t c = self.size(-3), h = self.size(-2), w = self.size(-1);
  TENSOR_CHECK(c % (r * r) == 0, "{}: the channel dim ({}) of input {} must be divisible by upscale_factor^2 = {}", op,
               c, self.describe(), r * r);
  std::vector<int64_t> batch(self.sizes().begin(), self.sizes().end() - 3);
  const int64_t nb = static_cast<int64_t>(batch.size());
  std::vector<int64_t> s = batch;
  s.insert(s.end(), {c / (r * r), r, r, h, w});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  perm.insert(perm.end(), {nb, nb + 3, nb + 1, nb + 4, nb + 2});
  std::vector<int64_t> out = batch;
  out.insert(out.end(), {c / (r * r), h * r, w * r});
  return self.reshape(s).permute(perm).reshape(out);
}

Tensor pixel_unshuffle(const Tensor& self, int64_t r) {
  const char* op = "pixel_unshuffle";
  check_defined(op, "input", self);
  TENSOR_CHECK(self.dim() >= 3, "{}: expected an input of at least 3 dims [*, C, H, W], got {}", op, self.describe());
  TENSOR_CHECK(r > 0, "{}: downscale_factor must be greater than 0, got {}", op, r);
  const int64_t c = self.size(-3), h = self.size(-2), w = self.size(-1);
  TENSOR_CHECK(h % r == 0 && w % r == 0,
               "{}: height ({}) and width ({}) of input {} must be divisible by downscale_factor {}", op, h, w,
               self.describe(), r);
  std::vector<int64_t> batch(self.sizes().begin(), self.sizes().end() - 3);
  const int64_t nb = static_cast<int64_t>(batch.size());
  std::vector<int64_t> s = batch;
  s.insert(s.end(), {c, h / r, r, w / r, r});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  perm.insert(perm.end(), {nb, nb + 2, nb + 4, nb + 1, nb + 3});
  std::vector<int64_t> out = batch;
  out.insert(out.end(), {c * r * r, h / r, w / r});
  return self.reshape(s).permute(perm).reshape(out);
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const std::optional<Tensor>& bias) {
  const char* op = "bilinear";
  check_floating(op, "input1", input1);
  check_floating(op, "input2", input2);
  check_floating(op, "weight", weight);
  TENSOR_CHECK(weight.dim() == 3, "{}: weight must be 3-d [out, in1, in2], got {}", op, weight.describe());
  TENSOR_CHECK(input1.dim() >= 1 && input1.dim() == input2.dim(),
               "{}: input1 {} and input2 {} must have the same number of dims (at least 1)", op, input1.describe(),
               input2.describe());
  TENSOR_CHECK(IntArrayRef(input1.sizes().data(), input1.dim() - 1) == IntArrayRef(input2.sizes().data(), input2.dim() - 1),
               "{}: input1 {} and input2 {} must have the same batch dims", op, input1.describe(), input2.describe());
  TENSOR_CHECK(input1.size(-1) == weight.size(1) && input2.size(-1) == weight.size(2),
               "{}: input1 {} and input2 {} do not match weight {} (expected last dims {} and {})", op,
               input1.describe(), input2.describe(), weight.describe(), weight.size(1), weight.size(2));
  const int64_t o = weight.size(0), i1 = weight.size(1), i2 = weight.size(2);
  std::vector<int64_t> batch(input1.sizes().begin(), input1.sizes().end() - 1);
  Tensor a = input1.reshape({-1, i1});  // [B, i1]
  Tensor b = input2.reshape({-1, i2});  // [B, i2]
  // (a @ W_o) . b for every o: [B, i1] x [i1, o * i2] -> [B, o, i2], times b, summed over i2.
  Tensor aw = a.matmul(weight.permute({1, 0, 2}).reshape({i1, o * i2})).reshape({-1, o, i2});
  Tensor y = (aw * b.unsqueeze(1)).sum({2});
  Tensor bv = opt(bias);
  if (bv.defined()) {
    TENSOR_CHECK(bv.dim() == 1 && bv.size(0) == o, "{}: bias must be 1-d with {} entries, got {}", op, o,
                 bv.describe());
    y = y + bv;
  }
  batch.push_back(o);
  return y.reshape(batch);
}

// ---- recurrent cells ----

namespace {
void check_cell(const char* op, const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                int64_t gates) {
  check_floating(op, "input", input);
  check_floating(op, "hx", hx);
  check_floating(op, "w_ih", w_ih);
  check_floating(op, "w_hh", w_hh);
  TENSOR_CHECK(w_ih.dim() == 2 && w_hh.dim() == 2 && w_ih.size(0) % gates == 0 && w_hh.size(0) == w_ih.size(0),
               "{}: w_ih {} and w_hh {} must be 2-d with {} * hidden_size rows", op, w_ih.describe(), w_hh.describe(),
               gates);
  const int64_t hidden = w_hh.size(0) / gates;
  TENSOR_CHECK(input.dim() >= 1 && input.size(-1) == w_ih.size(1),
               "{}: input {} has {} features but w_ih {} expects {}", op, input.describe(),
               input.dim() ? input.size(-1) : 0, w_ih.describe(), w_ih.size(1));
  TENSOR_CHECK(hx.dim() >= 1 && hx.size(-1) == hidden && w_hh.size(1) == hidden,
               "{}: hidden state {} does not match hidden_size {} (w_hh {})", op, hx.describe(), hidden,
               w_hh.describe());
  TENSOR_CHECK(input.dim() == hx.dim() && (input.dim() == 1 || input.size(0) == hx.size(0)),
               "{}: input {} and hidden state {} must have the same batch size", op, input.describe(), hx.describe());
}
}  // namespace

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, TensorList hx, const Tensor& w_ih, const Tensor& w_hh,
                                     const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  const char* op = "lstm_cell";
  TENSOR_CHECK(hx.size() == 2, "{}: hx must hold 2 tensors (h, c), got {}", op, hx.size());
  check_cell(op, input, hx[0], w_ih, w_hh, 4);
  TENSOR_CHECK(hx[1].sizes() == hx[0].sizes(), "{}: cell state {} must have the hidden state's shape {}", op,
               hx[1].describe(), hx[0].describe());
  Tensor gates = nn::functional::linear(input, w_ih, opt(b_ih)) + nn::functional::linear(hx[0], w_hh, opt(b_hh));
  auto g = gates.chunk(4, -1);
  Tensor i = tensor::sigmoid(g[0]), f = tensor::sigmoid(g[1]), c_hat = tensor::tanh(g[2]), o = tensor::sigmoid(g[3]);
  Tensor c = f * hx[1] + i * c_hat;
  Tensor h = o * tensor::tanh(c);
  return {h, c};
}

Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  check_cell("gru_cell", input, hx, w_ih, w_hh, 3);
  auto gi = nn::functional::linear(input, w_ih, opt(b_ih)).chunk(3, -1);
  auto gh = nn::functional::linear(hx, w_hh, opt(b_hh)).chunk(3, -1);
  Tensor r = tensor::sigmoid(gi[0] + gh[0]);
  Tensor z = tensor::sigmoid(gi[1] + gh[1]);
  Tensor n = tensor::tanh(gi[2] + r * gh[2]);
  return (1 - z) * n + z * hx;
}

Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  check_cell("rnn_tanh_cell", input, hx, w_ih, w_hh, 1);
  return tensor::tanh(nn::functional::linear(input, w_ih, opt(b_ih)) + nn::functional::linear(hx, w_hh, opt(b_hh)));
}

Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  check_cell("rnn_relu_cell", input, hx, w_ih, w_hh, 1);
  return tensor::relu(nn::functional::linear(input, w_ih, opt(b_ih)) + nn::functional::linear(hx, w_hh, opt(b_hh)));
}

}  // namespace tensor
