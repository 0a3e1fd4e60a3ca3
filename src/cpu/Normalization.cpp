// oneDNN batch and layer normalization (float32 and bfloat16 data; scale, shift and statistics
// in float32), forward and backward, each primitive cached under every parameter (Note
// [Primitive cache] in src/cpu/OneDNN.h). group_norm has no oneDNN 2.6 primitive: it runs the
// loops of kernels/cpu/PoolNormKernels.cpp (Note [group_norm without oneDNN] in src/ops/PoolNormOps.cpp).
#include "src/cpu/OneDNN.h"
#include "src/cpu/PoolNorm.h"
#include "tensor/ops.h"

namespace tensor::cpu::onednn {
namespace {

using dnnl::memory;
using dnnl::normalization_flags;
using dnnl::prop_kind;

memory::desc vec_md(int64_t n) { return memory::desc({n}, memory::data_type::f32, memory::dims{1}); }

normalization_flags flags_of(const Tensor& w, const Tensor& b) {
  normalization_flags f = normalization_flags::none;
  if (w.defined()) f |= normalization_flags::use_scale;
  if (b.defined()) f |= normalization_flags::use_shift;
  return f;
}

void add_opt(std::unordered_map<int, memory>& args, int arg, const Tensor& t) {
  if (t.defined()) args.emplace(arg, wrap(vec_md(t.numel()), t));
}

/// oneDNN 2.6's backward with use_shift (needed for diff_shift) also asks for the shift
/// itself, which it does not read: give it a zeroed buffer (kept alive by the caller).
Tensor unused_shift(std::unordered_map<int, memory>& args, const Tensor& gb) {
  if (!gb.defined()) return Tensor();
  Tensor z = tensor::zeros({gb.numel()}, gb.options());
  add_opt(args, DNNL_ARG_SHIFT, z);
  return z;
}

using BnFwdPd = dnnl::batch_normalization_forward::primitive_desc;
BnFwdPd bn_fwd_pd(prop_kind pk, const memory::desc& data, double eps, normalization_flags f) {
  dnnl::batch_normalization_forward::desc d(pk, data, static_cast<float>(eps), f);
  return BnFwdPd(d, make_attr(), engine());
}

using LnFwdPd = dnnl::layer_normalization_forward::primitive_desc;
LnFwdPd ln_fwd_pd(const memory::desc& data, const memory::desc& stat, double eps, normalization_flags f) {
  dnnl::layer_normalization_forward::desc d(prop_kind::forward_training, data, stat, static_cast<float>(eps), f);
  return LnFwdPd(d, make_attr(), engine());
}

memory::desc rows_md(const Tensor& t, int64_t rows, int64_t cols) {
  return memory::desc({rows, cols}, to_dnnl(t.scalar_type()), memory::dims{cols, 1});
}

}  // namespace

void batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& mean, const Tensor& var,
                bool training, double eps, const Tensor& out) {
  const memory::desc data = plain_md(x);
  normalization_flags f = flags_of(w, b);
  if (!training) f |= normalization_flags::use_global_stats;
  const prop_kind pk = training ? prop_kind::forward_training : prop_kind::forward_inference;
  Key key("batch_norm");
  key.add(x).add(out).add(static_cast<int64_t>(f)).add(static_cast<int64_t>(training)).add(eps);
  CachedPrimitive prim = cached(key, [&] {
    auto pd = bn_fwd_pd(pk, data, eps, f);
    return CachedPrimitive{dnnl::batch_normalization_forward(pd), pd};
  });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(data, x)}, {DNNL_ARG_DST, wrap(plain_md(out), out)}};
  add_opt(args, DNNL_ARG_MEAN, mean);
  add_opt(args, DNNL_ARG_VARIANCE, var);
  add_opt(args, DNNL_ARG_SCALE, w);
  add_opt(args, DNNL_ARG_SHIFT, b);
  execute(prim, std::move(args));
}

void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& var,
                         double eps, const Tensor& gx, const Tensor& gw, const Tensor& gb) {
  const memory::desc data = plain_md(x), diff = plain_md(g);
  // diff_shift comes with use_shift: ask for it whenever the bias gradient is wanted.
  const normalization_flags f = flags_of(w, gb);
  Key key("batch_norm_backward");
  key.add(x).add(g).add(gx).add(static_cast<int64_t>(f)).add(eps);
  CachedPrimitive prim = cached(key, [&] {
    auto hint = bn_fwd_pd(prop_kind::forward_training, data, eps, f);
    dnnl::batch_normalization_backward::desc d(prop_kind::backward, diff, data, static_cast<float>(eps), f);
    dnnl::batch_normalization_backward::primitive_desc pd(d, make_attr(), engine(), hint);
    return CachedPrimitive{dnnl::batch_normalization_backward(pd), pd};
  });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(data, x)},
                                       {DNNL_ARG_DIFF_DST, wrap(diff, g)},
                                       {DNNL_ARG_DIFF_SRC, wrap(plain_md(gx), gx)}};
  add_opt(args, DNNL_ARG_MEAN, mean);
  add_opt(args, DNNL_ARG_VARIANCE, var);
  add_opt(args, DNNL_ARG_SCALE, w);
  add_opt(args, DNNL_ARG_DIFF_SCALE, gw);
  add_opt(args, DNNL_ARG_DIFF_SHIFT, gb);
  Tensor shift = unused_shift(args, gb);
  execute(prim, std::move(args));
}

void layer_norm(const Tensor& x, int64_t rows, int64_t cols, const Tensor& w, const Tensor& b, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& var) {
  const memory::desc data = rows_md(x, rows, cols), stat = vec_md(rows);
  const normalization_flags f = flags_of(w, b);
  Key key("layer_norm");
  key.add(IntArrayRef({rows, cols, static_cast<int64_t>(x.scalar_type()), static_cast<int64_t>(f)})).add(eps);
  CachedPrimitive prim = cached(key, [&] {
    auto pd = ln_fwd_pd(data, stat, eps, f);
    return CachedPrimitive{dnnl::layer_normalization_forward(pd), pd};
  });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(data, x)},
                                       {DNNL_ARG_DST, wrap(data, out)},
                                       {DNNL_ARG_MEAN, wrap(stat, mean)},
                                       {DNNL_ARG_VARIANCE, wrap(stat, var)}};
  add_opt(args, DNNL_ARG_SCALE, w);
  add_opt(args, DNNL_ARG_SHIFT, b);
  execute(prim, std::move(args));
}

void layer_norm_backward(const Tensor& g, const Tensor& x, int64_t rows, int64_t cols, const Tensor& w,
                         const Tensor& mean, const Tensor& var, double eps, const Tensor& gx, const Tensor& gw,
                         const Tensor& gb) {
  const memory::desc data = rows_md(x, rows, cols), diff = rows_md(g, rows, cols), stat = vec_md(rows);
  const normalization_flags f = flags_of(w, gb);
  Key key("layer_norm_backward");
  key.add(IntArrayRef({rows, cols, static_cast<int64_t>(x.scalar_type()), static_cast<int64_t>(g.scalar_type()),
                       static_cast<int64_t>(f)}))
      .add(eps);
  CachedPrimitive prim = cached(key, [&] {
    auto hint = ln_fwd_pd(data, stat, eps, f);
    dnnl::layer_normalization_backward::desc d(prop_kind::backward, diff, data, stat, static_cast<float>(eps), f);
    dnnl::layer_normalization_backward::primitive_desc pd(d, make_attr(), engine(), hint);
    return CachedPrimitive{dnnl::layer_normalization_backward(pd), pd};
  });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(data, x)},
                                       {DNNL_ARG_DIFF_DST, wrap(diff, g)},
                                       {DNNL_ARG_DIFF_SRC, wrap(diff, gx)},
                                       {DNNL_ARG_MEAN, wrap(stat, mean)},
                                       {DNNL_ARG_VARIANCE, wrap(stat, var)}};
  add_opt(args, DNNL_ARG_SCALE, w);
  add_opt(args, DNNL_ARG_DIFF_SCALE, gw);
  add_opt(args, DNNL_ARG_DIFF_SHIFT, gb);
  Tensor shift = unused_shift(args, gb);
  execute(prim, std::move(args));
}

}  // namespace tensor::cpu::onednn
