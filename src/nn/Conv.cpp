// Convolution modules and F::conv*d / F::conv_transpose*d over tensor::conv*d (src/ops/ConvOps.cpp).
#include "tensor/nn/conv.h"

#include <cmath>
#include <ostream>
#include <vector>

#include "src/core/Check.h"
#include "tensor/conv.h"
#include "tensor/nn/functional.h"
#include "tensor/nn/init.h"
#include "tensor/ops.h"

namespace tensor::nn {

template <size_t D>
ConvNdImpl<D>::ConvNdImpl(const char* name, ConvOptions<D> options_, bool transposed)
    : Module(name), options(std::move(options_)), transposed_(transposed) {
  const int64_t in = options.in_channels(), out = options.out_channels(), g = options.groups();
  TENSOR_CHECK(in > 0 && out > 0 && g > 0, "{}: in_channels, out_channels and groups must be positive, got {}, {}, {}",
               name, in, out, g);
  TENSOR_CHECK(in % g == 0 && out % g == 0, "{}: in_channels ({}) and out_channels ({}) must be divisible by groups ({})",
               name, in, out, g);
  for (size_t i = 0; i < D; ++i)
    TENSOR_CHECK(options.kernel_size()[i] > 0, "{}: kernel sizes must be positive, got {}", name,
                 tensor::detail::shape_str(IntArrayRef(options.kernel_size())));
  if (transposed) {
    // libtorch's ConvTranspose options have explicit padding only and accept only zeros padding.
    TENSOR_CHECK(options.padding().kind() == ConvPadding<D>::Explicit,
                 "{}: padding must be explicit amounts (kValid and kSame are for convolutions only)", name);
    TENSOR_CHECK(options.padding_mode() == kZeros, "Only \"zeros\" padding mode is supported for {} (got \"{}\")",
                 name, options.padding_mode().name());
  } else if (options.padding().is_same()) {
    for (size_t i = 0; i < D; ++i)
      TENSOR_CHECK(options.stride()[i] == 1, "{}: padding='same' is not supported for strided convolutions (got stride={})",
                   name, tensor::detail::shape_str(IntArrayRef(options.stride())));
  }
  reset();
}

template <size_t D>
void ConvNdImpl<D>::reset() {
  if (parameters_.contains("weight")) parameters_.erase("weight");
  if (parameters_.contains("bias")) parameters_.erase("bias");
  std::vector<int64_t> shape = transposed_
      ? std::vector<int64_t>{options.in_channels(), options.out_channels() / options.groups()}
      : std::vector<int64_t>{options.out_channels(), options.in_channels() / options.groups()};
  for (size_t i = 0; i < D; ++i) shape.push_back(options.kernel_size()[i]);
  weight = register_parameter("weight", tensor::empty(shape));
  bias = options.bias() ? register_parameter("bias", tensor::empty({options.out_channels()}))
                        : register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

template <size_t D>
void ConvNdImpl<D>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = std::get<0>(init::_calculate_fan_in_and_fan_out(weight));
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <size_t D>
void ConvNdImpl<D>::pretty_print(std::ostream& s) const {
  auto tuple = [&](const ExpandingArray<D>& a) {
    s << "(";
    for (size_t i = 0; i < D; ++i) s << (i ? ", " : "") << a[i];
    s << (D == 1 ? ",)" : ")");
  };
  s << name() << "(" << options.in_channels() << ", " << options.out_channels() << ", kernel_size=";
  tuple(options.kernel_size());
  s << ", stride=";
  tuple(options.stride());
  bool pad = false, dil = false, opad = false;
  for (size_t i = 0; i < D; ++i) {
    pad = pad || options.padding().values()[i] != 0;
    dil = dil || options.dilation()[i] != 1;
    opad = opad || options.output_padding()[i] != 0;
  }
  if (options.padding().is_same()) s << ", padding='same'";
  else if (options.padding().is_valid()) s << ", padding='valid'";
  else if (pad) { s << ", padding="; tuple(options.padding().values()); }
  if (dil) { s << ", dilation="; tuple(options.dilation()); }
  if (transposed_ && opad) { s << ", output_padding="; tuple(options.output_padding()); }
  if (options.groups() != 1) s << ", groups=" << options.groups();
  if (!options.bias()) s << ", bias=false";
  if (options.padding_mode() != kZeros) s << ", padding_mode=" << options.padding_mode().name();
  s << ")";
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;
template class ConvNdImpl<3>;

namespace {

/// tensor::convNd for spatial dims D (1, 2, 3), explicit or "valid"/"same" padding.
template <size_t D>
Tensor conv_nd(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
               const ConvPadding<D>& padding, IntArrayRef dilation, int64_t groups) {
  const std::optional<Tensor> b = bias.defined() ? std::optional<Tensor>(bias) : std::nullopt;
  if (padding.kind() != ConvPadding<D>::Explicit)
    return tensor::detail::conv_padding_mode(D, input, weight, b, stride, padding.is_same() ? "same" : "valid",
                                             dilation, groups);
  if constexpr (D == 1) return tensor::conv1d(input, weight, b, stride, padding.values(), dilation, groups);
  if constexpr (D == 2) return tensor::conv2d(input, weight, b, stride, padding.values(), dilation, groups);
  if constexpr (D == 3) return tensor::conv3d(input, weight, b, stride, padding.values(), dilation, groups);
}

/// A convolution module's forward: padding_mode other than kZeros pads with F::pad first (the
/// amounts libtorch's _reversed_padding_repeated_twice holds, kSame's odd element on the right),
/// then convolves without padding, as libtorch.
template <size_t D>
Tensor conv_forward(const ConvOptions<D>& o, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (o.padding_mode() == kZeros) return conv_nd<D>(input, weight, bias, o.stride(), o.padding(), o.dilation(), o.groups());
  std::vector<int64_t> pad(2 * D, 0);  // (left, right) from the last dim backwards
  for (size_t i = 0; i < D; ++i) {
    int64_t l = o.padding().values()[i], r = l;
    if (o.padding().is_same()) {
      const int64_t total = o.dilation()[i] * (o.kernel_size()[i] - 1);
      l = total / 2;
      r = total - l;
    }
    pad[2 * (D - 1 - i)] = l;
    pad[2 * (D - 1 - i) + 1] = r;
  }
  PadMode mode = kReflect;
  switch (o.padding_mode().kind()) {
    case ConvPaddingMode::Reflect: mode = kReflect; break;
    case ConvPaddingMode::Replicate: mode = kReplicate; break;
    default: mode = kCircular; break;
  }
  const Tensor padded = functional::pad(input, functional::PadFuncOptions(pad).mode(mode));
  return conv_nd<D>(padded, weight, bias, o.stride(), ConvPadding<D>(0), o.dilation(), o.groups());
}

/// libtorch's ConvTransposeNdImpl::_output_padding: the output_padding that gives output_size
/// (D values, or D + 2 with batch and channels first), checked against the reachable range.
/// The range counts dilation, as PyTorch's Python module does.
template <size_t D>
std::vector<int64_t> output_padding_for(const char* name, const ConvOptions<D>& o, const Tensor& input,
                                        const std::optional<IntArrayRef>& output_size) {
  if (!output_size.has_value()) return IntArrayRef(o.output_padding()).vec();
  std::vector<int64_t> size = output_size->vec();
  if (size.size() == D + 2) size.erase(size.begin(), size.begin() + 2);
  TENSOR_CHECK(size.size() == D, "{}: output_size must have {} or {} elements (got {})", name, D, D + 2,
               output_size->size());
  TENSOR_CHECK(input.defined() && (input.dim() == static_cast<int64_t>(D) + 1 || input.dim() == static_cast<int64_t>(D) + 2),
               "{}: expected a {}-D (unbatched) or {}-D (batched) input, got {}", name, D + 1, D + 2,
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  const int64_t first = input.dim() - static_cast<int64_t>(D);
  std::vector<int64_t> min_sizes, max_sizes, ret;
  for (size_t d = 0; d < D; ++d) {
    const int64_t lo = (input.size(first + d) - 1) * o.stride()[d] - 2 * o.padding().values()[d] +
                       o.dilation()[d] * (o.kernel_size()[d] - 1) + 1;
    min_sizes.push_back(lo);
    max_sizes.push_back(lo + o.stride()[d] - 1);
  }
  for (size_t d = 0; d < D; ++d)
    TENSOR_CHECK(size[d] >= min_sizes[d] && size[d] <= max_sizes[d],
                 "{}: requested an output size of {}, but valid sizes range from {} to {} (for an input of {})", name,
                 tensor::detail::shape_str(size), tensor::detail::shape_str(min_sizes),
                 tensor::detail::shape_str(max_sizes), tensor::detail::shape_str(IntArrayRef(input.sizes().data() + first, D)));
  for (size_t d = 0; d < D; ++d) ret.push_back(size[d] - min_sizes[d]);
  return ret;
}

std::optional<Tensor> opt(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }

}  // namespace

Conv1dImpl::Conv1dImpl(Conv1dOptions o) : ConvNdImpl<1>("tensor::nn::Conv1d", std::move(o), false) {}
Tensor Conv1dImpl::forward(const Tensor& input) { return conv_forward<1>(options, input, weight, bias); }

Conv2dImpl::Conv2dImpl(Conv2dOptions o) : ConvNdImpl<2>("tensor::nn::Conv2d", std::move(o), false) {}
Tensor Conv2dImpl::forward(const Tensor& input) { return conv_forward<2>(options, input, weight, bias); }

Conv3dImpl::Conv3dImpl(Conv3dOptions o) : ConvNdImpl<3>("tensor::nn::Conv3d", std::move(o), false) {}
Tensor Conv3dImpl::forward(const Tensor& input) { return conv_forward<3>(options, input, weight, bias); }

ConvTranspose1dImpl::ConvTranspose1dImpl(ConvTranspose1dOptions o)
    : ConvNdImpl<1>("tensor::nn::ConvTranspose1d", std::move(o), true) {}
Tensor ConvTranspose1dImpl::forward(const Tensor& input, const std::optional<IntArrayRef>& output_size) {
  const std::vector<int64_t> op = output_padding_for<1>("tensor::nn::ConvTranspose1d", options, input, output_size);
  return tensor::conv_transpose1d(input, weight, opt(bias), options.stride(), options.padding().values(), op,
                                  options.groups(), options.dilation());
}

ConvTranspose2dImpl::ConvTranspose2dImpl(ConvTranspose2dOptions o)
    : ConvNdImpl<2>("tensor::nn::ConvTranspose2d", std::move(o), true) {}
Tensor ConvTranspose2dImpl::forward(const Tensor& input, const std::optional<IntArrayRef>& output_size) {
  const std::vector<int64_t> op = output_padding_for<2>("tensor::nn::ConvTranspose2d", options, input, output_size);
  return tensor::conv_transpose2d(input, weight, opt(bias), options.stride(), options.padding().values(), op,
                                  options.groups(), options.dilation());
}

ConvTranspose3dImpl::ConvTranspose3dImpl(ConvTranspose3dOptions o)
    : ConvNdImpl<3>("tensor::nn::ConvTranspose3d", std::move(o), true) {}
Tensor ConvTranspose3dImpl::forward(const Tensor& input, const std::optional<IntArrayRef>& output_size) {
  const std::vector<int64_t> op = output_padding_for<3>("tensor::nn::ConvTranspose3d", options, input, output_size);
  return tensor::conv_transpose3d(input, weight, opt(bias), options.stride(), options.padding().values(), op,
                                  options.groups(), options.dilation());
}

namespace functional {
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& o) {
  return conv_nd<1>(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& o) {
  return conv_nd<2>(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& o) {
  return conv_nd<3>(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& o) {
  return tensor::conv_transpose1d(input, weight, opt(o.bias()), o.stride(), o.padding(), o.output_padding(), o.groups(),
                                  o.dilation());
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& o) {
  return tensor::conv_transpose2d(input, weight, opt(o.bias()), o.stride(), o.padding(), o.output_padding(), o.groups(),
                                  o.dilation());
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const ConvTranspose3dFuncOptions& o) {
  return tensor::conv_transpose3d(input, weight, opt(o.bias()), o.stride(), o.padding(), o.output_padding(), o.groups(),
                                  o.dilation());
}
}  // namespace functional

}  // namespace tensor::nn
