// Derivatives of the reductions.
//
// Each kernel runs the op below autograd, then records a FormulaNode whose formula is written
// with public differentiable ops only (elementwise math, sum, mean, cumsum, prod, views), so
// gradients of gradients work (create_graph). Comparisons only build constant masks.
// The formulas are PyTorch's (tools/autograd/derivatives.yaml, FunctionsManual.cpp):
//   prod              grad * result / x; with zeros, the product of the other elements computed
//                     without dividing by zero (exact to second order, Note [prod with zeros])
//   max(), min(),     the gradient spread evenly over the elements equal to the result (ties),
//   amax, amin        NaN results select the NaN elements
//   max(dim), min(dim) the gradient goes to the returned index; the indices get none
//   logsumexp         grad * exp(x - result)
//   var, std          2 / (N - correction) * grad * (x - mean); std divides by 2 * result (0 where 0)
//   norm              p = 0, 1, 2, +-inf and general p, masked where the norm or x is 0
//   cumsum            reverse cumulative sum of grad
//   cumprod           reverse cumsum of (grad * result) / x; with zeros, an exact O(n^2) form
//   softmax           y * (grad - sum(grad * y)); log_softmax: grad - exp(y) * sum(grad)
#include <algorithm>
#include <cmath>

#include "src/autograd/Functions.h"
#include "src/ops/ReduceOps.h"
#include "tensor/ops.h"

namespace tensor::autograd {
namespace {

#define GRAD TENSOR_GRAD


/// Reduced dims, wrapped and sorted; empty `dims` means all dims. A 0-dim input has none.
DimVector reduce_dims(IntArrayRef dims, int64_t ndim) {
  DimVector d;
  if (dims.empty()) {
    for (int64_t i = 0; i < ndim; ++i) d.push_back(i);
    return d;
  }
  for (int64_t x : dims) {
    const int64_t w = x < 0 ? x + std::max<int64_t>(ndim, 1) : x;
    if (w < ndim) d.push_back(w);
  }
  std::sort(d.begin(), d.end());
  return d;
}

/// A reduction's result (or its gradient) with the reduced dims back as size 1 (ascending
/// order), so that it broadcasts against the input.
Tensor restore_dims(const Tensor& t, IntArrayRef dims, bool keepdim) {
  if (keepdim) return t;
  Tensor r = t;
  for (int64_t d : dims) r = r.unsqueeze(d);
  return r;
}

/// Number of elements reduced into each output.
int64_t reduced_count(const InputMeta& m, IntArrayRef dims) {
  int64_t c = 1;
  for (int64_t d : dims) c *= m.sizes[d];
  return c;
}

/// Sum over `dims` keeping them (a 0-dim tensor stays as it is).
Tensor sum_keep(const Tensor& t, IntArrayRef dims) { return dims.empty() ? t : t.sum(dims, /*keepdim=*/true); }

/// x / |x| (0 at 0) for complex, sign(x) for real.
Tensor sgn(const Tensor& x) {
  if (!x.is_complex()) return x.sign();
  Tensor a = x.abs();
  return x / (a + a.eq(0).to(a.dtype()));
}

/// Elements equal to the selected value v (broadcast), or NaN elements where v is NaN.
Tensor selected_mask(const Tensor& x, const Tensor& v, ScalarType dt) {
  return x.eq(v).to(dt) + x.isnan().to(dt) * v.isnan().to(dt);
}

bool has_zero(const Tensor& x) {
  BelowAutograd below;
  return x.eq(0).any().item<bool>();
}

/// Creates the node of a one-input reduction.
std::shared_ptr<FormulaNode> make_node(const char* name, BackwardFn fn, const Tensor& x) {
  auto node = std::make_shared<FormulaNode>(name, fn);
  node->add_input(x);
  return node;
}

bool should_record(const Tensor& x, const Tensor& out) {
  return is_differentiable(out.dtype()) && any_requires_grad({&x});
}

// ---- prod ----
// Note [prod with zeros]
// The gradient of x_i is the product of the other elements of its slice. Without zeros that is
// result / x_i. With zeros, let m mark them, xs = x with zeros replaced by a constant 1,
// p = prod(xs), z = the slice's zero count and zs = sum(x * m) (0, but it carries the zero's
// derivative). Then the product of the others is
//   z == 0: p / xs
//   z == 1: p at the zero, zs * p / xs elsewhere
//   z == 2: (zs - x) * p at each zero, 0 elsewhere
//   z >= 3: 0
// Every term is a product of differentiable factors, so its derivative is right as well
// (checked by gradgradcheck); xs has no zeros, so the nested prod takes the first branch.
Tensor prod_others(const Tensor& x, IntArrayRef dims, bool all) {
  const ScalarType dt = x.dtype();
  Tensor m = x.eq(0).to(dt);
  Tensor keep = 1 - m;
  Tensor xs = x * keep + m;
  Tensor p = all ? xs.prod() : xs.prod(dims[0], /*keepdim=*/true);
  Tensor z = sum_keep(m, dims);
  Tensor zs = sum_keep(x * m, dims);
  Tensor c0 = z.eq(0).to(dt), c1 = z.eq(1).to(dt), c2 = z.eq(2).to(dt);
  return p / xs * (c0 + c1 * (m + keep * zs) + c2 * m * (zs - x));
}

Tensor ag_prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim, std::optional<ScalarType> dt) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::reduce_ops().prod(x, dim, keepdim, dt);
  }
  if (!should_record(x, out)) return out;
  // ints: the reduced dims; scalars: keepdim, reduce-all.
  auto node = make_node(dim ? "ProdBackward1" : "ProdBackward0", GRAD(
      Tensor x = n.saved(0), out = n.saved(1);
      if (x.dim() == 0) return {g};
      if (x.dtype() != g.dtype()) x = x.to(g.dtype());
      const bool keepdim = n.scalars[0].to_bool(), all = n.scalars[1].to_bool();
      Tensor gu = restore_dims(g, n.ints, keepdim);
      if (!has_zero(x)) return {gu * cj(restore_dims(out, n.ints, keepdim) / x)};
      return {gu * cj(prod_others(x, n.ints, all))};), x);
  node->save(x);
  node->save(out, /*is_output=*/true);
  node->ints = dim ? reduce_dims(IntArrayRef(*dim), x.dim()) : reduce_dims({}, x.dim());
  node->scalars.push_back(dim ? keepdim : false);
  node->scalars.push_back(!dim.has_value());
  set_history(out, node);
  return out;
}

// ---- max(), min(), amax, amin ----
// saved: input, output; ints: reduced dims; scalars: keepdim.
BackwardFn evenly_distribute() {
  return GRAD(
      Tensor x = n.saved(0);
      const bool keepdim = n.scalars[0].to_bool();
      Tensor v = restore_dims(n.saved(1), n.ints, keepdim);
      Tensor mask = selected_mask(x, v, g.dtype());
      return {restore_dims(g, n.ints, keepdim) * mask / sum_keep(mask, n.ints)};);
}

template <bool IsMax>
Tensor ag_minmax_all(const Tensor& x) {
  Tensor out;
  {
    BelowAutograd below;
    out = IsMax ? ops::reduce_ops().max_all(x) : ops::reduce_ops().min_all(x);
  }
  if (!should_record(x, out)) return out;
  auto node = make_node(IsMax ? "MaxBackward1" : "MinBackward1", evenly_distribute(), x);
  node->save(x);
  node->save(out, /*is_output=*/true);
  node->ints = reduce_dims({}, x.dim());
  node->scalars.push_back(false);
  set_history(out, node);
  return out;
}

template <bool IsMax>
Tensor ag_amax_amin(const Tensor& x, IntArrayRef dims, bool keepdim) {
  Tensor out;
  {
    BelowAutograd below;
    out = IsMax ? ops::reduce_ops().amax(x, dims, keepdim) : ops::reduce_ops().amin(x, dims, keepdim);
  }
  if (!should_record(x, out)) return out;
  auto node = make_node(IsMax ? "AmaxBackward0" : "AminBackward0", evenly_distribute(), x);
  node->save(x);
  node->save(out, /*is_output=*/true);
  node->ints = reduce_dims(dims, x.dim());
  node->scalars.push_back(keepdim);
  set_history(out, node);
  return out;
}

// ---- max(dim), min(dim): the values get the gradient at the returned indices ----
template <bool IsMax>
std::tuple<Tensor, Tensor> ag_minmax_dim(const Tensor& x, int64_t dim, bool keepdim) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = IsMax ? ops::reduce_ops().max_dim(x, dim, keepdim) : ops::reduce_ops().min_dim(x, dim, keepdim);
  }
  const Tensor& values = std::get<0>(r);
  if (!should_record(x, values)) return r;
  // saved: indices; ints: dim; scalars: keepdim.
  auto node = make_node(IsMax ? "MaxBackward0" : "MinBackward0", GRAD(
      const InputMeta& m = n.input_meta(0);
      if (m.sizes.empty()) return {g};
      const int64_t d = n.ints[0];
      const bool keepdim = n.scalars[0].to_bool();
      Tensor idx = n.saved(0);
      DimVector shape(m.sizes.size(), 1);
      shape[d] = m.sizes[d];
      Tensor pos = arange(m.sizes[d], TensorOptions(kInt64).device(g.device())).view(shape);
      Tensor mask = pos.eq(keepdim ? idx : idx.unsqueeze(d)).to(g.dtype());
      return {(keepdim ? g : g.unsqueeze(d)) * mask};), x);
  node->save(std::get<1>(r));
  node->ints.push_back(x.dim() == 0 ? 0 : (dim < 0 ? dim + x.dim() : dim));
  node->scalars.push_back(keepdim);
  set_history(values, node, 0);
  return r;
}

// ---- logsumexp ----
Tensor ag_logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::reduce_ops().logsumexp(x, dims, keepdim);
  }
  if (!should_record(x, out)) return out;
  auto node = make_node("LogsumexpBackward0", GRAD(
      const bool keepdim = n.scalars[0].to_bool();
      Tensor v = restore_dims(n.saved(1), n.ints, keepdim);
      return {restore_dims(g, n.ints, keepdim) * (n.saved(0) - v).exp()};), x);
  node->save(x);
  node->save(out, /*is_output=*/true);
  node->ints = reduce_dims(dims, x.dim());
  node->scalars.push_back(keepdim);
  set_history(out, node);
  return out;
}

// ---- var, std ----
// ints: reduced dims; scalars: keepdim, correction; saved(0): the input.
// What var and std backward share: the degrees of freedom and the deviations from the mean.
struct VarTerms {
  int64_t dof;
  Tensor dev;
};
VarTerms var_terms(FormulaNode& n) {
  Tensor x = n.saved(0);
  const int64_t dof = std::max<int64_t>(0, reduced_count(n.input_meta(0), n.ints) - n.scalars[1].to_long());
  return {dof, x - (n.ints.empty() ? x : x.mean(n.ints, /*keepdim=*/true))};
}

Tensor ag_var(const Tensor& x, IntArrayRef dims, int64_t correction, bool keepdim) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::reduce_ops().var(x, dims, correction, keepdim);
  }
  if (!should_record(x, out)) return out;
  auto node = make_node("VarBackward0", GRAD(
      const bool keepdim = n.scalars[0].to_bool();
      VarTerms t = var_terms(n);
      return {restore_dims(g, n.ints, keepdim) * t.dev * (2.0 / static_cast<double>(t.dof))};), x);
  node->save(x);
  node->ints = reduce_dims(dims, x.dim());
  node->scalars.push_back(keepdim);
  node->scalars.push_back(correction);
  set_history(out, node);
  return out;
}

Tensor ag_std(const Tensor& x, IntArrayRef dims, int64_t correction, bool keepdim) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::reduce_ops().std_dev(x, dims, correction, keepdim);
  }
  if (!should_record(x, out)) return out;
  // d std = d var / (2 std), taken as 0 where std is 0 (PyTorch's masked_fill).
  auto node = make_node("StdBackward0", GRAD(
      const bool keepdim = n.scalars[0].to_bool();
      VarTerms t = var_terms(n);
      Tensor s = restore_dims(n.saved(1), n.ints, keepdim);
      Tensor z = s.eq(0).to(s.dtype());
      Tensor gs = restore_dims(g, n.ints, keepdim) * (1 - z) / ((s + z) * static_cast<double>(t.dof));
      return {gs * t.dev};), x);
  node->save(x);
  node->save(out, /*is_output=*/true);
  node->ints = reduce_dims(dims, x.dim());
  node->scalars.push_back(keepdim);
  node->scalars.push_back(correction);
  set_history(out, node);
  return out;
}

// ---- norm ----
// ints: reduced dims; scalars: keepdim, p.
Tensor ag_norm(const Tensor& x, const Scalar& p, IntArrayRef dims, bool keepdim) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::reduce_ops().norm(x, p, dims, keepdim);
  }
  if (!should_record(x, out)) return out;
  auto node = make_node("NormBackward1", GRAD(
      Tensor x = n.saved(0);
      const bool keepdim = n.scalars[0].to_bool();
      const double p = n.scalars[1].to_double();
      if (p == 0) return {zeros_like(x)};
      Tensor gu = restore_dims(g, n.ints, keepdim);
      if (p == 1) return {sgn(x) * gu};
      Tensor nrm = restore_dims(n.saved(1), n.ints, keepdim);
      const ScalarType rt = nrm.dtype();
      Tensor nz = nrm.eq(0).to(rt);  // 1 where the norm is 0: the gradient is taken as 0 there
      if (p == 2) return {gu * x / (nrm + nz) * (1 - nz)};
      if (std::isinf(p)) {
        Tensor ax = x.abs();
        Tensor mask = ax.eq(nrm).to(rt) + ax.isnan().to(rt);
        return {sgn(x) * (gu / sum_keep(mask, n.ints)) * mask};
      }
      if (p < 1) {
        Tensor xz = x.eq(0).to(rt);
        Tensor scaled = sgn(x) * (x.abs() + xz).pow(p - 1) * (1 - xz);
        return {scaled * gu * nrm.pow(1 - p)};
      }
      Tensor scaled = p < 2 ? sgn(x) * x.abs().pow(p - 1) : x * x.abs().pow(p - 2);
      return {scaled * (gu / (nrm + nz).pow(p - 1) * (1 - nz))};), x);
  node->save(x);
  node->save(out, /*is_output=*/true);
  node->ints = reduce_dims(dims, x.dim());
  node->scalars.push_back(keepdim);
  node->scalars.push_back(p.to_double());
  set_history(out, node);
  return out;
}

// ---- cumsum, cumprod ----
/// Sum of t over positions >= i along d: total - inclusive prefix + t.
Tensor reverse_cumsum(const Tensor& t, int64_t d) { return t.sum(IntArrayRef(d), /*keepdim=*/true) - t.cumsum(d) + t; }

Tensor ag_cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dt) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::reduce_ops().cumsum(x, dim, dt);
  }
  if (!should_record(x, out)) return out;
  auto node = make_node("CumsumBackward0", GRAD(
      if (n.input_meta(0).sizes.empty()) return {g};
      return {reverse_cumsum(g, n.ints[0])};), x);
  node->ints.push_back(x.dim() == 0 ? 0 : (dim < 0 ? dim + x.dim() : dim));
  set_history(out, node);
  return out;
}

// With zeros, dividing by x fails. Then, for each i, the products prod_{j<=k, j!=i} x_j come from
// a cumprod of x with x_i replaced by 1 (an [n, n] block per slice), and
// grad_i = sum_{k>=i} grad_k * prod_{j<=k, j!=i} x_j. Exact (to any order), O(n) more memory.
Tensor cumprod_backward_zeros(const Tensor& x, const Tensor& g, int64_t d) {
  const int64_t nd = x.dim(), len = x.size(d);
  const ScalarType dt = g.dtype();
  DimVector esz(x.sizes());
  esz.insert(static_cast<size_t>(d), len);  // i at d, j (the scan) at d + 1
  DimVector ishape(static_cast<size_t>(nd + 1), 1), jshape(static_cast<size_t>(nd + 1), 1);
  ishape[d] = len;
  jshape[d + 1] = len;
  TensorOptions io = TensorOptions(kInt64).device(x.device());
  Tensor ai = arange(len, io).view(ishape), aj = arange(len, io).view(jshape);
  Tensor eye = ai.eq(aj).to(dt);
  Tensor upper = aj.ge(ai).to(dt);  // k >= i
  Tensor y = x.unsqueeze(d).expand(esz) * (1 - eye) + eye;
  return (y.cumprod(d + 1) * upper * g.unsqueeze(d)).sum(IntArrayRef(d + 1), /*keepdim=*/false);
}

Tensor ag_cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dt) {
  Tensor out;
  {
    BelowAutograd below;
    out = ops::reduce_ops().cumprod(x, dim, dt);
  }
  if (!should_record(x, out)) return out;
  auto node = make_node("CumprodBackward0", GRAD(
      Tensor x = n.saved(0);
      if (x.dim() == 0) return {g};
      if (x.dtype() != g.dtype()) x = x.to(g.dtype());
      const int64_t d = n.ints[0];
      if (x.numel() == 0) return {g};
      if (!has_zero(x)) return {reverse_cumsum(g * cj(n.saved(1)), d) / cj(x)};
      if (x.is_complex()) x = x.conj();  // conj of a product is the product of conjs
      return {cumprod_backward_zeros(x, g, d)};), x);
  node->save(x);
  node->save(out, /*is_output=*/true);
  node->ints.push_back(x.dim() == 0 ? 0 : (dim < 0 ? dim + x.dim() : dim));
  set_history(out, node);
  return out;
}

// ---- softmax, log_softmax ----
template <bool Log>
Tensor ag_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dt) {
  Tensor out;
  {
    BelowAutograd below;
    out = Log ? ops::reduce_ops().log_softmax(x, dim, dt) : ops::reduce_ops().softmax(x, dim, dt);
  }
  if (!should_record(x, out)) return out;
  BackwardFn fn;
  if constexpr (Log) fn = GRAD(return {g - n.saved(0).exp() * sum_keep(g, n.ints)};);
  else fn = GRAD(Tensor y = n.saved(0); return {y * (g - sum_keep(g * y, n.ints))};);
  auto node = make_node(Log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", fn, x);
  node->save(out, /*is_output=*/true);
  node->ints = reduce_dims(IntArrayRef(dim), x.dim());
  set_history(out, node);
  return out;
}

#undef GRAD

}  // namespace

void register_reduce_derivatives() {
  auto& r = ops::reduce_ops();
  r.prod.set(DispatchKey::Autograd, &ag_prod);
  r.max_all.set(DispatchKey::Autograd, &ag_minmax_all<true>);
  r.min_all.set(DispatchKey::Autograd, &ag_minmax_all<false>);
  r.max_dim.set(DispatchKey::Autograd, &ag_minmax_dim<true>);
  r.min_dim.set(DispatchKey::Autograd, &ag_minmax_dim<false>);
  r.amax.set(DispatchKey::Autograd, &ag_amax_amin<true>);
  r.amin.set(DispatchKey::Autograd, &ag_amax_amin<false>);
  r.logsumexp.set(DispatchKey::Autograd, &ag_logsumexp);
  r.var.set(DispatchKey::Autograd, &ag_var);
  r.std_dev.set(DispatchKey::Autograd, &ag_std);
  r.norm.set(DispatchKey::Autograd, &ag_norm);
  r.cumsum.set(DispatchKey::Autograd, &ag_cumsum);
  r.cumprod.set(DispatchKey::Autograd, &ag_cumprod);
  r.softmax.set(DispatchKey::Autograd, &ag_softmax<false>);
  r.log_softmax.set(DispatchKey::Autograd, &ag_softmax<true>);
}

}  // namespace tensor::autograd
