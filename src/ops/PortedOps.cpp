// libtorch ops that ported programs call and that are composites of public ops here (so their
// gradients come from the ops they are made of), or plain float64 loops on the CPU (multinomial
// and unique_dim, without a gradient; QR, with its own backward, Note [QR backward]): min/max of
// two tensors, multinomial, constant_pad_nd, reflection_pad1d/2d, unique_dim, diag and linalg_qr
// (include/tensor/ported_ops.h, tensor/linalg.h), their Tensor methods, and the Tensor::new_*
// factories.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "src/core/Check.h"
#include "tensor/autograd/Function.h"
#include "tensor/autograd/autograd.h"
#include "tensor/linalg.h"
#include "tensor/ops.h"
#include "tensor/ported_ops.h"

namespace tensor {

using detail::shape_str;

// ---- min / max of two tensors ----
Tensor min(const Tensor& a, const Tensor& b) { return minimum(a, b); }
Tensor max(const Tensor& a, const Tensor& b) { return maximum(a, b); }
Tensor Tensor::min(const Tensor& other) const { return tensor::minimum(*this, other); }
Tensor Tensor::max(const Tensor& other) const { return tensor::maximum(*this, other); }

// ---- new_* factories: this tensor's dtype and device unless the options give them ----
namespace {
TensorOptions like(const Tensor& self, const TensorOptions& o) {
  TensorOptions r = o;
  if (!o.has_dtype()) r = r.dtype(self.dtype());
  if (!o.has_device()) r = r.device(self.device());
  return r;
}
}  // namespace
Tensor Tensor::new_empty(IntArrayRef sizes, const TensorOptions& o) const { return empty(sizes, like(*this, o)); }
Tensor Tensor::new_zeros(IntArrayRef sizes, const TensorOptions& o) const { return zeros(sizes, like(*this, o)); }
Tensor Tensor::new_ones(IntArrayRef sizes, const TensorOptions& o) const { return ones(sizes, like(*this, o)); }
Tensor Tensor::new_full(IntArrayRef sizes, const Scalar& value, const TensorOptions& o) const {
  return full(sizes, value, like(*this, o));
}

// ---- multinomial ----
// Note [Multinomial sampling]
// With replacement: per row, inverse-CDF sampling of uniform draws from the global generator
// (binary search in the normalized cumulative sum). Without replacement: the exponential
// race, as libtorch's CPU path: with E_i ~ Exp(1), the order of p_i / E_i is the order in which
// sequential draws without replacement pick the categories, so the indices of the num_samples
// largest keys are one such draw. Zero weights get key 0 and are never picked while positive
// ones remain, which the num_samples <= positive-count check guarantees. The checks and their
// messages are libtorch's.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  const char* op = "multinomial";
  TENSOR_CHECK(probs.defined(), "{}: prob_dist is undefined", op);
  TENSOR_CHECK(probs.dim() == 1 || probs.dim() == 2, "{}: prob_dist must be 1 or 2 dim, got {}", op, probs.describe());
  TENSOR_CHECK(probs.is_floating_point(), "{}: only supports floating-point dtypes for input, got: {}", op,
               probs.dtype());
  TENSOR_CHECK(num_samples > 0, "{}: cannot sample n_sample <= 0 samples (got {})", op, num_samples);
  const int64_t n_cat = probs.size(-1);
  TENSOR_CHECK(replacement || num_samples <= n_cat,
               "{}: cannot sample n_sample > prob_dist.size(-1) samples without replacement ({} > {})", op, num_samples,
               n_cat);
  TENSOR_CHECK(n_cat > 0, "{}: prob_dist has no categories ({})", op, probs.describe());
  NoGradGuard no_grad;
  const Tensor p = probs.reshape({-1, n_cat}).to(Device(kCPU), kFloat64).contiguous();
  const int64_t rows = p.size(0);
  const double* pd = p.data_ptr<double>();
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    int64_t positive = 0;
    for (int64_t c = 0; c < n_cat; ++c) {
      const double v = pd[r * n_cat + c];
      TENSOR_CHECK(std::isfinite(v), "{}: invalid multinomial distribution (encountering probability entry = "
                   "infinity or NaN) in row {} of {}", op, r, probs.describe());
      TENSOR_CHECK(v >= 0, "{}: invalid multinomial distribution (encountering probability entry < 0) in row {} of {}",
                   op, r, probs.describe());
      sum += v;
      positive += v > 0;
    }
    TENSOR_CHECK(sum > 0, "{}: invalid multinomial distribution (sum of probabilities <= 0) in row {} of {}", op, r,
                 probs.describe());
    TENSOR_CHECK(replacement || num_samples <= positive,
                 "{}: invalid multinomial distribution (with replacement=False, not enough non-negative category to "
                 "sample): row {} has {} positive weights, {} samples asked", op, r, positive, num_samples);
  }
  Tensor out;
  if (replacement) {
    const Tensor u = rand({rows, num_samples}, TensorOptions(kFloat64));
    const double* ud = u.data_ptr<double>();
    out = empty({rows, num_samples}, TensorOptions(kInt64));
    int64_t* od = out.data_ptr<int64_t>();
    std::vector<double> cdf(static_cast<size_t>(n_cat));
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0;
      for (int64_t c = 0; c < n_cat; ++c) cdf[static_cast<size_t>(c)] = acc += pd[r * n_cat + c];
      for (int64_t s = 0; s < num_samples; ++s) {
        const double x = ud[r * num_samples + s] * acc;  // uniform on [0, total)
        // The first category whose cumulative weight exceeds x: never a zero-weight one.
        auto it = std::upper_bound(cdf.begin(), cdf.end(), x);
        int64_t c = std::min<int64_t>(it - cdf.begin(), n_cat - 1);
        while (pd[r * n_cat + c] == 0 && c > 0) --c;  // x rounded onto the end of the last positive one
        od[r * num_samples + s] = c;
      }
    }
  } else {
    Tensor e = empty({rows, n_cat}, TensorOptions(kFloat64)).exponential_(1.0);
    out = std::get<1>((p / e).topk(num_samples, -1));
  }
  if (probs.dim() == 1) out = out.reshape({num_samples});
  return out.to(probs.device());
}
Tensor Tensor::multinomial(int64_t num_samples, bool replacement) const {
  return tensor::multinomial(*this, num_samples, replacement);
}

// ---- padding ----
Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  const char* op = "constant_pad_nd";
  TENSOR_CHECK(pad.size() % 2 == 0, "{}: length of pad must be even but instead it equals {}", op, pad.size());
  const int64_t n = static_cast<int64_t>(pad.size()) / 2;
  TENSOR_CHECK(n <= self.dim(),
               "{}: length of pad should be no more than twice the number of dimensions of the input; pad has {} "
               "entries, input is {}", op, pad.size(), self.describe());
  // pad[0], pad[1] are the last dim's; each dim in turn: crop (negative amounts), then join
  // constant blocks on both sides with cat, which carries the gradient to self.
  Tensor r = self;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = self.dim() - 1 - i;
    const int64_t lo = pad[static_cast<size_t>(2 * i)], hi = pad[static_cast<size_t>(2 * i + 1)];
    const int64_t size = r.size(d);
    TENSOR_CHECK(size + lo + hi >= 0,
                 "{}: the input size {} in dimension {}, plus negative padding {} and {}, resulted in a negative output "
                 "size {} (input {})", op, size, d, lo, hi, size + lo + hi, self.describe());
    const int64_t start = std::max<int64_t>(-lo, 0), stop = size - std::max<int64_t>(-hi, 0);
    TENSOR_CHECK(start <= stop, "{}: negative padding {} and {} crop more than the size {} of dimension {} (input {})",
                 op, lo, hi, size, d, self.describe());
    if (start != 0 || stop != size) r = r.narrow(d, start, stop - start);
    std::vector<Tensor> parts;
    auto block = [&](int64_t len) {
      std::vector<int64_t> s(r.sizes().begin(), r.sizes().end());
      s[static_cast<size_t>(d)] = len;
      return full(s, value, r.options());
    };
    if (lo > 0) parts.push_back(block(lo));
    parts.push_back(r);
    if (hi > 0) parts.push_back(block(hi));
    if (parts.size() > 1) r = cat(parts, d);
  }
  return r.defined() && r.is_same(self) ? self.clone() : r;
}

namespace {
// Mirror positions without the edge along one dim: for size n and pads (lo, hi), the source
// index of each output position, lo-1 ... 1 mirrored, then 0..n-1, then n-2 ... back.
Tensor reflect_index(int64_t n, int64_t lo, int64_t hi, Device dev) {
  std::vector<int64_t> idx;
  for (int64_t i = -lo; i < n + hi; ++i) {
    int64_t j = i < 0 ? -i : i;
    if (j >= n) j = 2 * (n - 1) - j;
    idx.push_back(j);
  }
  return tensor::tensor(idx).to(dev);
}
Tensor reflection_pad(const Tensor& self, IntArrayRef padding, int64_t dims, const char* op) {
  TENSOR_CHECK(static_cast<int64_t>(padding.size()) == 2 * dims, "{}: padding size is expected to be {}, but got: {}", op,
               2 * dims, padding.size());
  TENSOR_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2,
               "{}: expected {}D or {}D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
               "for input, but got: {}", op, dims + 1, dims + 2, self.describe());
  Tensor r = self;
  for (int64_t i = 0; i < dims; ++i) {
    const int64_t d = self.dim() - 1 - i;
    const int64_t lo = padding[static_cast<size_t>(2 * i)], hi = padding[static_cast<size_t>(2 * i + 1)];
    const int64_t n = self.size(d);
    TENSOR_CHECK(lo >= 0 && hi >= 0, "{}: padding must be non-negative, got {} and {}", op, lo, hi);
    TENSOR_CHECK(lo < n && hi < n,
                 "{}: padding size should be less than the corresponding input dimension, but got: padding ({}, {}) at "
                 "dimension {} of input {}", op, lo, hi, d, self.describe());
    r = r.index_select(d, reflect_index(n, lo, hi, self.device()));
  }
  return r;
}
}  // namespace

Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding) {
  return reflection_pad(self, padding, 1, "reflection_pad1d");
}
Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding) {
  return reflection_pad(self, padding, 2, "reflection_pad2d");
}

// ---- unique_dim ----
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& self, int64_t dim, bool /*sorted*/, bool return_inverse,
                                              bool return_counts) {
  const char* op = "unique_dim";
  TENSOR_CHECK(self.dim() > 0, "{}: expects a tensor with at least one dimension, got {}", op, self.describe());
  TENSOR_CHECK(dim >= -self.dim() && dim < self.dim(), "{}: dim {} out of range for {}", op, dim, self.describe());
  TENSOR_CHECK(!self.is_complex(), "{}: complex tensors have no order ({})", op, self.describe());
  const int64_t d = dim < 0 ? dim + self.dim() : dim;
  const int64_t n = self.size(d);
  NoGradGuard no_grad;
  // Each slice along d flattened into one row; rows compare lexicographically by value, as
  // libtorch's. int64 rows compare as int64 (float64 would round above 2^53), the rest as float64.
  std::vector<int64_t> perm{d};
  for (int64_t k = 0; k < self.dim(); ++k)
    if (k != d) perm.push_back(k);
  int64_t width = 1;
  for (int64_t k = 0; k < self.dim(); ++k)
    if (k != d) width *= self.size(k);
  const Tensor rows2d = self.permute(perm).contiguous().reshape({n, width});
  const bool as_int = self.dtype() == kInt64;
  const Tensor keys = rows2d.to(Device(kCPU), as_int ? kInt64 : kFloat64).contiguous();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  auto cmp_rows = [&](auto* data) {
    auto less = [&](int64_t a, int64_t b) {
      return std::lexicographical_compare(data + a * width, data + (a + 1) * width, data + b * width,
                                          data + (b + 1) * width);
    };
    auto equal = [data, w = width](int64_t a, int64_t b) { return std::equal(data + a * w, data + (a + 1) * w, data + b * w); };
    std::stable_sort(order.begin(), order.end(), less);
    return std::function<bool(int64_t, int64_t)>(equal);
  };
  std::function<bool(int64_t, int64_t)> same =
      as_int ? cmp_rows(keys.data_ptr<int64_t>()) : cmp_rows(keys.data_ptr<double>());
  std::vector<int64_t> firsts, counts, inverse(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const int64_t row = order[static_cast<size_t>(k)];
    if (k == 0 || !same(order[static_cast<size_t>(k - 1)], row)) {
      firsts.push_back(row);
      counts.push_back(0);
    }
    ++counts.back();
    inverse[static_cast<size_t>(row)] = static_cast<int64_t>(firsts.size()) - 1;
  }
  const Device dev = self.device();
  const TensorOptions idx = TensorOptions(kInt64).device(dev);
  Tensor out = self.index_select(d, tensor::tensor(firsts).to(dev).reshape({static_cast<int64_t>(firsts.size())}));
  Tensor inv = return_inverse ? tensor::tensor(inverse).to(dev).reshape({n}) : empty({0}, idx);
  Tensor cnt = return_counts ? tensor::tensor(counts).to(dev).reshape({static_cast<int64_t>(counts.size())})
                             : empty({0}, idx);
  return {out, inv, cnt};
}

// ---- diag ----
Tensor diag(const Tensor& self, int64_t diagonal) {
  TENSOR_CHECK(self.dim() == 1 || self.dim() == 2, "diag: expected a 1-D or 2-D tensor, got {}", self.describe());
  if (self.dim() == 2) return self.diagonal(diagonal).clone();
  // A matrix of zeros with self written into one diagonal view: the copy_ into the view records
  // CopySlices, so the gradient reaches self.
  const int64_t n = self.size(0) + (diagonal < 0 ? -diagonal : diagonal);
  Tensor out = zeros({n, n}, self.options());
  out.diagonal(diagonal).copy_(self);
  return out;
}
Tensor Tensor::diag(int64_t diagonal) const { return tensor::diag(*this, diagonal); }

// ---- QR ----
namespace {
// Note [Householder QR]
// No LAPACK here, so QR is Householder reflections in float64, with LAPACK's sign convention
// (dgeqrf/dlarfg: a column whose part below the diagonal is already zero is left alone;
// otherwise the reflection maps x to beta e1 with beta = -sign(x0) ||x||). So R's diagonal may
// be negative, as libtorch's, and the factors agree with libtorch's wherever LAPACK's do.
// A is m x n row-major (overwritten with R); Q is m x q_cols, built from the reflections.
void householder_qr(std::vector<double>& a, int64_t m, int64_t n, std::vector<double>* q, int64_t q_cols) {
  const int64_t k = std::min(m, n);
  std::vector<std::vector<double>> vs(static_cast<size_t>(k));
  auto A = [&](int64_t i, int64_t j) -> double& { return a[static_cast<size_t>(i * n + j)]; };
  for (int64_t j = 0; j < k; ++j) {
    double below = 0;
    for (int64_t i = j + 1; i < m; ++i) below += A(i, j) * A(i, j);
    if (below == 0) continue;  // LAPACK: tau = 0, H = I
    const double x0 = A(j, j);
    const double norm = std::sqrt(x0 * x0 + below);
    const double beta = x0 >= 0 ? -norm : norm;
    std::vector<double>& v = vs[static_cast<size_t>(j)];
    v.assign(static_cast<size_t>(m - j), 0.0);
    v[0] = x0 - beta;
    for (int64_t i = j + 1; i < m; ++i) v[static_cast<size_t>(i - j)] = A(i, j);
    double vv = 0;
    for (double x : v) vv += x * x;
    for (int64_t c = j; c < n; ++c) {  // A[j:, c] -= 2 v (v . A[j:, c]) / (v . v)
      double dot = 0;
      for (int64_t i = j; i < m; ++i) dot += v[static_cast<size_t>(i - j)] * A(i, c);
      const double f = 2 * dot / vv;
      for (int64_t i = j; i < m; ++i) A(i, c) -= f * v[static_cast<size_t>(i - j)];
    }
    A(j, j) = beta;  // exact, and the entries below are zero by construction
    for (int64_t i = j + 1; i < m; ++i) A(i, j) = 0;
  }
  if (!q) return;
  std::vector<double>& Q = *q;
  Q.assign(static_cast<size_t>(m * q_cols), 0.0);
  for (int64_t i = 0; i < std::min(m, q_cols); ++i) Q[static_cast<size_t>(i * q_cols + i)] = 1;
  for (int64_t j = k - 1; j >= 0; --j) {  // Q = H_0 H_1 ... H_{k-1} I[:, :q_cols]
    const std::vector<double>& v = vs[static_cast<size_t>(j)];
    if (v.empty()) continue;
    double vv = 0;
    for (double x : v) vv += x * x;
    for (int64_t c = 0; c < q_cols; ++c) {
      double dot = 0;
      for (int64_t i = j; i < m; ++i) dot += v[static_cast<size_t>(i - j)] * Q[static_cast<size_t>(i * q_cols + c)];
      const double f = 2 * dot / vv;
      for (int64_t i = j; i < m; ++i) Q[static_cast<size_t>(i * q_cols + c)] -= f * v[static_cast<size_t>(i - j)];
    }
  }
}
}  // namespace

namespace {
std::tuple<Tensor, Tensor> qr_forward(const Tensor& A, const std::string& mode);

// Y = X R^{-T} for R upper triangular [.., k, k] and X [.., p, k]: row r of Y is R^{-1} applied
// to row r of X, by back substitution in float64 on the host (for CUDA inputs too, as the
// forward: the GPU's first run segfaulted reading device memory here). A singular R gives
// inf/NaN, as libtorch's triangular solve (QR is not differentiable there).
Tensor solve_right_upper_transposed(const Tensor& X, const Tensor& R) {
  const int64_t k = R.size(-1), p = X.size(-2);
  const Tensor r = R.reshape({-1, k, k}).to(Device(kCPU), kFloat64).contiguous();
  Tensor y = X.reshape({-1, p, k}).to(Device(kCPU), kFloat64).contiguous().clone();
  const int64_t b = r.size(0);
  const double* rd = r.data_ptr<double>();
  double* yd = y.data_ptr<double>();
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t row = 0; row < p; ++row) {
      double* z = yd + (bi * p + row) * k;
      const double* rb = rd + bi * k * k;
      for (int64_t i = k - 1; i >= 0; --i) {
        double acc = z[i];
        for (int64_t j = i + 1; j < k; ++j) acc -= rb[i * k + j] * z[j];
        z[i] = acc / rb[i * k + i];
      }
    }
  return y.reshape(X.sizes()).to(X.device(), X.dtype());
}

// Note [QR backward]
// A = Q R, with dA = dQ R + Q dR.
//  m >= n (reduced, or complete with m == n): Q^T dQ is skew and dR R^{-1} upper triangular,
//    which gives gA = (gQ + Q S) R^{-T}, with M = gR R^T - Q^T gQ and S = triu(M) + triu(M, 1)^T
//    the symmetric matrix whose upper triangle is M's.
//  m < n: A = [X | Y] with X = Q U the square QR of the first m columns and V = Q^T Y, so
//    gY = Q gV, and V's dependence on Q adds Y gV^T = Q V gV^T to gQ before the square formula
//    gives gX from (gQ + Q V gV^T, gU).
// Mode "r" (no Q) and mode "complete" with m > n (Q's last m - n columns are not determined by
// A) are not differentiable, as libtorch: backward raises. First order only: the triangular
// solve is a float64 loop, so the backward is not itself recorded (no gradgradcheck).
struct QRFunction : autograd::Function<QRFunction> {
  static autograd::variable_list forward(autograd::AutogradContext* ctx, const Tensor& A, std::string mode) {
    auto [Q, R] = qr_forward(A, mode);
    ctx->save_for_backward({Q, R});
    ctx->saved_data["mode"] = int64_t{mode == "reduced" ? 0 : mode == "complete" ? 1 : 2};
    ctx->saved_data["m"] = A.size(-2);
    return {Q, R};
  }

  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list grads) {
    const int64_t mode = ctx->saved_data["mode"].to_int(), m = ctx->saved_data["m"].to_int();
    TENSOR_CHECK(mode != 2,
                 "linalg_qr: the derivative of QR depends on Q, which mode 'r' does not compute; use mode 'reduced'");
    const autograd::variable_list saved = ctx->get_saved_variables();
    const Tensor &Q = saved[0], &R = saved[1];
    const int64_t n = R.size(-1);
    TENSOR_CHECK(!(mode == 1 && m > n),
                 "linalg_qr: QR with mode 'complete' is not differentiable when the input has more rows than columns "
                 "({} x {}): the last {} columns of Q are not determined by it; use mode 'reduced'",
                 m, n, m - n);
    const Tensor& gQ = grads[0];
    const Tensor& gR = grads[1];
    if (m >= n) return {square_or_tall(Q, R, gQ, gR), Tensor()};
    const Tensor U = R.narrow(-1, 0, m), V = R.narrow(-1, m, n - m);
    const Tensor gU = gR.narrow(-1, 0, m), gV = gR.narrow(-1, m, n - m);
    const Tensor gX = square_or_tall(Q, U, gQ + matmul(Q, matmul(V, gV.transpose(-1, -2))), gU);
    return {cat({gX, matmul(Q, gV)}, -1), Tensor()};
  }

  // gA for A = Q R with m >= n (R square).
  static Tensor square_or_tall(const Tensor& Q, const Tensor& R, const Tensor& gQ, const Tensor& gR) {
    const Tensor M = matmul(gR, R.transpose(-1, -2)) - matmul(Q.transpose(-1, -2), gQ);
    const Tensor S = M.triu() + M.triu(1).transpose(-1, -2);
    return solve_right_upper_transposed(gQ + matmul(Q, S), R.contiguous());
  }
};
}  // namespace

std::tuple<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode) {
  if (autograd::GradMode::is_enabled() && A.defined() && A.requires_grad()) {
    autograd::variable_list out = QRFunction::apply(A, mode);
    return {out[0], out[1]};
  }
  return qr_forward(A, mode);
}

namespace {
std::tuple<Tensor, Tensor> qr_forward(const Tensor& A, const std::string& mode) {
  const char* op = "linalg_qr";
  TENSOR_CHECK(A.defined() && A.dim() >= 2, "{}: the input tensor A must have at least 2 dimensions, got {}", op,
               A.defined() ? A.describe() : std::string("an undefined tensor"));
  TENSOR_CHECK(A.dtype() == kFloat32 || A.dtype() == kFloat64, "{}: expected a float32 or float64 input, got {}", op,
               A.describe());
  TENSOR_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
               "{}: qr received unrecognized mode '{}' but expected one of 'reduced' (default), 'r', or 'complete'", op,
               mode);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const bool complete = mode == "complete", want_q = mode != "r";
  const int64_t q_cols = complete ? m : k, r_rows = complete ? m : k;
  std::vector<int64_t> batch(A.sizes().begin(), A.sizes().end() - 2);
  int64_t b = 1;
  for (int64_t s : batch) b *= s;
  NoGradGuard no_grad;
  const Tensor a = A.reshape({b, m, n}).to(Device(kCPU), kFloat64).contiguous();
  Tensor Q = empty({b, want_q ? m : 0, want_q ? q_cols : 0}, TensorOptions(kFloat64));
  Tensor R = empty({b, r_rows, n}, TensorOptions(kFloat64));
  std::vector<double> work, qbuf;
  for (int64_t i = 0; i < b; ++i) {
    const double* src = a.data_ptr<double>() + i * m * n;
    work.assign(src, src + m * n);
    householder_qr(work, m, n, want_q ? &qbuf : nullptr, q_cols);
    std::copy(work.begin(), work.begin() + r_rows * n, R.data_ptr<double>() + i * r_rows * n);
    if (want_q) std::copy(qbuf.begin(), qbuf.end(), Q.data_ptr<double>() + i * m * q_cols);
  }
  auto shaped = [&](const Tensor& t, int64_t rows, int64_t cols) {
    std::vector<int64_t> s = batch;
    s.push_back(rows);
    s.push_back(cols);
    return t.reshape(s).to(A.device(), A.dtype());
  };
  Tensor q_out = want_q ? shaped(Q, m, q_cols) : empty({0}, A.options());
  return {q_out, shaped(R, r_rows, n)};
}
}  // namespace
std::tuple<Tensor, Tensor> qr(const Tensor& A, bool some) { return linalg_qr(A, some ? "reduced" : "complete"); }
std::tuple<Tensor, Tensor> Tensor::qr(bool some) const { return tensor::qr(*this, some); }
namespace linalg {
std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode) { return linalg_qr(A, mode); }
}  // namespace linalg

}  // namespace tensor
