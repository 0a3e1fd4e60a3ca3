// Rearranging ops: tril/triu (+ in place), flip, repeat, roll, and their dispatcher tables
// (src/ops/RearrangeOps.h).
//
// tril/triu and flip are front ends (Note [Front ends and backend kernels]): checks and the
// output's allocation, then the backend's kernel. The CPU kernels move bytes, one loop for
// every dtype (kernels/cpu/RearrangeKernels.cpp, Note [tril/triu row kernel]). Their
// derivatives are rows of the table (src/autograd/Derivatives.cpp, rearranging section):
// TrilBackward0/TriuBackward0 = tril/triu(grad), FlipBackward0 = flip(grad, dims); recorded
// tril_/triu_ go through masked_fill_ for its in-place history handling.
//
// Note [Rearranging ops by composition]
// repeat and roll are compositions of dispatched, differentiable ops, so their gradients (and
// gradients of gradients) come from those ops, they serve every backend whose pieces do, and
// each still costs one copy:
//   repeat     a viewed as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1, ...], copied once
//              and viewed as [r0 * s0, r1 * s1, ...] (always new memory, as libtorch)
//   roll       per dim, libtorch's roll_common: cat of the two narrow pieces (one copy per dim)
// Their tables hold the composite in every backend slot and nothing in the Autograd slot: the
// composite itself records nothing.
#include "src/ops/RearrangeOps.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/RearrangeKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {
using detail::shape_str;
using dispatch::BackendKernels;

// The per-backend kernels: CPU's built in, CUDA's registered.
BackendKernels<TriangleKernel> g_triangle_kernels{{&cpu::tril_triu, nullptr}};
BackendKernels<FlipKernel> g_flip_kernels{{&cpu::flip, nullptr}};

// ---- tril / triu ----

void check_matrix(const Tensor& a, const char* op) {
  TENSOR_CHECK(a.defined(), "{}: tensor is undefined", op);
  TENSOR_CHECK(a.dim() >= 2, "{}: input tensor must have at least 2 dimensions (got shape {}, {})", op,
               shape_str(a.sizes()), a.dtype());
}

template <bool Lower, DispatchKey K>
Tensor triangle(const Tensor& a, int64_t diagonal) {
  const char* op = Lower ? "tril" : "triu";
  const TriangleKernel kernel = g_triangle_kernels.get<K>(op);
  check_matrix(a, op);
  Tensor out = empty(a.sizes(), a.options());
  if constexpr (K != DispatchKey::Meta) kernel(a.resolve_conj(), out, diagonal, Lower);
  return out;
}

template <bool Lower, DispatchKey K>
Tensor& triangle_(Tensor& a, int64_t diagonal) {
  const char* op = Lower ? "tril_" : "triu_";
  const TriangleKernel kernel = g_triangle_kernels.get<K>(op);
  check_matrix(a, op);
  if constexpr (K != DispatchKey::Meta) kernel(a, Tensor(), diagonal, Lower);  // zeros are conj-agnostic
  a.unsafeGetTensorImpl()->bump_version();
  return a;
}

// ---- flip ----

template <DispatchKey K>
Tensor flip_fn(const Tensor& a, IntArrayRef dims) {
  const FlipKernel kernel = g_flip_kernels.get<K>("flip");
  TENSOR_CHECK(a.defined(), "flip: tensor is undefined");
  const int64_t nd = a.dim(), n = std::max<int64_t>(nd, 1);
  TENSOR_CHECK(nd <= 64, "flip: tensors with more than 64 dims are not supported (shape {})", shape_str(a.sizes()));
  uint64_t flipped = 0;
  for (int64_t d : dims) {
    TENSOR_CHECK(d >= -n && d < n, "flip: dim {} is out of range for a tensor of shape {} ({}) with {} dims", d,
                 shape_str(a.sizes()), a.dtype(), nd);
    const int64_t w = d < 0 ? d + n : d;
    TENSOR_CHECK(!((flipped >> w) & 1), "flip: dim {} appears multiple times in the list of dims {} (tensor shape {}, {})",
                 w, shape_str(dims), shape_str(a.sizes()), a.dtype());
    flipped |= uint64_t(1) << w;
  }
  Tensor out = empty(a.sizes(), a.options());
  if constexpr (K != DispatchKey::Meta) kernel(a.resolve_conj(), flipped, out);
  return out;
}

// ---- repeat and roll: composites (Note [Rearranging ops by composition]) ----

Tensor repeat_composite(const Tensor& a, IntArrayRef repeats) {
  TENSOR_CHECK(a.defined(), "repeat: tensor is undefined");
  const int64_t nd = static_cast<int64_t>(repeats.size());
  TENSOR_CHECK(nd >= a.dim(),
               "repeat: Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor "
               "(repeats {}, tensor shape {}, {})",
               shape_str(repeats), shape_str(a.sizes()), a.dtype());
  for (int64_t r : repeats)
    TENSOR_CHECK(r >= 0, "repeat: repeats must be non-negative, got {} for a tensor of shape {} ({})",
                 shape_str(repeats), shape_str(a.sizes()), a.dtype());
  Tensor x = a;
  for (int64_t i = a.dim(); i < nd; ++i) x = x.unsqueeze(0);  // new leading dims of size 1
  std::vector<int64_t> expanded, final_sizes;
  for (int64_t d = nd - 1; d >= 0; --d) x = x.unsqueeze(d);  // [1, s0, 1, s1, ...]
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t s = x.size(2 * d + 1);
    expanded.push_back(repeats[d]);
    expanded.push_back(s);
    final_sizes.push_back(repeats[d] * s);
  }
  Tensor e = x.expand(expanded);
  // repeat always returns new memory, even when every repeat is 1 (libtorch).
  Tensor c = e.is_contiguous() ? e.clone() : e.contiguous();
  return c.view(final_sizes);
}

Tensor roll_composite(const Tensor& a, IntArrayRef shifts, IntArrayRef dims) {
  TENSOR_CHECK(a.defined(), "roll: tensor is undefined");
  TENSOR_CHECK(!shifts.empty(), "roll: `shifts` required (tensor shape {}, {})", shape_str(a.sizes()), a.dtype());
  if (dims.empty() && shifts.size() == 1) {
    // Flattened roll, shape kept.
    return roll(a.flatten(), shifts, {0}).view(a.sizes());
  }
  TENSOR_CHECK(shifts.size() == dims.size(),
               "roll: shifts and dimensions must align. shifts: {}, dims: {} (shifts {}, dims {}, tensor shape {}, {})",
               shifts.size(), dims.size(), shape_str(shifts), shape_str(dims), shape_str(a.sizes()), a.dtype());
  const int64_t nd = a.dim();
  for (int64_t d : dims)
    TENSOR_CHECK(d >= -std::max<int64_t>(nd, 1) && d < std::max<int64_t>(nd, 1),
                 "roll: dim {} is out of range for a tensor of shape {} ({}) with {} dims", d, shape_str(a.sizes()),
                 a.dtype(), nd);
  if (a.numel() == 0) return a.clone();
  Tensor x = a;
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t dim = detail::wrap_dim(dims[k], nd, "roll");
    const int64_t n = x.size(dim);
    int64_t start = (n - shifts[k]) % n;
    if (start < 0) start += n;
    x = cat({x.narrow(dim, start, n - start), x.narrow(dim, 0, start)}, dim);
  }
  return x;
}

// ---- the dispatcher table (constant-initialized; CUDA slots filled by register_kernel) ----

RearrangeOpDefs g_rearrange = {
    dispatch::front_end_def<TriangleFn>("tril", &triangle<true, DispatchKey::CPU>, &triangle<true, DispatchKey::Meta>),
    dispatch::front_end_def<TriangleFn>("triu", &triangle<false, DispatchKey::CPU>, &triangle<false, DispatchKey::Meta>),
    dispatch::front_end_def<TriangleInplaceFn>("tril_", &triangle_<true, DispatchKey::CPU>,
                                               &triangle_<true, DispatchKey::Meta>),
    dispatch::front_end_def<TriangleInplaceFn>("triu_", &triangle_<false, DispatchKey::CPU>,
                                               &triangle_<false, DispatchKey::Meta>),
    TENSOR_FRONT_END_DEF(FlipFn, "flip", flip_fn),
    dispatch::composite_def<RepeatFn>("repeat", &repeat_composite),
    dispatch::composite_def<RollFn>("roll", &roll_composite),
};

}  // namespace

RearrangeOpDefs& rearrange_ops() { return g_rearrange; }

void register_kernel(DispatchKey backend, TriangleKernel kernel) {
  dispatch::check_kernel_backend(backend, "tril/triu");
  g_triangle_kernels.set(backend, kernel);
  g_rearrange.tril.set(backend, &triangle<true, DispatchKey::CUDA>);
  g_rearrange.triu.set(backend, &triangle<false, DispatchKey::CUDA>);
  g_rearrange.tril_.set(backend, &triangle_<true, DispatchKey::CUDA>);
  g_rearrange.triu_.set(backend, &triangle_<false, DispatchKey::CUDA>);
}

void register_kernel(DispatchKey backend, FlipKernel kernel) {
  dispatch::check_kernel_backend(backend, "flip");
  g_flip_kernels.set(backend, kernel);
  g_rearrange.flip.set(backend, &flip_fn<DispatchKey::CUDA>);
}

}  // namespace ops

// ---- public API ----
using ops::rearrange_ops;

Tensor tril(const Tensor& a, int64_t diagonal) { return rearrange_ops().tril(a, diagonal); }
Tensor triu(const Tensor& a, int64_t diagonal) { return rearrange_ops().triu(a, diagonal); }
Tensor repeat(const Tensor& a, IntArrayRef repeats) { return rearrange_ops().repeat(a, repeats); }
Tensor roll(const Tensor& a, IntArrayRef shifts, IntArrayRef dims) { return rearrange_ops().roll(a, shifts, dims); }
Tensor flip(const Tensor& a, IntArrayRef dims) { return rearrange_ops().flip(a, dims); }

Tensor Tensor::tril(int64_t diagonal) const { return tensor::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return tensor::triu(*this, diagonal); }
Tensor& Tensor::tril_(int64_t diagonal) const { return rearrange_ops().tril_(const_cast<Tensor&>(*this), diagonal); }
Tensor& Tensor::triu_(int64_t diagonal) const { return rearrange_ops().triu_(const_cast<Tensor&>(*this), diagonal); }
Tensor Tensor::repeat(IntArrayRef repeats) const { return tensor::repeat(*this, repeats); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return tensor::roll(*this, shifts, dims); }
Tensor Tensor::flip(IntArrayRef dims) const { return tensor::flip(*this, dims); }

}  // namespace tensor
