// nn::Fold / nn::Unfold and F::fold / F::unfold over tensor::col2im / tensor::im2col
// (src/ops/FoldOps.cpp). libtorch's C++ F::unfold takes 4-D inputs only; here it also takes the
// unbatched 3-D form, as PyTorch's F.unfold and at::im2col do.
#include "tensor/nn/fold.h"

#include <ostream>

#include "tensor/conv.h"

namespace tensor::nn {

namespace {
void print_pair(std::ostream& s, const char* name, const ExpandingArray<2>& a) {
  s << ", " << name << "=[" << a[0] << ", " << a[1] << "]";
}
}  // namespace

FoldImpl::FoldImpl(const FoldOptions& options_) : Module("tensor::nn::Fold"), options(options_) {}
Tensor FoldImpl::forward(const Tensor& input) { return functional::fold(input, options); }
void FoldImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Fold(output_size=[" << options.output_size()[0] << ", " << options.output_size()[1] << "]";
  print_pair(s, "kernel_size", options.kernel_size());
  print_pair(s, "dilation", options.dilation());
  print_pair(s, "padding", options.padding());
  print_pair(s, "stride", options.stride());
  s << ")";
}

UnfoldImpl::UnfoldImpl(const UnfoldOptions& options_) : Module("tensor::nn::Unfold"), options(options_) {}
Tensor UnfoldImpl::forward(const Tensor& input) { return functional::unfold(input, options); }
void UnfoldImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Unfold(kernel_size=[" << options.kernel_size()[0] << ", " << options.kernel_size()[1] << "]";
  print_pair(s, "dilation", options.dilation());
  print_pair(s, "padding", options.padding());
  print_pair(s, "stride", options.stride());
  s << ")";
}

namespace functional {
Tensor fold(const Tensor& input, const FoldFuncOptions& o) {
  return tensor::col2im(input, o.output_size(), o.kernel_size(), o.dilation(), o.padding(), o.stride());
}
Tensor unfold(const Tensor& input, const UnfoldFuncOptions& o) {
  return tensor::im2col(input, o.kernel_size(), o.dilation(), o.padding(), o.stride());
}
}  // namespace functional

}  // namespace tensor::nn
