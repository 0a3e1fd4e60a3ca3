#include "src/core/TensorIterator.h"

#include <algorithm>

#include "tensor/ops.h"

namespace tensor {

namespace {
int category(ScalarType t) { return t == kBool ? 0 : is_integral(t, false) ? 1 : is_floating_point(t) ? 2 : 3; }

// PyTorch's combine_categories: a lower-priority result only wins by higher category.
ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (lower == ScalarType::Undefined) return higher;
  if (is_complex(higher)) return higher;
  if (is_complex(lower)) return is_floating_point(higher) ? to_complex_type(higher) : lower;
  if (is_floating_point(higher)) return higher;
  if (higher == kBool || is_floating_point(lower)) return promote_types(higher, lower);
  return higher;
}
}  // namespace

namespace {
template <class Get>
ScalarType result_type_impl(int n, const Get& get) {
  ScalarType dim_r = ScalarType::Undefined, zero_r = ScalarType::Undefined, wrapped_r = ScalarType::Undefined;
  for (int i = 0; i < n; ++i) {
    const Tensor* tp = get(i);
    if (!tp) continue;
    const Tensor& t = *tp;
    if (!t.defined()) continue;
    ScalarType cur = t.dtype();
    if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
      if (is_complex(cur)) cur = to_complex_type(get_default_dtype());
      else if (is_floating_point(cur)) cur = get_default_dtype();
      wrapped_r = promote_types(wrapped_r, cur);
    } else if (t.dim() == 0) {
      zero_r = promote_types(zero_r, cur);
    } else {
      dim_r = promote_types(dim_r, cur);
    }
  }
  return combine_categories(dim_r, combine_categories(zero_r, wrapped_r));
}
}  // namespace

ScalarType result_type_of(const Tensor* tensors, int n) {
  return result_type_impl(n, [&](int i) { return &tensors[i]; });
}

bool can_cast(ScalarType from, ScalarType to) { return category(from) <= category(to); }

Tensor wrapped_scalar(const Scalar& s) {
  Tensor t = scalar_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

bool TensorIterator::is_contiguous() const {
  if (ndim_ > 1) return false;
  for (int op = 0; op < nops_; ++op)
    if (ndim_ == 1 && ops_[op].stride[0] != element_size(ops_[op].compute().dtype())) return false;
  return true;
}

bool TensorIterator::is_scalar(int op) const {
  for (int d = 0; d < ndim_; ++d)
    if (ops_[op].stride[d] != 0 && shape_[d] != 1) return false;
  return true;
}

namespace {
// [first byte, one past the last byte] a tensor can touch.
std::pair<const char*, const char*> byte_range(const Tensor& t) {
  const char* p = static_cast<const char*>(t.unsafeGetTensorImpl()->data());
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return {p, p + (last + 1) * element_size(t.dtype())};
}
}  // namespace

void check_no_internal_overlap(const Tensor& out, const char* op) {
  if (out.numel() <= 1 || out.is_meta()) return;
  for (int64_t d = 0; d < out.dim(); ++d)
    TENSOR_CHECK(!(out.stride(d) == 0 && out.size(d) > 1),
                 "{}: unsupported operation: more than one element of the written-to tensor (shape {}, strides {}) "
                 "refers to a single memory location; clone() the tensor before writing to it",
                 op, detail::shape_str(out.sizes()), detail::shape_str(out.strides()));
}

void check_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op) {
  if (!in.defined() || in.numel() == 0 || out.numel() == 0 || out.is_meta() ||
      in.impl()->storage().get() != out.impl()->storage().get())
    return;
  if (in.data_ptr() == out.data_ptr() && in.sizes() == out.sizes() && in.strides() == out.strides() &&
      in.dtype() == out.dtype())
    return;  // the same elements: a true in-place op
  auto [o0, o1] = byte_range(out);
  auto [i0, i1] = byte_range(in);
  TENSOR_CHECK(i1 <= o0 || o1 <= i0,
               "{}: unsupported operation: some elements of the input tensor (shape {}) and the written-to tensor "
               "(shape {}) refer to a single memory location; clone() one of them first",
               op, detail::shape_str(in.sizes()), detail::shape_str(out.sizes()));
}

// Only outputs the caller passed in can overlap anything; allocated ones are fresh.
void TensorIterator::check_overlap() const {
  for (int op = 0; op < noutputs_; ++op) {
    if (!ops_[op].tensor) continue;
    const Tensor& out = *ops_[op].tensor;
    check_no_internal_overlap(out, name_);
    for (int in = noutputs_; in < nops_; ++in) check_no_partial_overlap(out, *ops_[in].tensor, name_);
  }
}

void TensorIterator::build() {
  compute_shape();
  if (!device_.is_meta()) check_overlap();
  compute_types();
  allocate_outputs();
  compute_strides();
  reorder_and_coalesce();
}

void TensorIterator::compute_shape() {
  // Device: every operand on one device; 0-dim CPU tensors may join a CUDA op (as PyTorch).
  bool have = false;
  for (int op = 0; op < nops_; ++op) {
    if (!ops_[op].tensor) continue;
    const Tensor& t = *ops_[op].tensor;
    if (!t.defined()) continue;
    if (t.device().is_cpu() && t.dim() == 0 && op >= noutputs_) continue;
    if (!have) {
      device_ = t.device();
      have = true;
    } else {
      TENSOR_CHECK(t.device() == device_, "{}: expected all tensors on one device, but found {} and {}", name_,
                   device_.str(), t.device().str());
    }
  }
  if (!have) device_ = Device(kCPU);

  auto broadcast_into = [&](IntArrayRef s) {
    // Right-align s against the accumulated shape.
    DimVector out(std::max(bshape_.size(), s.size()), 1);
    size_t n = out.size();
    for (size_t i = 0; i < n; ++i) {
      int64_t a = i < n - bshape_.size() ? 1 : bshape_[i - (n - bshape_.size())];
      int64_t b = i < n - s.size() ? 1 : s[i - (n - s.size())];
      if (a == b || b == 1) out[i] = a;
      else if (a == 1) out[i] = b;
      else return false;
    }
    bshape_ = out;
    return true;
  };
  bshape_.clear();
  bool ok = true;
  for (int op = noutputs_; op < nops_; ++op) ok = ok && broadcast_into(ops_[op].tensor->sizes());
  if (!ok) {
    std::string shapes;
    for (int op = noutputs_; op < nops_; ++op)
      shapes += (op > noutputs_ ? " and " : "") + detail::shape_str(ops_[op].tensor->sizes());
    TENSOR_ERROR("{}: shapes {} cannot be broadcast together (each dim must match or be 1)", name_, shapes);
  }
  for (int op = 0; op < noutputs_; ++op) {
    if (!ops_[op].tensor) continue;
    const Tensor& out = *ops_[op].tensor;
    TENSOR_CHECK(!out.is_conj(), "{}: writing into a lazily conjugated view is not supported; call resolve_conj() on it first",
                 name_);
    if (inplace_ || !resize_outputs_) {
      if (!resize_outputs_) {
        // Inputs must broadcast to the output's shape (copy_, fill_).
        DimVector saved = bshape_;
        bool fits = broadcast_into(out.sizes()) && bshape_.ref() == out.sizes();
        TENSOR_CHECK(fits, "{}: source of shape {} cannot be broadcast to destination shape {}", name_,
                     detail::shape_str(saved), detail::shape_str(out.sizes()));
      } else {
        TENSOR_CHECK(out.sizes() == bshape_.ref(),
                     "{}: output with shape {} doesn't match the broadcast shape {} (an in-place op cannot grow its "
                     "destination)", name_, detail::shape_str(out.sizes()), detail::shape_str(bshape_));
      }
    } else if (out.sizes() != bshape_.ref()) {
      // out= of the wrong size is resized, as PyTorch does.
      TENSOR_CHECK(out.is_contiguous() && out.storage_offset() == 0,
                   "{}: out= tensor of shape {} must be resized to {}, but it is a non-contiguous view", name_,
                   detail::shape_str(out.sizes()), detail::shape_str(bshape_));
      TensorImpl* impl = out.unsafeGetTensorImpl();
      int64_t need = 1;
      for (int64_t s : bshape_) need *= s;
      size_t bytes = static_cast<size_t>(need * element_size(out.dtype()));
      if (bytes > impl->storage()->nbytes()) impl->storage()->resize(bytes);
      impl->set_sizes_contiguous(bshape_);
    }
  }
  numel_ = 1;
  for (int64_t s : bshape_) numel_ *= s;
}

void TensorIterator::compute_types() {
  if (forced_common_) {
    common_ = *forced_common_;
  } else {
    common_ = result_type_impl(nops_ - noutputs_, [&](int i) {
      const Operand& o = ops_[noutputs_ + i];
      return o.no_cast ? nullptr : o.tensor;
    });
  }
  if (common_ == ScalarType::Undefined) common_ = ops_[noutputs_].tensor->dtype();
  if (int_to_float_ && is_integral(common_, true)) common_ = get_default_dtype();
  for (int op = 0; op < noutputs_; ++op) {
    if (!ops_[op].tensor) continue;
    const Tensor& out = *ops_[op].tensor;
    ScalarType produced = static_out_dtype_ ? *static_out_dtype_ : common_;
    TENSOR_CHECK(can_cast(produced, out.dtype()),
                 "{}: result type {} can't be cast to the desired output type {} (output shape {})", name_, produced,
                 out.dtype(), detail::shape_str(out.sizes()));
  }
}

void TensorIterator::allocate_outputs() {
  for (int op = 0; op < noutputs_; ++op) {
    Operand& o = ops_[op];
    ScalarType want = static_out_dtype_ ? *static_out_dtype_ : common_;
    if (!o.tensor) {
      o.owned = empty(bshape_, TensorOptions().dtype(want).device(device_));
    } else if (o.tensor->dtype() != want) {
      // Compute into a temporary of the kernel's dtype, cast into the destination in finish().
      o.temp = empty(bshape_, TensorOptions().dtype(want).device(device_));
    }
  }
  for (int op = noutputs_; op < nops_; ++op) {
    Operand& o = ops_[op];
    const Tensor& t = *o.tensor;
    bool cast = !o.no_cast && t.dtype() != common_;
    // Note [CPU scalars in CUDA ops]
    // A 0-dim CPU tensor may join an op on another device (x + 2, as PyTorch). It stays on the
    // host, cast there if needed: the backend's kernel reads its value and passes it as a kernel
    // argument, where moving it would cost a blocking host-to-device copy per call.
    o.cpu_scalar = t.device() != device_ && !device_.is_meta();
    if (!t.is_conj() && !cast) continue;
    Tensor c = t.is_conj() ? t.resolve_conj() : t;
    if (cast) c = c.to(common_);
    o.temp = std::move(c);
  }
}

void TensorIterator::compute_strides() {
  const int nd = static_cast<int>(bshape_.size());
  TENSOR_CHECK(nd <= 8, "{}: tensors with more than 8 dims are not supported (got {})", name_, nd);
  ndim_ = nd;
  // Dim 0 of the iteration is the innermost (last logical) dim.
  for (int d = 0; d < nd; ++d) shape_[d] = bshape_[nd - 1 - d];
  for (int op = 0; op < nops_; ++op) {
    Operand& o = ops_[op];
    const Tensor& t = o.compute();
    int64_t es = element_size(t.dtype());
    int off = nd - static_cast<int>(t.dim());
    for (int d = 0; d < nd; ++d) {
      int ld = nd - 1 - d;  // logical dim
      int td = ld - off;
      o.stride[d] = (td < 0 || t.size(td) == 1) ? 0 : t.stride(td) * es;
    }
    o.data = static_cast<char*>(t.unsafeGetTensorImpl()->data());
    TENSOR_CHECK(o.data != nullptr || numel_ == 0 || device_.is_meta(),
                 "{}: operand {} of shape {} has no memory (its storage was freed)", name_, op,
                 detail::shape_str(t.sizes()));
  }
}

void TensorIterator::reorder_and_coalesce() {
  if (ndim_ <= 1) {
    if (ndim_ == 0) {
      ndim_ = 1;
      shape_[0] = 1;
    }
    return;
  }
  // Order dims innermost-first by the strides of the outputs, then the inputs (insertion sort,
  // as PyTorch's reorder_dimensions): a transposed destination is written in memory order.
  int perm[8];
  for (int d = 0; d < ndim_; ++d) perm[d] = d;
  auto should_swap = [&](int inner, int outer) {
    for (int op = 0; op < nops_; ++op) {
      int64_t a = ops_[op].stride[inner], b = ops_[op].stride[outer];
      if (a == 0 || b == 0) continue;
      if (a < b) return -1;
      if (a > b) return 1;
    }
    return 0;
  };
  for (int i = 1; i < ndim_; ++i)
    for (int j = i; j > 0; --j) {
      int c = should_swap(perm[j - 1], perm[j]);
      if (c > 0) std::swap(perm[j - 1], perm[j]);
      else break;
    }
  int64_t shp[8], str[kMaxOperands][8];
  for (int d = 0; d < ndim_; ++d) {
    shp[d] = shape_[perm[d]];
    for (int op = 0; op < nops_; ++op) str[op][d] = ops_[op].stride[perm[d]];
  }
  // Coalesce: merge dim d+1 into d when every operand steps through them as one dim.
  int out = 0;
  for (int d = 1; d < ndim_; ++d) {
    bool can = shp[out] == 1 || shp[d] == 1;
    if (!can) {
      can = true;
      for (int op = 0; op < nops_ && can; ++op) can = str[op][d] == str[op][out] * shp[out];
    }
    if (can) {
      if (shp[out] == 1)
        for (int op = 0; op < nops_; ++op) str[op][out] = str[op][d];
      shp[out] *= shp[d];
    } else {
      ++out;
      shp[out] = shp[d];
      for (int op = 0; op < nops_; ++op) str[op][out] = str[op][d];
    }
  }
  ndim_ = out + 1;
  for (int d = 0; d < ndim_; ++d) {
    shape_[d] = shp[d];
    for (int op = 0; op < nops_; ++op) ops_[op].stride[d] = str[op][d];
  }
}

void TensorIterator::finish() {
  for (int op = 0; op < noutputs_; ++op) {
    Operand& o = ops_[op];
    if (o.temp.defined()) const_cast<Tensor&>(*o.tensor).copy_(o.temp);
  }
}

}  // namespace tensor

namespace tensor {
ScalarType result_type(const Tensor& a, const Tensor& b) {
  Tensor ts[2] = {a, b};
  return result_type_of(ts, 2);
}
ScalarType result_type(const Tensor& a, const Scalar& b) {
  Tensor ts[2] = {a, wrapped_scalar(b)};
  return result_type_of(ts, 2);
}
}  // namespace tensor
