// gradcheck / gradgradcheck: analytical Jacobians from the engine against central finite
// differences, in float64.
#include <cmath>

#include "src/autograd/Functions.h"
#include "tensor/ops.h"

namespace tensor::autograd {

namespace {

// Note [gradcheck on any device]
// Finite differences perturb one input element at a time, in place. On the CPU that is a write
// through the pointer; on another device (CUDA) the element is a 0-dim view of a detached alias
// (same storage, so fn sees the change), written with fill_ and read with item(). Results and
// gradients are compared on the host.
class Element {
 public:
  /// Element at storage offset `off` of x (x's own offset included) of x's real dtype.
  Element(const Tensor& x, int64_t off, bool imag_part = false) {
    if (x.is_cpu()) {
      double* base = x.is_complex() ? reinterpret_cast<double*>(x.data_ptr<complex128>()) : x.data_ptr<double>();
      p_ = base + (x.is_complex() ? 2 * off + (imag_part ? 1 : 0) : off);
      return;
    }
    Tensor alias = x.detach().as_strided({}, {}, x.storage_offset() + off);
    view_ = x.is_complex() ? (imag_part ? alias.imag() : alias.real()) : alias;
  }
  double get() const { return p_ ? *p_ : view_.item<double>(); }
  void set(double v) {
    if (p_) {
      *p_ = v;
    } else {
      NoGradGuard no_grad;
      view_.fill_(v);
    }
  }

 private:
  double* p_ = nullptr;
  Tensor view_;
};

// The storage offset (relative to x's data pointer) of element e in row-major logical order,
// located through the strides (inputs may be views).
int64_t element_offset(const Tensor& x, int64_t e) {
  int64_t off = 0, rem = e;
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    off += (rem % x.size(d)) * x.stride(d);
    rem /= x.size(d);
  }
  return off;
}

// Jacobian columns by finite differences: d out / d input[k] element e.
std::vector<std::vector<double>> numerical(const std::function<Tensor(const variable_list&)>& fn,
                                           const variable_list& inputs, size_t k, double eps, int64_t nout) {
  // No NoGradGuard: fn may itself differentiate (gradgradcheck evaluates a gradient).
  std::vector<std::vector<double>> cols;
  Tensor x = inputs[k];
  for (int64_t e = 0; e < x.numel(); ++e) {
    Element p(x, element_offset(x, e));
    double orig = p.get();
    p.set(orig + eps);
    // clone(): fn may return one of its inputs (or an alias), which the next step perturbs.
    Tensor hi = fn(inputs).to(kFloat64).contiguous().reshape({-1}).clone().cpu();
    p.set(orig - eps);
    Tensor lo = fn(inputs).to(kFloat64).contiguous().reshape({-1}).clone().cpu();
    p.set(orig);
    std::vector<double> col(nout);
    const double* ph = hi.data_ptr<double>();
    const double* pl = lo.data_ptr<double>();
    for (int64_t j = 0; j < nout; ++j) col[j] = (ph[j] - pl[j]) / (2 * eps);
    cols.push_back(std::move(col));
  }
  return cols;
}
}  // namespace

// Note [Complex gradcheck]
// With complex inputs or outputs the engine's gradient follows PyTorch's convention: for a
// real loss L, z.grad = dL/dx + i dL/dy (z = x + iy). The check projects the output on a random
// complex cotangent c, L = Re(sum(conj(c) * out)) (the engine gets grad_output c), and compares
// each input's gradient with finite differences of L along the real and imaginary axes of
// every element; three random cotangents cover the Jacobian with high probability.
namespace {
bool complex_gradcheck(const std::function<Tensor(const variable_list&)>& fn, const variable_list& inputs, double eps,
                       double atol, double rtol) {
  Tensor out = fn(inputs);
  TENSOR_CHECK(out.requires_grad(), "gradcheck: the function's output does not require grad");
  variable_list wrt;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) wrt.push_back(t);
  for (int trial = 0; trial < 3; ++trial) {
    Tensor c = out.is_complex()
                   ? (randn(out.sizes(), TensorOptions(kFloat64)) + randn(out.sizes(), TensorOptions(kFloat64)) * complex128(0, 1))
                         .to(out.dtype())
                   : randn(out.sizes(), TensorOptions(out.dtype()));
    c = c.to(out.device());
    variable_list an = grad({fn(inputs)}, wrt, {c}, /*retain_graph=*/false, false, /*allow_unused=*/true);
    auto loss = [&]() {
      Tensor o = fn(inputs).detach();
      Tensor l = o.is_complex() ? (o * c.conj().resolve_conj()).sum() : (o * c).sum();
      return l.is_complex() ? l.item<complex128>().real() : l.item<double>();
    };
    size_t wi = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& x = inputs[k];
      if (!x.requires_grad()) continue;
      const bool cx = x.is_complex();
      TENSOR_CHECK(x.dtype() == kFloat64 || x.dtype() == kComplex128,
                   "gradcheck: input {} must be float64 or complex128, got {}", k, x.dtype());
      Tensor a = an[wi++];
      Tensor a128 =
          a.defined() ? a.to(kComplex128).contiguous().cpu() : zeros(x.sizes(), TensorOptions(kComplex128));
      for (int64_t e = 0; e < x.numel(); ++e) {
        const int64_t off = element_offset(x, e);
        double num[2] = {0, 0};
        for (int part = 0; part < (cx ? 2 : 1); ++part) {
          Element p(x, off, part == 1);
          double orig = p.get();
          p.set(orig + eps);
          double hi = loss();
          p.set(orig - eps);
          double lo = loss();
          p.set(orig);
          num[part] = (hi - lo) / (2 * eps);
        }
        complex128 got = a128.data_ptr<complex128>()[e];
        complex128 want(num[0], num[1]);
        TENSOR_CHECK(std::abs(got - want) <= atol + rtol * std::abs(want),
                     "gradcheck: gradient mismatch for input {} element {} (complex check, trial {}): numerical ({}, {}) "
                     "vs analytical ({}, {})", k, e, trial, want.real(), want.imag(), got.real(), got.imag());
      }
    }
  }
  return true;
}
}  // namespace

bool gradcheck(const std::function<Tensor(const variable_list&)>& fn, const variable_list& inputs, double eps,
               double atol, double rtol) {
  bool any_complex = false;
  for (const Tensor& t : inputs) any_complex = any_complex || t.is_complex();
  if (any_complex) return complex_gradcheck(fn, inputs, eps, atol, rtol);
  for (size_t k = 0; k < inputs.size(); ++k)
    TENSOR_CHECK(inputs[k].dtype() == kFloat64, "gradcheck: input {} must be float64 for accurate finite differences, got {}",
                 k, inputs[k].dtype());
  Tensor out = fn(inputs);
  if (out.is_complex()) return complex_gradcheck(fn, inputs, eps, atol, rtol);
  TENSOR_CHECK(out.requires_grad(), "gradcheck: the function's output does not require grad");
  const int64_t nout = out.numel();
  // Analytical rows: one backward per output element with a one-hot grad_output.
  std::vector<variable_list> rows;
  for (int64_t j = 0; j < nout; ++j) {
    Tensor onehot = zeros({nout}, TensorOptions(out.dtype()));
    onehot.data_ptr<double>()[j] = 1.0;
    onehot = onehot.to(out.device());
    variable_list wrt;
    for (const Tensor& t : inputs)
      if (t.requires_grad()) wrt.push_back(t);
    rows.push_back(grad({out}, wrt, {onehot.view(out.sizes())}, /*retain_graph=*/true, false, /*allow_unused=*/true));
  }
  size_t wi = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].requires_grad()) continue;
    auto cols = numerical(fn, inputs, k, eps, nout);
    for (int64_t e = 0; e < inputs[k].numel(); ++e)
      for (int64_t j = 0; j < nout; ++j) {
        const Tensor& g = rows[j][wi];
        double a = g.defined() ? g.contiguous().reshape({-1})[e].item<double>() : 0.0;
        double nnum = cols[e][j];
        TENSOR_CHECK(std::fabs(a - nnum) <= atol + rtol * std::fabs(nnum),
                     "gradcheck: Jacobian mismatch for output {} with respect to input {} element {}: numerical {} "
                     "vs analytical {}", j, k, e, nnum, a);
      }
    ++wi;
  }
  return true;
}

bool gradgradcheck(const std::function<Tensor(const variable_list&)>& fn, const variable_list& inputs, double eps,
                   double atol, double rtol) {
  Tensor out = fn(inputs);
  // A fixed random cotangent, itself differentiated through.
  Tensor v = randn(out.sizes(), TensorOptions(kFloat64)).to(out.device()).requires_grad_(true);
  variable_list all = inputs;
  all.push_back(v);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].requires_grad()) continue;
    auto first = [&fn, k, n = inputs.size()](const variable_list& xs) {
      variable_list ins(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
      Tensor o = fn(ins);
      variable_list g = grad({o}, {ins[k]}, {xs[n]}, true, /*create_graph=*/true, /*allow_unused=*/true);
      return g[0].defined() ? g[0] : zeros_like(ins[k]);
    };
    gradcheck(first, all, eps, atol, rtol);
  }
  return true;
}

}  // namespace tensor::autograd
