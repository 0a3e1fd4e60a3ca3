// Tensor::index and Tensor::index_put_: Python-style indexing with integers, slices, None,
// Ellipsis, bools, bool masks and integer tensors (Note [Basic then advanced indexing]), and the
// dispatcher ops index and index_put_ that take the index tensors (src/ops/AdvancedIndexing.h).
// Their CPU kernels (offsets and loops) are in kernels/cpu/IndexKernels.cpp.
#include "tensor/indexing.h"

#include <string_view>

#include "kernels/cpu/IndexKernels.h"
#include "src/autograd/Functions.h"
#include "src/core/TensorIterator.h"
#include "src/dispatch/BackendKernels.h"
#include "src/ops/AdvancedIndexing.h"
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
using ops::AdvancedIndexOpDefs;
using ops::IndexFn;
using ops::IndexKernel;
using ops::IndexPutFn;
using ops::IndexPutKernel;
using ops::index_detail::check_backend_device;

// Note [Basic then advanced indexing]
// As PyTorch, indexing runs in two passes. The basic pass walks the index list left to right
// and applies integers (select), slices, None (unsqueeze) and Ellipsis as views, while
// recording each tensor index (and each bool, which becomes a new size-1 dim indexed by [0]
// or []) against the dim of the view it applies to. With no tensor index the view is the
// result. Otherwise the advanced pass is the dispatcher op index (or index_put_). Its front
// end broadcasts the index tensors to a shape B (a bool mask counts as one 1-D index of its
// true count, covering all the mask's dims) and lays out the output: B spliced in where the
// indexed dims were if those dims are adjacent, or B followed by the remaining dims if a slice
// or a None separated them (NumPy's rule; integers were already applied as selects, as PyTorch
// does). Its CPU kernel turns each mask into the element offsets of its true entries
// (nonzero's coordinates already multiplied by the strides), folds every index into a table of
// linear element offsets of shape B, checking the values, and reads (index) or writes
// (index_put_) in one strided loop over the output shape: src offset = offsets[b] + the
// strides of the un-indexed dims.

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

// The front ends' half of the advanced pass: the index tensors' broadcast shape and the output
// layout, from shapes alone except for a mask's true count. The offsets are the kernel's.
template <DispatchKey K>
AdvancedIndex plan_index(const Tensor& src, TensorList adv, const char* op) {
  check_backend_device<K>(src, op, "the indexed tensor");
  TENSOR_CHECK(static_cast<int64_t>(adv.size()) <= src.dim(), "{}: {} index entries for a tensor of shape {}", op,
               adv.size(), shape_str(src.sizes()));
  AdvancedIndex ai;
  ai.dims.resize(static_cast<size_t>(src.dim()));
  std::vector<int64_t> positions;  // every indexed dim
  std::vector<DimVector> shapes;   // each index tensor's shape (a mask's: [true count])
  for (size_t j = 0; j < adv.size(); ++j) {
    const Tensor& t = adv[j];
    if (!t.defined() || ai.dims[j].covered) continue;
    check_backend_device<K>(t, op, "an index tensor");
    AdvancedIndex::Entry& e = ai.dims[j];
    e.t = t;
    if (t.dtype() == kBool) {
      TENSOR_CHECK(!t.is_meta(),
                   "{}: indexing with a bool mask (shape {}) makes the output shape depend on the mask's "
                   "values, so meta masks are not supported",
                   op, shape_str(t.sizes()));
      TENSOR_CHECK(j + static_cast<size_t>(t.dim()) <= ai.dims.size(), "{}: a mask of shape {} at dim {} overruns a tensor of shape {}",
                   op, shape_str(t.sizes()), j, shape_str(src.sizes()));
      e.mask_dims = t.dim();
      for (int64_t c = 1; c < t.dim(); ++c) ai.dims[j + static_cast<size_t>(c)].covered = true;
      for (int64_t c = 0; c < t.dim(); ++c) positions.push_back(static_cast<int64_t>(j) + c);
      shapes.push_back(DimVector{t.sum().item<int64_t>()});
    } else {
      TENSOR_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32,
                   "{}: tensors used as indices must be int64, int32 or bool, but got {} (shape {})", op, t.dtype(),
                   shape_str(t.sizes()));
      positions.push_back(static_cast<int64_t>(j));
      shapes.push_back(DimVector(t.sizes()));
    }
  }
  TENSOR_CHECK(!positions.empty(), "{}: no index tensor (tensor of shape {})", op, shape_str(src.sizes()));
  std::string all;
  for (const DimVector& sh : shapes) all += (all.empty() ? "" : ", ") + shape_str(sh.ref());
  for (const DimVector& sh : shapes) {
    const size_t n = std::max(ai.b.size(), sh.size());
    DimVector nb(n, 1);
    bool ok = true;
    for (size_t i = 0; i < n; ++i) {
      const int64_t x = i < n - ai.b.size() ? 1 : ai.b[i - (n - ai.b.size())];
      const int64_t y = i < n - sh.size() ? 1 : sh[i - (n - sh.size())];
      ok = ok && (x == y || x == 1 || y == 1);
      nb[i] = x == 1 ? y : x;
    }
    TENSOR_CHECK(ok, "{}: shape mismatch: indexing tensors could not be broadcast together with shapes {}", op, all);
    ai.b = nb;
  }
  // Lay out the output dims (Note [Basic then advanced indexing]).
  ai.first = positions.front();
  ai.last = positions.back();
  ai.adjacent = ai.last - ai.first + 1 == static_cast<int64_t>(positions.size());
  auto add_b = [&] {
    for (int64_t x : ai.b) ai.out_shape.push_back(x);
  };
  if (ai.adjacent) {
    for (int64_t j = 0; j < ai.first; ++j) ai.out_shape.push_back(src.size(j));
    add_b();
    for (int64_t j = ai.last + 1; j < src.dim(); ++j) ai.out_shape.push_back(src.size(j));
  } else {
    add_b();
    for (int64_t j = 0; j < src.dim(); ++j)
      if (!ai.dims[static_cast<size_t>(j)].indexed()) ai.out_shape.push_back(src.size(j));
  }
  return ai;
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


// The per-backend kernels: CPU's built in, CUDA's registered.
dispatch::BackendKernels<IndexKernel> g_index_kernels{{&cpu::advanced_index, nullptr}};
dispatch::BackendKernels<IndexPutKernel> g_index_put_kernels{{&cpu::advanced_index_put, nullptr}};

// ---- the front ends (Note [Front ends and backend kernels]) ----

template <DispatchKey K>
Tensor index_fn(const Tensor& self, TensorList indices) {
  const IndexKernel kernel = g_index_kernels.get<K>("index");
  TENSOR_CHECK(self.defined(), "index: tensor is undefined");
  const Tensor src = self.resolve_conj();
  AdvancedIndex ai = plan_index<K>(src, indices, "index");
  if constexpr (K == DispatchKey::Meta) {
    return empty(ai.out_shape, src.options().device(Device(DeviceType::Meta)));
  } else {
    Tensor out = empty(ai.out_shape, src.options());
    if (out.numel() != 0) kernel(src, ai, out);
    return out;
  }
}

template <DispatchKey K>
Tensor& index_put_fn(Tensor& self, TensorList indices, const Tensor& value_in) {
  const char* op = "index_put_";
  const IndexPutKernel kernel = g_index_put_kernels.get<K>(op);
  TENSOR_CHECK(self.defined() && value_in.defined(), "{}: tensor or value is undefined", op);
  TENSOR_CHECK(!self.is_conj(),
               "{}: writing into a lazily conjugated view (shape {}) is not supported; call resolve_conj() first",
               op, shape_str(self.sizes()));
  check_no_internal_overlap(self, op);
  TENSOR_CHECK(value_in.dtype() == self.dtype(),
               "{}: index_put_ with tensor indices requires the value to have the destination's dtype, but got {} for "
               "the destination and {} for the value",
               op, self.dtype(), value_in.dtype());
  check_backend_device<K>(value_in, op, "the value");
  Tensor value = strip_leading_ones(value_in);
  AdvancedIndex ai = plan_index<K>(self, indices, op);
  check_value_broadcast(value, ai.out_shape, op);
  if constexpr (K != DispatchKey::Meta) {
    int64_t n = 1;
    for (int64_t s : ai.out_shape) n *= s;
    if (n == 0) return self;
    // Reading the value while writing its storage would depend on the loop order.
    if (value.unsafeGetTensorImpl()->storage().get() == self.unsafeGetTensorImpl()->storage().get())
      value = value.clone();
    kernel(self, ai, value.resolve_conj().expand(ai.out_shape));
    self.unsafeGetTensorImpl()->bump_version();
  }
  return self;
}

AdvancedIndexOpDefs g_advanced_index = {
    TENSOR_FRONT_END_DEF(IndexFn, "index", index_fn),
    TENSOR_FRONT_END_DEF(IndexPutFn, "index_put_", index_put_fn),
};

}  // namespace

namespace ops {
AdvancedIndexOpDefs& advanced_index_ops() { return g_advanced_index; }

void register_kernel(DispatchKey backend, const AdvancedIndexKernels& kernels) {
  dispatch::check_kernel_backend(backend, "index/index_put_");
  if (kernels.index) {
    g_index_kernels.set(backend, kernels.index);
    g_advanced_index.index.set(backend, &index_fn<DispatchKey::CUDA>);
  }
  if (kernels.index_put) {
    g_index_put_kernels.set(backend, kernels.index_put);
    g_advanced_index.index_put_.set(backend, &index_put_fn<DispatchKey::CUDA>);
  }
}
}  // namespace ops

// Note [Differentiable indexing]
// While recording, indexing is a composite of dispatched, differentiable ops, so that its
// gradient (and the gradient of that) comes free and no as_strided view of self is recorded:
// the same index list picks flat positions out of arange(numel) (a below-autograd index), and
//   index       = self.reshape(-1).index_select(0, positions), whose derivative index_add
//                 accumulates repeated positions;
//   index_put_  = the scatter of the value into those positions of self.reshape(-1), whose
//                 values and history then become self's, as for any recorded in-place op.
namespace {
Tensor flat_positions(const Tensor& self, ArrayRef<indexing::TensorIndex> indices) {
  autograd::AutoGradMode off(false);
  return arange(self.numel(), TensorOptions(kInt64)).view(self.sizes()).index(indices);
}

Tensor& index_put_recorded(Tensor& self, ArrayRef<indexing::TensorIndex> indices, const Tensor& value) {
  const char* op = "index_put_";
  TENSOR_CHECK(!(self.is_leaf() && self.requires_grad()),
               "{}: a leaf Variable that requires grad is being used in an in-place operation ({})", op, self.describe());
  TENSOR_CHECK(!self.unsafeGetTensorImpl()->is_view(),
               "{}: writing through a view while recording gradients is not supported for index_put_ yet ({}); write "
               "into the base tensor", op, self.describe());
  TENSOR_CHECK(is_floating_point(self.dtype()) || self.is_complex(),
               "{}: a {} tensor cannot receive values that require grad", op, self.dtype());
  Tensor pos = flat_positions(self, indices);
  Tensor src = value.to(self.dtype()).expand(pos.sizes()).reshape({-1});
  Tensor written = self.reshape({-1}).scatter(0, pos.reshape({-1}), src).view(self.sizes());
  {
    autograd::AutoGradMode off(false);
    self.copy_(written);
  }
  autograd::set_history(self, written.grad_fn(), written.output_nr());
  return self;
}
}  // namespace

Tensor Tensor::index(ArrayRef<indexing::TensorIndex> indices) const {
  BasicResult r = apply_basic(*this, indices, "index");
  if (!has_advanced(r)) return r.view;  // views record their own history
  if (requires_grad() && autograd::GradMode::is_enabled() && !is_meta()) {
    Tensor pos = flat_positions(*this, indices);
    return reshape({-1}).index_select(0, pos.reshape({-1})).view(pos.sizes());
  }
  return ops::advanced_index_ops().index(r.view, r.adv);
}

Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value_in) const {
  const char* op = "index_put_";
  TENSOR_CHECK(value_in.defined(), "{}: value tensor is undefined", op);
  if (autograd::GradMode::is_enabled() && (requires_grad() || value_in.requires_grad()) && !is_meta())
    return index_put_recorded(const_cast<Tensor&>(*this), indices, value_in);
  BasicResult r = apply_basic(*this, indices, op);
  Tensor dst = r.view;
  if (has_advanced(r)) {
    ops::advanced_index_ops().index_put_(dst, r.adv, value_in);
    return const_cast<Tensor&>(*this);  // the front end bumped the shared version counter
  }
  // Only views: a broadcasting, type-converting copy into the view.
  TENSOR_CHECK(!dst.is_conj(),
               "{}: writing into a lazily conjugated view (shape {}) is not supported; call resolve_conj() first",
               op, shape_str(sizes()));
  check_no_internal_overlap(dst, op);
  Tensor value = strip_leading_ones(value_in);
  check_value_broadcast(value, dst.sizes(), op);
  dst.copy_(value);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value) const {
  TENSOR_CHECK(defined(), "index_put_: tensor is undefined");
  return index_put_(indices, full({}, value, options()));
}

}  // namespace tensor
