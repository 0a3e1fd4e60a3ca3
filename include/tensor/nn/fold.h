// nn::Fold / nn::Unfold and F::fold / F::unfold, as libtorch: sliding local blocks to columns
// (tensor::im2col) and back, summing overlaps (tensor::col2im).
// `nn::Unfold(nn::UnfoldOptions({2, 3}).padding(1).stride(2))`,
// `F::fold(cols, F::FoldFuncOptions({4, 5}, {2, 2}))`.
#pragma once

#include "tensor/nn/arg.h"
#include "tensor/nn/expanding_array.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::nn {

/// nn::Fold: columns (N, C * kh * kw, L) or (C * kh * kw, L) -> (N, C, output_size...).
struct FoldOptions {
  FoldOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<2>, output_size);
  TENSOR_ARG(ExpandingArray<2>, kernel_size);
  TENSOR_ARG(ExpandingArray<2>, dilation) = 1;
  TENSOR_ARG(ExpandingArray<2>, padding) = 0;
  TENSOR_ARG(ExpandingArray<2>, stride) = 1;
};

/// nn::Unfold: (N, C, H, W) or (C, H, W) -> columns (N, C * kh * kw, L) or (C * kh * kw, L).
struct UnfoldOptions {
  UnfoldOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size) {}
  TENSOR_ARG(ExpandingArray<2>, kernel_size);
  TENSOR_ARG(ExpandingArray<2>, dilation) = 1;
  TENSOR_ARG(ExpandingArray<2>, padding) = 0;
  TENSOR_ARG(ExpandingArray<2>, stride) = 1;
};

/// Sums sliding local blocks (columns) into a (N, C, H, W) tensor: tensor::col2im.
class TENSOR_API FoldImpl : public Module {
 public:
  FoldImpl(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : FoldImpl(FoldOptions(output_size, kernel_size)) {}
  explicit FoldImpl(const FoldOptions& options);
  /// Nothing to reset (no parameters).
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  FoldOptions options;
};
TENSOR_MODULE(Fold);

/// Extracts sliding local blocks of a (N, C, H, W) tensor as columns: tensor::im2col.
class TENSOR_API UnfoldImpl : public Module {
 public:
  UnfoldImpl(ExpandingArray<2> kernel_size) : UnfoldImpl(UnfoldOptions(kernel_size)) {}
  explicit UnfoldImpl(const UnfoldOptions& options);
  /// Nothing to reset (no parameters).
  void reset() {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  UnfoldOptions options;
};
TENSOR_MODULE(Unfold);

namespace functional {
using FoldFuncOptions = FoldOptions;
using UnfoldFuncOptions = UnfoldOptions;
/// tensor::col2im with the options struct: (N, C * kh * kw, L) or (C * kh * kw, L) inputs.
TENSOR_API Tensor fold(const Tensor& input, const FoldFuncOptions& options);
/// tensor::im2col with the options struct: (N, C, H, W) or (C, H, W) inputs.
TENSOR_API Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options);
}  // namespace functional

}  // namespace tensor::nn
