// oneDNN pooling (float32 and bfloat16): max forward, average forward and backward, each
// primitive cached under every parameter (Note [Primitive cache] in src/cpu/OneDNN.h).
// Tensors are described as they lie (contiguous NCHW or channels-last NHWC), so no reorder.
#include "src/cpu/Layout.h"
#include "src/cpu/OneDNN.h"
#include "src/cpu/PoolNorm.h"

namespace tensor::cpu::onednn {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

// Note [Pooling right padding]
// oneDNN has no ceil_mode: its output size is floor((in + pad_l + pad_r - window) / stride) + 1.
// As libtorch's mkldnn path, start from pad_r = pad_l (libtorch's floor-mode size) and grow
// pad_r until the size reaches libtorch's; padded positions never win a max, and the caller
// routes the average cases whose divisor would differ to the loops.
int64_t right_pad(int64_t in, int64_t out, int64_t k, int64_t s, int64_t pad, int64_t d) {
  const int64_t window = (k - 1) * d + 1;
  int64_t r = pad;
  while ((in + pad + r - window) / s + 1 < out) ++r;
  return r;
}

struct PoolDims {
  memory::dims strides, kernel, dilation, pad_l, pad_r;
};
PoolDims pool_dims(const Pool2d& p) {
  return {{p.sh, p.sw},
          {p.kh, p.kw},
          {p.dh - 1, p.dw - 1},  // oneDNN counts dilation from 0
          {p.ph, p.pw},
          {right_pad(p.ih, p.oh, p.kh, p.sh, p.ph, p.dh), right_pad(p.iw, p.ow, p.kw, p.sw, p.pw, p.dw)}};
}

Key pool_key(const char* op, const Pool2d& p, const Tensor& src, const Tensor& dst, int64_t alg) {
  Key k(op);
  k.add(src).add(dst).add(alg);
  k.add(IntArrayRef({p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.dh, p.dw}));
  return k;
}

algorithm avg_alg(const Pool2d& p) {
  return p.count_include_pad ? algorithm::pooling_avg_include_padding : algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_v2_forward::primitive_desc fwd_pd(prop_kind pk, algorithm alg, const memory::desc& src,
                                                const memory::desc& dst, const Pool2d& p) {
  PoolDims d = pool_dims(p);
  dnnl::pooling_v2_forward::desc desc(pk, alg, src, dst, d.strides, d.kernel, d.dilation, d.pad_l, d.pad_r);
  return dnnl::pooling_v2_forward::primitive_desc(desc, make_attr(), engine());
}

void forward(const char* op, algorithm alg, const Tensor& x, const Pool2d& p, const Tensor& out) {
  memory::desc src = plain_md(x), dst = plain_md(out);
  CachedPrimitive prim = cached(pool_key(op, p, x, out, static_cast<int64_t>(alg)), [&] {
    auto pd = fwd_pd(prop_kind::forward_inference, alg, src, dst, p);
    return CachedPrimitive{dnnl::pooling_v2_forward(pd), pd};
  });
  execute(prim, {{DNNL_ARG_SRC, wrap(src, x)}, {DNNL_ARG_DST, wrap(dst, out)}});
}

}  // namespace

bool pool_layout_ok(const Tensor& x) {
  return supports(x.scalar_type()) && x.dim() == 4 && (x.is_contiguous() || is_channels_last_contiguous(x));
}

void max_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out) {
  forward("max_pool2d", algorithm::pooling_max, x, p, out);
}

void avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out) { forward("avg_pool2d", avg_alg(p), x, p, out); }

void avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in) {
  memory::desc diff_dst = plain_md(grad_out), diff_src = plain_md(grad_in);
  const algorithm alg = avg_alg(p);
  CachedPrimitive prim = cached(pool_key("avg_pool2d_backward", p, grad_in, grad_out, static_cast<int64_t>(alg)), [&] {
    auto hint = fwd_pd(prop_kind::forward_training, alg, diff_src, diff_dst, p);
    PoolDims d = pool_dims(p);
    dnnl::pooling_v2_backward::desc desc(alg, diff_src, diff_dst, d.strides, d.kernel, d.dilation, d.pad_l, d.pad_r);
    dnnl::pooling_v2_backward::primitive_desc pd(desc, make_attr(), engine(), hint);
    return CachedPrimitive{dnnl::pooling_v2_backward(pd), pd};
  });
  execute(prim, {{DNNL_ARG_DIFF_DST, wrap(diff_dst, grad_out)}, {DNNL_ARG_DIFF_SRC, wrap(diff_src, grad_in)}});
}

}  // namespace tensor::cpu::onednn
