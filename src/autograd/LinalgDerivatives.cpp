// Derivatives of the matrix products (see Note [Derivatives table]). Formulas are PyTorch's
// (derivatives.yaml), with the conjugate Wirtinger convention for complex:
//   mm, bmm   grad_a = g @ b^H            grad_b = a^H @ g
//   addmm     grad_self = beta* g (summed to self's shape), grad_a = alpha* g @ b^H,
//             grad_b = alpha* a^H @ g
//   linear    grad_x = g @ conj(w)        grad_w = g^T @ conj(x) (leading dims flattened)
//             grad_b = g summed over the leading dims
// Each formula is written with mm/bmm/matmul, so double backward works. A tensor is saved only
// when the other input's gradient needs it.
#include "src/autograd/Functions.h"
#include "src/ops/LinalgOps.h"
#include "tensor/linalg.h"
#include "tensor/ops.h"

namespace tensor::autograd {
namespace {

#define GRAD TENSOR_GRAD

/// a^H for the last two dims (a lazy conj view for complex).
Tensor adjoint(const Tensor& t) { return cj(t.transpose(-2, -1)); }

/// Scalars multiply gradients conjugated (Wirtinger): conj(s) * g.
Tensor scale(const Tensor& g, const Scalar& s) {
  if (s.is_complex()) return g * Scalar(std::conj(s.to_complex()));
  if (s.to_double() == 1.0) return g;
  return g * s;
}

template <bool Batched>
Tensor ag_mm(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    BelowAutograd below;
    out = Batched ? ops::linalg_ops().bmm(a, b) : ops::linalg_ops().mm(a, b);
  }
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&a, &b})) return out;
  auto node = std::make_shared<FormulaNode>(Batched ? "BmmBackward0" : "MmBackward0", GRAD(
      Tensor a = n.saved(0), b = n.saved(1);
      Tensor ga, gb;
      if (n.needs_input_grad(0)) ga = Batched ? g.bmm(adjoint(b)) : g.mm(adjoint(b));
      if (n.needs_input_grad(1)) gb = Batched ? adjoint(a).bmm(g) : adjoint(a).mm(g);
      return {ga, gb};));
  node->add_input(a);
  node->add_input(b);
  node->save(node->needs_input_grad(1) ? a : Tensor());
  node->save(node->needs_input_grad(0) ? b : Tensor());
  set_history(out, node);
  return out;
}

Tensor ag_addmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::linalg_ops().addmm(self, a, b, beta, alpha);
  }
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&self, &a, &b})) return out;
  auto node = std::make_shared<FormulaNode>("AddmmBackward0", GRAD(
      Tensor a = n.saved(0), b = n.saved(1);
      const Scalar beta = n.scalars[0], alpha = n.scalars[1];
      Tensor gs, ga, gb;
      if (n.needs_input_grad(0)) gs = sum_to(scale(g, beta), n.input_meta(0).sizes);
      if (n.needs_input_grad(1)) ga = scale(g.mm(adjoint(b)), alpha);
      if (n.needs_input_grad(2)) gb = scale(adjoint(a).mm(g), alpha);
      return {gs, ga, gb};));
  node->add_input(self);
  node->add_input(a);
  node->add_input(b);
  node->save(node->needs_input_grad(2) ? a : Tensor());
  node->save(node->needs_input_grad(1) ? b : Tensor());
  node->scalars = {beta, alpha};
  set_history(out, node);
  return out;
}

Tensor ag_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::linalg_ops().linear(x, w, bias);
  }
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&x, &w, &bias})) return out;
  auto node = std::make_shared<FormulaNode>("LinearBackward0", GRAD(
      Tensor x = n.saved(0), w = n.saved(1);
      Tensor gx, gw, gb;
      const int64_t of = g.size(-1);
      Tensor g2 = g.dim() == 2 ? g : g.reshape({-1, of});
      if (n.needs_input_grad(0)) gx = g.matmul(cj(w));
      if (n.needs_input_grad(1)) {
        Tensor x2 = x.dim() == 2 ? x : x.reshape({-1, x.size(-1)});
        gw = g2.t().mm(cj(x2));
      }
      if (n.needs_input_grad(2)) gb = g2.sum({0}).reshape(n.input_meta(2).sizes);
      return {gx, gw, gb};));
  node->add_input(x);
  node->add_input(w);
  node->add_input(bias);
  node->save(node->needs_input_grad(1) ? x : Tensor());
  node->save(node->needs_input_grad(0) ? w : Tensor());
  set_history(out, node);
  return out;
}

#undef GRAD

}  // namespace

void register_linalg_derivatives() {
  auto& l = ops::linalg_ops();
  l.mm.set(DispatchKey::Autograd, &ag_mm<false>);
  l.bmm.set(DispatchKey::Autograd, &ag_mm<true>);
  l.addmm.set(DispatchKey::Autograd, &ag_addmm);
  l.linear.set(DispatchKey::Autograd, &ag_linear);
}

}  // namespace tensor::autograd
