// Front ends of the fused optimizer steps, _fused_sgd_ and _fused_adam_ (libtorch's names):
// dispatcher ops, so that optim/ calls no backend directly and a CUDA kernel can register.
#include "src/ops/OptimizerOps.h"

#include "kernels/cpu/OptimizerKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {

void check_same_shape(const char* op, const char* what, const Tensor& p, const Tensor& t) {
  TENSOR_CHECK(!t.defined() || t.sizes() == p.sizes(), "{}: {} of shape {} does not match the parameter's shape {}", op,
               what, detail::shape_str(t.sizes()), detail::shape_str(p.sizes()));
}

// ---- SGD: torch.optim.SGD's single-tensor form ----
// The tensor-op form: any device, dtype and layout (Note [Fused optimizer steps]).
void sgd_reference(const Tensor& p, const Tensor& grad, const Tensor& buf, double lr, double momentum, double dampening,
                   double weight_decay, bool nesterov, bool maximize, bool first_step) {
  NoGradGuard no_grad;
  Tensor d_p = maximize ? -grad : grad;
  if (weight_decay != 0) d_p = d_p.add(p, weight_decay);
  if (momentum != 0) {
    Tensor b = buf;
    if (first_step) b.copy_(d_p);
    else b.mul_(momentum).add_(d_p, 1 - dampening);
    d_p = nesterov ? d_p.add(b, momentum) : b;
  }
  Tensor q = p;
  q.add_(d_p, -lr);
}

void check_sgd(const Tensor& p, const Tensor& grad, const Tensor& buf, double momentum) {
  check_same_shape("_fused_sgd_", "grad", p, grad);
  check_same_shape("_fused_sgd_", "momentum_buffer", p, buf);
  TENSOR_CHECK(momentum == 0 || buf.defined(), "_fused_sgd_: momentum {} needs a momentum buffer", momentum);
}

void sgd_cpu(const Tensor& p, const Tensor& grad, const Tensor& buf, double lr, double momentum, double dampening,
             double weight_decay, bool nesterov, bool maximize, bool first_step) {
  check_sgd(p, grad, buf, momentum);
  if (cpu::fused_ok(p, grad, {momentum != 0 ? &buf : &p})) {
    cpu::sgd_fused(p, grad, momentum != 0 ? buf : Tensor(),
                   {lr, momentum, dampening, weight_decay, nesterov, maximize, first_step});
    return;
  }
  sgd_reference(p, grad, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, first_step);
}

// ---- Adam and AdamW: torch.optim.adam/adamw's single-tensor forms ----
void adam_reference(const Tensor& p, const Tensor& grad_in, const Tensor& m, const Tensor& v, const Tensor& vmax,
                    double lr, double beta1, double beta2, double eps, double weight_decay, double step_size,
                    double bias_correction2_sqrt, bool amsgrad, bool maximize, bool decoupled) {
  NoGradGuard no_grad;
  Tensor q = p, mm = m, vv = v;
  Tensor grad = maximize ? -grad_in : grad_in;
  if (decoupled) {
    if (weight_decay != 0) q.mul_(1 - lr * weight_decay);
  } else if (weight_decay != 0) {
    grad = grad.add(p, weight_decay);
  }
  mm.mul_(beta1).add_(grad, 1 - beta1);
  vv.mul_(beta2).add_(grad * grad, 1 - beta2);
  Tensor denom;
  if (amsgrad) {
    Tensor vm = vmax;
    vm.copy_(tensor::maximum(vm, v));
    denom = (vm.sqrt() / bias_correction2_sqrt).add_(eps);
  } else {
    denom = (v.sqrt() / bias_correction2_sqrt).add_(eps);
  }
  q.add_(m / denom, -step_size);
}

void check_adam(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v, const Tensor& vmax,
                bool amsgrad) {
  for (const auto& [what, t] : {std::pair<const char*, const Tensor*>{"grad", &grad}, {"exp_avg", &m},
                                {"exp_avg_sq", &v}, {"max_exp_avg_sq", &vmax}})
    check_same_shape("_fused_adam_", what, p, *t);
  TENSOR_CHECK(m.defined() && v.defined() && (!amsgrad || vmax.defined()),
               "_fused_adam_: exp_avg, exp_avg_sq (and max_exp_avg_sq with amsgrad) must be allocated");
}

void adam_cpu(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v, const Tensor& vmax, double lr,
              double beta1, double beta2, double eps, double weight_decay, double step_size,
              double bias_correction2_sqrt, bool amsgrad, bool maximize, bool decoupled) {
  check_adam(p, grad, m, v, vmax, amsgrad);
  if (cpu::fused_ok(p, grad, {&m, &v, &vmax})) {
    cpu::adam_fused(p, grad, m, v, vmax,
                    {lr, beta1, beta2, eps, weight_decay, step_size, bias_correction2_sqrt, amsgrad, maximize, decoupled});
    return;
  }
  adam_reference(p, grad, m, v, vmax, lr, beta1, beta2, eps, weight_decay, step_size, bias_correction2_sqrt, amsgrad,
                 maximize, decoupled);
}

// ---- a registered backend's (CUDA's) fused kernels ----
dispatch::BackendKernels<FusedSgdKernel> g_sgd_kernels;
dispatch::BackendKernels<FusedAdamKernel> g_adam_kernels;

// True when the fused kernel applies: defined tensors contiguous, of p's dtype (floating, not
// complex) and device, not lazily conjugated (shapes were checked already).
bool backend_fusable(const Tensor& p, std::initializer_list<const Tensor*> others) {
  if (!p.is_contiguous() || !is_floating_point(p.dtype()) || p.is_conj()) return false;
  for (const Tensor* t : others)
    if (t->defined() && (t->device() != p.device() || t->dtype() != p.dtype() || !t->is_contiguous() || t->is_conj()))
      return false;
  return true;
}

template <DispatchKey K>
void sgd_backend(const Tensor& p, const Tensor& grad, const Tensor& buf, double lr, double momentum, double dampening,
                 double weight_decay, bool nesterov, bool maximize, bool first_step) {
  check_sgd(p, grad, buf, momentum);
  if (backend_fusable(p, {&grad, &buf})) {
    g_sgd_kernels.get<K>("_fused_sgd_")(p, grad, momentum != 0 ? buf : Tensor(),
                                         {lr, momentum, dampening, weight_decay, nesterov, maximize, first_step});
    return;
  }
  sgd_reference(p, grad, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, first_step);
}

template <DispatchKey K>
void adam_backend(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v, const Tensor& vmax, double lr,
                  double beta1, double beta2, double eps, double weight_decay, double step_size,
                  double bias_correction2_sqrt, bool amsgrad, bool maximize, bool decoupled) {
  check_adam(p, grad, m, v, vmax, amsgrad);
  if (backend_fusable(p, {&grad, &m, &v, &vmax})) {
    g_adam_kernels.get<K>("_fused_adam_")(
        p, grad, m, v, amsgrad ? vmax : Tensor(),
        {lr, beta1, beta2, eps, weight_decay, step_size, bias_correction2_sqrt, amsgrad, maximize, decoupled});
    return;
  }
  adam_reference(p, grad, m, v, vmax, lr, beta1, beta2, eps, weight_decay, step_size, bias_correction2_sqrt, amsgrad,
                 maximize, decoupled);
}

// CPU: the fused loops where they apply, else the tensor-op form. CUDA: the tensor-op form
// until a fused kernel is registered (register_kernel below); Meta: the tensor-op form.
template <class Fn>
constexpr dispatch::OpDef<Fn> defs(const char* name, Fn* cpu, Fn* other) {
  dispatch::OpDef<Fn> d{name, {}};
  d.kernels[static_cast<int>(DispatchKey::CPU)] = cpu;
  d.kernels[static_cast<int>(DispatchKey::CUDA)] = other;
  d.kernels[static_cast<int>(DispatchKey::Meta)] = other;
  return d;
}
dispatch::OpDef<FusedSgdFn> g_sgd = defs<FusedSgdFn>("_fused_sgd_", &sgd_cpu, &sgd_reference);
dispatch::OpDef<FusedAdamFn> g_adam = defs<FusedAdamFn>("_fused_adam_", &adam_cpu, &adam_reference);

}  // namespace

dispatch::OpDef<FusedSgdFn>& fused_sgd_op() { return g_sgd; }
dispatch::OpDef<FusedAdamFn>& fused_adam_op() { return g_adam; }

void register_kernel(DispatchKey backend, FusedSgdKernel kernel) {
  dispatch::check_kernel_backend(backend, "_fused_sgd_");
  g_sgd_kernels.set(backend, kernel);
  g_sgd.set(backend, &sgd_backend<DispatchKey::CUDA>);
}

void register_kernel(DispatchKey backend, FusedAdamKernel kernel) {
  dispatch::check_kernel_backend(backend, "_fused_adam_");
  g_adam_kernels.set(backend, kernel);
  g_adam.set(backend, &adam_backend<DispatchKey::CUDA>);
}

}  // namespace ops

void _fused_sgd_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, double lr, double momentum,
                 double dampening, double weight_decay, bool nesterov, bool maximize, bool is_first_step) {
  ops::g_sgd(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step);
}

void _fused_adam_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const Tensor& max_exp_avg_sq, double lr, double beta1, double beta2, double eps, double weight_decay,
                  double step_size, double bias_correction2_sqrt, bool amsgrad, bool maximize, bool decoupled) {
  ops::g_adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step_size,
              bias_correction2_sqrt, amsgrad, maximize, decoupled);
}

}  // namespace tensor
