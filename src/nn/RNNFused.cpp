// The fused recurrent layer (src/nn/RNNFused.h): one autograd node per layer and direction, its
// matrix products on the library's mm/addmm (oneDNN) and its elementwise step work in one
// kernel per step (kernels/cpu/RnnKernels.cpp).
#include "src/nn/RNNFused.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/cpu/RnnKernels.h"
#include "src/cpu/LstmOneDNN.h"
#include "tensor/amp/autocast.h"
#include "tensor/autograd/Function.h"
#include "tensor/autograd/autograd.h"
#include "tensor/linalg.h"

namespace tensor::nn::detail {

// Note [Fused recurrent layers]
// Composed of public ops, an LSTM step is about fifteen recorded ops (chunk, adds, sigmoids,
// tanhs, products), each allocating its output and, in backward, running a node of its own;
// with small batches that bookkeeping, not the arithmetic, sets the time. The fused layer does,
// per layer and direction:
//   forward:  one GEMM projects every step's input at once ([rows, I] x [I, G*H], with the
//             biases); per step one GEMM for the hidden state and one kernel that applies
//             the gates and updates the state, saving the gate activations backward needs;
//   backward: per step one kernel turns the output's and the state's gradients into the gate
//             pre-activations' (dgx, and dgh for a GRU, whose n gate sees r * (W_hn h + b_hn))
//             and one GEMM carries the gradient to the previous state; then the weights' and
//             the input's gradients are single GEMMs over all steps at once.
// A packed sequence is the same loop with fewer rows per step: the state is a full [B, H]
// buffer of which a step updates only its first batch_sizes[t] rows, so a column that has
// stopped (forward) or not started yet (reverse) keeps its state, which is exactly the final
// state (Note [Packed recurrence]) and, in backward, the gradient that passes it by.
// The node's backward is not itself differentiable: under create_graph it recomputes the layer
// with the composite ops and differentiates that (as activation checkpointing does), so double
// backward gives the composite's result. Other devices, the half types, autocast and LSTM
// projections (proj_size) run the composite (src/nn/RNN.cpp), which stays as the reference.
// A float32 LSTM layer that records nothing, over whole batches, runs on oneDNN's LSTM
// primitive instead of this loop (Note [LSTM inference on oneDNN]); GRU and plain RNN layers
// do not (oneDNN's GRU orders and resets its gates differently, and they are already faster
// than the peers here).

using autograd::variable_list;

namespace {

thread_local bool t_fused_disabled = false;
thread_local int64_t t_fused_count = 0;

cpu::RnnCell cell_of(const RNNMode& mode) {
  switch (mode.kind()) {
    case RNNMode::LSTM:
      return cpu::RnnCell::LSTM;
    case RNNMode::GRU:
      return cpu::RnnCell::GRU;
    case RNNMode::RNN_TANH:
      return cpu::RnnCell::Tanh;
    case RNNMode::RNN_RELU:
      return cpu::RnnCell::Relu;
  }
  return cpu::RnnCell::Tanh;
}

RNNMode mode_of(cpu::RnnCell cell) {
  switch (cell) {
    case cpu::RnnCell::LSTM:
      return kLSTM;
    case cpu::RnnCell::GRU:
      return kGRU;
    case cpu::RnnCell::Relu:
      return kRNN_RELU;
    case cpu::RnnCell::Tanh:
      break;
  }
  return kRNN_TANH;
}

// Row r of a contiguous 2-d tensor with `width` columns (nullptr for an undefined tensor).
void* row(const Tensor& t, int64_t r, int64_t width) {
  if (!t.defined()) return nullptr;
  return static_cast<char*>(t.data_ptr()) + r * width * t.element_size();
}

// A contiguous copy of t that the caller may write.
Tensor own_contiguous(const Tensor& t) { return t.is_contiguous() ? t.clone() : t.contiguous(); }

// Per step (in time order): its first row in the [rows, .] buffers and its batch.
struct Steps {
  std::vector<int64_t> offset, batch;
  int64_t size() const { return static_cast<int64_t>(batch.size()); }
};
Steps steps_of(const std::vector<int64_t>& bs) {
  Steps s;
  s.batch = bs;
  int64_t off = 0;
  for (int64_t b : bs) {
    s.offset.push_back(off);
    off += b;
  }
  return s;
}

// The same recurrence in public differentiable ops, with the fused layer's full-state
// formulation (Note [Fused recurrent layers]): the differentiable backward under create_graph.
variable_list composite_layer(const RNNMode& mode, const Tensor& x, const Steps& st, bool reverse, const Tensor& h0,
                              const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                              const Tensor& b_hh) {
  const bool lstm = mode == kLSTM;
  const int64_t B = h0.size(0);
  Tensor xw = linear(x.reshape({-1, x.size(-1)}), w_ih, b_ih);
  Tensor h = h0, c = c0;
  std::vector<Tensor> outs(static_cast<size_t>(st.size()));
  for (int64_t k = 0; k < st.size(); ++k) {
    const int64_t t = reverse ? st.size() - 1 - k : k;
    const int64_t n = st.batch[static_cast<size_t>(t)];
    Tensor hs = h.narrow(0, 0, n), cs = lstm ? c.narrow(0, 0, n) : Tensor();
    Tensor gh = linear(hs, w_hh, b_hh);
    rnn_cell_step(mode, xw.narrow(0, st.offset[static_cast<size_t>(t)], n), gh, Tensor(), hs, cs);
    outs[static_cast<size_t>(t)] = hs;
    h = n < B ? tensor::cat({hs, h.narrow(0, n, B - n)}, 0) : hs;
    if (lstm) c = n < B ? tensor::cat({cs, c.narrow(0, n, B - n)}, 0) : cs;
  }
  variable_list r = {tensor::cat(outs, 0), h};
  if (lstm) r.push_back(c);
  return r;
}

struct FusedRNNLayer : autograd::Function<FusedRNNLayer> {
  // Tensor arguments, in this order, are what backward returns gradients for.
  enum { kX, kH0, kC0, kWih, kWhh, kBih, kBhh, kNumTensors };

  static variable_list forward(autograd::AutogradContext* ctx, const Tensor& x, const Tensor& h0, const Tensor& c0,
                               const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh,
                               int64_t cell_kind, bool reverse, const std::vector<int64_t>& bs, bool save) {
    const auto cell = static_cast<cpu::RnnCell>(cell_kind);
    const bool lstm = cell == cpu::RnnCell::LSTM, gru = cell == cpu::RnnCell::GRU;
    const int64_t H = w_hh.size(1), G = w_ih.size(0);
    const Steps st = steps_of(bs);
    const ScalarType dtype = x.scalar_type();
    Tensor X = x.reshape({-1, x.size(-1)});
    const int64_t rows = X.size(0);
    // Every step's input projection in one GEMM. Only the GRU's n gate needs b_hh apart (it is
    // scaled by r); the other cells add both biases once here, so a step's GEMM has no bias.
    const bool fold = !gru && b_hh.defined();
    const Tensor b_x = fold ? (b_ih.defined() ? b_ih + b_hh : b_hh) : b_ih;
    const Tensor b_h = fold ? Tensor() : b_hh;
    // Recording nothing, a float32 LSTM over whole batches runs on oneDNN's LSTM primitive
    // (Note [LSTM inference on oneDNN]).
    if (!save && lstm && cpu::lstm_inference_onednn_applies(x, w_ih) &&
        std::all_of(bs.begin(), bs.end(), [&](int64_t b) { return b == h0.size(0); })) {
      const int64_t T = st.size(), B = h0.size(0);
      Tensor y = empty({rows, H}, x.options()), h_n = empty({B, H}, x.options()), c_n = empty({B, H}, x.options());
      cpu::lstm_inference_onednn(x.dim() == 3 ? x : X.view({T, B, X.size(1)}), h0, c0, w_ih, w_hh, b_x, reverse, y.view({T, B, H}), h_n,
                                 c_n);
      return {y, h_n, c_n};
    }
    Tensor xw = linear(X, w_ih, b_x).contiguous();
    Tensor h = own_contiguous(h0), c = lstm ? own_contiguous(c0) : Tensor();
    Tensor y = empty({rows, H}, x.options());
    Tensor act, hprev, cprev, aux;
    if (save) {
      act = empty({rows, G}, x.options());
      hprev = empty({rows, H}, x.options());
      if (lstm) cprev = empty({rows, H}, x.options());
      if (lstm || gru) aux = empty({rows, H}, x.options());
    }
    const Tensor w_hh_t = w_hh.t();
    for (int64_t k = 0; k < st.size(); ++k) {
      const auto t = static_cast<size_t>(reverse ? st.size() - 1 - k : k);
      const int64_t n = st.batch[t], off = st.offset[t];
      Tensor hs = h.narrow(0, 0, n);
      Tensor gh = (b_h.defined() ? addmm(b_h, hs, w_hh_t) : mm(hs, w_hh_t)).contiguous();
      cpu::RnnForwardStep s;
      s.n = n;
      s.H = H;
      s.gx = row(xw, off, G);
      s.gh = gh.data_ptr();
      s.h = h.data_ptr();
      s.c = lstm ? c.data_ptr() : nullptr;
      s.y = row(y, off, H);
      s.act = row(act, off, G);
      s.hprev = row(hprev, off, H);
      s.cprev = row(cprev, off, H);
      s.aux = row(aux, off, H);
      cpu::rnn_forward_step(dtype, cell, s);
    }
    if (save) {
      ctx->save_for_backward({x, h0, c0, w_ih, w_hh, b_ih, b_hh, act, hprev, cprev, aux});
      ctx->saved_data["cell"] = cell_kind;
      ctx->saved_data["reverse"] = reverse;
      ctx->saved_data["bs"] = bs;
      ctx->set_materialize_grads(false);
    }
    variable_list out = {y, h};
    if (lstm) out.push_back(c);
    return out;
  }

  static variable_list backward(autograd::AutogradContext* ctx, variable_list grads) {
    variable_list sv = ctx->get_saved_variables();
    const Tensor &x = sv[0], &h0 = sv[1], &c0 = sv[2], &w_ih = sv[3], &w_hh = sv[4], &b_ih = sv[5], &b_hh = sv[6];
    const auto cell = static_cast<cpu::RnnCell>(ctx->saved_data["cell"].to_int());
    const bool reverse = ctx->saved_data["reverse"].to_bool();
    const Steps st = steps_of(ctx->saved_data["bs"].to_int_list());
    variable_list result(kNumTensors + 4);  // none for the non-tensor arguments
    if (autograd::GradMode::is_enabled()) {
      // create_graph: differentiate the composite recomputation (Note [Fused recurrent layers]).
      variable_list outs = composite_layer(mode_of(cell), x, st, reverse, h0, c0, w_ih, w_hh, b_ih, b_hh);
      variable_list roots, seeds, wrt;
      std::vector<int> where;
      for (size_t i = 0; i < outs.size() && i < grads.size(); ++i)
        if (grads[i].defined() && outs[i].requires_grad()) {
          roots.push_back(outs[i]);
          seeds.push_back(grads[i]);
        }
      for (int i = 0; i < kNumTensors; ++i)
        if (ctx->needs_input_grad(static_cast<size_t>(i)) && sv[static_cast<size_t>(i)].defined()) {
          wrt.push_back(sv[static_cast<size_t>(i)]);
          where.push_back(i);
        }
      if (roots.empty() || wrt.empty()) return result;
      variable_list g = autograd::grad(roots, wrt, seeds, /*retain_graph=*/true, /*create_graph=*/true,
                                       /*allow_unused=*/true);
      for (size_t k = 0; k < where.size(); ++k) result[static_cast<size_t>(where[k])] = g[k];
      return result;
    }
    const Tensor &act = sv[7], &hprev = sv[8], &cprev = sv[9], &aux = sv[10];
    const bool lstm = cell == cpu::RnnCell::LSTM, gru = cell == cpu::RnnCell::GRU;
    const int64_t B = h0.size(0), H = w_hh.size(1), G = w_ih.size(0);
    const int64_t rows = act.size(0);
    const ScalarType dtype = x.scalar_type();
    auto grad_or_zeros = [&](size_t i) {
      return i < grads.size() && grads[i].defined() ? own_contiguous(grads[i]) : zeros({B, H}, x.options());
    };
    const Tensor dy = grads[0].defined() ? grads[0].contiguous() : Tensor();
    Tensor dh = grad_or_zeros(1), dc = lstm ? grad_or_zeros(2) : Tensor();
    Tensor dgx = empty({rows, G}, x.options());
    Tensor dgh = gru ? empty({rows, G}, x.options()) : dgx;
    // Backward visits the steps in the opposite order of forward.
    for (int64_t k = st.size() - 1; k >= 0; --k) {
      const auto t = static_cast<size_t>(reverse ? st.size() - 1 - k : k);
      const int64_t n = st.batch[t], off = st.offset[t];
      cpu::RnnBackwardStep s;
      s.n = n;
      s.H = H;
      s.dy = row(dy, off, H);
      s.dh = dh.data_ptr();
      s.dc = lstm ? dc.data_ptr() : nullptr;
      s.act = row(act, off, G);
      s.hprev = row(hprev, off, H);
      s.cprev = row(cprev, off, H);
      s.aux = row(aux, off, H);
      s.dgx = row(dgx, off, G);
      s.dgh = gru ? row(dgh, off, G) : nullptr;
      cpu::rnn_backward_step(dtype, cell, s);
      dh.narrow(0, 0, n).add_(mm(dgh.narrow(0, off, n), w_hh));
    }
    // The weights' and the input's gradients: one GEMM each over every step.
    auto needs = [&](int i) { return ctx->needs_input_grad(static_cast<size_t>(i)); };
    if (needs(kX)) result[kX] = mm(dgx, w_ih).view(x.sizes());
    if (needs(kH0)) result[kH0] = dh;
    if (needs(kC0) && lstm) result[kC0] = dc;
    if (needs(kWih)) result[kWih] = mm(dgx.t(), x.reshape({rows, x.size(-1)}));
    if (needs(kWhh)) result[kWhh] = mm(dgh.t(), hprev);
    if (needs(kBih) && b_ih.defined()) result[kBih] = dgx.sum(0);
    if (needs(kBhh) && b_hh.defined()) result[kBhh] = dgh.sum(0);
    return result;
  }
};

}  // namespace

bool fused_rnn_applies(const Tensor& input, const Tensor& h0, const Tensor& c0, const std::vector<Tensor>& weights,
                       bool has_projection) {
  if (t_fused_disabled || has_projection) return false;
  if (!input.device().is_cpu() || autocast::is_autocast_enabled(DeviceType::CPU)) return false;
  const ScalarType dt = input.scalar_type();
  if (dt != kFloat32 && dt != kFloat64) return false;
  if (input.numel() == 0 || h0.numel() == 0) return false;
  auto same = [&](const Tensor& t) { return !t.defined() || (t.scalar_type() == dt && t.device().is_cpu()); };
  if (!same(h0) || !same(c0)) return false;
  for (const Tensor& w : weights)
    if (!same(w)) return false;
  return true;
}

std::vector<Tensor> fused_rnn_layer(const RNNMode& mode, const Tensor& input, const std::vector<int64_t>& batch_sizes,
                                    bool reverse, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                                    const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  const std::vector<int64_t> bs =
      batch_sizes.empty() ? std::vector<int64_t>(static_cast<size_t>(input.size(0)), h0.size(0)) : batch_sizes;
  bool save = false;
  if (autograd::GradMode::is_enabled())
    for (const Tensor* t : {&input, &h0, &c0, &w_ih, &w_hh, &b_ih, &b_hh})
      save = save || (t->defined() && t->requires_grad());
  const Tensor c = mode == kLSTM ? c0 : Tensor();
  ++t_fused_count;
  return FusedRNNLayer::apply(input, h0, c, w_ih, w_hh, b_ih, b_hh, static_cast<int64_t>(cell_of(mode)), reverse, bs,
                              save);
}

int64_t fused_rnn_layer_count() { return t_fused_count; }

FusedRNNGuard::FusedRNNGuard(bool disable) : prev_(t_fused_disabled) { t_fused_disabled = disable; }
FusedRNNGuard::~FusedRNNGuard() { t_fused_disabled = prev_; }

}  // namespace tensor::nn::detail
