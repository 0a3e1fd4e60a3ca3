// Recurrent layers and cells (include/tensor/nn/rnn.h). Each layer and direction projects the
// whole input sequence at once (one matmul over all steps), then runs the recurrence step by
// step: on the CPU in float32/float64 as one fused node (src/nn/RNNFused.cpp, Note [Fused
// recurrent layers]), elsewhere composed of public differentiable ops (the reference).
#include "tensor/nn/rnn.h"

#include <cmath>
#include <ostream>
#include <utility>

#include "src/core/Check.h"
#include "src/nn/RNNFused.h"
#include "tensor/amp/autocast.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/functional.h"
#include "tensor/nn/functions.h"
#include "tensor/nn/init.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace F = functional;

namespace {

int64_t gate_count(RNNMode mode) {
  switch (mode.kind()) {
    case RNNMode::LSTM: return 4;
    case RNNMode::GRU: return 3;
    default: return 1;
  }
}

std::string shape_of(const Tensor& t) { return ::tensor::detail::shape_str(t.sizes()); }

detail::RNNOptionsBase base_of(const RNNOptions& o) {
  return detail::RNNOptionsBase(o.nonlinearity() == kTanh ? RNNMode(kRNN_TANH) : RNNMode(kRNN_RELU), o.input_size(),
                                o.hidden_size())
      .num_layers(o.num_layers())
      .bias(o.bias())
      .batch_first(o.batch_first())
      .dropout(o.dropout())
      .bidirectional(o.bidirectional());
}

detail::RNNOptionsBase base_of(const LSTMOptions& o) {
  return detail::RNNOptionsBase(kLSTM, o.input_size(), o.hidden_size())
      .num_layers(o.num_layers())
      .bias(o.bias())
      .batch_first(o.batch_first())
      .dropout(o.dropout())
      .bidirectional(o.bidirectional())
      .proj_size(o.proj_size());
}

detail::RNNOptionsBase base_of(const GRUOptions& o) {
  return detail::RNNOptionsBase(kGRU, o.input_size(), o.hidden_size())
      .num_layers(o.num_layers())
      .bias(o.bias())
      .batch_first(o.batch_first())
      .dropout(o.dropout())
      .bidirectional(o.bidirectional());
}

}  // namespace

// ---- RNNImplBase ----

namespace detail {

// Declared in src/nn/RNNFused.h, which the fused layer's differentiable backward shares.
void rnn_cell_step(const RNNMode& mode, const Tensor& gx, const Tensor& gh, const Tensor& w_hr, Tensor& h, Tensor& c) {
  switch (mode.kind()) {
    case RNNMode::RNN_TANH: h = tensor::tanh(gx + gh); break;
    case RNNMode::RNN_RELU: h = tensor::relu(gx + gh); break;
    case RNNMode::LSTM: {
      auto g = (gx + gh).chunk(4, 1);
      c = tensor::sigmoid(g[1]) * c + tensor::sigmoid(g[0]) * tensor::tanh(g[2]);
      h = tensor::sigmoid(g[3]) * tensor::tanh(c);
      if (w_hr.defined()) h = F::linear(h, w_hr);
      break;
    }
    case RNNMode::GRU: {
      auto a = gx.chunk(3, 1), b = gh.chunk(3, 1);
      Tensor r = tensor::sigmoid(a[0] + b[0]);
      Tensor z = tensor::sigmoid(a[1] + b[1]);
      Tensor n = tensor::tanh(a[2] + r * b[2]);
      h = (1 - z) * n + z * h;
      break;
    }
  }
}

RNNImplBase::RNNImplBase(const RNNOptionsBase& options_, std::string name)
    : Module(std::move(name)), options_base(options_) {
  const char* kind = kind_name();
  const auto& o = options_base;
  TENSOR_CHECK(o.input_size() > 0 && o.hidden_size() > 0, "{}: input_size ({}) and hidden_size ({}) must be positive",
               kind, o.input_size(), o.hidden_size());
  TENSOR_CHECK(o.num_layers() > 0, "{}: num_layers must be positive, got {}", kind, o.num_layers());
  TENSOR_CHECK(o.dropout() >= 0 && o.dropout() <= 1,
               "{}: dropout should be a number in range [0, 1] representing the probability of an element being "
               "zeroed, got {}",
               kind, o.dropout());
  TENSOR_CHECK(o.proj_size() >= 0, "{}: proj_size should be a non-negative integer, got {}", kind, o.proj_size());
  if (o.proj_size() > 0) {
    TENSOR_CHECK(o.mode() == kLSTM, "{}: proj_size argument is only supported for LSTM, not RNN or GRU", kind);
    TENSOR_CHECK(o.proj_size() < o.hidden_size(), "{}: proj_size ({}) has to be smaller than hidden_size ({})", kind,
                 o.proj_size(), o.hidden_size());
  }
  reset();
}

const char* RNNImplBase::kind_name() const {
  switch (options_base.mode().kind()) {
    case RNNMode::LSTM: return "LSTM";
    case RNNMode::GRU: return "GRU";
    default: return "RNN";
  }
}

void RNNImplBase::reset() {
  const auto& o = options_base;
  const int64_t gates = gate_count(o.mode()) * o.hidden_size();
  const int64_t real_hidden = o.proj_size() > 0 ? o.proj_size() : o.hidden_size();
  const int64_t dirs = o.bidirectional() ? 2 : 1;
  for (const auto& name : flat_weights_names_)
    if (parameters_.contains(name)) parameters_.erase(name);
  flat_weights_names_.clear();
  all_weights_.clear();
  flat_weights_.clear();
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t in = layer == 0 ? o.input_size() : real_hidden * dirs;
      const std::string suffix = std::to_string(layer) + (d == 1 ? "_reverse" : "");
      std::vector<std::pair<std::string, std::vector<int64_t>>> params = {
          {"weight_ih_l" + suffix, {gates, in}}, {"weight_hh_l" + suffix, {gates, real_hidden}}};
      if (o.bias()) {
        params.push_back({"bias_ih_l" + suffix, {gates}});
        params.push_back({"bias_hh_l" + suffix, {gates}});
      }
      if (o.proj_size() > 0) params.push_back({"weight_hr_l" + suffix, {o.proj_size(), o.hidden_size()}});
      std::vector<std::string> names;
      for (auto& [name, shape] : params) {
        flat_weights_.push_back(register_parameter(name, tensor::empty(shape)));
        flat_weights_names_.push_back(name);
        names.push_back(name);
      }
      all_weights_.push_back(names);
    }
  }
  reset_parameters();
}

void RNNImplBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(static_cast<double>(options_base.hidden_size()));
  for (const auto& name : flat_weights_names_) init::uniform_(parameters_[name], -stdv, stdv);
}

std::vector<Tensor> RNNImplBase::all_weights() const {
  std::vector<Tensor> out;
  for (const auto& name : flat_weights_names_) out.push_back(parameters_[name]);
  return out;
}

void RNNImplBase::pretty_print(std::ostream& s) const {
  const auto& o = options_base;
  s << "tensor::nn::" << kind_name() << "(input_size=" << o.input_size() << ", hidden_size=" << o.hidden_size()
    << ", num_layers=" << o.num_layers() << ", bias=" << (o.bias() ? "true" : "false")
    << ", batch_first=" << (o.batch_first() ? "true" : "false") << ", dropout=" << o.dropout()
    << ", bidirectional=" << (o.bidirectional() ? "true" : "false");
  if (o.proj_size() > 0) s << ", proj_size=" << o.proj_size();
  s << ")";
}

std::pair<Tensor, bool> RNNImplBase::prepare_input(const Tensor& input) const {
  const char* kind = kind_name();
  TENSOR_CHECK(input.defined(), "{}: input must be a defined tensor", kind);
  TENSOR_CHECK(input.dim() == 2 || input.dim() == 3,
               "{}: expected input to be 2-d (unbatched [seq, feature]) or 3-d ([seq, batch, feature], or [batch, "
               "seq, feature] with batch_first), got {}",
               kind, input.describe());
  TENSOR_CHECK(input.size(-1) == options_base.input_size(), "{}: input.size(-1) must be equal to input_size. Expected {}, got {} (input {})",
               kind, options_base.input_size(), input.size(-1), input.describe());
  TENSOR_CHECK(input.is_floating_point(), "{}: input must be floating point, got {}", kind, input.describe());
  const Tensor& w = flat_weights_.front();
  // In an autocast region the projections cast their operands themselves (linear is a
  // lower-precision op), so bf16 input from an earlier autocast layer meets float32 weights, as
  // libtorch's CPU LSTM accepts it there.
  TENSOR_CHECK(input.dtype() == w.dtype() || autocast::is_autocast_enabled(input.device().type()),
               "{}: input {} and parameters ({}) must have the same dtype (convert the module with ->to())", kind,
               input.describe(), w.dtype());
  if (input.dim() == 2) return {input.unsqueeze(1), true};
  return {options_base.batch_first() ? input.transpose(0, 1) : input, false};
}

Tensor RNNImplBase::prepare_hidden(const Tensor& hx, const Tensor& input, bool unbatched, int64_t width,
                                   const char* what) const {
  const int64_t ld = options_base.num_layers() * (options_base.bidirectional() ? 2 : 1);
  const int64_t n = input.size(1);
  if (!hx.defined()) return zeros({ld, n, width}, input.options().requires_grad(false));
  std::vector<int64_t> expected = unbatched ? std::vector<int64_t>{ld, width} : std::vector<int64_t>{ld, n, width};
  TENSOR_CHECK(hx.sizes() == IntArrayRef(expected), "{}: expected {} size {}, got {}", kind_name(), what,
               ::tensor::detail::shape_str(expected), shape_of(hx));
  const bool autocast = autocast::is_autocast_enabled(input.device().type());
  TENSOR_CHECK(hx.dtype() == input.dtype() || autocast, "{}: {} {} must have the input's dtype {}", kind_name(), what,
               hx.describe(), input.dtype());
  Tensor h = hx.dtype() == input.dtype() ? hx : hx.to(input.dtype());
  return unbatched ? h.unsqueeze(1) : h;
}

std::tuple<Tensor, Tensor, Tensor> RNNImplBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  const auto& o = options_base;
  const int64_t dirs = o.bidirectional() ? 2 : 1;
  const int64_t steps = input.size(0);
  const RNNMode mode = o.mode();
  const bool lstm = mode == kLSTM;
  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = input;
  size_t w = 0;  // index into flat_weights_names_
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    std::vector<Tensor> dir_outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const Tensor& w_ih = parameters_[flat_weights_names_[w++]];
      const Tensor& w_hh = parameters_[flat_weights_names_[w++]];
      Tensor b_ih, b_hh, w_hr;
      if (o.bias()) {
        b_ih = parameters_[flat_weights_names_[w++]];
        b_hh = parameters_[flat_weights_names_[w++]];
      }
      if (o.proj_size() > 0) w_hr = parameters_[flat_weights_names_[w++]];
      const int64_t idx = layer * dirs + d;
      Tensor h = h0.select(0, idx);
      Tensor c = lstm ? c0.select(0, idx) : Tensor();
      if (fused_rnn_applies(layer_input, h, c, {w_ih, w_hh, b_ih, b_hh}, w_hr.defined())) {
        auto r = fused_rnn_layer(mode, layer_input, {}, d == 1, h, c, w_ih, w_hh, b_ih, b_hh);
        dir_outputs.push_back(r[0].view({steps, h.size(0), h.size(1)}));
        h_n.push_back(r[1]);
        if (lstm) c_n.push_back(r[2]);
        continue;
      }
      // The input projection of every step at once: [T, N, G*H].
      Tensor xw = F::linear(layer_input, w_ih, b_ih);
      std::vector<Tensor> outs(static_cast<size_t>(steps));
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = d == 0 ? k : steps - 1 - k;
        Tensor gx = xw.select(0, t);
        Tensor gh = F::linear(h, w_hh, b_hh);
        rnn_cell_step(mode, gx, gh, w_hr, h, c);
        outs[static_cast<size_t>(t)] = h;
      }
      dir_outputs.push_back(steps > 0 ? tensor::stack(outs, 0) : zeros({0, h.size(0), h.size(1)}, h.options()));
      h_n.push_back(h);
      if (lstm) c_n.push_back(c);
    }
    layer_input = dirs == 1 ? dir_outputs[0] : tensor::cat(dir_outputs, 2);
    if (o.dropout() > 0 && is_training() && layer + 1 < o.num_layers())
      layer_input = tensor::dropout(layer_input, o.dropout(), true);
  }
  return {layer_input, tensor::stack(h_n, 0), lstm ? tensor::stack(c_n, 0) : Tensor()};
}

std::vector<int64_t> RNNImplBase::prepare_packed(const utils::rnn::PackedSequence& packed) const {
  const char* kind = kind_name();
  const Tensor& data = packed.data();
  TENSOR_CHECK(data.defined() && data.dim() == 2,
               "{}: expected the packed data to be 2-d [sum(lengths), input_size], got {}", kind,
               data.defined() ? data.describe() : std::string("undefined"));
  TENSOR_CHECK(data.size(1) == options_base.input_size(),
               "{}: input.size(-1) must be equal to input_size. Expected {}, got {} (packed data {})", kind,
               options_base.input_size(), data.size(1), data.describe());
  TENSOR_CHECK(data.dtype() == flat_weights_.front().dtype(),
               "{}: packed data {} and parameters ({}) must have the same dtype (convert the module with ->to())",
               kind, data.describe(), flat_weights_.front().dtype());
  Tensor bs_t = packed.batch_sizes().contiguous();
  const int64_t* p = bs_t.data_ptr<int64_t>();
  std::vector<int64_t> bs(p, p + bs_t.numel());
  int64_t rows = 0;
  for (size_t t = 0; t < bs.size(); ++t) {
    TENSOR_CHECK(bs[t] > 0 && (t == 0 || bs[t] <= bs[t - 1]),
                 "{}: the packed batch_sizes must be positive and non-increasing, got {}", kind, shape_of(bs_t));
    rows += bs[t];
  }
  TENSOR_CHECK(!bs.empty() && rows == data.size(0), "{}: packed data {} does not hold the {} rows of batch_sizes {}",
               kind, data.describe(), rows, shape_of(bs_t));
  return bs;
}

Tensor RNNImplBase::prepare_packed_hidden(const Tensor& hx, const utils::rnn::PackedSequence& packed, int64_t batch,
                                          int64_t width, const char* what) const {
  const int64_t ld = options_base.num_layers() * (options_base.bidirectional() ? 2 : 1);
  const Tensor& data = packed.data();
  if (!hx.defined()) return zeros({ld, batch, width}, data.options().requires_grad(false));
  const std::vector<int64_t> expected = {ld, batch, width};
  TENSOR_CHECK(hx.sizes() == IntArrayRef(expected), "{}: expected {} size {}, got {}", kind_name(), what,
               ::tensor::detail::shape_str(expected), shape_of(hx));
  TENSOR_CHECK(hx.dtype() == data.dtype(), "{}: {} {} must have the input's dtype {}", kind_name(), what,
               hx.describe(), data.dtype());
  // libtorch's permute_hidden: the packed columns are in sorted order.
  const Tensor& sorted = packed.sorted_indices();
  return sorted.defined() ? hx.index_select(1, sorted) : hx;
}

// Note [Packed recurrence]
// At step t only the first batch_sizes[t] columns run. Going forward in time the batch only
// shrinks: the columns that stop keep their last state, which is set aside, and the final
// state is the still running rows followed by the set-aside pieces, latest first (a later
// stop is a lower row). Going backward in time the batch only grows: each newly starting
// column joins with its initial state. Every step reads and writes rows of the packed data
// by offset, so the output is packed exactly as the input.
std::tuple<Tensor, Tensor, Tensor> RNNImplBase::run_packed(const Tensor& data, const std::vector<int64_t>& bs,
                                                           const Tensor& h0, const Tensor& c0) {
  const auto& o = options_base;
  const int64_t dirs = o.bidirectional() ? 2 : 1;
  const int64_t steps = static_cast<int64_t>(bs.size());
  const RNNMode mode = o.mode();
  const bool lstm = mode == kLSTM;
  std::vector<int64_t> offsets(bs.size(), 0);
  for (size_t t = 1; t < bs.size(); ++t) offsets[t] = offsets[t - 1] + bs[t - 1];
  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = data;
  size_t w = 0;  // index into flat_weights_names_
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    std::vector<Tensor> dir_outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const Tensor& w_ih = parameters_[flat_weights_names_[w++]];
      const Tensor& w_hh = parameters_[flat_weights_names_[w++]];
      Tensor b_ih, b_hh, w_hr;
      if (o.bias()) {
        b_ih = parameters_[flat_weights_names_[w++]];
        b_hh = parameters_[flat_weights_names_[w++]];
      }
      if (o.proj_size() > 0) w_hr = parameters_[flat_weights_names_[w++]];
      const int64_t idx = layer * dirs + d;
      const Tensor h_init = h0.select(0, idx);
      const Tensor c_init = lstm ? c0.select(0, idx) : Tensor();
      if (fused_rnn_applies(layer_input, h_init, c_init, {w_ih, w_hh, b_ih, b_hh}, w_hr.defined())) {
        auto r = fused_rnn_layer(mode, layer_input, bs, d == 1, h_init, c_init, w_ih, w_hh, b_ih, b_hh);
        dir_outputs.push_back(r[0]);
        h_n.push_back(r[1]);
        if (lstm) c_n.push_back(r[2]);
        continue;
      }
      Tensor xw = F::linear(layer_input, w_ih, b_ih);  // [sum(lengths), G*H]
      std::vector<Tensor> outs(bs.size());
      std::vector<Tensor> h_done, c_done;  // forward: states of the columns that stopped
      Tensor h, c;
      int64_t running = 0;
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = d == 0 ? k : steps - 1 - k;
        const int64_t n = bs[static_cast<size_t>(t)];
        if (k == 0) {
          h = h_init.narrow(0, 0, n);
          if (lstm) c = c_init.narrow(0, 0, n);
        } else if (n < running) {
          h_done.push_back(h.narrow(0, n, running - n));
          h = h.narrow(0, 0, n);
          if (lstm) {
            c_done.push_back(c.narrow(0, n, running - n));
            c = c.narrow(0, 0, n);
          }
        } else if (n > running) {
          h = tensor::cat({h, h_init.narrow(0, running, n - running)}, 0);
          if (lstm) c = tensor::cat({c, c_init.narrow(0, running, n - running)}, 0);
        }
        running = n;
        Tensor gx = xw.narrow(0, offsets[static_cast<size_t>(t)], n);
        Tensor gh = F::linear(h, w_hh, b_hh);
        rnn_cell_step(mode, gx, gh, w_hr, h, c);
        outs[static_cast<size_t>(t)] = h;
      }
      // The final state of every column (Note [Packed recurrence]).
      std::vector<Tensor> h_parts = {h}, c_parts = {c};
      for (auto it = h_done.rbegin(); it != h_done.rend(); ++it) h_parts.push_back(*it);
      for (auto it = c_done.rbegin(); it != c_done.rend(); ++it) c_parts.push_back(*it);
      dir_outputs.push_back(tensor::cat(outs, 0));
      h_n.push_back(h_parts.size() == 1 ? h : tensor::cat(h_parts, 0));
      if (lstm) c_n.push_back(c_parts.size() == 1 ? c : tensor::cat(c_parts, 0));
    }
    layer_input = dirs == 1 ? dir_outputs[0] : tensor::cat(dir_outputs, 1);
    if (o.dropout() > 0 && is_training() && layer + 1 < o.num_layers())
      layer_input = tensor::dropout(layer_input, o.dropout(), true);
  }
  return {layer_input, tensor::stack(h_n, 0), lstm ? tensor::stack(c_n, 0) : Tensor()};
}

}  // namespace detail

namespace {
// libtorch's permute_hidden back to the original batch order.
Tensor unpermute(const Tensor& h, const utils::rnn::PackedSequence& packed) {
  const Tensor& unsorted = packed.unsorted_indices();
  return unsorted.defined() ? h.index_select(1, unsorted) : h;
}
utils::rnn::PackedSequence repack(const Tensor& out, const utils::rnn::PackedSequence& packed) {
  return utils::rnn::PackedSequence(out, packed.batch_sizes(), packed.sorted_indices(), packed.unsorted_indices());
}
int64_t packed_batch(const std::vector<int64_t>& bs) { return bs.front(); }
}  // namespace

// ---- RNN, LSTM, GRU ----

RNNImpl::RNNImpl(const RNNOptions& options_) : RNNImplBase(base_of(options_), "tensor::nn::RNN"), options(options_) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, Tensor hx) {
  auto [x, unbatched] = prepare_input(input);
  Tensor h0 = prepare_hidden(hx, x, unbatched, options.hidden_size(), "hidden");
  auto [out, h_n, c_n] = run(x, h0, Tensor());
  (void)c_n;
  if (unbatched) return {out.squeeze(1), h_n.squeeze(1)};
  return {options.batch_first() ? out.transpose(0, 1) : out, h_n};
}

std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  const std::vector<int64_t> bs = prepare_packed(packed_input);
  Tensor h0 = prepare_packed_hidden(hx, packed_input, packed_batch(bs), options.hidden_size(), "hidden");
  auto [out, h_n, c_n] = run_packed(packed_input.data(), bs, h0, Tensor());
  (void)c_n;
  return {repack(out, packed_input), unpermute(h_n, packed_input)};
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_)
    : RNNImplBase(base_of(options_), "tensor::nn::LSTM"), options(options_) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  if (lstm_redirect_) return lstm_redirect_(input, std::move(hx_opt));
  auto [x, unbatched] = prepare_input(input);
  const int64_t real_hidden = options.proj_size() > 0 ? options.proj_size() : options.hidden_size();
  Tensor hx, cx;
  if (hx_opt.has_value()) std::tie(hx, cx) = *hx_opt;
  TENSOR_CHECK(hx.defined() == cx.defined(), "LSTM: give both h_0 and c_0 or neither");
  Tensor h0 = prepare_hidden(hx, x, unbatched, real_hidden, "hidden");
  Tensor c0 = prepare_hidden(cx, x, unbatched, options.hidden_size(), "cell");
  auto [out, h_n, c_n] = run(x, h0, c0);
  if (unbatched) return {out.squeeze(1), {h_n.squeeze(1), c_n.squeeze(1)}};
  return {options.batch_first() ? out.transpose(0, 1) : out, {h_n, c_n}};
}

std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> LSTMImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  TENSOR_CHECK(!lstm_redirect_,
               "LSTM::forward_with_packed_input: this LSTM was replaced (quantize_dynamic swapped in a dynamic "
               "quantized LSTM), which does not take packed sequences; pad the batch and call forward");
  const std::vector<int64_t> bs = prepare_packed(packed_input);
  const int64_t real_hidden = options.proj_size() > 0 ? options.proj_size() : options.hidden_size();
  Tensor hx, cx;
  if (hx_opt.has_value()) std::tie(hx, cx) = *hx_opt;
  TENSOR_CHECK(hx.defined() == cx.defined(), "LSTM: give both h_0 and c_0 or neither");
  Tensor h0 = prepare_packed_hidden(hx, packed_input, packed_batch(bs), real_hidden, "hidden");
  Tensor c0 = prepare_packed_hidden(cx, packed_input, packed_batch(bs), options.hidden_size(), "cell");
  auto [out, h_n, c_n] = run_packed(packed_input.data(), bs, h0, c0);
  return {repack(out, packed_input), {unpermute(h_n, packed_input), unpermute(c_n, packed_input)}};
}

GRUImpl::GRUImpl(const GRUOptions& options_) : RNNImplBase(base_of(options_), "tensor::nn::GRU"), options(options_) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, Tensor hx) {
  auto [x, unbatched] = prepare_input(input);
  Tensor h0 = prepare_hidden(hx, x, unbatched, options.hidden_size(), "hidden");
  auto [out, h_n, c_n] = run(x, h0, Tensor());
  (void)c_n;
  if (unbatched) return {out.squeeze(1), h_n.squeeze(1)};
  return {options.batch_first() ? out.transpose(0, 1) : out, h_n};
}

std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  const std::vector<int64_t> bs = prepare_packed(packed_input);
  Tensor h0 = prepare_packed_hidden(hx, packed_input, packed_batch(bs), options.hidden_size(), "hidden");
  auto [out, h_n, c_n] = run_packed(packed_input.data(), bs, h0, Tensor());
  (void)c_n;
  return {repack(out, packed_input), unpermute(h_n, packed_input)};
}

// ---- cells ----

namespace detail {

RNNCellImplBase::RNNCellImplBase(const RNNCellOptionsBase& options_, std::string name)
    : Module(std::move(name)), options_base(options_) {
  TENSOR_CHECK(options_base.input_size() > 0 && options_base.hidden_size() > 0,
               "{}: input_size ({}) and hidden_size ({}) must be positive", this->name(), options_base.input_size(),
               options_base.hidden_size());
  reset();
}

void RNNCellImplBase::reset() {
  const auto& o = options_base;
  const int64_t g = o.num_chunks() * o.hidden_size();
  for (const char* n : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"})
    if (parameters_.contains(n)) parameters_.erase(n);
  weight_ih = register_parameter("weight_ih", tensor::empty({g, o.input_size()}));
  weight_hh = register_parameter("weight_hh", tensor::empty({g, o.hidden_size()}));
  if (o.bias()) {
    bias_ih = register_parameter("bias_ih", tensor::empty({g}));
    bias_hh = register_parameter("bias_hh", tensor::empty({g}));
  } else {
    bias_ih = register_parameter("bias_ih", Tensor(), /*requires_grad=*/false);
    bias_hh = register_parameter("bias_hh", Tensor(), /*requires_grad=*/false);
  }
  reset_parameters();
}

void RNNCellImplBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(static_cast<double>(options_base.hidden_size()));
  for (Tensor* p : {&weight_ih, &weight_hh, &bias_ih, &bias_hh})
    if (p->defined()) init::uniform_(*p, -stdv, stdv);
}

void RNNCellImplBase::pretty_print(std::ostream& s) const {
  s << name() << "(" << options_base.input_size() << ", " << options_base.hidden_size();
  if (!options_base.bias()) s << ", bias=false";
  const std::string nl = get_nonlinearity_str();
  if (!nl.empty() && nl != "kTanh") s << ", nonlinearity=" << nl;
  s << ")";
}

std::pair<Tensor, bool> RNNCellImplBase::prepare_input(const Tensor& input) const {
  const std::string& kind = name();
  TENSOR_CHECK(input.defined(), "{}: input must be a defined tensor", kind);
  TENSOR_CHECK(input.dim() == 1 || input.dim() == 2, "{}: expected input to be 1-d or 2-d, got {}", kind,
               input.describe());
  TENSOR_CHECK(input.size(-1) == options_base.input_size(),
               "{}: input has inconsistent input_size: got {} expected {} (input {})", kind, input.size(-1),
               options_base.input_size(), input.describe());
  TENSOR_CHECK(input.dtype() == weight_ih.dtype(), "{}: input {} and parameters ({}) must have the same dtype", kind,
               input.describe(), weight_ih.dtype());
  if (input.dim() == 1) return {input.unsqueeze(0), true};
  return {input, false};
}

Tensor RNNCellImplBase::prepare_hidden(const Tensor& hx, const Tensor& input, bool unbatched, const char* what) const {
  const int64_t h = options_base.hidden_size();
  if (!hx.defined()) return zeros({input.size(0), h}, input.options().requires_grad(false));
  std::vector<int64_t> expected = unbatched ? std::vector<int64_t>{h} : std::vector<int64_t>{input.size(0), h};
  TENSOR_CHECK(hx.sizes() == IntArrayRef(expected), "{}: expected {} of size {} for input {}, got {}", name(), what,
               ::tensor::detail::shape_str(expected), input.describe(), hx.describe());
  return unbatched ? hx.unsqueeze(0) : hx;
}

}  // namespace detail

namespace {
std::optional<Tensor> opt(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }
}  // namespace

RNNCellImpl::RNNCellImpl(const RNNCellOptions& options_)
    : RNNCellImplBase(detail::RNNCellOptionsBase(options_.input_size(), options_.hidden_size(), options_.bias(), 1),
                      "tensor::nn::RNNCell"),
      options(options_) {}

std::string RNNCellImpl::get_nonlinearity_str() const { return options.nonlinearity() == kTanh ? "kTanh" : "kReLU"; }

Tensor RNNCellImpl::forward(const Tensor& input, const Tensor& hx) {
  auto [x, unbatched] = prepare_input(input);
  Tensor h = prepare_hidden(hx, x, unbatched, "hidden");
  Tensor out = options.nonlinearity() == kTanh
                   ? tensor::rnn_tanh_cell(x, h, weight_ih, weight_hh, opt(bias_ih), opt(bias_hh))
                   : tensor::rnn_relu_cell(x, h, weight_ih, weight_hh, opt(bias_ih), opt(bias_hh));
  return unbatched ? out.squeeze(0) : out;
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& options_)
    : RNNCellImplBase(detail::RNNCellOptionsBase(options_.input_size(), options_.hidden_size(), options_.bias(), 4),
                      "tensor::nn::LSTMCell"),
      options(options_) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  auto [x, unbatched] = prepare_input(input);
  Tensor hx, cx;
  if (hx_opt.has_value()) std::tie(hx, cx) = *hx_opt;
  Tensor h = prepare_hidden(hx, x, unbatched, "hidden");
  Tensor c = prepare_hidden(cx, x, unbatched, "cell");
  auto [h1, c1] = tensor::lstm_cell(x, {h, c}, weight_ih, weight_hh, opt(bias_ih), opt(bias_hh));
  if (unbatched) return {h1.squeeze(0), c1.squeeze(0)};
  return {h1, c1};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& options_)
    : RNNCellImplBase(detail::RNNCellOptionsBase(options_.input_size(), options_.hidden_size(), options_.bias(), 3),
                      "tensor::nn::GRUCell"),
      options(options_) {}

Tensor GRUCellImpl::forward(const Tensor& input, const Tensor& hx) {
  auto [x, unbatched] = prepare_input(input);
  Tensor h = prepare_hidden(hx, x, unbatched, "hidden");
  Tensor out = tensor::gru_cell(x, h, weight_ih, weight_hh, opt(bias_ih), opt(bias_hh));
  return unbatched ? out.squeeze(0) : out;
}

}  // namespace tensor::nn
