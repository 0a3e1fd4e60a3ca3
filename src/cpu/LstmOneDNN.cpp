#include "src/cpu/LstmOneDNN.h"

#include <cstdlib>
#include <cstring>

#include "src/cpu/OneDNN.h"

namespace tensor::cpu {

namespace dn = onednn;

// Note [LSTM inference on oneDNN]
// Without recording, the fused layer's loop (Note [Fused recurrent layers]) is a [B, H] x
// [H, 4H] product per step through the generic matmul plus one gate kernel: at T 64, batch 32,
// 256 -> 256 it ran 14 ms where torch 2.15 (which sends CPU LSTMs to oneDNN, "mkldnn_rnn")
// ran 11.5 ms. oneDNN's LSTM primitive packs both weight matrices once per call into its GEMM
// layout, projects every step's input in one GEMM and fuses the gates into the step's
// product, so an LSTM layer that records nothing runs on it. Its gate order (i, f, c~, o) is
// PyTorch's (i, f, g, o), and PyTorch's [4H, I] weights are oneDNN's ldgoi layout, so only the
// primitive's own reorder to its packed format touches them. It adds one bias (b_ih + b_hh) and
// reads the steps right to left for the reverse direction, with outputs at their own time
// positions, as the fused layer does. Results are float32 GEMM results in another summation
// order: within rounding of the fused path, not bit-identical (tests compare both to float64).
// Training, float64, packed sequences and projections keep the fused layer, whose backward
// needs the gate activations this primitive (forward_inference) does not keep.

namespace {
thread_local int64_t t_count = 0;

}  // namespace

bool lstm_inference_onednn_applies(const Tensor& x, const Tensor& w_ih) {
  static const bool on = [] {
    const char* e = std::getenv("TENSOR_ONEDNN_LSTM");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on && x.scalar_type() == kFloat32 && w_ih.scalar_type() == kFloat32 && dn::supports(kFloat32);
}

void lstm_inference_onednn(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                           const Tensor& w_hh, const Tensor& bias, bool reverse, const Tensor& y, const Tensor& h_n,
                           const Tensor& c_n) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const int64_t T = x.size(0), B = x.size(1), I = x.size(2), H = w_hh.size(1);
  // Dense operands: oneDNN's RNN takes its plain formats (tnc, ldnc, ldgoi) only.
  const Tensor wi = w_ih.contiguous(), wh = w_hh.contiguous();
  const Tensor b = bias.defined() ? bias.contiguous() : zeros({4 * H}, x.options());
  const Tensor xs = x.contiguous(), hs = h0.contiguous(), cs = c0.contiguous();

  const dnnl::memory::desc src_md({T, B, I}, dt::f32, tag::tnc);
  const dnnl::memory::desc h0_md({1, 1, B, H}, dt::f32, tag::ldnc);
  const dnnl::memory::desc c0_md({1, 1, B, H}, dt::f32, tag::ldnc);
  const dnnl::memory::desc wi_user({1, 1, I, 4, H}, dt::f32, tag::ldgoi);
  const dnnl::memory::desc wh_user({1, 1, H, 4, H}, dt::f32, tag::ldgoi);
  const dnnl::memory::desc wi_any({1, 1, I, 4, H}, dt::f32, tag::any);
  const dnnl::memory::desc wh_any({1, 1, H, 4, H}, dt::f32, tag::any);
  const dnnl::memory::desc b_md({1, 1, 4, H}, dt::f32, tag::ldgo);
  const dnnl::memory::desc y_md({T, B, H}, dt::f32, tag::tnc);
  const dnnl::memory::desc hn_md({1, 1, B, H}, dt::f32, tag::ldnc);
  const dnnl::memory::desc cn_md({1, 1, B, H}, dt::f32, tag::ldnc);
  const auto dir = reverse ? dnnl::rnn_direction::unidirectional_right2left
                           : dnnl::rnn_direction::unidirectional_left2right;

  dn::Key key("lstm_inference");
  key.add(T).add(B).add(I).add(H).add(static_cast<int64_t>(reverse));
  dn::CachedPrimitive p = dn::cached(key, [&] {
    dnnl::lstm_forward::desc d(dnnl::prop_kind::forward_inference, dir, src_md, h0_md, c0_md, wi_any, wh_any, b_md,
                               y_md, hn_md, cn_md);
    dnnl::lstm_forward::primitive_desc pd(d, dn::make_attr(), dn::engine());
    return dn::CachedPrimitive{dnnl::lstm_forward(pd), pd};
  });
  const dnnl::lstm_forward::primitive_desc pd(const_cast<dnnl_primitive_desc_t>(p.pd.get()));

  // The weights into the primitive's packed layout, every call (they may change between calls),
  // into buffers that live until the LSTM has run.
  Tensor wi_buf, wh_buf;
  auto pack = [&](const Tensor& w, const dnnl::memory::desc& user, const dnnl::memory::desc& want, int64_t which,
                  Tensor& buf) {
    if (want == user) return dn::wrap(user, w);
    buf = empty({static_cast<int64_t>(want.get_size())}, TensorOptions().dtype(kUInt8));
    dnnl::memory to(want, dn::engine(), buf.data_ptr());
    dn::Key rkey = key;
    rkey.add(which);
    dn::CachedPrimitive r = dn::cached(rkey, [&] {
      dnnl::reorder::primitive_desc rpd(dn::engine(), user, dn::engine(), want, dn::make_attr());
      return dn::CachedPrimitive{dnnl::reorder(rpd), rpd};
    });
    dn::execute(r, {{DNNL_ARG_FROM, dn::wrap(user, w)}, {DNNL_ARG_TO, to}});
    return to;
  };
  dnnl::memory wi_mem = pack(wi, wi_user, pd.weights_layer_desc(), -2, wi_buf);
  dnnl::memory wh_mem = pack(wh, wh_user, pd.weights_iter_desc(), -3, wh_buf);

  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC_LAYER, dn::wrap(src_md, xs)},       {DNNL_ARG_SRC_ITER, dn::wrap(h0_md, hs)},
      {DNNL_ARG_SRC_ITER_C, dn::wrap(c0_md, cs)},       {DNNL_ARG_WEIGHTS_LAYER, wi_mem},
      {DNNL_ARG_WEIGHTS_ITER, wh_mem},                  {DNNL_ARG_BIAS, dn::wrap(b_md, b)},
      {DNNL_ARG_DST_LAYER, dn::wrap(y_md, y)},          {DNNL_ARG_DST_ITER, dn::wrap(hn_md, h_n)},
      {DNNL_ARG_DST_ITER_C, dn::wrap(cn_md, c_n)}};
  dn::execute(p, std::move(args));
  ++t_count;
}

int64_t lstm_inference_onednn_count() { return t_count; }

}  // namespace tensor::cpu
