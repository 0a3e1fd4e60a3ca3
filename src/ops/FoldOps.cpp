// Front ends of im2col and col2im (tensor::im2col / tensor::col2im, F::unfold / F::fold):
// libtorch's argument rules and messages (naming the op, the shapes and the dtype), the output
// shapes, allocation, then the backend's kernel (Meta stops before it). Unbatched inputs are
// handled by the kernels' geometry (n = 1), without views.
#include "src/ops/FoldOps.h"

#include <array>

#include "kernels/cpu/FoldKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/conv.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {

using detail::shape_str;

dispatch::BackendKernels<Im2colKernel> g_im2col{{&cpu::im2col, nullptr}};
dispatch::BackendKernels<Col2imKernel> g_col2im{{&cpu::col2im, nullptr}};

/// One of the four (h, w) arguments: exactly two values, as libtorch.
std::array<int64_t, 2> pair_arg(const char* op, const char* name, IntArrayRef v) {
  TENSOR_CHECK(v.size() == 2, "{}: it is expected {} equals to 2, but got size {} ({}={})", op, name, v.size(), name,
               shape_str(v));
  return {v[0], v[1]};
}

/// Checks the kernel, dilation, padding and stride and fills them into g.
void fill_params(const char* op, kernels::FoldGeometry& g, IntArrayRef kernel_size, IntArrayRef dilation,
                 IntArrayRef padding, IntArrayRef stride) {
  const auto k = pair_arg(op, "kernel_size", kernel_size), d = pair_arg(op, "dilation", dilation),
             p = pair_arg(op, "padding", padding), s = pair_arg(op, "stride", stride);
  TENSOR_CHECK(k[0] > 0 && k[1] > 0, "{}: kernel size should be greater than zero, but got kernel_size={}", op,
               shape_str(kernel_size));
  TENSOR_CHECK(d[0] > 0 && d[1] > 0, "{}: dilation should be greater than zero, but got dilation={}", op,
               shape_str(dilation));
  TENSOR_CHECK(p[0] >= 0 && p[1] >= 0, "{}: padding should be non-negative, but got padding={}", op,
               shape_str(padding));
  TENSOR_CHECK(s[0] > 0 && s[1] > 0, "{}: stride should be greater than zero, but got stride={}", op,
               shape_str(stride));
  g.kh = k[0], g.kw = k[1], g.dh = d[0], g.dw = d[1], g.ph = p[0], g.pw = p[1], g.sh = s[0], g.sw = s[1];
}

/// The number of block positions per spatial dim (may be < 1: the callers check).
void fill_blocks(kernels::FoldGeometry& g) {
  g.oh = (g.h + 2 * g.ph - (g.dh * (g.kh - 1) + 1)) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - (g.dw * (g.kw - 1) + 1)) / g.sw + 1;
  if (g.h + 2 * g.ph < g.dh * (g.kh - 1) + 1) g.oh = 0;  // C++ division truncates towards zero
  if (g.w + 2 * g.pw < g.dw * (g.kw - 1) + 1) g.ow = 0;
}

void check_floating(const char* op, const Tensor& t) {
  TENSOR_CHECK(t.defined(), "{}: expected a defined input tensor", op);
  TENSOR_CHECK(t.is_floating_point(), "{}: expected a floating point input, got {} of shape {}", op, t.dtype(),
               shape_str(t.sizes()));
}

template <DispatchKey K>
Tensor im2col_fn(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                 IntArrayRef stride) {
  const Im2colKernel kernel = g_im2col.get<K>("im2col");
  check_floating("im2col", input);
  const int64_t nd = input.dim();
  TENSOR_CHECK((nd == 3 || nd == 4) && input.size(nd - 1) > 0 && input.size(nd - 2) > 0 && input.size(nd - 3) > 0,
               "im2col: expected 3D (unbatched) or 4D (batched) input with possibly 0 batch size and other non-zero "
               "dimensions, but got input of shape {} ({})",
               shape_str(input.sizes()), input.dtype());
  kernels::FoldGeometry g;
  fill_params("im2col", g, kernel_size, dilation, padding, stride);
  g.n = nd == 4 ? input.size(0) : 1;
  g.c = input.size(nd - 3), g.h = input.size(nd - 2), g.w = input.size(nd - 1);
  fill_blocks(g);
  TENSOR_CHECK(g.oh >= 1 && g.ow >= 1,
               "im2col: given input with spatial size ({}, {}), kernel_size={}, dilation={}, padding={}, calculated "
               "shape of the array of sliding blocks as ({}, {}), but its components must be at least one (input of "
               "shape {})",
               g.h, g.w, shape_str(kernel_size), shape_str(dilation), shape_str(padding), g.oh, g.ow,
               shape_str(input.sizes()));
  DimVector sizes;
  if (nd == 4) sizes.push_back(g.n);
  sizes.push_back(g.c * g.kh * g.kw);
  sizes.push_back(g.oh * g.ow);
  Tensor out = empty(sizes, input.options());
  if constexpr (K != DispatchKey::Meta)
    if (out.numel() != 0) kernel(input, g, out);
  return out;
}

template <DispatchKey K>
Tensor col2im_fn(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                 IntArrayRef padding, IntArrayRef stride) {
  const Col2imKernel kernel = g_col2im.get<K>("col2im");
  check_floating("col2im", input);
  const int64_t nd = input.dim();
  TENSOR_CHECK((nd == 2 || nd == 3) && input.size(nd - 1) > 0 && input.size(nd - 2) > 0,
               "col2im: expected 2D (unbatched) or 3D (batched) input with possibly 0 batch size and non-zero "
               "dimensions, but got input of shape {} ({})",
               shape_str(input.sizes()), input.dtype());
  kernels::FoldGeometry g;
  fill_params("col2im", g, kernel_size, dilation, padding, stride);
  const auto o = pair_arg("col2im", "output_size", output_size);
  TENSOR_CHECK(o[0] > 0 && o[1] > 0, "col2im: output_size should be greater than zero, but got output_size={}",
               shape_str(output_size));
  const int64_t rows = input.size(nd - 2), kk = g.kh * g.kw;
  TENSOR_CHECK(rows % kk == 0,
               "col2im: expected size of input's dimension {} to be divisible by the product of kernel_size, but got "
               "input.size({})={}, kernel_size={} (input of shape {})",
               nd - 2, nd - 2, rows, shape_str(kernel_size), shape_str(input.sizes()));
  g.n = nd == 3 ? input.size(0) : 1;
  g.c = rows / kk, g.h = o[0], g.w = o[1];
  fill_blocks(g);
  TENSOR_CHECK(g.oh >= 1 && g.ow >= 1,
               "col2im: given output_size={}, kernel_size={}, dilation={}, padding={}, stride={}, calculated shape of "
               "the array of sliding blocks as ({}, {}), which is too small (non-positive) (input of shape {})",
               shape_str(output_size), shape_str(kernel_size), shape_str(dilation), shape_str(padding),
               shape_str(stride), g.oh, g.ow, shape_str(input.sizes()));
  TENSOR_CHECK(input.size(nd - 1) == g.oh * g.ow,
               "col2im: given output_size={}, kernel_size={}, dilation={}, padding={}, stride={}, expected size of "
               "input's dimension {} to match the calculated number of sliding blocks {} * {} = {}, but got "
               "input.size({})={} (input of shape {})",
               shape_str(output_size), shape_str(kernel_size), shape_str(dilation), shape_str(padding),
               shape_str(stride), nd - 1, g.oh, g.ow, g.oh * g.ow, nd - 1, input.size(nd - 1),
               shape_str(input.sizes()));
  DimVector sizes;
  if (nd == 3) sizes.push_back(g.n);
  sizes.push_back(g.c);
  sizes.push_back(g.h);
  sizes.push_back(g.w);
  Tensor out = empty(sizes, input.options());
  if constexpr (K != DispatchKey::Meta)
    if (out.numel() != 0) kernel(input, g, out);
  return out;
}

FoldOpDefs g_fold = {
    TENSOR_FRONT_END_DEF(Im2colFn, "im2col", im2col_fn),
    TENSOR_FRONT_END_DEF(Col2imFn, "col2im", col2im_fn),
};

}  // namespace

FoldOpDefs& fold_ops() { return g_fold; }

void register_kernel(DispatchKey backend, Im2colKernel im2col, Col2imKernel col2im) {
  dispatch::check_kernel_backend(backend, "im2col/col2im");
  g_im2col.set(backend, im2col);
  g_col2im.set(backend, col2im);
  g_fold.im2col.set(backend, &im2col_fn<DispatchKey::CUDA>);
  g_fold.col2im.set(backend, &col2im_fn<DispatchKey::CUDA>);
}

}  // namespace ops

Tensor im2col(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
              IntArrayRef stride) {
  return ops::fold_ops().im2col(input, kernel_size, dilation, padding, stride);
}

Tensor col2im(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
  return ops::fold_ops().col2im(input, output_size, kernel_size, dilation, padding, stride);
}

}  // namespace tensor
