// The hand-written nodes of views, in-place writes through views (CopySlices) and copy_
// (Note [Hand-written nodes]).
#include "src/autograd/Functions.h"

#include <cmath>

#include "src/core/Check.h"
#include "src/ops/ViewOps.h"
#include "tensor/ops.h"

namespace tensor::autograd {

// Note [Hand-written nodes]
// The derivatives table (Derivatives.cpp) records ops whose outputs are new tensors. What it
// cannot express is here, in src/autograd/nodes/, and nowhere else:
//   - views (the view ops' Autograd kernels at the end of this file, over record_view and
//     record_positions_view): the output aliases its base, so the node must also remember the
//     base for later in-place writes (Note [In-place on views]);
//   - in-place writes through a view (CopySlices, set_inplace_history): the write changes the
//     base's history, not only the view's;
//   - the outputs of multi-output views (split, chunk, unbind: mark_multi_output_views);
//   - multi-output ops (max/min along a dim, sort, topk, max_pool2d_with_indices, the
//     normalizations): one node for several outputs (nodes/MultiOutput.cpp);
//   - in-place writes: copy_ and fill_ (Note [Differentiable copy_]), and the in-place indexing
//     ops (scatter_, scatter_add_, index_add_, masked_fill_): the write changes self's history
//     (nodes/InPlace.cpp). Elementwise in-place ops come from the table's own
//     template (Derivatives.cpp); tril_/triu_ are composites of masked_fill_.

// Note [View index tensors]
// The positions of views by positions and of CopySlices depend only on the geometry, so they
// are computed on the CPU and moved to the base's device once, when recorded; select's index
// and slice's arange are made on the gradient's device at backward. index_add and index_select
// take their index on the data's device: the CUDA suite's first run on a GPU (2026-11-28) found
// the view backwards on CUDA raising for a CPU index.

// Note [Positions in a base]
// A geometry (sizes, strides, storage offset) over a base's storage reads storage elements; a
// gradient flowing back through it belongs to the base elements at those storage positions.
// Inverting the base's own geometry over its storage maps each storage position to the base's
// logical index. A base whose elements share memory (expanded) has no inverse, and a geometry
// that reads storage outside the base has no gradient there: both raise.
Tensor positions_in(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset, const char* op) {
  AutoGradMode no_grad(false);
  const TensorOptions idx = TensorOptions(kInt64);
  const int64_t avail = static_cast<int64_t>(base.unsafeGetTensorImpl()->storage()->nbytes()) / base.element_size();
  Tensor storage_pos = arange(avail, idx);
  Tensor in_pos = storage_pos.as_strided(base.sizes(), base.strides(), base.storage_offset()).reshape({-1});
  Tensor hits = zeros({avail}, idx).index_add(0, in_pos, ones({base.numel()}, idx));
  TENSOR_CHECK(base.numel() == 0 || hits.max().item<int64_t>() <= 1,
               "{}: cannot differentiate through a view of a tensor whose elements overlap in memory (shape {}, "
               "strides {}); call contiguous() on it first", op, detail::shape_str(base.sizes()),
               detail::shape_str(base.strides()));
  Tensor inverse = tensor::scatter(full({avail}, -1, idx), 0, in_pos, arange(base.numel(), idx));
  Tensor pos = inverse.index_select(0, storage_pos.as_strided(sizes, strides, offset).reshape({-1})).view(sizes);
  TENSOR_CHECK(pos.numel() == 0 || pos.min().item<int64_t>() >= 0,
               "{}: the view (sizes {}, strides {}, offset {}) reads memory outside its base (shape {}, strides {}, "
               "offset {}), so it has no gradient there", op, detail::shape_str(sizes), detail::shape_str(strides),
               offset, detail::shape_str(base.sizes()), detail::shape_str(base.strides()), base.storage_offset());
  return pos;
}

namespace {
const Tensor* view_base_of(const Tensor& t) {
  AutogradMeta* m = t.unsafeGetTensorImpl()->autograd_meta();
  return m && m->view_base_.defined() ? &m->view_base_ : nullptr;
}

// The flat logical (row-major) index within base of each element of view v, shaped like v.
// A contiguous base maps storage to logical positions by an offset; any other base (transposed,
// strided slice) is inverted over its storage (Note [Positions in a base]).
Tensor view_positions(const Tensor& v, const Tensor& base, const char* op) {
  if (base.is_contiguous()) {
    AutoGradMode no_grad(false);
    return arange(base.numel(), TensorOptions(kInt64)).as_strided(v.sizes(), v.strides(),
                                                                 v.storage_offset() - base.storage_offset());
  }
  return positions_in(base, v.sizes(), v.strides(), v.storage_offset(), op);
}

// The backward of a view given by the base positions `pos` of its elements: g summed into
// those positions of a zero base (index_add, differentiable for double backward).
std::shared_ptr<FormulaNode> positions_node(const char* name, const Tensor& base, const Tensor& pos) {
  auto node = std::make_shared<FormulaNode>(name, TENSOR_GRAD(
      const InputMeta& m = n.input_meta(0);
      int64_t numel = 1;
      for (int64_t s : m.sizes) numel *= s;
      Tensor flat = zeros({numel}, TensorOptions(g.dtype()).device(g.device()));
      return {flat.index_add(0, n.saved(0).reshape({-1}), g.reshape({-1})).view(m.sizes)};));
  node->add_input(base);
  node->save(pos.to(base.device()).contiguous());  // built on the CPU (Note [View index tensors])
  return node;
}

// Records view t as a view by positions of its (root) base's current history.
void set_view_history(const Tensor& t, const Tensor& base, const Tensor& pos) {
  auto node = positions_node("AsStridedBackward0", base, pos);
  AutogradMeta& m = materialize_meta(t);
  m.grad_fn_ = node;
  m.output_nr_ = 0;
  m.view_version_ = t._version();
}
}  // namespace

// The root base a view of `base` remembers: base's own root, unless base is a leaf that
// requires grad itself (requires_grad_() on a view): then base is the root, so that writes
// through its views raise the leaf error instead of rebasing a tensor behind it.
static const Tensor& root_base_of(const Tensor& base) {
  AutogradMeta* m = base.unsafeGetTensorImpl()->autograd_meta();
  return m && m->view_base_.defined() && !m->requires_grad_ ? m->view_base_ : base;
}

static void inherit_multi_view(AutogradMeta& m, const Tensor& base) {
  const AutogradMeta* bm = base.unsafeGetTensorImpl()->autograd_meta();
  if (bm && bm->multi_view_fn_) {
    m.multi_view_fn_ = bm->multi_view_fn_;
    m.multi_view_nr_ = bm->multi_view_nr_;
  }
}

void remember_view_base(const Tensor& out, const Tensor& base) {
  if (!GradMode::is_enabled() || !is_differentiable(base.dtype()) || !out.unsafeGetTensorImpl()->is_view()) return;
  AutogradMeta& m = materialize_meta(out);
  m.view_base_ = root_base_of(base);
  m.view_version_ = out._version();
  inherit_multi_view(m, base);
}

// Note [Multi-output views]
// PyTorch records split/chunk/unbind as one node with several outputs, which it cannot rebase when
// one output is written in place, so it forbids that while recording. CopySlices here could
// handle it, but the error is kept for parity where it matters (the base requires grad, so the
// write would change recorded history); writing into the pieces of a tensor that does not
// require grad keeps working.
void mark_multi_output_views(const std::vector<Tensor>& outs, const char* node_name) {
  uint32_t nr = 0;
  for (const Tensor& o : outs) {
    AutogradMeta* m = o.unsafeGetTensorImpl()->autograd_meta();
    if (m && m->view_base_.defined()) {
      m->multi_view_fn_ = node_name;
      m->multi_view_nr_ = nr;
    }
    ++nr;
  }
}

void refresh_view_history(const Tensor& t) {
  AutogradMeta* m = t.unsafeGetTensorImpl()->autograd_meta();
  if (!m || !m->view_base_.defined() || m->requires_grad_) return;
  if (m->grad_fn_ ? m->view_version_ == t._version() : !m->view_base_.requires_grad()) return;
  if (!m->view_base_.requires_grad()) {  // the base lost its history (detach_): so does the view
    m->grad_fn_.reset();
    return;
  }
  Tensor base = m->view_base_;
  set_view_history(t, base, view_positions(t, base, "autograd"));
}

void check_inplace(const Tensor& t, const char* op, bool writes_one_value) {
  refresh_view_history(t);
  TENSOR_CHECK(!(t.is_leaf() && t.requires_grad()),
               "{}: a leaf Variable that requires grad is being used in an in-place operation ({}); do it under "
               "NoGradGuard or on a clone", op, t.describe());
  if (!t.unsafeGetTensorImpl()->is_view()) return;
  const Tensor* base = view_base_of(t);
  TENSOR_CHECK(base != nullptr,
               "{}: this view was created in no-grad mode (or is a real()/imag() view) and is being modified in place "
               "with grad mode enabled ({}); this use is ambiguous and forbidden: write into a clone, or make the view "
               "with grad mode on", op, t.describe());
  const AutogradMeta* tm = t.unsafeGetTensorImpl()->autograd_meta();
  TENSOR_CHECK(!tm->multi_view_fn_ || !base->requires_grad(),
               "{}: Output {} of {} is a view and is being modified inplace. This view is the output of a function "
               "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
               "You should replace the inplace operation by an out-of-place one ({})",
               op, tm->multi_view_nr_, tm->multi_view_fn_, t.describe());
  TENSOR_CHECK(!(base->is_leaf() && base->requires_grad()),
               "{}: a view of a leaf Variable that requires grad is being used in an in-place operation ({})", op,
               t.describe());
  // An op that writes one value everywhere (fill_) leaves aliased elements in agreement: libtorch
  // lets it through an expanded view. A base that requires grad is still refused (its
  // CopySlices would scatter gradients over aliased positions).
  const bool idempotent = writes_one_value && !base->requires_grad();
  for (int64_t d = 0; d < t.dim() && !idempotent; ++d)
    TENSOR_CHECK(t.stride(d) != 0 || t.size(d) <= 1,
                 "{}: unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location ({}, strides {}); call clone() before the in-place operation", op, t.describe(),
                 detail::shape_str(t.strides()));
}

// Note [In-place on views]
// Writing in place through a view changes its base, so the base's history must change too,
// as PyTorch's CopySlices does. Every view made with grad mode on remembers its root base
// (remember_base / remember_view_base), whether the base requires grad or not. An in-place op
// on such a view gives the base a CopySlices node over the base's previous history (none when
// the base did not require grad: it starts requiring grad here). Its backward takes the base's
// gradient g, gathers the view's part at the view's flat positions within the base
// (view_positions: for any base geometry, transposed and strided ones included), runs the op's
// own backward on it, and gives the base's previous history g with those positions replaced
// by the op's gradient for the view's old values. It uses only differentiable public ops
// (index_select, where, index_add), so double backward works.
// The view becomes a view by positions of the rebased base. Other views of the base are
// stale now: each remembers the storage version its history was recorded at, and is rebuilt
// from the base's current history on next use (refresh_view_history), as PyTorch does.
namespace {
class CopySlices final : public Node {
 public:
  std::shared_ptr<Node> fn;
  uint32_t self_nr = 0;  // fn's input that was the view; CopySlices' edge there is the base's
  DimVector base_sizes, vsizes;
  Tensor pos;      // flat positions of the view's elements in the base, int64
  Tensor in_view;  // bool mask over the base's flat positions: true inside the view
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn->release_variables(); }
  variable_list apply(variable_list&& grads) override {
    Tensor flat = grads[0].reshape({-1});
    variable_list r = fn->apply({flat.index_select(0, pos).view(vsizes)});
    r.resize(std::max<size_t>(r.size(), self_nr + 1));
    Tensor rest = where(in_view, 0.0, flat);
    if (r[self_nr].defined()) rest = rest.index_add(0, pos, r[self_nr].reshape({-1}).to(rest.dtype()));
    r[self_nr] = rest.view(base_sizes);
    return r;
  }
};
}  // namespace

void set_inplace_history(const Tensor& self, const std::shared_ptr<Node>& node, uint32_t self_nr) {
  const Tensor* basep = view_base_of(self);
  if (!self.unsafeGetTensorImpl()->is_view() || !basep) {
    set_history(self, node);
    return;
  }
  Tensor base = *basep;
  Tensor pos = view_positions(self, base, node->name().c_str());
  auto cs = std::make_shared<CopySlices>();
  cs->fn = node;
  cs->self_nr = self_nr;
  cs->base_sizes = DimVector(base.sizes());
  cs->vsizes = DimVector(self.sizes());
  {
    AutoGradMode no_grad(false);
    const TensorOptions idx = TensorOptions(kInt64);
    const Tensor flat_pos = pos.reshape({-1}).contiguous();
    cs->in_view = zeros({base.numel()}, idx).index_add(0, flat_pos, ones({flat_pos.numel()}, idx)).gt(0).to(base.device());
    cs->pos = flat_pos.to(base.device());
  }
  for (size_t i = 0; i < std::max<size_t>(node->next_edges().size(), self_nr + 1); ++i)
    cs->mutable_next_edges().push_back(i != self_nr                ? node->next_edges()[i]
                                       : base.requires_grad() ? gradient_edge(base)
                                                              : Edge{});
  set_history(base, cs);
  // The view now reads the rebased base: its elements sit at these positions of the base.
  set_view_history(self, base, pos);
}

// Note [Views by positions]
// diagonal and unfold pick elements of the base in a pattern (unfold even repeats them). Their
// backward needs no op-specific formula: the same view applied to arange(numel) gives each
// element's flat position in the base, and index_add puts the gradient back there, summing
// repeats. index_add is differentiable, so double backward works too.
namespace {
// Views of a recorded tensor remember their root base for in-place writes, and the version
// their history was recorded at (Note [In-place on views]).
void remember_base(const Tensor& out, const Tensor& base) {
  AutogradMeta& m = materialize_meta(out);
  m.view_base_ = root_base_of(base);
  m.view_version_ = out._version();
  inherit_multi_view(m, base);
}
}  // namespace

void record_positions_view(const Tensor& out, const Tensor& base, const Tensor& pos) {
  if (!base.requires_grad() || !GradMode::is_enabled() || !is_differentiable(base.dtype())) return;
  if (out.unsafeGetTensorImpl()->is_view()) remember_base(out, base);
  set_history(out, positions_node("ViewByPositionsBackward", base, pos));
}

// ---- views (the Autograd kernels of the view ops, below) ----
void record_view(const Tensor& out, const Tensor& base, ViewKind kind, IntArrayRef params) {
  if (!base.requires_grad() || !GradMode::is_enabled() || !is_differentiable(base.dtype())) return;
  static const char* names[] = {"SelectBackward0", "SliceBackward0", "ViewBackward0", "TransposeBackward0",
                                "PermuteBackward0", "ExpandBackward0", "SqueezeBackward0", "UnsqueezeBackward0",
                                "AsStridedBackward0", "RealBackward0", "ImagBackward0", "ConjBackward0"};
  BackwardFn fn = nullptr;
  switch (kind) {
    case ViewKind::Select:
      fn = TENSOR_GRAD(
          const InputMeta& m = n.input_meta(0);
          Tensor idx = tensor::tensor({n.ints[1]}).to(g.device());
          return {zeros(m.sizes, TensorOptions(g.dtype()).device(g.device())).index_add(n.ints[0], idx, g.unsqueeze(n.ints[0]))};);
      break;
    case ViewKind::Slice:
      fn = TENSOR_GRAD(
          const InputMeta& m = n.input_meta(0);
          Tensor idx = arange(n.ints[1], n.ints[1] + n.ints[3] * n.ints[2], n.ints[2], TensorOptions(kInt64).device(g.device()));
          return {zeros(m.sizes, TensorOptions(g.dtype()).device(g.device())).index_add(n.ints[0], idx, g)};);
      break;
    case ViewKind::View:
    case ViewKind::Squeeze:
    case ViewKind::Unsqueeze:
      fn = TENSOR_GRAD(return {g.reshape(n.input_meta(0).sizes)};);
      break;
    case ViewKind::Transpose:
      fn = TENSOR_GRAD(return {g.transpose(n.ints[0], n.ints[1])};);
      break;
    case ViewKind::Permute:
      fn = TENSOR_GRAD(
          DimVector inv(n.ints.size(), 0);
          for (size_t i = 0; i < n.ints.size(); ++i) inv[n.ints[i]] = static_cast<int64_t>(i);
          return {g.permute(inv)};);
      break;
    case ViewKind::Expand:
      fn = TENSOR_GRAD(return {sum_to(g, n.input_meta(0).sizes)};);
      break;
    // For a real output r of complex z, z.grad = dL/dx + i dL/dy (PyTorch's convention).
    case ViewKind::Real:
      fn = TENSOR_GRAD(return {g.to(n.input_meta(0).dtype)};);
      break;
    case ViewKind::Imag:
      fn = TENSOR_GRAD(return {g.to(n.input_meta(0).dtype) * complex128(0, 1)};);
      break;
    case ViewKind::Conj:
      fn = TENSOR_GRAD(return {g.conj()};);
      break;
    default:
      // Recorded by positions by as_strided's Autograd kernel (Note [as_strided backward]);
      // only meta tensors, which never run backward, come here.
      fn = TENSOR_GRAD(TENSOR_ERROR("as_strided: no derivative for meta tensors"););
      break;
  }
  auto node = std::make_shared<FormulaNode>(names[static_cast<int>(kind)], fn);
  node->add_input(base);
  node->ints = DimVector(params);
  set_history(out, node);
  // Real/imag views have another dtype than their base: CopySlices cannot rebase through them,
  // so they keep no base and in-place writes into them raise (check_inplace).
  bool rebasable = kind != ViewKind::Real && kind != ViewKind::Imag && kind != ViewKind::Conj;
  if (rebasable && out.unsafeGetTensorImpl()->is_view()) remember_base(out, base);
}

// ---- the view ops' Autograd kernels (Note [Views through the dispatcher], src/ops/ViewOps.cpp) ----
// Each is reached only when the base requires grad and grad mode is on: it runs the geometry
// below itself (which validates the arguments), then records the view node from the arguments
// normalized the way the geometry normalized them.
namespace {
using ops::view_ops;
constexpr DispatchKey kSelf = DispatchKey::Autograd;
using detail::wrap_dim;

Tensor ag_view(const Tensor& self, IntArrayRef shape) {
  Tensor out = view_ops().view.redispatch(kSelf, self, shape);
  record_view(out, self, ViewKind::View, {});
  return out;
}

Tensor ag_permute(const Tensor& self, IntArrayRef dims) {
  Tensor out = view_ops().permute.redispatch(kSelf, self, dims);
  DimVector wrapped(dims.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) wrapped[i] = wrap_dim(dims[i], self.dim(), "permute");
  record_view(out, self, ViewKind::Permute, wrapped);
  return out;
}

Tensor ag_expand(const Tensor& self, IntArrayRef shape) {
  Tensor out = view_ops().expand.redispatch(kSelf, self, shape);
  record_view(out, self, ViewKind::Expand, {});
  return out;
}

Tensor ag_transpose(const Tensor& self, int64_t d0, int64_t d1) {
  Tensor out = view_ops().transpose.redispatch(kSelf, self, d0, d1);
  if (self.dim() == 0) {
    record_view(out, self, ViewKind::View, {});  // an alias
    return out;
  }
  const int64_t n = self.dim();
  record_view(out, self, ViewKind::Transpose, {wrap_dim(d0, n, "transpose"), wrap_dim(d1, n, "transpose")});
  return out;
}

Tensor ag_t(const Tensor& self) {
  Tensor out = view_ops().t.redispatch(kSelf, self);
  if (self.dim() < 2) record_view(out, self, ViewKind::View, {});  // an alias
  else record_view(out, self, ViewKind::Transpose, {0, 1});
  return out;
}

Tensor ag_select(const Tensor& self, int64_t d, int64_t index) {
  Tensor out = view_ops().select.redispatch(kSelf, self, d, index);
  d = wrap_dim(d, self.dim(), "select");
  if (index < 0) index += self.size(d);
  record_view(out, self, ViewKind::Select, {d, index});
  return out;
}

Tensor ag_slice(const Tensor& self, int64_t d, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  Tensor out = view_ops().slice.redispatch(kSelf, self, d, start, end, step);
  d = wrap_dim(d, self.dim(), "slice");
  record_view(out, self, ViewKind::Slice, {d, ops::slice_start(start, self.size(d)), step, out.size(d)});
  return out;
}

Tensor ag_squeeze(const Tensor& self) {
  Tensor out = view_ops().squeeze.redispatch(kSelf, self);
  record_view(out, self, ViewKind::Squeeze, {});
  return out;
}

Tensor ag_squeeze_dim(const Tensor& self, int64_t d) {
  Tensor out = view_ops().squeeze_dim.redispatch(kSelf, self, d);
  const bool alias = self.dim() == 0 || self.size(d) != 1;
  record_view(out, self, alias ? ViewKind::View : ViewKind::Squeeze, {});
  return out;
}

Tensor ag_unsqueeze(const Tensor& self, int64_t d) {
  Tensor out = view_ops().unsqueeze.redispatch(kSelf, self, d);
  record_view(out, self, ViewKind::Unsqueeze, {});
  return out;
}

// diagonal and unfold: the same view of the base's positions (Note [Views by positions]).
Tensor base_positions(const Tensor& base) { return arange(base.numel(), TensorOptions(kInt64)).view(base.sizes()); }

Tensor ag_unfold(const Tensor& self, int64_t d, int64_t size, int64_t step) {
  Tensor out = view_ops().unfold.redispatch(kSelf, self, d, size, step);
  record_positions_view(out, self, base_positions(self).unfold(d, size, step));
  return out;
}

Tensor ag_diagonal(const Tensor& self, int64_t offset, int64_t d1, int64_t d2) {
  Tensor out = view_ops().diagonal.redispatch(kSelf, self, offset, d1, d2);
  record_positions_view(out, self, base_positions(self).diagonal(offset, d1, d2));
  return out;
}

Tensor ag_as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> offset) {
  Tensor out = view_ops().as_strided.redispatch(kSelf, self, sizes, strides, offset);
  if (self.is_meta()) {  // no storage to find positions in; meta tensors never run backward
    record_view(out, self, ViewKind::AsStrided, {});
    return out;
  }
  // Note [as_strided backward]
  // The view's gradient goes to the input elements it reads (Note [Positions in a base]); then
  // it is one "by positions" (Note [Views by positions]).
  record_positions_view(out, self, positions_in(self, sizes, strides, out.storage_offset(), "as_strided"));
  return out;
}

Tensor ag_conj(const Tensor& self) {
  Tensor out = view_ops().conj.redispatch(kSelf, self);
  if (self.is_complex()) record_view(out, self, ViewKind::Conj, {});  // else out is self, history included
  return out;
}

// Of a lazily conjugated tensor, real() and imag() are made of dispatched ops that record.
Tensor ag_real(const Tensor& self) {
  Tensor out = view_ops().real.redispatch(kSelf, self);
  if (self.is_complex() && !self.is_conj()) record_view(out, self, ViewKind::Real, {});
  return out;
}

Tensor ag_imag(const Tensor& self) {
  Tensor out = view_ops().imag.redispatch(kSelf, self);
  if (!self.is_conj()) record_view(out, self, ViewKind::Imag, {});
  return out;
}
}  // namespace

void register_view_nodes() {
  ops::ViewOpDefs& v = view_ops();
  v.view.set(kSelf, &ag_view);
  v.permute.set(kSelf, &ag_permute);
  v.expand.set(kSelf, &ag_expand);
  v.transpose.set(kSelf, &ag_transpose);
  v.t.set(kSelf, &ag_t);
  v.select.set(kSelf, &ag_select);
  v.slice.set(kSelf, &ag_slice);
  v.squeeze.set(kSelf, &ag_squeeze);
  v.squeeze_dim.set(kSelf, &ag_squeeze_dim);
  v.unsqueeze.set(kSelf, &ag_unsqueeze);
  v.unfold.set(kSelf, &ag_unfold);
  v.diagonal.set(kSelf, &ag_diagonal);
  v.as_strided.set(kSelf, &ag_as_strided);
  v.conj.set(kSelf, &ag_conj);
  v.real.set(kSelf, &ag_real);
  v.imag.set(kSelf, &ag_imag);
  // detach has no Autograd kernel (its alias has no history), nor do the composites reshape,
  // narrow, flatten and unflatten (their pieces record).
}

}  // namespace tensor::autograd
