// View ops: new TensorImpls over the same storage (Note [Views share storage]), as dispatcher
// ops (Note [Views through the dispatcher]), and their public spellings.
#include "src/ops/ViewOps.h"

#include <algorithm>
#include <vector>

#include "src/autograd/Functions.h"
#include "src/core/Check.h"
#include "src/core/Quantizer.h"
#include "src/core/Sizes.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/ops.h"

namespace tensor {

// Note [Views share storage]
// A view is a fresh TensorImpl holding the same StorageImpl with its own sizes, strides and
// offset. It shares the version counter through the storage (Note [Version counter lives in
// storage]) and keeps the conj bit of its base.

// Note [Views through the dispatcher]
// Every public view op is a dispatcher op, so that the wrapping keys (Profiler, Autocast) see
// views as they see any op; libtorch dispatches its views the same way. One geometry function
// per view computes sizes, strides and offset from the base's and makes the alias: it reads no
// data, so the same function serves every backend (CPU, CUDA and Meta slots, view_def), and a
// backend adds nothing for views. A view's autograd bookkeeping is split between the keys:
//   - geometry (backend slots): a view of a tensor that does not require grad remembers its
//     root base (autograd::remember_view_base, a no-op when grad mode is off), so that writing
//     a value that requires grad into the view later gives the base a history (Note [In-place
//     on views]). libtorch keeps this in its ADInplaceOrView key; libtensor has no such key.
//     When the base requires grad the geometry skips it (one branch): the Autograd kernel's
//     record_view remembers the base, or, with grad mode off, nothing is remembered, as a
//     recorded view never was;
//   - Autograd slot (src/autograd/nodes/Views.cpp, Note [Hand-written nodes]): reached only when
//     the base requires grad and grad mode is on; redispatches to the geometry, then records the
//     view node (record_view, or record_positions_view for diagonal, unfold and as_strided).
// reshape, narrow, flatten and unflatten are composites of these views (composite_def, no
// Autograd kernel): their pieces dispatch and record. detach is geometry alone: its alias has
// no history whatever the keys. real() and imag() of a lazily conjugated tensor call other
// dispatched ops (conj, neg) from the geometry slot; their Autograd kernels then record nothing
// themselves.

namespace ops {
namespace {
using detail::shape_str;
using detail::wrap_dim;

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = make_intrusive<TensorImpl>(base.impl()->storage(), base.dtype(), base.device());
  impl->set_sizes_and_strides(sizes, strides, offset);
  impl->set_conj(base.is_conj());
  impl->set_is_view(true);
  impl->set_quantizer(base.impl()->quantizer());
  return Tensor(std::move(impl));
}

// Note [Per-channel views]
// A per-tensor quantizer holds for every element, so a view shares its base's (make_view). A
// per-channel quantizer names a dim, so a view that moves that dim (transpose, t, permute,
// squeeze, unsqueeze, expand, view/reshape) gets one naming the dim's new place; slicing the
// channel dim keeps the chosen channels' parameters, and selecting one channel leaves a
// per-tensor quantized tensor. A view that would mix the channel dim with others (a view that
// splits or merges it, diagonal, unfold, as_strided) raises for per-channel tensors.
const Quantizer* per_channel(const Tensor& t) {
  const QuantizerPtr& q = t.impl()->quantizer();
  return q && q->qscheme() == QScheme::PerChannelAffine ? q.get() : nullptr;
}
Tensor with_quantizer(Tensor v, QuantizerPtr q) {
  v.unsafeGetTensorImpl()->set_quantizer(std::move(q));
  return v;
}
void check_not_per_channel(const Tensor& self, const char* op) {
  TENSOR_CHECK(!per_channel(self), "{}: not supported for per-channel quantized tensors ({}), whose channel axis it "
               "would mix with other dims; dequantize() first", op, self.describe());
}
// The dim of a view of shape `to` that holds the channel dim `axis` of shape `from`: the one
// with the same size and the same number of elements before it (-1 when none).
int64_t view_channel_dim(IntArrayRef from, int64_t axis, IntArrayRef to) {
  int64_t before = 1;
  for (int64_t d = 0; d < axis; ++d) before *= from[d];
  int64_t acc = 1;
  for (size_t k = 0; k < to.size(); ++k) {
    if (acc == before && to[k] == from[axis]) return static_cast<int64_t>(k);
    acc *= to[k];
  }
  return -1;
}

// The geometry's share of the bookkeeping (Note [Views through the dispatcher]).
Tensor remember(Tensor out, const Tensor& base) {
  if (!base.requires_grad()) autograd::remember_view_base(out, base);
  return out;
}
Tensor alias(const Tensor& self) {
  return remember(make_view(self, self.sizes(), self.strides(), self.storage_offset()), self);
}

// Resolves one -1 entry against numel.
DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVector out(shape);
  int64_t known = 1, infer = -1;
  bool known_overflows = false, has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TENSOR_CHECK(infer < 0, "{}: only one dimension can be inferred (-1) in shape {}", op, shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      TENSOR_CHECK(shape[i] >= 0, "{}: invalid shape dimension {} in {}", op, shape[i], shape_str(shape));
      known_overflows |= __builtin_mul_overflow(known, shape[i], &known);
      has_zero |= shape[i] == 0;
    }
  }
  // A wrapped product could match numel (2^32 * 2^32 wraps to 0, the numel of an empty tensor).
  TENSOR_CHECK(!known_overflows || has_zero, "{}: shape {} holds more elements than int64 can count", op,
               shape_str(shape));
  if (infer >= 0) {
    TENSOR_CHECK(known != 0 && numel % known == 0, "{}: shape {} is invalid for input of size {}", op, shape_str(shape), numel);
    out[infer] = numel / known;
  } else {
    TENSOR_CHECK(known == numel, "{}: shape {} is invalid for input of size {}", op, shape_str(shape), numel);
  }
  return out;
}

// Strides for viewing (sizes, strides) as new_sizes without a copy, if possible (PyTorch's
// computeStride): each chunk of old dims that is contiguous within itself maps onto new dims.
bool compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides, IntArrayRef new_sizes, DimVector& out) {
  out.resize(new_sizes.size());
  if (old_sizes.empty()) {
    for (auto& s : out) s = 1;
    return true;
  }
  int64_t numel = 1;
  for (int64_t s : old_sizes) numel *= s;
  if (numel == 0) {
    // Any strides work; use contiguous ones.
    int64_t st = 1;
    for (int64_t i = static_cast<int64_t>(new_sizes.size()) - 1; i >= 0; --i) {
      out[i] = st;
      st *= std::max<int64_t>(new_sizes[i], 1);
    }
    return true;
  }
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

// ---- geometry: the CPU, CUDA and Meta slots of each view ----

Tensor view_geometry(const Tensor& self, IntArrayRef shape) {
  DimVector sz = infer_size(shape, self.numel(), "view");
  DimVector st;
  TENSOR_CHECK(compute_view_strides(self.sizes(), self.strides(), sz, st),
               "view: size {} is not compatible with the input's size {} and stride {} (at least one dimension spans "
               "across two contiguous subspaces); use .reshape(...) instead",
               shape_str(sz), shape_str(self.sizes()), shape_str(self.strides()));
  Tensor v = make_view(self, sz, st, self.storage_offset());
  if (const Quantizer* q = per_channel(self)) {
    const int64_t k = view_channel_dim(self.sizes(), q->axis(), sz);
    TENSOR_CHECK(k >= 0, "view: shape {} would split or merge dim {} (the channel axis) of a per-channel quantized "
                 "tensor of shape {}", shape_str(sz), q->axis(), shape_str(self.sizes()));
    v = with_quantizer(std::move(v), q->with_axis(k));
  }
  return remember(std::move(v), self);
}

Tensor transpose_geometry(const Tensor& self, int64_t d0, int64_t d1) {
  const int64_t n = self.dim();
  if (n == 0) return alias(self);
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  DimVector sz(self.sizes()), st(self.strides());
  std::swap(sz[d0], sz[d1]);
  std::swap(st[d0], st[d1]);
  Tensor v = make_view(self, sz, st, self.storage_offset());
  if (const Quantizer* q = per_channel(self))
    v = with_quantizer(std::move(v), q->with_axis(q->axis() == d0 ? d1 : q->axis() == d1 ? d0 : q->axis()));
  return remember(std::move(v), self);
}

// t() of a matrix is transpose(0, 1) (recorded as TransposeBackward0); of fewer dims, an alias.
Tensor t_geometry(const Tensor& self) {
  TENSOR_CHECK(self.dim() <= 2, "t: expects a tensor with <= 2 dims, but got {} dims (shape {}); use transpose(d0, d1)",
               self.dim(), shape_str(self.sizes()));
  if (self.dim() < 2) return alias(self);
  DimVector sz(self.sizes()), st(self.strides());
  std::swap(sz[0], sz[1]);
  std::swap(st[0], st[1]);
  Tensor v = make_view(self, sz, st, self.storage_offset());
  if (const Quantizer* q = per_channel(self)) v = with_quantizer(std::move(v), q->with_axis(1 - q->axis()));
  return remember(std::move(v), self);
}

Tensor permute_geometry(const Tensor& self, IntArrayRef dims) {
  const int64_t n = self.dim();
  TENSOR_CHECK(static_cast<int64_t>(dims.size()) == n,
               "permute: number of dims {} doesn't match the tensor's {} dims (shape {})", dims.size(), n,
               shape_str(self.sizes()));
  DimVector sz(n, 0), st(n, 0);
  std::vector<bool> seen(n, false);
  int64_t channel_dim = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = wrap_dim(dims[i], n, "permute");
    TENSOR_CHECK(!seen[d], "permute: dim {} repeats in {}", d, shape_str(dims));
    seen[d] = true;
    sz[i] = self.sizes()[d];
    st[i] = self.strides()[d];
    if (per_channel(self) && d == per_channel(self)->axis()) channel_dim = i;
  }
  Tensor v = make_view(self, sz, st, self.storage_offset());
  if (const Quantizer* q = per_channel(self)) v = with_quantizer(std::move(v), q->with_axis(channel_dim));
  return remember(std::move(v), self);
}

Tensor slice_geometry(const Tensor& self, int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                      int64_t step) {
  TENSOR_CHECK(self.dim() > 0, "slice: cannot slice a 0-dim tensor");
  d = wrap_dim(d, self.dim(), "slice");
  TENSOR_CHECK(step > 0, "slice: step must be positive, got {}", step);
  const int64_t n = self.sizes()[d];
  const int64_t s = slice_start(start, n);
  int64_t e = end.value_or(n);
  if (e < 0) e += n;
  e = std::clamp<int64_t>(e, s, n);
  DimVector sz(self.sizes()), st(self.strides());
  sz[d] = (e - s + step - 1) / step;
  st[d] *= step;
  Tensor v = make_view(self, sz, st, self.storage_offset() + s * self.strides()[d]);
  if (const Quantizer* q = per_channel(self); q && q->axis() == d) v = with_quantizer(std::move(v), q->channels(s, step, sz[d]));
  return remember(std::move(v), self);
}

Tensor select_geometry(const Tensor& self, int64_t d, int64_t index) {
  TENSOR_CHECK(self.dim() > 0, "select: cannot select on a 0-dim tensor");
  d = wrap_dim(d, self.dim(), "select");
  const int64_t n = self.sizes()[d];
  TENSOR_CHECK(index >= -n && index < n, "select: index {} is out of range for dim {} with size {} (shape {})",
               index, d, n, shape_str(self.sizes()));
  if (index < 0) index += n;
  DimVector sz(self.sizes()), st(self.strides());
  sz.erase(d);
  st.erase(d);
  Tensor v = make_view(self, sz, st, self.storage_offset() + index * self.strides()[d]);
  if (const Quantizer* q = per_channel(self))
    v = with_quantizer(std::move(v), q->axis() == d ? q->channel(index) : q->with_axis(q->axis() - (d < q->axis())));
  return remember(std::move(v), self);
}

Tensor expand_geometry(const Tensor& self, IntArrayRef shape) {
  const int64_t n = static_cast<int64_t>(shape.size()), nd = self.dim();
  TENSOR_CHECK(n >= nd, "expand: the number of sizes provided ({}) must be >= the number of dims ({}) of shape {}", n,
               nd, shape_str(self.sizes()));
  DimVector sz(n, 0), st(n, 0);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t d = nd - 1 - (n - 1 - i);
    int64_t want = shape[i];
    if (d < 0) {
      TENSOR_CHECK(want >= 0,
                   "expand: the size {} at dim {} is not allowed for a new leading dim (sizes {} for shape {})", want,
                   i, shape_str(shape), shape_str(self.sizes()));
      sz[i] = want;
      st[i] = 0;
      continue;
    }
    const int64_t have = self.sizes()[d];
    if (want == -1) want = have;
    TENSOR_CHECK(want >= 0, "expand: invalid size {} at dim {} (sizes {} for shape {}); only -1 keeps a dim's size",
                 want, i, shape_str(shape), shape_str(self.sizes()));
    TENSOR_CHECK(have == want || have == 1,
                 "expand: the expanded size {} must match the existing size {} at dim {} (shape {} to {})", want, have,
                 i, shape_str(self.sizes()), shape_str(shape));
    sz[i] = want;
    st[i] = have == want ? self.strides()[d] : 0;
  }
  TENSOR_CHECK(detail::numel_fits(sz), "expand: the sizes {} of shape {} hold more elements than int64 can count",
               shape_str(sz), shape_str(self.sizes()));
  Tensor v = make_view(self, sz, st, self.storage_offset());
  if (const Quantizer* q = per_channel(self)) {
    const int64_t k = q->axis() + (n - nd);
    TENSOR_CHECK(sz[k] == self.sizes()[q->axis()], "expand: cannot expand dim {} (the channel axis) of a per-channel "
                 "quantized tensor of shape {} to {}", q->axis(), shape_str(self.sizes()), shape_str(sz));
    v = with_quantizer(std::move(v), q->with_axis(k));
  }
  return remember(std::move(v), self);
}

Tensor squeeze_geometry(const Tensor& self) {
  DimVector sz, st;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (self.sizes()[i] != 1) {
      sz.push_back(self.sizes()[i]);
      st.push_back(self.strides()[i]);
    }
  Tensor v = make_view(self, sz, st, self.storage_offset());
  if (const Quantizer* q = per_channel(self)) {
    int64_t removed_before = 0;
    for (int64_t i = 0; i < q->axis(); ++i) removed_before += self.sizes()[i] == 1;
    v = with_quantizer(std::move(v), self.sizes()[q->axis()] == 1 ? q->channel(0) : q->with_axis(q->axis() - removed_before));
  }
  return remember(std::move(v), self);
}

// squeeze(d) of a 0-dim tensor or of a dim whose size is not 1 is an alias.
bool squeeze_dim_is_alias(const Tensor& self, int64_t d) {
  return self.dim() == 0 || self.sizes()[wrap_dim(d, self.dim(), "squeeze")] != 1;
}
Tensor squeeze_dim_geometry(const Tensor& self, int64_t d) {
  if (squeeze_dim_is_alias(self, d)) return alias(self);
  d = wrap_dim(d, self.dim(), "squeeze");
  DimVector sz(self.sizes()), st(self.strides());
  sz.erase(d);
  st.erase(d);
  Tensor v = make_view(self, sz, st, self.storage_offset());
  if (const Quantizer* q = per_channel(self))
    v = with_quantizer(std::move(v), q->axis() == d ? q->channel(0) : q->with_axis(q->axis() - (d < q->axis())));
  return remember(std::move(v), self);
}

Tensor unsqueeze_geometry(const Tensor& self, int64_t d) {
  d = wrap_dim(d, self.dim() + 1, "unsqueeze");
  DimVector sz(self.sizes()), st(self.strides());
  const int64_t new_stride = d >= self.dim() ? 1 : self.sizes()[d] * self.strides()[d];
  sz.insert(d, 1);
  st.insert(d, new_stride);
  Tensor v = make_view(self, sz, st, self.storage_offset());
  if (const Quantizer* q = per_channel(self)) v = with_quantizer(std::move(v), q->with_axis(q->axis() + (d <= q->axis())));
  return remember(std::move(v), self);
}

Tensor unfold_geometry(const Tensor& self, int64_t d, int64_t size, int64_t step) {
  check_not_per_channel(self, "unfold");
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[wrap_dim(d, self.dim(), "unfold")];
  if (self.dim() > 0) d = wrap_dim(d, self.dim(), "unfold");
  TENSOR_CHECK(size <= n, "unfold: maximum size for dim {} is {} but size is {}", d, n, size);
  TENSOR_CHECK(step > 0, "unfold: step is {} but must be > 0", step);
  DimVector sz(self.sizes()), st(self.strides());
  if (self.dim() == 0) {
    sz.push_back(size);
    st.push_back(1);
  } else {
    sz[d] = (n - size) / step + 1;
    st[d] = self.strides()[d] * step;
    sz.push_back(size);
    st.push_back(self.strides()[d]);
  }
  return remember(make_view(self, sz, st, self.storage_offset()), self);
}

Tensor diagonal_geometry(const Tensor& self, int64_t offset, int64_t d1, int64_t d2) {
  TENSOR_CHECK(self.dim() >= 2, "diagonal: expects a tensor with >= 2 dims, got shape {}", shape_str(self.sizes()));
  check_not_per_channel(self, "diagonal");
  d1 = wrap_dim(d1, self.dim(), "diagonal");
  d2 = wrap_dim(d2, self.dim(), "diagonal");
  TENSOR_CHECK(d1 != d2, "diagonal: dimensions cannot be identical ({}, {})", d1, d2);
  int64_t len, off = self.storage_offset();
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(self.sizes()[d1], self.sizes()[d2] - offset), 0);
    if (len > 0) off += offset * self.strides()[d2];
  } else {
    len = std::max<int64_t>(std::min(self.sizes()[d1] + offset, self.sizes()[d2]), 0);
    if (len > 0) off -= offset * self.strides()[d1];
  }
  DimVector sz, st;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (i != d1 && i != d2) {
      sz.push_back(self.sizes()[i]);
      st.push_back(self.strides()[i]);
    }
  sz.push_back(len);
  st.push_back(self.strides()[d1] + self.strides()[d2]);
  return remember(make_view(self, sz, st, off), self);
}

Tensor as_strided_geometry(const Tensor& self, IntArrayRef sz, IntArrayRef st, std::optional<int64_t> offset) {
  TENSOR_CHECK(sz.size() == st.size(), "as_strided: got {} sizes but {} strides", sz.size(), st.size());
  check_not_per_channel(self, "as_strided");
  const int64_t off = offset.value_or(self.storage_offset());
  int64_t max_index = off;
  bool empty_view = false;
  for (size_t i = 0; i < sz.size(); ++i) {
    TENSOR_CHECK(sz[i] >= 0 && st[i] >= 0, "as_strided: negative size or stride (sizes {}, strides {})", shape_str(sz),
                 shape_str(st));
    if (sz[i] == 0) empty_view = true;
    max_index += (sz[i] - 1) * st[i];
  }
  if (!self.is_meta() && !empty_view) {
    const int64_t avail = static_cast<int64_t>(self.impl()->storage()->nbytes()) / self.element_size();
    TENSOR_CHECK(max_index < avail,
                 "as_strided: sizes {}, strides {} and offset {} reach element {} but the storage holds {}",
                 shape_str(sz), shape_str(st), off, max_index, avail);
  }
  return remember(make_view(self, sz, st, off), self);
}

Tensor detach_geometry(const Tensor& self) {
  Tensor v = make_view(self, self.sizes(), self.strides(), self.storage_offset());
  v.unsafeGetTensorImpl()->set_is_view(false);  // cut from the graph: in-place writes are the user's business
  return v;
}

Tensor conj_geometry(const Tensor& self) {
  if (!self.is_complex()) return self;  // as libtorch: the same tensor, history included
  Tensor v = make_view(self, self.sizes(), self.strides(), self.storage_offset());
  v.unsafeGetTensorImpl()->set_conj(!self.is_conj());
  return remember(std::move(v), self);
}

// The real (part 0) or imaginary (part 1) components of a complex tensor, as a real view.
// Real/imag views have another dtype than their base, so they remember no base (CopySlices
// cannot rebase through them: in-place writes into them raise while recording).
Tensor component_view(const Tensor& t, int64_t part) {
  DimVector st(t.strides());
  for (auto& s : st) s *= 2;
  auto impl = make_intrusive<TensorImpl>(t.impl()->storage(), to_real_type(t.dtype()), t.device());
  impl->set_sizes_and_strides(t.sizes(), st, t.storage_offset() * 2 + part);
  impl->set_is_view(true);
  return Tensor(std::move(impl));
}

Tensor real_geometry(const Tensor& self) {
  if (!self.is_complex()) return self;
  // Conjugation leaves the real part alone: the real part of the unconjugated view (still a
  // view of the same memory, as libtorch), both dispatched.
  if (self.is_conj()) return self.conj().real();
  return component_view(self, 0);
}

void check_imag(const Tensor& self) {
  TENSOR_CHECK(self.is_complex(),
               "imag: not implemented for real tensors (dtype {}); only complex tensors have an imaginary part",
               self.dtype());
}
Tensor imag_geometry(const Tensor& self) {
  check_imag(self);
  // imag(conj(z)) = -imag(z). libtorch returns a view with a lazy negation bit; libtensor has
  // none, so this is a new tensor (writes into it do not reach z), made of dispatched ops.
  if (self.is_conj()) return -self.conj().imag();
  return component_view(self, 1);
}

// ---- composites of the views (Note [Views through the dispatcher]) ----

Tensor reshape_composite(const Tensor& self, IntArrayRef shape) {
  DimVector sz = infer_size(shape, self.numel(), "reshape");
  DimVector st;
  // A view when the strides allow one, otherwise a contiguous copy viewed (libtorch's rule).
  if (compute_view_strides(self.sizes(), self.strides(), sz, st)) return view_ops().view(self, sz);
  return view_ops().view(self.contiguous(), sz);
}

Tensor narrow_composite(const Tensor& self, int64_t d, int64_t start, int64_t length) {
  TENSOR_CHECK(self.dim() > 0, "narrow: cannot narrow a 0-dim tensor");
  d = wrap_dim(d, self.dim(), "narrow");
  const int64_t n = self.sizes()[d];
  if (start < 0) start += n;
  TENSOR_CHECK(start >= 0 && length >= 0 && start + length <= n,
               "narrow: start ({}) + length ({}) exceeds dimension size ({}) of dim {} in shape {}", start, length, n,
               d, shape_str(self.sizes()));
  return view_ops().slice(self, d, start, start + length, 1);
}

Tensor flatten_composite(const Tensor& self, int64_t start, int64_t end) {
  if (self.dim() == 0) return view_ops().reshape(self, {1});
  start = wrap_dim(start, self.dim(), "flatten");
  end = wrap_dim(end, self.dim(), "flatten");
  TENSOR_CHECK(start <= end, "flatten: start_dim ({}) cannot come after end_dim ({})", start, end);
  DimVector sz;
  for (int64_t i = 0; i < start; ++i) sz.push_back(self.sizes()[i]);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i) m *= self.sizes()[i];
  sz.push_back(m);
  for (int64_t i = end + 1; i < self.dim(); ++i) sz.push_back(self.sizes()[i]);
  return view_ops().reshape(self, sz);
}

Tensor unflatten_composite(const Tensor& self, int64_t d, IntArrayRef shape) {
  d = wrap_dim(d, self.dim(), "unflatten");
  DimVector inner = infer_size(shape, self.sizes()[d], "unflatten");
  DimVector sz;
  for (int64_t i = 0; i < d; ++i) sz.push_back(self.sizes()[i]);
  for (int64_t s : inner) sz.push_back(s);
  for (int64_t i = d + 1; i < self.dim(); ++i) sz.push_back(self.sizes()[i]);
  return view_ops().view(self, sz);
}

// ---- the dispatcher table (constant-initialized; Autograd slots filled by autograd) ----
using dispatch::view_composite_def;
using dispatch::view_def;

ViewOpDefs g_views = {
    view_def<ViewFn>("view", &view_geometry),
    view_def<ViewFn>("permute", &permute_geometry),
    view_def<ViewFn>("expand", &expand_geometry),
    view_def<DimPairFn>("transpose", &transpose_geometry),
    view_def<DimPairFn>("select", &select_geometry),
    view_def<UnaryViewFn>("t", &t_geometry),
    view_def<UnaryViewFn>("squeeze", &squeeze_geometry),
    view_def<UnaryViewFn>("conj", &conj_geometry),
    view_def<UnaryViewFn>("real", &real_geometry),
    view_def<UnaryViewFn>("imag", &imag_geometry),
    view_def<DimFn>("squeeze", &squeeze_dim_geometry),
    view_def<DimFn>("unsqueeze", &unsqueeze_geometry),
    view_def<SliceFn>("slice", &slice_geometry),
    view_def<NarrowFn>("unfold", &unfold_geometry),
    view_def<NarrowFn>("diagonal", &diagonal_geometry),
    view_def<AsStridedFn>("as_strided", &as_strided_geometry),
    view_def<UnaryViewFn>("detach", &detach_geometry),
    view_composite_def<ViewFn>("reshape", &reshape_composite),
    view_composite_def<NarrowFn>("narrow", &narrow_composite),
    view_composite_def<DimPairFn>("flatten", &flatten_composite),
    view_composite_def<UnflattenFn>("unflatten", &unflatten_composite),
};

}  // namespace

ViewOpDefs& view_ops() { return g_views; }

int64_t slice_start(std::optional<int64_t> start, int64_t size) {
  int64_t s = start.value_or(0);
  if (s < 0) s += size;
  return std::clamp<int64_t>(s, 0, size);
}

}  // namespace ops

// ---- public API: every view goes through its table ----
using ops::view_ops;

Tensor Tensor::view(IntArrayRef shape) const { return view_ops().view(*this, shape); }
Tensor Tensor::reshape(IntArrayRef shape) const { return view_ops().reshape(*this, shape); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return view_ops().transpose(*this, d0, d1); }
Tensor Tensor::t() const { return view_ops().t(*this); }
Tensor Tensor::permute(IntArrayRef dims) const { return view_ops().permute(*this, dims); }
Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return view_ops().slice(*this, d, start, end, step);
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  return view_ops().narrow(*this, d, start, length);
}
Tensor Tensor::select(int64_t d, int64_t index) const { return view_ops().select(*this, d, index); }
Tensor Tensor::expand(IntArrayRef shape) const { return view_ops().expand(*this, shape); }
Tensor Tensor::squeeze() const { return view_ops().squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return view_ops().squeeze_dim(*this, d); }
Tensor Tensor::unsqueeze(int64_t d) const { return view_ops().unsqueeze(*this, d); }
Tensor Tensor::flatten(int64_t start, int64_t end) const { return view_ops().flatten(*this, start, end); }
Tensor Tensor::unflatten(int64_t d, IntArrayRef shape) const { return view_ops().unflatten(*this, d, shape); }
Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const { return view_ops().unfold(*this, d, size, step); }
Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2) const {
  return view_ops().diagonal(*this, offset, d1, d2);
}
Tensor Tensor::as_strided(IntArrayRef sz, IntArrayRef st, std::optional<int64_t> offset) const {
  return view_ops().as_strided(*this, sz, st, offset);
}
Tensor Tensor::detach() const { return view_ops().detach(*this); }
Tensor Tensor::conj() const { return view_ops().conj(*this); }
Tensor Tensor::real() const { return view_ops().real(*this); }
Tensor Tensor::imag() const { return view_ops().imag(*this); }

Tensor reshape(const Tensor& a, IntArrayRef s) { return view_ops().reshape(a, s); }
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1) { return view_ops().transpose(a, d0, d1); }
Tensor permute(const Tensor& a, IntArrayRef d) { return view_ops().permute(a, d); }
Tensor flatten(const Tensor& a, int64_t s, int64_t e) { return view_ops().flatten(a, s, e); }
Tensor squeeze(const Tensor& a) { return view_ops().squeeze(a); }
Tensor squeeze(const Tensor& a, int64_t d) { return view_ops().squeeze_dim(a, d); }
Tensor unsqueeze(const Tensor& a, int64_t d) { return view_ops().unsqueeze(a, d); }

// ---- broadcasting: shapes, and expand over a list ----
using detail::shape_str;
std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TENSOR_CHECK(x == y || x == 1 || y == 1, "broadcast_shapes: shapes {} and {} cannot be broadcast (dim {}: {} vs {})",
                 shape_str(a), shape_str(b), i, x, y);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::vector<Tensor> broadcast_tensors(TensorList ts) {
  std::vector<int64_t> shape;
  for (const Tensor& t : ts) shape = broadcast_shapes(shape, t.sizes());
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.expand(shape));
  return out;
}

}  // namespace tensor
