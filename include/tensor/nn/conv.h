// Convolution modules and their functional forms, as libtorch: nn::Conv1d, nn::Conv2d,
// nn::ConvTranspose2d with nn::Conv2dOptions(1, 32, 3).padding(1), and
// F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1).groups(2).bias(b)).
#pragma once

#include "tensor/nn/arg.h"
#include "tensor/nn/expanding_array.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// Options of the D-dimensional convolution modules (kernel, stride, padding, dilation, groups).
template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  TENSOR_ARG(int64_t, in_channels);
  TENSOR_ARG(int64_t, out_channels);
  TENSOR_ARG(ExpandingArray<D>, kernel_size);
  TENSOR_ARG(ExpandingArray<D>, stride) = 1;
  TENSOR_ARG(ExpandingArray<D>, padding) = 0;
  TENSOR_ARG(ExpandingArray<D>, dilation) = 1;
  /// Transposed convolutions only: extra size added to one side of the output.
  TENSOR_ARG(ExpandingArray<D>, output_padding) = 0;
  TENSOR_ARG(int64_t, groups) = 1;
  TENSOR_ARG(bool, bias) = true;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using ConvTranspose2dOptions = ConvOptions<2>;

/// Base of the convolution modules: weight [out, in / groups, k...] (transposed: [in, out /
/// groups, k...]) ~ kaiming_uniform_(a = sqrt(5)), bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
/// as libtorch.
template <size_t D>
class TENSOR_API ConvNdImpl : public Module {
 public:
  ConvNdImpl(const char* name, ConvOptions<D> options, bool transposed);
  /// Re-creates and re-initializes the parameters.
  void reset();
  /// Re-initializes the parameters in place.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  ConvOptions<D> options;
  Tensor weight;
  /// Undefined when options.bias() is false.
  Tensor bias;

 protected:
  bool transposed_;
};

/// (N, C_in, L) or (C_in, L) -> (N, C_out, L_out).
class TENSOR_API Conv1dImpl : public ConvNdImpl<1> {
 public:
  Conv1dImpl(int64_t in, int64_t out, ExpandingArray<1> k) : Conv1dImpl(Conv1dOptions(in, out, k)) {}
  explicit Conv1dImpl(Conv1dOptions options);
  Tensor forward(const Tensor& input);
};
TENSOR_MODULE(Conv1d);

/// (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out).
class TENSOR_API Conv2dImpl : public ConvNdImpl<2> {
 public:
  Conv2dImpl(int64_t in, int64_t out, ExpandingArray<2> k) : Conv2dImpl(Conv2dOptions(in, out, k)) {}
  explicit Conv2dImpl(Conv2dOptions options);
  Tensor forward(const Tensor& input);
};
TENSOR_MODULE(Conv2d);

/// The transposed 2-D convolution (the gradient of Conv2d with respect to its input).
class TENSOR_API ConvTranspose2dImpl : public ConvNdImpl<2> {
 public:
  ConvTranspose2dImpl(int64_t in, int64_t out, ExpandingArray<2> k)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in, out, k)) {}
  explicit ConvTranspose2dImpl(ConvTranspose2dOptions options);
  Tensor forward(const Tensor& input);
};
TENSOR_MODULE(ConvTranspose2d);

namespace functional {

/// Options of F::conv1d / F::conv2d (libtorch's ConvFuncOptions).
template <size_t D>
struct ConvFuncOptions {
  TENSOR_ARG(Tensor, bias);
  TENSOR_ARG(ExpandingArray<D>, stride) = 1;
  TENSOR_ARG(ExpandingArray<D>, padding) = 0;
  TENSOR_ARG(ExpandingArray<D>, dilation) = 1;
  TENSOR_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;

/// tensor::conv1d with the options struct.
TENSOR_API Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options = {});
/// tensor::conv2d with the options struct.
TENSOR_API Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {});

}  // namespace functional
}  // namespace tensor::nn
