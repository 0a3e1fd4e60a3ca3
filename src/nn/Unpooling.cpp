// Max unpooling and fractional max pooling modules and functionals (include/tensor/nn/unpooling.h):
// thin layers over the ops of tensor/pooling.h (src/ops/UnpoolOps.cpp), which own the kernels
// and autograd. The argument rules are libtorch's (torch/nn/functional/pooling.h).
#include "tensor/nn/unpooling.h"

#include <ostream>
#include <string>

#include "src/core/Check.h"
#include "tensor/ops.h"
#include "tensor/pooling.h"

namespace tensor::nn {

namespace {

/// The unpooled spatial size: (in - 1) * stride + kernel - 2 * padding per dim, or output_size
/// (D values, or D + 2 whose first two are dropped), which must lie strictly within one stride
/// of that default (libtorch's _unpool_output_size).
std::vector<int64_t> unpool_output_size(const char* op, const Tensor& input, IntArrayRef kernel_size,
                                        IntArrayRef stride, IntArrayRef padding,
                                        const std::optional<std::vector<int64_t>>& output_size) {
  const size_t dims = kernel_size.size();
  TENSOR_CHECK(input.defined(), "{}: the input is undefined", op);
  TENSOR_CHECK(input.dim() >= static_cast<int64_t>(dims), "{}: expected an input with at least {} dims, got {}", op,
               dims, input.describe());
  std::vector<int64_t> def;
  for (size_t d = 0; d < dims; ++d)
    def.push_back((input.size(input.dim() - static_cast<int64_t>(dims - d)) - 1) * stride[d] + kernel_size[d] -
                  2 * padding[d]);
  if (!output_size) return def;
  std::vector<int64_t> out = *output_size;
  if (out.size() == dims + 2) out.erase(out.begin(), out.begin() + 2);
  TENSOR_CHECK(out.size() == dims,
               "{}: output_size should be a sequence containing {} or {} elements, but it has a length of '{}' "
               "(input {})", op, dims, dims + 2, output_size->size(), input.describe());
  for (size_t d = 0; d < dims; ++d) {
    const int64_t lo = def[d] - stride[d], hi = def[d] + stride[d];
    TENSOR_CHECK(lo < out[d] && out[d] < hi, "{}: invalid output_size \"{}\" (dim {} must be between {} and {})", op,
                 ::tensor::detail::shape_str(out), d, lo, hi);
  }
  return out;
}

template <size_t D>
void check_fractional_options(const char* name, const FractionalMaxPoolOptions<D>& o) {
  TENSOR_CHECK(o.output_size() || o.output_ratio(),
               "{} requires specifying either an output size, or a pooling ratio", name);
  TENSOR_CHECK(!(o.output_size() && o.output_ratio()), "{}: only one of output_size and output_ratio may be specified",
               name);
  if (o.output_ratio()) {
    const auto& r = *o.output_ratio();
    for (size_t d = 0; d < D; ++d)
      TENSOR_CHECK(0 < r[d] && r[d] < 1, "{}: output_ratio must be between 0 and 1 (got [{}])", name,
                   fmt::join(r.data(), r.data() + D, ", "));
  }
}

/// libtorch's F::fractional_max_pool{2,3}d_with_indices: the output size from output_size or
/// output_ratio (floor(in * ratio)), and samples drawn from the global generator when none are
/// given: uniform [0, 1) of shape (N, C, D) in the input's dtype.
template <size_t D>
std::tuple<Tensor, Tensor> fractional(const char* op, const Tensor& input, const FractionalMaxPoolOptions<D>& o,
                                      const Tensor& samples) {
  TENSOR_CHECK(input.defined(), "{}: the input is undefined", op);
  TENSOR_CHECK(o.output_size() || o.output_ratio(), "{} requires specifying either an output_size or an output_ratio",
               op);
  TENSOR_CHECK(input.dim() == static_cast<int64_t>(D) + 1 || input.dim() == static_cast<int64_t>(D) + 2,
               "{}: expected a {}-d or {}-d input, but got {}", op, D + 1, D + 2, input.describe());
  std::vector<int64_t> out(D);
  for (size_t d = 0; d < D; ++d) {
    const int64_t in = input.size(input.dim() - static_cast<int64_t>(D - d));
    out[d] = o.output_size() ? (*o.output_size())[d]
                             : static_cast<int64_t>(static_cast<double>(in) * (*o.output_ratio())[d]);
  }
  Tensor s = samples;
  if (!s.defined()) {
    const bool unbatched = input.dim() == static_cast<int64_t>(D) + 1;
    const int64_t n = unbatched ? 1 : input.size(0);
    s = rand({n, input.size(-static_cast<int64_t>(D) - 1), static_cast<int64_t>(D)},
             TensorOptions(input.scalar_type()).device(input.device()));
  }
  if constexpr (D == 2) return tensor::fractional_max_pool2d(input, o.kernel_size(), out, s);
  else return tensor::fractional_max_pool3d(input, o.kernel_size(), out, s);
}

template <size_t D>
void print_unpool(std::ostream& s, const char* name, const MaxUnpoolOptions<D>& o) {
  s << "tensor::nn::" << name << "(kernel_size=" << o.kernel_size() << ", stride=" << o.stride()
    << ", padding=" << o.padding() << ")";
}

}  // namespace

// ---- functional ----
namespace functional {

Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& o) {
  std::vector<int64_t> size =
      unpool_output_size("max_unpool1d", input, o.kernel_size(), o.stride(), o.padding(), o.output_size());
  size.push_back(1);
  return tensor::max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), size).squeeze(-1);
}

Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& o) {
  return tensor::max_unpool2d(
      input, indices, unpool_output_size("max_unpool2d", input, o.kernel_size(), o.stride(), o.padding(), o.output_size()));
}

Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& o) {
  return tensor::max_unpool3d(
      input, indices, unpool_output_size("max_unpool3d", input, o.kernel_size(), o.stride(), o.padding(), o.output_size()),
      o.stride(), o.padding());
}

Tensor fractional_max_pool2d(const Tensor& input, const FractionalMaxPool2dFuncOptions& o) {
  return std::get<0>(fractional_max_pool2d_with_indices(input, o));
}
std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& input,
                                                              const FractionalMaxPool2dFuncOptions& o) {
  return fractional<2>("fractional_max_pool2d", input, o, o._random_samples());
}
Tensor fractional_max_pool3d(const Tensor& input, const FractionalMaxPool3dFuncOptions& o) {
  return std::get<0>(fractional_max_pool3d_with_indices(input, o));
}
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& input,
                                                              const FractionalMaxPool3dFuncOptions& o) {
  return fractional<3>("fractional_max_pool3d", input, o, o._random_samples());
}

}  // namespace functional

namespace F = functional;

// ---- modules ----
MaxUnpool1dImpl::MaxUnpool1dImpl(const MaxUnpool1dOptions& options_)
    : Module("tensor::nn::MaxUnpool1d"), options(options_) {}
Tensor MaxUnpool1dImpl::forward(const Tensor& input, const Tensor& indices,
                                const std::optional<std::vector<int64_t>>& output_size) {
  return F::max_unpool1d(input, indices,
                         F::MaxUnpool1dFuncOptions(options.kernel_size()).stride(options.stride()).padding(
                             options.padding()).output_size(output_size));
}
void MaxUnpool1dImpl::pretty_print(std::ostream& s) const { print_unpool(s, "MaxUnpool1d", options); }

MaxUnpool2dImpl::MaxUnpool2dImpl(const MaxUnpool2dOptions& options_)
    : Module("tensor::nn::MaxUnpool2d"), options(options_) {}
Tensor MaxUnpool2dImpl::forward(const Tensor& input, const Tensor& indices,
                                const std::optional<std::vector<int64_t>>& output_size) {
  return F::max_unpool2d(input, indices,
                         F::MaxUnpool2dFuncOptions(options.kernel_size()).stride(options.stride()).padding(
                             options.padding()).output_size(output_size));
}
void MaxUnpool2dImpl::pretty_print(std::ostream& s) const { print_unpool(s, "MaxUnpool2d", options); }

MaxUnpool3dImpl::MaxUnpool3dImpl(const MaxUnpool3dOptions& options_)
    : Module("tensor::nn::MaxUnpool3d"), options(options_) {}
Tensor MaxUnpool3dImpl::forward(const Tensor& input, const Tensor& indices,
                                const std::optional<std::vector<int64_t>>& output_size) {
  return F::max_unpool3d(input, indices,
                         F::MaxUnpool3dFuncOptions(options.kernel_size()).stride(options.stride()).padding(
                             options.padding()).output_size(output_size));
}
void MaxUnpool3dImpl::pretty_print(std::ostream& s) const { print_unpool(s, "MaxUnpool3d", options); }

FractionalMaxPool2dImpl::FractionalMaxPool2dImpl(FractionalMaxPool2dOptions options_)
    : Module("tensor::nn::FractionalMaxPool2d"), options(std::move(options_)) {
  reset();
}
void FractionalMaxPool2dImpl::reset() {
  _random_samples = register_buffer("_random_samples", options._random_samples());
  check_fractional_options("FractionalMaxPool2d", options);
}
Tensor FractionalMaxPool2dImpl::forward(const Tensor& input) { return std::get<0>(forward_with_indices(input)); }
std::tuple<Tensor, Tensor> FractionalMaxPool2dImpl::forward_with_indices(const Tensor& input) {
  return fractional<2>("fractional_max_pool2d", input, options, _random_samples);
}
void FractionalMaxPool2dImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::FractionalMaxPool2d()"; }

FractionalMaxPool3dImpl::FractionalMaxPool3dImpl(FractionalMaxPool3dOptions options_)
    : Module("tensor::nn::FractionalMaxPool3d"), options(std::move(options_)) {
  reset();
}
void FractionalMaxPool3dImpl::reset() {
  _random_samples = register_buffer("_random_samples", options._random_samples());
  check_fractional_options("FractionalMaxPool3d", options);
}
Tensor FractionalMaxPool3dImpl::forward(const Tensor& input) { return std::get<0>(forward_with_indices(input)); }
std::tuple<Tensor, Tensor> FractionalMaxPool3dImpl::forward_with_indices(const Tensor& input) {
  return fractional<3>("fractional_max_pool3d", input, options, _random_samples);
}
void FractionalMaxPool3dImpl::pretty_print(std::ostream& s) const { s << "tensor::nn::FractionalMaxPool3d()"; }

}  // namespace tensor::nn
