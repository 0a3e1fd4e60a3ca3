// nn::quantized::dynamic::LSTM (tensor/nn/quantized.h): PyTorch's dynamically quantized LSTM on
// the int8 dynamic linear of src/ops/QuantizedLinear.cpp and the fused LSTM step of
// kernels/cpu/RnnKernels.cpp.
//
// Note [Dynamic quantized LSTM]
// What is quantized when:
//   - once, at from_float / set_weight_bias: each layer and direction's weight_ih [4H, in] and
//     weight_hh [4H, H] become qint8 (per-tensor or per-channel along the gate rows, as the
//     QConfig's weight observer says) and are packed for oneDNN (quantized::linear_prepack, with
//     bias_ih and bias_hh, float32, beside them). The packs are a cache of the buffers, redone
//     when a buffer's version moves (Note [Quantized module state]).
//   - per call of quantized::linear_dynamic: its float32 input, with one scale and zero point from
//     that input's min and max (Note [Dynamic quantization range]).
// A layer and direction makes T + 1 such calls, not 2T:
//   gx = linear_dynamic(x [T*N, in], W_ih, b_ih)             one call for every step, since x is
//                                                            known before the recurrence starts;
//   per step t: gh = linear_dynamic(h_{t-1} [N, H], W_hh, b_hh)   h is known only after step t-1;
//               (h_t, c_t) = the float32 LSTM step on gx[t] + gh (cpu::rnn_forward_step).
// Batching the input projection turns T skinny [N, in] x [in, 4H] products into one GEMM with T
// times the rows (better use of the int8 kernel, one quantization pass, one primitive call), and
// it is what PyTorch's CPU quantized_lstm does (FullLayer pre-computes linear_ih over the whole
// sequence). The consequence, as in PyTorch: a layer's input is quantized with one range for the
// whole sequence, while each h_{t-1} gets its own range. The gate nonlinearities and the cell
// state stay float32 (c is never quantized). Layers above the first take the previous layer's
// float32 output (both directions concatenated) as their x.
#include <ostream>
#include <string>
#include <utility>

#include "kernels/cpu/RnnKernels.h"
#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/functions.h"
#include "tensor/nn/quantized.h"
#include "tensor/nn/rnn.h"
#include "tensor/ops.h"
#include "tensor/quantization.h"

namespace tensor::nn::quantized::dynamic {
namespace q = ::tensor::quantized;
using ::tensor::detail::shape_str;

namespace {
constexpr const char* kName = "nn::quantized::dynamic::LSTM";

std::string describe(const Tensor& t) { return t.defined() ? t.describe() : std::string("an undefined tensor"); }

// A cell's buffers, in the order of LSTMImpl::Cell::versions.
constexpr const char* kBufferNames[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};

// Names of one cell's buffers, as the float LSTM's parameters: weight_ih_l0_reverse, ...
std::string buffer_name(const char* what, const std::string& suffix) { return std::string(what) + "_" + suffix; }
}  // namespace

LSTMImpl::LSTMImpl(int64_t input_size_, int64_t hidden_size_, int64_t num_layers_, bool bias_, bool batch_first_,
                   double dropout_, bool bidirectional_)
    : input_size(input_size_),
      hidden_size(hidden_size_),
      num_layers(num_layers_),
      bias(bias_),
      batch_first(batch_first_),
      dropout(dropout_),
      bidirectional(bidirectional_) {
  TENSOR_CHECK(input_size > 0 && hidden_size > 0, "{}: input_size ({}) and hidden_size ({}) must be positive", kName,
               input_size, hidden_size);
  TENSOR_CHECK(num_layers > 0, "{}: num_layers must be positive, got {}", kName, num_layers);
  TENSOR_CHECK(dropout >= 0 && dropout <= 1, "{}: dropout must be in [0, 1], got {}", kName, dropout);
  const int64_t dirs = bidirectional ? 2 : 1, G = 4 * hidden_size;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    for (int64_t d = 0; d < dirs; ++d) {
      cells_.push_back(Cell{"l" + std::to_string(layer) + (d == 1 ? "_reverse" : ""), nullptr, nullptr, {}});
      const int64_t in = layer == 0 ? input_size : hidden_size * dirs;
      // libtorch's initial weights: qint8 zeros with scale 1, zero biases.
      auto zq = [](int64_t r, int64_t c) { return quantize_per_tensor(tensor::zeros({r, c}), 1.0, 0, kQInt8); };
      const std::optional<Tensor> zb = bias ? std::optional<Tensor>(tensor::zeros({G})) : std::nullopt;
      set_weight_bias(layer, d == 1, zq(G, in), zq(G, hidden_size), zb, zb ? std::optional<Tensor>(zb->clone()) : zb);
    }
  }
}

LSTMImpl::LSTMImpl(const LSTMOptions& o)
    : LSTMImpl(o.input_size(), o.hidden_size(), o.num_layers(), o.bias(), o.batch_first(), o.dropout(),
               o.bidirectional()) {
  TENSOR_CHECK(o.proj_size() == 0, "{}: proj_size is not supported (got proj_size = {}), as in PyTorch", kName,
               o.proj_size());
}

void LSTMImpl::set_weight_bias(int64_t layer, bool reverse, const Tensor& w_ih, const Tensor& w_hh,
                               const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  const int64_t dirs = bidirectional ? 2 : 1;
  TENSOR_CHECK(layer >= 0 && layer < num_layers && (!reverse || bidirectional),
               "{}::set_weight_bias: no layer {}{} in a module of {} layers{}", kName, layer,
               reverse ? " (reverse)" : "", num_layers, bidirectional ? ", bidirectional" : ", one direction");
  const int64_t G = 4 * hidden_size, in = layer == 0 ? input_size : hidden_size * dirs;
  TENSOR_CHECK(w_ih.defined() && w_ih.sizes() == IntArrayRef({G, in}),
               "{}::set_weight_bias: expected w_ih of shape [{}, {}] for layer {}, got {}", kName, G, in, layer,
               describe(w_ih));
  TENSOR_CHECK(w_hh.defined() && w_hh.sizes() == IntArrayRef({G, hidden_size}),
               "{}::set_weight_bias: expected w_hh of shape [{}, {}] for layer {}, got {}", kName, G, hidden_size,
               layer, describe(w_hh));
  const bool given = b_ih && b_ih->defined() && b_hh && b_hh->defined();
  const bool none = (!b_ih || !b_ih->defined()) && (!b_hh || !b_hh->defined());
  TENSOR_CHECK(bias ? given : none, "{}::set_weight_bias: the module has bias={}, so give {} b_ih and b_hh", kName,
               bias ? "true" : "false", bias ? "both" : "neither");
  Cell& cell = cells_[static_cast<size_t>(layer * dirs + (reverse ? 1 : 0))];
  // Pack first: linear_prepack checks the dtypes and zero points before any buffer changes.
  auto ih = q::linear_prepack(w_ih, b_ih);
  auto hh = q::linear_prepack(w_hh, b_hh);
  const std::string& s = cell.suffix;
  const Tensor values[4] = {w_ih, w_hh, bias ? *b_ih : Tensor(), bias ? *b_hh : Tensor()};
  for (int i = 0; i < (bias ? 4 : 2); ++i) {
    buffers_.insert_or_assign(buffer_name(kBufferNames[i], s), values[i]);
    cell.versions[i] = values[i]._version();  // the buffer shares the tensor's version counter
  }
  cell.ih = std::move(ih);
  cell.hh = std::move(hh);
}

LSTMImpl::Cell& LSTMImpl::packed_cell(size_t index) {
  Cell& cell = cells_[index];
  const std::string& s = cell.suffix;
  bool stale = false;
  for (int i = 0; i < (bias ? 4 : 2); ++i)
    stale = stale || buffers_[buffer_name(kBufferNames[i], s)]._version() != cell.versions[i];
  if (stale) {
    const int64_t dirs = bidirectional ? 2 : 1;
    auto opt = [&](const char* n) {
      return bias ? std::optional<Tensor>(buffers_[buffer_name(n, s)]) : std::optional<Tensor>();
    };
    set_weight_bias(static_cast<int64_t>(index) / dirs, index % 2 == 1 && bidirectional,
                    buffers_[buffer_name("weight_ih", s)], buffers_[buffer_name("weight_hh", s)], opt("bias_ih"),
                    opt("bias_hh"));
  }
  return cell;
}

std::shared_ptr<LSTMImpl> LSTMImpl::from_float(const ::tensor::nn::LSTMImpl& lstm,
                                               const ::tensor::quantization::QConfig& qconfig) {
  const LSTMOptions& o = lstm.options;
  TENSOR_CHECK(o.proj_size() == 0,
               "{}::from_float: the LSTM has proj_size = {}; the dynamic quantized LSTM has no projection (as in "
               "PyTorch)",
               kName, o.proj_size());
  TENSOR_CHECK(static_cast<bool>(qconfig.weight), "{}::from_float: the QConfig has no weight observer factory", kName);
  auto m = std::make_shared<LSTMImpl>(o);
  bool reduce_range = false;
  if (qconfig.activation) {
    std::shared_ptr<::tensor::quantization::ObserverBase> act = qconfig.activation();
    reduce_range = act && act->reduce_range();
  }
  m->reduce_range = reduce_range;
  const auto params = lstm.named_parameters(/*recurse=*/false);
  const int64_t dirs = o.bidirectional() ? 2 : 1;
  NoGradGuard no_grad;
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string s = "l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      auto weight = [&](const char* n) {
        const Tensor& w = params[buffer_name(n, s)];
        TENSOR_CHECK(w.is_cpu() && w.is_floating_point(),
                     "{}::from_float: the LSTM's {} is {}; the quantized LSTM takes float CPU weights (call "
                     "to(kCPU) first)",
                     kName, buffer_name(n, s), w.describe());
        return ::tensor::quantization::quantize_weight(qconfig, w.detach());
      };
      auto bias_of = [&](const char* n) {
        if (!o.bias()) return std::optional<Tensor>();
        return std::optional<Tensor>(params[buffer_name(n, s)].detach().to(kFloat32).contiguous().clone());
      };
      m->set_weight_bias(layer, d == 1, weight("weight_ih"), weight("weight_hh"), bias_of("bias_ih"),
                         bias_of("bias_hh"));
    }
  }
  m->train(lstm.is_training());
  return m;
}

std::shared_ptr<LSTMImpl> LSTMImpl::from_float(const ::tensor::nn::LSTMImpl& lstm) {
  return from_float(lstm, ::tensor::quantization::default_dynamic_qconfig());
}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  TENSOR_CHECK(input.defined() && !input.is_quantized() && input.dtype() == kFloat32 && input.is_cpu(),
               "{}: expected a float32 CPU input, got {}", kName, describe(input));
  TENSOR_CHECK((input.dim() == 2 || input.dim() == 3) && input.size(-1) == input_size,
               "{}: expected an input of shape [seq, batch, {}] ([batch, seq, {}] with batch_first, or unbatched "
               "[seq, {}]), got {}",
               kName, input_size, input_size, input_size, shape_str(input.sizes()));
  const bool unbatched = input.dim() == 2;
  const Tensor x = unbatched ? input.unsqueeze(1) : batch_first ? input.transpose(0, 1) : input;  // [T, N, I]
  const int64_t T = x.size(0), N = x.size(1), H = hidden_size, G = 4 * H;
  const int64_t dirs = bidirectional ? 2 : 1, LD = num_layers * dirs;
  Tensor h0, c0;
  if (hx_opt) std::tie(h0, c0) = *hx_opt;
  TENSOR_CHECK(h0.defined() == c0.defined(), "{}: give both h_0 and c_0 or neither", kName);
  auto state = [&](const Tensor& s, const char* what) {
    if (!s.defined()) return tensor::zeros({LD, N, H});
    const std::vector<int64_t> want = unbatched ? std::vector<int64_t>{LD, H} : std::vector<int64_t>{LD, N, H};
    TENSOR_CHECK(s.sizes() == IntArrayRef(want) && s.dtype() == kFloat32 && !s.is_quantized() && s.is_cpu(),
                 "{}: expected {} of shape {} (float32) for an input of shape {}, got {}", kName, what, shape_str(want),
                 shape_str(input.sizes()), s.describe());
    return unbatched ? s.unsqueeze(1) : s;
  };
  const Tensor h_init = state(h0, "h_0"), c_init = state(c0, "c_0");

  NoGradGuard no_grad;
  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = x;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t idx = layer * dirs + d;
      const Cell& cell = packed_cell(static_cast<size_t>(idx));
      // Note [Dynamic quantized LSTM]: every step's input projection in one dynamic linear.
      const Tensor gx =
          q::linear_dynamic(layer_input.reshape({T * N, layer_input.size(2)}), *cell.ih, reduce_range).contiguous();
      // The state the step updates in place: row-major copies.
      Tensor h = h_init.select(0, idx).clone();
      Tensor c = c_init.select(0, idx).clone();
      Tensor y = tensor::empty({T, N, H});
      for (int64_t k = 0; k < (N > 0 ? T : 0); ++k) {
        const int64_t t = d == 0 ? k : T - 1 - k;
        const Tensor gh = q::linear_dynamic(h, *cell.hh, reduce_range).contiguous();
        cpu::RnnForwardStep s;
        s.n = N;
        s.H = H;
        s.gx = gx.data_ptr<float>() + t * N * G;
        s.gh = gh.data_ptr();
        s.h = h.data_ptr();
        s.c = c.data_ptr();
        s.y = y.data_ptr<float>() + t * N * H;
        cpu::rnn_forward_step(kFloat32, cpu::RnnCell::LSTM, s);
      }
      outs.push_back(y);
      h_n.push_back(h);
      c_n.push_back(c);
    }
    layer_input = dirs == 1 ? outs[0] : tensor::cat(outs, 2);
    if (dropout > 0 && is_training() && layer + 1 < num_layers)
      layer_input = tensor::dropout(layer_input, dropout, true);
  }
  Tensor hn = tensor::stack(h_n, 0), cn = tensor::stack(c_n, 0);
  if (unbatched) return {layer_input.squeeze(1), {hn.squeeze(1), cn.squeeze(1)}};
  return {batch_first ? layer_input.transpose(0, 1) : layer_input, {hn, cn}};
}

void LSTMImpl::pretty_print(std::ostream& os) const {
  os << "DynamicQuantizedLSTM(" << input_size << ", " << hidden_size;
  if (num_layers != 1) os << ", num_layers=" << num_layers;
  if (!bias) os << ", bias=false";
  if (batch_first) os << ", batch_first=true";
  if (dropout != 0) os << ", dropout=" << dropout;
  if (bidirectional) os << ", bidirectional=true";
  os << ")";
}

}  // namespace tensor::nn::quantized::dynamic
