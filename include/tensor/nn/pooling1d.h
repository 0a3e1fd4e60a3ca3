// 1-d pooling as libtorch's torch::nn::{MaxPool1d, AvgPool1d, AdaptiveAvgPool1d,
// AdaptiveMaxPool1d, LPPool1d} and their F:: functions: the 2-d pooling ops on a (N, C, 1, L)
// view of an (N, C, L) or (C, L) input.
#pragma once

#include <cstdint>
#include <ostream>
#include <tuple>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/expanding_array.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// stride defaults to kernel_size.
struct MaxPool1dOptions {
  MaxPool1dOptions(ExpandingArray<1> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<1>, kernel_size);
  TENSOR_ARG(ExpandingArray<1>, stride);
  TENSOR_ARG(ExpandingArray<1>, padding) = 0;
  TENSOR_ARG(ExpandingArray<1>, dilation) = 1;
  TENSOR_ARG(bool, ceil_mode) = false;
};

struct AvgPool1dOptions {
  AvgPool1dOptions(ExpandingArray<1> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<1>, kernel_size);
  TENSOR_ARG(ExpandingArray<1>, stride);
  TENSOR_ARG(ExpandingArray<1>, padding) = 0;
  TENSOR_ARG(bool, ceil_mode) = false;
  TENSOR_ARG(bool, count_include_pad) = true;
};

struct AdaptiveAvgPool1dOptions {
  AdaptiveAvgPool1dOptions(ExpandingArray<1> output_size) : output_size_(output_size) {}
  TENSOR_ARG(ExpandingArray<1>, output_size);
};

struct AdaptiveMaxPool1dOptions {
  AdaptiveMaxPool1dOptions(ExpandingArray<1> output_size) : output_size_(output_size) {}
  TENSOR_ARG(ExpandingArray<1>, output_size);
};

/// Power-average pooling of order norm_type; stride defaults to kernel_size, no padding.
struct LPPool1dOptions {
  LPPool1dOptions(double norm_type, ExpandingArray<1> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  TENSOR_ARG(double, norm_type);
  TENSOR_ARG(ExpandingArray<1>, kernel_size);
  TENSOR_ARG(ExpandingArray<1>, stride);
  TENSOR_ARG(bool, ceil_mode) = false;
};

namespace functional {
using MaxPool1dFuncOptions = MaxPool1dOptions;
using AvgPool1dFuncOptions = AvgPool1dOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using LPPool1dFuncOptions = LPPool1dOptions;
/// Max over kernel windows along L of an (N, C, L) or (C, L) input.
TENSOR_API Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options);
/// Mean over kernel windows along L.
TENSOR_API Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options);
/// Mean over output_size windows that tile L.
TENSOR_API Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options);
/// Max over output_size windows that tile L.
TENSOR_API Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options);
/// adaptive_max_pool1d and the index in L of each maximum.
TENSOR_API std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                                       const AdaptiveMaxPool1dFuncOptions& options);
/// libtorch's lp_pool1d: (sign(out) * relu(|out|) * k)^(1 / p), out = avg_pool1d(input^p).
TENSOR_API Tensor lp_pool1d(const Tensor& input, const LPPool1dFuncOptions& options);
}  // namespace functional

class TENSOR_API MaxPool1dImpl : public Module {
 public:
  MaxPool1dImpl(ExpandingArray<1> kernel_size) : MaxPool1dImpl(MaxPool1dOptions(kernel_size)) {}
  explicit MaxPool1dImpl(const MaxPool1dOptions& options_);
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  MaxPool1dOptions options;
};
TENSOR_MODULE(MaxPool1d);

class TENSOR_API AvgPool1dImpl : public Module {
 public:
  AvgPool1dImpl(ExpandingArray<1> kernel_size) : AvgPool1dImpl(AvgPool1dOptions(kernel_size)) {}
  explicit AvgPool1dImpl(const AvgPool1dOptions& options_);
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AvgPool1dOptions options;
};
TENSOR_MODULE(AvgPool1d);

class TENSOR_API AdaptiveAvgPool1dImpl : public Module {
 public:
  AdaptiveAvgPool1dImpl(ExpandingArray<1> output_size) : AdaptiveAvgPool1dImpl(AdaptiveAvgPool1dOptions(output_size)) {}
  explicit AdaptiveAvgPool1dImpl(const AdaptiveAvgPool1dOptions& options_);
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptiveAvgPool1dOptions options;
};
TENSOR_MODULE(AdaptiveAvgPool1d);

class TENSOR_API AdaptiveMaxPool1dImpl : public Module {
 public:
  AdaptiveMaxPool1dImpl(ExpandingArray<1> output_size) : AdaptiveMaxPool1dImpl(AdaptiveMaxPool1dOptions(output_size)) {}
  explicit AdaptiveMaxPool1dImpl(const AdaptiveMaxPool1dOptions& options_);
  void reset() {}
  Tensor forward(const Tensor& input);
  /// The pooled values and the index in L of each maximum.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  AdaptiveMaxPool1dOptions options;
};
TENSOR_MODULE(AdaptiveMaxPool1d);

class TENSOR_API LPPool1dImpl : public Module {
 public:
  LPPool1dImpl(double norm_type, ExpandingArray<1> kernel_size) : LPPool1dImpl(LPPool1dOptions(norm_type, kernel_size)) {}
  explicit LPPool1dImpl(const LPPool1dOptions& options_);
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LPPool1dOptions options;
};
TENSOR_MODULE(LPPool1d);

}  // namespace tensor::nn
