// Local response normalization (include/tensor/nn/lrn.h). LocalResponseNorm is a composite of
// public ops, so autograd supplies first and second derivatives; CrossMapLRN2d is a custom
// autograd::Function, as libtorch's (Note [CrossMapLRN2d's backward]).
//
// Note [Channel windows as a matrix]
// Both normalizations sum x^2 over a window of channels around each channel c. libtorch pads
// and average-pools (LocalResponseNorm) or runs a running-sum recurrence (CrossMapLRN2d); here
// the window is a 0/1 matrix M (C x C) applied over dim 1 with one matmul: s[.., c, ..] =
// sum_j M[c, j] x[.., j, ..]^2. Any window, the recurrence's included, is such a matrix, and
// the gradient through it is M^T's.
#include "tensor/nn/lrn.h"

#include <algorithm>
#include <ostream>
#include <vector>

#include "src/core/Check.h"
#include "tensor/autograd/Function.h"
#include "tensor/linalg.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace {

using ::tensor::detail::shape_str;

// s = sum_j M[c, j] sq[:, j, ...] over dim 1 of sq (Note [Channel windows as a matrix]).
Tensor channel_window_sum(const Tensor& sq, const std::vector<double>& m, int64_t channels) {
  Tensor mat = tensor::tensor(m, TensorOptions(kFloat64)).reshape({channels, channels}).to(sq.options());
  return matmul(sq.transpose(1, -1), mat.t()).transpose(1, -1);
}

}  // namespace

namespace functional {

Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options) {
  const int64_t size = options.size();
  TENSOR_CHECK(input.dim() >= 3,
               "local_response_norm: expected a 3-d or higher input (N, C, *), got shape {} (dtype {})",
               shape_str(input.sizes()), input.dtype());
  TENSOR_CHECK(input.is_floating_point(),
               "local_response_norm: expected a floating-point input, got dtype {} (shape {})", input.dtype(),
               shape_str(input.sizes()));
  TENSOR_CHECK(size > 0, "local_response_norm: size must be positive, got {} (input shape {})", size,
               shape_str(input.sizes()));
  // libtorch zero-pads size / 2 channels before and (size - 1) / 2 after, then averages `size`
  // channels: channel c sums j in [c - size / 2, c + (size - 1) / 2].
  const int64_t C = input.size(1);
  std::vector<double> m(static_cast<size_t>(C * C), 0.0);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t j = std::max<int64_t>(0, c - size / 2); j <= std::min(C - 1, c + (size - 1) / 2); ++j)
      m[static_cast<size_t>(c * C + j)] = 1.0;
  Tensor div = channel_window_sum(input * input, m, C);
  div = (div * (options.alpha() / static_cast<double>(size)) + options.k()).pow(options.beta());
  return input / div;
}

}  // namespace functional

LocalResponseNormImpl::LocalResponseNormImpl(const LocalResponseNormOptions& options_)
    : Module("tensor::nn::LocalResponseNorm"), options(options_) {}
Tensor LocalResponseNormImpl::forward(const Tensor& input) { return functional::local_response_norm(input, options); }
void LocalResponseNormImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::LocalResponseNorm(" << options.size() << ", alpha=" << options.alpha()
    << ", beta=" << options.beta() << ", k=" << options.k() << ")";
}

CrossMapLRN2dImpl::CrossMapLRN2dImpl(const CrossMapLRN2dOptions& options_)
    : Module("tensor::nn::CrossMapLRN2d"), options(options_) {}

namespace {

// Note [CrossMapLRN2d's backward]
// libtorch's CrossMapLRN2d (torch/csrc/api/src/nn/modules/_functions.cpp, a port of Lua torch's
// SpatialCrossMapLRN) is an autograd::Function whose backward is not the derivative of its
// forward: grad_input = scale^-beta * g - (2 alpha beta / size) * x * accum, where accum sums
// r = g * output / scale over the channels [c - ipp, c + size - 1 - ipp], ipp = size - (size - 1) / 2
// (integer division), a window shifted from the forward's. For the same gradients as a ported
// program, this Function reproduces both (so a gradcheck of it fails, as libtorch's would).
struct CrossMapLRN2dFunction : autograd::Function<CrossMapLRN2dFunction> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& input, int64_t size, double alpha, double beta,
                        int64_t k) {
    // libtorch's (and Lua torch's) running sum: scale[0] sums channels [0, pre_pad); each next
    // channel c adds channel c + pre_pad - 1 when it exists and, when c > pre_pad, subtracts
    // channel c - pre_pad. Channel 0 is therefore never subtracted: channel c's window is
    // [c - pre_pad + 1, c + pre_pad - 1] clipped, plus channel 0 once c >= pre_pad.
    const int64_t C = input.size(1);
    const int64_t pre_pad = (size - 1) / 2 + 1;
    std::vector<double> m(static_cast<size_t>(C * C), 0.0);
    for (int64_t c = 0; c < C; ++c) {
      const int64_t hi = std::min(c + pre_pad - 1, C - 1);
      for (int64_t j = 0; j <= hi; ++j)
        if (j == 0 || j >= c - pre_pad + 1) m[static_cast<size_t>(c * C + j)] = 1.0;
    }
    Tensor scale =
        channel_window_sum(input * input, m, C) * (alpha / static_cast<double>(size)) + static_cast<double>(k);
    Tensor output = input * scale.pow(-beta);
    ctx->save_for_backward({input, output, scale});
    ctx->saved_data["size"] = size;
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["beta"] = beta;
    return output;
  }

  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list grads) {
    const autograd::variable_list saved = ctx->get_saved_variables();
    const Tensor &input = saved[0], &output = saved[1], &scale = saved[2];
    const int64_t size = ctx->saved_data["size"].to_int();
    const double alpha = ctx->saved_data["alpha"].to_double(), beta = ctx->saved_data["beta"].to_double();
    const Tensor& g = grads[0];
    const int64_t C = input.size(1);
    const int64_t ipp = size - (size - 1) / 2;
    std::vector<double> m(static_cast<size_t>(C * C), 0.0);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t j = std::max<int64_t>(0, c - ipp); j <= std::min(C - 1, c + size - 1 - ipp); ++j)
        m[static_cast<size_t>(c * C + j)] = 1.0;
    Tensor accum = channel_window_sum(g * output / scale, m, C);
    const double cache_ratio = 2 * alpha * beta / static_cast<double>(size);
    return {scale.pow(-beta) * g - cache_ratio * input * accum, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

Tensor CrossMapLRN2dImpl::forward(const Tensor& input) {
  const int64_t size = options.size();
  TENSOR_CHECK(input.dim() == 4, "CrossMapLRN2d: expected a 4-d input (N, C, H, W), got shape {} (dtype {})",
               shape_str(input.sizes()), input.dtype());
  TENSOR_CHECK(input.is_floating_point(), "CrossMapLRN2d: expected a floating-point input, got dtype {} (shape {})",
               input.dtype(), shape_str(input.sizes()));
  TENSOR_CHECK(size > 0, "CrossMapLRN2d: size must be positive, got {} (input shape {})", size,
               shape_str(input.sizes()));
  return CrossMapLRN2dFunction::apply(input, size, options.alpha(), options.beta(), options.k());
}

void CrossMapLRN2dImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::CrossMapLRN2d(" << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta()
    << ", k=" << options.k() << ")";
}

}  // namespace tensor::nn
