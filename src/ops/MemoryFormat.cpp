// tensor::MemoryFormat: layout predicates, suggest_memory_format, and the layout-taking forms of
// to(), contiguous(), clone() and empty_like() (include/tensor/core/MemoryFormat.h).
//
// Note [Memory formats]
// As libtorch (c10::MemoryFormat), a memory format names an order of the dims in memory:
// Contiguous (row-major), ChannelsLast ((N, C, H, W) stored N, H, W, C; 4-d only) and
// ChannelsLast3d (5-d only), plus Preserve, which is not a layout but a rule for results made
// from a source tensor. The rules follow libtorch 1.13/2.x, so that a ported program gets the
// same strides:
// - is_contiguous(f): dense in f's order, ignoring the strides of size-1 dims. A tensor can be
//   contiguous and channels-last at once (C == 1, or H * W == 1).
// - suggest_memory_format(): a heuristic over the strides (the walk in
//   strides_like_channels_last, Note [Channels-last layout] in src/cpu/Layout.cpp), which
//   decides the ambiguous tensors above by their size-1 strides; also true of non-dense tensors
//   (a slice of a channels-last tensor is ChannelsLast).
// - Preserve: a dense, non-overlapping source keeps its exact strides (size-1 strides included,
//   so the suggestion carries over); otherwise to() takes suggest_memory_format()'s layout, and
//   clone() and empty_like() dense strides in the source's order of strides.
// - to() returns self, without copying, when dtype and device match and the format is unset,
//   Preserve, or the one suggest_memory_format() names; so, as in libtorch, a transposed 2-d
//   tensor's to(..., MemoryFormat::Contiguous) is the tensor itself (use contiguous() for a
//   row-major copy).
// Deviation: clone() without an argument is row-major here (libtorch's preserves dense
// strides); clone(MemoryFormat::Preserve) is libtorch's. contiguous() and the kernels rely on
// the row-major clone.
#include "src/ops/MemoryFormat.h"

#include <algorithm>
#include <ostream>
#include <vector>

#include "src/core/Check.h"
#include "src/ops/CopyOps.h"
#include "tensor/ops.h"

namespace tensor {
namespace layout {

bool non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<int64_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1) dims.push_back(static_cast<int64_t>(d));
  std::sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (int64_t d : dims) {
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

namespace {
/// The dims innermost first in channels-last order: C, the spatial dims from the last, N.
std::vector<int64_t> channels_last_order(size_t n) {
  std::vector<int64_t> order{1};
  for (int64_t d = static_cast<int64_t>(n) - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  return order;
}
}  // namespace

bool channels_last_dense(IntArrayRef sizes, IntArrayRef strides) {
  if (sizes.size() < 3) return false;
  int64_t expected = 1;
  for (int64_t d : channels_last_order(sizes.size())) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool strides_like_channels_last(IntArrayRef sizes, IntArrayRef strides) {
  if (sizes.size() < 3 || strides[1] == 0) return false;  // expanded channels: row-major by default
  int64_t min = 0;
  for (int64_t d : channels_last_order(sizes.size())) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    // N's stride equal to C's: an (N, 1, 1, 1) tensor, or a sliced (N, 1, 1, W) one; both are
    // row-major by default.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d] * std::max<int64_t>(sizes[d], 1);
  }
  return true;
}

DimVector channels_last_strides(IntArrayRef sizes) {
  DimVector st(sizes.size(), 1);
  int64_t s = 1;
  for (int64_t d : channels_last_order(sizes.size())) {
    st[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  return st;
}

DimVector strides_for(IntArrayRef sizes, MemoryFormat f, const char* op) {
  switch (f) {
    case MemoryFormat::Contiguous: {
      DimVector st(sizes.size(), 1);
      int64_t s = 1;
      for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
        st[d] = s;
        s *= std::max<int64_t>(sizes[d], 1);
      }
      return st;
    }
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d: {
      const size_t want = f == MemoryFormat::ChannelsLast ? 4 : 5;
      TENSOR_CHECK(sizes.size() == want, "{}: memory_format {} needs a {}-d shape, got shape {}", op, to_string(f), want,
                   detail::shape_str(sizes));
      return channels_last_strides(sizes);
    }
    case MemoryFormat::Preserve:
      break;
  }
  TENSOR_ERROR("{}: memory_format Preserve needs a source tensor (shape {}); use empty_like, clone or to", op,
               detail::shape_str(sizes));
}

DimVector dense_strides_in_order_of(IntArrayRef sizes, IntArrayRef strides) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  // Dims innermost first: start from row-major order and move a dim inward past every dim with a
  // larger stride (a stable insertion sort: of two equal strides the larger size goes outward,
  // else they keep row-major order). A zero stride (an expanded dim) compares with nothing and
  // stays where row-major order puts it.
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  auto inward = [&](int64_t a, int64_t b) {  // +1: a must go outside b; -1: a stays inside
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] > strides[b] ? 1 : -1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  for (int64_t i = 1; i < n; ++i)
    for (int64_t j = i; j > 0; --j) {
      const int c = inward(order[j - 1], order[j]);
      if (c > 0) std::swap(order[j - 1], order[j]);
      else if (c < 0) break;
    }
  DimVector st(sizes.size(), 1);
  int64_t s = 1;
  for (int64_t d : order) {
    st[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  return st;
}

}  // namespace layout

const char* to_string(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return "Contiguous";
    case MemoryFormat::Preserve: return "Preserve";
    case MemoryFormat::ChannelsLast: return "ChannelsLast";
    case MemoryFormat::ChannelsLast3d: return "ChannelsLast3d";
  }
  return "Unknown";
}

std::ostream& operator<<(std::ostream& os, MemoryFormat f) { return os << to_string(f); }

namespace detail {
void throw_array_ref_slice(size_t start, size_t n, size_t size) {
  TENSOR_ERROR("ArrayRef::slice: elements [{}, {}) are out of range for an ArrayRef of {} elements", start, start + n,
               size);
}
}  // namespace detail

// ---- Tensor methods ----

bool Tensor::is_contiguous(MemoryFormat f) const {
  switch (f) {
    case MemoryFormat::Contiguous: return is_contiguous();
    case MemoryFormat::ChannelsLast: return dim() == 4 && layout::channels_last_dense(sizes(), strides());
    case MemoryFormat::ChannelsLast3d: return dim() == 5 && layout::channels_last_dense(sizes(), strides());
    case MemoryFormat::Preserve: break;
  }
  TENSOR_ERROR("is_contiguous: memory_format Preserve is not a layout to test (tensor {})", describe());
}

MemoryFormat Tensor::suggest_memory_format(bool channels_last_strides_exact_match) const {
  const int64_t n = dim();
  if ((n == 4 || n == 5) && layout::strides_like_channels_last(sizes(), strides())) {
    if (!channels_last_strides_exact_match || strides() == IntArrayRef(layout::channels_last_strides(sizes())))
      return n == 4 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
  }
  return MemoryFormat::Contiguous;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous() && !is_conj()) return *this;
  return clone();
}

Tensor Tensor::contiguous(MemoryFormat f) const {
  TENSOR_CHECK(f != MemoryFormat::Preserve,
               "contiguous: memory_format Preserve is not supported (tensor {}); use clone(MemoryFormat::Preserve)",
               describe());
  if (f == MemoryFormat::Contiguous) return contiguous();
  if (is_contiguous(f) && !is_conj()) return *this;
  return empty_strided(sizes(), layout::strides_for(sizes(), f, "contiguous"), options()).copy_(*this);
}

Tensor Tensor::clone(MemoryFormat f) const {
  TENSOR_CHECK(defined(), "clone: tensor is undefined");
  if (f == MemoryFormat::Contiguous) return clone();
  DimVector st = f != MemoryFormat::Preserve ? layout::strides_for(sizes(), f, "clone")
                 : layout::non_overlapping_and_dense(sizes(), strides()) ? DimVector(strides())
                                                                         : layout::dense_strides_in_order_of(sizes(), strides());
  // copy_ records CopyBackwards, so the copy is differentiable as clone() is.
  return empty_strided(sizes(), st, options()).copy_(*this);
}

Tensor Tensor::to(const TensorOptions& o, bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) const {
  TENSOR_CHECK(defined(), "to: tensor is undefined");
  TENSOR_CHECK(!(o.has_memory_format() && memory_format.has_value()),
               "to: memory_format given both in the options ({}) and as an argument ({}); give it once",
               to_string(*o.memory_format_opt()), to_string(memory_format.value_or(MemoryFormat::Preserve)));
  const MemoryFormat f = memory_format ? *memory_format : o.memory_format_opt().value_or(MemoryFormat::Preserve);
  const ScalarType t = o.has_dtype() ? o.dtype() : dtype();
  const Device d = o.has_device() ? o.device() : device();
  if (!copy && t == dtype() && d == device() && (f == MemoryFormat::Preserve || suggest_memory_format() == f))
    return *this;
  // _to_copy keeps a dense tensor's strides (Note [Memory formats]).
  if (f == MemoryFormat::Preserve) return ops::copy_ops().to_copy(*this, t, d, non_blocking);
  DimVector st = layout::strides_for(sizes(), f, "to");
  if (d == device()) return empty_strided(sizes(), st, options().dtype(t)).copy_(*this, non_blocking);
  // Across devices: move (CopyBackwards would not move the gradient back), then lay out.
  Tensor moved = ops::copy_ops().to_copy(*this, t, d, non_blocking);
  return moved.strides() == IntArrayRef(st) ? moved : empty_strided(sizes(), st, moved.options()).copy_(moved);
}
Tensor Tensor::to(ScalarType t, bool nb, bool copy, std::optional<MemoryFormat> mf) const {
  return to(TensorOptions().dtype(t), nb, copy, mf);
}
Tensor Tensor::to(Device d, bool nb, bool copy, std::optional<MemoryFormat> mf) const {
  return to(TensorOptions().device(d), nb, copy, mf);
}
Tensor Tensor::to(Device d, ScalarType t, bool nb, bool copy, std::optional<MemoryFormat> mf) const {
  return to(TensorOptions().device(d).dtype(t), nb, copy, mf);
}
Tensor Tensor::to(const Tensor& other, bool nb, bool copy, std::optional<MemoryFormat> mf) const {
  TENSOR_CHECK(other.defined(), "to: the tensor to take dtype and device from is undefined");
  return to(other.options(), nb, copy, mf);
}

// ---- factories ----

Tensor empty_like(const Tensor& t, const TensorOptions& o, std::optional<MemoryFormat> memory_format) {
  TENSOR_CHECK(t.defined(), "empty_like: tensor is undefined");
  TENSOR_CHECK(!(o.has_memory_format() && memory_format.has_value()),
               "empty_like: memory_format given both in the options ({}) and as an argument ({}); give it once",
               to_string(*o.memory_format_opt()), to_string(memory_format.value_or(MemoryFormat::Preserve)));
  const MemoryFormat f = memory_format ? *memory_format : o.memory_format_opt().value_or(MemoryFormat::Preserve);
  TensorOptions opts = o;
  if (!o.has_dtype()) opts = opts.dtype(t.dtype());
  if (!o.has_device()) opts = opts.device(t.device());
  DimVector st = f != MemoryFormat::Preserve ? layout::strides_for(t.sizes(), f, "empty_like")
                 : layout::non_overlapping_and_dense(t.sizes(), t.strides())
                     ? DimVector(t.strides())
                     : layout::dense_strides_in_order_of(t.sizes(), t.strides());
  return empty_strided(t.sizes(), st, opts);
}

}  // namespace tensor
