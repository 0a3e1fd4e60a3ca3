// Front ends of pooling and normalization: libtorch's argument rules and output sizes, checks
// that name the op, the shapes and dtypes, and the dispatcher table (src/ops/PoolNormOps.h).
// Each op is a front end (Note [Front ends and backend kernels]): checks, geometry, output
// sizes and what it can allocate without knowing the kernel (Meta stops there), then the
// backend's kernel. CPU's kernels (src/cpu/PoolNormKernel.cpp) choose between oneDNN and the
// plain loops, and so allocate the results whose layout follows that choice. Derivatives: rows of src/autograd/Derivatives.cpp, src/autograd/PoolNormFormulas.cpp.
#include "src/ops/PoolNormOps.h"
#include "src/cpu/PoolNorm.h"

#include <array>

#include "src/core/Check.h"
#include "src/cpu/Layout.h"
#include "src/dispatch/BackendKernels.h"
#include "src/ops/CompositeOps.h"
#include "tensor/normalization.h"
#include "tensor/ops.h"
#include "tensor/pooling.h"

namespace tensor {
namespace ops {
namespace {

using kernels::Pool2d;

using detail::shape_str;

// The per-backend kernels, one table per op: CPU's built in (src/cpu/PoolNormKernel.cpp),
// CUDA's registered (register_kernels).
using dispatch::BackendKernels;
BackendKernels<MaxPoolKernel> g_max_pool2d{{&cpu::max_pool2d_kernel, nullptr}};
BackendKernels<MaxPoolIdxKernel> g_max_pool2d_with_indices{{&cpu::max_pool2d_with_indices_kernel, nullptr}};
BackendKernels<MaxPoolBwdKernel> g_max_pool2d_backward{{&cpu::max_pool2d_backward_kernel, nullptr}};
BackendKernels<AvgPoolKernel> g_avg_pool2d{{&cpu::avg_pool2d_kernel, nullptr}};
BackendKernels<AvgPoolBwdKernel> g_avg_pool2d_backward{{&cpu::avg_pool2d_backward_kernel, nullptr}};
BackendKernels<AdaptivePoolKernel> g_adaptive_avg_pool2d{{&cpu::adaptive_avg_pool2d_kernel, nullptr}};
BackendKernels<AdaptivePoolBwdKernel> g_adaptive_avg_pool2d_backward{{&cpu::adaptive_avg_pool2d_backward_kernel, nullptr}};
BackendKernels<BatchNormKernel> g_batch_norm{{&cpu::batch_norm_kernel, nullptr}};
BackendKernels<BatchNormBwdKernel> g_batch_norm_backward{{&cpu::batch_norm_backward_kernel, nullptr}};
BackendKernels<LayerNormKernel> g_layer_norm{{&cpu::layer_norm_kernel, nullptr}};
BackendKernels<LayerNormBwdKernel> g_layer_norm_backward{{&cpu::layer_norm_backward_kernel, nullptr}};
BackendKernels<GroupNormKernel> g_group_norm{{&cpu::group_norm_kernel, nullptr}};
BackendKernels<GroupNormBwdKernel> g_group_norm_backward{{&cpu::group_norm_backward_kernel, nullptr}};
BackendKernels<MaxPool3dIdxKernel> g_max_pool3d_with_indices{{&cpu::max_pool3d_with_indices_kernel, nullptr}};
BackendKernels<AdaptiveMaxPoolKernel> g_adaptive_max_pool3d{{&cpu::adaptive_max_pool3d_kernel, nullptr}};

void check_floating(const char* op, const Tensor& x) {
  TENSOR_CHECK(x.is_floating_point(), "{}: expected a floating point input, got {}", op, x.describe());
}

/// Statistics dtype: float64 for float64 inputs, float32 otherwise (oneDNN's scale, shift,
/// mean and variance are float32 for bfloat16 data too).
ScalarType stat_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

using cpu::empty_row_major_like;

// ---- pooling geometry ----
std::array<int64_t, 2> pair_arg(const char* op, const char* name, IntArrayRef v, IntArrayRef in_sizes) {
  TENSOR_CHECK(v.size() == 1 || v.size() == 2,
               "{}: {} must be a single int or two ints (h, w), got {} (input shape {})", op, name, shape_str(v),
               shape_str(in_sizes));
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// libtorch's pooling_output_shape: with ceil_mode, the last window must start inside the
/// input or the left padding.
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  int64_t out = floor_div(in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

void check_pool_input(const char* op, IntArrayRef sizes) {
  const size_t nd = sizes.size();
  TENSOR_CHECK(nd == 3 || nd == 4, "{}: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape {}", op,
               shape_str(sizes));
  for (size_t d = nd - 3; d < nd; ++d)
    TENSOR_CHECK(sizes[d] > 0, "{}: expected an input with non-zero C, H and W (only the batch may be empty), got shape {}",
                 op, shape_str(sizes));
}

/// Checks a pooling call and computes its geometry from the input's sizes.
Pool2d pool_geometry(const char* op, IntArrayRef sizes, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                     IntArrayRef dilation, bool ceil_mode) {
  check_pool_input(op, sizes);
  const auto k = pair_arg(op, "kernel_size", kernel, sizes);
  const auto s = stride.empty() ? k : pair_arg(op, "stride", stride, sizes);
  const auto p = pair_arg(op, "padding", padding, sizes);
  const auto d = pair_arg(op, "dilation", dilation, sizes);
  TENSOR_CHECK(k[0] > 0 && k[1] > 0, "{}: kernel_size must be greater than zero, got ({}, {}) (input shape {})", op,
               k[0], k[1], shape_str(sizes));
  TENSOR_CHECK(s[0] > 0 && s[1] > 0, "{}: stride must be greater than zero, got ({}, {}) (input shape {})", op, s[0],
               s[1], shape_str(sizes));
  TENSOR_CHECK(d[0] > 0 && d[1] > 0, "{}: dilation must be greater than zero, got ({}, {}) (input shape {})", op, d[0],
               d[1], shape_str(sizes));
  TENSOR_CHECK(p[0] >= 0 && p[1] >= 0, "{}: padding must be non-negative, got ({}, {}) (input shape {})", op, p[0], p[1],
               shape_str(sizes));
  TENSOR_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2,
               "{}: pad should be at most half of kernel size, but got padding ({}, {}) for kernel_size ({}, {}) "
               "(input shape {})", op, p[0], p[1], k[0], k[1], shape_str(sizes));
  Pool2d g;
  const size_t nd = sizes.size();
  g.n = nd == 4 ? sizes[0] : 1;
  g.c = sizes[nd - 3];
  g.ih = sizes[nd - 2];
  g.iw = sizes[nd - 1];
  g.kh = k[0], g.kw = k[1], g.sh = s[0], g.sw = s[1], g.ph = p[0], g.pw = p[1], g.dh = d[0], g.dw = d[1];
  g.ceil_mode = ceil_mode;
  g.oh = pool_out(g.ih, g.kh, g.ph, g.sh, g.dh, ceil_mode);
  g.ow = pool_out(g.iw, g.kw, g.pw, g.sw, g.dw, ceil_mode);
  TENSOR_CHECK(g.oh >= 1 && g.ow >= 1,
               "{}: given input shape {}, kernel_size ({}, {}), stride ({}, {}), padding ({}, {}) and dilation ({}, {}), "
               "the calculated output size ({}x{}) is too small: the kernel is larger than the padded input",
               op, shape_str(sizes), g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.oh, g.ow);
  return g;
}

DimVector pool_out_sizes(IntArrayRef in, const Pool2d& g) {
  DimVector s(in);
  s[s.size() - 2] = g.oh;
  s[s.size() - 1] = g.ow;
  return s;
}

// ---- max pooling ----
template <DispatchKey K>
Tensor max_pool2d_fn(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d, bool ceil_mode) {
  const MaxPoolKernel kernel = g_max_pool2d.get<K>("max_pool2d");
  check_floating("max_pool2d", x);
  Pool2d g = pool_geometry("max_pool2d", x.sizes(), k, s, p, d, ceil_mode);
  DimVector osz = pool_out_sizes(x.sizes(), g);
  if (K == DispatchKey::Meta || x.numel() == 0) return empty(osz, x.options());
  return kernel(x, g);
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> max_pool2d_with_indices_fn(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                                      IntArrayRef d, bool ceil_mode) {
  const MaxPoolIdxKernel kernel = g_max_pool2d_with_indices.get<K>("max_pool2d_with_indices");
  check_floating("max_pool2d_with_indices", x);
  Pool2d g = pool_geometry("max_pool2d_with_indices", x.sizes(), k, s, p, d, ceil_mode);
  DimVector osz = pool_out_sizes(x.sizes(), g);
  if (K == DispatchKey::Meta || x.numel() == 0) return {empty(osz, x.options()), empty(osz, x.options().dtype(kInt64))};
  return kernel(x, g);
}

template <DispatchKey K>
Tensor max_pool2d_backward_fn(const Tensor& grad, IntArrayRef in_sizes, const Tensor& indices) {
  const MaxPoolBwdKernel kernel = g_max_pool2d_backward.get<K>("max_pool2d_backward");
  check_pool_input("max_pool2d_backward", in_sizes);
  TENSOR_CHECK(grad.sizes() == indices.sizes() && grad.dim() == static_cast<int64_t>(in_sizes.size()),
               "max_pool2d_backward: grad_output {} and indices {} must have the output's shape (input shape {})",
               grad.describe(), indices.describe(), shape_str(in_sizes));
  Pool2d g;
  const size_t nd = in_sizes.size();
  g.n = nd == 4 ? in_sizes[0] : 1;
  g.c = in_sizes[nd - 3], g.ih = in_sizes[nd - 2], g.iw = in_sizes[nd - 1];
  g.oh = grad.size(-2), g.ow = grad.size(-1);
  Tensor gi = empty(in_sizes, grad.options());
  if constexpr (K != DispatchKey::Meta)
    if (gi.numel() != 0) kernel(grad, indices, g, gi);
  return gi;
}

// ---- average pooling ----
Pool2d avg_geometry(const char* op, IntArrayRef sizes, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                    bool count_include_pad, std::optional<int64_t> divisor) {
  TENSOR_CHECK(!divisor || *divisor != 0, "{}: divisor_override must be non-zero (input shape {})", op, shape_str(sizes));
  Pool2d g = pool_geometry(op, sizes, k, s, p, IntArrayRef(int64_t{1}), ceil_mode);
  g.count_include_pad = count_include_pad;
  g.divisor = divisor.value_or(0);
  return g;
}

template <DispatchKey K>
Tensor avg_pool2d_fn(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                     bool count_include_pad, std::optional<int64_t> divisor) {
  const AvgPoolKernel kernel = g_avg_pool2d.get<K>("avg_pool2d");
  check_floating("avg_pool2d", x);
  Pool2d g = avg_geometry("avg_pool2d", x.sizes(), k, s, p, ceil_mode, count_include_pad, divisor);
  DimVector osz = pool_out_sizes(x.sizes(), g);
  if (K == DispatchKey::Meta || x.numel() == 0) return empty(osz, x.options());
  return kernel(x, g);
}

template <DispatchKey K>
Tensor avg_pool2d_backward_fn(const Tensor& grad, IntArrayRef in_sizes, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                              bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor) {
  const AvgPoolBwdKernel kernel = g_avg_pool2d_backward.get<K>("avg_pool2d_backward");
  Pool2d g = avg_geometry("avg_pool2d_backward", in_sizes, k, s, p, ceil_mode, count_include_pad, divisor);
  DimVector osz = pool_out_sizes(in_sizes, g);
  TENSOR_CHECK(grad.sizes() == IntArrayRef(osz), "avg_pool2d_backward: grad_output {} must have the output shape {}",
               grad.describe(), shape_str(osz));
  if (K == DispatchKey::Meta || grad.numel() == 0) return zeros(in_sizes, grad.options());
  return kernel(grad, in_sizes, g);
}

// ---- adaptive average pooling ----
Pool2d adaptive_geometry(const char* op, IntArrayRef sizes, IntArrayRef output_size) {
  check_pool_input(op, sizes);
  TENSOR_CHECK(output_size.size() == 2, "{}: output_size must have 2 elements (oh, ow), got {} (input shape {})", op,
               shape_str(output_size), shape_str(sizes));
  TENSOR_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
               "{}: elements of output_size must be greater than or equal to 0, got {} (input shape {})", op,
               shape_str(output_size), shape_str(sizes));
  Pool2d g;
  const size_t nd = sizes.size();
  g.n = nd == 4 ? sizes[0] : 1;
  g.c = sizes[nd - 3], g.ih = sizes[nd - 2], g.iw = sizes[nd - 1];
  g.oh = output_size[0], g.ow = output_size[1];
  return g;
}

template <DispatchKey K>
Tensor adaptive_avg_pool2d_fn(const Tensor& x, IntArrayRef output_size) {
  const AdaptivePoolKernel kernel = g_adaptive_avg_pool2d.get<K>("adaptive_avg_pool2d");
  check_floating("adaptive_avg_pool2d", x);
  Pool2d g = adaptive_geometry("adaptive_avg_pool2d", x.sizes(), output_size);
  DimVector osz = pool_out_sizes(x.sizes(), g);
  if (K == DispatchKey::Meta || x.numel() == 0 || g.oh * g.ow == 0) return empty(osz, x.options());
  return kernel(x, g);
}

template <DispatchKey K>
Tensor adaptive_avg_pool2d_backward_fn(const Tensor& grad, IntArrayRef in_sizes) {
  const AdaptivePoolBwdKernel kernel = g_adaptive_avg_pool2d_backward.get<K>("adaptive_avg_pool2d_backward");
  TENSOR_CHECK(grad.dim() == static_cast<int64_t>(in_sizes.size()) && grad.dim() >= 3,
               "adaptive_avg_pool2d_backward: grad_output {} does not match the input shape {}", grad.describe(),
               shape_str(in_sizes));
  Pool2d g = adaptive_geometry("adaptive_avg_pool2d_backward", in_sizes, {grad.size(-2), grad.size(-1)});
  Tensor gi = empty(in_sizes, grad.options());
  if constexpr (K != DispatchKey::Meta)
    if (gi.numel() != 0) kernel(grad, g, gi);
  return gi;
}

// ---- normalization: shared checks ----
/// An optional per-channel (or per-element) parameter: 1-d with `n` elements.
void check_param(const char* op, const char* name, const Tensor& t, int64_t n, const Tensor& x, const char* what) {
  if (!t.defined()) return;
  TENSOR_CHECK(t.dim() == 1 && t.numel() == n, "{}: {} should be a 1-d tensor of {} elements ({}), got {} for input {}",
               op, name, n, what, t.describe(), x.describe());
}

template <DispatchKey K>
NormResult batch_norm_fn(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                         bool training, double momentum, double eps) {
  const BatchNormKernel kernel = g_batch_norm.get<K>("batch_norm");
  const char* op = "batch_norm";
  TENSOR_CHECK(x.dim() >= 2 && x.dim() <= 5,
               "{}: expected a 2-d to 5-d input (N, C), (N, C, L), (N, C, H, W) or (N, C, D, H, W), got {}", op,
               x.describe());
  check_floating(op, x);
  const int64_t c = x.size(1);
  check_param(op, "weight", w, c, x, "one per input channel");
  check_param(op, "bias", b, c, x, "one per input channel");
  check_param(op, "running_mean", rm, c, x, "one per input channel");
  check_param(op, "running_var", rv, c, x, "one per input channel");
  TENSOR_CHECK(training || (rm.defined() && rv.defined()),
               "{}: running_mean and running_var must be given in evaluation mode (training=false); input {}", op,
               x.describe());
  TENSOR_CHECK(rm.defined() == rv.defined(), "{}: give both running_mean and running_var or neither (input {})", op,
               x.describe());
  const int64_t count = c == 0 ? 0 : x.numel() / c;
  TENSOR_CHECK(!training || x.numel() == 0 || count > 1,
               "{}: expected more than 1 value per channel when training, got input {}", op, x.describe());
  const ScalarType st = stat_dtype(x.scalar_type());
  Tensor mean = empty({c}, x.options().dtype(st)), var = empty({c}, x.options().dtype(st));
  if constexpr (K == DispatchKey::Meta) return {empty(x.sizes(), x.options()), mean, var};
  Tensor out = kernel(x, w, b, rm, rv, training, momentum, eps, mean, var);
  return {out, mean, var};
}

template <DispatchKey K>
NormResult batch_norm_backward_fn(const Tensor& grad, const Tensor& x, const Tensor& w, const Tensor& mean,
                                  const Tensor& var, bool training, double eps) {
  const BatchNormBwdKernel kernel = g_batch_norm_backward.get<K>("batch_norm_backward");
  TENSOR_CHECK(grad.sizes() == x.sizes(), "batch_norm_backward: grad_output {} must match the input {}", grad.describe(),
               x.describe());
  const ScalarType st = mean.scalar_type();
  const int64_t c = x.size(1);
  Tensor gw = w.defined() ? empty({c}, x.options().dtype(st)) : Tensor();
  Tensor gb = empty({c}, x.options().dtype(st));
  if constexpr (K == DispatchKey::Meta) return {empty(x.sizes(), x.options()), gw, gb};
  Tensor gx = kernel(grad, x, w, mean, var, training, eps, gw, gb);
  return {gx, gw, gb};
}

// ---- layer_norm ----
struct Rows {
  int64_t rows, cols;
};
Rows layer_norm_rows(const char* op, const Tensor& x, IntArrayRef ns, const Tensor& w, const Tensor& b) {
  check_floating(op, x);
  const int64_t k = static_cast<int64_t>(ns.size());
  bool ok = k >= 1 && x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == ns[i];
  TENSOR_CHECK(ok, "{}: given normalized_shape={}, expected input with shape [*, {}], but got input {}", op,
               shape_str(ns), fmt::join(ns.begin(), ns.end(), ", "), x.describe());
  for (const Tensor* t : {&w, &b}) {
    if (!t->defined()) continue;
    TENSOR_CHECK(t->sizes() == ns, "{}: expected {} of shape {} (normalized_shape), got {} for input {}", op,
                 t == &w ? "weight" : "bias", shape_str(ns), t->describe(), x.describe());
  }
  int64_t cols = 1;
  for (int64_t v : ns) cols *= v;
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  return {rows, cols};
}

template <DispatchKey K>
NormResult layer_norm_fn(const Tensor& x, IntArrayRef ns, const Tensor& w, const Tensor& b, double eps) {
  const LayerNormKernel kernel = g_layer_norm.get<K>("layer_norm");
  const Rows r = layer_norm_rows("layer_norm", x, ns, w, b);
  const ScalarType st = stat_dtype(x.scalar_type());
  Tensor out = empty(x.sizes(), x.options());
  Tensor mean = empty({r.rows}, x.options().dtype(st)), var = empty({r.rows}, x.options().dtype(st));
  if constexpr (K != DispatchKey::Meta)
    if (x.numel() != 0) kernel(x, r.rows, r.cols, w, b, eps, out, mean, var);
  return {out, mean, var};
}

template <DispatchKey K>
NormResult layer_norm_backward_fn(const Tensor& grad, const Tensor& x, IntArrayRef ns, const Tensor& w,
                                  const Tensor& mean, const Tensor& var, double eps) {
  const LayerNormBwdKernel kernel = g_layer_norm_backward.get<K>("layer_norm_backward");
  const Rows r = layer_norm_rows("layer_norm_backward", x, ns, w, Tensor());
  TENSOR_CHECK(grad.sizes() == x.sizes(), "layer_norm_backward: grad_output {} must match the input {}",
               grad.describe(), x.describe());
  const ScalarType st = mean.scalar_type();
  Tensor gx = empty(x.sizes(), x.options());
  Tensor gw = w.defined() ? empty({r.cols}, x.options().dtype(st)) : Tensor();
  Tensor gb = empty({r.cols}, x.options().dtype(st));
  auto shaped = [&](const Tensor& t) { return t.defined() ? t.view(ns) : t; };
  if constexpr (K != DispatchKey::Meta) kernel(grad, x, r.rows, r.cols, w, mean, var, eps, gx, gw, gb);
  return {gx, shaped(gw), shaped(gb)};
}

// ---- group_norm ----
// Note [group_norm without oneDNN]
// oneDNN 2.6 has no group normalization. group_norm runs the plain loops of kernels/cpu/PoolNormKernels.cpp for
// every dtype: two passes per (sample, group) for the statistics and one fused scale-and-shift
// pass, float32 stores vectorized with `omp simd`; the backward is libtorch's two-pass form
// (per-channel sums of g and g * x, then one elementwise pass). A composite of public ops
// (reshape, mean, var, arithmetic) would read the input about six times instead of three; the
// composite is kept only as the differentiable backward used under create_graph.
int64_t check_group_norm(const char* op, const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b) {
  check_floating(op, x);
  TENSOR_CHECK(x.dim() >= 2, "{}: expected an input of at least 2 dims (N, C, *), got {}", op, x.describe());
  const int64_t c = x.size(1);
  TENSOR_CHECK(groups > 0, "{}: num_groups must be positive, got {} (input {})", op, groups, x.describe());
  TENSOR_CHECK(c % groups == 0,
               "{}: expected number of channels in input to be divisible by num_groups, but got input {} and "
               "num_groups={}", op, x.describe(), groups);
  check_param(op, "weight", w, c, x, "one per input channel");
  check_param(op, "bias", b, c, x, "one per input channel");
  return c;
}

template <DispatchKey K>
NormResult group_norm_fn(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps) {
  const GroupNormKernel kernel = g_group_norm.get<K>("group_norm");
  check_group_norm("group_norm", x, groups, w, b);
  const ScalarType st = stat_dtype(x.scalar_type());
  Tensor out = empty_row_major_like(x.sizes(), x, x.options());
  Tensor mean = empty({x.size(0) * groups}, x.options().dtype(st)), var = empty({x.size(0) * groups}, x.options().dtype(st));
  if constexpr (K != DispatchKey::Meta)
    if (x.numel() != 0) kernel(x, groups, w, b, eps, out, mean, var);
  return {out, mean, var};
}

template <DispatchKey K>
NormResult group_norm_backward_fn(const Tensor& grad, const Tensor& x, int64_t groups, const Tensor& w,
                                  const Tensor& mean, const Tensor& var, double eps) {
  const GroupNormBwdKernel kernel = g_group_norm_backward.get<K>("group_norm_backward");
  const int64_t c = check_group_norm("group_norm_backward", x, groups, w, Tensor());
  TENSOR_CHECK(grad.sizes() == x.sizes(), "group_norm_backward: grad_output {} must match the input {}",
               grad.describe(), x.describe());
  const ScalarType st = mean.scalar_type();
  Tensor gx = empty_row_major_like(x.sizes(), x, x.options());
  Tensor gw = w.defined() ? empty({c}, x.options().dtype(st)) : Tensor();
  Tensor gb = empty({c}, x.options().dtype(st));
  if constexpr (K != DispatchKey::Meta) kernel(grad, x, groups, w, mean, var, eps, gx, gw, gb);
  return {gx, gw, gb};
}

// ---- 3-d pooling geometry ----
using kernels::Pool3d;

std::array<int64_t, 3> triple_arg(const char* op, const char* name, IntArrayRef v, IntArrayRef in_sizes) {
  TENSOR_CHECK(v.size() == 1 || v.size() == 3,
               "{}: {} must be a single int or three ints (d, h, w), got {} (input shape {})", op, name, shape_str(v),
               shape_str(in_sizes));
  if (v.size() == 1) return {v[0], v[0], v[0]};
  return {v[0], v[1], v[2]};
}

void check_pool3d_input(const char* op, IntArrayRef sizes) {
  const size_t nd = sizes.size();
  TENSOR_CHECK(nd == 4 || nd == 5, "{}: expected a 4-d (C, D, H, W) or 5-d (N, C, D, H, W) input, got shape {}", op,
               shape_str(sizes));
  for (size_t d = nd - 4; d < nd; ++d)
    TENSOR_CHECK(sizes[d] > 0,
                 "{}: expected an input with non-zero C, D, H and W (only the batch may be empty), got shape {}", op,
                 shape_str(sizes));
}

Pool3d pool3d_sizes(IntArrayRef sizes) {
  Pool3d g;
  const size_t nd = sizes.size();
  g.n = nd == 5 ? sizes[0] : 1;
  g.c = sizes[nd - 4], g.id = sizes[nd - 3], g.ih = sizes[nd - 2], g.iw = sizes[nd - 1];
  return g;
}

/// Checks a 3-d pooling call (the 2-d rules per dim) and computes its geometry.
Pool3d pool3d_geometry(const char* op, IntArrayRef sizes, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, bool ceil_mode) {
  check_pool3d_input(op, sizes);
  const auto k = triple_arg(op, "kernel_size", kernel, sizes);
  const auto s = stride.empty() ? k : triple_arg(op, "stride", stride, sizes);
  const auto p = triple_arg(op, "padding", padding, sizes);
  const auto d = triple_arg(op, "dilation", dilation, sizes);
  for (int i = 0; i < 3; ++i) {
    TENSOR_CHECK(k[i] > 0 && s[i] > 0 && d[i] > 0,
                 "{}: kernel_size, stride and dilation must be greater than zero, got kernel_size {}, stride {}, "
                 "dilation {} (input shape {})", op, shape_str(IntArrayRef(k.data(), 3)), shape_str(IntArrayRef(s.data(), 3)), shape_str(IntArrayRef(d.data(), 3)), shape_str(sizes));
    TENSOR_CHECK(p[i] >= 0 && p[i] <= k[i] / 2,
                 "{}: pad should be non-negative and at most half of kernel size, but got padding {} for kernel_size {} "
                 "(input shape {})", op, shape_str(IntArrayRef(p.data(), 3)), shape_str(IntArrayRef(k.data(), 3)), shape_str(sizes));
  }
  Pool3d g = pool3d_sizes(sizes);
  g.kd = k[0], g.kh = k[1], g.kw = k[2], g.sd = s[0], g.sh = s[1], g.sw = s[2];
  g.pd = p[0], g.ph = p[1], g.pw = p[2], g.dd = d[0], g.dh = d[1], g.dw = d[2];
  g.od = pool_out(g.id, g.kd, g.pd, g.sd, g.dd, ceil_mode);
  g.oh = pool_out(g.ih, g.kh, g.ph, g.sh, g.dh, ceil_mode);
  g.ow = pool_out(g.iw, g.kw, g.pw, g.sw, g.dw, ceil_mode);
  TENSOR_CHECK(g.od >= 1 && g.oh >= 1 && g.ow >= 1,
               "{}: given input shape {}, kernel_size {}, stride {}, padding {} and dilation {}, the calculated output "
               "size ({}x{}x{}) is too small: the kernel is larger than the padded input",
               op, shape_str(sizes), shape_str(IntArrayRef(k.data(), 3)), shape_str(IntArrayRef(s.data(), 3)), shape_str(IntArrayRef(p.data(), 3)), shape_str(IntArrayRef(d.data(), 3)), g.od, g.oh, g.ow);
  return g;
}

DimVector pool3d_out_sizes(IntArrayRef in, const Pool3d& g) {
  DimVector s(in);
  const size_t nd = s.size();
  s[nd - 3] = g.od, s[nd - 2] = g.oh, s[nd - 1] = g.ow;
  return s;
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> max_pool3d_with_indices_fn(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                                      IntArrayRef d, bool ceil_mode) {
  const MaxPool3dIdxKernel kernel = g_max_pool3d_with_indices.get<K>("max_pool3d_with_indices");
  check_floating("max_pool3d_with_indices", x);
  Pool3d g = pool3d_geometry("max_pool3d_with_indices", x.sizes(), k, s, p, d, ceil_mode);
  DimVector osz = pool3d_out_sizes(x.sizes(), g);
  if (K == DispatchKey::Meta || x.numel() == 0) return {empty(osz, x.options()), empty(osz, x.options().dtype(kInt64))};
  return kernel(x, g);
}

Pool3d adaptive3d_geometry(const char* op, IntArrayRef sizes, IntArrayRef output_size) {
  check_pool3d_input(op, sizes);
  TENSOR_CHECK(output_size.size() == 3, "{}: output_size must have 3 elements (od, oh, ow), got {} (input shape {})", op,
               shape_str(output_size), shape_str(sizes));
  TENSOR_CHECK(output_size[0] >= 0 && output_size[1] >= 0 && output_size[2] >= 0,
               "{}: elements of output_size must be greater than or equal to 0, got {} (input shape {})", op,
               shape_str(output_size), shape_str(sizes));
  Pool3d g = pool3d_sizes(sizes);
  g.od = output_size[0], g.oh = output_size[1], g.ow = output_size[2];
  return g;
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> adaptive_max_pool3d_fn(const Tensor& x, IntArrayRef output_size) {
  const AdaptiveMaxPoolKernel kernel = g_adaptive_max_pool3d.get<K>("adaptive_max_pool3d");
  check_floating("adaptive_max_pool3d", x);
  Pool3d g = adaptive3d_geometry("adaptive_max_pool3d", x.sizes(), output_size);
  DimVector osz = pool3d_out_sizes(x.sizes(), g);
  if (K == DispatchKey::Meta || x.numel() == 0 || g.out_plane() == 0)
    return {empty(osz, x.options()), empty(osz, x.options().dtype(kInt64))};
  return kernel(x, g);
}

// The dispatcher table (constant-initialized; CUDA slots filled by register_kernels).
PoolNormOpDefs g_pool_norm = {
    TENSOR_FRONT_END_DEF(MaxPoolFn, "max_pool2d", max_pool2d_fn),
    TENSOR_FRONT_END_DEF(MaxPoolIdxFn, "max_pool2d_with_indices", max_pool2d_with_indices_fn),
    TENSOR_FRONT_END_DEF(MaxPoolBwdFn, "max_pool2d_backward", max_pool2d_backward_fn),
    TENSOR_FRONT_END_DEF(AvgPoolFn, "avg_pool2d", avg_pool2d_fn),
    TENSOR_FRONT_END_DEF(AvgPoolBwdFn, "avg_pool2d_backward", avg_pool2d_backward_fn),
    TENSOR_FRONT_END_DEF(AdaptivePoolFn, "adaptive_avg_pool2d", adaptive_avg_pool2d_fn),
    TENSOR_FRONT_END_DEF(AdaptivePoolBwdFn, "adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward_fn),
    TENSOR_FRONT_END_DEF(BatchNormFn, "batch_norm", batch_norm_fn),
    TENSOR_FRONT_END_DEF(BatchNormBwdFn, "batch_norm_backward", batch_norm_backward_fn),
    TENSOR_FRONT_END_DEF(LayerNormFn, "layer_norm", layer_norm_fn),
    TENSOR_FRONT_END_DEF(LayerNormBwdFn, "layer_norm_backward", layer_norm_backward_fn),
    TENSOR_FRONT_END_DEF(GroupNormFn, "group_norm", group_norm_fn),
    TENSOR_FRONT_END_DEF(GroupNormBwdFn, "group_norm_backward", group_norm_backward_fn),
    TENSOR_FRONT_END_DEF(MaxPoolIdxFn, "max_pool3d_with_indices", max_pool3d_with_indices_fn),
    TENSOR_FRONT_END_DEF(AdaptiveMaxPoolFn, "adaptive_max_pool3d", adaptive_max_pool3d_fn),
};

}  // namespace

PoolNormOpDefs& pool_norm_ops() { return g_pool_norm; }

void register_kernels(DispatchKey backend, const PoolNormKernels& k) {
  dispatch::check_kernel_backend(backend, "pooling/normalization");
  // Each op whose kernel is given starts routing to its front end's instance for the backend.
#define TENSOR_REGISTER_POOL_NORM(op)                             \
  if (k.op != nullptr) {                                          \
    g_##op.set(backend, k.op);                                    \
    g_pool_norm.op.set(backend, &op##_fn<DispatchKey::CUDA>);     \
  }
  TENSOR_REGISTER_POOL_NORM(max_pool2d)
  TENSOR_REGISTER_POOL_NORM(max_pool2d_with_indices)
  TENSOR_REGISTER_POOL_NORM(max_pool2d_backward)
  TENSOR_REGISTER_POOL_NORM(avg_pool2d)
  TENSOR_REGISTER_POOL_NORM(avg_pool2d_backward)
  TENSOR_REGISTER_POOL_NORM(adaptive_avg_pool2d)
  TENSOR_REGISTER_POOL_NORM(adaptive_avg_pool2d_backward)
  TENSOR_REGISTER_POOL_NORM(batch_norm)
  TENSOR_REGISTER_POOL_NORM(batch_norm_backward)
  TENSOR_REGISTER_POOL_NORM(layer_norm)
  TENSOR_REGISTER_POOL_NORM(layer_norm_backward)
  TENSOR_REGISTER_POOL_NORM(group_norm)
  TENSOR_REGISTER_POOL_NORM(group_norm_backward)
  TENSOR_REGISTER_POOL_NORM(max_pool3d_with_indices)
  TENSOR_REGISTER_POOL_NORM(adaptive_max_pool3d)
#undef TENSOR_REGISTER_POOL_NORM
}

// Note [3-d pooling by composition]
// Average pooling over a box is separable: the mean over (d, h, w) is the mean over d of the
// means over (h, w), and libtorch's divisors are products of per-dim counts (the window clipped
// to the padded input under count_include_pad, to the input otherwise). So avg_pool3d is
// avg_pool2d over (H, W) of the (N, C * D, H, W) view, then avg_pool2d with a (kd, 1) kernel over
// (D, oH * oW) of the (N, C, D, oH * oW) view; divisor_override sums both passes (override 1)
// and divides once. adaptive_avg_pool3d is the same with adaptive windows (a W window of
// out = in is the identity). Both passes are dispatched 2-d ops with derivative rows, so
// gradients and double gradients need nothing new. Max pooling is not separable with indices:
// max_pool3d_with_indices and adaptive_max_pool3d are kernels (the loops), and their backward,
// a scatter of the gradient to flat plane indices, is max_pool2d_backward on (..., 1, D * H * W)
// views (src/autograd/nodes/MultiOutput.cpp). max_pool3d drops the indices;
// adaptive_max_pool2d is adaptive_max_pool3d on a depth-1 view.
namespace {

struct Dims5 {
  bool batched;
  int64_t n, c, d, h, w;
};
Dims5 dims5(const Tensor& x) {
  const bool b = x.dim() == 5;
  return {b, b ? x.size(0) : 1, x.size(-4), x.size(-3), x.size(-2), x.size(-1)};
}
Tensor finish5(const Tensor& t, const Dims5& d, int64_t od, int64_t oh, int64_t ow) {
  Tensor r = t.reshape({d.n, d.c, od, oh, ow});
  return d.batched ? r : r.squeeze(0);
}

Tensor max_pool3d_composite(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d,
                            bool ceil_mode) {
  return std::get<0>(pool_norm_ops().max_pool3d_with_indices(x, k, s, p, d, ceil_mode));
}

Tensor avg_pool3d_composite(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                            bool count_include_pad, std::optional<int64_t> divisor) {
  const char* op = "avg_pool3d";
  check_floating(op, x);
  TENSOR_CHECK(!divisor || *divisor != 0, "{}: divisor_override must be non-zero (input {})", op, x.describe());
  const Pool3d g = pool3d_geometry(op, x.sizes(), k, s, p, IntArrayRef(int64_t{1}), ceil_mode);
  const Dims5 d = dims5(x);
  const std::optional<int64_t> pass_div = divisor ? std::optional<int64_t>(1) : std::nullopt;
  Tensor hw = avg_pool2d(x.reshape({d.n, d.c * d.d, d.h, d.w}), {g.kh, g.kw}, {g.sh, g.sw}, {g.ph, g.pw}, ceil_mode,
                         count_include_pad, pass_div);
  Tensor dhw = avg_pool2d(hw.reshape({d.n, d.c, d.d, g.oh * g.ow}), {g.kd, 1}, {g.sd, 1}, {g.pd, 0}, ceil_mode,
                          count_include_pad, pass_div);
  if (divisor) dhw = dhw / Scalar(static_cast<double>(*divisor));
  return finish5(dhw, d, g.od, g.oh, g.ow);
}

Tensor adaptive_avg_pool3d_composite(const Tensor& x, IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool3d";
  check_floating(op, x);
  const Pool3d g = adaptive3d_geometry(op, x.sizes(), output_size);
  const Dims5 d = dims5(x);
  if (g.out_plane() == 0) return empty(pool3d_out_sizes(x.sizes(), g), x.options());
  Tensor hw = adaptive_avg_pool2d(x.reshape({d.n, d.c * d.d, d.h, d.w}), {g.oh, g.ow});
  Tensor dhw = adaptive_avg_pool2d(hw.reshape({d.n, d.c, d.d, g.oh * g.ow}), {g.od, g.oh * g.ow});
  return finish5(dhw, d, g.od, g.oh, g.ow);
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_composite(const Tensor& x, IntArrayRef output_size) {
  const char* op = "adaptive_max_pool2d";
  check_pool_input(op, x.sizes());
  TENSOR_CHECK(output_size.size() == 2, "{}: output_size must have 2 elements (oh, ow), got {} (input {})", op,
               shape_str(output_size), x.describe());
  check_floating(op, x);
  auto [v, i] = pool_norm_ops().adaptive_max_pool3d(x.unsqueeze(-3), {1, output_size[0], output_size[1]});
  return {v.squeeze(-3), i.squeeze(-3)};
}

}  // namespace

TENSOR_COMPOSITE_OP(max_pool3d, MaxPoolFn, max_pool3d_composite)
TENSOR_COMPOSITE_OP(avg_pool3d, AvgPoolFn, avg_pool3d_composite)
TENSOR_COMPOSITE_OP(adaptive_avg_pool3d, AdaptivePoolFn, adaptive_avg_pool3d_composite)
TENSOR_COMPOSITE_OP(adaptive_max_pool2d, AdaptiveMaxPoolFn, adaptive_max_pool2d_composite)

}  // namespace ops

// ---- public functions ----
using ops::pool_norm_ops;

namespace {
Tensor opt(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }
}  // namespace

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return pool_norm_ops().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return pool_norm_ops().max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return pool_norm_ops().avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  return pool_norm_ops().adaptive_avg_pool2d(input, output_size);
}

Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return ops::max_pool3d_op()(input, kernel_size, stride, padding, dilation, ceil_mode);
}
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return pool_norm_ops().max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}
Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return ops::avg_pool3d_op()(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size) {
  return ops::adaptive_avg_pool3d_op()(input, output_size);
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
  TENSOR_CHECK(input.defined() && (input.dim() == 2 || input.dim() == 3),
               "adaptive_max_pool1d: expected a 2-d (C, L) or 3-d (N, C, L) input, got {}",
               input.defined() ? input.describe() : std::string("an undefined tensor"));
  TENSOR_CHECK(output_size.size() == 1, "adaptive_max_pool1d: output_size must have 1 element, got {} (input {})",
               detail::shape_str(output_size), input.describe());
  auto [v, i] = ops::adaptive_max_pool2d_op()(input.unsqueeze(-2), {1, output_size[0]});
  return {v.squeeze(-2), i.squeeze(-2)};
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  return ops::adaptive_max_pool2d_op()(input, output_size);
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size) {
  return pool_norm_ops().adaptive_max_pool3d(input, output_size);
}

Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training,
                  double momentum, double eps, bool /*cudnn_enabled*/) {
  return std::get<0>(pool_norm_ops().batch_norm(input, opt(weight), opt(bias), opt(running_mean), opt(running_var),
                                                training, momentum, eps));
}
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool /*cudnn_enable*/) {
  return std::get<0>(pool_norm_ops().layer_norm(input, normalized_shape, opt(weight), opt(bias), eps));
}
Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool /*cudnn_enabled*/) {
  return std::get<0>(pool_norm_ops().group_norm(input, num_groups, opt(weight), opt(bias), eps));
}

}  // namespace tensor
