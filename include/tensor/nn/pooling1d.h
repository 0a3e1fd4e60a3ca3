// 1-d pooling as libtorch's torch::nn::{MaxPool1d, AvgPool1d, AdaptiveAvgPool1d} and
// F::{max_pool1d, avg_pool1d, adaptive_avg_pool1d}: the 2-d pooling ops on a (N, C, 1, L) view
// of an (N, C, L) or (C, L) input.
#pragma once

#include <cstdint>
#include <ostream>

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

namespace functional {
using MaxPool1dFuncOptions = MaxPool1dOptions;
using AvgPool1dFuncOptions = AvgPool1dOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
/// Max over kernel windows along L of an (N, C, L) or (C, L) input.
TENSOR_API Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options);
/// Mean over kernel windows along L.
TENSOR_API Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options);
/// Mean over output_size windows that tile L.
TENSOR_API Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options);
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

}  // namespace tensor::nn
