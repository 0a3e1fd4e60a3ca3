// View and shape ops: new TensorImpls over the same storage (Note [Views share storage]).
#include <numeric>

#include "src/core/AutogradHooks.h"
#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {

// Note [Views share storage]
// A view is a fresh TensorImpl holding the same StorageImpl with its own sizes, strides and
// offset. It shares the version counter through the storage (Note [Version counter lives in
// storage]) and keeps the conj bit of its base.

namespace {
using detail::shape_str;
using detail::wrap_dim;

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = make_intrusive<TensorImpl>(base.impl()->storage(), base.dtype(), base.device());
  impl->set_sizes_and_strides(sizes, strides, offset);
  impl->set_conj(base.is_conj());
  impl->set_is_view(true);
  return Tensor(std::move(impl));
}

using autograd_hooks::ViewKind;
// Records the view for autograd when the base requires grad (cheap check first).
Tensor track(Tensor out, const Tensor& base, ViewKind kind, IntArrayRef params = {}) {
  if (base.requires_grad()) autograd_hooks::record_view(out, base, kind, params);
  else if (kind != ViewKind::Real && kind != ViewKind::Imag) autograd_hooks::remember_view_base(out, base);
  return out;
}

// For views whose elements are a pattern over the base's logical positions (diagonal, unfold):
// the same view of arange(numel) names each element's position, and the gradient is
// index_add'ed back there (Note [Views by positions] in src/autograd/nodes/Views.cpp).
template <class ViewFn>
Tensor track_by_positions(Tensor out, const Tensor& base, const ViewFn& same_view) {
  if (!base.requires_grad()) autograd_hooks::remember_view_base(out, base);
  if (!base.requires_grad() || !autograd::GradMode::is_enabled()) return out;
  Tensor pos = same_view(arange(base.numel(), TensorOptions(kInt64)).view(base.sizes()));
  autograd_hooks::record_positions_view(out, base, pos);
  return out;
}

// Resolves one -1 entry against numel.
DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVector out(shape);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TENSOR_CHECK(infer < 0, "{}: only one dimension can be inferred (-1) in shape {}", op, shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      TENSOR_CHECK(shape[i] >= 0, "{}: invalid shape dimension {} in {}", op, shape[i], shape_str(shape));
      known *= shape[i];
    }
  }
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
}  // namespace

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

Tensor Tensor::view(IntArrayRef shape) const {
  DimVector sz = infer_size(shape, numel(), "view");
  DimVector st;
  TENSOR_CHECK(compute_view_strides(sizes(), strides(), sz, st),
               "view: size {} is not compatible with the input's size {} and stride {} (at least one dimension spans "
               "across two contiguous subspaces); use .reshape(...) instead",
               shape_str(sz), shape_str(sizes()), shape_str(strides()));
  return track(make_view(*this, sz, st, storage_offset()), *this, ViewKind::View);
}

Tensor Tensor::reshape(IntArrayRef shape) const {
  DimVector sz = infer_size(shape, numel(), "reshape");
  DimVector st;
  if (compute_view_strides(sizes(), strides(), sz, st))
    return track(make_view(*this, sz, st, storage_offset()), *this, ViewKind::View);
  return contiguous().view(sz);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  int64_t n = dim();
  if (n == 0) return track(make_view(*this, sizes(), strides(), storage_offset()), *this, ViewKind::View);
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  DimVector sz(sizes()), st(strides());
  std::swap(sz[d0], sz[d1]);
  std::swap(st[d0], st[d1]);
  return track(make_view(*this, sz, st, storage_offset()), *this, ViewKind::Transpose, {d0, d1});
}

Tensor Tensor::t() const {
  TENSOR_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dims, but got {} dims (shape {}); use transpose(d0, d1)", dim(),
               shape_str(sizes()));
  return dim() < 2 ? track(make_view(*this, sizes(), strides(), storage_offset()), *this, ViewKind::View) : transpose(0, 1);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  int64_t n = dim();
  TENSOR_CHECK(static_cast<int64_t>(dims.size()) == n, "permute: number of dims {} doesn't match the tensor's {} dims (shape {})",
               dims.size(), n, shape_str(sizes()));
  DimVector sz(n, 0), st(n, 0), wrapped(n, 0);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    TENSOR_CHECK(!seen[d], "permute: dim {} repeats in {}", d, shape_str(dims));
    seen[d] = true;
    sz[i] = sizes()[d];
    st[i] = strides()[d];
    wrapped[i] = d;
  }
  return track(make_view(*this, sz, st, storage_offset()), *this, ViewKind::Permute, wrapped);
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  TENSOR_CHECK(dim() > 0, "slice: cannot slice a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  TENSOR_CHECK(step > 0, "slice: step must be positive, got {}", step);
  int64_t n = sizes()[d];
  int64_t s = start.value_or(0), e = end.value_or(n);
  if (s < 0) s += n;
  if (e < 0) e += n;
  s = std::clamp<int64_t>(s, 0, n);
  e = std::clamp<int64_t>(e, s, n);
  DimVector sz(sizes()), st(strides());
  sz[d] = (e - s + step - 1) / step;
  st[d] *= step;
  return track(make_view(*this, sz, st, storage_offset() + s * strides()[d]), *this, ViewKind::Slice,
               {d, s, step, sz[d]});
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  TENSOR_CHECK(dim() > 0, "narrow: cannot narrow a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  int64_t n = sizes()[d];
  if (start < 0) start += n;
  TENSOR_CHECK(start >= 0 && length >= 0 && start + length <= n,
               "narrow: start ({}) + length ({}) exceeds dimension size ({}) of dim {} in shape {}", start, length, n, d,
               shape_str(sizes()));
  return slice(d, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  TENSOR_CHECK(dim() > 0, "select: cannot select on a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  int64_t n = sizes()[d];
  TENSOR_CHECK(index >= -n && index < n, "select: index {} is out of range for dim {} with size {} (shape {})", index, d, n,
               shape_str(sizes()));
  if (index < 0) index += n;
  DimVector sz(sizes()), st(strides());
  sz.erase(d);
  st.erase(d);
  return track(make_view(*this, sz, st, storage_offset() + index * strides()[d]), *this, ViewKind::Select, {d, index});
}

Tensor Tensor::expand(IntArrayRef shape) const {
  int64_t n = static_cast<int64_t>(shape.size());
  TENSOR_CHECK(n >= dim(), "expand: the number of sizes provided ({}) must be >= the number of dims ({}) of shape {}", n,
               dim(), shape_str(sizes()));
  DimVector sz(n, 0), st(n, 0);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t off = n - 1 - i;
    int64_t d = dim() - 1 - off;
    int64_t want = shape[i];
    if (d < 0) {
      TENSOR_CHECK(want >= 0, "expand: -1 is not allowed for a new leading dim (sizes {})", shape_str(shape));
      sz[i] = want;
      st[i] = 0;
      continue;
    }
    int64_t have = sizes()[d];
    if (want == -1) want = have;
    TENSOR_CHECK(have == want || have == 1,
                 "expand: the expanded size {} must match the existing size {} at dim {} (shape {} to {})", want, have, i,
                 shape_str(sizes()), shape_str(shape));
    sz[i] = want;
    st[i] = have == want ? strides()[d] : 0;
  }
  return track(make_view(*this, sz, st, storage_offset()), *this, ViewKind::Expand);
}

Tensor Tensor::squeeze() const {
  DimVector sz, st;
  for (int64_t i = 0; i < dim(); ++i)
    if (sizes()[i] != 1) {
      sz.push_back(sizes()[i]);
      st.push_back(strides()[i]);
    }
  return track(make_view(*this, sz, st, storage_offset()), *this, ViewKind::Squeeze);
}

Tensor Tensor::squeeze(int64_t d) const {
  if (dim() == 0) return track(make_view(*this, sizes(), strides(), storage_offset()), *this, ViewKind::View);
  d = wrap_dim(d, dim(), "squeeze");
  if (sizes()[d] != 1) return track(make_view(*this, sizes(), strides(), storage_offset()), *this, ViewKind::View);
  DimVector sz(sizes()), st(strides());
  sz.erase(d);
  st.erase(d);
  return track(make_view(*this, sz, st, storage_offset()), *this, ViewKind::Squeeze);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  DimVector sz(sizes()), st(strides());
  int64_t new_stride = d >= dim() ? 1 : sizes()[d] * strides()[d];
  sz.insert(d, 1);
  st.insert(d, new_stride);
  return track(make_view(*this, sz, st, storage_offset()), *this, ViewKind::Unsqueeze);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  TENSOR_CHECK(start <= end, "flatten: start_dim ({}) cannot come after end_dim ({})", start, end);
  DimVector sz;
  for (int64_t i = 0; i < start; ++i) sz.push_back(sizes()[i]);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i) m *= sizes()[i];
  sz.push_back(m);
  for (int64_t i = end + 1; i < dim(); ++i) sz.push_back(sizes()[i]);
  return reshape(sz);
}

Tensor Tensor::unflatten(int64_t d, IntArrayRef shape) const {
  d = wrap_dim(d, dim(), "unflatten");
  DimVector inner = infer_size(shape, sizes()[d], "unflatten");
  DimVector sz;
  for (int64_t i = 0; i < d; ++i) sz.push_back(sizes()[i]);
  for (int64_t s : inner) sz.push_back(s);
  for (int64_t i = d + 1; i < dim(); ++i) sz.push_back(sizes()[i]);
  return view(sz);
}

Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const {
  int64_t n = dim() == 0 ? 1 : sizes()[wrap_dim(d, dim(), "unfold")];
  if (dim() > 0) d = wrap_dim(d, dim(), "unfold");
  TENSOR_CHECK(size <= n, "unfold: maximum size for dim {} is {} but size is {}", d, n, size);
  TENSOR_CHECK(step > 0, "unfold: step is {} but must be > 0", step);
  DimVector sz(sizes()), st(strides());
  if (dim() == 0) {
    sz.push_back(size);
    st.push_back(1);
    return track_by_positions(make_view(*this, sz, st, storage_offset()), *this,
                              [&](const Tensor& p) { return p.unfold(d, size, step); });
  }
  sz[d] = (n - size) / step + 1;
  st[d] = strides()[d] * step;
  sz.push_back(size);
  st.push_back(strides()[d]);
  return track_by_positions(make_view(*this, sz, st, storage_offset()), *this,
                            [&](const Tensor& p) { return p.unfold(d, size, step); });
}

Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2) const {
  TENSOR_CHECK(dim() >= 2, "diagonal: expects a tensor with >= 2 dims, got shape {}", shape_str(sizes()));
  d1 = wrap_dim(d1, dim(), "diagonal");
  d2 = wrap_dim(d2, dim(), "diagonal");
  TENSOR_CHECK(d1 != d2, "diagonal: dimensions cannot be identical ({}, {})", d1, d2);
  int64_t len, off = storage_offset();
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(sizes()[d1], sizes()[d2] - offset), 0);
    if (len > 0) off += offset * strides()[d2];
  } else {
    len = std::max<int64_t>(std::min(sizes()[d1] + offset, sizes()[d2]), 0);
    if (len > 0) off -= offset * strides()[d1];
  }
  DimVector sz, st;
  for (int64_t i = 0; i < dim(); ++i)
    if (i != d1 && i != d2) {
      sz.push_back(sizes()[i]);
      st.push_back(strides()[i]);
    }
  sz.push_back(len);
  st.push_back(strides()[d1] + strides()[d2]);
  return track_by_positions(make_view(*this, sz, st, off), *this,
                            [&](const Tensor& p) { return p.diagonal(offset, d1, d2); });
}

Tensor Tensor::as_strided(IntArrayRef sz, IntArrayRef st, std::optional<int64_t> offset) const {
  TENSOR_CHECK(sz.size() == st.size(), "as_strided: got {} sizes but {} strides", sz.size(), st.size());
  int64_t off = offset.value_or(storage_offset());
  int64_t max_index = off;
  bool empty_view = false;
  for (size_t i = 0; i < sz.size(); ++i) {
    TENSOR_CHECK(sz[i] >= 0 && st[i] >= 0, "as_strided: negative size or stride (sizes {}, strides {})", shape_str(sz),
                 shape_str(st));
    if (sz[i] == 0) empty_view = true;
    max_index += (sz[i] - 1) * st[i];
  }
  if (!is_meta() && !empty_view) {
    int64_t avail = static_cast<int64_t>(impl()->storage()->nbytes()) / element_size();
    TENSOR_CHECK(max_index < avail, "as_strided: sizes {}, strides {} and offset {} reach element {} but the storage holds {}",
                 shape_str(sz), shape_str(st), off, max_index, avail);
  }
  Tensor out = make_view(*this, sz, st, off);
  if (!requires_grad() || !autograd::GradMode::is_enabled() || is_meta())
    return track(std::move(out), *this, ViewKind::AsStrided);
  // Note [as_strided backward]
  // The view's gradient goes to the input elements it reads (Note [Positions in a base]); then
  // it is one "by positions" (Note [Views by positions]).
  Tensor pos = autograd_hooks::positions_in(*this, sz, st, off, "as_strided");
  autograd_hooks::record_positions_view(out, *this, pos);
  return out;
}

Tensor Tensor::detach() const {
  Tensor v = make_view(*this, sizes(), strides(), storage_offset());
  v.unsafeGetTensorImpl()->set_is_view(false);  // cut from the graph: in-place writes are the user's business
  return v;
}

Tensor Tensor::conj() const {
  if (!is_complex()) return *this;  // as libtorch: the same tensor, history included
  Tensor v = make_view(*this, sizes(), strides(), storage_offset());
  v.unsafeGetTensorImpl()->set_conj(!is_conj());
  return track(std::move(v), *this, ViewKind::Conj);
}

namespace {
// The real (part 0) or imaginary (part 1) components of a complex tensor, as a real view.
Tensor component_view(const Tensor& t, int64_t part) {
  DimVector st(t.strides());
  for (auto& s : st) s *= 2;
  auto impl = make_intrusive<TensorImpl>(t.impl()->storage(), to_real_type(t.dtype()), t.device());
  impl->set_sizes_and_strides(t.sizes(), st, t.storage_offset() * 2 + part);
  impl->set_is_view(true);
  return Tensor(std::move(impl));
}
}  // namespace

Tensor Tensor::real() const {
  if (!is_complex()) return *this;
  // Conjugation leaves the real part alone: the real part of the unconjugated view (still a
  // view of the same memory, as libtorch).
  if (is_conj()) return conj().real();
  return track(component_view(*this, 0), *this, ViewKind::Real);
}

Tensor Tensor::imag() const {
  TENSOR_CHECK(is_complex(), "imag: not implemented for real tensors (dtype {}); only complex tensors have an imaginary part",
               dtype());
  // imag(conj(z)) = -imag(z). libtorch returns a view with a lazy negation bit; libtensor has
  // none, so this is a new tensor (writes into it do not reach z).
  if (is_conj()) return -conj().imag();
  return track(component_view(*this, 1), *this, ViewKind::Imag);
}

// ---- free-function spellings ----
Tensor reshape(const Tensor& a, IntArrayRef s) { return a.reshape(s); }
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1) { return a.transpose(d0, d1); }
Tensor permute(const Tensor& a, IntArrayRef d) { return a.permute(d); }
Tensor flatten(const Tensor& a, int64_t s, int64_t e) { return a.flatten(s, e); }
Tensor squeeze(const Tensor& a) { return a.squeeze(); }
Tensor squeeze(const Tensor& a, int64_t d) { return a.squeeze(d); }
Tensor unsqueeze(const Tensor& a, int64_t d) { return a.unsqueeze(d); }

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
