// Front ends of the matrix products: shape, dtype and device checks (libtorch's rules and
// messages), output allocation, and the composites matmul, dot, outer and einsum.
//
// mm, bmm, addmm and linear are front ends (Note [Front ends and backend kernels]): checks and
// the output's allocation, then the backend's matmul kernel (CPU: cpu::matmul, which picks
// oneDNN or the plain loops by dtype); Meta stops after the allocation.
#include "src/ops/LinalgOps.h"
#include "src/cpu/Matmul.h"
#include "src/ops/CompositeOps.h"

#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/linalg.h"
#include "tensor/ops.h"

namespace tensor::ops {
namespace {

using detail::shape_str;

// The per-backend kernels: CPU's built in, CUDA's registered.
dispatch::BackendKernels<MatmulKernel> g_matmul_kernels{{&cpu::matmul, nullptr}};

void check_pair(const char* op, const Tensor& a, const Tensor& b) {
  TENSOR_CHECK(a.defined() && b.defined(), "{}: expected defined tensors", op);
  TENSOR_CHECK(a.scalar_type() == b.scalar_type(),
               "{}: expected both operands to have the same dtype, but got {} (shape {}) and {} (shape {})", op,
               a.scalar_type(), shape_str(a.sizes()), b.scalar_type(), shape_str(b.sizes()));
  TENSOR_CHECK(a.device() == b.device(), "{}: expected both operands on the same device, but got {} and {}", op,
               a.device().str(), b.device().str());
  TENSOR_CHECK(a.scalar_type() != kBool, "{}: not implemented for dtype Bool (shapes {} and {})", op,
               shape_str(a.sizes()), shape_str(b.sizes()));
}

template <DispatchKey K>
Tensor mm_fn(const Tensor& a, const Tensor& b) {
  const MatmulKernel kernel = g_matmul_kernels.get<K>("mm");
  check_pair("mm", a, b);
  TENSOR_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected 2-D tensors, but got shapes {} and {}",
               shape_str(a.sizes()), shape_str(b.sizes()));
  TENSOR_CHECK(a.size(1) == b.size(0),
               "mm: shapes {} and {} cannot be multiplied ({}x{} and {}x{})", shape_str(a.sizes()),
               shape_str(b.sizes()), a.size(0), a.size(1), b.size(0), b.size(1));
  Tensor out = empty({a.size(0), b.size(1)}, a.options());
  if constexpr (K != DispatchKey::Meta)
    if (out.numel() != 0) kernel("mm", a, b, Tensor(), out, 1, 0);
  return out;
}

template <DispatchKey K>
Tensor bmm_fn(const Tensor& a, const Tensor& b) {
  const MatmulKernel kernel = g_matmul_kernels.get<K>("bmm");
  check_pair("bmm", a, b);
  TENSOR_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D tensors, but got shapes {} and {}",
               shape_str(a.sizes()), shape_str(b.sizes()));
  TENSOR_CHECK(a.size(0) == b.size(0), "bmm: expected the same batch size, but got shapes {} and {}",
               shape_str(a.sizes()), shape_str(b.sizes()));
  TENSOR_CHECK(a.size(2) == b.size(1), "bmm: shapes {} and {} cannot be multiplied (inner sizes {} and {})",
               shape_str(a.sizes()), shape_str(b.sizes()), a.size(2), b.size(1));
  Tensor out = empty({a.size(0), a.size(1), b.size(2)}, a.options());
  if constexpr (K != DispatchKey::Meta)
    if (out.numel() != 0) kernel("bmm", a, b, Tensor(), out, 1, 0);
  return out;
}

bool is_zero(const Scalar& s) { return s.to_complex() == std::complex<double>(0, 0); }
bool is_one(const Scalar& s) { return s.to_complex() == std::complex<double>(1, 0); }

template <DispatchKey K>
Tensor addmm_fn(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  const MatmulKernel kernel = g_matmul_kernels.get<K>("addmm");
  check_pair("addmm", a, b);
  TENSOR_CHECK(self.defined() && self.scalar_type() == a.scalar_type(),
               "addmm: expected self to have dtype {} like the matrices, but got {}", a.scalar_type(),
               self.defined() ? self.scalar_type() : ScalarType::Undefined);
  TENSOR_CHECK(a.dim() == 2 && b.dim() == 2, "addmm: expected 2-D matrices, but got shapes {} and {}",
               shape_str(a.sizes()), shape_str(b.sizes()));
  TENSOR_CHECK(a.size(1) == b.size(0), "addmm: shapes {} and {} cannot be multiplied ({}x{} and {}x{})",
               shape_str(a.sizes()), shape_str(b.sizes()), a.size(0), a.size(1), b.size(0), b.size(1));
  const int64_t n = a.size(0), m = b.size(1);
  const bool bcast_ok = self.dim() <= 2 && (self.dim() < 1 || self.size(-1) == m || self.size(-1) == 1) &&
                        (self.dim() < 2 || self.size(0) == n || self.size(0) == 1);
  TENSOR_CHECK(bcast_ok, "addmm: self of shape {} does not broadcast to the product's shape [{}, {}]",
               shape_str(self.sizes()), n, m);
  Tensor out = empty({n, m}, a.options());
  if constexpr (K == DispatchKey::Meta) return out;
  if (out.numel() == 0) return out;
  // A row vector added once (beta 1, alpha 1: oneDNN scales the bias with the output) is a fused
  // bias, linear's case; otherwise the product is summed into a copy of self.
  if (is_one(beta) && is_one(alpha) && self.numel() == m && (self.dim() == 1 || (self.dim() == 2 && self.size(0) == 1)) && m > 1) {
    kernel("addmm", a, b, self.reshape({m}), out, 1, 0);
    return out;
  }
  if (!is_zero(beta)) out.copy_(self.expand({n, m}));
  kernel("addmm", a, b, Tensor(), out, alpha, is_zero(beta) ? Scalar(0) : beta);
  return out;
}

template <DispatchKey K>
Tensor linear_fn(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const MatmulKernel kernel = g_matmul_kernels.get<K>("linear");
  check_pair("linear", x, w);
  TENSOR_CHECK(w.dim() == 2, "linear: expected a 2-D weight [out_features, in_features], but got shape {}",
               shape_str(w.sizes()));
  TENSOR_CHECK(x.dim() >= 1 && x.size(-1) == w.size(1),
               "linear: input of shape {} does not match weight of shape {} (expected the last dim of the input to "
               "be in_features = {})", shape_str(x.sizes()), shape_str(w.sizes()), w.size(1));
  const int64_t of = w.size(0);
  if (bias.defined()) {
    TENSOR_CHECK(bias.scalar_type() == x.scalar_type() && bias.device() == x.device(),
                 "linear: expected bias of dtype {} on {}, but got {} on {}", x.scalar_type(), x.device().str(),
                 bias.scalar_type(), bias.device().str());
    TENSOR_CHECK(bias.dim() <= 1 && bias.numel() == of,
                 "linear: expected bias of shape [{}] for weight of shape {}, but got {}", of, shape_str(w.sizes()),
                 shape_str(bias.sizes()));
  }
  DimVector os(x.sizes());
  os[os.size() - 1] = of;
  Tensor out = empty(os, x.options());
  if constexpr (K == DispatchKey::Meta) return out;
  if (out.numel() == 0) return out;
  const int64_t rows = out.numel() / of;  // not x.numel() / in_features: in_features may be 0
  Tensor x2 = x.dim() == 2 ? x : x.reshape({rows, x.size(-1)});
  kernel("linear", x2, w.t(), bias.defined() ? bias.reshape({of}) : bias,
              out.dim() == 2 ? out : out.view({rows, of}), 1, 0);
  return out;
}

// The dispatcher table (constant-initialized; CUDA slots filled by register_kernel).
LinalgOpDefs g_linalg = {
    TENSOR_FRONT_END_DEF(MmFn, "mm", mm_fn),
    TENSOR_FRONT_END_DEF(MmFn, "bmm", bmm_fn),
    TENSOR_FRONT_END_DEF(AddmmFn, "addmm", addmm_fn),
    TENSOR_FRONT_END_DEF(LinearFn, "linear", linear_fn),
};

}  // namespace

LinalgOpDefs& linalg_ops() { return g_linalg; }

void register_kernel(DispatchKey backend, MatmulKernel kernel) {
  dispatch::check_kernel_backend(backend, "mm/bmm/addmm/linear");
  g_matmul_kernels.set(backend, kernel);
  g_linalg.mm.set(backend, &mm_fn<DispatchKey::CUDA>);
  g_linalg.bmm.set(backend, &bmm_fn<DispatchKey::CUDA>);
  g_linalg.addmm.set(backend, &addmm_fn<DispatchKey::CUDA>);
  g_linalg.linear.set(backend, &linear_fn<DispatchKey::CUDA>);
}

}  // namespace tensor::ops

namespace tensor {

using detail::shape_str;

Tensor mm(const Tensor& a, const Tensor& b) { return ops::linalg_ops().mm(a, b); }
Tensor bmm(const Tensor& a, const Tensor& b) { return ops::linalg_ops().bmm(a, b); }
Tensor addmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  return ops::linalg_ops().addmm(self, a, b, beta, alpha);
}
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return ops::linalg_ops().linear(x, weight, bias);
}

namespace {
Tensor dot_composite(const Tensor& a, const Tensor& b) {
  TENSOR_CHECK(a.defined() && b.defined() && a.dim() == 1 && b.dim() == 1,
               "dot: expected 1-D tensors, but got shapes {} and {}", a.defined() ? shape_str(a.sizes()) : "undefined",
               b.defined() ? shape_str(b.sizes()) : "undefined");
  TENSOR_CHECK(a.size(0) == b.size(0), "dot: expected tensors of the same length, but got {} and {} elements",
               a.size(0), b.size(0));
  TENSOR_CHECK(a.scalar_type() == b.scalar_type(),
               "dot: expected both vectors to have the same dtype, but got {} and {}", a.scalar_type(), b.scalar_type());
  // A [1, k] x [k, 1] product: oneDNN's accumulation for float32/bf16, exact loops otherwise.
  return mm(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(dot, MatmulFn, dot_composite)
}  // namespace ops
Tensor dot(const Tensor& a, const Tensor& b) { return ops::dot_op()(a, b); }

namespace {
Tensor outer_composite(const Tensor& a, const Tensor& b) {
  TENSOR_CHECK(a.defined() && b.defined() && a.dim() == 1 && b.dim() == 1,
               "outer: expected 1-D tensors, but got shapes {} and {}", a.defined() ? shape_str(a.sizes()) : "undefined",
               b.defined() ? shape_str(b.sizes()) : "undefined");
  return a.unsqueeze(1) * b.unsqueeze(0);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(outer, MatmulFn, outer_composite)
}  // namespace ops
Tensor outer(const Tensor& a, const Tensor& b) { return ops::outer_op()(a, b); }

// Note [matmul as a composite]
// As in libtorch, matmul is not an op of its own: it reshapes to mm or bmm, whose derivatives
// then give its gradient. Leading dims of a >= 3-D first operand times a matrix fold into the
// rows of one mm (the linear-layer case, no copy when a is contiguous); other batched cases
// broadcast the batch dims, and a batch that is only broadcast stays a stride-0 view that the
// oneDNN kernel broadcasts without copying (Note [Matmul operand layouts]).
namespace {
Tensor matmul_composite(const Tensor& a, const Tensor& b) {
  TENSOR_CHECK(a.defined() && b.defined(), "matmul: expected defined tensors");
  const int64_t da = a.dim(), db = b.dim();
  TENSOR_CHECK(da >= 1 && db >= 1, "matmul: both arguments need at least 1 dimension, but got shapes {} and {}",
               shape_str(a.sizes()), shape_str(b.sizes()));
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) {
    TENSOR_CHECK(a.size(1) == b.size(0), "matmul: shapes {} and {} cannot be multiplied", shape_str(a.sizes()),
                 shape_str(b.sizes()));
    return mm(a, b.unsqueeze(1)).squeeze(1);
  }
  if (da == 1 && db == 2) {
    TENSOR_CHECK(a.size(0) == b.size(0), "matmul: shapes {} and {} cannot be multiplied", shape_str(a.sizes()),
                 shape_str(b.sizes()));
    return mm(a.unsqueeze(0), b).squeeze(0);
  }
  if (da == 2 && db == 2) return mm(a, b);
  if (da >= 3 && db <= 2) {
    // Fold a's batch dims into rows.
    Tensor bm = db == 1 ? b.unsqueeze(1) : b;
    TENSOR_CHECK(a.size(-1) == bm.size(0), "matmul: shapes {} and {} cannot be multiplied", shape_str(a.sizes()),
                 shape_str(b.sizes()));
    DimVector os(IntArrayRef(a.sizes().data(), a.dim() - 1));
    // The row count is spelled out: reshape cannot infer -1 next to an empty inner dim
    // ([2, 3, 0] has 6 rows of 0 elements).
    int64_t rows = 1;
    for (int64_t s : os) rows *= s;
    Tensor r = mm(a.reshape({rows, a.size(-1)}), bm);
    if (db == 2) os.push_back(bm.size(1));
    return r.reshape(os);
  }
  // Batched: 1-D operands become a row (a) or column (b) and that dim is removed at the end.
  Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  const int64_t n = a3.size(-2), k = a3.size(-1), k2 = b3.size(-2), m = b3.size(-1);
  TENSOR_CHECK(k == k2, "matmul: shapes {} and {} cannot be multiplied (inner sizes {} and {})", shape_str(a.sizes()),
               shape_str(b.sizes()), k, k2);
  std::vector<int64_t> batch;
  try {
    batch = broadcast_shapes(IntArrayRef(a3.sizes().data(), a3.dim() - 2), IntArrayRef(b3.sizes().data(), b3.dim() - 2));
  } catch (const Error&) {
    TENSOR_ERROR("matmul: the batch dims of shapes {} and {} do not broadcast", shape_str(a.sizes()),
                 shape_str(b.sizes()));
  }
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  std::vector<int64_t> ea(batch), eb(batch);
  ea.push_back(n); ea.push_back(k);
  eb.push_back(k); eb.push_back(m);
  Tensor r = bmm(a3.expand(ea).reshape({nb, n, k}), b3.expand(eb).reshape({nb, k, m}));
  std::vector<int64_t> os(batch);
  if (da > 1) os.push_back(n);
  if (db > 1) os.push_back(m);
  return r.reshape(os);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(matmul, MatmulFn, matmul_composite)
}  // namespace ops
Tensor matmul(const Tensor& a, const Tensor& b) { return ops::matmul_op()(a, b); }

Tensor Tensor::matmul(const Tensor& other) const { return tensor::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return tensor::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return tensor::bmm(*this, other); }
Tensor Tensor::dot(const Tensor& other) const { return tensor::dot(*this, other); }
Tensor Tensor::outer(const Tensor& other) const { return tensor::outer(*this, other); }

}  // namespace tensor
