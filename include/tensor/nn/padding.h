// Padding modules as libtorch's torch::nn::{ReflectionPad, ReplicationPad, ZeroPad,
// ConstantPad}{1,2,3}d, over F::pad. `padding` is one value for every side or 2 * D values
// (left, right, top, bottom, front, back), as libtorch's ExpandingArray<2 * D>.
#pragma once

#include <cstddef>
#include <ostream>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/expanding_array.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

template <size_t D>
struct ReflectionPadOptions {
  ReflectionPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}
  TENSOR_ARG(ExpandingArray<D * 2>, padding);
};
using ReflectionPad1dOptions = ReflectionPadOptions<1>;
using ReflectionPad2dOptions = ReflectionPadOptions<2>;
using ReflectionPad3dOptions = ReflectionPadOptions<3>;

template <size_t D>
struct ReplicationPadOptions {
  ReplicationPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}
  TENSOR_ARG(ExpandingArray<D * 2>, padding);
};
using ReplicationPad1dOptions = ReplicationPadOptions<1>;
using ReplicationPad2dOptions = ReplicationPadOptions<2>;
using ReplicationPad3dOptions = ReplicationPadOptions<3>;

template <size_t D>
struct ZeroPadOptions {
  ZeroPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}
  TENSOR_ARG(ExpandingArray<D * 2>, padding);
};
using ZeroPad1dOptions = ZeroPadOptions<1>;
using ZeroPad2dOptions = ZeroPadOptions<2>;
using ZeroPad3dOptions = ZeroPadOptions<3>;

template <size_t D>
struct ConstantPadOptions {
  ConstantPadOptions(ExpandingArray<D * 2> padding, double value) : padding_(padding), value_(value) {}
  TENSOR_ARG(ExpandingArray<D * 2>, padding);
  TENSOR_ARG(double, value);
};
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;
using ConstantPad3dOptions = ConstantPadOptions<3>;

namespace detail {
/// F::pad of the last D dims with `padding` (2 * D amounts), `mode` and `value`; `name` for
/// messages. Defined in src/nn/PaddingNorm.cpp.
TENSOR_API Tensor pad_nd(const char* name, const Tensor& input, IntArrayRef padding, PadMode mode, double value,
                         size_t dims);
TENSOR_API void print_pad(std::ostream& stream, const char* name, IntArrayRef padding, const double* value);
}  // namespace detail

/// Declares NameImpl<D>-style modules for one padding mode as non-template classes
/// Name1dImpl, Name2dImpl, Name3dImpl with their holders.
#define TENSOR_PAD_MODULE(Name, D, Mode)                                                                  \
  class Name##D##dImpl : public Module {                                                                  \
   public:                                                                                                \
    Name##D##dImpl(ExpandingArray<D * 2> padding) : Name##D##dImpl(Name##Options<D>(padding)) {}          \
    explicit Name##D##dImpl(const Name##Options<D>& options_)                                             \
        : Module("tensor::nn::" #Name #D "d"), options(options_) {}                                       \
    void reset() {}                                                                                       \
    Tensor forward(const Tensor& input) {                                                                 \
      return detail::pad_nd(#Name #D "d", input, options.padding(), Mode, 0.0, D);                        \
    }                                                                                                     \
    void pretty_print(std::ostream& s) const override {                                                   \
      detail::print_pad(s, "tensor::nn::" #Name #D "d", options.padding(), nullptr);                      \
    }                                                                                                     \
    Name##Options<D> options;                                                                             \
  };                                                                                                      \
  TENSOR_MODULE(Name##D##d)

/// Mirror padding without repeating the edge.
TENSOR_PAD_MODULE(ReflectionPad, 1, kReflect);
TENSOR_PAD_MODULE(ReflectionPad, 2, kReflect);
TENSOR_PAD_MODULE(ReflectionPad, 3, kReflect);
/// Repeats the edge.
TENSOR_PAD_MODULE(ReplicationPad, 1, kReplicate);
TENSOR_PAD_MODULE(ReplicationPad, 2, kReplicate);
TENSOR_PAD_MODULE(ReplicationPad, 3, kReplicate);
/// Zeros.
TENSOR_PAD_MODULE(ZeroPad, 1, kConstant);
TENSOR_PAD_MODULE(ZeroPad, 2, kConstant);
TENSOR_PAD_MODULE(ZeroPad, 3, kConstant);
#undef TENSOR_PAD_MODULE

/// Pads with options.value().
#define TENSOR_CONSTANT_PAD_MODULE(D)                                                                     \
  class ConstantPad##D##dImpl : public Module {                                                           \
   public:                                                                                                \
    ConstantPad##D##dImpl(ExpandingArray<D * 2> padding, double value)                                    \
        : ConstantPad##D##dImpl(ConstantPadOptions<D>(padding, value)) {}                                 \
    explicit ConstantPad##D##dImpl(const ConstantPadOptions<D>& options_)                                 \
        : Module("tensor::nn::ConstantPad" #D "d"), options(options_) {}                                  \
    void reset() {}                                                                                       \
    Tensor forward(const Tensor& input) {                                                                 \
      return detail::pad_nd("ConstantPad" #D "d", input, options.padding(), kConstant, options.value(), D); \
    }                                                                                                     \
    void pretty_print(std::ostream& s) const override {                                                   \
      detail::print_pad(s, "tensor::nn::ConstantPad" #D "d", options.padding(), &options.value());        \
    }                                                                                                     \
    ConstantPadOptions<D> options;                                                                        \
  };                                                                                                      \
  TENSOR_MODULE(ConstantPad##D##d)

TENSOR_CONSTANT_PAD_MODULE(1);
TENSOR_CONSTANT_PAD_MODULE(2);
TENSOR_CONSTANT_PAD_MODULE(3);
#undef TENSOR_CONSTANT_PAD_MODULE

}  // namespace tensor::nn
