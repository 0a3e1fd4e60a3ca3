// Front ends of pooling and normalization: libtorch's argument rules and output sizes, checks
// that name the op, the shapes and dtypes, the choice between oneDNN and the plain loops, and
// the dispatcher table (src/ops/PoolNormOps.h). Derivatives: rows of src/autograd/Derivatives.cpp, src/autograd/PoolNormFormulas.cpp.
#include "src/ops/PoolNormOps.h"
#include "src/cpu/PoolNorm.h"

#include <array>

#include "src/core/Check.h"
#include "src/cpu/Layout.h"
#include "src/cpu/OneDNN.h"
#include "tensor/normalization.h"
#include "tensor/ops.h"
#include "tensor/pooling.h"

namespace tensor {
namespace ops {
namespace {

using cpu::Pool2d;
namespace loops = cpu::loops;
namespace dnn = cpu::onednn;

using detail::shape_str;

void check_floating(const char* op, const Tensor& x) {
  TENSOR_CHECK(x.is_floating_point(), "{}: expected a floating point input, got {}", op, x.describe());
}

/// Statistics dtype: float64 for float64 inputs, float32 otherwise (oneDNN's scale, shift,
/// mean and variance are float32 for bfloat16 data too).
ScalarType stat_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

using cpu::empty_in_layout_of;
using cpu::empty_row_major_like;

/// A copy of a 4-d tensor laid out channels-last.
Tensor to_channels_last(const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }

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

/// The input as (N, C, H, W) (unbatched inputs gain a batch of 1).
Tensor as4d(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }

/// An input oneDNN can read as it lies, or a contiguous copy.
Tensor dnn_layout(const Tensor& x4) { return dnn::pool_layout_ok(x4) ? x4 : x4.contiguous(); }

// ---- max pooling ----
Tensor max_pool2d_impl(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d, bool ceil_mode) {
  check_floating("max_pool2d", x);
  Pool2d g = pool_geometry("max_pool2d", x.sizes(), k, s, p, d, ceil_mode);
  DimVector osz = pool_out_sizes(x.sizes(), g);
  if (x.is_meta() || x.numel() == 0) return empty(osz, x.options());
  Tensor x4 = as4d(x);
  if (dnn::supports(x.scalar_type())) {
    x4 = dnn_layout(x4);
    Tensor out = empty_in_layout_of({g.n, g.c, g.oh, g.ow}, x4, x.options());
    dnn::max_pool2d(x4, g, out);
    return x.dim() == 3 ? out.squeeze(0) : out;
  }
  Tensor out = empty_row_major_like({g.n, g.c, g.oh, g.ow}, x4, x.options());
  loops::max_pool2d(x4.contiguous(), g, out, Tensor());
  return x.dim() == 3 ? out.squeeze(0) : out;
}

// Note [Max pooling and NaN]
// libtorch's max pooling lets NaN win (the loops here do the same). oneDNN's max kernel
// compares with ordered comparisons, so a NaN that is not first in its window is skipped:
// max_pool2d without autograd on float32/bfloat16 (the oneDNN path) may return a finite
// maximum where libtorch returns NaN. Checking the input for NaN first would cost a full extra
// pass (about as much as the pooling itself); the indexed form and every recorded call keep
// libtorch's behaviour.

// Note [Max pooling indices]
// oneDNN's max pooling workspace holds each maximum's offset inside its window, in a layout
// of oneDNN's choosing; libtorch's indices are flat over H * W with its own tie rule. The
// indexed form therefore runs the plain loop (it reads the input once, as oneDNN would), and
// only max_pool2d without indices and without autograd takes oneDNN's inference kernel.
std::tuple<Tensor, Tensor> max_pool2d_with_indices_impl(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                                        IntArrayRef d, bool ceil_mode) {
  check_floating("max_pool2d_with_indices", x);
  Pool2d g = pool_geometry("max_pool2d_with_indices", x.sizes(), k, s, p, d, ceil_mode);
  DimVector osz = pool_out_sizes(x.sizes(), g);
  if (x.is_meta() || x.numel() == 0) return {empty(osz, x.options()), empty(osz, x.options().dtype(kInt64))};
  const Tensor x4 = as4d(x);
  const DimVector osz4{g.n, g.c, g.oh, g.ow};
  Tensor out = empty_row_major_like(osz4, x4, x.options());
  Tensor idx = empty_row_major_like(osz4, x4, x.options().dtype(kInt64));
  loops::max_pool2d(x4.contiguous(), g, out, idx);
  if (x.dim() == 3) return {out.squeeze(0), idx.squeeze(0)};
  return {out, idx};
}

Tensor max_pool2d_backward_impl(const Tensor& grad, IntArrayRef in_sizes, const Tensor& indices) {
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
  if (grad.is_meta() || gi.numel() == 0) return gi;
  loops::max_pool2d_backward(grad.contiguous(), indices.contiguous(), g, gi);
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

/// oneDNN divides by the kernel size (include padding) or the in-input count (exclude); it
/// matches libtorch unless a divisor is forced or ceil_mode adds a window past the right
/// padding under count_include_pad (Note [Average pooling divisors] in kernels/cpu/PoolNormKernels.cpp).
bool dnn_avg_ok(const Pool2d& g, ScalarType t) {
  if (!dnn::supports(t) || g.divisor != 0) return false;
  if (!g.count_include_pad) return true;
  return (g.oh - 1) * g.sh - g.ph + g.kh <= g.ih + g.ph && (g.ow - 1) * g.sw - g.pw + g.kw <= g.iw + g.pw;
}

Tensor avg_pool2d_impl(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                       bool count_include_pad, std::optional<int64_t> divisor) {
  check_floating("avg_pool2d", x);
  Pool2d g = avg_geometry("avg_pool2d", x.sizes(), k, s, p, ceil_mode, count_include_pad, divisor);
  DimVector osz = pool_out_sizes(x.sizes(), g);
  if (x.is_meta() || x.numel() == 0) return empty(osz, x.options());
  Tensor x4 = as4d(x);
  if (dnn_avg_ok(g, x.scalar_type())) {
    x4 = dnn_layout(x4);
    Tensor out = empty_in_layout_of({g.n, g.c, g.oh, g.ow}, x4, x.options());
    dnn::avg_pool2d(x4, g, out);
    return x.dim() == 3 ? out.squeeze(0) : out;
  }
  Tensor out = empty_row_major_like({g.n, g.c, g.oh, g.ow}, x4, x.options());
  loops::avg_pool2d(x4.contiguous(), g, out);
  return x.dim() == 3 ? out.squeeze(0) : out;
}

Tensor avg_pool2d_backward_impl(const Tensor& grad, IntArrayRef in_sizes, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor) {
  Pool2d g = avg_geometry("avg_pool2d_backward", in_sizes, k, s, p, ceil_mode, count_include_pad, divisor);
  DimVector osz = pool_out_sizes(in_sizes, g);
  TENSOR_CHECK(grad.sizes() == IntArrayRef(osz), "avg_pool2d_backward: grad_output {} must have the output shape {}",
               grad.describe(), shape_str(osz));
  if (grad.is_meta() || grad.numel() == 0) return zeros(in_sizes, grad.options());
  Tensor g4 = as4d(grad);
  if (dnn_avg_ok(g, grad.scalar_type())) {
    g4 = dnn_layout(g4);
    Tensor gi = empty_in_layout_of({g.n, g.c, g.ih, g.iw}, g4, grad.options());
    dnn::avg_pool2d_backward(g4, g, gi);
    return in_sizes.size() == 3 ? gi.squeeze(0) : gi;
  }
  Tensor gi = empty(in_sizes, grad.options());
  loops::avg_pool2d_backward(g4.contiguous(), g, gi);
  return gi;
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

// Note [Adaptive pooling kernels]
// Measured with benchmarks/bench_pool_norm.cpp (float32, 2 threads):
// - 1x1 output (global pooling, (64, 512, 7, 7)): the general window loop took 0.56 ms,
//   oneDNN's 7x7 average pooling 0.31 ms, libtorch 0.13 ms (it calls mean over H, W). A
//   contiguous sum per plane takes 0.15 ms, as mean() does; contiguous inputs take that loop,
//   others mean(dims = {-2, -1}) (the Highway reduction reads any strides).
// - an output that divides the input is an average pooling with kernel = stride = in / out:
//   16 -> 4 on (32, 256): loop 1.02 ms, oneDNN 0.34 ms. So oneDNN runs it (float32, bfloat16).
// - other sizes (overlapping, uneven windows) and other dtypes run the loop.
Tensor adaptive_avg_pool2d_impl(const Tensor& x, IntArrayRef output_size) {
  check_floating("adaptive_avg_pool2d", x);
  Pool2d g = adaptive_geometry("adaptive_avg_pool2d", x.sizes(), output_size);
  DimVector osz = pool_out_sizes(x.sizes(), g);
  if (x.is_meta() || x.numel() == 0 || g.oh * g.ow == 0) return empty(osz, x.options());
  if (g.oh == 1 && g.ow == 1 && (x.is_contiguous() || x.dim() == 3)) {
    Tensor out = empty(osz, x.options());
    loops::adaptive_avg_pool2d(x.contiguous(), g, out);
    return out;
  }
  if (g.oh == 1 && g.ow == 1) return x.mean({-2, -1}, /*keepdim=*/true);
  if (dnn::supports(x.scalar_type()) && g.ih % g.oh == 0 && g.iw % g.ow == 0) {
    Pool2d a = g;
    a.kh = a.sh = g.ih / g.oh;
    a.kw = a.sw = g.iw / g.ow;
    a.count_include_pad = false;
    Tensor x4 = dnn_layout(as4d(x));
    Tensor out = empty_in_layout_of({g.n, g.c, g.oh, g.ow}, x4, x.options());
    dnn::avg_pool2d(x4, a, out);
    return x.dim() == 3 ? out.squeeze(0) : out;
  }
  Tensor out = empty(osz, x.options());
  loops::adaptive_avg_pool2d(x.contiguous(), g, out);
  return out;
}

Tensor adaptive_avg_pool2d_backward_impl(const Tensor& grad, IntArrayRef in_sizes) {
  TENSOR_CHECK(grad.dim() == static_cast<int64_t>(in_sizes.size()) && grad.dim() >= 3,
               "adaptive_avg_pool2d_backward: grad_output {} does not match the input shape {}", grad.describe(),
               shape_str(in_sizes));
  Pool2d g = adaptive_geometry("adaptive_avg_pool2d_backward", in_sizes, {grad.size(-2), grad.size(-1)});
  Tensor gi = empty(in_sizes, grad.options());
  if (grad.is_meta() || gi.numel() == 0) return gi;
  if (grad.numel() == 0) return gi.zero_();
  loops::adaptive_avg_pool2d_backward(grad.contiguous(), g, gi);
  return gi;
}

// ---- normalization: shared checks ----
/// An optional per-channel (or per-element) parameter: 1-d with `n` elements.
void check_param(const char* op, const char* name, const Tensor& t, int64_t n, const Tensor& x, const char* what) {
  if (!t.defined()) return;
  TENSOR_CHECK(t.dim() == 1 && t.numel() == n, "{}: {} should be a 1-d tensor of {} elements ({}), got {} for input {}",
               op, name, n, what, t.describe(), x.describe());
}

Tensor param_as(const Tensor& t, ScalarType st) { return t.defined() ? t.to(st).contiguous() : Tensor(); }

// Note [batch_norm kernels]
// oneDNN 2.6 normalizes plain NCHW tensors with its generic `ncsp_bnorm` kernel, which lost
// 3.5x to the loops of kernels/cpu/PoolNormKernels.cpp on (8, 64, 56, 56) float32 (eval 0.67 vs 0.22 ms,
// training forward 1.20 vs 0.33 ms, forward + backward 2.80 vs 0.79 ms; minimum of 40 calls,
// interleaved in one process). Its channels-last kernel (`bnorm_jit`, NHWC) is fast (training
// forward 0.49 ms) and beats a contiguous copy plus the loops. So float32 takes the loops
// unless the input is channels-last; bfloat16 keeps oneDNN in both layouts (the loops would
// compute it through double conversions).
bool bn_uses_onednn(const Tensor& x) {
  if (!dnn::supports(x.scalar_type())) return false;
  return x.scalar_type() == kBFloat16 || (x.dim() == 4 && !x.is_contiguous() && cpu::prefers_channels_last(x));
}

/// The input in a layout oneDNN's batch_norm reads directly: contiguous, or channels-last 4-d.
Tensor bn_layout(const Tensor& x) {
  return x.is_contiguous() || (x.dim() == 4 && cpu::is_channels_last_contiguous(x)) ? x : x.contiguous();
}

void update_running(Tensor running, const Tensor& stat, double momentum, double scale) {
  // running = (1 - momentum) * running + momentum * scale * stat, in place in running's dtype.
  running.mul_(1 - momentum).add_(stat.to(running.dtype()) * (momentum * scale));
}

NormResult batch_norm_impl(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                           bool training, double momentum, double eps) {
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
  if (x.is_meta()) return {empty(x.sizes(), x.options()), mean, var};
  if (x.numel() == 0) return {empty(x.sizes(), x.options()), mean.zero_(), var.fill_(1)};
  Tensor wf = param_as(w, st), bf = param_as(b, st);
  if (!training) {
    mean.copy_(rm);
    var.copy_(rv);
  }
  Tensor out;
  if (bn_uses_onednn(x)) {
    Tensor xl = bn_layout(x);
    out = empty_strided(xl.sizes(), xl.strides(), x.options());
    dnn::batch_norm(xl, wf, bf, mean, var, training, eps, out);
  } else {
    out = empty(x.sizes(), x.options());  // NCHW strides, as libtorch (Note [Channels-last layout])
    loops::batch_norm(x.contiguous(), wf, bf, mean, var, training, eps, out);
  }
  if (training && rm.defined()) {
    update_running(rm, mean, momentum, 1.0);
    update_running(rv, var, momentum, static_cast<double>(count) / static_cast<double>(count - 1));
  }
  return {out, mean, var};
}

NormResult batch_norm_backward_impl(const Tensor& grad, const Tensor& x, const Tensor& w, const Tensor& mean,
                                    const Tensor& var, bool training, double eps) {
  TENSOR_CHECK(grad.sizes() == x.sizes(), "batch_norm_backward: grad_output {} must match the input {}", grad.describe(),
               x.describe());
  const ScalarType st = mean.scalar_type();
  const int64_t c = x.size(1);
  Tensor gw = w.defined() ? empty({c}, x.options().dtype(st)) : Tensor();
  Tensor gb = empty({c}, x.options().dtype(st));
  if (x.is_meta()) return {empty(x.sizes(), x.options()), gw, gb};
  Tensor wf = param_as(w, st);
  Tensor g = grad.to(x.dtype());
  if (training && bn_uses_onednn(x) && x.numel() > 0) {
    Tensor xl = bn_layout(x);
    const bool cl = !xl.is_contiguous();
    Tensor gl = cl ? (cpu::is_channels_last_contiguous(g) ? g : to_channels_last(g)) : g.contiguous();
    Tensor gx = empty_strided(xl.sizes(), xl.strides(), x.options());
    dnn::batch_norm_backward(gl, xl, wf, mean, var, eps, gx, gw, gb);
    return {gx, gw, gb};
  }
  Tensor gx = empty(x.sizes(), x.options());
  if (x.numel() == 0) {
    if (gw.defined()) gw.zero_();
    return {gx, gw, gb.zero_()};
  }
  loops::batch_norm_backward(g.contiguous(), x.contiguous(), wf, mean, var, training, eps, gx, gw, gb);
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

NormResult layer_norm_impl(const Tensor& x, IntArrayRef ns, const Tensor& w, const Tensor& b, double eps) {
  const Rows r = layer_norm_rows("layer_norm", x, ns, w, b);
  const ScalarType st = stat_dtype(x.scalar_type());
  Tensor out = empty(x.sizes(), x.options());
  Tensor mean = empty({r.rows}, x.options().dtype(st)), var = empty({r.rows}, x.options().dtype(st));
  if (x.is_meta() || x.numel() == 0) return {out, mean, var};
  Tensor xc = x.contiguous(), wf = param_as(w, st), bf = param_as(b, st);
  if (dnn::supports(x.scalar_type())) dnn::layer_norm(xc, r.rows, r.cols, wf, bf, eps, out, mean, var);
  else loops::layer_norm(xc, r.rows, r.cols, wf, bf, eps, out, mean, var);
  return {out, mean, var};
}

NormResult layer_norm_backward_impl(const Tensor& grad, const Tensor& x, IntArrayRef ns, const Tensor& w,
                                    const Tensor& mean, const Tensor& var, double eps) {
  const Rows r = layer_norm_rows("layer_norm_backward", x, ns, w, Tensor());
  TENSOR_CHECK(grad.sizes() == x.sizes(), "layer_norm_backward: grad_output {} must match the input {}",
               grad.describe(), x.describe());
  const ScalarType st = mean.scalar_type();
  Tensor gx = empty(x.sizes(), x.options());
  Tensor gw = w.defined() ? empty({r.cols}, x.options().dtype(st)) : Tensor();
  Tensor gb = empty({r.cols}, x.options().dtype(st));
  auto shaped = [&](const Tensor& t) { return t.defined() ? t.view(ns) : t; };
  if (x.is_meta()) return {gx, shaped(gw), shaped(gb)};
  if (x.numel() == 0) {
    if (gw.defined()) gw.zero_();
    return {gx, shaped(gw), shaped(gb.zero_())};
  }
  Tensor xc = x.contiguous(), gc = grad.to(x.dtype()).contiguous(), wf = param_as(w, st);
  if (dnn::supports(x.scalar_type())) dnn::layer_norm_backward(gc, xc, r.rows, r.cols, wf, mean, var, eps, gx, gw, gb);
  else loops::layer_norm_backward(gc, xc, r.rows, r.cols, wf, mean, var, eps, gx, gw, gb);
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

NormResult group_norm_impl(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps) {
  check_group_norm("group_norm", x, groups, w, b);
  const ScalarType st = stat_dtype(x.scalar_type());
  Tensor out = empty_row_major_like(x.sizes(), x, x.options());
  Tensor mean = empty({x.size(0) * groups}, x.options().dtype(st)), var = empty({x.size(0) * groups}, x.options().dtype(st));
  if (x.is_meta() || x.numel() == 0) return {out, mean, var};
  loops::group_norm(x.contiguous(), groups, param_as(w, st), param_as(b, st), eps, out, mean, var);
  return {out, mean, var};
}

NormResult group_norm_backward_impl(const Tensor& grad, const Tensor& x, int64_t groups, const Tensor& w,
                                    const Tensor& mean, const Tensor& var, double eps) {
  const int64_t c = check_group_norm("group_norm_backward", x, groups, w, Tensor());
  TENSOR_CHECK(grad.sizes() == x.sizes(), "group_norm_backward: grad_output {} must match the input {}",
               grad.describe(), x.describe());
  const ScalarType st = mean.scalar_type();
  Tensor gx = empty_row_major_like(x.sizes(), x, x.options());
  Tensor gw = w.defined() ? empty({c}, x.options().dtype(st)) : Tensor();
  Tensor gb = empty({c}, x.options().dtype(st));
  if (x.is_meta()) return {gx, gw, gb};
  if (x.numel() == 0) {
    if (gw.defined()) gw.zero_();
    return {gx, gw, gb.zero_()};
  }
  loops::group_norm_backward(grad.to(x.dtype()).contiguous(), x.contiguous(), groups, param_as(w, st), mean, var, eps,
                           gx, gw, gb);
  return {gx, gw, gb};
}

using dispatch::backend_def;

PoolNormOpDefs g_pool_norm = {
    backend_def<MaxPoolFn>("max_pool2d", &max_pool2d_impl),
    backend_def<MaxPoolIdxFn>("max_pool2d_with_indices", &max_pool2d_with_indices_impl),
    backend_def<MaxPoolBwdFn>("max_pool2d_backward", &max_pool2d_backward_impl),
    backend_def<AvgPoolFn>("avg_pool2d", &avg_pool2d_impl),
    backend_def<AvgPoolBwdFn>("avg_pool2d_backward", &avg_pool2d_backward_impl),
    backend_def<AdaptivePoolFn>("adaptive_avg_pool2d", &adaptive_avg_pool2d_impl),
    backend_def<AdaptivePoolBwdFn>("adaptive_avg_pool2d_backward", &adaptive_avg_pool2d_backward_impl),
    backend_def<BatchNormFn>("batch_norm", &batch_norm_impl),
    backend_def<BatchNormBwdFn>("batch_norm_backward", &batch_norm_backward_impl),
    backend_def<LayerNormFn>("layer_norm", &layer_norm_impl),
    backend_def<LayerNormBwdFn>("layer_norm_backward", &layer_norm_backward_impl),
    backend_def<GroupNormFn>("group_norm", &group_norm_impl),
    backend_def<GroupNormBwdFn>("group_norm_backward", &group_norm_backward_impl),
};

}  // namespace

PoolNormOpDefs& pool_norm_ops() { return g_pool_norm; }

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
