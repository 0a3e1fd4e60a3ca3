// 2-d and 3-d pooling, spelled as libtorch's free functions (torch::max_pool2d, ...). Inputs are
// (N, C, H, W) or unbatched (C, H, W), floating point; the result has the same rank.
#pragma once

#include <optional>
#include <tuple>

#include "tensor/core/Tensor.h"

namespace tensor {

/// Max over each kernel window. `kernel_size`, `stride` (empty = kernel_size), `padding` and
/// `dilation` take one value for both dims or {h, w}. padding <= kernel / 2; padded positions
/// never win. ceil_mode rounds the output size up, keeping only windows that start inside the
/// input or the left padding (libtorch's rule). Without autograd, float32/bfloat16 run oneDNN,
/// which may skip a NaN that libtorch would return (max_pool2d_with_indices never does).
TENSOR_API Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                             IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
/// max_pool2d and the int64 index of each maximum, flat over its plane's H * W (as libtorch).
/// Ties and NaN pick as libtorch does: the first maximum in row-major window order, NaN wins.
TENSOR_API std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                              IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                              IntArrayRef dilation = 1, bool ceil_mode = false);
/// Mean over each kernel window. count_include_pad counts padded zeros in the divisor (windows
/// that ceil_mode extends past the right padding are clipped first, as libtorch);
/// divisor_override, when given, replaces the divisor altogether.
TENSOR_API Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                             IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                             std::optional<int64_t> divisor_override = std::nullopt);
/// Mean over output_size = {oh, ow} windows that tile the input: window i spans
/// [floor(i * H / oh), ceil((i + 1) * H / oh)).
TENSOR_API Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);


// ---- 3-d pooling and adaptive max pooling (libtorch's torch::max_pool3d, ...): inputs are
// (N, C, D, H, W) or unbatched (C, D, H, W); adaptive_max_pool2d takes (N, C, H, W) or (C, H, W),
// adaptive_max_pool1d (N, C, L) or (C, L). Arguments of size 3 take one value for all dims or
// {d, h, w}, with the same rules as the 2-d ops.

/// Max over each kernel window of a 5-d (or unbatched 4-d) input; rules as max_pool2d.
TENSOR_API Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                             IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
/// max_pool3d and the int64 index of each maximum, flat over its plane's D * H * W (as libtorch).
TENSOR_API std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                              IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                              IntArrayRef dilation = 1, bool ceil_mode = false);
/// Mean over each kernel window of a 5-d (or unbatched 4-d) input; divisors as avg_pool2d.
TENSOR_API Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                             IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                             std::optional<int64_t> divisor_override = std::nullopt);
/// Mean over output_size = {od, oh, ow} windows that tile the input (as adaptive_avg_pool2d).
TENSOR_API Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size);
/// Max over output_size = {ol} windows that tile L, and the int64 index of each maximum in L.
TENSOR_API std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size);
/// Max over output_size = {oh, ow} windows that tile the input, and each maximum's index flat
/// over its plane's H * W. Ties and NaN pick as max_pool2d_with_indices.
TENSOR_API std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
/// Max over output_size = {od, oh, ow} windows, and indices flat over each plane's D * H * W.
TENSOR_API std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size);

}  // namespace tensor

// ---- max unpooling and fractional max pooling (src/ops/UnpoolOps.cpp) ----
namespace tensor {

/// The inverse of max pooling: zeros of spatial size output_size = {oh, ow}, with self's values
/// written at `indices` (int64, self's shape, flat over each plane's oh * ow, as
/// max_pool2d_with_indices returns them). self: (N, C, H, W) or (C, H, W). An index outside
/// [0, oh * ow) is an error; where indices repeat, which value lands is unspecified (libtorch).
TENSOR_API Tensor max_unpool2d(const Tensor& self, const Tensor& indices, IntArrayRef output_size);
/// max_unpool2d in 3-d: self (N, C, D, H, W) or (C, D, H, W), output_size = {od, oh, ow},
/// indices flat over od * oh * ow. stride and padding (3 values each) are checked as libtorch
/// checks them; the result depends on the indices only.
TENSOR_API Tensor max_unpool3d(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                               IntArrayRef padding);
/// Fractional max pooling (Graham, 2014): max over kernel_size windows that start at
/// pseudo-random offsets, giving output_size = {oh, ow}. random_samples (N, C, 2), in [0, 1),
/// self's dtype, holds each plane's samples for {w, h} (libtorch's rule: alpha = (in - k) /
/// (out - 1), start[i] = floor((i + u) * alpha) - floor(u * alpha), the last = in - k).
/// Returns (output, int64 indices flat over H * W).
TENSOR_API std::tuple<Tensor, Tensor> fractional_max_pool2d(const Tensor& self, IntArrayRef kernel_size,
                                                            IntArrayRef output_size, const Tensor& random_samples);
/// fractional_max_pool2d in 3-d: self (N, C, T, H, W) or (C, T, H, W), random_samples (N, C, 3)
/// for {t, h, w}; indices flat over T * H * W.
TENSOR_API std::tuple<Tensor, Tensor> fractional_max_pool3d(const Tensor& self, IntArrayRef kernel_size,
                                                            IntArrayRef output_size, const Tensor& random_samples);
/// The gradient of fractional_max_pool2d's input: grad_output summed at the indices.
TENSOR_API Tensor fractional_max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                                 IntArrayRef output_size, const Tensor& indices);
/// The gradient of fractional_max_pool3d's input: grad_output summed at the indices.
TENSOR_API Tensor fractional_max_pool3d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                                 IntArrayRef output_size, const Tensor& indices);

}  // namespace tensor
