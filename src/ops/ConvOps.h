// Internal: the convolution op table and its backend kernels (Note [Front ends and backend
// kernels]). CPU's kernels: src/cpu/Conv.h (the entries, which pick oneDNN or the plain loops
// of kernels/cpu/ConvKernels.h). The parameters every backend's kernel takes, ConvParams, are
// the backend-neutral kernels/Conv.h.
//
// Every public convolution (conv1d/2d/3d, conv_transpose1d/2d/3d, the "same"/"valid" forms)
// checks its arguments in src/ops/ConvOps.cpp, adds a batch dim to unbatched inputs and calls
// one internal op, `convolution`, on batched inputs. Its backward, `convolution_backward`, is a
// second table entry used by autograd (src/autograd/ConvFormulas.cpp).
//
// Note [Convolution padding]
// The internal op takes left and right padding per spatial dim, as oneDNN does, instead of
// libtorch's padding and output_padding:
//   convolution:            out = (in + pad_l + pad_r - dilation * (k - 1) - 1) / stride + 1
//   transposed convolution: out = (in - 1) * stride - pad_l - pad_r + dilation * (k - 1) + 1
// so "same" with an odd total padding is pad_r = pad_l + 1 (no padded copy of the input), and a
// transposed convolution's output_padding is pad_r = padding - output_padding. pad_r may be
// negative (input elements that no output uses): output_padding > padding, and the gradient
// formulas, which size every convolution exactly.
#pragma once

#include <array>
#include <tuple>

#include "kernels/Conv.h"  // ConvParams
#include "src/dispatch/Dispatcher.h"

namespace tensor {
namespace ops {

/// (input, weight, bias (may be undefined), stride, pad_l, pad_r, dilation, transposed, groups).
using ConvolutionFn = Tensor(const Tensor&, const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                             IntArrayRef, bool, int64_t);
/// (grad_output, input, weight, stride, pad_l, pad_r, dilation, transposed, groups, which of
/// grad_input, grad_weight, grad_bias to compute) -> those gradients (undefined where not asked).
using ConvolutionBackwardFn = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                                 IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef,
                                                                 bool, int64_t, std::array<bool, 3>);

/// Backend kernel of convolution: out (non-empty, allocated by the front end in the input's
/// layout, Note [Channels-last layout]) = convolution(input, weight) + bias (may be undefined).
using ConvolutionKernel = void (*)(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                   const kernels::ConvParams& p, const Tensor& out);
/// Backend kernel of convolution_backward: fills the defined ones of grad_input, grad_weight and
/// grad_bias (allocated by the front end); grad may differ from the input's dtype.
using ConvolutionBackwardKernel = void (*)(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                           const kernels::ConvParams& p, const Tensor& grad_input,
                                           const Tensor& grad_weight, const Tensor& grad_bias);

struct ConvOpDefs {
  dispatch::OpDef<ConvolutionFn> convolution;
  dispatch::OpDef<ConvolutionBackwardFn> convolution_backward;
};

/// The one table of convolution ops (CPU and Meta front ends; Autograd filled lazily).
ConvOpDefs& conv_ops();

/// Registers a backend's (CUDA's) kernel.
void register_kernel(DispatchKey backend, ConvolutionKernel kernel);
void register_kernel(DispatchKey backend, ConvolutionBackwardKernel kernel);

}  // namespace ops

}  // namespace tensor
