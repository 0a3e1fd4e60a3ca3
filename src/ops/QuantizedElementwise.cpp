// Quantized add/mul/cat with an output scale (tensor::quantized::add, ...; tensor/nn/quantized.h)
// and the Quantized-key kernels of relu, relu_, max_pool2d, avg_pool2d, adaptive_avg_pool2d and
// cat on per-tensor quantized tensors (Note [Quantized key] in src/dispatch/Dispatcher.h).
//
// Note [Quantized elementwise arithmetic]
// These ops are memory-bound loops over 8-bit integers; they compute each output in float64 from
// the real values and round once, so their results are exact (no tolerance) against the
// reference loops of tests/test_quantized_kernels.cpp:
//   add     y = clamp(round(((a - za) * sa + (b - zb) * sb) / s) + z)      (ReLU: max(., z))
//   mul     y = clamp(round(((a - za) * sa) * ((b - zb) * sb) / s) + z)
//   relu    y = max(q, zq)                          (same scale and zero point: exact)
//   max     y = the largest integer of the window   (same parameters: max commutes with them)
//   avg     y = clamp(round(sum(q - zq) / divisor) + zq)                  (same parameters)
//   cat     y = q where the input has the output's parameters, else clamp(round((q - zq) * sq / s) + z)
// round is nearbyint: half to even, as quantize_per_tensor. libtorch's own quantized add and
// pooling round through float32 multipliers and may differ from these by one step. add and mul
// run on Highway's float64 lanes (kernels/cpu/QuantizeKernels.cpp, Note [Vectorized quantize
// loops]), the same operations in the same order, so the same bits. Inputs of one shape and one
// dense layout (two channels-last conv outputs, a ResNet block's skip add) are walked in memory
// order and give an output of that layout, without copying either input to contiguous first.
//
// Note [Lazy quantized registration]
// The Quantized slots of the ops above are filled once, when the first quantized tensor is made
// (detail::empty_quantized): no call can carry the Quantized key before that, and nothing
// depends on static initializers (as Note [Lazy autograd registration]).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "kernels/cpu/QuantizeKernels.h"
#include "src/core/Check.h"
#include "src/core/Parallel.h"
#include "src/core/Quantizer.h"
#include "src/ops/ElementwiseOps.h"
#include "src/ops/IndexOps.h"
#include "src/ops/PoolNormOps.h"
#include "src/ops/QuantizedOneDNN.h"
#include "src/ops/QuantizedOps.h"
#include "tensor/nn/quantized.h"
#include "tensor/ops.h"

namespace tensor {
namespace {
using detail::as_underlying;
using detail::parallel_range;
using detail::shape_str;
using detail::threads_for;

template <class F>
void visit_q8(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::QInt8:
      f(int8_t{});
      return;
    case ScalarType::QUInt8:
      f(uint8_t{});
      return;
    default:
      TENSOR_ERROR("internal: {} is not an 8-bit quantized dtype", t);
  }
}

// Loops over more elements than this run on OpenMP's threads (each output is computed alone, so
// the results do not depend on the thread count).
constexpr int64_t kParallelGrain = 65536;

inline int64_t round_clamp(double v, int64_t zp, int64_t lo, int64_t hi) {
  double r = std::nearbyint(v) + static_cast<double>(zp);
  return static_cast<int64_t>(std::clamp(r, static_cast<double>(lo), static_cast<double>(hi)));
}

// A per-tensor quantized 8-bit input, checked (op named in the error).
void check_q8(const Tensor& q, const char* op, const char* what = "input") {
  TENSOR_CHECK(q.defined(), "{}: the {} is undefined", op, what);
  TENSOR_CHECK(q.is_quantized() && (q.dtype() == kQUInt8 || q.dtype() == kQInt8),
               "{}: expected a quint8 or qint8 {}, got {}", op, what, q.describe());
  TENSOR_CHECK(q.qscheme() == QScheme::PerTensorAffine,
               "{}: expected a per-tensor quantized {}, got a per-channel one ({}); dequantize() it first", op, what,
               q.describe());
}

Tensor new_like_params(IntArrayRef sizes, ScalarType t, double scale, int64_t zp, const char* op) {
  return detail::empty_quantized(sizes, Quantizer::per_tensor(t, scale, zp, op));
}

std::vector<int64_t> broadcast(IntArrayRef a, IntArrayRef b, const char* op, const Tensor& ta, const Tensor& tb) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TENSOR_CHECK(x == y || x == 1 || y == 1, "{}: the shapes of {} and {} do not broadcast", op, ta.describe(),
                 tb.describe());
    r[i] = x == 1 ? y : x;
  }
  return r;
}

enum class BinKind { Add, Mul };

Tensor binary(const Tensor& qa, const Tensor& qb, double scale, int64_t zp, BinKind kind, bool relu, const char* op) {
  check_q8(qa, op, "first input");
  check_q8(qb, op, "second input");
  TENSOR_CHECK(qa.dtype() == qb.dtype(), "{}: both inputs must have one dtype, got {} and {}", op, qa.describe(),
               qb.describe());
  const std::vector<int64_t> shape = broadcast(qa.sizes(), qb.sizes(), op, qa, qb);
  // Walk the inputs in memory order when both are laid out alike and densely (Note [Quantized
  // elementwise arithmetic]): permuted to that order they are contiguous, and so is the output,
  // which is permuted back. Otherwise both are copied to contiguous (broadcasting).
  std::vector<int64_t> order(shape.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
  Tensor a = as_underlying(qa), b = as_underlying(qb);
  bool same_layout = qa.sizes() == qb.sizes() && qa.strides() == qb.strides();
  if (same_layout) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return a.stride(x) > a.stride(y); });
    a = a.permute(order);
    b = b.permute(order);
    same_layout = a.is_contiguous() && b.is_contiguous();
  }
  if (!same_layout) {
    for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
    a = as_underlying(qa).expand(shape).contiguous();
    b = as_underlying(qb).expand(shape).contiguous();
  }
  Tensor out = new_like_params(a.sizes(), qa.dtype(), scale, zp, op);
  const int64_t lo = detail::qmin(qa.dtype());
  cpu::QBinaryParams p;
  p.sa = qa.q_scale();
  p.sb = qb.q_scale();
  p.za = static_cast<double>(qa.q_zero_point());
  p.zb = static_cast<double>(qb.q_zero_point());
  p.scale = scale;
  p.zero_point = zp;
  p.floor_q = relu ? std::max(lo, zp) : lo;
  p.mul = kind == BinKind::Mul;
  const bool is_signed = qa.dtype() == kQInt8;
  const auto* pa = static_cast<const uint8_t*>(a.data_ptr());
  const auto* pb = static_cast<const uint8_t*>(b.data_ptr());
  auto* po = static_cast<uint8_t*>(out.data_ptr());
  const int64_t n = out.numel();
  const int64_t chunks = (n + kParallelGrain - 1) / kParallelGrain;
  parallel_range(chunks, threads_for(n), [&](int64_t c_begin, int64_t c_end) {
    for (int64_t c = c_begin; c < c_end; ++c) {
      const int64_t b0 = c * kParallelGrain;
      cpu::binary_q8(pa + b0, pb + b0, po + b0, is_signed, std::min(kParallelGrain, n - b0), p);
    }
  });
  // Back to the inputs' dim order (a contiguous output stays a whole tensor, not a view).
  if (std::is_sorted(order.begin(), order.end())) return out;
  std::vector<int64_t> inverse(order.size());
  for (size_t d = 0; d < order.size(); ++d) inverse[order[d]] = static_cast<int64_t>(d);
  return out.permute(inverse);
}

// The integers of q (any layout) with the parameters (scale, zp): a copy, requantized when q's
// parameters differ (Note [Quantized elementwise arithmetic], cat).
Tensor requantized_ints(const Tensor& q, double scale, int64_t zp) {
  const Tensor ints = as_underlying(q);
  if (q.q_scale() == scale && q.q_zero_point() == zp) return ints;
  const Tensor src = ints.contiguous();
  Tensor dst = empty(q.sizes(), TensorOptions().dtype(ints.dtype()));
  const double sq = q.q_scale(), zq = static_cast<double>(q.q_zero_point());
  const int64_t lo = detail::qmin(q.dtype()), hi = detail::qmax(q.dtype());
  visit_q8(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* s = static_cast<const T*>(src.data_ptr());
    T* d = static_cast<T*>(dst.data_ptr());
    const int64_t n = src.numel();
    parallel_range(n, threads_for(n), [&](int64_t i_begin, int64_t i_end) {
      for (int64_t i = i_begin; i < i_end; ++i)
        d[i] = static_cast<T>(round_clamp((static_cast<double>(s[i]) - zq) * sq / scale, zp, lo, hi));
    });
  });
  return dst;
}

Tensor cat_impl(TensorList qs, int64_t dim, std::optional<std::pair<double, int64_t>> params, const char* op) {
  TENSOR_CHECK(!qs.empty(), "{}: expected a non-empty list of tensors", op);
  for (size_t i = 0; i < qs.size(); ++i) {
    check_q8(qs[i], op, "input");
    TENSOR_CHECK(qs[i].dtype() == qs[0].dtype(),
                 "{}: every input must have one dtype, got {} (input 0) and {} (input {})", op, qs[0].describe(),
                 qs[i].describe(), i);
  }
  const double scale = params ? params->first : qs[0].q_scale();
  const int64_t zp = params ? params->second : qs[0].q_zero_point();
  if (params) quantized::detail::check_output_qparams(scale, zp, qs[0].dtype(), op);
  std::vector<Tensor> ints;
  ints.reserve(qs.size());
  for (const Tensor& q : qs) ints.push_back(requantized_ints(q, scale, zp));
  const Tensor joined = tensor::cat(ints, dim);
  Tensor out = new_like_params(joined.sizes(), qs[0].dtype(), scale, zp, op);
  as_underlying(out).copy_(joined);
  return out;
}

// ---- pooling geometry (libtorch's rules) ----
struct Window {
  int64_t k, s, p, d, in, out;
};
std::vector<int64_t> two(IntArrayRef v, const char* name, const char* op) {
  TENSOR_CHECK(v.size() == 1 || v.size() == 2, "{}: {} must have 1 or 2 values, got {}", op, name, shape_str(v));
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : std::vector<int64_t>{v[0], v[1]};
}
Window window(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode, const Tensor& x, const char* op) {
  TENSOR_CHECK(k > 0 && s > 0 && d > 0 && p >= 0,
               "{}: kernel, stride and dilation must be positive and padding "
               "non-negative, got kernel {}, stride {}, padding {}, dilation {} for input {}",
               op, k, s, p, d, x.describe());
  TENSOR_CHECK(p <= k / 2, "{}: padding {} must be at most half the kernel size {} (input {})", op, p, k, x.describe());
  const int64_t span = d * (k - 1) + 1;
  const int64_t num = in + 2 * p - span;
  TENSOR_CHECK(num >= 0, "{}: the input {} is too small for a kernel of {} (dilation {}, padding {})", op, x.describe(),
               k, d, p);
  int64_t out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;  // the last window must start inside
  return {k, s, p, d, in, out};
}
void check_pool_input(const Tensor& x, const char* op) {
  check_q8(x, op);
  TENSOR_CHECK(x.dim() == 3 || x.dim() == 4, "{}: expected a 3-d or 4-d input ([C, H, W] or [N, C, H, W]), got {}", op,
               x.describe());
}
std::vector<int64_t> pool_out_shape(const Tensor& x, int64_t oh, int64_t ow) {
  std::vector<int64_t> s(x.sizes().begin(), x.sizes().end());
  s[s.size() - 2] = oh;
  s[s.size() - 1] = ow;
  return s;
}

// Applies f(plane_in, plane_out) over the N*C planes of contiguous integers.
template <class T, class F>
void for_planes(const Tensor& xc, Tensor& out, int64_t ih, int64_t iw, int64_t oh, int64_t ow, F&& f) {
  const int64_t planes = xc.numel() / std::max<int64_t>(ih * iw, 1);
  const T* src = static_cast<const T*>(xc.data_ptr());
  T* dst = static_cast<T*>(out.data_ptr());
  parallel_range(planes, threads_for(planes * ih * iw), [&](int64_t pl_begin, int64_t pl_end) {
    for (int64_t pl = pl_begin; pl < pl_end; ++pl) f(src + pl * ih * iw, dst + pl * oh * ow);
  });
}

// Note [Channels-last quantized max pooling]
// The int8 convolutions leave their outputs channels-last (oneDNN's layout), and max pooling
// usually follows. Making such an input contiguous first (a strided byte copy of the whole
// activation) cost more than the convolution did, so a channels-last input is pooled in place:
// per output pixel, an elementwise max over the window's rows of C contiguous integers (which
// the compiler vectorizes), into a channels-last output. Max of the integers is max of the real
// values (the scale is positive), so both paths give the same integers.
Tensor q_max_pool2d_channels_last(const Tensor& x, const Window& wh, const Window& ww, const char* op) {
  const int64_t n = x.size(0), c = x.size(1), ih = x.size(2), iw = x.size(3);
  Tensor out_nhwc = new_like_params({n, wh.out, ww.out, c}, x.dtype(), x.q_scale(), x.q_zero_point(), op);
  Tensor out = out_nhwc.permute({0, 3, 1, 2});
  if (out.numel() == 0) return out;
  const Tensor xi = as_underlying(x);
  visit_q8(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(xi.data_ptr());
    T* dst = static_cast<T*>(out_nhwc.data_ptr());
    const int64_t rows = n * wh.out;
    parallel_range(rows, threads_for(rows * ww.out * c), [&](int64_t r_begin, int64_t r_end) {
      for (int64_t r = r_begin; r < r_end; ++r) {
        const int64_t b = r / wh.out, y = r % wh.out;
        for (int64_t xo = 0; xo < ww.out; ++xo) {
          T* o = dst + ((b * wh.out + y) * ww.out + xo) * c;
          bool first = true;
          for (int64_t a = 0; a < wh.k; ++a) {
            const int64_t iy = y * wh.s - wh.p + a * wh.d;
            if (iy < 0 || iy >= ih) continue;
            for (int64_t e = 0; e < ww.k; ++e) {
              const int64_t ix = xo * ww.s - ww.p + e * ww.d;
              if (ix < 0 || ix >= iw) continue;
              const T* __restrict in = src + ((b * ih + iy) * iw + ix) * c;
              T* __restrict acc = o;
              if (first) {
                std::memcpy(acc, in, static_cast<size_t>(c) * sizeof(T));
                first = false;
              } else {
#pragma omp simd
                for (int64_t ch = 0; ch < c; ++ch) acc[ch] = acc[ch] < in[ch] ? in[ch] : acc[ch];
              }
            }
          }
        }
      }
    });
  });
  return out;
}

Tensor q_max_pool2d(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d, bool ceil_mode) {
  constexpr const char* op = "max_pool2d";
  check_pool_input(x, op);
  const auto kk = two(k, "kernel_size", op), ss = s.empty() ? kk : two(s, "stride", op), pp = two(p, "padding", op),
             dd = two(d, "dilation", op);
  const int64_t ih = x.size(-2), iw = x.size(-1);
  const Window wh = window(ih, kk[0], ss[0], pp[0], dd[0], ceil_mode, x, op);
  const Window ww = window(iw, kk[1], ss[1], pp[1], dd[1], ceil_mode, x, op);
  if (x.dim() == 4 && x.size(1) > 1 && x.stride(1) == 1 && x.stride(3) == x.size(1) && x.stride(2) == x.size(1) * iw &&
      x.stride(0) == x.size(1) * iw * ih) {
    return q_max_pool2d_channels_last(x, wh, ww, op);
  }
  Tensor out = new_like_params(pool_out_shape(x, wh.out, ww.out), x.dtype(), x.q_scale(), x.q_zero_point(), op);
  const Tensor xc = as_underlying(x).contiguous();
  if (out.numel() == 0) return out;
  visit_q8(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for_planes<T>(xc, out, ih, iw, wh.out, ww.out, [&](const T* in, T* o) {
      for (int64_t y = 0; y < wh.out; ++y)
        for (int64_t xo = 0; xo < ww.out; ++xo) {
          int64_t best = std::numeric_limits<int64_t>::min();
          for (int64_t a = 0; a < wh.k; ++a) {
            const int64_t iy = y * wh.s - wh.p + a * wh.d;
            if (iy < 0 || iy >= ih) continue;
            for (int64_t b = 0; b < ww.k; ++b) {
              const int64_t ix = xo * ww.s - ww.p + b * ww.d;
              if (ix >= 0 && ix < iw) best = std::max<int64_t>(best, in[iy * iw + ix]);
            }
          }
          o[y * ww.out + xo] = static_cast<T>(best);
        }
    });
  });
  return out;
}

Tensor q_avg_pool2d(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode,
                    bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr const char* op = "avg_pool2d";
  check_pool_input(x, op);
  TENSOR_CHECK(!divisor_override || *divisor_override != 0, "{}: divisor_override must be nonzero", op);
  const auto kk = two(k, "kernel_size", op), ss = s.empty() ? kk : two(s, "stride", op), pp = two(p, "padding", op);
  const int64_t ih = x.size(-2), iw = x.size(-1);
  const Window wh = window(ih, kk[0], ss[0], pp[0], 1, ceil_mode, x, op);
  const Window ww = window(iw, kk[1], ss[1], pp[1], 1, ceil_mode, x, op);
  const int64_t zp = x.q_zero_point(), lo = detail::qmin(x.dtype()), hi = detail::qmax(x.dtype());
  Tensor out = new_like_params(pool_out_shape(x, wh.out, ww.out), x.dtype(), x.q_scale(), zp, op);
  const Tensor xc = as_underlying(x).contiguous();
  if (out.numel() == 0) return out;
  visit_q8(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for_planes<T>(xc, out, ih, iw, wh.out, ww.out, [&](const T* in, T* o) {
      for (int64_t y = 0; y < wh.out; ++y)
        for (int64_t xo = 0; xo < ww.out; ++xo) {
          int64_t y0 = y * wh.s - wh.p, x0 = xo * ww.s - ww.p;
          int64_t y1 = std::min(y0 + wh.k, ih + wh.p), x1 = std::min(x0 + ww.k, iw + ww.p);
          const int64_t padded = (y1 - y0) * (x1 - x0);
          y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
          y1 = std::min(y1, ih), x1 = std::min(x1, iw);
          int64_t sum = 0;
          for (int64_t a = y0; a < y1; ++a)
            for (int64_t b = x0; b < x1; ++b) sum += static_cast<int64_t>(in[a * iw + b]) - zp;
          const int64_t div = divisor_override ? *divisor_override : count_include_pad ? padded : (y1 - y0) * (x1 - x0);
          o[y * ww.out + xo] =
              static_cast<T>(round_clamp(static_cast<double>(sum) / static_cast<double>(div), zp, lo, hi));
        }
    });
  });
  return out;
}

Tensor q_adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size) {
  constexpr const char* op = "adaptive_avg_pool2d";
  check_pool_input(x, op);
  const auto os = two(output_size, "output_size", op);
  TENSOR_CHECK(os[0] >= 0 && os[1] >= 0, "{}: output_size must be non-negative, got {}", op, shape_str(output_size));
  const int64_t ih = x.size(-2), iw = x.size(-1), oh = os[0], ow = os[1];
  TENSOR_CHECK((ih > 0 && iw > 0) || x.numel() == 0, "{}: the input {} has an empty spatial dim", op, x.describe());
  const int64_t zp = x.q_zero_point(), lo = detail::qmin(x.dtype()), hi = detail::qmax(x.dtype());
  Tensor out = new_like_params(pool_out_shape(x, oh, ow), x.dtype(), x.q_scale(), zp, op);
  const Tensor xc = as_underlying(x).contiguous();
  if (out.numel() == 0) return out;
  visit_q8(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for_planes<T>(xc, out, ih, iw, oh, ow, [&](const T* in, T* o) {
      for (int64_t y = 0; y < oh; ++y) {
        const int64_t y0 = y * ih / oh, y1 = ((y + 1) * ih + oh - 1) / oh;
        for (int64_t xo = 0; xo < ow; ++xo) {
          const int64_t x0 = xo * iw / ow, x1 = ((xo + 1) * iw + ow - 1) / ow;
          int64_t sum = 0;
          for (int64_t a = y0; a < y1; ++a)
            for (int64_t b = x0; b < x1; ++b) sum += static_cast<int64_t>(in[a * iw + b]) - zp;
          const double n = static_cast<double>((y1 - y0) * (x1 - x0));
          o[y * ow + xo] = static_cast<T>(round_clamp(static_cast<double>(sum) / n, zp, lo, hi));
        }
      }
    });
  });
  return out;
}

Tensor q_relu(const Tensor& x) {
  check_q8(x, "relu");
  Tensor out = new_like_params(x.sizes(), x.dtype(), x.q_scale(), x.q_zero_point(), "relu");
  as_underlying(out).copy_(tensor::clamp(as_underlying(x), Scalar(x.q_zero_point()), std::nullopt));
  return out;
}
Tensor& q_relu_(Tensor& x) {
  check_q8(x, "relu_");
  Tensor ints = as_underlying(x);
  ints.copy_(tensor::clamp(ints, Scalar(x.q_zero_point()), std::nullopt));
  return x;
}

Tensor q_cat(TensorList qs, int64_t dim) { return cat_impl(qs, dim, std::nullopt, "cat"); }

// q + q and q * q have no output scale to requantize with: say which op to call.
Tensor q_add_tensor(const Tensor& a, const Tensor& b, const Scalar&) {
  TENSOR_ERROR(
      "add: adding quantized tensors ({} and {}) needs an output scale and zero point; use "
      "tensor::quantized::add(qa, qb, scale, zero_point) (tensor/nn/quantized.h), or dequantize() first",
      a.describe(), b.describe());
}
Tensor q_mul_tensor(const Tensor& a, const Tensor& b, const Scalar&) {
  TENSOR_ERROR(
      "mul: multiplying quantized tensors ({} and {}) needs an output scale and zero point; use "
      "tensor::quantized::mul(qa, qb, scale, zero_point) (tensor/nn/quantized.h), or dequantize() first",
      a.describe(), b.describe());
}
}  // namespace

namespace quantized {
Tensor add(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point) {
  check_q8(qa, "quantized::add", "first input");
  detail::check_output_qparams(scale, zero_point, qa.dtype(), "quantized::add");
  return binary(qa, qb, scale, zero_point, BinKind::Add, false, "quantized::add");
}
Tensor add_relu(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point) {
  check_q8(qa, "quantized::add_relu", "first input");
  detail::check_output_qparams(scale, zero_point, qa.dtype(), "quantized::add_relu");
  return binary(qa, qb, scale, zero_point, BinKind::Add, true, "quantized::add_relu");
}
Tensor mul(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point) {
  check_q8(qa, "quantized::mul", "first input");
  detail::check_output_qparams(scale, zero_point, qa.dtype(), "quantized::mul");
  return binary(qa, qb, scale, zero_point, BinKind::Mul, false, "quantized::mul");
}
Tensor mul_relu(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point) {
  check_q8(qa, "quantized::mul_relu", "first input");
  detail::check_output_qparams(scale, zero_point, qa.dtype(), "quantized::mul_relu");
  return binary(qa, qb, scale, zero_point, BinKind::Mul, true, "quantized::mul_relu");
}
Tensor cat(TensorList qxs, int64_t dim, double scale, int64_t zero_point) {
  return cat_impl(qxs, dim, std::make_pair(scale, zero_point), "quantized::cat");
}
}  // namespace quantized

namespace ops {
void ensure_quantized_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    UnaryOpDefs& relu = unary_op(UnaryOp::Relu);
    relu.functional.set(DispatchKey::Quantized, &q_relu);
    relu.inplace.set(DispatchKey::Quantized, &q_relu_);
    PoolNormOpDefs& pn = pool_norm_ops();
    pn.max_pool2d.set(DispatchKey::Quantized, &q_max_pool2d);
    pn.avg_pool2d.set(DispatchKey::Quantized, &q_avg_pool2d);
    pn.adaptive_avg_pool2d.set(DispatchKey::Quantized, &q_adaptive_avg_pool2d);
    cat_op().set(DispatchKey::Quantized, &q_cat);
    binary_op(BinaryOp::Add).functional.set(DispatchKey::Quantized, &q_add_tensor);
    binary_op(BinaryOp::Mul).functional.set(DispatchKey::Quantized, &q_mul_tensor);
  });
}
}  // namespace ops
}  // namespace tensor
