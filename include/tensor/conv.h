// Convolutions, spelled as libtorch's torch::conv1d/conv2d/conv3d and conv_transpose{1,2,3}d.
//
// Inputs are (N, C, spatial...) or, unbatched, (C, spatial...). Weights are (out_channels,
// in_channels / groups, kernel...) for convolutions and (in_channels, out_channels / groups,
// kernel...) for transposed convolutions. stride, padding, dilation and output_padding take one
// value (used for every spatial dim) or one per spatial dim. Channels-last (NHWC-strided)
// inputs are computed without a copy to NCHW and give channels-last outputs.
// float32 and bfloat16 run on oneDNN, float16 through float32; float64 on reference loops.
#pragma once

#include <optional>
#include <string_view>
#include <type_traits>

#include "tensor/core/Tensor.h"

namespace tensor {

namespace detail {
template <class S>
using if_padding_string = std::enable_if_t<std::is_convertible_v<const S&, std::string_view> && !std::is_arithmetic_v<S>, int>;
/// The padding="valid"/"same" form of conv{1,2,3}d (spatial_dims = 1, 2, 3).
TENSOR_API Tensor conv_padding_mode(int64_t spatial_dims, const Tensor& input, const Tensor& weight,
                                    const std::optional<Tensor>& bias, IntArrayRef stride, std::string_view padding,
                                    IntArrayRef dilation, int64_t groups);
}  // namespace detail

/// 1-D convolution of (N, C_in, L) or (C_in, L) with weight (C_out, C_in / groups, k).
TENSOR_API Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                         IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
                         int64_t groups = 1);
/// 2-D convolution of (N, C_in, H, W) or (C_in, H, W) with weight (C_out, C_in / groups, kh, kw).
TENSOR_API Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                         IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
                         int64_t groups = 1);
/// 3-D convolution of (N, C_in, D, H, W) or (C_in, D, H, W) with weight (C_out, C_in / groups, kd, kh, kw).
TENSOR_API Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                         IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
                         int64_t groups = 1);

/// conv1d with padding "valid" (none) or "same" (output length = input length; needs stride 1;
/// an odd total padding puts the extra element on the right, as libtorch).
template <class S, detail::if_padding_string<S> = 0>
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(1, input, weight, bias, stride, std::string_view(padding), dilation, groups);
}
/// conv2d with padding "valid" or "same" (see conv1d).
template <class S, detail::if_padding_string<S> = 0>
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(2, input, weight, bias, stride, std::string_view(padding), dilation, groups);
}
/// conv3d with padding "valid" or "same" (see conv1d).
template <class S, detail::if_padding_string<S> = 0>
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(3, input, weight, bias, stride, std::string_view(padding), dilation, groups);
}

/// Transposed 1-D convolution (the gradient of conv1d with respect to its input) of (N, C_in, L)
/// or (C_in, L) with weight (C_in, C_out / groups, k). output_padding (< stride or dilation)
/// adds to one side of the output. Argument order as libtorch.
TENSOR_API Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                                   IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef output_padding = 0,
                                   int64_t groups = 1, IntArrayRef dilation = 1);
/// Transposed 2-D convolution of (N, C_in, H, W) or (C_in, H, W) with weight (C_in, C_out / groups, kh, kw).
TENSOR_API Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                                   IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef output_padding = 0,
                                   int64_t groups = 1, IntArrayRef dilation = 1);
/// Transposed 3-D convolution of (N, C_in, D, H, W) or (C_in, D, H, W) with weight (C_in, C_out / groups, kd, kh, kw).
TENSOR_API Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {},
                                   IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef output_padding = 0,
                                   int64_t groups = 1, IntArrayRef dilation = 1);

/// Unfolds sliding kh x kw blocks of (N, C, H, W) or (C, H, W) into columns: (N, C * kh * kw, L)
/// or (C * kh * kw, L), L the number of block positions, as libtorch's at::im2col. Row
/// c * kh * kw + i * kw + j holds kernel element (i, j) of channel c.
TENSOR_API Tensor im2col(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                         IntArrayRef stride);
/// The adjoint of im2col: sums the columns (N, C * kh * kw, L) or (C * kh * kw, L) back into
/// (N, C, H, W) or (C, H, W) with (H, W) = output_size, as libtorch's at::col2im.
TENSOR_API Tensor col2im(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                         IntArrayRef padding, IntArrayRef stride);

}  // namespace tensor
