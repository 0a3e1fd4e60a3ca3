// Derivatives of sort and topk (see Note [Derivatives table]): the values are elements of the
// input picked by the returned positions, so their gradient is scattered back to those
// positions (PyTorch's value_selecting_reduction_backward); the positions are distinct within
// a slice. scatter_add is differentiable in its src (its gradient is a gather), so double
// backward works. The indices get no gradient.
#include "src/autograd/Functions.h"
#include "src/ops/SortOps.h"
#include "tensor/ops.h"

namespace tensor::autograd {
namespace {

#define GRAD TENSOR_GRAD

// saved: indices; ints: the wrapped dim.
BackwardFn select_backward() {
  return GRAD(
      const InputMeta& m = n.input_meta(0);
      if (m.sizes.empty()) return {g};
      return {zeros(m.sizes, TensorOptions(g.dtype()).device(g.device())).scatter_add(n.ints[0], n.saved(0), g)};);
}

std::tuple<Tensor, Tensor> record(const char* name, const Tensor& x, int64_t dim, std::tuple<Tensor, Tensor> r) {
  const Tensor& values = std::get<0>(r);
  if (!is_differentiable(values.dtype()) || !any_requires_grad({&x})) return r;
  auto node = std::make_shared<FormulaNode>(name, select_backward());
  node->add_input(x);
  node->save(std::get<1>(r));
  // The kernel has validated dim already.
  node->ints.push_back(x.dim() == 0 ? 0 : (dim < 0 ? dim + x.dim() : dim));
  set_history(values, node, 0);
  return r;
}

std::tuple<Tensor, Tensor> ag_sort(const Tensor& x, int64_t dim, bool descending) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = ops::sort_ops().sort(x, dim, descending);
  }
  return record("SortBackward0", x, dim, std::move(r));
}

std::tuple<Tensor, Tensor> ag_topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = ops::sort_ops().topk(x, k, dim, largest, sorted);
  }
  return record("TopkBackward0", x, dim, std::move(r));
}

#undef GRAD

}  // namespace

void register_sort_derivatives() {
  auto& s = ops::sort_ops();
  s.sort.set(DispatchKey::Autograd, &ag_sort);
  s.topk.set(DispatchKey::Autograd, &ag_topk);
}

}  // namespace tensor::autograd
