// _ctc_loss and _ctc_loss_backward: front ends (Note [Front ends and backend kernels],
// src/ops/ElementwiseOps.cpp) with the checks and the outputs' allocation, where the Meta
// instance stops, and the dispatcher table; CPU's loops are in kernels/cpu/LossKernels.cpp.
// Below them, the public ctc_loss: a composite (unbatched inputs, zero_infinity, reduction) over
// _ctc_loss, as libtorch's.
#include "src/ops/LossOps.h"

#include <limits>
#include <numeric>
#include <vector>

#include "kernels/cpu/LossKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/functions.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {

using detail::shape_str;
using CtcKernel = decltype(LossKernels::ctc_loss);
using CtcBwdKernel = decltype(LossKernels::ctc_loss_backward);

dispatch::BackendKernels<CtcKernel> g_ctc_loss{{&cpu::ctc_loss, nullptr}};
dispatch::BackendKernels<CtcBwdKernel> g_ctc_loss_backward{{&cpu::ctc_loss_backward, nullptr}};

// Checks the arguments of both ops (naming `op`) and returns their geometry.
kernels::CtcArgs ctc_args(const char* op, const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                          IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {
  TENSOR_CHECK(log_probs.dim() == 3,
               "{}: expected log_probs of shape (T, N, C), got shape {} (dtype {}); targets shape {}", op,
               shape_str(log_probs.sizes()), log_probs.dtype(), shape_str(targets.sizes()));
  TENSOR_CHECK(log_probs.dtype() == kFloat32 || log_probs.dtype() == kFloat64,
               "{}: log_probs must be float32 or float64, got dtype {} (shape {})", op, log_probs.dtype(),
               shape_str(log_probs.sizes()));
  TENSOR_CHECK(targets.dtype() == kInt64 || targets.dtype() == kInt32,
               "{}: targets must be int64 or int32, got dtype {} (shape {}; log_probs shape {})", op, targets.dtype(),
               shape_str(targets.sizes()), shape_str(log_probs.sizes()));
  kernels::CtcArgs a;
  a.T = log_probs.size(0);
  a.N = log_probs.size(1);
  a.C = log_probs.size(2);
  a.blank = blank;
  a.zero_infinity = zero_infinity;
  TENSOR_CHECK(blank >= 0 && blank < a.C, "{}: blank {} is outside the label range [0, {}) of log_probs (shape {})", op,
               blank, a.C, shape_str(log_probs.sizes()));
  TENSOR_CHECK(static_cast<int64_t>(input_lengths.size()) == a.N && static_cast<int64_t>(target_lengths.size()) == a.N,
               "{}: expected {} input_lengths and target_lengths (the batch of log_probs, shape {}), got {} and {}", op,
               a.N, shape_str(log_probs.sizes()), input_lengths.size(), target_lengths.size());
  for (int64_t b = 0; b < a.N; ++b) {
    const int64_t il = input_lengths[static_cast<size_t>(b)], tl = target_lengths[static_cast<size_t>(b)];
    TENSOR_CHECK(il >= 0 && il <= a.T, "{}: input_lengths[{}] = {} must be in [0, T = {}] (log_probs shape {})", op, b,
                 il, a.T, shape_str(log_probs.sizes()));
    TENSOR_CHECK(tl >= 0, "{}: target_lengths[{}] = {} must be non-negative (targets shape {})", op, b, tl,
                 shape_str(targets.sizes()));
  }
  a.input_lengths.assign(input_lengths.begin(), input_lengths.end());
  a.target_lengths.assign(target_lengths.begin(), target_lengths.end());
  a.max_target_length = a.N == 0 ? 0 : *std::max_element(target_lengths.begin(), target_lengths.end());
  a.tg_offsets.resize(static_cast<size_t>(a.N));
  if (targets.dim() == 1) {
    // Concatenated: sample b's labels follow sample b - 1's.
    int64_t pos = 0;
    for (int64_t b = 0; b < a.N; ++b) {
      a.tg_offsets[static_cast<size_t>(b)] = pos;
      pos += target_lengths[static_cast<size_t>(b)];
    }
    TENSOR_CHECK(
        targets.size(0) == pos,
        "{}: concatenated 1-d targets of shape {} must hold sum(target_lengths) = {} labels (log_probs shape {})", op,
        shape_str(targets.sizes()), pos, shape_str(log_probs.sizes()));
  } else {
    TENSOR_CHECK(targets.dim() == 2 && targets.size(0) == a.N,
                 "{}: expected targets of shape (N = {}, S) or 1-d concatenated, got shape {} (dtype {}); "
                 "log_probs shape {}",
                 op, a.N, shape_str(targets.sizes()), targets.dtype(), shape_str(log_probs.sizes()));
    TENSOR_CHECK(a.max_target_length <= targets.size(1),
                 "{}: a target length of {} exceeds the padded targets' S = {} (targets shape {})", op,
                 a.max_target_length, targets.size(1), shape_str(targets.sizes()));
    for (int64_t b = 0; b < a.N; ++b) a.tg_offsets[static_cast<size_t>(b)] = b * targets.size(1);
  }
  return a;
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> ctc_loss_fn(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                                       IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {
  const CtcKernel kernel = g_ctc_loss.get<K>("_ctc_loss");
  const kernels::CtcArgs a =
      ctc_args("_ctc_loss", log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
  Tensor nll = empty({a.N}, log_probs.options());
  Tensor log_alpha = empty({a.N, a.T, 2 * a.max_target_length + 1}, log_probs.options());
  if constexpr (K != DispatchKey::Meta) kernel(log_probs, targets.to(kInt64).contiguous(), a, nll, log_alpha);
  return {nll, log_alpha};
}

template <DispatchKey K>
Tensor ctc_loss_backward_fn(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                            IntArrayRef input_lengths, IntArrayRef target_lengths, const Tensor& nll,
                            const Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  const CtcBwdKernel kernel = g_ctc_loss_backward.get<K>("_ctc_loss_backward");
  const kernels::CtcArgs a =
      ctc_args("_ctc_loss_backward", log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
  const auto expect = [&](const Tensor& t, const char* what, std::vector<int64_t> sizes) {
    TENSOR_CHECK(t.sizes().vec() == sizes && t.dtype() == log_probs.dtype(),
                 "_ctc_loss_backward: {} must have shape {} and dtype {} (log_probs shape {}), got shape {} dtype {}",
                 what, shape_str(sizes), log_probs.dtype(), shape_str(log_probs.sizes()), shape_str(t.sizes()),
                 t.dtype());
  };
  expect(grad, "grad", {a.N});
  expect(nll, "neg_log_likelihood", {a.N});
  expect(log_alpha, "log_alpha", {a.N, a.T, 2 * a.max_target_length + 1});
  Tensor grad_input = empty({a.T, a.N, a.C}, log_probs.options());
  if constexpr (K != DispatchKey::Meta)
    kernel(grad, log_probs, targets.to(kInt64).contiguous(), a, nll.contiguous(), log_alpha.contiguous(), grad_input);
  return grad_input;
}

LossOpDefs g_loss = {
    TENSOR_FRONT_END_DEF(CtcLossFn, "_ctc_loss", ctc_loss_fn),
    TENSOR_FRONT_END_DEF(CtcLossBwdFn, "_ctc_loss_backward", ctc_loss_backward_fn),
};

}  // namespace

LossOpDefs& loss_ops() { return g_loss; }

namespace {

// Whether the fused CPU losses may serve these tensors (Note [Fused CPU losses]): nothing
// records, every one is a CPU tensor of the first one's floating dtype (float32/float64).
bool fused_loss_applies(std::initializer_list<const Tensor*> floats) {
  const Tensor& first = **floats.begin();
  if (!first.defined() || !first.is_cpu() || (first.dtype() != kFloat32 && first.dtype() != kFloat64)) return false;
  const bool grad = autograd::GradMode::is_enabled();
  for (const Tensor* t : floats) {
    if (!t->defined()) continue;  // an absent weight
    if (!t->is_cpu() || t->dtype() != first.dtype() || (grad && t->requires_grad())) return false;
  }
  return true;
}

bool valid_reduction(int64_t r) { return r == Reduction::None || r == Reduction::Mean || r == Reduction::Sum; }

/// The fused class-target losses (nll_loss, cross_entropy, multi_margin_loss): [N, C] input,
/// [N] int64 targets, an optional [C] weight. Checks that the fused kernel applies, makes the
/// output ([N] for None, else a scalar) and calls run(input, target, weight, out), contiguous;
/// an undefined Tensor (the composite's turn) when it does not apply or run finds a target out
/// of range.
template <class Run>
Tensor fused_class_target_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                               const Run& run) {
  if (!fused_loss_applies({&input, &weight}) || !valid_reduction(reduction) || input.dim() != 2 ||
      !target.defined() || !target.is_cpu() || target.dtype() != kInt64 || target.dim() != 1 ||
      target.size(0) != input.size(0) || input.numel() == 0 ||
      (weight.defined() && (weight.dim() != 1 || weight.numel() != input.size(1))))
    return Tensor();
  Tensor out = empty(reduction == Reduction::None ? std::vector<int64_t>{input.size(0)} : std::vector<int64_t>{},
                     input.options());
  const Tensor w = weight.defined() ? weight.contiguous() : weight;
  if (!run(input.contiguous(), target.contiguous(), w, out)) return Tensor();
  return out;
}

}  // namespace

Tensor fused_nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                      int64_t ignore_index) {
  return fused_class_target_loss(input, target, weight, reduction, [&](const Tensor& x, const Tensor& t, const Tensor& w,
                                                                       const Tensor& out) {
    return cpu::nll_loss_forward(x, t, w, reduction, ignore_index, out);
  });
}

Tensor fused_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                           int64_t ignore_index) {
  return fused_class_target_loss(input, target, weight, reduction, [&](const Tensor& x, const Tensor& t, const Tensor& w,
                                                                       const Tensor& out) {
    return cpu::cross_entropy_forward(x, t, w, reduction, ignore_index, out);
  });
}

Tensor fused_huber_loss(const Tensor& input, const Tensor& target, int64_t reduction, double delta,
                        bool smooth_l1) {
  if (!fused_loss_applies({&input, &target}) || !valid_reduction(reduction) || input.sizes() != target.sizes() ||
      input.numel() == 0)
    return Tensor();
  Tensor out = empty(reduction == Reduction::None ? input.sizes().vec() : std::vector<int64_t>{}, input.options());
  cpu::huber_loss_forward(input.contiguous(), target.contiguous(), delta, reduction, out, smooth_l1);
  return out;
}

Tensor fused_multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p, double margin,
                               const Tensor& weight, int64_t reduction) {
  if (p != 1 && p != 2) return Tensor();
  return fused_class_target_loss(input, target, weight, reduction, [&](const Tensor& x, const Tensor& t, const Tensor& w,
                                                                       const Tensor& out) {
    return cpu::multi_margin_loss_forward(x, t, p, margin, w, reduction, out);
  });
}

Tensor fused_bce_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                             const Tensor& pos_weight, int64_t reduction) {
  const auto same_shape = [&](const Tensor& t) { return !t.defined() || t.sizes() == input.sizes(); };
  if (!fused_loss_applies({&input, &target, &weight, &pos_weight}) || !valid_reduction(reduction) ||
      !same_shape(target) || !same_shape(weight) || !same_shape(pos_weight) || input.numel() == 0)
    return Tensor();
  Tensor out = empty(reduction == Reduction::None ? input.sizes().vec() : std::vector<int64_t>{}, input.options());
  const auto contig = [](const Tensor& t) { return t.defined() ? t.contiguous() : t; };
  cpu::bce_with_logits_forward(input.contiguous(), target.contiguous(), contig(weight), contig(pos_weight), reduction,
                               out);
  return out;
}

namespace {

// Whether grad can feed a fused backward: the loss's shape (one entry per row without a
// reduction, a scalar with one), the CPU floating dtype of the other operands.
bool fused_grad_applies(const Tensor& grad, const Tensor& target, const Tensor& weight, int64_t reduction) {
  if (!grad.defined() || !grad.is_cpu() || (grad.dtype() != kFloat32 && grad.dtype() != kFloat64) ||
      !valid_reduction(reduction) || !target.defined() || !target.is_cpu() || target.dtype() != kInt64 ||
      target.dim() != 1)
    return false;
  if (weight.defined() && (!weight.is_cpu() || weight.dtype() != grad.dtype())) return false;
  return reduction == Reduction::None ? grad.dim() == 1 && grad.size(0) == target.size(0) : grad.numel() == 1;
}

}  // namespace

Tensor fused_nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& weight, int64_t reduction,
                               int64_t ignore_index, int64_t n_classes) {
  if (!fused_grad_applies(grad, target, weight, reduction) || (weight.defined() && weight.numel() != n_classes))
    return Tensor();
  Tensor grad_input = empty({target.size(0), n_classes}, grad.options().requires_grad(false));
  if (grad_input.numel() == 0) return grad_input;
  cpu::nll_loss_backward(grad.contiguous(), target.contiguous(), weight.defined() ? weight.contiguous() : weight,
                         reduction, ignore_index, grad_input);
  return grad_input;
}

Tensor fused_multi_margin_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, int64_t p,
                                        double margin, const Tensor& weight, int64_t reduction) {
  if (!fused_grad_applies(grad, target, weight, reduction) || !input.is_cpu() || input.dtype() != grad.dtype() ||
      input.dim() != 2 || input.size(0) != target.size(0) || (p != 1 && p != 2) ||
      (weight.defined() && weight.numel() != input.size(1)))
    return Tensor();
  Tensor grad_input = empty(input.sizes().vec(), input.options().requires_grad(false));
  if (grad_input.numel() == 0) return grad_input;
  cpu::multi_margin_loss_backward(grad.contiguous(), input.contiguous(), target.contiguous(), p, margin,
                                  weight.defined() ? weight.contiguous() : weight, reduction, grad_input);
  return grad_input;
}

void register_kernel(DispatchKey backend, const LossKernels& k) {
  dispatch::check_kernel_backend(backend, "_ctc_loss");
  if (k.ctc_loss != nullptr) {
    g_ctc_loss.set(backend, k.ctc_loss);
    g_loss.ctc_loss.set(backend, &ctc_loss_fn<DispatchKey::CUDA>);
  }
  if (k.ctc_loss_backward != nullptr) {
    g_ctc_loss_backward.set(backend, k.ctc_loss_backward);
    g_loss.ctc_loss_backward.set(backend, &ctc_loss_backward_fn<DispatchKey::CUDA>);
  }
}

}  // namespace ops

// ---- public API ----
namespace {

// An integer lengths tensor (1-d, or 0-d for an unbatched input) as int64 values.
std::vector<int64_t> lengths_of(const Tensor& t, const char* op, const char* what) {
  TENSOR_CHECK(t.defined() && is_integral(t.dtype(), false) && t.dim() <= 1,
               "{}: {} must be a 0-d or 1-d integer tensor, got shape {} (dtype {})", op, what,
               t.defined() ? detail::shape_str(t.sizes()) : "undefined", t.defined() ? t.dtype() : kInt64);
  Tensor c = t.to(Device(kCPU), kInt64).contiguous().reshape({-1});
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

}  // namespace

std::tuple<Tensor, Tensor> _ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                                     IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {
  return ops::loss_ops().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
}

std::tuple<Tensor, Tensor> _ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                                     const Tensor& target_lengths, int64_t blank, bool zero_infinity) {
  const std::vector<int64_t> il = lengths_of(input_lengths, "_ctc_loss", "input_lengths");
  const std::vector<int64_t> tl = lengths_of(target_lengths, "_ctc_loss", "target_lengths");
  return _ctc_loss(log_probs, targets, il, tl, blank, zero_infinity);
}

Tensor _ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                          IntArrayRef target_lengths, const Tensor& neg_log_likelihood, const Tensor& log_alpha,
                          int64_t blank, bool zero_infinity) {
  return ops::loss_ops().ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, neg_log_likelihood,
                                           log_alpha, blank, zero_infinity);
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths, IntArrayRef target_lengths,
                int64_t blank, int64_t reduction, bool zero_infinity) {
  TENSOR_CHECK(log_probs.dim() == 2 || log_probs.dim() == 3,
               "ctc_loss: expected log_probs of shape (T, N, C) or unbatched (T, C), got shape {} (dtype {})",
               detail::shape_str(log_probs.sizes()), log_probs.dtype());
  TENSOR_CHECK(reduction >= Reduction::None && reduction < Reduction::END,
               "ctc_loss: reduction must be Reduction::None, Mean or Sum, got {}", reduction);
  const bool batched = log_probs.dim() == 3;
  Tensor res = std::get<0>(_ctc_loss(batched ? log_probs : log_probs.unsqueeze(1), targets, input_lengths,
                                     target_lengths, blank, zero_infinity));
  if (zero_infinity) res = where(res == std::numeric_limits<double>::infinity(), zeros({}, res.options()), res);
  if (reduction == Reduction::Mean) {
    // Each loss divided by its target length (at least 1), then averaged: libtorch's rule.
    std::vector<double> tl(target_lengths.begin(), target_lengths.end());
    Tensor lengths = tensor::tensor(tl, TensorOptions(kFloat64)).to(res.options()).clamp_min(1);
    return (res / lengths).mean();
  }
  if (reduction == Reduction::Sum) return res.sum();
  return batched ? res : res.squeeze(0);
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, int64_t reduction, bool zero_infinity) {
  const std::vector<int64_t> il = lengths_of(input_lengths, "ctc_loss", "input_lengths");
  const std::vector<int64_t> tl = lengths_of(target_lengths, "ctc_loss", "target_lengths");
  return ctc_loss(log_probs, targets, il, tl, blank, reduction, zero_infinity);
}

}  // namespace tensor
