// Front ends of the convolutions: argument checks (errors name the op, the shapes and dtypes),
// int-or-list parameters, "valid"/"same" padding, unbatched inputs, output shapes, and the
// dispatcher table (src/ops/ConvOps.h). convolution and convolution_backward are front ends
// (Note [Front ends and backend kernels]): output shapes and layouts and their allocation, then
// the backend's kernel; CPU's (src/cpu/ConvKernel.cpp) picks oneDNN (float32, bfloat16; float16
// through float32) or the reference loops (float64).
#include "src/ops/ConvOps.h"
#include "src/cpu/Conv.h"
#include "src/dispatch/BackendKernels.h"
#include "src/ops/CompositeOps.h"

#include <algorithm>

#include "src/core/Check.h"
#include "src/cpu/Layout.h"
#include "tensor/conv.h"
#include "tensor/ops.h"

namespace tensor {

namespace ops {
namespace {

using kernels::ConvParams;

// The per-backend kernels: CPU's built in (src/cpu/ConvKernel.cpp), CUDA's registered.
dispatch::BackendKernels<ConvolutionKernel> g_conv_kernels{{&cpu::convolution_kernel, nullptr}};
dispatch::BackendKernels<ConvolutionBackwardKernel> g_conv_backward_kernels{{&cpu::convolution_backward_kernel, nullptr}};

/// Output spatial sizes (Note [Convolution padding]).
DimVector output_sizes(const Tensor& input, const Tensor& weight, const ConvParams& p) {
  DimVector out{input.size(0), p.transposed ? weight.size(1) * p.groups : weight.size(0)};
  for (int64_t i = 0; i < p.spatial(); ++i) {
    const int64_t in = input.size(2 + i), k = p.dilation[i] * (weight.size(2 + i) - 1) + 1;
    out.push_back(p.transposed ? (in - 1) * p.stride[i] - p.pad_l[i] - p.pad_r[i] + k
                               : (in + p.pad_l[i] + p.pad_r[i] - k) / p.stride[i] + 1);
  }
  return out;
}

/// An activation-shaped result laid out as `like` prefers (Note [Channels-last layout]).
Tensor empty_like_layout(IntArrayRef sizes, const Tensor& like, ScalarType t) {
  return cpu::empty_in_layout_of(sizes, like, like.options().dtype(t));
}

ConvParams make_params(IntArrayRef stride, IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation,
                       bool transposed, int64_t groups) {
  ConvParams p;
  p.stride = stride;
  p.pad_l = pad_l;
  p.pad_r = pad_r;
  p.dilation = dilation;
  p.transposed = transposed;
  p.groups = groups;
  return p;
}

// ---- front ends (the CPU, CUDA and Meta instances) ----

template <DispatchKey K>
Tensor convolution_fn(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                      IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation, bool transposed, int64_t groups) {
  const ConvolutionKernel kernel = g_conv_kernels.get<K>("convolution");
  const ConvParams p = make_params(stride, pad_l, pad_r, dilation, transposed, groups);
  Tensor out = empty_like_layout(output_sizes(input, weight, p), input, input.scalar_type());
  if constexpr (K != DispatchKey::Meta)
    if (out.numel() != 0) kernel(input, weight, bias, p, out);
  return out;
}

template <DispatchKey K>
std::tuple<Tensor, Tensor, Tensor> convolution_backward_fn(const Tensor& grad, const Tensor& input,
                                                           const Tensor& weight, IntArrayRef stride,
                                                           IntArrayRef pad_l, IntArrayRef pad_r,
                                                           IntArrayRef dilation, bool transposed, int64_t groups,
                                                           std::array<bool, 3> mask) {
  const ConvolutionBackwardKernel kernel = g_conv_backward_kernels.get<K>("convolution_backward");
  const ConvParams p = make_params(stride, pad_l, pad_r, dilation, transposed, groups);
  const ScalarType t = input.scalar_type();
  Tensor gi = mask[0] ? empty_like_layout(input.sizes(), input, t) : Tensor();
  Tensor gw = mask[1] ? empty(weight.sizes(), weight.options()) : Tensor();
  Tensor gb = mask[2] ? empty({grad.size(1)}, grad.options().dtype(t)) : Tensor();
  if constexpr (K != DispatchKey::Meta) kernel(grad, input, weight, p, gi, gw, gb);
  return {gi, gw, gb};
}

// The dispatcher table (constant-initialized; CUDA slots filled by register_kernel).
ConvOpDefs g_conv = {
    TENSOR_FRONT_END_DEF(ConvolutionFn, "convolution", convolution_fn),
    TENSOR_FRONT_END_DEF(ConvolutionBackwardFn, "convolution_backward", convolution_backward_fn),
};

}  // namespace

ConvOpDefs& conv_ops() { return g_conv; }

void register_kernel(DispatchKey backend, ConvolutionKernel kernel) {
  dispatch::check_kernel_backend(backend, "convolution");
  g_conv_kernels.set(backend, kernel);
  g_conv.convolution.set(backend, &convolution_fn<DispatchKey::CUDA>);
}

void register_kernel(DispatchKey backend, ConvolutionBackwardKernel kernel) {
  dispatch::check_kernel_backend(backend, "convolution_backward");
  g_conv_backward_kernels.set(backend, kernel);
  g_conv.convolution_backward.set(backend, &convolution_backward_fn<DispatchKey::CUDA>);
}

}  // namespace ops

// ---- public front ends ----
namespace {

using detail::shape_str;

/// One int-or-list argument expanded to one value per spatial dim.
DimVector expand_param(const char* op, const char* what, IntArrayRef v, int64_t nd) {
  TENSOR_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == nd,
               "{}: expected {} to be a single integer value or a list of {} values to match the convolution "
               "dimensions, but got {}={}",
               op, what, nd, what, shape_str(v));
  DimVector r;
  for (int64_t i = 0; i < nd; ++i) r.push_back(v.size() == 1 ? v[0] : v[i]);
  return r;
}

const char* weight_layout(bool transposed, int64_t nd) {
  static const char* const conv[] = {"(out_channels, in_channels / groups, k)",
                                     "(out_channels, in_channels / groups, kh, kw)",
                                     "(out_channels, in_channels / groups, kd, kh, kw)"};
  static const char* const tconv[] = {"(in_channels, out_channels / groups, k)",
                                      "(in_channels, out_channels / groups, kh, kw)",
                                      "(in_channels, out_channels / groups, kd, kh, kw)"};
  return (transposed ? tconv : conv)[nd - 1];
}

/// Checks everything about one convolution call; `padding` is the user's (symmetric) padding,
/// `extra_r` what "same" adds on the right.
void check_conv(const char* op, int64_t nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                IntArrayRef stride, IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation, bool transposed,
                IntArrayRef output_padding, int64_t groups) {
  TENSOR_CHECK(input.defined() && weight.defined(), "{}: input and weight must be defined tensors (got input {}, weight {})",
               op, input.describe(), weight.describe());
  TENSOR_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2,
               "{}: expected a {}-D (unbatched) or {}-D (batched) input, but got input of shape {}", op, nd + 1, nd + 2,
               shape_str(input.sizes()));
  TENSOR_CHECK(weight.dim() == nd + 2, "{}: expected a {}-D weight {}, but got weight of shape {}", op, nd + 2,
               weight_layout(transposed, nd), shape_str(weight.sizes()));
  TENSOR_CHECK(input.is_floating_point(), "{}: expected a floating point input, got {}", op, input.describe());
  TENSOR_CHECK(input.dtype() == weight.dtype(),
               "{}: input and weight must have the same dtype, got input {} and weight {}", op, input.describe(),
               weight.describe());
  TENSOR_CHECK(input.device() == weight.device(),
               "{}: input and weight must be on the same device, got input {} and weight {}", op, input.describe(),
               weight.describe());
  for (int64_t i = 0; i < nd; ++i) {
    TENSOR_CHECK(stride[i] > 0, "{}: stride must be positive, got stride={}", op, shape_str(stride));
    TENSOR_CHECK(dilation[i] > 0, "{}: dilation must be positive, got dilation={}", op, shape_str(dilation));
    TENSOR_CHECK(pad_l[i] >= 0, "{}: padding must be non-negative, got padding={}", op, shape_str(pad_l));
  }
  TENSOR_CHECK(groups > 0, "{}: groups must be positive, got groups={}", op, groups);
  const int64_t batch_dims = input.dim() - nd;  // 2 batched, 1 unbatched
  const int64_t cin = input.size(batch_dims - 1);
  const std::string shapes = fmt::format("input of shape {}, weight of shape {}", shape_str(input.sizes()),
                                         shape_str(weight.sizes()));
  int64_t cout;
  if (!transposed) {
    TENSOR_CHECK(weight.size(0) % groups == 0,
                 "{}: out_channels (weight.size(0) = {}) must be divisible by groups = {} ({})", op, weight.size(0),
                 groups, shapes);
    TENSOR_CHECK(cin == weight.size(1) * groups,
                 "{}: expected input with {} channels (weight.size(1) * groups = {} * {}), but got {} channels "
                 "({})",
                 op, weight.size(1) * groups, weight.size(1), groups, cin, shapes);
    cout = weight.size(0);
  } else {
    TENSOR_CHECK(weight.size(0) % groups == 0,
                 "{}: in_channels (weight.size(0) = {}) must be divisible by groups = {} ({})", op, weight.size(0),
                 groups, shapes);
    TENSOR_CHECK(cin == weight.size(0), "{}: expected input with {} channels (weight.size(0)), but got {} channels ({})",
                 op, weight.size(0), cin, shapes);
    cout = weight.size(1) * groups;
    for (int64_t i = 0; i < nd; ++i)
      TENSOR_CHECK(output_padding[i] >= 0 && (output_padding[i] < stride[i] || output_padding[i] < dilation[i]),
                   "{}: output_padding must be non-negative and smaller than either stride or dilation, got "
                   "output_padding={}, stride={}, dilation={}",
                   op, shape_str(output_padding), shape_str(stride), shape_str(dilation));
  }
  if (bias.defined()) {
    TENSOR_CHECK(bias.dim() == 1 && bias.size(0) == cout,
                 "{}: expected bias of shape [{}] (one value per output channel), but got bias of shape {} ({})", op,
                 cout, shape_str(bias.sizes()), shapes);
    TENSOR_CHECK(bias.dtype() == input.dtype() && bias.device() == input.device(),
                 "{}: bias must have the input's dtype and device, got input {} and bias {}", op, input.describe(),
                 bias.describe());
  }
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t in = input.size(batch_dims + i), k = dilation[i] * (weight.size(2 + i) - 1) + 1;
    if (!transposed) {
      TENSOR_CHECK(in + pad_l[i] + pad_r[i] >= k,
                   "{}: the (dilated) kernel is larger than the padded input in spatial dim {}: padded input size {}, "
                   "kernel size {} ({}, padding={}, dilation={})",
                   op, i, in + pad_l[i] + pad_r[i], k, shapes, shape_str(pad_l), shape_str(dilation));
    } else {
      const int64_t out = (in - 1) * stride[i] - pad_l[i] - pad_r[i] + k;
      TENSOR_CHECK(out > 0, "{}: the output size in spatial dim {} would be {} (not positive) ({}, stride={}, padding={})",
                   op, i, out, shapes, shape_str(stride), shape_str(pad_l));
      TENSOR_CHECK(in > 0, "{}: expected a non-empty spatial input, got {}", op, shapes);
    }
  }
}

Tensor bias_of(const std::optional<Tensor>& b) { return b ? *b : Tensor(); }

/// Checks, then runs the internal op on a batched input.
Tensor run_conv(const char* op, int64_t nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                IntArrayRef stride, IntArrayRef pad_l, IntArrayRef pad_r, IntArrayRef dilation, bool transposed,
                IntArrayRef output_padding, int64_t groups) {
  check_conv(op, nd, input, weight, bias, stride, pad_l, pad_r, dilation, transposed, output_padding, groups);
  const bool unbatched = input.dim() == nd + 1;
  Tensor out = ops::conv_ops().convolution(unbatched ? input.unsqueeze(0) : input, weight, bias, stride, pad_l, pad_r,
                                           dilation, transposed, groups);
  return unbatched ? out.squeeze(0) : out;
}

Tensor conv_nd(const char* op, int64_t nd, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const DimVector s = expand_param(op, "stride", stride, nd), p = expand_param(op, "padding", padding, nd),
                  d = expand_param(op, "dilation", dilation, nd);
  return run_conv(op, nd, input, weight, bias_of(bias), s, p, p, d, false, {}, groups);
}

Tensor conv_transpose_nd(const char* op, int64_t nd, const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                         IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  const DimVector s = expand_param(op, "stride", stride, nd), p = expand_param(op, "padding", padding, nd),
                  op_ = expand_param(op, "output_padding", output_padding, nd),
                  d = expand_param(op, "dilation", dilation, nd);
  DimVector pr;
  for (int64_t i = 0; i < nd; ++i) pr.push_back(p[i] - op_[i]);
  return run_conv(op, nd, input, weight, bias_of(bias), s, p, pr, d, true, op_, groups);
}

}  // namespace

namespace {
Tensor conv1d_composite(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(conv1d, ConvNdFn, conv1d_composite)
}  // namespace ops
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return ops::conv1d_op()(input, weight, bias, stride, padding, dilation, groups);
}
namespace {
Tensor conv2d_composite(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(conv2d, ConvNdFn, conv2d_composite)
}  // namespace ops
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return ops::conv2d_op()(input, weight, bias, stride, padding, dilation, groups);
}
namespace {
Tensor conv3d_composite(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(conv3d, ConvNdFn, conv3d_composite)
}  // namespace ops
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return ops::conv3d_op()(input, weight, bias, stride, padding, dilation, groups);
}
namespace {
Tensor conv_transpose1d_composite(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                                  IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(conv_transpose1d, ConvTransposeNdFn, conv_transpose1d_composite)
}  // namespace ops
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return ops::conv_transpose1d_op()(input, weight, bias, stride, padding, output_padding, groups, dilation);
}
namespace {
Tensor conv_transpose2d_composite(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                                  IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(conv_transpose2d, ConvTransposeNdFn, conv_transpose2d_composite)
}  // namespace ops
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return ops::conv_transpose2d_op()(input, weight, bias, stride, padding, output_padding, groups, dilation);
}
namespace {
Tensor conv_transpose3d_composite(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                                  IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation);
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(conv_transpose3d, ConvTransposeNdFn, conv_transpose3d_composite)
}  // namespace ops
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return ops::conv_transpose3d_op()(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

namespace detail {
Tensor conv_padding_mode(int64_t nd, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, std::string_view padding, IntArrayRef dilation, int64_t groups) {
  static const char* const names[] = {"conv1d", "conv2d", "conv3d"};
  TENSOR_CHECK(nd >= 1 && nd <= 3, "convolution: {} spatial dims are not supported", nd);
  const char* op = names[nd - 1];
  const DimVector s = expand_param(op, "stride", stride, nd), d = expand_param(op, "dilation", dilation, nd);
  DimVector pl(nd, 0), pr(nd, 0);
  if (padding == "same") {
    for (int64_t i = 0; i < nd; ++i)
      TENSOR_CHECK(s[i] == 1, "{}: padding='same' is not supported for strided convolutions (got stride={})", op,
                   shape_str(s));
    // As libtorch: total padding dilation * (k - 1), the odd element on the right.
    TENSOR_CHECK(weight.defined() && weight.dim() == nd + 2, "{}: expected a {}-D weight {}, but got weight {}", op,
                 nd + 2, weight_layout(false, nd), weight.describe());
    for (int64_t i = 0; i < nd; ++i) {
      const int64_t total = d[i] * (weight.size(2 + i) - 1);
      pl[i] = total / 2;
      pr[i] = total - pl[i];
    }
  } else {
    TENSOR_CHECK(padding == "valid", "{}: invalid padding string '{}' (expected \"valid\" or \"same\")", op, padding);
  }
  return run_conv(op, nd, input, weight, bias_of(bias), s, pl, pr, d, false, {}, groups);
}
}  // namespace detail

}  // namespace tensor
