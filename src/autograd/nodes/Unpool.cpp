// Hand-written nodes of fractional_max_pool2d/3d (Note [Hand-written nodes] in Views.cpp): they
// return (output, indices), and the recording template (src/autograd/Record.h) makes nodes for
// single-output ops only. The output's gradient is summed at the returned indices by the
// fractional_max_pool*_backward op (a row of Derivatives.cpp, so double backward works); the
// indices are not differentiable. Node names are PyTorch's.
#include "src/autograd/Functions.h"
#include "src/autograd/UnpoolFormulas.h"
#include "src/ops/UnpoolOps.h"

namespace tensor::autograd {
namespace {

using ops::unpool_ops;

template <int Dims>
std::tuple<Tensor, Tensor> ag_fractional_max_pool(const Tensor& x, IntArrayRef kernel_size, IntArrayRef output_size,
                                                  const Tensor& samples) {
  auto& def = Dims == 2 ? unpool_ops().fractional_max_pool2d : unpool_ops().fractional_max_pool3d;
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = def(x, kernel_size, output_size, samples);
  }
  const Tensor& out = std::get<0>(r);
  if (!is_differentiable(out.dtype()) || !any_requires_grad({&x})) return r;
  // saved: self (its shape and the backward's edge, as libtorch), indices; ints: kernel_size
  // then output_size.
  auto node = std::make_shared<FormulaNode>(
      Dims == 2 ? "FractionalMaxPool2DBackward0" : "FractionalMaxPool3DBackward0", TENSOR_GRAD(
          auto& bwd = Dims == 2 ? unpool_ops().fractional_max_pool2d_backward
                                : unpool_ops().fractional_max_pool3d_backward;
          const int64_t* ints = n.ints.data();
          return {bwd(g, n.saved(0), IntArrayRef(ints, Dims), IntArrayRef(ints + Dims, Dims), n.saved(1))};));
  node->add_input(x);
  node->save(x);
  node->save(std::get<1>(r));
  node->ints = DimVector(kernel_size);
  for (int64_t v : output_size) node->ints.push_back(v);
  set_history(out, node);
  return r;
}

}  // namespace

void register_unpool_nodes() {
  unpool_ops().fractional_max_pool2d.set(DispatchKey::Autograd, &ag_fractional_max_pool<2>);
  unpool_ops().fractional_max_pool3d.set(DispatchKey::Autograd, &ag_fractional_max_pool<3>);
}

}  // namespace tensor::autograd
