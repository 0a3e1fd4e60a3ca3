// libtorch's in-place shape ops (unsqueeze_, squeeze_, t_, transpose_) and Tensor::detach_: they
// change a TensorImpl's own geometry or history, which every handle to it sees, so they live
// beside the autograd state they update rather than in the view ops' geometry functions.
#include <algorithm>
#include <vector>

#include "src/autograd/Functions.h"
#include "src/core/Check.h"
#include "tensor/ops.h"
#include "tensor/ported_ops.h"

namespace tensor {

namespace {

using autograd::AutogradMeta;

// Note [In-place views]
// x.unsqueeze_(d) is x.unsqueeze(d) written back into x: the out-of-place view (which records
// its own view node when x requires grad) gives the new sizes, strides and offset, and x's
// TensorImpl takes them. When recording, x also takes the view's history (grad_fn and output
// number), so a later backward through x runs UnsqueezeBackward and then x's old history, as
// libtorch records its in-place view ops. libtorch refuses them on a leaf that requires grad,
// and on a view of one, with grad mode on (the leaf's own shape would disagree with its
// gradient's); so does this. A view of a recorded tensor keeps its view base: its history is
// rebuilt from the base and its (new) geometry when the base is written later, which stays
// right because it is computed from positions, not from the view op's parameters.
template <class MakeView>
const Tensor& inplace_view(const Tensor& self, const char* op, MakeView make_view) {
  const bool record = autograd::GradMode::is_enabled() && self.requires_grad();
  if (record) {
    TENSOR_CHECK(!self.is_leaf(),
                 "{}: a leaf Variable that requires grad is being used in an in-place operation ({}); do it under "
                 "NoGradGuard, or on a non-leaf (x * 1) or a detach()ed tensor", op, self.describe());
    const AutogradMeta* m = self.unsafeGetTensorImpl()->autograd_meta();
    TENSOR_CHECK(!(m && m->view_base_.defined() && m->view_base_.is_leaf() && m->view_base_.requires_grad()),
                 "{}: a view of a leaf Variable that requires grad is being used in an in-place operation ({})", op,
                 self.describe());
  }
  Tensor v = make_view(self);
  TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_and_strides(v.sizes(), v.strides(), v.storage_offset());
  if (record) {
    AutogradMeta& m = autograd::materialize_meta(self);
    const AutogradMeta* vm = v.unsafeGetTensorImpl()->autograd_meta();
    TENSOR_CHECK(vm && vm->grad_fn_, "{}: internal error: the view recorded no history", op);
    m.grad_fn_ = vm->grad_fn_;
    m.output_nr_ = vm->output_nr_;
    m.view_version_ = self._version();
  }
  return self;
}

}  // namespace

Tensor& Tensor::unsqueeze_(int64_t dim) const {
  return const_cast<Tensor&>(inplace_view(*this, "unsqueeze_", [&](const Tensor& t) { return t.unsqueeze(dim); }));
}
Tensor& Tensor::squeeze_() const {
  return const_cast<Tensor&>(inplace_view(*this, "squeeze_", [](const Tensor& t) { return t.squeeze(); }));
}
Tensor& Tensor::squeeze_(int64_t dim) const {
  return const_cast<Tensor&>(inplace_view(*this, "squeeze_", [&](const Tensor& t) { return t.squeeze(dim); }));
}
Tensor& Tensor::squeeze_(IntArrayRef dims) const {
  const int64_t n = dim();
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) {
    const int64_t m = std::max<int64_t>(n, 1);
    TENSOR_CHECK(d >= -m && d < m, "squeeze_: dimension {} out of range for a tensor of shape {} (expected in [{}, {}])",
                 d, detail::shape_str(sizes()), -m, m - 1);
    const int64_t w = d < 0 ? d + m : d;
    TENSOR_CHECK(std::find(wrapped.begin(), wrapped.end(), w) == wrapped.end(),
                 "squeeze_: dim {} appears multiple times in the list of dims", w);
    wrapped.push_back(w);
  }
  // Highest first, so that dropping one leaves the positions of the rest unchanged.
  std::sort(wrapped.rbegin(), wrapped.rend());
  return const_cast<Tensor&>(inplace_view(*this, "squeeze_", [&](const Tensor& t) {
    Tensor r = t;
    for (int64_t d : wrapped) r = r.squeeze(d);
    return r;
  }));
}
Tensor& Tensor::t_() const {
  TENSOR_CHECK(dim() <= 2, "t_: expects a tensor with <= 2 dimensions, but self is {}", describe());
  return const_cast<Tensor&>(inplace_view(*this, "t_", [](const Tensor& t) { return t.t(); }));
}
Tensor& Tensor::transpose_(int64_t d0, int64_t d1) const {
  return const_cast<Tensor&>(inplace_view(*this, "transpose_", [&](const Tensor& t) { return t.transpose(d0, d1); }));
}

Tensor& Tensor::detach_() const { return tensor::detach_(const_cast<Tensor&>(*this)); }

// Note [Inference tensors]
// The flag lives in the storage, set when the memory is allocated inside InferenceMode, so a
// view of an inference tensor is one too, made inside the scope or not, as in libtorch. Unlike
// libtorch nothing else changes yet: inference tensors may still be used with autograd
// outside the scope.
bool Tensor::is_inference() const { return checked()->storage()->is_inference(); }

}  // namespace tensor
