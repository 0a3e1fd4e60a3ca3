// Recurrent layers as libtorch's torch::nn::{RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell}: the
// same options, parameter names (weight_ih_l0, weight_hh_l0_reverse, bias_ih_l1, weight_hr_l0,
// ...), initialization U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), forward signatures and
// returned tuple shapes. Multi-layer, bidirectional, batch_first, inter-layer dropout and
// LSTM projections (proj_size). The steps are composed of public differentiable ops (linear,
// sigmoid, tanh, ...), so autograd supplies the gradients. forward_with_packed_input runs a
// utils::rnn::PackedSequence, each sequence only over its own steps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"
#include "tensor/nn/utils/rnn.h"

namespace tensor::nn {

// ---- options ----

namespace detail {
/// The options every recurrent stack shares (built from RNNOptions, LSTMOptions or GRUOptions).
struct RNNOptionsBase {
  RNNOptionsBase(RNNMode mode, int64_t input_size, int64_t hidden_size)
      : mode_(mode), input_size_(input_size), hidden_size_(hidden_size) {}
  TENSOR_ARG(RNNMode, mode);
  TENSOR_ARG(int64_t, input_size);
  TENSOR_ARG(int64_t, hidden_size);
  TENSOR_ARG(int64_t, num_layers) = 1;
  TENSOR_ARG(bool, bias) = true;
  TENSOR_ARG(bool, batch_first) = false;
  TENSOR_ARG(double, dropout) = 0.0;
  TENSOR_ARG(bool, bidirectional) = false;
  TENSOR_ARG(int64_t, proj_size) = 0;
};
}  // namespace detail

/// nn::RNN: h_t = nonlinearity(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).
struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TENSOR_ARG(int64_t, input_size);
  TENSOR_ARG(int64_t, hidden_size);
  /// Stacked layers, each feeding the next.
  TENSOR_ARG(int64_t, num_layers) = 1;
  /// kTanh or kReLU.
  TENSOR_ARG(RNNNonlinearity, nonlinearity) = kTanh;
  TENSOR_ARG(bool, bias) = true;
  /// Input and output as (batch, seq, feature) instead of (seq, batch, feature); the hidden
  /// states stay (layers * directions, batch, hidden).
  TENSOR_ARG(bool, batch_first) = false;
  /// Dropout on the outputs of every layer but the last (training only).
  TENSOR_ARG(double, dropout) = 0.0;
  TENSOR_ARG(bool, bidirectional) = false;
};

/// nn::LSTM: gates i, f, g, o; proj_size > 0 projects h by weight_hr (h_n is then proj_size wide).
struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TENSOR_ARG(int64_t, input_size);
  TENSOR_ARG(int64_t, hidden_size);
  TENSOR_ARG(int64_t, num_layers) = 1;
  TENSOR_ARG(bool, bias) = true;
  TENSOR_ARG(bool, batch_first) = false;
  TENSOR_ARG(double, dropout) = 0.0;
  TENSOR_ARG(bool, bidirectional) = false;
  TENSOR_ARG(int64_t, proj_size) = 0;
};

/// nn::GRU: gates r, z, n.
struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TENSOR_ARG(int64_t, input_size);
  TENSOR_ARG(int64_t, hidden_size);
  TENSOR_ARG(int64_t, num_layers) = 1;
  TENSOR_ARG(bool, bias) = true;
  TENSOR_ARG(bool, batch_first) = false;
  TENSOR_ARG(double, dropout) = 0.0;
  TENSOR_ARG(bool, bidirectional) = false;
};

namespace detail {
/// The options every cell shares; num_chunks is the gate count (1, 4 or 3).
struct RNNCellOptionsBase {
  RNNCellOptionsBase(int64_t input_size, int64_t hidden_size, bool bias, int64_t num_chunks)
      : input_size_(input_size), hidden_size_(hidden_size), bias_(bias), num_chunks_(num_chunks) {}
  TENSOR_ARG(int64_t, input_size);
  TENSOR_ARG(int64_t, hidden_size);
  TENSOR_ARG(bool, bias);
  TENSOR_ARG(int64_t, num_chunks);
};
}  // namespace detail

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TENSOR_ARG(int64_t, input_size);
  TENSOR_ARG(int64_t, hidden_size);
  TENSOR_ARG(bool, bias) = true;
  TENSOR_ARG(RNNNonlinearity, nonlinearity) = kTanh;
};

struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TENSOR_ARG(int64_t, input_size);
  TENSOR_ARG(int64_t, hidden_size);
  TENSOR_ARG(bool, bias) = true;
};

struct GRUCellOptions {
  GRUCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  TENSOR_ARG(int64_t, input_size);
  TENSOR_ARG(int64_t, hidden_size);
  TENSOR_ARG(bool, bias) = true;
};

// ---- recurrent stacks ----

namespace detail {

/// The layer stack behind RNN, LSTM and GRU. Parameters per layer l and direction (suffix
/// "_reverse" for the backward one): weight_ih_l{l} [G*H, in], weight_hh_l{l} [G*H, H'],
/// bias_ih_l{l} and bias_hh_l{l} [G*H] (with bias), weight_hr_l{l} [proj_size, H] (LSTM with
/// proj_size), G = 1, 4 or 3 gates, H' = proj_size or H, in = input_size for layer 0 and
/// H' * directions above.
class TENSOR_API RNNImplBase : public Module {
 public:
  RNNImplBase(const RNNOptionsBase& options_, std::string name);
  /// Re-creates and re-initializes every parameter.
  void reset();
  /// Every weight ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as libtorch.
  void reset_parameters();
  /// libtorch packs weights for cuDNN here; nothing to do in this implementation.
  void flatten_parameters() {}
  /// The parameters in their registration order.
  std::vector<Tensor> all_weights() const;
  void pretty_print(std::ostream& stream) const override;

  RNNOptionsBase options_base;

 protected:
  /// Runs the stack. input [T, N, I] (time-major, batched); h0 [L*D, N, H'] and, for LSTM, c0
  /// [L*D, N, H], both defined. Returns (output [T, N, D*H'], h_n, c_n (undefined unless LSTM)).
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0);
  /// Runs the stack over packed steps: data [sum(lengths), I], batch_sizes the packed sequence's
  /// (non-increasing), h0/c0 as for run in packed column order. Returns (output data
  /// [sum(lengths), D*H'], h_n, c_n), each sequence's final state in its own row.
  std::tuple<Tensor, Tensor, Tensor> run_packed(const Tensor& data, const std::vector<int64_t>& batch_sizes,
                                                const Tensor& h0, const Tensor& c0);
  /// Checks a packed input and returns its batch sizes.
  std::vector<int64_t> prepare_packed(const utils::rnn::PackedSequence& packed) const;
  /// Checks (or creates zeros for) a hidden state [L*D, N, width] of a packed input, permuted
  /// into packed column order.
  Tensor prepare_packed_hidden(const Tensor& hx, const utils::rnn::PackedSequence& packed, int64_t batch,
                               int64_t width, const char* what) const;
  /// Checks the input and returns it time-major and batched, with whether it was unbatched.
  std::pair<Tensor, bool> prepare_input(const Tensor& input) const;
  /// Checks (or, when undefined, creates zeros for) a hidden state of [L*D, N, width].
  Tensor prepare_hidden(const Tensor& hx, const Tensor& input, bool unbatched, int64_t width,
                        const char* what) const;
  /// The module's name for messages: "RNN", "LSTM" or "GRU".
  const char* kind_name() const;

  std::vector<std::string> flat_weights_names_;
  std::vector<std::vector<std::string>> all_weights_;
  std::vector<Tensor> flat_weights_;
};

}  // namespace detail

/// Elman RNN. forward(input [T, N, I] ([N, T, I] with batch_first, or unbatched [T, I]),
/// hx [L*D, N, H] (zeros when undefined)) -> (output [T, N, D*H], h_n [L*D, N, H]).
class TENSOR_API RNNImpl : public detail::RNNImplBase {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options_);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  /// The packed form: (output packed as the input, h_n [L*D, N, H] in the original batch order).
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, Tensor hx = {});
  RNNOptions options;
};
TENSOR_MODULE(RNN);

/// LSTM. forward(input, optional (h_0 [L*D, N, H'], c_0 [L*D, N, H])) -> (output [T, N, D*H'],
/// (h_n [L*D, N, H'], c_n [L*D, N, H])), H' = proj_size or hidden_size.
class TENSOR_API LSTMImpl : public detail::RNNImplBase {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options_);
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  /// The packed form: (output packed as the input, (h_n, c_n) in the original batch order).
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  /// forward's signature.
  using ForwardFn = std::function<std::tuple<Tensor, std::tuple<Tensor, Tensor>>(
      const Tensor&, std::optional<std::tuple<Tensor, Tensor>>)>;
  /// From now on forward (through the holder or called directly) runs `fn` instead of this
  /// module's own; an empty function restores it. How quantization::quantize_dynamic swaps in a
  /// dynamic quantized LSTM for one a parent holds in a member (Note [Module swap by redirect]);
  /// Module::redirect_forward covers Tensor -> Tensor forwards only. forward_with_packed_input
  /// of a redirected module raises.
  void redirect_lstm_forward(ForwardFn fn) { lstm_redirect_ = std::move(fn); }
  LSTMOptions options;

 private:
  ForwardFn lstm_redirect_;
};
TENSOR_MODULE(LSTM);

/// GRU. forward(input, hx [L*D, N, H]) -> (output [T, N, D*H], h_n [L*D, N, H]).
class TENSOR_API GRUImpl : public detail::RNNImplBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options_);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  /// The packed form: (output packed as the input, h_n [L*D, N, H] in the original batch order).
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, Tensor hx = {});
  GRUOptions options;
};
TENSOR_MODULE(GRU);

// ---- cells ----

namespace detail {

/// The parameters of a cell: weight_ih [G*H, I], weight_hh [G*H, H], bias_ih and bias_hh [G*H]
/// (registered undefined without bias), all ~ U(-1/sqrt(H), 1/sqrt(H)).
class TENSOR_API RNNCellImplBase : public Module {
 public:
  RNNCellImplBase(const RNNCellOptionsBase& options_, std::string name);
  void reset();
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  RNNCellOptionsBase options_base;
  Tensor weight_ih;
  Tensor weight_hh;
  Tensor bias_ih;
  Tensor bias_hh;

 protected:
  /// Checks input [N, I] or [I]; returns it batched, with whether it was unbatched.
  std::pair<Tensor, bool> prepare_input(const Tensor& input) const;
  /// Checks hx [N, H] (or [H] for an unbatched input), or creates zeros when undefined.
  Tensor prepare_hidden(const Tensor& hx, const Tensor& input, bool unbatched, const char* what) const;
  virtual std::string get_nonlinearity_str() const { return ""; }
};

}  // namespace detail

/// One Elman step: h' = nonlinearity(W_ih x + b_ih + W_hh h + b_hh).
class TENSOR_API RNNCellImpl : public detail::RNNCellImplBase {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options_);
  Tensor forward(const Tensor& input, const Tensor& hx = {});
  RNNCellOptions options;

 protected:
  std::string get_nonlinearity_str() const override;
};
TENSOR_MODULE(RNNCell);

/// One LSTM step: (h', c') from input and (h, c) (zeros when not given).
class TENSOR_API LSTMCellImpl : public detail::RNNCellImplBase {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options_);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  LSTMCellOptions options;
};
TENSOR_MODULE(LSTMCell);

/// One GRU step: h' from input and h (zeros when undefined).
class TENSOR_API GRUCellImpl : public detail::RNNCellImplBase {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options_);
  Tensor forward(const Tensor& input, const Tensor& hx = {});
  GRUCellOptions options;
};
TENSOR_MODULE(GRUCell);

}  // namespace tensor::nn
