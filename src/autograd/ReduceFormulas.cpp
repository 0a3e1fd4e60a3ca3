// The manual formulas of the reductions (ReduceFormulas.h). max and min along a dim (two
// outputs) are hand-written, in src/autograd/nodes/MultiOutput.cpp.
//
// The rows themselves are in the `// ---- reductions ----` section of Derivatives.cpp. The
// formulas are PyTorch's (tools/autograd/derivatives.yaml, FunctionsManual.cpp):
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
// Comparisons only build constant masks; everything else is a public differentiable op.
#include "src/autograd/ReduceFormulas.h"

#include <algorithm>
#include <cmath>

#include "src/ops/ReduceOps.h"
#include "tensor/ops.h"

namespace tensor::autograd {
namespace reduce_formulas {
namespace {

/// Number of elements reduced into each output.
int64_t reduced_count(IntArrayRef sizes, IntArrayRef dims) {
  int64_t c = 1;
  for (int64_t d : dims) c *= sizes[d];
  return c;
}

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

/// What var and std backward share: the degrees of freedom and the deviations from the mean.
struct VarTerms {
  int64_t dof;
  Tensor dev;
};
VarTerms var_terms(const Tensor& x, IntArrayRef dims, int64_t correction) {
  const int64_t dof = std::max<int64_t>(0, reduced_count(x.sizes(), dims) - correction);
  return {dof, x - (dims.empty() ? x : x.mean(dims, /*keepdim=*/true))};
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

}  // namespace

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

int64_t wrap_dim(int64_t dim, int64_t ndim) { return ndim == 0 ? 0 : (dim < 0 ? dim + ndim : dim); }

Tensor restore_dims(const Tensor& t, IntArrayRef dims, bool keepdim) {
  if (keepdim) return t;
  Tensor r = t;
  for (int64_t d : dims) r = r.unsqueeze(d);
  return r;
}

Tensor sum_keep(const Tensor& t, IntArrayRef dims) { return dims.empty() ? t : t.sum(dims, /*keepdim=*/true); }

// ---- prod ----
Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dims, bool keepdim,
                     bool all) {
  if (self.dim() == 0) return grad;
  const Tensor x = self.dtype() != grad.dtype() ? self.to(grad.dtype()) : self;
  Tensor gu = restore_dims(grad, dims, keepdim);
  if (!has_zero(x)) return gu * (restore_dims(result, dims, keepdim) / x);
  return gu * prod_others(x, dims, all);
}

// ---- max(), min(), amax, amin ----
Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dims,
                                  bool keepdim) {
  Tensor v = restore_dims(result, dims, keepdim);
  Tensor mask = selected_mask(self, v, grad.dtype());
  return restore_dims(grad, dims, keepdim) * mask / sum_keep(mask, dims);
}

// ---- var, std ----
Tensor var_backward(const Tensor& grad, const Tensor& self, IntArrayRef dims, int64_t correction, bool keepdim) {
  VarTerms t = var_terms(self, dims, correction);
  return restore_dims(grad, dims, keepdim) * t.dev * (2.0 / static_cast<double>(t.dof));
}

// d std = d var / (2 std), taken as 0 where std is 0 (PyTorch's masked_fill).
Tensor std_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dims,
                    int64_t correction, bool keepdim) {
  VarTerms t = var_terms(self, dims, correction);
  Tensor s = restore_dims(result, dims, keepdim);
  Tensor z = s.eq(0).to(s.dtype());
  Tensor gs = restore_dims(grad, dims, keepdim) * (1 - z) / ((s + z) * static_cast<double>(t.dof));
  return gs * t.dev;
}

// ---- norm ----
Tensor norm_backward(const Tensor& grad, const Tensor& self, const Tensor& result, double p, IntArrayRef dims,
                     bool keepdim) {
  const Tensor& x = self;
  if (p == 0) return zeros_like(x);
  Tensor gu = restore_dims(grad, dims, keepdim);
  if (p == 1) return sgn(x) * gu;
  Tensor nrm = restore_dims(result, dims, keepdim);
  const ScalarType rt = nrm.dtype();
  Tensor nz = nrm.eq(0).to(rt);  // 1 where the norm is 0: the gradient is taken as 0 there
  if (p == 2) return gu * x / (nrm + nz) * (1 - nz);
  if (std::isinf(p)) {
    Tensor ax = x.abs();
    Tensor mask = ax.eq(nrm).to(rt) + ax.isnan().to(rt);
    return sgn(x) * (gu / sum_keep(mask, dims)) * mask;
  }
  if (p < 1) {
    Tensor xz = x.eq(0).to(rt);
    Tensor scaled = sgn(x) * (x.abs() + xz).pow(p - 1) * (1 - xz);
    return scaled * gu * nrm.pow(1 - p);
  }
  Tensor scaled = p < 2 ? sgn(x) * x.abs().pow(p - 1) : x * x.abs().pow(p - 2);
  return scaled * (gu / (nrm + nz).pow(p - 1) * (1 - nz));
}

// ---- cumsum, cumprod ----
/// total - inclusive prefix + t.
Tensor reverse_cumsum(const Tensor& t, int64_t d) { return t.sum(IntArrayRef(d), /*keepdim=*/true) - t.cumsum(d) + t; }

Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t d) {
  if (self.dim() == 0 || self.numel() == 0) return grad;
  const Tensor x = self.dtype() != grad.dtype() ? self.to(grad.dtype()) : self;
  if (!has_zero(x)) return reverse_cumsum(grad * result, d) / x;
  return cumprod_backward_zeros(x, grad, d);
}

}  // namespace reduce_formulas

}  // namespace tensor::autograd
