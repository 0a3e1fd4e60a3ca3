// Convolution modules and F::conv1d/conv2d over tensor::conv*d (src/ops/ConvOps.cpp).
#include "tensor/nn/conv.h"

#include <cmath>
#include <ostream>
#include <vector>

#include "src/core/Check.h"
#include "tensor/conv.h"
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
    pad = pad || options.padding()[i] != 0;
    dil = dil || options.dilation()[i] != 1;
    opad = opad || options.output_padding()[i] != 0;
  }
  if (pad) { s << ", padding="; tuple(options.padding()); }
  if (dil) { s << ", dilation="; tuple(options.dilation()); }
  if (transposed_ && opad) { s << ", output_padding="; tuple(options.output_padding()); }
  if (options.groups() != 1) s << ", groups=" << options.groups();
  if (!options.bias()) s << ", bias=false";
  s << ")";
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;

Conv1dImpl::Conv1dImpl(Conv1dOptions o) : ConvNdImpl<1>("tensor::nn::Conv1d", std::move(o), false) {}
Tensor Conv1dImpl::forward(const Tensor& input) {
  return tensor::conv1d(input, weight, bias, options.stride(), options.padding(), options.dilation(), options.groups());
}

Conv2dImpl::Conv2dImpl(Conv2dOptions o) : ConvNdImpl<2>("tensor::nn::Conv2d", std::move(o), false) {}
Tensor Conv2dImpl::forward(const Tensor& input) {
  return tensor::conv2d(input, weight, bias, options.stride(), options.padding(), options.dilation(), options.groups());
}

ConvTranspose2dImpl::ConvTranspose2dImpl(ConvTranspose2dOptions o)
    : ConvNdImpl<2>("tensor::nn::ConvTranspose2d", std::move(o), true) {}
Tensor ConvTranspose2dImpl::forward(const Tensor& input) {
  return tensor::conv_transpose2d(input, weight, bias, options.stride(), options.padding(), options.output_padding(),
                                  options.groups(), options.dilation());
}

namespace functional {
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& o) {
  return tensor::conv1d(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& o) {
  return tensor::conv2d(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}
}  // namespace functional

}  // namespace tensor::nn
