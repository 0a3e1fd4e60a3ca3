// Rearranging ops: tril/triu (+ in place), repeat, roll, flip.
//
// Note [Rearranging ops by composition]
// repeat and roll are compositions of differentiable ops, so their gradients (and gradients of
// gradients) come from those ops, and each still costs one copy:
//   repeat     a viewed as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1, ...], copied once
//              and viewed as [r0 * s0, r1 * s1, ...] (always new memory, as libtorch)
//   roll       per dim, libtorch's roll_common: cat of the two narrow pieces (one copy per dim)
// tril/triu (Note [tril/triu row kernel]) and flip are byte-moving CPU kernels, dtype-agnostic
// (kernels/cpu/RearrangeKernels.cpp),
// with TrilBackward0/TriuBackward0 = tril/triu(grad) and FlipBackward0 = flip(grad, dims).
// Recorded tril_/triu_ go through masked_fill_ for its in-place history handling.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/RearrangeKernels.h"
#include "src/autograd/Functions.h"
#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {
namespace {
using detail::shape_str;

// ---- tril / triu ----

void check_matrix(const Tensor& a, const char* op) {
  TENSOR_CHECK(a.defined(), "{}: tensor is undefined", op);
  TENSOR_CHECK(a.dim() >= 2, "{}: input tensor must have at least 2 dimensions (got shape {}, {})", op,
               shape_str(a.sizes()), a.dtype());
}

/// [rows, cols] bool mask of the last two dims: col - row compared with `diagonal`.
enum class Cmp { Le, Ge, Gt, Lt };
Tensor triangle_mask(const Tensor& a, int64_t diagonal, Cmp cmp) {
  const int64_t rows = a.size(-2), cols = a.size(-1);
  const TensorOptions o = TensorOptions().dtype(kInt64).device(a.device());
  // col vs row + diagonal, compared by broadcasting: only the bool mask is [rows, cols].
  Tensor c = arange(cols, o).unsqueeze(0), r = (arange(rows, o) + diagonal).unsqueeze(1);
  switch (cmp) {
    case Cmp::Le: return c.le(r);
    case Cmp::Ge: return c.ge(r);
    case Cmp::Gt: return c.gt(r);
    default: return c.lt(r);
  }
}

/// True when an op on `a` records autograd history.
bool records(const Tensor& a) {
  return autograd::GradMode::is_enabled() && !dispatch::local_keys().excluded.has(DispatchKey::Autograd) &&
         autograd::is_differentiable(a.dtype()) && a.requires_grad();
}

Tensor triangle(const Tensor& a, int64_t diagonal, bool lower) {
  check_matrix(a, lower ? "tril" : "triu");
  Tensor out;
  {
    autograd::BelowAutograd below;
    if (a.is_cpu()) {
      Tensor src = a.resolve_conj();
      out = empty(a.sizes(), a.options());
      cpu::tril_triu(src, static_cast<char*>(out.data_ptr()), diagonal, lower);
    } else {
      out = where(triangle_mask(a, diagonal, lower ? Cmp::Le : Cmp::Ge), a, zeros({}, a.options()));
    }
  }
  if (records(a)) {
    auto node = lower ? std::make_shared<autograd::FormulaNode>("TrilBackward0", TENSOR_GRAD(return {g.tril(n.ints[0])};))
                      : std::make_shared<autograd::FormulaNode>("TriuBackward0", TENSOR_GRAD(return {g.triu(n.ints[0])};));
    node->add_input(a);
    node->ints.push_back(diagonal);
    autograd::set_history(out, node);
  }
  return out;
}

Tensor& triangle_(Tensor& a, int64_t diagonal, bool lower) {
  const char* op = lower ? "tril_" : "triu_";
  check_matrix(a, op);
  if (records(a)) {
    // Recorded through masked_fill_ (its in-place history handling), checked under our name.
    autograd::check_inplace(a, op);
    Tensor drop;
    {
      autograd::BelowAutograd below;
      drop = triangle_mask(a, diagonal, lower ? Cmp::Gt : Cmp::Lt);
    }
    return a.masked_fill_(drop, 0);
  }
  if (a.is_cpu()) {
    cpu::tril_triu(a, nullptr, diagonal, lower);
    a.unsafeGetTensorImpl()->bump_version();
    return a;
  }
  return a.masked_fill_(triangle_mask(a, diagonal, lower ? Cmp::Gt : Cmp::Lt), 0);
}

}  // namespace

Tensor tril(const Tensor& a, int64_t diagonal) { return triangle(a, diagonal, /*lower=*/true); }
Tensor triu(const Tensor& a, int64_t diagonal) { return triangle(a, diagonal, /*lower=*/false); }

Tensor repeat(const Tensor& a, IntArrayRef repeats) {
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

Tensor roll(const Tensor& a, IntArrayRef shifts, IntArrayRef dims) {
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

Tensor flip(const Tensor& a, IntArrayRef dims) {
  TENSOR_CHECK(a.defined(), "flip: tensor is undefined");
  const int64_t nd = a.dim();
  std::vector<bool> flipped(static_cast<size_t>(std::max<int64_t>(nd, 1)), false);
  DimVector wrapped;
  for (int64_t d : dims) {
    TENSOR_CHECK(d >= -std::max<int64_t>(nd, 1) && d < std::max<int64_t>(nd, 1),
                 "flip: dim {} is out of range for a tensor of shape {} ({}) with {} dims", d, shape_str(a.sizes()),
                 a.dtype(), nd);
    const int64_t w = d < 0 ? d + std::max<int64_t>(nd, 1) : d;
    TENSOR_CHECK(!flipped[w], "flip: dim {} appears multiple times in the list of dims {} (tensor shape {}, {})", w,
                 shape_str(dims), shape_str(a.sizes()), a.dtype());
    flipped[w] = true;
    wrapped.push_back(w);
  }
  Tensor out;
  {
    autograd::BelowAutograd below;
    if (a.is_meta()) {
      out = empty(a.sizes(), a.options());
    } else if (!a.is_cpu()) {
      // Other devices: one index_select per dim.
      out = a;
      for (int64_t d : wrapped) {
        if (nd == 0) break;
        const int64_t n = out.size(d);
        out = out.index_select(d, arange(n - 1, -1, -1, TensorOptions().dtype(kInt64).device(a.device())));
      }
      if (out.is_same(a)) out = a.clone();
    } else {
      Tensor src = a.resolve_conj();
      out = empty(src.sizes(), src.options());
      cpu::flip(src, flipped, out);
    }
  }
  if (records(a)) {
    auto node = std::make_shared<autograd::FormulaNode>("FlipBackward0", TENSOR_GRAD(return {g.flip(n.ints)};));
    node->add_input(a);
    node->ints = wrapped;
    autograd::set_history(out, node);
  }
  return out;
}

Tensor Tensor::tril(int64_t diagonal) const { return tensor::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return tensor::triu(*this, diagonal); }
Tensor& Tensor::tril_(int64_t diagonal) { return triangle_(*this, diagonal, /*lower=*/true); }
Tensor& Tensor::triu_(int64_t diagonal) { return triangle_(*this, diagonal, /*lower=*/false); }
Tensor Tensor::repeat(IntArrayRef repeats) const { return tensor::repeat(*this, repeats); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return tensor::roll(*this, shifts, dims); }
Tensor Tensor::flip(IntArrayRef dims) const { return tensor::flip(*this, dims); }

}  // namespace tensor
