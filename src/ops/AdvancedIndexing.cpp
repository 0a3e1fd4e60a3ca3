// Tensor::index and Tensor::index_put_: Python-style indexing with integers, slices, None,
// Ellipsis, bools, bool masks and integer tensors (Note [Basic then advanced indexing]). The
// CPU loops are in kernels/cpu/IndexKernels.cpp.
#include "tensor/indexing.h"

#include <string_view>

#include "kernels/cpu/IndexKernels.h"
#include "src/autograd/Functions.h"
#include "src/ops/IndexOps.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {

namespace indexing {
TensorIndex::TensorIndex(const char* s) : kind_(Kind::Ellipsis) {
  TENSOR_CHECK(s != nullptr && std::string_view(s) == "...",
               "TensorIndex: the only string accepted as an index is \"...\" (Ellipsis), but got \"{}\"",
               s ? s : "(null)");
}
}  // namespace indexing

namespace {
using detail::shape_str;
using indexing::TensorIndex;
using Kind = indexing::TensorIndex::Kind;
using ops::index_detail::check_cpu_or_meta;
using cpu::index_loops::Geometry;

// Note [Basic then advanced indexing]
// As PyTorch, indexing runs in two passes. The basic pass walks the index list left to right
// and applies integers (select), slices, None (unsqueeze) and Ellipsis as views, while
// recording each tensor index (and each bool, which becomes a new size-1 dim indexed by [0]
// or []) against the dim of the view it applies to. With no tensor index the view is the
// result. Otherwise the advanced pass turns each bool mask into the element offsets of its
// true entries (nonzero's coordinates already multiplied by the strides: one 1-D index that
// covers all the mask's dims), broadcasts the index tensors to a shape B, and folds them into
// a table of linear element offsets of shape B. The output is B spliced in where the indexed
// dims were if those dims are adjacent, or B followed by the remaining dims if a slice or a
// None separated them (NumPy's rule; integers were already applied as selects, as PyTorch
// does). Reading (index) or writing (index_put_) is then one strided loop over the output
// shape: src offset = offsets[b] + the strides of the un-indexed dims.

struct BasicResult {
  Tensor view;
  std::vector<Tensor> adv;  // per dim of `view`: undefined or an index tensor (integer or bool mask)
};

bool is_mask_dtype(ScalarType t) { return t == kBool || t == kUInt8; }

int64_t count_specified_dims(ArrayRef<TensorIndex> indices, const char* op) {
  int64_t count = 0, ellipses = 0;
  for (const TensorIndex& ix : indices) {
    switch (ix.kind()) {
      case Kind::Integer:
      case Kind::Slice:
        ++count;
        break;
      case Kind::Tensor:
        if (ix.tensor().defined()) count += is_mask_dtype(ix.tensor().dtype()) ? ix.tensor().dim() : 1;
        break;
      case Kind::Ellipsis:
        ++ellipses;
        break;
      default:
        break;
    }
  }
  TENSOR_CHECK(ellipses <= 1, "{}: an index can only have a single ellipsis (got {})", op, ellipses);
  return count;
}

Tensor select_checked(const Tensor& t, int64_t d, int64_t i, const char* op) {
  const int64_t size = t.size(d);
  TENSOR_CHECK(i >= -size && i < size,
               "{}: index {} is out of bounds for dim {} with size {} (indexed tensor of shape {})", op, i, d, size,
               shape_str(t.sizes()));
  return t.select(d, i);
}

/// A bool index becomes an index tensor on a new size-1 dim: [0] keeps it, [] empties it.
Tensor bool_to_index(bool b) { return b ? zeros({1}, TensorOptions(kInt64)) : empty({0}, TensorOptions(kInt64)); }

void record(std::vector<Tensor>& adv, int64_t d, Tensor t) {
  if (static_cast<int64_t>(adv.size()) <= d) adv.resize(static_cast<size_t>(d + 1));
  adv[static_cast<size_t>(d)] = std::move(t);
}

BasicResult apply_basic(const Tensor& self, ArrayRef<TensorIndex> indices, const char* op) {
  TENSOR_CHECK(self.defined(), "{}: tensor is undefined", op);
  TENSOR_CHECK(!indices.empty(), "{}: passing an empty index list is not valid; use Ellipsis to take everything", op);
  const int64_t specified = count_specified_dims(indices, op);
  TENSOR_CHECK(specified <= self.dim(),
               "{}: too many indices for tensor of dimension {} (got {} indexed dims; shape {})", op, self.dim(),
               specified, shape_str(self.sizes()));
  BasicResult r;
  // A fresh view, so that even x.index({Ellipsis}) is a view and never the same handle.
  Tensor result = self.as_strided(self.sizes(), self.strides(), self.storage_offset());
  int64_t d = 0;
  for (size_t pos = 0; pos < indices.size(); ++pos) {
    const TensorIndex& ix = indices[pos];
    switch (ix.kind()) {
      case Kind::Integer:
        result = select_checked(result, d, ix.integer(), op);
        break;
      case Kind::Slice: {
        const indexing::Slice& s = ix.slice();
        TENSOR_CHECK(s.step() > 0, "{}: slice step must be greater than zero, got {}", op, s.step());
        result = result.slice(d, s.start(), s.stop(), s.step());
        ++d;
        break;
      }
      case Kind::None:
        result = result.unsqueeze(d);
        ++d;
        break;
      case Kind::Ellipsis:
        d += self.dim() - specified;
        break;
      case Kind::Boolean:
        result = result.unsqueeze(d);
        record(r.adv, d, bool_to_index(ix.boolean()));
        ++d;
        break;
      case Kind::Tensor: {
        const Tensor& t = ix.tensor();
        TENSOR_CHECK(t.defined(), "{}: the index tensor at position {} is undefined", op, pos);
        const ScalarType dt = t.dtype();
        TENSOR_CHECK(
            dt == kInt64 || dt == kInt32 || is_mask_dtype(dt),
            "{}: tensors used as indices must be int64, int32, uint8 or bool, but the index at position {} has "
            "dtype {} (shape {})",
            op, pos, dt, shape_str(t.sizes()));
        if (t.dim() == 0) {
          TENSOR_CHECK(!t.is_meta(), "{}: a 0-dim meta tensor (position {}) has no value to index with", op, pos);
          // A 0-dim integer tensor acts as an integer, a 0-dim bool tensor as a bool.
          if (is_mask_dtype(dt)) {
            result = result.unsqueeze(d);
            record(r.adv, d, bool_to_index(t.item<bool>()));
            ++d;
          } else {
            result = select_checked(result, d, t.item<int64_t>(), op);
          }
        } else if (is_mask_dtype(dt)) {
          for (int64_t j = 0; j < t.dim(); ++j)
            TENSOR_CHECK(
                t.size(j) == result.size(d + j),
                "{}: the shape of the mask {} at index {} does not match the shape of the indexed tensor {} at "
                "index {}",
                op, shape_str(t.sizes()), j, shape_str(result.sizes()), d + j);
          record(r.adv, d, dt == kBool ? t : t.ne(0));
          d += t.dim();
        } else {
          record(r.adv, d, t);
          ++d;
        }
        break;
      }
    }
  }
  r.view = result;
  return r;
}

bool has_advanced(const BasicResult& r) {
  for (const Tensor& t : r.adv)
    if (t.defined()) return true;
  return false;
}

struct AdvancedPlan {
  Tensor offsets;  // int64 of shape B: the linear element offset picked by the index tensors
  DimVector out_shape;
  // Iteration over out_shape; operand 0 is left for the caller (output or value strides).
  DimVector off_strides, src_strides;
  bool meta = false;
};

/// The element offsets (sum of coordinate * stride over the mask's dims, with `strides` the
/// indexed tensor's strides of those dims) of the true entries of a bool mask, in row-major
/// order: the linear form of nonzero(mask).
Tensor mask_offsets(const Tensor& mask, IntArrayRef strides) {
  const int64_t count = cpu::mask_true_count(mask);
  // A spare slot lets the loop store at every entry and advance only on true ones (no branch).
  Tensor buf = empty({count + 1}, TensorOptions(kInt64));
  cpu::mask_offsets_fill(mask, strides, buf);
  return buf.narrow(0, 0, count);
}

AdvancedPlan plan_advanced(const Tensor& src, const std::vector<Tensor>& adv, const char* op) {
  check_cpu_or_meta(src, op, "the indexed tensor");
  // A bool mask over dims j..j+k-1 becomes the element offsets of its true entries directly
  // (what nonzero() plus one index per mask dim would fold to): one 1-D index at j, with
  // dims j+1..j+k-1 marked as covered by it.
  struct Entry {
    Tensor t;
    bool is_offset = false;  // t holds ready element offsets (from a mask)
    bool covered = false;    // indexed by the mask recorded at an earlier dim
  };
  std::vector<Entry> idx(static_cast<size_t>(src.dim()));
  for (size_t j = 0; j < adv.size(); ++j) {
    const Tensor& t = adv[j];
    if (!t.defined()) continue;
    check_cpu_or_meta(t, op, "an index tensor");
    if (t.dtype() == kBool) {
      TENSOR_CHECK(!t.is_meta(),
                   "{}: indexing with a bool mask (shape {}) makes the output shape depend on the mask's "
                   "values, so meta masks are not supported",
                   op, shape_str(t.sizes()));
      idx[j].t = mask_offsets(t, IntArrayRef(src.strides().data() + j, static_cast<size_t>(t.dim())));
      idx[j].is_offset = true;
      for (int64_t c = 1; c < t.dim(); ++c) idx[j + static_cast<size_t>(c)].covered = true;
    } else {
      idx[j].t = t;
    }
  }
  auto indexed = [&](int64_t j) { return idx[j].t.defined() || idx[j].covered; };
  std::vector<int64_t> positions, tensors;  // all indexed dims; dims holding an index tensor
  std::string shapes;
  for (size_t j = 0; j < idx.size(); ++j) {
    if (!indexed(static_cast<int64_t>(j))) continue;
    positions.push_back(static_cast<int64_t>(j));
    if (!idx[j].t.defined()) continue;
    tensors.push_back(static_cast<int64_t>(j));
    shapes += (shapes.empty() ? "" : ", ") + shape_str(idx[j].t.sizes());
  }
  DimVector B;
  for (int64_t j : tensors) {
    IntArrayRef s = idx[j].t.sizes();
    size_t n = std::max(B.size(), s.size());
    DimVector nb(n, 1);
    bool ok = true;
    for (size_t i = 0; i < n; ++i) {
      int64_t x = i < n - B.size() ? 1 : B[i - (n - B.size())];
      int64_t y = i < n - s.size() ? 1 : s[i - (n - s.size())];
      ok = ok && (x == y || x == 1 || y == 1);
      nb[i] = x == 1 ? y : x;
    }
    TENSOR_CHECK(ok, "{}: shape mismatch: indexing tensors could not be broadcast together with shapes {}", op, shapes);
    B = nb;
  }

  AdvancedPlan plan;
  plan.meta = src.is_meta();
  for (int64_t j : tensors) plan.meta = plan.meta || idx[j].t.is_meta();
  if (!plan.meta) {
    plan.offsets = zeros(B, TensorOptions(kInt64));
    for (int64_t j : tensors) {
      Tensor e = idx[j].t.expand(B);
      const int64_t size = src.size(j);
      int64_t bad_value = 0;
      const bool bad =
          !cpu::fold_index_offsets(plan.offsets, e, size, src.stride(j), idx[j].is_offset, bad_value);
      TENSOR_CHECK(!bad, "{}: index {} is out of bounds for dim {} with size {} (indexed tensor of shape {})", op,
                   bad_value, j, size, shape_str(src.sizes()));
    }
  }

  // Lay out the output dims (Note [Basic then advanced indexing]).
  const bool adjacent = positions.back() - positions.front() + 1 == static_cast<int64_t>(positions.size());
  DimVector b_strides(B.size(), 0);
  for (int64_t i = static_cast<int64_t>(B.size()) - 1, st = 1; i >= 0; --i) {
    b_strides[i] = st;
    st *= std::max<int64_t>(B[i], 1);
  }
  auto add_src_dim = [&](int64_t j) {
    plan.out_shape.push_back(src.size(j));
    plan.off_strides.push_back(0);
    plan.src_strides.push_back(src.stride(j));
  };
  auto add_b_dims = [&]() {
    for (size_t i = 0; i < B.size(); ++i) {
      plan.out_shape.push_back(B[i]);
      plan.off_strides.push_back(b_strides[i]);
      plan.src_strides.push_back(0);
    }
  };
  if (adjacent) {
    for (int64_t j = 0; j < positions.front(); ++j) add_src_dim(j);
    add_b_dims();
    for (int64_t j = positions.back() + 1; j < src.dim(); ++j) add_src_dim(j);
  } else {
    add_b_dims();
    for (int64_t j = 0; j < src.dim(); ++j)
      if (!indexed(j)) add_src_dim(j);
  }
  return plan;
}

/// The loop geometry of a plan, with operand 0 walking `t` (the output or the broadcast value).
Geometry plan_geometry(const AdvancedPlan& plan, const Tensor& t) {
  Geometry g;
  for (size_t i = 0; i < plan.out_shape.size(); ++i)
    g.add_dim(plan.out_shape[i], t.stride(static_cast<int64_t>(i)), plan.off_strides[i], plan.src_strides[i]);
  g.coalesce();
  return g;
}

/// Leading size-1 dims of a value are dropped before broadcasting, as PyTorch's setitem.
Tensor strip_leading_ones(const Tensor& v) {
  int64_t k = 0;
  while (k < v.dim() && v.size(k) == 1) ++k;
  if (k == 0) return v;
  DimVector s;
  for (int64_t d = k; d < v.dim(); ++d) s.push_back(v.size(d));
  return v.as_strided(s, IntArrayRef(v.strides().data() + k, static_cast<size_t>(v.dim() - k)), v.storage_offset());
}

void check_value_broadcast(const Tensor& value, IntArrayRef shape, const char* op) {
  bool ok = value.dim() <= static_cast<int64_t>(shape.size());
  for (int64_t i = 1; ok && i <= value.dim(); ++i) {
    int64_t v = value.size(value.dim() - i), s = shape[shape.size() - static_cast<size_t>(i)];
    ok = v == s || v == 1;
  }
  TENSOR_CHECK(ok, "{}: shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
               op, shape_str(value.sizes()), shape_str(shape));
}

}  // namespace

// index_put_ while recording: the write is the differentiable scatter of the value into the
// flat positions the indices select (the same trick as Tensor::index); the result's values and
// history then become self's, as for any recorded in-place op on a non-leaf.
Tensor& index_put_recorded(Tensor& self, ArrayRef<indexing::TensorIndex> indices, const Tensor& value) {
  const char* op = "index_put_";
  TENSOR_CHECK(!(self.is_leaf() && self.requires_grad()),
               "{}: a leaf Variable that requires grad is being used in an in-place operation ({})", op, self.describe());
  TENSOR_CHECK(!self.unsafeGetTensorImpl()->is_view(),
               "{}: writing through a view while recording gradients is not supported for index_put_ yet ({}); write "
               "into the base tensor", op, self.describe());
  TENSOR_CHECK(is_floating_point(self.dtype()) || self.is_complex(),
               "{}: a {} tensor cannot receive values that require grad", op, self.dtype());
  Tensor pos = arange(self.numel(), TensorOptions(kInt64)).view(self.sizes()).index(indices);
  Tensor src = value.to(self.dtype()).expand(pos.sizes()).reshape({-1});
  Tensor written = self.reshape({-1}).scatter(0, pos.reshape({-1}), src).view(self.sizes());
  {
    autograd::AutoGradMode off(false);
    self.copy_(written);
  }
  autograd::set_history(self, written.grad_fn(), written.output_nr());
  return self;
}

Tensor Tensor::index(ArrayRef<indexing::TensorIndex> indices) const {
  const char* op = "index";
  BasicResult r = apply_basic(*this, indices, op);
  if (!has_advanced(r)) return r.view;  // views record their own history
  if (requires_grad() && autograd::GradMode::is_enabled() && !is_meta()) {
    // Differentiable form: index a tensor of flat positions the same way, then gather with
    // index_select, whose derivative (index_add) accumulates repeated positions.
    Tensor pos = arange(numel(), TensorOptions(kInt64)).view(sizes()).index(indices);
    return reshape({-1}).index_select(0, pos.reshape({-1})).view(pos.sizes());
  }
  Tensor src = r.view.resolve_conj();
  AdvancedPlan plan = plan_advanced(src, r.adv, op);
  Tensor out = empty(plan.out_shape, src.options());
  if (plan.meta || out.numel() == 0) return out;
  Geometry g = plan_geometry(plan, out);
  cpu::read_at_offsets(src, out, g, plan.offsets.data_ptr<int64_t>());
  return out;
}

Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value_in) {
  const char* op = "index_put_";
  TENSOR_CHECK(value_in.defined(), "{}: value tensor is undefined", op);
  if (autograd::GradMode::is_enabled() && (requires_grad() || value_in.requires_grad()) && !is_meta())
    return index_put_recorded(*this, indices, value_in);
  BasicResult r = apply_basic(*this, indices, op);
  Tensor dst = r.view;
  TENSOR_CHECK(!dst.is_conj(),
               "{}: writing into a lazily conjugated view (shape {}) is not supported; call resolve_conj() first",
               op, shape_str(sizes()));
  for (int64_t d = 0; d < dst.dim(); ++d)
    TENSOR_CHECK(
        dst.stride(d) != 0 || dst.size(d) <= 1,
        "{}: unsupported operation: more than one element of the written-to tensor (indexed shape {}, strides {}) "
        "refers to a single memory location; call .clone() before writing in place",
        op, shape_str(dst.sizes()), shape_str(dst.strides()));
  Tensor value = strip_leading_ones(value_in);
  if (!has_advanced(r)) {
    // Only views: a broadcasting, type-converting copy into the view.
    check_value_broadcast(value, dst.sizes(), op);
    dst.copy_(value);
    if (!is_meta()) unsafeGetTensorImpl()->bump_version();
    return *this;
  }
  TENSOR_CHECK(
      value.dtype() == dtype(),
      "{}: index_put_ with tensor indices requires the value to have the destination's dtype, but got {} for the "
      "destination and {} for the value",
      op, dtype(), value.dtype());
  check_cpu_or_meta(value, op, "the value");
  AdvancedPlan plan = plan_advanced(dst, r.adv, op);
  check_value_broadcast(value, plan.out_shape, op);
  if (plan.meta || value.is_meta()) return *this;
  int64_t n = 1;
  for (int64_t s : plan.out_shape) n *= s;
  if (n == 0) return *this;
  // Reading the value while writing its storage would depend on the loop order.
  if (value.impl()->storage().get() == impl()->storage().get()) value = value.clone();
  value = value.resolve_conj().expand(plan.out_shape);
  Geometry g = plan_geometry(plan, value);
  // Serial: with repeated indices the last write wins (accumulate=false).
  cpu::write_at_offsets(dst, value, g, plan.offsets.data_ptr<int64_t>());
  unsafeGetTensorImpl()->bump_version();
  return *this;
}

Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value) {
  TENSOR_CHECK(defined(), "index_put_: tensor is undefined");
  return index_put_(indices, full({}, value, options()));
}

}  // namespace tensor
