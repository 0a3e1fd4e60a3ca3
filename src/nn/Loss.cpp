// nn::functional losses as composites of public differentiable ops, following libtorch 1.13's
// definitions (aten/src/ATen/native/LossNLL.cpp, Loss.cpp) term by term.
#include <cmath>
#include <limits>

#include "src/core/Check.h"
#include "src/ops/LossOps.h"
#include "tensor/autograd/Function.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/functional.h"
#include "tensor/ops.h"

namespace tensor::nn::functional {

namespace {

Tensor reduce(const Tensor& loss, LossReduction r) {
  switch (r.kind()) {
    case LossReduction::None: return loss;
    case LossReduction::Sum: return loss.sum();
    case LossReduction::Mean: return loss.mean();
  }
  return loss;
}

void check_floating(const char* op, const char* what, const Tensor& t) {
  TENSOR_CHECK(t.defined(), "{}: {} must be defined", op, what);
  TENSOR_CHECK(t.is_floating_point(), "{}: {} must be floating point, got {}", op, what, t.describe());
}

void check_class_weight(const char* op, const Tensor& weight, const Tensor& input, int64_t n_classes) {
  if (!weight.defined()) return;
  TENSOR_CHECK(weight.dim() == 1 && weight.numel() == n_classes,
               "{}: weight must be 1-d with one entry per class ({} classes for input {}), got {}", op, n_classes,
               input.describe(), weight.describe());
  TENSOR_CHECK(weight.dtype() == input.dtype(), "{}: weight {} must have the input's dtype ({})", op,
               weight.describe(), input.dtype());
}

// weight viewed to broadcast along the class dim: [C] for 1-d inputs, [1, C, 1, ...] otherwise.
Tensor class_weight_view(const Tensor& weight, const Tensor& input) {
  if (input.dim() == 1) return weight;
  std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = weight.numel();
  return weight.reshape(shape);
}

// The pieces of a class-index loss shared by nll_loss and label smoothing.
struct ClassTargets {
  Tensor valid;         // bool, target's shape: target != ignore_index
  Tensor safe;          // int64 target with ignored entries replaced by class 0
  Tensor w;             // per-target weight (0 where ignored), input dtype
};

ClassTargets class_targets(const char* op, const Tensor& input, const Tensor& target, const Tensor& weight,
                           int64_t ignore_index) {
  TENSOR_CHECK(target.defined(), "{}: target must be defined", op);
  TENSOR_CHECK(is_integral(target.dtype(), /*include_bool=*/false),
               "{}: class-index targets must be an integer tensor (int64), got {} (pass class probabilities with the "
               "input's shape for soft targets)",
               op, target.describe());
  TENSOR_CHECK(input.dim() >= 1, "{}: input must have a class dim, got {}", op, input.describe());
  // Expected target shape: the input's without its class dim (dim 0 for 1-d inputs, else dim 1).
  std::vector<int64_t> expected = input.sizes().vec();
  expected.erase(expected.begin() + (input.dim() == 1 ? 0 : 1));
  TENSOR_CHECK(target.sizes() == IntArrayRef(expected),
               "{}: target {} does not match input {}: expected a target of shape {} (the input's shape without the "
               "class dim)",
               op, target.describe(), input.describe(), detail::shape_str(expected));
  const int64_t n_classes = input.size(input.dim() == 1 ? 0 : 1);
  Tensor t = target.dtype() == kInt64 ? target : target.to(kInt64);
  ClassTargets ct;
  ct.valid = t != ignore_index;
  if (t.numel() > 0) {
    Tensor bad = ct.valid.logical_and(t.lt(0).logical_or(t.ge(n_classes)));
    if (bad.any().item<bool>()) {
      int64_t v = t.masked_select(bad)[0].item<int64_t>();
      TENSOR_ERROR("{}: target {} is out of bounds for {} classes (input {}; valid targets are 0..{} or "
                   "ignore_index = {})",
                   op, v, n_classes, input.describe(), n_classes - 1, ignore_index);
    }
  }
  ct.safe = where(ct.valid, t, Scalar(int64_t{0}));
  Tensor valid_f = ct.valid.to(input.dtype());
  ct.w = weight.defined() ? weight.index_select(0, ct.safe.flatten()).reshape(t.sizes()) * valid_f : valid_f;
  return ct;
}

// -sum w_n logp[n, y_n], reduced; the mean divides by sum w_n over non-ignored targets.
Tensor nll_from(const Tensor& logp, const ClassTargets& ct, LossReduction r) {
  Tensor picked;
  if (logp.dim() == 1) {
    picked = logp.gather(0, ct.safe.reshape({1})).reshape({});
  } else {
    picked = logp.gather(1, ct.safe.unsqueeze(1)).squeeze(1);
  }
  Tensor loss = -(picked * ct.w);
  switch (r.kind()) {
    case LossReduction::None: return loss;
    case LossReduction::Sum: return loss.sum();
    // All targets ignored: 0 / 0 = NaN, as libtorch.
    case LossReduction::Mean: return loss.sum() / ct.w.sum();
  }
  return loss;
}

// Note [Fused cross_entropy]
// cross_entropy of (N, C) logits and class indices is one Function rather than log_softmax,
// gather and the reduction recorded separately: their backward would zero an (N, C) gradient,
// scatter into it (GatherBackward), then take exp, sum, mul and sub over it (LogSoftmaxBackward),
// five passes over N x C. The gradient is (softmax(x) - onehot(y)) * s_n, with s_n the row's
// weight times the incoming gradient (over sum w for the mean): exp of the saved log_softmax,
// one in-place row scaling, and N subtractions at the targets. Under create_graph the same
// formula is recorded from public ops on the input, so double backward still works; only that
// path reads the input, so only it checks the input's version. Label smoothing, probability
// targets, other ranks and a weight that needs a gradient keep the composite path.
struct CrossEntropyFunction : autograd::Function<CrossEntropyFunction> {
  // w: each row's weight (0 where ignored); safe: targets with ignored ones at class 0.
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& input, const Tensor& w, const Tensor& safe,
                        int64_t reduction) {
    Tensor logp = input.log_softmax(1);
    Tensor loss = -(logp.gather(1, safe.unsqueeze(1)).squeeze(1) * w);
    // The input is read only by the create_graph formula: kept out of save_for_backward (whose
    // version check would fail a backward after an in-place write to the logits, which
    // libtorch's log_softmax + nll_loss allow), with its version checked where it is read.
    ctx->save_for_backward({logp, w, safe});
    ctx->saved_data["input"] = input;
    ctx->saved_data["input_version"] = static_cast<int64_t>(input._version());
    ctx->saved_data["reduction"] = reduction;
    switch (static_cast<LossReduction::Kind>(reduction)) {
      case LossReduction::None: return loss;
      case LossReduction::Sum: return loss.sum();
      // All targets ignored: 0 / 0 = NaN, as libtorch.
      case LossReduction::Mean: return loss.sum() / w.sum();
    }
    return loss;
  }

  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list grads) {
    const autograd::variable_list saved = ctx->get_saved_variables();
    const Tensor &logp = saved[0], &w = saved[1], &safe = saved[2];
    const auto r = static_cast<LossReduction::Kind>(ctx->saved_data["reduction"].to_int());
    // In logp's dtype: under autocast the logits (and w) may be bf16 while logp and the loss are
    // float32, and a 0-dim float32 gradient times a bf16 [N] w would promote to bf16.
    const Tensor wf = w.to(logp.dtype());
    Tensor s = grads[0].to(logp.dtype()) * wf;  // [N] for None, else the scalar gradient broadcast over the rows
    if (r == LossReduction::Mean) s = s / wf.sum();
    s = s.unsqueeze(1);
    const Tensor y = safe.unsqueeze(1);
    if (autograd::GradMode::is_enabled()) {
      const Tensor& input = ctx->saved_data["input"].to_tensor();
      TENSOR_CHECK(static_cast<int64_t>(input._version()) == ctx->saved_data["input_version"].to_int(),
                   "cross_entropy: one of the variables needed for gradient computation has been modified by an "
                   "inplace operation: the logits {} are at version {}; expected version {} instead (double backward "
                   "reads them)",
                   input.describe(), input._version(), ctx->saved_data["input_version"].to_int());
      return {(input.softmax(1) - zeros_like(input).scatter(1, y, 1.0)) * s, Tensor(), Tensor(), Tensor()};
    }
    Tensor gi = logp.exp();
    gi.mul_(s);
    gi.scatter_add_(1, y, -s);
    const ScalarType in_dtype = ctx->saved_data["input"].to_tensor().scalar_type();
    return {in_dtype == gi.scalar_type() ? gi : gi.to(in_dtype), Tensor(), Tensor(), Tensor()};
  }
};

// Note [nll_loss Function]
// Recorded as its composite, nll_loss's backward ran those of the reduction, the weight's mul,
// the negation and gather (zeros of the input's shape, then a scatter). As a Function (2-d
// [N, C] inputs, 1-d ones unsqueezed; a weight that needs a gradient and other ranks keep the
// composite) its forward is the fused kernel on CPU (Note [Fused CPU losses]; the composite
// elsewhere) and its backward one pass (cpu::nll_loss_backward): the [N, C] gradient zeroed with
// -w_n g_n written at each target. Ignored rows get zero, also under a mean over only ignored
// targets (libtorch's kernel; the composite gave NaN there). Under create_graph, or where the
// kernel does not apply, the same formula is recorded from public ops on the incoming gradient,
// so double backward works (the loss is linear in the input: its second derivative is zero).
// The input is not saved: only its class count and dtype are read.
struct NllLossFunction : autograd::Function<NllLossFunction> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& input, const Tensor& target,
                        const Tensor& weight, int64_t reduction, int64_t ignore_index) {
    ctx->saved_data["target"] = target;
    ctx->saved_data["weight"] = weight;
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignore_index;
    ctx->saved_data["n_classes"] = input.size(1);
    Tensor fused = ops::fused_nll_loss(input, target, weight, reduction, ignore_index);
    if (fused.defined()) return fused;
    const LossReduction r = reduction == LossReduction::None  ? LossReduction(kNone)
                            : reduction == LossReduction::Sum ? LossReduction(kSum)
                                                              : LossReduction(kMean);
    return nll_from(input, class_targets("nll_loss", input, target, weight, ignore_index), r);
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list grads) {
    const Tensor& target = ctx->saved_data["target"].to_tensor();
    const Tensor& weight = ctx->saved_data["weight"].to_tensor();
    const int64_t reduction = ctx->saved_data["reduction"].to_int();
    const int64_t ignore_index = ctx->saved_data["ignore_index"].to_int();
    const int64_t n_classes = ctx->saved_data["n_classes"].to_int();
    const Tensor& g = grads[0];
    if (!autograd::GradMode::is_enabled()) {
      Tensor gi = ops::fused_nll_loss_backward(g, target, weight, reduction, ignore_index, n_classes);
      if (gi.defined()) return {gi, Tensor(), Tensor(), Tensor(), Tensor()};
    }
    const TensorOptions opts = g.options().requires_grad(false);
    const Tensor valid = target != ignore_index;
    const Tensor safe = where(valid, target, Scalar(int64_t{0}));
    Tensor w = valid.to(g.dtype());
    if (weight.defined()) w = weight.index_select(0, safe) * w;
    Tensor s = g * w;  // [N]
    if (reduction == LossReduction::Mean) {
      const Tensor wsum = w.sum();
      s = s / where(wsum == 0, ones({}, opts), wsum);  // only ignored targets: zero, as the kernel
    }
    const Tensor onehot = zeros({target.size(0), n_classes}, opts).scatter(1, safe.unsqueeze(1), Scalar(1.0));
    return {onehot * (-s).unsqueeze(1), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
  check_floating("nll_loss", "input", input);
  TENSOR_CHECK(input.dim() >= 1, "nll_loss: input must have a class dim, got {}", input.describe());
  check_class_weight("nll_loss", options.weight(), input, input.size(input.dim() == 1 ? 0 : 1));
  // One kernel where nothing records (Note [Fused CPU losses]); else the composite.
  Tensor fused = ops::fused_nll_loss(input, target, options.weight(), static_cast<int64_t>(options.reduction().kind()),
                                     options.ignore_index());
  if (fused.defined()) return fused;
  // The Function (Note [nll_loss Function]) for [N, C] and [C] inputs with class-index targets of
  // the expected shape; the composite otherwise (and for the errors it raises).
  const Tensor& weight = options.weight();
  const bool shaped = (input.dim() == 2 && target.dim() == 1 && target.size(0) == input.size(0)) ||
                      (input.dim() == 1 && target.dim() == 0);
  if (shaped && is_integral(target.dtype(), false) && !(weight.defined() && weight.requires_grad())) {
    const int64_t r = static_cast<int64_t>(options.reduction().kind());
    const Tensor t = (input.dim() == 1 ? target.reshape({1}) : target).to(kInt64);
    Tensor loss = NllLossFunction::apply(input.dim() == 1 ? input.unsqueeze(0) : input, t, weight, r,
                                         options.ignore_index());
    return input.dim() == 1 && r == LossReduction::None ? loss.reshape({}) : loss;
  }
  ClassTargets ct = class_targets("nll_loss", input, target, weight, options.ignore_index());
  return nll_from(input, ct, options.reduction());
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  const char* op = "cross_entropy";
  check_floating(op, "input", input);
  TENSOR_CHECK(input.dim() >= 1, "{}: input must have a class dim, got {}", op, input.describe());
  TENSOR_CHECK(target.defined(), "{}: target must be defined", op);
  const double ls = options.label_smoothing();
  TENSOR_CHECK(ls >= 0.0 && ls <= 1.0, "{}: label_smoothing must be between 0.0 and 1.0, got {}", op, ls);
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t n_classes = input.size(class_dim);
  const Tensor& weight = options.weight();
  check_class_weight(op, weight, input, n_classes);
  const LossReduction r = options.reduction();

  if (target.sizes() == input.sizes()) {
    // Class probabilities (libtorch decides by the shape, then requires a floating target).
    TENSOR_CHECK(target.is_floating_point(),
                 "{}: a target with the input's shape holds class probabilities and must be floating point, got {}",
                 op, target.describe());
    TENSOR_CHECK(options.ignore_index() < 0, "{}: ignore_index is not supported for class-probability targets", op);
    Tensor tgt = ls > 0 ? target * (1 - ls) + ls / static_cast<double>(n_classes) : target;
    Tensor prod = input.log_softmax(class_dim) * tgt;
    if (weight.defined()) prod = prod * class_weight_view(weight, input);
    switch (r.kind()) {
      case LossReduction::None: return -prod.sum({class_dim});
      case LossReduction::Sum: return -prod.sum();
      case LossReduction::Mean: {
        if (input.numel() == 0) return -prod.sum() * std::numeric_limits<double>::quiet_NaN();
        return -prod.sum() / static_cast<double>(input.numel() / n_classes);
      }
    }
  }

  if (ls == 0) {
    // One kernel where nothing records (Note [Fused CPU losses]); else the Function or the
    // composite.
    Tensor fused = ops::fused_cross_entropy(input, target, weight, static_cast<int64_t>(r.kind()),
                                            options.ignore_index());
    if (fused.defined()) return fused;
  }
  ClassTargets ct = class_targets(op, input, target, weight, options.ignore_index());
  if (ls == 0 && input.dim() == 2 && !(weight.defined() && weight.requires_grad()))
    return CrossEntropyFunction::apply(input, ct.w, ct.safe, static_cast<int64_t>(r.kind()));
  Tensor logp = input.log_softmax(class_dim);
  Tensor nll = nll_from(logp, ct, r);
  if (ls == 0) return nll;
  // Label smoothing (libtorch's cross_entropy_loss_label_smoothing): the uniform part is
  // -sum_c w_c logp_c per target, zero at ignored targets, with the mean normalized like nll.
  Tensor smooth = weight.defined() ? -(logp * class_weight_view(weight, input)).sum({class_dim})
                                   : -logp.sum({class_dim});
  smooth = smooth.masked_fill(ct.valid.logical_not(), 0.0);
  Tensor ret;
  switch (r.kind()) {
    case LossReduction::None: ret = smooth; break;
    case LossReduction::Sum: ret = smooth.sum(); break;
    case LossReduction::Mean:
      ret = weight.defined() ? smooth.sum() / ct.w.sum() : smooth.sum() / ct.valid.sum().to(input.dtype());
      break;
  }
  return nll * (1 - ls) + ret * (ls / static_cast<double>(n_classes));
}

namespace {
void check_pair(const char* op, const Tensor& input, const Tensor& target) {
  check_floating(op, "input", input);
  check_floating(op, "target", target);
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
}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  check_pair("mse_loss", input, target);
  Tensor d = input - target;
  return reduce(d * d, options.reduction());
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  check_pair("l1_loss", input, target);
  return reduce((input - target).abs(), options.reduction());
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  const char* op = "binary_cross_entropy_with_logits";
  check_floating(op, "input", input);
  check_floating(op, "target", target);
  TENSOR_CHECK(target.sizes() == input.sizes(), "{}: target size {} must be the same as input size {}", op,
               detail::shape_str(target.sizes()), detail::shape_str(input.sizes()));
  const Tensor& pw = options.pos_weight();
  if (pw.defined())
    TENSOR_CHECK(pw.is_floating_point(), "{}: pos_weight must be floating point, got {}", op, pw.describe());
  // One kernel where nothing records (Note [Fused CPU losses]); else the composite.
  Tensor fused = ops::fused_bce_with_logits(input, target, options.weight(), pw,
                                            static_cast<int64_t>(options.reduction().kind()));
  if (fused.defined()) return fused;
  // With m = max(-x, 0): log(1 + e^-x) = m + log(e^-m + e^(-x-m)), which never overflows.
  Tensor max_val = (-input).clamp_min(0);
  Tensor log1pexp = (tensor::exp(-max_val) + tensor::exp(-input - max_val)).log() + max_val;
  Tensor loss;
  if (pw.defined()) {
    Tensor log_weight = (pw - 1) * target + 1;
    loss = (1 - target) * input + log_weight * log1pexp;
  } else {
    loss = (1 - target) * input + log1pexp;
  }
  if (options.weight().defined()) loss = loss * options.weight();
  return reduce(loss, options.reduction());
}

}  // namespace tensor::nn::functional
