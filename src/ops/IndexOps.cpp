// Indexing ops along a dim: index_select, gather, scatter, scatter_add, index_add,
// masked_fill, masked_select, nonzero, where(cond). The front ends check every argument and
// every index, then allocate and call the CPU loops of kernels/cpu/IndexKernels.cpp.
#include "src/ops/IndexOps.h"

#include "kernels/cpu/IndexKernels.h"
#include "src/core/DtypeVisit.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {
namespace cpu {
// self = where(mask, value, self) through the Highway where kernel (kernels/cpu/CopyKernels.cpp).
// Declared here, not via kernels/cpu/Elementwise.h, whose TensorIterator.h overlap checks
// would clash with this file's own.
/// out = where(mask, value, src), mask and src broadcast to out's shape (src may be out itself).
void masked_fill_where(const Tensor& out, const Tensor& mask, const Tensor& value, const Tensor& src, const char* op);
}  // namespace cpu
namespace ops {

namespace {
using detail::shape_str;
using detail::wrap_dim;
using index_detail::check_cpu_or_meta;

// ---- shared checks ----

void check_index_dtype(const Tensor& index, const char* op, bool allow_int32) {
  TENSOR_CHECK(index.defined(), "{}: index tensor is undefined", op);
  TENSOR_CHECK(index.dtype() == kInt64 || (allow_int32 && index.dtype() == kInt32),
               "{}: expected an index tensor of dtype int64{}, but got {} (index shape {})", op,
               allow_int32 ? " or int32" : "", index.dtype(), shape_str(index.sizes()));
}

// Every index value must lie in [0, size) before anything is written (these ops, unlike
// Tensor::index, do not wrap negative indices, as PyTorch). Names the op, the first bad
// value, the dim and the shape of the indexed tensor.
void check_index_range(const Tensor& index, int64_t size, int64_t dim, IntArrayRef self_shape, const char* op) {
  if (!index.is_cpu() || index.numel() == 0) return;
  int64_t bad_value = 0;
  const bool bad = !cpu::index_values_in_range(index, size, bad_value);
  TENSOR_CHECK(!bad, "{}: index {} is out of bounds for dim {} with size {} (self shape {}, index shape {})", op,
               bad_value, dim, size, shape_str(self_shape), shape_str(index.sizes()));
}

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.impl()->storage().get() == b.impl()->storage().get();
}

// In-place writes through a tensor whose elements share memory (an expand()ed view) would
// race and give order-dependent results; PyTorch rejects them the same way.
void check_no_internal_overlap(const Tensor& self, const char* op) {
  for (int64_t d = 0; d < self.dim(); ++d)
    TENSOR_CHECK(
        self.stride(d) != 0 || self.size(d) <= 1,
        "{}: unsupported operation: more than one element of the written-to tensor (shape {}, strides {}) refers "
        "to a single memory location; call .clone() before writing in place",
        op, shape_str(self.sizes()), shape_str(self.strides()));
}

void check_not_conj(const Tensor& self, const char* op) {
  TENSOR_CHECK(!self.is_conj(),
               "{}: writing in place into a lazily conjugated view (shape {}) is not supported; "
               "call resolve_conj() first",
               op, shape_str(self.sizes()));
}

/// A fresh contiguous copy with any pending conjugation applied (the functional ops' output).
Tensor fresh_copy(const Tensor& t) { return t.is_conj() ? t.resolve_conj() : t.clone(); }

/// 0-dim tensors behave as 1-element 1-D ones along dim 0 in the dim-wise ops.
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }
int64_t dims_1d(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }

bool try_broadcast(IntArrayRef a, IntArrayRef b, DimVector& out) {
  size_t n = std::max(a.size(), b.size());
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    out[i] = x == 1 ? y : x;
  }
  return true;
}


// ---- index_select ----

Tensor index_select_kernel(const Tensor& self_in, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  check_cpu_or_meta(self_in, op, "self");
  check_index_dtype(index, op, /*allow_int32=*/true);
  check_cpu_or_meta(index, op, "index");
  TENSOR_CHECK(index.dim() <= 1, "index_select: index must be a 0-D or 1-D tensor, but got shape {} (self shape {})",
               shape_str(index.sizes()), shape_str(self_in.sizes()));
  dim = wrap_dim(dim, self_in.dim(), op);
  Tensor self = self_in.resolve_conj();
  if (self.dim() == 0) {
    TENSOR_CHECK(index.numel() == 1,
                 "index_select: indexing a 0-dim tensor needs exactly one index, got index shape {}",
                 shape_str(index.sizes()));
    check_index_range(index, 1, 0, self.sizes(), op);
    return self.is_meta() ? empty({}, self.options()) : self.clone();
  }
  DimVector out_shape(self.sizes());
  out_shape[dim] = index.numel();
  Tensor out = empty(out_shape, self.options());
  check_index_range(index, self.size(dim), dim, self.sizes(), op);
  if (out.is_meta() || index.is_meta() || out.numel() == 0) return out;

  cpu::index_select(self, dim, index, out);
  return out;
}

// ---- gather ----

Tensor gather_kernel(const Tensor& self_in, int64_t dim, const Tensor& index) {
  const char* op = "gather";
  check_cpu_or_meta(self_in, op, "self");
  check_index_dtype(index, op, /*allow_int32=*/false);
  check_cpu_or_meta(index, op, "index");
  TENSOR_CHECK(
      dims_1d(index) == dims_1d(self_in),
      "gather: index tensor must have the same number of dims as self, but got index shape {} and self shape {}",
      shape_str(index.sizes()), shape_str(self_in.sizes()));
  dim = wrap_dim(dim, self_in.dim(), op);
  Tensor self = as_1d(self_in.resolve_conj()), idx = as_1d(index);
  for (int64_t d = 0; d < self.dim(); ++d)
    TENSOR_CHECK(d == dim || idx.size(d) <= self.size(d),
                 "gather: index shape {} must not exceed self shape {} except at dim {} (dim {}: {} > {})",
                 shape_str(index.sizes()), shape_str(self_in.sizes()), dim, d, idx.size(d), self.size(d));
  Tensor out = empty(index.sizes(), self.options());
  check_index_range(index, self.size(dim), dim, self_in.sizes(), op);
  if (out.is_meta() || index.is_meta() || out.numel() == 0) return out;

  cpu::gather(self, dim, idx, as_1d(out));
  return out;
}

// ---- scatter, scatter_add ----

// `op` is the name the user called (functional or in-place), for messages.
template <bool Add>
Tensor& scatter_inplace_impl(Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& src_in, const char* op) {
  TENSOR_CHECK(self.defined() && src_in.defined(), "{}: self and src must be defined tensors", op);
  check_cpu_or_meta(self, op, "self");
  check_index_dtype(index_in, op, /*allow_int32=*/false);
  check_cpu_or_meta(index_in, op, "index");
  check_cpu_or_meta(src_in, op, "src");
  TENSOR_CHECK(src_in.dtype() == self.dtype(),
               "{}: expected self and src to have the same dtype, but got {} (self) and {} (src)", op, self.dtype(),
               src_in.dtype());
  dim = wrap_dim(dim, self.dim(), op);
  check_not_conj(self, op);
  check_no_internal_overlap(self, op);
  Tensor s1 = as_1d(self), idx = as_1d(index_in), src = as_1d(src_in.resolve_conj());
  // As PyTorch, an empty index writes nothing and is not shape-checked.
  if (index_in.numel() == 0) return self;
  TENSOR_CHECK(
      idx.dim() == s1.dim() && src.dim() == s1.dim(),
      "{}: index, self and src must have the same number of dims, but got index shape {}, self shape {} and src "
      "shape {}",
      op, shape_str(index_in.sizes()), shape_str(self.sizes()), shape_str(src_in.sizes()));
  for (int64_t d = 0; d < s1.dim(); ++d) {
    TENSOR_CHECK(idx.size(d) <= src.size(d), "{}: index shape {} must not exceed src shape {} (dim {}: {} > {})", op,
                 shape_str(index_in.sizes()), shape_str(src_in.sizes()), d, idx.size(d), src.size(d));
    TENSOR_CHECK(d == dim || idx.size(d) <= s1.size(d),
                 "{}: index shape {} must not exceed self shape {} except at dim {} (dim {}: {} > {})", op,
                 shape_str(index_in.sizes()), shape_str(self.sizes()), dim, d, idx.size(d), s1.size(d));
  }
  check_index_range(index_in, s1.size(dim), dim, self.sizes(), op);
  if (self.is_meta() || idx.is_meta() || src.is_meta()) return self;
  // Reading what we are writing would make the result depend on the loop order.
  if (same_storage(src, self)) src = src.clone();
  if (same_storage(idx, self)) idx = idx.clone();

  cpu::scatter(s1, dim, idx, src, Add, op);
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

template <bool Add>
Tensor scatter_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  TENSOR_CHECK(self.defined(), "{}: self is undefined", Add ? "scatter_add" : "scatter");
  Tensor out = self.is_meta() ? empty(self.sizes(), self.options()) : fresh_copy(self);
  scatter_inplace_impl<Add>(out, dim, index, src, Add ? "scatter_add" : "scatter");
  return out;
}
Tensor& scatter_inplace_kernel(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_inplace_impl<false>(self, dim, index, src, "scatter_");
}
Tensor& scatter_add_inplace_kernel(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_inplace_impl<true>(self, dim, index, src, "scatter_add_");
}

// ---- index_add ----

Tensor& index_add_impl(Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& source_in, const Scalar& alpha,
                       const char* op) {
  TENSOR_CHECK(self.defined() && source_in.defined(), "{}: self and source must be defined tensors", op);
  check_cpu_or_meta(self, op, "self");
  check_index_dtype(index_in, op, /*allow_int32=*/true);
  check_cpu_or_meta(index_in, op, "index");
  check_cpu_or_meta(source_in, op, "source");
  TENSOR_CHECK(index_in.dim() <= 1, "{}: index must be a 0-D or 1-D tensor, but got shape {}", op,
               shape_str(index_in.sizes()));
  TENSOR_CHECK(source_in.dtype() == self.dtype(),
               "{}: expected self and source to have the same dtype, but got {} (self) and {} (source)", op,
               self.dtype(), source_in.dtype());
  TENSOR_CHECK(!(is_integral(self.dtype(), true) && (alpha.is_floating_point() || alpha.is_complex())),
               "{}: for integral self (dtype {}), alpha must not be a floating point number", op, self.dtype());
  dim = wrap_dim(dim, self.dim(), op);
  check_not_conj(self, op);
  check_no_internal_overlap(self, op);
  Tensor s1 = as_1d(self), src = as_1d(source_in.resolve_conj()), idx = index_in;
  TENSOR_CHECK(src.dim() == s1.dim(), "{}: source shape {} must have as many dims as self shape {}", op,
               shape_str(source_in.sizes()), shape_str(self.sizes()));
  TENSOR_CHECK(idx.numel() == src.size(dim),
               "{}: the number of indices ({}) must equal source.size({}) ({}); source shape {}", op, idx.numel(), dim,
               src.size(dim), shape_str(source_in.sizes()));
  for (int64_t d = 0; d < s1.dim(); ++d)
    TENSOR_CHECK(d == dim || src.size(d) == s1.size(d),
                 "{}: source shape {} must match self shape {} except at dim {} (dim {}: {} vs {})", op,
                 shape_str(source_in.sizes()), shape_str(self.sizes()), dim, d, src.size(d), s1.size(d));
  check_index_range(idx, s1.size(dim), dim, self.sizes(), op);
  if (self.is_meta() || idx.is_meta() || src.is_meta() || src.numel() == 0) return self;
  if (same_storage(src, self)) src = src.clone();
  if (same_storage(idx, self)) idx = idx.clone();

  cpu::index_add(s1, dim, idx, src, alpha, op);
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

Tensor index_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                        const Scalar& alpha) {
  TENSOR_CHECK(self.defined(), "index_add: self is undefined");
  Tensor out = self.is_meta() ? empty(self.sizes(), self.options()) : fresh_copy(self);
  index_add_impl(out, dim, index, source, alpha, "index_add");
  return out;
}
Tensor& index_add_inplace_kernel(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                                 const Scalar& alpha) {
  return index_add_impl(self, dim, index, source, alpha, "index_add_");
}

// ---- masked_fill ----

void check_mask(const Tensor& mask, const char* op) {
  TENSOR_CHECK(mask.defined(), "{}: mask is undefined", op);
  TENSOR_CHECK(mask.dtype() == kBool, "{}: expected a bool mask, but got dtype {} (mask shape {})", op, mask.dtype(),
               shape_str(mask.sizes()));
  check_cpu_or_meta(mask, op, "mask");
}

/// self = where(mask, value, src), src being self for the in-place op or, out of place, the
/// input broadcast into a fresh self: one pass, not a copy then a fill.
Tensor& masked_fill_impl(Tensor& self, const Tensor& mask_in, const Scalar& value, const char* op,
                         const Tensor* src = nullptr) {
  TENSOR_CHECK(self.defined(), "{}: self is undefined", op);
  check_cpu_or_meta(self, op, "self");
  check_mask(mask_in, op);
  DimVector shape;
  TENSOR_CHECK(try_broadcast(self.sizes(), mask_in.sizes(), shape) && IntArrayRef(shape) == self.sizes(),
               "{}: mask of shape {} cannot be broadcast to self of shape {}", op, shape_str(mask_in.sizes()),
               shape_str(self.sizes()));
  TENSOR_CHECK(!value.is_complex() || self.is_complex(), "{}: cannot fill a {} tensor (shape {}) with a complex value",
               op, self.dtype(), shape_str(self.sizes()));
  check_not_conj(self, op);
  check_no_internal_overlap(self, op);
  if (self.is_meta() || mask_in.is_meta() || self.numel() == 0) return self;
  Tensor mask = same_storage(mask_in, self) ? mask_in.clone() : mask_in;
  // self = where(mask, value, self): the value is a 0-dim tensor that the iterator broadcasts
  // with stride 0, so this runs the vectorized select (Note [Vectorized where] in
  // kernels/cpu/CopyKernels.cpp) rather than a per-element branch on random masks.
  Tensor fillv = empty({}, self.options());
  visit_dtype(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *static_cast<T*>(fillv.data_ptr()) = checked_scalar<T>(value, op);
  });
  cpu::masked_fill_where(self, mask, fillv, src ? *src : self, op);
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

Tensor masked_fill_kernel(const Tensor& self, const Tensor& mask, const Scalar& value) {
  const char* op = "masked_fill";
  TENSOR_CHECK(self.defined(), "{}: self is undefined", op);
  check_mask(mask, op);
  DimVector shape;
  TENSOR_CHECK(try_broadcast(self.sizes(), mask.sizes(), shape),
               "{}: mask of shape {} and self of shape {} cannot be broadcast together", op, shape_str(mask.sizes()),
               shape_str(self.sizes()));
  // As PyTorch: the output takes the broadcast shape of self and mask.
  Tensor out = empty(shape, self.options());
  check_cpu_or_meta(self, op, "self");
  masked_fill_impl(out, mask, value, op, &self);
  return out;
}
Tensor& masked_fill_inplace_kernel(Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_impl(self, mask, value, "masked_fill_");
}

// ---- the dispatcher tables ----

using dispatch::backend_def;

dispatch::OpDef<IndexSelectFn> g_index_select = backend_def<IndexSelectFn>("index_select", &index_select_kernel);
dispatch::OpDef<GatherFn> g_gather = backend_def<GatherFn>("gather", &gather_kernel);
dispatch::OpDef<ScatterFn> g_scatter = backend_def<ScatterFn>("scatter", &scatter_kernel<false>);
dispatch::OpDef<ScatterInplaceFn> g_scatter_ = backend_def<ScatterInplaceFn>("scatter_", &scatter_inplace_kernel);
dispatch::OpDef<ScatterFn> g_scatter_add = backend_def<ScatterFn>("scatter_add", &scatter_kernel<true>);
dispatch::OpDef<ScatterInplaceFn> g_scatter_add_ =
    backend_def<ScatterInplaceFn>("scatter_add_", &scatter_add_inplace_kernel);
dispatch::OpDef<IndexAddFn> g_index_add = backend_def<IndexAddFn>("index_add", &index_add_kernel);
dispatch::OpDef<IndexAddInplaceFn> g_index_add_ =
    backend_def<IndexAddInplaceFn>("index_add_", &index_add_inplace_kernel);
dispatch::OpDef<MaskedFillFn> g_masked_fill = backend_def<MaskedFillFn>("masked_fill", &masked_fill_kernel);
dispatch::OpDef<MaskedFillInplaceFn> g_masked_fill_ =
    backend_def<MaskedFillInplaceFn>("masked_fill_", &masked_fill_inplace_kernel);

}  // namespace

dispatch::OpDef<IndexSelectFn>& index_select_op() { return g_index_select; }
dispatch::OpDef<GatherFn>& gather_op() { return g_gather; }
dispatch::OpDef<ScatterFn>& scatter_op() { return g_scatter; }
dispatch::OpDef<ScatterInplaceFn>& scatter_inplace_op() { return g_scatter_; }
dispatch::OpDef<ScatterFn>& scatter_add_op() { return g_scatter_add; }
dispatch::OpDef<ScatterInplaceFn>& scatter_add_inplace_op() { return g_scatter_add_; }
dispatch::OpDef<IndexAddFn>& index_add_op() { return g_index_add; }
dispatch::OpDef<IndexAddInplaceFn>& index_add_inplace_op() { return g_index_add_; }
dispatch::OpDef<MaskedFillFn>& masked_fill_op() { return g_masked_fill; }
dispatch::OpDef<MaskedFillInplaceFn>& masked_fill_inplace_op() { return g_masked_fill_; }

}  // namespace ops

// ---- public API ----

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) { return ops::index_select_op()(a, dim, index); }
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) { return ops::gather_op()(a, dim, index); }
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  return ops::scatter_op()(a, dim, index, src);
}
Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  return ops::scatter_add_op()(a, dim, index, src);
}
Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return ops::index_add_op()(a, dim, index, source, alpha);
}
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Scalar& value) {
  return ops::masked_fill_op()(a, mask, value);
}

namespace ops {
namespace {
Tensor masked_select_kernel(const Tensor& self_in, const Tensor& mask_in) {
  const char* op = "masked_select";
  TENSOR_CHECK(self_in.defined(), "{}: self is undefined", op);
  ops::check_mask(mask_in, op);
  ops::index_detail::check_cpu_or_meta(self_in, op, "self");
  TENSOR_CHECK(
      !self_in.is_meta() && !mask_in.is_meta(),
      "{}: the output size depends on the mask's values, so meta tensors are not supported (self shape {}, mask "
      "shape {})",
      op, detail::shape_str(self_in.sizes()), detail::shape_str(mask_in.sizes()));
  DimVector shape;
  TENSOR_CHECK(ops::try_broadcast(self_in.sizes(), mask_in.sizes(), shape),
               "{}: mask of shape {} and self of shape {} cannot be broadcast together", op,
               detail::shape_str(mask_in.sizes()), detail::shape_str(self_in.sizes()));
  if (self_in.requires_grad() && autograd::GradMode::is_enabled()) {
    // Differentiable form: select flat positions, then index_select (see Tensor::index).
    Tensor pos = masked_select(arange(self_in.numel(), TensorOptions(kInt64)).view(self_in.sizes()), mask_in);
    return self_in.reshape({-1}).index_select(0, pos);
  }
  Tensor self = self_in.resolve_conj().expand(shape), mask = mask_in.expand(shape);
  const int64_t count = cpu::masked_select_count(self, mask);
  // A spare slot lets the copy loop store every element and advance only on true mask
  // entries, without a branch on the mask.
  Tensor buf = empty({count + 1}, self.options());
  Tensor out = buf.narrow(0, 0, count);
  if (count == 0) return out;
  cpu::masked_select_fill(self, mask, buf);
  return out;
}

Tensor nonzero_kernel(const Tensor& a_in) {
  const char* op = "nonzero";
  TENSOR_CHECK(a_in.defined(), "{}: tensor is undefined", op);
  ops::index_detail::check_cpu_or_meta(a_in, op, "self");
  TENSOR_CHECK(!a_in.is_meta(),
               "{}: the output size depends on the values, so meta tensors (shape {}) are not supported", op,
               detail::shape_str(a_in.sizes()));
  Tensor a = a_in.resolve_conj();
  const int64_t nd = a.dim();
  const int64_t count = cpu::nonzero_count(a, op);
  // One spare row lets the second pass write every element's coordinates and advance only
  // past the nonzero ones, with no branch on the (often random) values.
  Tensor buf = empty({count + 1, nd}, TensorOptions(kInt64));
  Tensor out = buf.narrow(0, 0, count);
  if (count == 0 || nd == 0) return out;
  cpu::nonzero_fill(a, buf, op);
  return out;
}

// Their output sizes depend on the values, so the Meta slot raises (the same function).
dispatch::OpDef<MaskedSelectFn> g_masked_select =
    dispatch::backend_def<MaskedSelectFn>("masked_select", &masked_select_kernel);
dispatch::OpDef<NonzeroFn> g_nonzero = dispatch::backend_def<NonzeroFn>("nonzero", &nonzero_kernel);
}  // namespace
dispatch::OpDef<MaskedSelectFn>& masked_select_op() { return g_masked_select; }
dispatch::OpDef<NonzeroFn>& nonzero_op() { return g_nonzero; }
}  // namespace ops

Tensor masked_select(const Tensor& self, const Tensor& mask) { return ops::masked_select_op()(self, mask); }
Tensor nonzero(const Tensor& a) { return ops::nonzero_op()(a); }

std::vector<Tensor> where(const Tensor& cond) {
  TENSOR_CHECK(cond.defined(), "where: condition is undefined");
  // As nonzero(as_tuple=True): a 0-dim condition counts as 1-D.
  Tensor nz = nonzero(cond.dim() == 0 ? cond.reshape({1}) : cond);
  std::vector<Tensor> cols;
  for (int64_t d = 0; d < nz.size(1); ++d) cols.push_back(nz.select(1, d));
  return cols;
}

// ---- Tensor methods ----

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return tensor::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return tensor::gather(*this, dim, index); }
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tensor::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  TENSOR_CHECK(defined() && index.defined(), "scatter: self and index must be defined tensors");
  // The value becomes a src of self's dtype broadcast to the index shape.
  Tensor src = full({}, value, options()).expand(index.sizes());
  return tensor::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tensor::scatter_add(*this, dim, index, src);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  return tensor::index_add(*this, dim, index, source, alpha);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return tensor::masked_fill(*this, mask, value);
}
Tensor Tensor::masked_select(const Tensor& mask) const { return tensor::masked_select(*this, mask); }
Tensor Tensor::nonzero() const { return tensor::nonzero(*this); }
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  return ops::scatter_inplace_op()(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  return ops::scatter_add_inplace_op()(*this, dim, index, src);
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return ops::index_add_inplace_op()(*this, dim, index, source, alpha);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  return ops::masked_fill_inplace_op()(*this, mask, value);
}

}  // namespace tensor
