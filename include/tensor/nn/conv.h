// Convolution modules and their functional forms, as libtorch: nn::Conv1d/2d/3d,
// nn::ConvTranspose1d/2d/3d with nn::Conv2dOptions(1, 32, 3).padding(1) (or .padding(kSame),
// .padding_mode(kReflect)), and
// F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1).groups(2).bias(b)),
// F::conv_transpose2d(x, w, F::ConvTranspose2dFuncOptions().stride(2).output_padding(1)).
#pragma once

#include <optional>

#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/expanding_array.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// A convolution's padding, as libtorch's padding_t: explicit amounts (one value or D values),
/// kValid (none) or kSame (output size = input size; stride 1 only).
template <size_t D>
class ConvPadding {
 public:
  enum Kind : int8_t { Explicit, Valid, Same };
  /* implicit */ ConvPadding(int64_t single) : values_(single) {}
  /* implicit */ ConvPadding(std::initializer_list<int64_t> list) : values_(list) {}
  /* implicit */ ConvPadding(IntArrayRef list) : values_(list) {}
  /* implicit */ ConvPadding(const ExpandingArray<D>& values) : values_(values) {}
  /* implicit */ ConvPadding(enumtype::kValid) : kind_(Valid), values_(0) {}
  /* implicit */ ConvPadding(enumtype::kSame) : kind_(Same), values_(0) {}
  Kind kind() const { return kind_; }
  bool is_valid() const { return kind_ == Valid; }
  bool is_same() const { return kind_ == Same; }
  /// The explicit amounts (zeros for kValid and kSame).
  const ExpandingArray<D>& values() const { return values_; }
  int64_t operator[](size_t i) const { return values_[i]; }

 private:
  Kind kind_ = Explicit;
  ExpandingArray<D> values_;
};

/// How a convolution module pads its input (libtorch's padding_mode): kZeros (the convolution's
/// own zero padding), kReflect, kReplicate or kCircular (F::pad first, then no padding).
class ConvPaddingMode {
 public:
  enum Kind : int8_t { Zeros, Reflect, Replicate, Circular };
  constexpr ConvPaddingMode(enumtype::kZeros) : kind_(Zeros) {}
  constexpr ConvPaddingMode(enumtype::kReflect) : kind_(Reflect) {}
  constexpr ConvPaddingMode(enumtype::kReplicate) : kind_(Replicate) {}
  constexpr ConvPaddingMode(enumtype::kCircular) : kind_(Circular) {}
  constexpr Kind kind() const { return kind_; }
  /// "zeros", "reflect", "replicate", "circular".
  constexpr const char* name() const {
    return kind_ == Zeros ? "zeros" : kind_ == Reflect ? "reflect" : kind_ == Replicate ? "replicate" : "circular";
  }
  friend constexpr bool operator==(ConvPaddingMode a, ConvPaddingMode b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(ConvPaddingMode a, ConvPaddingMode b) { return a.kind_ != b.kind_; }

 private:
  Kind kind_;
};

/// Options of the D-dimensional convolution modules (kernel, stride, padding, dilation, groups).
template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  TENSOR_ARG(int64_t, in_channels);
  TENSOR_ARG(int64_t, out_channels);
  TENSOR_ARG(ExpandingArray<D>, kernel_size);
  TENSOR_ARG(ExpandingArray<D>, stride) = 1;
  /// Explicit amounts, kValid or kSame (kSame and kValid: convolutions only, not transposed).
  TENSOR_ARG(ConvPadding<D>, padding) = 0;
  TENSOR_ARG(ExpandingArray<D>, dilation) = 1;
  /// Transposed convolutions only: extra size added to one side of the output.
  TENSOR_ARG(ExpandingArray<D>, output_padding) = 0;
  TENSOR_ARG(int64_t, groups) = 1;
  TENSOR_ARG(bool, bias) = true;
  /// kZeros, kReflect, kReplicate or kCircular (transposed convolutions: kZeros only, as libtorch).
  TENSOR_ARG(ConvPaddingMode, padding_mode) = kZeros;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;
/// libtorch's ConvTransposeOptions<D>: the same setters (output_padding is used; padding is explicit).
using ConvTranspose1dOptions = ConvOptions<1>;
using ConvTranspose2dOptions = ConvOptions<2>;
using ConvTranspose3dOptions = ConvOptions<3>;

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

/// (N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out).
class TENSOR_API Conv3dImpl : public ConvNdImpl<3> {
 public:
  Conv3dImpl(int64_t in, int64_t out, ExpandingArray<3> k) : Conv3dImpl(Conv3dOptions(in, out, k)) {}
  explicit Conv3dImpl(Conv3dOptions options);
  Tensor forward(const Tensor& input);
};
TENSOR_MODULE(Conv3d);

/// The transposed 1-D convolution (the gradient of Conv1d with respect to its input).
/// output_size (D values, or D + 2 with N and C first) picks the output_padding, as libtorch.
class TENSOR_API ConvTranspose1dImpl : public ConvNdImpl<1> {
 public:
  ConvTranspose1dImpl(int64_t in, int64_t out, ExpandingArray<1> k)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(in, out, k)) {}
  explicit ConvTranspose1dImpl(ConvTranspose1dOptions options);
  Tensor forward(const Tensor& input, const std::optional<IntArrayRef>& output_size = std::nullopt);
};
TENSOR_MODULE(ConvTranspose1d);

/// The transposed 2-D convolution (the gradient of Conv2d with respect to its input).
class TENSOR_API ConvTranspose2dImpl : public ConvNdImpl<2> {
 public:
  ConvTranspose2dImpl(int64_t in, int64_t out, ExpandingArray<2> k)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in, out, k)) {}
  explicit ConvTranspose2dImpl(ConvTranspose2dOptions options);
  Tensor forward(const Tensor& input, const std::optional<IntArrayRef>& output_size = std::nullopt);
};
TENSOR_MODULE(ConvTranspose2d);

/// The transposed 3-D convolution (the gradient of Conv3d with respect to its input).
class TENSOR_API ConvTranspose3dImpl : public ConvNdImpl<3> {
 public:
  ConvTranspose3dImpl(int64_t in, int64_t out, ExpandingArray<3> k)
      : ConvTranspose3dImpl(ConvTranspose3dOptions(in, out, k)) {}
  explicit ConvTranspose3dImpl(ConvTranspose3dOptions options);
  Tensor forward(const Tensor& input, const std::optional<IntArrayRef>& output_size = std::nullopt);
};
TENSOR_MODULE(ConvTranspose3d);

namespace functional {

/// Options of F::conv1d / F::conv2d (libtorch's ConvFuncOptions).
template <size_t D>
struct ConvFuncOptions {
  TENSOR_ARG(Tensor, bias);
  TENSOR_ARG(ExpandingArray<D>, stride) = 1;
  /// Explicit amounts, kValid or kSame.
  TENSOR_ARG(ConvPadding<D>, padding) = 0;
  TENSOR_ARG(ExpandingArray<D>, dilation) = 1;
  TENSOR_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;

/// Options of F::conv_transpose1d/2d/3d (libtorch's ConvTransposeFuncOptions).
template <size_t D>
struct ConvTransposeFuncOptions {
  TENSOR_ARG(Tensor, bias);
  TENSOR_ARG(ExpandingArray<D>, stride) = 1;
  TENSOR_ARG(ExpandingArray<D>, padding) = 0;
  TENSOR_ARG(ExpandingArray<D>, output_padding) = 0;
  TENSOR_ARG(int64_t, groups) = 1;
  TENSOR_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions<3>;

/// tensor::conv1d with the options struct.
TENSOR_API Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options = {});
/// tensor::conv2d with the options struct.
TENSOR_API Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {});
/// tensor::conv3d with the options struct.
TENSOR_API Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options = {});
/// tensor::conv_transpose1d with the options struct.
TENSOR_API Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                                   const ConvTranspose1dFuncOptions& options = {});
/// tensor::conv_transpose2d with the options struct.
TENSOR_API Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                                   const ConvTranspose2dFuncOptions& options = {});
/// tensor::conv_transpose3d with the options struct.
TENSOR_API Tensor conv_transpose3d(const Tensor& input, const Tensor& weight,
                                   const ConvTranspose3dFuncOptions& options = {});

}  // namespace functional
}  // namespace tensor::nn
