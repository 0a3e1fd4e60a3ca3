// Front ends of the upsampling ops: libtorch's argument rules and output sizes, checks that
// name the op, the shapes and dtypes, and the dispatcher table (src/ops/UpsampleOps.h). Meta
// stops before the kernel. Derivatives: rows of src/autograd/Derivatives.cpp (the op and its
// backward are adjoint linear maps).
#include "src/ops/UpsampleOps.h"

#include "kernels/cpu/UpsampleKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/nn/upsampling.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {

using detail::shape_str;
using dispatch::BackendKernels;

BackendKernels<UpsampleBicubicKernel> g_upsample_bicubic2d{{&cpu::loops::upsample_bicubic2d, nullptr}};
BackendKernels<UpsampleBicubicBwdKernel> g_upsample_bicubic2d_backward{
    {&cpu::loops::upsample_bicubic2d_backward, nullptr}};

// The geometry of input sizes [N, C, H, W] resized to output_size [OH, OW].
kernels::Upsample2d geometry(const char* op, IntArrayRef in_sizes, IntArrayRef output_size, bool align_corners,
                             std::optional<double> scales_h, std::optional<double> scales_w) {
  TENSOR_CHECK(output_size.size() == 2, "{}: It is expected output_size equals to 2, but got size {} (output_size {})",
               op, output_size.size(), shape_str(output_size));
  TENSOR_CHECK(in_sizes.size() == 4, "{}: It is expected input_size equals to 4, but got size {} (input {})", op,
               in_sizes.size(), shape_str(in_sizes));
  TENSOR_CHECK(in_sizes[2] > 0 && in_sizes[3] > 0 && output_size[0] > 0 && output_size[1] > 0,
               "{}: Input and output sizes should be greater than 0, but got input (H: {}, W: {}) output (H: {}, W: "
               "{})",
               op, in_sizes[2], in_sizes[3], output_size[0], output_size[1]);
  kernels::Upsample2d g;
  g.planes = in_sizes[0] * in_sizes[1];
  g.ih = in_sizes[2], g.iw = in_sizes[3], g.oh = output_size[0], g.ow = output_size[1];
  g.align_corners = align_corners;
  g.scales_h = scales_h, g.scales_w = scales_w;
  return g;
}

void check_floating(const char* op, const Tensor& x) {
  TENSOR_CHECK(x.is_floating_point(), "{}: expected a floating point tensor, got {}", op, x.describe());
}

template <DispatchKey K>
Tensor upsample_bicubic2d_fn(const Tensor& x, IntArrayRef output_size, bool align_corners,
                             std::optional<double> scales_h, std::optional<double> scales_w) {
  const char* op = "upsample_bicubic2d";
  const UpsampleBicubicKernel kernel = g_upsample_bicubic2d.get<K>(op);
  check_floating(op, x);
  TENSOR_CHECK(x.dim() == 4, "{}: Non-empty 4D data tensor expected but got {}", op, x.describe());
  const kernels::Upsample2d g = geometry(op, x.sizes(), output_size, align_corners, scales_h, scales_w);
  Tensor out = empty({x.size(0), x.size(1), g.oh, g.ow}, x.options());
  if constexpr (K != DispatchKey::Meta)
    if (out.numel() != 0) kernel(x.contiguous(), g, out);
  return out;
}

template <DispatchKey K>
Tensor upsample_bicubic2d_backward_fn(const Tensor& grad, IntArrayRef output_size, IntArrayRef input_size,
                                      bool align_corners, std::optional<double> scales_h,
                                      std::optional<double> scales_w) {
  const char* op = "upsample_bicubic2d_backward";
  const UpsampleBicubicBwdKernel kernel = g_upsample_bicubic2d_backward.get<K>(op);
  check_floating(op, grad);
  const kernels::Upsample2d g = geometry(op, input_size, output_size, align_corners, scales_h, scales_w);
  TENSOR_CHECK(grad.dim() == 4 && grad.size(0) == input_size[0] && grad.size(1) == input_size[1] &&
                   grad.size(2) == g.oh && grad.size(3) == g.ow,
               "{}: Expected grad_output to have the output's shape [{}, {}, {}, {}], but got {}", op, input_size[0],
               input_size[1], g.oh, g.ow, grad.describe());
  Tensor gi = empty(input_size, grad.options());
  if constexpr (K != DispatchKey::Meta)
    if (gi.numel() != 0) kernel(grad.contiguous(), g, gi);
  return gi;
}

UpsampleOpDefs g_upsample = {
    TENSOR_FRONT_END_DEF(UpsampleBicubicFn, "upsample_bicubic2d", upsample_bicubic2d_fn),
    TENSOR_FRONT_END_DEF(UpsampleBicubicBwdFn, "upsample_bicubic2d_backward", upsample_bicubic2d_backward_fn),
};

}  // namespace

UpsampleOpDefs& upsample_ops() { return g_upsample; }

void register_kernels(DispatchKey backend, const UpsampleKernels& k) {
  dispatch::check_kernel_backend(backend, "upsampling");
#define TENSOR_REGISTER_UPSAMPLE(op)                          \
  if (k.op != nullptr) {                                      \
    g_##op.set(backend, k.op);                                \
    g_upsample.op.set(backend, &op##_fn<DispatchKey::CUDA>);  \
  }
  TENSOR_REGISTER_UPSAMPLE(upsample_bicubic2d)
  TENSOR_REGISTER_UPSAMPLE(upsample_bicubic2d_backward)
#undef TENSOR_REGISTER_UPSAMPLE
}

}  // namespace ops

// ---- public functions ----
Tensor upsample_bicubic2d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  return ops::upsample_ops().upsample_bicubic2d(self, output_size, align_corners, scales_h, scales_w);
}
Tensor upsample_bicubic2d_backward(const Tensor& grad_output, IntArrayRef output_size, IntArrayRef input_size,
                                   bool align_corners, std::optional<double> scales_h,
                                   std::optional<double> scales_w) {
  return ops::upsample_ops().upsample_bicubic2d_backward(grad_output, output_size, input_size, align_corners,
                                                         scales_h, scales_w);
}

}  // namespace tensor
