// Hand-written nodes of fractional_max_pool2d/3d (Note [Hand-written nodes] in Views.cpp): they
// return (output, indices), and the recording template (src/autograd/Record.h) makes nodes for
// single-output ops only. The output's gradient is summed at the returned indices by the
// fractional_max_pool*_backward op (a row of Derivatives.cpp, so double backward works); the
// indices are not differentiable. Node names are PyTorch's.
#include "src/autograd/Functions.h"
#include "src/autograd/UnpoolFormulas.h"
#include "src/ops/UnpoolOps.h"
#include "tensor/ops.h"

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
  // saved: the indices; ints: kernel_size then output_size. The backward op reads only the
  // shape of its `self` (libtorch's saves self itself), so it gets a zero-stride stand-in of
  // x's shape, dtype and device from the input's meta: x is not saved, and an in-place write
  // to x after the pool does not break backward (Note [Save only what a needed formula reads]).
  auto node = std::make_shared<FormulaNode>(
      Dims == 2 ? "FractionalMaxPool2DBackward0" : "FractionalMaxPool3DBackward0", TENSOR_GRAD(
          auto& bwd = Dims == 2 ? unpool_ops().fractional_max_pool2d_backward
                                : unpool_ops().fractional_max_pool3d_backward;
          const int64_t* ints = n.ints.data();
          const InputMeta& m = n.input_meta(0);
          Tensor self_shape = zeros({}, TensorOptions(m.dtype).device(m.device)).expand(m.sizes.ref());
          return {bwd(g, self_shape, IntArrayRef(ints, Dims), IntArrayRef(ints + Dims, Dims), n.saved(0))};));
  node->add_input(x);
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
