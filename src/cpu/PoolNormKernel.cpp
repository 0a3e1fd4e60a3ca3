// The CPU kernels of pooling and normalization (src/ops/PoolNormOps.h's PoolNormKernels): the
// front end has checked the arguments and computed the geometry and the output sizes; each
// kernel picks oneDNN (src/cpu/Pooling.cpp, src/cpu/Normalization.cpp) or the plain loops
// (kernels/cpu/PoolNormKernels.cpp) by dtype, layout and mode, and allocates the results whose
// layout follows that choice (Note [Channels-last layout]).
#include "src/cpu/PoolNorm.h"

#include "src/core/Parallel.h"
#include "src/cpu/Layout.h"
#include "src/cpu/OneDNN.h"
#include "tensor/ops.h"

namespace tensor::cpu {
namespace {

namespace dnn = onednn;

/// A copy of a 4-d tensor laid out channels-last.
Tensor to_channels_last(const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }


/// The input as (N, C, H, W) (unbatched inputs gain a batch of 1).
Tensor as4d(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }

/// An input oneDNN can read as it lies, or a contiguous copy.
Tensor dnn_layout(const Tensor& x4) { return dnn::pool_layout_ok(x4) ? x4 : x4.contiguous(); }


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

/// oneDNN divides by the kernel size (include padding) or the in-input count (exclude); it
/// matches libtorch unless a divisor is forced or ceil_mode adds a window past the right
/// padding under count_include_pad (Note [Average pooling divisors] in kernels/cpu/PoolNormKernels.cpp).
bool dnn_avg_ok(const Pool2d& g, ScalarType t) {
  if (!dnn::supports(t) || g.divisor != 0) return false;
  if (!g.count_include_pad) return true;
  return (g.oh - 1) * g.sh - g.ph + g.kh <= g.ih + g.ph && (g.ow - 1) * g.sw - g.pw + g.kw <= g.iw + g.pw;
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
  return x.scalar_type() == kBFloat16 || (x.dim() == 4 && !x.is_contiguous() && prefers_channels_last(x));
}

/// The input in a layout oneDNN's batch_norm reads directly: contiguous, or channels-last 4-d.
Tensor bn_layout(const Tensor& x) {
  return x.is_contiguous() || (x.dim() == 4 && is_channels_last_contiguous(x)) ? x : x.contiguous();
}

void update_running(Tensor running, const Tensor& stat, double momentum, double scale) {
  // running = (1 - momentum) * running + momentum * scale * stat, in place in running's dtype.
  running.mul_(1 - momentum).add_(stat.to(running.dtype()) * (momentum * scale));
}


}  // namespace

// ---- pooling ----
Tensor max_pool2d_kernel(const Tensor& x, const Pool2d& g) {
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

std::tuple<Tensor, Tensor> max_pool2d_with_indices_kernel(const Tensor& x, const Pool2d& g) {
  const Tensor x4 = as4d(x);
  const DimVector osz4{g.n, g.c, g.oh, g.ow};
  Tensor out = empty_row_major_like(osz4, x4, x.options());
  Tensor idx = empty_row_major_like(osz4, x4, x.options().dtype(kInt64));
  loops::max_pool2d(x4.contiguous(), g, out, idx);
  if (x.dim() == 3) return {out.squeeze(0), idx.squeeze(0)};
  return {out, idx};
}

void max_pool2d_backward_kernel(const Tensor& grad, const Tensor& indices, const Pool2d& g, const Tensor& grad_input) {
  loops::max_pool2d_backward(grad.contiguous(), indices.contiguous(), g, grad_input);
}

Tensor avg_pool2d_kernel(const Tensor& x, const Pool2d& g) {
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

Tensor avg_pool2d_backward_kernel(const Tensor& grad, IntArrayRef in_sizes, const Pool2d& g) {
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

Tensor adaptive_avg_pool2d_kernel(const Tensor& x, const Pool2d& g) {
  DimVector osz(x.sizes());
  osz[osz.size() - 2] = g.oh;
  osz[osz.size() - 1] = g.ow;
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


void adaptive_avg_pool2d_backward_kernel(const Tensor& grad, const Pool2d& g, const Tensor& grad_input) {
  if (grad.numel() == 0) {
    Tensor(grad_input).zero_();
    return;
  }
  loops::adaptive_avg_pool2d_backward(grad.contiguous(), g, grad_input);
}

// 3-d max pooling and adaptive max pooling: the loops only (oneDNN's 3-d max pooling has no
// indices in libtorch's layout, Note [Max pooling indices]).
namespace {
/// Runs a loop kernel that fills (values, indices) of the front end's output shape.
template <class Loop>
std::tuple<Tensor, Tensor> pool3d_with_indices(const Tensor& x, const Pool3d& g, Loop loop) {
  const bool batched = x.dim() == 5;
  const Tensor x5 = batched ? x : x.unsqueeze(0);
  const DimVector osz{g.n, g.c, g.od, g.oh, g.ow};
  Tensor out = empty(osz, x.options());
  Tensor idx = empty(osz, x.options().dtype(kInt64));
  loop(x5.contiguous(), g, out, idx);
  if (!batched) return {out.squeeze(0), idx.squeeze(0)};
  return {out, idx};
}
}  // namespace

std::tuple<Tensor, Tensor> max_pool3d_with_indices_kernel(const Tensor& x, const Pool3d& g) {
  return pool3d_with_indices(x, g, &loops::max_pool3d);
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_kernel(const Tensor& x, const Pool3d& g) {
  return pool3d_with_indices(x, g, &loops::adaptive_max_pool3d);
}

// ---- normalization ----
Tensor batch_norm_kernel(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                         bool training, double momentum, double eps, const Tensor& mean_, const Tensor& var_) {
  Tensor mean = mean_, var = var_;
  if (x.numel() == 0) {
    mean.zero_();
    var.fill_(1);
    return empty(x.sizes(), x.options());
  }
  const ScalarType st = mean.scalar_type();
  const int64_t c = x.size(1), count = x.numel() / c;
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
  return out;
}

Tensor batch_norm_backward_kernel(const Tensor& grad, const Tensor& x, const Tensor& w, const Tensor& mean,
                                  const Tensor& var, bool training, double eps, const Tensor& grad_weight,
                                  const Tensor& grad_bias) {
  Tensor gw = grad_weight, gb = grad_bias;
  Tensor wf = param_as(w, mean.scalar_type());
  Tensor g = grad.to(x.dtype());
  if (training && bn_uses_onednn(x) && x.numel() > 0) {
    Tensor xl = bn_layout(x);
    const bool cl = !xl.is_contiguous();
    Tensor gl = cl ? (is_channels_last_contiguous(g) ? g : to_channels_last(g)) : g.contiguous();
    Tensor gx = empty_strided(xl.sizes(), xl.strides(), x.options());
    dnn::batch_norm_backward(gl, xl, wf, mean, var, eps, gx, gw, gb);
    return gx;
  }
  Tensor gx = empty(x.sizes(), x.options());
  if (x.numel() == 0) {
    if (gw.defined()) gw.zero_();
    gb.zero_();
    return gx;
  }
  loops::batch_norm_backward(g.contiguous(), x.contiguous(), wf, mean, var, training, eps, gx, gw, gb);
  return gx;
}

// Note [Small layer_norm]
// oneDNN's layer_norm costs about 3 us a call before any arithmetic (the memory objects, the
// argument map, the scratchpad, and a parallel region over all threads whatever the size):
// on [64, 64] float32 it took 5-6 us single-threaded and far more with two threads on a busy
// machine, torch 2.15's own kernel 3.8 us. Float32 inputs under the parallel grain take the
// plain row loop instead (blocked float sums, a vectorized float affine pass, one thread).
void layer_norm_kernel(const Tensor& x, int64_t rows, int64_t cols, const Tensor& w, const Tensor& b, double eps,
                       const Tensor& out, const Tensor& mean, const Tensor& var) {
  const ScalarType st = mean.scalar_type();
  Tensor xc = x.contiguous(), wf = param_as(w, st), bf = param_as(b, st);
  const bool small = x.scalar_type() == kFloat32 && x.numel() < detail::kGrain;
  if (dnn::supports(x.scalar_type()) && !small) dnn::layer_norm(xc, rows, cols, wf, bf, eps, out, mean, var);
  else loops::layer_norm(xc, rows, cols, wf, bf, eps, out, mean, var);
}

void layer_norm_backward_kernel(const Tensor& grad, const Tensor& x, int64_t rows, int64_t cols, const Tensor& w,
                                const Tensor& mean, const Tensor& var, double eps, const Tensor& gx,
                                const Tensor& grad_weight, const Tensor& grad_bias) {
  Tensor gw = grad_weight, gb = grad_bias;
  if (x.numel() == 0) {
    if (gw.defined()) gw.zero_();
    gb.zero_();
    return;
  }
  Tensor xc = x.contiguous(), gc = grad.to(x.dtype()).contiguous(), wf = param_as(w, mean.scalar_type());
  if (dnn::supports(x.scalar_type())) dnn::layer_norm_backward(gc, xc, rows, cols, wf, mean, var, eps, gx, gw, gb);
  else loops::layer_norm_backward(gc, xc, rows, cols, wf, mean, var, eps, gx, gw, gb);
}

void group_norm_kernel(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps,
                       const Tensor& out, const Tensor& mean, const Tensor& var) {
  const ScalarType st = mean.scalar_type();
  loops::group_norm(x.contiguous(), groups, param_as(w, st), param_as(b, st), eps, out, mean, var);
}

void group_norm_backward_kernel(const Tensor& grad, const Tensor& x, int64_t groups, const Tensor& w,
                                const Tensor& mean, const Tensor& var, double eps, const Tensor& gx,
                                const Tensor& grad_weight, const Tensor& grad_bias) {
  Tensor gw = grad_weight, gb = grad_bias;
  if (x.numel() == 0) {
    if (gw.defined()) gw.zero_();
    gb.zero_();
    return;
  }
  loops::group_norm_backward(grad.to(x.dtype()).contiguous(), x.contiguous(), groups, param_as(w, mean.scalar_type()),
                             mean, var, eps, gx, gw, gb);
}

}  // namespace tensor::cpu
