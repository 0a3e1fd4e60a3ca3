// Max unpooling and fractional max pooling, as libtorch's torch::nn::{MaxUnpool1d, MaxUnpool2d,
// MaxUnpool3d, FractionalMaxPool2d, FractionalMaxPool3d} and F::{max_unpool1d, max_unpool2d,
// max_unpool3d, fractional_max_pool2d, fractional_max_pool3d(+_with_indices)}. They run on the
// ops of tensor/pooling.h (tensor::max_unpool2d, tensor::fractional_max_pool2d, ...).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <tuple>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/expanding_array.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

// ---- options ----

/// nn::MaxUnpool{1,2,3}d: the kernel_size, stride (default kernel_size) and padding of the
/// max pooling it inverts; they give the default output size.
template <size_t D>
struct MaxUnpoolOptions {
  MaxUnpoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<D>, kernel_size);
  TENSOR_ARG(ExpandingArray<D>, stride);
  TENSOR_ARG(ExpandingArray<D>, padding) = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;

/// nn::FractionalMaxPool{2,3}d: kernel_size and either output_size or output_ratio (each in
/// (0, 1): output = floor(input * ratio)). _random_samples (N, C, D), when defined, fixes the
/// windows' offsets; otherwise each call draws them uniformly from [0, 1).
template <size_t D>
struct FractionalMaxPoolOptions {
  FractionalMaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<D>, kernel_size);
  using ExpandingArrayOpt = std::optional<ExpandingArray<D>>;
  TENSOR_ARG(ExpandingArrayOpt, output_size) = std::nullopt;
  using ExpandingArrayDoubleOpt = std::optional<ExpandingArray<D, double>>;
  TENSOR_ARG(ExpandingArrayDoubleOpt, output_ratio) = std::nullopt;
  TENSOR_ARG(Tensor, _random_samples) = Tensor();

 public:
  /// output_size({h, w}): a braced list cannot reach the std::optional setter by itself.
  FractionalMaxPoolOptions& output_size(std::initializer_list<int64_t> v) { return output_size(ExpandingArray<D>(v)); }
  /// output_ratio({rh, rw}).
  FractionalMaxPoolOptions& output_ratio(std::initializer_list<double> v) {
    return output_ratio(ExpandingArray<D, double>(v));
  }
};
using FractionalMaxPool2dOptions = FractionalMaxPoolOptions<2>;
using FractionalMaxPool3dOptions = FractionalMaxPoolOptions<3>;

namespace functional {

/// F::max_unpool{1,2,3}d: MaxUnpoolOptions plus the output_size (D values, or D + 2 with the
/// batch and channel first); nullopt = (in - 1) * stride + kernel_size - 2 * padding per dim.
template <size_t D>
struct MaxUnpoolFuncOptions {
  MaxUnpoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<D>, kernel_size);
  TENSOR_ARG(ExpandingArray<D>, stride);
  TENSOR_ARG(ExpandingArray<D>, padding) = 0;
  TENSOR_ARG(std::optional<std::vector<int64_t>>, output_size) = std::nullopt;
};
using MaxUnpool1dFuncOptions = MaxUnpoolFuncOptions<1>;
using MaxUnpool2dFuncOptions = MaxUnpoolFuncOptions<2>;
using MaxUnpool3dFuncOptions = MaxUnpoolFuncOptions<3>;

using FractionalMaxPool2dFuncOptions = FractionalMaxPool2dOptions;
using FractionalMaxPool3dFuncOptions = FractionalMaxPool3dOptions;

/// Unpools an (N, C, L) or (C, L) input: tensor::max_unpool2d on an (N, C, L, 1) view.
TENSOR_API Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& options);
/// tensor::max_unpool2d to the options' output size.
TENSOR_API Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& options);
/// tensor::max_unpool3d to the options' output size.
TENSOR_API Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& options);

/// tensor::fractional_max_pool2d's output, its size from output_size or output_ratio.
TENSOR_API Tensor fractional_max_pool2d(const Tensor& input, const FractionalMaxPool2dFuncOptions& options);
/// (output, indices) of tensor::fractional_max_pool2d.
TENSOR_API std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(
    const Tensor& input, const FractionalMaxPool2dFuncOptions& options);
/// tensor::fractional_max_pool3d's output, its size from output_size or output_ratio.
TENSOR_API Tensor fractional_max_pool3d(const Tensor& input, const FractionalMaxPool3dFuncOptions& options);
/// (output, indices) of tensor::fractional_max_pool3d.
TENSOR_API std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(
    const Tensor& input, const FractionalMaxPool3dFuncOptions& options);

}  // namespace functional

// ---- modules ----

/// Inverse of MaxPool1d: (N, C, L) or (C, L) values and their indices -> zeros with each value
/// at its index.
class TENSOR_API MaxUnpool1dImpl : public Module {
 public:
  MaxUnpool1dImpl(ExpandingArray<1> kernel_size) : MaxUnpool1dImpl(MaxUnpool1dOptions(kernel_size)) {}
  explicit MaxUnpool1dImpl(const MaxUnpool1dOptions& options_);
  void reset() {}
  /// output_size: L, or (N, C, L); nullopt = the default size of the options.
  Tensor forward(const Tensor& input, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  void pretty_print(std::ostream& stream) const override;
  MaxUnpool1dOptions options;
};
TENSOR_MODULE(MaxUnpool1d);

/// Inverse of MaxPool2d: (N, C, H, W) or (C, H, W) values and their indices -> zeros with each
/// value at its index.
class TENSOR_API MaxUnpool2dImpl : public Module {
 public:
  MaxUnpool2dImpl(ExpandingArray<2> kernel_size) : MaxUnpool2dImpl(MaxUnpool2dOptions(kernel_size)) {}
  explicit MaxUnpool2dImpl(const MaxUnpool2dOptions& options_);
  void reset() {}
  /// output_size: {H, W}, or (N, C, H, W); nullopt = the default size of the options.
  Tensor forward(const Tensor& input, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  void pretty_print(std::ostream& stream) const override;
  MaxUnpool2dOptions options;
};
TENSOR_MODULE(MaxUnpool2d);

/// Inverse of a 3-d max pooling: (N, C, D, H, W) or (C, D, H, W) values and their indices.
class TENSOR_API MaxUnpool3dImpl : public Module {
 public:
  MaxUnpool3dImpl(ExpandingArray<3> kernel_size) : MaxUnpool3dImpl(MaxUnpool3dOptions(kernel_size)) {}
  explicit MaxUnpool3dImpl(const MaxUnpool3dOptions& options_);
  void reset() {}
  /// output_size: {D, H, W}, or (N, C, D, H, W); nullopt = the default size of the options.
  Tensor forward(const Tensor& input, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  void pretty_print(std::ostream& stream) const override;
  MaxUnpool3dOptions options;
};
TENSOR_MODULE(MaxUnpool3d);

/// Fractional max pooling of (N, C, H, W) or (C, H, W) inputs. The options' _random_samples is
/// registered as the buffer "_random_samples" (undefined when not given).
class TENSOR_API FractionalMaxPool2dImpl : public Module {
 public:
  FractionalMaxPool2dImpl(ExpandingArray<2> kernel_size)
      : FractionalMaxPool2dImpl(FractionalMaxPool2dOptions(kernel_size)) {}
  explicit FractionalMaxPool2dImpl(FractionalMaxPool2dOptions options_);
  /// Checks the options (exactly one of output_size and output_ratio; ratios in (0, 1)) and
  /// registers the samples.
  void reset();
  Tensor forward(const Tensor& input);
  /// (output, indices), the indices as max_unpool2d takes them.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  FractionalMaxPool2dOptions options;
  Tensor _random_samples;
};
TENSOR_MODULE(FractionalMaxPool2d);

/// Fractional max pooling of (N, C, T, H, W) or (C, T, H, W) inputs.
class TENSOR_API FractionalMaxPool3dImpl : public Module {
 public:
  FractionalMaxPool3dImpl(ExpandingArray<3> kernel_size)
      : FractionalMaxPool3dImpl(FractionalMaxPool3dOptions(kernel_size)) {}
  explicit FractionalMaxPool3dImpl(FractionalMaxPool3dOptions options_);
  /// Checks the options and registers the samples, as FractionalMaxPool2d.
  void reset();
  Tensor forward(const Tensor& input);
  /// (output, indices), the indices as max_unpool3d takes them.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  FractionalMaxPool3dOptions options;
  Tensor _random_samples;
};
TENSOR_MODULE(FractionalMaxPool3d);

}  // namespace tensor::nn
