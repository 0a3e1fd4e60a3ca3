// oneDNN convolutions: forward, backward data and backward weights, for convolutions and
// transposed convolutions (oneDNN's deconvolution), float32 and bfloat16. Primitives and the
// reorders around them come from the primitive cache (Note [Primitive cache]).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "src/core/Check.h"
#include "src/cpu/Layout.h"
#include "src/cpu/OneDNN.h"
#include "src/cpu/Conv.h"
#include "tensor/ops.h"

namespace tensor::cpu {
namespace {

namespace dn = onednn;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;

// Note [Convolution layouts]
// Tensors cross the API boundary in plain layouts (NCHW-contiguous, channels-last, or any
// strides); what oneDNN computes in is chosen per case, from measurements on this machine kind
// (Sapphire Rapids, 3x3 conv, batch 8, 64->64 channels, 56x56, float32):
//   oneDNN alone, 2 threads, wall time:
//     plain NCHW src/dst (plain or `any` weights): im2col + gemm (gemm:jit), ~220 GFLOP/s;
//     `any` src/weights/dst (nChw16c, OIhw16i16o): jit:avx512_core, ~470 GFLOP/s for the
//       convolution alone, ~420 with the reorders of src, weights and dst around it;
//     channels-last src/dst, `any` weights: brgconv:avx512_core, ~455, no activation reorder;
//     channels-last src/dst, plain weights: only ref:any, ~1 GFLOP/s.
//   this file, 1 thread, CPU time per call (forward / forward + backward):
//     NCHW as `any` 9.7 / 34.1 ms, NCHW reordered to nhwc 10.9 / 38.6 ms, plain 18.4 / 67.8 ms
//     (TENSOR_ONEDNN_CONV_LAYOUT below); libtorch 1.13 on the same calls 14.1 / 46.2 ms.
// bfloat16 shows the same ordering with AMX kernels (brgconv:avx512_core_amx_bf16, ~2 TFLOP/s
// forward with the reorders, against ~80 GFLOP/s on the gemm fallback).
// So: weights are always `any` (reordered every call: they are small next to the activations);
// channels-last activations are passed as they are (nwc/nhwc/ndhwc); any other activation is
// `any`: the reorder to the blocked layout costs ~0.75 ms of the 10 and buys twice the speed.
// A tensor whose layout already equals what the primitive wants is used in place
// (same_layout). Reorders are primitives too, cached under the convolution's key plus the
// argument they serve; their buffers come from libtensor's caching allocator (libtorch's
// fresh buffers page-fault: its reorders were seen taking 2.5 ms instead of 0.75).

/// How NCHW activations are handed to oneDNN: `any` (the default, see above), or, for
/// measurements, TENSOR_ONEDNN_CONV_LAYOUT=plain (as they are) or =nhwc (reordered to nhwc).
enum class Layout { Any, Plain, Nhwc };
Layout nchw_layout() {
  static const Layout l = [] {
    const char* e = std::getenv("TENSOR_ONEDNN_CONV_LAYOUT");
    if (e && std::strcmp(e, "plain") == 0) return Layout::Plain;
    if (e && std::strcmp(e, "nhwc") == 0) return Layout::Nhwc;
    return Layout::Any;
  }();
  return l;
}

/// Activations: channels-last when the output (allocated in the layout the input prefers)
/// prefers it (Note [Channels-last layout]).
bool use_channels_last(const Tensor& out) { return prefers_channels_last(out) || nchw_layout() == Layout::Nhwc; }

memory::dims dims_of(IntArrayRef v) { return memory::dims(v.begin(), v.end()); }

Tag channels_last_tag(int64_t spatial) {
  return spatial == 1 ? Tag::nwc : spatial == 2 ? Tag::nhwc : Tag::ndhwc;
}

/// The descriptor a primitive is created with for an activation of these sizes.
memory::desc activation_want(IntArrayRef sizes, ScalarType t, bool channels_last) {
  const int64_t nd = static_cast<int64_t>(sizes.size()) - 2;
  const Tag plain = nd == 1 ? Tag::ncw : nd == 2 ? Tag::nchw : Tag::ncdhw;
  return memory::desc(dims_of(sizes), dn::to_dnnl(t),
                      channels_last ? channels_last_tag(nd) : nchw_layout() == Layout::Plain ? plain : Tag::any);
}

/// The weight as oneDNN indexes it, {[G,] OC/G, IC/G, k...} where OC and IC are the primitive's
/// output and input channels, described over the libtensor tensor's strides.
/// Convolution weights are (OC, IC/G, k...); transposed ones (IC, OC/G, k...).
void weight_view(const Tensor& w, const ConvParams& p, memory::dims& d, memory::dims& s) {
  IntArrayRef sz = w.sizes(), st = w.strides();
  const int64_t g = p.groups;
  d.clear();
  s.clear();
  if (!p.transposed) {
    if (g > 1) {
      d = {g, sz[0] / g, sz[1]};
      s = {st[0] * (sz[0] / g), st[0], st[1]};
    } else {
      d = {sz[0], sz[1]};
      s = {st[0], st[1]};
    }
  } else {
    if (g > 1) {
      d = {g, sz[1], sz[0] / g};
      s = {st[0] * (sz[0] / g), st[1], st[0]};
    } else {
      d = {sz[1], sz[0]};
      s = {st[1], st[0]};
    }
  }
  for (size_t i = 2; i < sz.size(); ++i) {
    d.push_back(sz[i]);
    s.push_back(st[i]);
  }
}

memory::desc weight_user_md(const Tensor& w, const ConvParams& p) {
  memory::dims d, s;
  weight_view(w, p, d, s);
  // oneDNN rejects zero strides (expanded tensors); such weights are copied first by callers.
  return memory::desc(d, dn::to_dnnl(w.scalar_type()), s);
}

memory::desc weight_want(const Tensor& w, const ConvParams& p, ScalarType t) {
  memory::dims d, s;
  weight_view(w, p, d, s);
  return memory::desc(d, dn::to_dnnl(t), Tag::any);
}

/// oneDNN cannot describe zero or negative strides: copy such tensors.
Tensor describable(const Tensor& t) {
  if (!t.defined()) return t;
  for (int64_t i = 0; i < t.dim(); ++i)
    if (t.stride(i) <= 0 && t.size(i) > 1) return t.contiguous();
  return t;
}

/// True when memory described by `user` can be read as `want` without a reorder: same dims and
/// dtype, both plain, and equal strides wherever the size is not 1 (those are never stepped).
bool same_layout(const memory::desc& user, const memory::desc& want) {
  if (user == want) return true;
  const dnnl_memory_desc_t& u = user.data;
  const dnnl_memory_desc_t& w = want.data;
  if (u.ndims != w.ndims || u.data_type != w.data_type || u.format_kind != dnnl_blocked ||
      w.format_kind != dnnl_blocked || u.format_desc.blocking.inner_nblks != 0 ||
      w.format_desc.blocking.inner_nblks != 0 || u.offset0 != w.offset0 || w.extra.flags != 0)
    return false;
  for (int i = 0; i < u.ndims; ++i) {
    if (u.dims[i] != w.dims[i] || u.padded_dims[i] != w.padded_dims[i]) return false;
    if (u.dims[i] != 1 && u.format_desc.blocking.strides[i] != w.format_desc.blocking.strides[i]) return false;
  }
  return true;
}

/// The parameters in oneDNN's spelling (dilation 0 = dense).
struct DnnlParams {
  memory::dims stride, dilation, pad_l, pad_r;
  explicit DnnlParams(const ConvParams& p)
      : stride(dims_of(p.stride)), dilation(dims_of(p.dilation)), pad_l(dims_of(p.pad_l)), pad_r(dims_of(p.pad_r)) {
    for (auto& d : dilation) d -= 1;
  }
};

dn::Key make_key(const char* op, const ConvParams& p, std::initializer_list<const Tensor*> ts) {
  dn::Key k(op);
  for (const Tensor* t : ts) k.add(*t);
  k.add(p.stride).add(p.pad_l).add(p.pad_r).add(p.dilation);
  k.add(static_cast<int64_t>(p.transposed)).add(p.groups);
  return k;
}

/// Reads and writes of one primitive execution: inputs reordered into the primitive's layout,
/// outputs computed into a temporary and reordered back where layouts differ.
class Args {
 public:
  explicit Args(const dn::Key& key) : key_(key) {}

  /// Input argument `arg` with user layout `user` at `data`, as the primitive wants it (`want`).
  void input(int arg, const memory::desc& user, void* data, const memory::desc& want) {
    if (same_layout(user, want)) {
      args_.emplace(arg, memory(want, dn::engine(), data));
      return;
    }
    memory dst = scratch(want);
    run_reorder(arg, user, memory(user, dn::engine(), data), want, dst);
    args_.emplace(arg, dst);
  }
  /// Input argument `arg` already in the primitive's layout (shared with another primitive).
  void input(int arg, const memory& m) { args_.emplace(arg, m); }
  /// The memory passed for `arg` (after input()).
  const memory& get(int arg) const { return args_.at(arg); }
  /// Output argument `arg`: written in place when layouts agree, else reordered after run().
  void output(int arg, const memory::desc& user, void* data, const memory::desc& want) {
    if (same_layout(user, want)) {
      args_.emplace(arg, memory(want, dn::engine(), data));
      return;
    }
    memory tmp = scratch(want);
    args_.emplace(arg, tmp);
    pending_.push_back({arg, tmp, user, data});
  }
  void run(const dn::CachedPrimitive& prim) {
    dn::execute(prim, args_);
    for (Pending& o : pending_) run_reorder(o.arg + 1000, o.tmp.get_desc(), o.tmp, o.user, memory(o.user, dn::engine(), o.data));
  }

 private:
  struct Pending {
    int arg;
    memory tmp;
    memory::desc user;
    void* data;
  };
  memory scratch(const memory::desc& md) {
    Tensor buf = empty({static_cast<int64_t>(md.get_size())}, TensorOptions().dtype(kUInt8));
    keep_.push_back(buf);
    return memory(md, dn::engine(), buf.data_ptr());
  }
  /// A cached reorder: the convolution's key plus the argument fixes both descriptors.
  void run_reorder(int tag, const memory::desc& from_md, const memory& from, const memory::desc& to_md, const memory& to) {
    dn::Key k = key_;
    k.add(static_cast<int64_t>(tag));
    dn::CachedPrimitive r = dn::cached(k, [&] {
      dnnl::reorder::primitive_desc pd(dn::engine(), from_md, dn::engine(), to_md, dn::make_attr());
      return dn::CachedPrimitive{dnnl::reorder(pd), pd};
    });
    dn::execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }

  const dn::Key& key_;
  std::unordered_map<int, memory> args_;
  std::vector<Pending> pending_;
  std::vector<Tensor> keep_;
};

/// oneDNN's primitives for convolutions (Transposed = false) and deconvolutions.
template <bool Transposed> struct Prims;
template <> struct Prims<false> {
  using Fwd = dnnl::convolution_forward;
  using BwdData = dnnl::convolution_backward_data;
  using BwdWeights = dnnl::convolution_backward_weights;
  static constexpr dnnl::algorithm algo = dnnl::algorithm::convolution_direct;
};
template <> struct Prims<true> {
  using Fwd = dnnl::deconvolution_forward;
  using BwdData = dnnl::deconvolution_backward_data;
  using BwdWeights = dnnl::deconvolution_backward_weights;
  static constexpr dnnl::algorithm algo = dnnl::algorithm::deconvolution_direct;
};

/// The descriptors every primitive of one convolution is created with.
struct Descs {
  memory::desc src, wei, dst, bias;  // bias: zero descriptor when absent
  DnnlParams q;
};

template <bool T>
typename Prims<T>::Fwd::primitive_desc forward_pd(const Descs& d) {
  typename Prims<T>::Fwd::desc od(prop_kind::forward_training, Prims<T>::algo, d.src, d.wei, d.bias, d.dst,
                                  d.q.stride, d.q.dilation, d.q.pad_l, d.q.pad_r);
  return typename Prims<T>::Fwd::primitive_desc(od, dn::make_attr(), dn::engine());
}

template <bool T>
dn::CachedPrimitive make_forward(const Descs& d) {
  auto pd = forward_pd<T>(d);
  return dn::CachedPrimitive{typename Prims<T>::Fwd(pd), pd};
}

template <bool T>
dn::CachedPrimitive make_backward_data(const Descs& d) {
  typename Prims<T>::BwdData::desc od(Prims<T>::algo, d.src, d.wei, d.dst, d.q.stride, d.q.dilation, d.q.pad_l,
                                      d.q.pad_r);
  typename Prims<T>::BwdData::primitive_desc pd(od, dn::make_attr(), dn::engine(), forward_pd<T>(d));
  return dn::CachedPrimitive{typename Prims<T>::BwdData(pd), pd};
}

template <bool T>
dn::CachedPrimitive make_backward_weights(const Descs& d) {
  typename Prims<T>::BwdWeights::desc od(Prims<T>::algo, d.src, d.wei, d.bias, d.dst, d.q.stride, d.q.dilation,
                                         d.q.pad_l, d.q.pad_r);
  typename Prims<T>::BwdWeights::primitive_desc pd(od, dn::make_attr(), dn::engine(), forward_pd<T>(d));
  return dn::CachedPrimitive{typename Prims<T>::BwdWeights(pd), pd};
}

}  // namespace

void onednn_convolution(const Tensor& input_, const Tensor& weight_, const Tensor& bias_, const ConvParams& p,
                        const Tensor& out) {
  const Tensor input = describable(input_), weight = describable(weight_), bias = describable(bias_);
  const ScalarType t = input.scalar_type();
  const bool cl = use_channels_last(out);
  const Descs d{activation_want(input.sizes(), t, cl), weight_want(weight, p, t), activation_want(out.sizes(), t, cl),
                bias.defined() ? dn::plain_md(bias) : memory::desc(), DnnlParams(p)};
  const dn::Key key = make_key("convolution", p, {&input, &weight, &bias, &out});
  const dn::CachedPrimitive prim =
      dn::cached(key, [&] { return p.transposed ? make_forward<true>(d) : make_forward<false>(d); });
  Args a(key);
  a.input(DNNL_ARG_SRC, dn::plain_md(input), input.data_ptr(), prim.pd.src_desc(0));
  a.input(DNNL_ARG_WEIGHTS, weight_user_md(weight, p), weight.data_ptr(), prim.pd.weights_desc(0));
  if (bias.defined()) a.input(DNNL_ARG_BIAS, d.bias, bias.data_ptr(), prim.pd.weights_desc(1));
  a.output(DNNL_ARG_DST, dn::plain_md(out), out.data_ptr(), prim.pd.dst_desc(0));
  a.run(prim);
}

void onednn_convolution_backward(const Tensor& grad_, const Tensor& input_, const Tensor& weight_,
                                 const ConvParams& p, const Tensor& grad_input, const Tensor& grad_weight,
                                 const Tensor& grad_bias) {
  const Tensor grad = describable(grad_), input = describable(input_), weight = describable(weight_);
  const ScalarType t = input.scalar_type();
  const bool cl = use_channels_last(grad_input.defined() ? grad_input : input);
  Descs d{activation_want(input.sizes(), t, cl), weight_want(weight, p, t), activation_want(grad.sizes(), t, cl),
          memory::desc(), DnnlParams(p)};

  // grad in the layout of the backward-data primitive: the backward-weights one usually wants
  // the same, and then reads it instead of reordering grad a second time.
  std::unique_ptr<Args> data_args;
  const dn::Key data_key = make_key("convolution_backward_data", p, {&grad, &weight, &grad_input});
  if (grad_input.defined()) {
    const dn::CachedPrimitive prim = dn::cached(
        data_key, [&] { return p.transposed ? make_backward_data<true>(d) : make_backward_data<false>(d); });
    data_args = std::make_unique<Args>(data_key);
    Args& a = *data_args;
    a.input(DNNL_ARG_DIFF_DST, dn::plain_md(grad), grad.data_ptr(), prim.pd.diff_dst_desc(0));
    a.input(DNNL_ARG_WEIGHTS, weight_user_md(weight, p), weight.data_ptr(), prim.pd.weights_desc(0));
    a.output(DNNL_ARG_DIFF_SRC, dn::plain_md(grad_input), grad_input.data_ptr(), prim.pd.diff_src_desc(0));
    a.run(prim);
  }

  if (grad_weight.defined()) {
    // The bias gradient comes with the weight gradient at no extra pass over grad.
    if (grad_bias.defined()) d.bias = dn::plain_md(grad_bias);
    const dn::Key key = make_key("convolution_backward_weights", p, {&grad, &input, &grad_weight, &grad_bias});
    const dn::CachedPrimitive prim = dn::cached(
        key, [&] { return p.transposed ? make_backward_weights<true>(d) : make_backward_weights<false>(d); });
    Args a(key);
    a.input(DNNL_ARG_SRC, dn::plain_md(input), input.data_ptr(), prim.pd.src_desc(0));
    const memory::desc want = prim.pd.diff_dst_desc(0);
    if (data_args && data_args->get(DNNL_ARG_DIFF_DST).get_desc() == want)
      a.input(DNNL_ARG_DIFF_DST, data_args->get(DNNL_ARG_DIFF_DST));
    else
      a.input(DNNL_ARG_DIFF_DST, dn::plain_md(grad), grad.data_ptr(), want);
    a.output(DNNL_ARG_DIFF_WEIGHTS, weight_user_md(grad_weight, p), grad_weight.data_ptr(),
             prim.pd.diff_weights_desc(0));
    if (grad_bias.defined()) a.output(DNNL_ARG_DIFF_BIAS, d.bias, grad_bias.data_ptr(), prim.pd.diff_weights_desc(1));
    a.run(prim);
  } else if (grad_bias.defined()) {
    DimVector dims{0};
    for (int64_t i = 2; i < grad.dim(); ++i) dims.push_back(i);
    Tensor(grad_bias).copy_(grad.sum(dims));
  }
}

}  // namespace tensor::cpu
