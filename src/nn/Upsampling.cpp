// F::interpolate and nn::Upsample (include/tensor/nn/upsampling.h), following PyTorch's source
// index rules (aten/src/ATen/native/UpSample.h) dim by dim; bicubic through the op
// upsample_bicubic2d (src/ops/UpsampleOps.cpp).
#include "tensor/nn/upsampling.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "src/core/Check.h"
#include "tensor/ops.h"
#include "tensor/pooling.h"

namespace tensor::nn {

namespace functional {

namespace {

// PyTorch's area_pixel_compute_scale: the source step per output step.
double linear_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  return scale.has_value() && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}

// Nearest modes compute their scale in float, as PyTorch's kernels.
float nearest_scale(int64_t in, int64_t out, std::optional<double> scale) {
  return scale.has_value() && *scale > 0 ? static_cast<float>(1.0 / *scale)
                                         : static_cast<float>(in) / static_cast<float>(out);
}

// Resizes dim d of x from in to out positions.
Tensor resize_dim(const Tensor& x, int64_t d, int64_t out, InterpolateMode mode, bool align_corners,
                  std::optional<double> scale) {
  const int64_t in = x.size(d);
  if (mode == kNearest || mode == kNearestExact) {
    std::vector<int64_t> idx(static_cast<size_t>(out));
    const float s = nearest_scale(in, out, scale);
    for (int64_t o = 0; o < out; ++o) {
      const float pos = mode == kNearest ? static_cast<float>(o) * s : (static_cast<float>(o) + 0.5f) * s;
      idx[static_cast<size_t>(o)] = std::min(static_cast<int64_t>(std::floor(pos)), in - 1);
    }
    return x.index_select(d, tensor::tensor(idx, kInt64).to(x.device()));
  }
  // Linear: two neighbours i0, i1 and weights (1 - l, l).
  const double s = linear_scale(in, out, align_corners, scale);
  std::vector<int64_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
  std::vector<double> l1(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double src = align_corners ? s * static_cast<double>(o) : s * (static_cast<double>(o) + 0.5) - 0.5;
    if (src < 0) src = 0;
    const int64_t a = std::min(static_cast<int64_t>(src), in - 1);
    i0[static_cast<size_t>(o)] = a;
    i1[static_cast<size_t>(o)] = a + (a < in - 1 ? 1 : 0);
    l1[static_cast<size_t>(o)] = src - static_cast<double>(a);
  }
  std::vector<int64_t> wshape(static_cast<size_t>(x.dim()), 1);
  wshape[static_cast<size_t>(d)] = out;
  Tensor w1 = tensor::tensor(l1, kFloat64).reshape(wshape).to(x.dtype()).to(x.device());
  Tensor a = x.index_select(d, tensor::tensor(i0, kInt64).to(x.device()));
  Tensor b = x.index_select(d, tensor::tensor(i1, kInt64).to(x.device()));
  return a * (1 - w1) + b * w1;
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options) {
  const char* op = "interpolate";
  TENSOR_CHECK(input.defined(), "{}: input must be defined", op);
  const InterpolateMode mode = options.mode();
  TENSOR_CHECK(input.dim() >= 3 && input.dim() <= 5,
               "{}: expected a 3-d, 4-d or 5-d input [N, C, spatial...], got {} (mode {})", op, input.describe(),
               mode.name());
  const int64_t sd = input.dim() - 2;
  TENSOR_CHECK(!options.antialias(), "{}: antialias is not supported", op);
  const bool linear = mode == kLinear || mode == kBilinear || mode == kBicubic || mode == kTrilinear;
  TENSOR_CHECK(linear || !options.align_corners().has_value(),
               "{}: align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
               "trilinear (mode {})",
               op, mode.name());
  if (mode == kLinear)
    TENSOR_CHECK(input.dim() == 3, "{}: mode linear expects a 3-d input [N, C, L], got {}", op, input.describe());
  if (mode == kBilinear)
    TENSOR_CHECK(input.dim() == 4, "{}: mode bilinear expects a 4-d input [N, C, H, W], got {}", op, input.describe());
  if (mode == kBicubic)
    TENSOR_CHECK(input.dim() == 4, "{}: mode bicubic expects a 4-d input [N, C, H, W], got {}", op, input.describe());
  if (mode == kTrilinear)
    TENSOR_CHECK(input.dim() == 5, "{}: mode trilinear expects a 5-d input [N, C, D, H, W], got {}", op,
                 input.describe());
  if (linear) TENSOR_CHECK(input.is_floating_point(), "{}: mode {} needs a floating point input, got {}", op,
                           mode.name(), input.describe());

  const auto& size = options.size();
  const auto& scale_factor = options.scale_factor();
  TENSOR_CHECK(size.has_value() != scale_factor.has_value(),
               "{}: {} (give exactly one of size and scale_factor)", op,
               size.has_value() ? "only one of size or scale_factor should be defined"
                                : "either size or scale_factor should be defined");
  std::vector<int64_t> out_size(static_cast<size_t>(sd));
  std::vector<std::optional<double>> scales(static_cast<size_t>(sd));
  if (size.has_value()) {
    const auto& s = *size;
    TENSOR_CHECK(s.size() == 1 || static_cast<int64_t>(s.size()) == sd,
                 "{}: size shape must match input shape. Input is {}D, size is {}", op, sd, s.size());
    for (int64_t i = 0; i < sd; ++i) out_size[static_cast<size_t>(i)] = s.size() == 1 ? s[0] : s[static_cast<size_t>(i)];
  } else {
    const auto& f = *scale_factor;
    TENSOR_CHECK(f.size() == 1 || static_cast<int64_t>(f.size()) == sd,
                 "{}: scale_factor shape must match input shape. Input is {}D, scale_factor is {}", op, sd, f.size());
    const bool recompute = options.recompute_scale_factor().value_or(false);
    for (int64_t i = 0; i < sd; ++i) {
      const double sf = f.size() == 1 ? f[0] : f[static_cast<size_t>(i)];
      TENSOR_CHECK(sf > 0, "{}: scale_factor must be positive, got {}", op, sf);
      out_size[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(input.size(i + 2)) * sf));
      if (!recompute) scales[static_cast<size_t>(i)] = sf;
    }
  }
  for (int64_t i = 0; i < sd; ++i)
    TENSOR_CHECK(out_size[static_cast<size_t>(i)] > 0 && input.size(i + 2) > 0,
                 "{}: input {} and output sizes {} should be greater than 0", op, input.describe(),
                 ::tensor::detail::shape_str(out_size));

  if (mode == kArea) {
    TENSOR_CHECK(input.dim() <= 4, "{}: mode area supports 3-d and 4-d inputs here, got {}", op, input.describe());
    if (input.dim() == 3) return tensor::adaptive_avg_pool2d(input.unsqueeze(2), {1, out_size[0]}).squeeze(2);
    return tensor::adaptive_avg_pool2d(input, out_size);
  }
  const bool ac = options.align_corners().value_or(false);
  // Bicubic mixes 4x4 neighbours, so it is its own op rather than one resize per dim.
  if (mode == kBicubic) return tensor::upsample_bicubic2d(input, out_size, ac, scales[0], scales[1]);
  Tensor x = input;
  for (int64_t i = 0; i < sd; ++i)
    if (out_size[static_cast<size_t>(i)] != x.size(i + 2) || linear)
      x = resize_dim(x, i + 2, out_size[static_cast<size_t>(i)], mode, ac, scales[static_cast<size_t>(i)]);
  return x;
}

}  // namespace functional

UpsampleImpl::UpsampleImpl(const UpsampleOptions& options_) : Module("tensor::nn::Upsample"), options(options_) {}

Tensor UpsampleImpl::forward(const Tensor& input) {
  return functional::interpolate(input, functional::InterpolateFuncOptions()
                                            .size(options.size())
                                            .scale_factor(options.scale_factor())
                                            .mode(options.mode())
                                            .align_corners(options.align_corners()));
}

void UpsampleImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::Upsample(";
  if (options.scale_factor().has_value()) {
    s << "scale_factor=[";
    const auto& f = *options.scale_factor();
    for (size_t i = 0; i < f.size(); ++i) s << (i ? ", " : "") << f[i];
    s << "]";
  } else if (options.size().has_value()) {
    s << "size=[";
    const auto& f = *options.size();
    for (size_t i = 0; i < f.size(); ++i) s << (i ? ", " : "") << f[i];
    s << "]";
  }
  s << ", mode=" << options.mode().name() << ")";
}

}  // namespace tensor::nn
