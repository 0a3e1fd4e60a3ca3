// Plain-loop convolutions in float64 for every floating dtype. They serve float64
// (oneDNN has no float64 convolution) and are what the oneDNN paths are tested against.
//
// Note [One relation for every convolution loop]
// A convolution and its transposed form relate two activations, P and Q, through
//   p = q * stride + k * dilation - pad_l       (per spatial dim)
// with the weight indexed (Q channels, P channels / groups, k...). For a convolution P is the
// input and Q the output (weight (C_out, C_in / g, k)); for a transposed convolution P is the
// output and Q the input (weight (C_in, C_out / g, k)): the same layout. So three loops cover
// the forward and both backward passes of both:
//   gather_q  Q[n, qc, q] = sum W[qc, pc, k] P[n, pc, p]    conv forward, transposed grad_input
//   scatter_p P[n, pc, p] = sum W[qc, pc, k] Q[n, qc, q]    conv grad_input, transposed forward
//   weights   W[qc, pc, k] = sum Q[n, qc, q] P[n, pc, p]    grad_weight of both
// with pc running over the channels of qc's group. 1-D and 2-D convolutions run as 3-D ones
// with leading spatial dims of size 1.
#include <omp.h>

#include <algorithm>

#include "src/core/Check.h"
#include "kernels/cpu/ConvKernels.h"
#include "tensor/ops.h"

namespace tensor::cpu {
namespace {

struct Geometry {
  int64_t n = 1, pc = 1, qc = 1, groups = 1;  // batch, P channels, Q channels
  int64_t P[3], Q[3], K[3], s[3], d[3], pl[3];
  int64_t pvol() const { return P[0] * P[1] * P[2]; }
  int64_t qvol() const { return Q[0] * Q[1] * Q[2]; }
  int64_t kvol() const { return K[0] * K[1] * K[2]; }
};

Geometry geometry(IntArrayRef psz, IntArrayRef qsz, IntArrayRef wsz, const ConvParams& p) {
  Geometry g;
  g.n = psz[0];
  g.pc = psz[1];
  g.qc = qsz[1];
  g.groups = p.groups;
  const int64_t nd = p.spatial();
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t j = i - (3 - nd);  // index into the real spatial dims, < 0 for padding dims
    g.P[i] = j < 0 ? 1 : psz[2 + j];
    g.Q[i] = j < 0 ? 1 : qsz[2 + j];
    g.K[i] = j < 0 ? 1 : wsz[2 + j];
    g.s[i] = j < 0 ? 1 : p.stride[j];
    g.d[i] = j < 0 ? 1 : p.dilation[j];
    g.pl[i] = j < 0 ? 0 : p.pad_l[j];
  }
  return g;
}

/// The q in [0, qn) with 0 <= q * s + off < pn, as [lo, hi).
inline void q_range(int64_t off, int64_t s, int64_t pn, int64_t qn, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = pn - off <= 0 ? 0 : std::min(qn, (pn - off + s - 1) / s);
}

bool worth_threads(int64_t work) { return work >= (int64_t(1) << 16) && !omp_in_parallel(); }

/// Calls f(q_offset, p_offset, qw_lo, qw_hi) for each row of valid (q, p) pairs at kernel offset k.
template <class F>
inline void for_rows(const Geometry& g, int64_t kd, int64_t kh, int64_t kw, F&& f) {
  int64_t dlo, dhi, hlo, hhi, wlo, whi;
  const int64_t od = kd * g.d[0] - g.pl[0], oh = kh * g.d[1] - g.pl[1], ow = kw * g.d[2] - g.pl[2];
  q_range(od, g.s[0], g.P[0], g.Q[0], dlo, dhi);
  q_range(oh, g.s[1], g.P[1], g.Q[1], hlo, hhi);
  q_range(ow, g.s[2], g.P[2], g.Q[2], wlo, whi);
  if (wlo >= whi) return;
  for (int64_t qd = dlo; qd < dhi; ++qd) {
    const int64_t pd = qd * g.s[0] + od;
    for (int64_t qh = hlo; qh < hhi; ++qh) {
      const int64_t ph = qh * g.s[1] + oh;
      f((qd * g.Q[1] + qh) * g.Q[2], (pd * g.P[1] + ph) * g.P[2] + ow, wlo, whi);
    }
  }
}

void gather_q(const Geometry& g, const double* P, const double* W, double* Q) {
  const int64_t pcg = g.pc / g.groups, qcg = g.qc / g.groups, s = g.s[2];
  const int64_t pv = g.pvol(), qv = g.qvol(), kv = g.kvol();
#pragma omp parallel for collapse(2) if (worth_threads(g.n * g.qc * pcg * kv * qv))
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oc = 0; oc < g.qc; ++oc) {
      double* out = Q + (n * g.qc + oc) * qv;
      const int64_t grp = oc / qcg;
      for (int64_t ic = 0; ic < pcg; ++ic) {
        const double* in = P + (n * g.pc + grp * pcg + ic) * pv;
        const double* w = W + (oc * pcg + ic) * kv;
        for (int64_t kd = 0; kd < g.K[0]; ++kd)
          for (int64_t kh = 0; kh < g.K[1]; ++kh)
            for (int64_t kw = 0; kw < g.K[2]; ++kw) {
              const double wv = w[(kd * g.K[1] + kh) * g.K[2] + kw];
              for_rows(g, kd, kh, kw, [&](int64_t qo, int64_t po, int64_t lo, int64_t hi) {
                for (int64_t q = lo; q < hi; ++q) out[qo + q] += wv * in[po + q * s];
              });
            }
      }
    }
  }
}

void scatter_p(const Geometry& g, const double* Q, const double* W, double* P) {
  const int64_t pcg = g.pc / g.groups, qcg = g.qc / g.groups, s = g.s[2];
  const int64_t pv = g.pvol(), qv = g.qvol(), kv = g.kvol();
  // One thread owns each (n, pc) plane of P: no two threads write the same element.
#pragma omp parallel for collapse(2) if (worth_threads(g.n * g.pc * qcg * kv * qv))
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t c = 0; c < g.pc; ++c) {
      double* out = P + (n * g.pc + c) * pv;
      const int64_t grp = c / pcg, ic = c % pcg;
      for (int64_t j = 0; j < qcg; ++j) {
        const int64_t oc = grp * qcg + j;
        const double* in = Q + (n * g.qc + oc) * qv;
        const double* w = W + (oc * pcg + ic) * kv;
        for (int64_t kd = 0; kd < g.K[0]; ++kd)
          for (int64_t kh = 0; kh < g.K[1]; ++kh)
            for (int64_t kw = 0; kw < g.K[2]; ++kw) {
              const double wv = w[(kd * g.K[1] + kh) * g.K[2] + kw];
              for_rows(g, kd, kh, kw, [&](int64_t qo, int64_t po, int64_t lo, int64_t hi) {
                for (int64_t q = lo; q < hi; ++q) out[po + q * s] += wv * in[qo + q];
              });
            }
      }
    }
  }
}

void weights(const Geometry& g, const double* P, const double* Q, double* W) {
  const int64_t pcg = g.pc / g.groups, qcg = g.qc / g.groups, s = g.s[2];
  const int64_t pv = g.pvol(), qv = g.qvol(), kv = g.kvol();
#pragma omp parallel for collapse(2) if (worth_threads(g.n * g.qc * pcg * kv * qv))
  for (int64_t oc = 0; oc < g.qc; ++oc) {
    for (int64_t ic = 0; ic < pcg; ++ic) {
      double* w = W + (oc * pcg + ic) * kv;
      const int64_t grp = oc / qcg;
      for (int64_t kd = 0; kd < g.K[0]; ++kd)
        for (int64_t kh = 0; kh < g.K[1]; ++kh)
          for (int64_t kw = 0; kw < g.K[2]; ++kw) {
            double acc = 0;
            for (int64_t n = 0; n < g.n; ++n) {
              const double* q = Q + (n * g.qc + oc) * qv;
              const double* p = P + (n * g.pc + grp * pcg + ic) * pv;
              for_rows(g, kd, kh, kw, [&](int64_t qo, int64_t po, int64_t lo, int64_t hi) {
                for (int64_t i = lo; i < hi; ++i) acc += q[qo + i] * p[po + i * s];
              });
            }
            w[(kd * g.K[1] + kh) * g.K[2] + kw] = acc;
          }
    }
  }
}

Tensor f64(const Tensor& t) { return t.to(kFloat64).contiguous(); }

Tensor zeros64(IntArrayRef sizes) { return zeros(sizes, TensorOptions().dtype(kFloat64)); }

}  // namespace

void ref_convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                     const Tensor& out) {
  const Tensor x = f64(input), w = f64(weight);
  Tensor y = zeros64(out.sizes());
  if (!p.transposed) {
    gather_q(geometry(x.sizes(), y.sizes(), w.sizes(), p), x.data_ptr<double>(), w.data_ptr<double>(),
             y.data_ptr<double>());
  } else {
    scatter_p(geometry(y.sizes(), x.sizes(), w.sizes(), p), x.data_ptr<double>(), w.data_ptr<double>(),
              y.data_ptr<double>());
  }
  if (bias.defined()) {
    const Tensor b = f64(bias);
    const double* bp = b.data_ptr<double>();
    double* yp = y.data_ptr<double>();
    const int64_t c = y.size(1), vol = y.numel() / std::max<int64_t>(1, y.size(0) * c);
    for (int64_t i = 0; i < y.size(0) * c; ++i) std::for_each(yp + i * vol, yp + (i + 1) * vol, [&](double& v) { v += bp[i % c]; });
  }
  Tensor(out).copy_(y);
}

void ref_convolution_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvParams& p,
                              const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
  const Tensor g = f64(grad), x = f64(input), w = f64(weight);
  const double *gp = g.data_ptr<double>(), *xp = x.data_ptr<double>(), *wp = w.data_ptr<double>();
  if (grad_input.defined()) {
    Tensor gi = zeros64(input.sizes());
    if (!p.transposed) scatter_p(geometry(gi.sizes(), g.sizes(), w.sizes(), p), gp, wp, gi.data_ptr<double>());
    else gather_q(geometry(g.sizes(), gi.sizes(), w.sizes(), p), gp, wp, gi.data_ptr<double>());
    Tensor(grad_input).copy_(gi);
  }
  if (grad_weight.defined()) {
    Tensor gw = zeros64(weight.sizes());
    if (!p.transposed) weights(geometry(x.sizes(), g.sizes(), w.sizes(), p), xp, gp, gw.data_ptr<double>());
    else weights(geometry(g.sizes(), x.sizes(), w.sizes(), p), gp, xp, gw.data_ptr<double>());
    Tensor(grad_weight).copy_(gw);
  }
  if (grad_bias.defined()) {
    const int64_t n = g.size(0), c = g.size(1), vol = g.numel() / std::max<int64_t>(1, n * c);
    Tensor gb = zeros64({c});
    double* bp = gb.data_ptr<double>();
    for (int64_t i = 0; i < n * c; ++i)
      for (int64_t j = 0; j < vol; ++j) bp[i % c] += gp[i * vol + j];
    Tensor(grad_bias).copy_(gb);
  }
}

}  // namespace tensor::cpu
