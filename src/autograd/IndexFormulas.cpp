// The manual formulas of the indexing and joining ops (IndexFormulas.h), which their rows in the
// derivatives table call (Derivatives.cpp, "indexing and joining"), and the in-place kernels,
// which stay hand-written (below).
#include "src/autograd/IndexFormulas.h"

#include "tensor/ops.h"

namespace tensor::autograd {

namespace {

inline TensorOptions like(const Tensor& g) { return TensorOptions(g.dtype()).device(g.device()); }

/// The dim as the kernels see it: 0-dim tensors behave as 1-element 1-D ones.
inline int64_t wrap(int64_t dim, int64_t ndim) {
  if (ndim == 0) return 0;
  return dim < 0 ? dim + ndim : dim;
}

// Note [Legacy empty tensors in cat] (JoinOps.cpp): 1-D inputs of shape [0] are skipped by the
// forward, whatever their rank; they get no gradient.
bool is_legacy_empty(const InputMeta& m) { return m.sizes.size() == 1 && m.sizes[0] == 0; }

}  // namespace

// Only the leading index-shaped block of src is read, so the rest of src gets zeros (padded
// with cat, which keeps this differentiable). An empty index reads nothing.
Tensor scatter_src_grad(const Tensor& g, int64_t dim, const Tensor& index, const InputMeta& src) {
  const DimVector& ss = src.sizes;
  if (index.numel() == 0) return zeros(ss, like(g));
  Tensor gs = g.gather(dim, index);
  if (gs.dim() == 0 && ss.size() == 1) gs = gs.reshape({1});
  for (int64_t d = 0; d < gs.dim() && d < static_cast<int64_t>(ss.size()); ++d) {
    if (gs.size(d) < ss[d]) {
      DimVector pad(gs.sizes());
      pad[d] = ss[d] - gs.size(d);
      gs = cat({gs, zeros(pad, like(g))}, d);
    }
  }
  if (ss.empty() && gs.dim() != 0) gs = gs.reshape({});
  return gs;
}

variable_list cat_tensors_backward(const FormulaNode& n, const Tensor& g, int64_t dim) {
  const size_t inputs = n.next_edges().size();
  // The dim wraps against the first input that is not a legacy empty tensor (as the forward).
  int64_t ref_dim = -1;
  for (size_t i = 0; i < inputs && ref_dim < 0; ++i)
    if (!is_legacy_empty(n.input_meta(i))) ref_dim = static_cast<int64_t>(n.input_meta(i).sizes.size());
  const int64_t d = ref_dim < 0 ? 0 : wrap(dim, ref_dim);
  variable_list grads;
  int64_t offset = 0;
  for (size_t i = 0; i < inputs; ++i) {
    const InputMeta& m = n.input_meta(i);
    if (is_legacy_empty(m)) {
      grads.emplace_back();
      continue;
    }
    const int64_t len = m.sizes[d];
    grads.push_back(n.needs_input_grad(i) ? g.narrow(d, offset, len) : Tensor());
    offset += len;
  }
  return grads;
}

}  // namespace tensor::autograd
