// Indexing ops along a dim: index_select, gather, scatter, scatter_add, index_add,
// masked_fill, masked_select, nonzero, where(cond).
//
// Each is a front end (Note [Front ends and backend kernels], src/ops/ElementwiseOps.cpp),
// instantiated per backend key: it checks every argument and every index and allocates the
// output, where the Meta instance stops; the CPU and CUDA instances then call their backend's
// kernel (src/ops/IndexOps.h), CPU's being the loops of kernels/cpu/IndexKernels.cpp.
// masked_select and nonzero size their output from the data: their front ends call a count
// kernel, allocate, then call a fill kernel; their Meta instances raise (nothing to size from).
#include "src/ops/IndexOps.h"

#include "kernels/cpu/IndexKernels.h"
#include "src/core/TensorIterator.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {

namespace {
using detail::shape_str;
using detail::wrap_dim;
using dispatch::BackendKernels;
using index_detail::check_backend_device;
constexpr DispatchKey kMeta = DispatchKey::Meta;

// The per-backend kernels: CPU's built in, CUDA's registered.
BackendKernels<IndexSelectKernel> g_index_select_kernels{{&cpu::index_select, nullptr}};
BackendKernels<GatherKernel> g_gather_kernels{{&cpu::gather, nullptr}};
BackendKernels<ScatterKernel> g_scatter_kernels{{&cpu::scatter, nullptr}};
BackendKernels<IndexAddKernel> g_index_add_kernels{{&cpu::index_add, nullptr}};
BackendKernels<MaskedFillKernel> g_masked_fill_kernels{{&cpu::masked_fill, nullptr}};
BackendKernels<MaskedSelectCountKernel> g_masked_select_count_kernels{{&cpu::masked_select_count, nullptr}};
BackendKernels<MaskedSelectFillKernel> g_masked_select_fill_kernels{{&cpu::masked_select_fill, nullptr}};
BackendKernels<NonzeroCountKernel> g_nonzero_count_kernels{{&cpu::nonzero_count, nullptr}};
BackendKernels<NonzeroFillKernel> g_nonzero_fill_kernels{{&cpu::nonzero_fill, nullptr}};

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

template <DispatchKey K>
Tensor index_select_fn(const Tensor& self_in, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  const IndexSelectKernel kernel = g_index_select_kernels.get<K>(op);
  check_backend_device<K>(self_in, op, "self");
  check_index_dtype(index, op, /*allow_int32=*/true);
  check_backend_device<K>(index, op, "index");
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
  if (K == kMeta || out.numel() == 0) return out;
  kernel(self, dim, index, out);
  return out;
}

// ---- gather ----

template <DispatchKey K>
Tensor gather_fn(const Tensor& self_in, int64_t dim, const Tensor& index) {
  const char* op = "gather";
  const GatherKernel kernel = g_gather_kernels.get<K>(op);
  check_backend_device<K>(self_in, op, "self");
  check_index_dtype(index, op, /*allow_int32=*/false);
  check_backend_device<K>(index, op, "index");
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
  if (K == kMeta || out.numel() == 0) return out;
  kernel(self, dim, idx, as_1d(out));
  return out;
}

// ---- scatter, scatter_add ----

// `op` is the name the user called (functional or in-place), for messages; `kernel` is the
// backend's, looked up by the caller before any work (null for Meta).
template <bool Add, DispatchKey K>
Tensor& scatter_impl(ScatterKernel kernel, Tensor& self, int64_t dim, const Tensor& index_in, const Tensor& src_in,
                     const char* op) {
  TENSOR_CHECK(self.defined() && src_in.defined(), "{}: self and src must be defined tensors", op);
  check_backend_device<K>(self, op, "self");
  check_index_dtype(index_in, op, /*allow_int32=*/false);
  check_backend_device<K>(index_in, op, "index");
  check_backend_device<K>(src_in, op, "src");
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
  if (K == kMeta) return self;
  // Reading what we are writing would make the result depend on the loop order.
  if (same_storage(src, self)) src = src.clone();
  if (same_storage(idx, self)) idx = idx.clone();
  kernel(s1, dim, idx, src, Add, op);
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

template <bool Add, DispatchKey K>
Tensor scatter_fn(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const char* op = Add ? "scatter_add" : "scatter";
  const ScatterKernel kernel = g_scatter_kernels.get<K>(op);
  TENSOR_CHECK(self.defined(), "{}: self is undefined", op);
  Tensor out = self.is_meta() ? empty(self.sizes(), self.options()) : fresh_copy(self);
  scatter_impl<Add, K>(kernel, out, dim, index, src, op);
  return out;
}
template <bool Add, DispatchKey K>
Tensor& scatter_inplace_fn(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const char* op = Add ? "scatter_add_" : "scatter_";
  return scatter_impl<Add, K>(g_scatter_kernels.get<K>(op), self, dim, index, src, op);
}

// ---- index_add ----

template <DispatchKey K>
Tensor& index_add_impl(IndexAddKernel kernel, Tensor& self, int64_t dim, const Tensor& index_in,
                       const Tensor& source_in, const Scalar& alpha, const char* op) {
  TENSOR_CHECK(self.defined() && source_in.defined(), "{}: self and source must be defined tensors", op);
  check_backend_device<K>(self, op, "self");
  check_index_dtype(index_in, op, /*allow_int32=*/true);
  check_backend_device<K>(index_in, op, "index");
  check_backend_device<K>(source_in, op, "source");
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
  if (K == kMeta || src.numel() == 0) return self;
  if (same_storage(src, self)) src = src.clone();
  if (same_storage(idx, self)) idx = idx.clone();
  kernel(s1, dim, idx, src, alpha, op);
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

template <DispatchKey K>
Tensor index_add_fn(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  const IndexAddKernel kernel = g_index_add_kernels.get<K>("index_add");
  TENSOR_CHECK(self.defined(), "index_add: self is undefined");
  Tensor out = self.is_meta() ? empty(self.sizes(), self.options()) : fresh_copy(self);
  index_add_impl<K>(kernel, out, dim, index, source, alpha, "index_add");
  return out;
}
template <DispatchKey K>
Tensor& index_add_inplace_fn(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                             const Scalar& alpha) {
  return index_add_impl<K>(g_index_add_kernels.get<K>("index_add_"), self, dim, index, source, alpha, "index_add_");
}

// ---- masked_fill ----

template <DispatchKey K>
void check_mask(const Tensor& mask, const char* op) {
  TENSOR_CHECK(mask.defined(), "{}: mask is undefined", op);
  TENSOR_CHECK(mask.dtype() == kBool, "{}: expected a bool mask, but got dtype {} (mask shape {})", op, mask.dtype(),
               shape_str(mask.sizes()));
  check_backend_device<K>(mask, op, "mask");
}

/// self = where(mask, value, src), src being self for the in-place op or, out of place, the
/// input broadcast into a fresh self: one pass, not a copy then a fill.
template <DispatchKey K>
Tensor& masked_fill_impl(MaskedFillKernel kernel, Tensor& self, const Tensor& mask_in, const Scalar& value,
                         const char* op, const Tensor* src = nullptr) {
  TENSOR_CHECK(self.defined(), "{}: self is undefined", op);
  check_backend_device<K>(self, op, "self");
  check_mask<K>(mask_in, op);
  DimVector shape;
  TENSOR_CHECK(try_broadcast(self.sizes(), mask_in.sizes(), shape) && IntArrayRef(shape) == self.sizes(),
               "{}: mask of shape {} cannot be broadcast to self of shape {}", op, shape_str(mask_in.sizes()),
               shape_str(self.sizes()));
  TENSOR_CHECK(!value.is_complex() || self.is_complex(), "{}: cannot fill a {} tensor (shape {}) with a complex value",
               op, self.dtype(), shape_str(self.sizes()));
  check_not_conj(self, op);
  check_no_internal_overlap(self, op);
  if (K == kMeta || self.numel() == 0) return self;
  Tensor mask = same_storage(mask_in, self) ? mask_in.clone() : mask_in;
  kernel(self, mask, value, src ? *src : self, op);
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

template <DispatchKey K>
Tensor masked_fill_fn(const Tensor& self, const Tensor& mask, const Scalar& value) {
  const char* op = "masked_fill";
  const MaskedFillKernel kernel = g_masked_fill_kernels.get<K>(op);
  TENSOR_CHECK(self.defined(), "{}: self is undefined", op);
  check_mask<K>(mask, op);
  DimVector shape;
  TENSOR_CHECK(try_broadcast(self.sizes(), mask.sizes(), shape),
               "{}: mask of shape {} and self of shape {} cannot be broadcast together", op, shape_str(mask.sizes()),
               shape_str(self.sizes()));
  // As PyTorch: the output takes the broadcast shape of self and mask.
  Tensor out = empty(shape, self.options());
  check_backend_device<K>(self, op, "self");
  masked_fill_impl<K>(kernel, out, mask, value, op, &self);
  return out;
}
template <DispatchKey K>
Tensor& masked_fill_inplace_fn(Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_impl<K>(g_masked_fill_kernels.get<K>("masked_fill_"), self, mask, value, "masked_fill_");
}

// ---- masked_select, nonzero: count, allocate, fill ----

template <DispatchKey K>
Tensor masked_select_fn(const Tensor& self_in, const Tensor& mask_in) {
  const char* op = "masked_select";
  const MaskedSelectCountKernel count_kernel = g_masked_select_count_kernels.get<K>(op);
  const MaskedSelectFillKernel fill_kernel = g_masked_select_fill_kernels.get<K>(op);
  TENSOR_CHECK(self_in.defined(), "{}: self is undefined", op);
  check_mask<K>(mask_in, op);
  check_backend_device<K>(self_in, op, "self");
  TENSOR_CHECK(
      !self_in.is_meta() && !mask_in.is_meta(),
      "{}: the output size depends on the mask's values, so meta tensors are not supported (self shape {}, mask "
      "shape {})",
      op, shape_str(self_in.sizes()), shape_str(mask_in.sizes()));
  DimVector shape;
  TENSOR_CHECK(try_broadcast(self_in.sizes(), mask_in.sizes(), shape),
               "{}: mask of shape {} and self of shape {} cannot be broadcast together", op,
               shape_str(mask_in.sizes()), shape_str(self_in.sizes()));
  if (self_in.requires_grad() && autograd::GradMode::is_enabled()) {
    // Differentiable form: select flat positions, then index_select (see Tensor::index).
    Tensor pos = masked_select(arange(self_in.numel(), TensorOptions(kInt64)).view(self_in.sizes()), mask_in);
    return self_in.reshape({-1}).index_select(0, pos);
  }
  if constexpr (K == kMeta) {
    return Tensor();  // not reached: a meta argument failed the check above
  } else {
    Tensor self = self_in.resolve_conj().expand(shape), mask = mask_in.expand(shape);
    const int64_t count = count_kernel(self, mask);
    // A spare slot lets the copy loop store every element and advance only on true mask
    // entries, without a branch on the mask.
    Tensor buf = empty({count + 1}, self.options());
    Tensor out = buf.narrow(0, 0, count);
    if (count == 0) return out;
    fill_kernel(self, mask, buf);
    return out;
  }
}

template <DispatchKey K>
Tensor nonzero_fn(const Tensor& a_in) {
  const char* op = "nonzero";
  const NonzeroCountKernel count_kernel = g_nonzero_count_kernels.get<K>(op);
  const NonzeroFillKernel fill_kernel = g_nonzero_fill_kernels.get<K>(op);
  TENSOR_CHECK(a_in.defined(), "{}: tensor is undefined", op);
  check_backend_device<K>(a_in, op, "self");
  TENSOR_CHECK(!a_in.is_meta(),
               "{}: the output size depends on the values, so meta tensors (shape {}) are not supported", op,
               shape_str(a_in.sizes()));
  if constexpr (K == kMeta) {
    return Tensor();  // not reached: the check above raised
  } else {
    Tensor a = a_in.resolve_conj();
    const int64_t nd = a.dim();
    const int64_t count = count_kernel(a, op);
    // One spare row lets the second pass write every element's coordinates and advance only
    // past the nonzero ones, with no branch on the (often random) values.
    Tensor buf = empty({count + 1, nd}, TensorOptions(kInt64).device(a.device()));
    Tensor out = buf.narrow(0, 0, count);
    if (count == 0 || nd == 0) return out;
    fill_kernel(a, buf, op);
    return out;
  }
}

// ---- the dispatcher tables (constant-initialized; CUDA slots filled by register_kernel) ----

constexpr DispatchKey kCPU = DispatchKey::CPU;
using dispatch::front_end_def;

dispatch::OpDef<IndexSelectFn> g_index_select =
    front_end_def<IndexSelectFn>("index_select", &index_select_fn<kCPU>, &index_select_fn<kMeta>);
dispatch::OpDef<GatherFn> g_gather = front_end_def<GatherFn>("gather", &gather_fn<kCPU>, &gather_fn<kMeta>);
dispatch::OpDef<ScatterFn> g_scatter =
    front_end_def<ScatterFn>("scatter", &scatter_fn<false, kCPU>, &scatter_fn<false, kMeta>);
dispatch::OpDef<ScatterInplaceFn> g_scatter_ =
    front_end_def<ScatterInplaceFn>("scatter_", &scatter_inplace_fn<false, kCPU>, &scatter_inplace_fn<false, kMeta>);
dispatch::OpDef<ScatterFn> g_scatter_add =
    front_end_def<ScatterFn>("scatter_add", &scatter_fn<true, kCPU>, &scatter_fn<true, kMeta>);
dispatch::OpDef<ScatterInplaceFn> g_scatter_add_ =
    front_end_def<ScatterInplaceFn>("scatter_add_", &scatter_inplace_fn<true, kCPU>, &scatter_inplace_fn<true, kMeta>);
dispatch::OpDef<IndexAddFn> g_index_add =
    front_end_def<IndexAddFn>("index_add", &index_add_fn<kCPU>, &index_add_fn<kMeta>);
dispatch::OpDef<IndexAddInplaceFn> g_index_add_ =
    front_end_def<IndexAddInplaceFn>("index_add_", &index_add_inplace_fn<kCPU>, &index_add_inplace_fn<kMeta>);
dispatch::OpDef<MaskedFillFn> g_masked_fill =
    front_end_def<MaskedFillFn>("masked_fill", &masked_fill_fn<kCPU>, &masked_fill_fn<kMeta>);
dispatch::OpDef<MaskedFillInplaceFn> g_masked_fill_ =
    front_end_def<MaskedFillInplaceFn>("masked_fill_", &masked_fill_inplace_fn<kCPU>, &masked_fill_inplace_fn<kMeta>);
// Their output sizes depend on the values, so their Meta instances raise.
dispatch::OpDef<MaskedSelectFn> g_masked_select =
    front_end_def<MaskedSelectFn>("masked_select", &masked_select_fn<kCPU>, &masked_select_fn<kMeta>);
dispatch::OpDef<NonzeroFn> g_nonzero = front_end_def<NonzeroFn>("nonzero", &nonzero_fn<kCPU>, &nonzero_fn<kMeta>);

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
dispatch::OpDef<MaskedSelectFn>& masked_select_op() { return g_masked_select; }
dispatch::OpDef<NonzeroFn>& nonzero_op() { return g_nonzero; }

void register_kernel(DispatchKey backend, const IndexKernels& k) {
  dispatch::check_kernel_backend(backend, "indexing ops");
  constexpr DispatchKey kCUDA = DispatchKey::CUDA;
  if (k.index_select) {
    g_index_select_kernels.set(backend, k.index_select);
    g_index_select.set(backend, &index_select_fn<kCUDA>);
  }
  if (k.gather) {
    g_gather_kernels.set(backend, k.gather);
    g_gather.set(backend, &gather_fn<kCUDA>);
  }
  if (k.scatter) {
    g_scatter_kernels.set(backend, k.scatter);
    g_scatter.set(backend, &scatter_fn<false, kCUDA>);
    g_scatter_.set(backend, &scatter_inplace_fn<false, kCUDA>);
    g_scatter_add.set(backend, &scatter_fn<true, kCUDA>);
    g_scatter_add_.set(backend, &scatter_inplace_fn<true, kCUDA>);
  }
  if (k.index_add) {
    g_index_add_kernels.set(backend, k.index_add);
    g_index_add.set(backend, &index_add_fn<kCUDA>);
    g_index_add_.set(backend, &index_add_inplace_fn<kCUDA>);
  }
  if (k.masked_fill) {
    g_masked_fill_kernels.set(backend, k.masked_fill);
    g_masked_fill.set(backend, &masked_fill_fn<kCUDA>);
    g_masked_fill_.set(backend, &masked_fill_inplace_fn<kCUDA>);
  }
  if (k.masked_select_count && k.masked_select_fill) {
    g_masked_select_count_kernels.set(backend, k.masked_select_count);
    g_masked_select_fill_kernels.set(backend, k.masked_select_fill);
    g_masked_select.set(backend, &masked_select_fn<kCUDA>);
  }
  if (k.nonzero_count && k.nonzero_fill) {
    g_nonzero_count_kernels.set(backend, k.nonzero_count);
    g_nonzero_fill_kernels.set(backend, k.nonzero_fill);
    g_nonzero.set(backend, &nonzero_fn<kCUDA>);
  }
}

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
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ops::scatter_inplace_op()(const_cast<Tensor&>(*this), dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ops::scatter_add_inplace_op()(const_cast<Tensor&>(*this), dim, index, src);
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  return ops::index_add_inplace_op()(const_cast<Tensor&>(*this), dim, index, source, alpha);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  return ops::masked_fill_inplace_op()(const_cast<Tensor&>(*this), mask, value);
}

}  // namespace tensor
