// The fused recurrent layer (src/nn/RNNFused.cpp, Note [Fused recurrent layers]) against the
// composite path of public ops (FusedRNNGuard turns the fused layer off), which
// tests/test_port_nn_rnn.cpp checks against PyTorch: outputs, final states and every gradient,
// over cell kinds, dtypes, layers, directions, batch_first, bias, dropout, packed sequences and
// non-contiguous inputs; float32 also against the float64 composite; gradchecks of the node to
// first and second order (create_graph recomputes with the composite).
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <string>
#include <vector>

#include "src/cpu/LstmOneDNN.h"
#include "src/nn/RNNFused.h"
#include "tests/grad_test_util.h"
#include "tests/port_util.h"
#include "tests/test_util.h"

using namespace tensor;
namespace nn = tensor::nn;
namespace rnn_utils = tensor::nn::utils::rnn;
using autograd::variable_list;
using nn::detail::FusedRNNGuard;
using tensor::testing::check;
using tensor::testing::random_tensor;
using tensor::testing::strided;
using tensor::testing::vals;

namespace {

enum class Kind { Tanh, Relu, LSTM, GRU };
const char* name_of(Kind k) {
  switch (k) {
    case Kind::Tanh:
      return "RNN tanh";
    case Kind::Relu:
      return "RNN relu";
    case Kind::LSTM:
      return "LSTM";
    case Kind::GRU:
      return "GRU";
  }
  return "";
}

struct Cfg {
  Kind kind;
  int64_t layers = 1;
  bool bidir = false, batch_first = false, bias = true;
  double dropout = 0;
  std::string str() const {
    return std::string(name_of(kind)) + " layers " + std::to_string(layers) + (bidir ? " bidir" : "") +
           (batch_first ? " batch_first" : "") + (bias ? "" : " no-bias") + (dropout > 0 ? " dropout" : "");
  }
};

// A module of the config with its forward spellings: {out, h_n[, c_n]} from (x, h0, c0), and
// {out.data, h_n[, c_n]} from a packed sequence. h0/c0 undefined means none given.
struct Net {
  std::shared_ptr<nn::Module> module;
  std::function<variable_list(const Tensor&, const Tensor&, const Tensor&)> fwd;
  std::function<variable_list(const rnn_utils::PackedSequence&, const Tensor&, const Tensor&)> fwd_packed;
};

Net make_net(const Cfg& c, int64_t I, int64_t H, ScalarType dt) {
  Net n;
  if (c.kind == Kind::LSTM) {
    nn::LSTM m(nn::LSTMOptions(I, H)
                   .num_layers(c.layers)
                   .bidirectional(c.bidir)
                   .batch_first(c.batch_first)
                   .bias(c.bias)
                   .dropout(c.dropout));
    auto p = m.ptr();
    n.module = p;
    auto hc = [](const Tensor& h, const Tensor& cc) {
      return h.defined() ? std::optional<std::tuple<Tensor, Tensor>>(std::make_tuple(h, cc)) : std::nullopt;
    };
    n.fwd = [p, hc](const Tensor& x, const Tensor& h, const Tensor& cc) {
      auto [o, s] = p->forward(x, hc(h, cc));
      return variable_list{o, std::get<0>(s), std::get<1>(s)};
    };
    n.fwd_packed = [p, hc](const rnn_utils::PackedSequence& x, const Tensor& h, const Tensor& cc) {
      auto [o, s] = p->forward_with_packed_input(x, hc(h, cc));
      return variable_list{o.data(), std::get<0>(s), std::get<1>(s)};
    };
  } else if (c.kind == Kind::GRU) {
    nn::GRU m(nn::GRUOptions(I, H)
                  .num_layers(c.layers)
                  .bidirectional(c.bidir)
                  .batch_first(c.batch_first)
                  .bias(c.bias)
                  .dropout(c.dropout));
    auto p = m.ptr();
    n.module = p;
    n.fwd = [p](const Tensor& x, const Tensor& h, const Tensor&) {
      auto [o, s] = p->forward(x, h);
      return variable_list{o, s};
    };
    n.fwd_packed = [p](const rnn_utils::PackedSequence& x, const Tensor& h, const Tensor&) {
      auto [o, s] = p->forward_with_packed_input(x, h);
      return variable_list{o.data(), s};
    };
  } else {
    nn::RNN m(nn::RNNOptions(I, H)
                  .num_layers(c.layers)
                  .bidirectional(c.bidir)
                  .batch_first(c.batch_first)
                  .bias(c.bias)
                  .dropout(c.dropout)
                  .nonlinearity(c.kind == Kind::Tanh ? nn::RNNNonlinearity(kTanh) : nn::RNNNonlinearity(kReLU)));
    auto p = m.ptr();
    n.module = p;
    n.fwd = [p](const Tensor& x, const Tensor& h, const Tensor&) {
      auto [o, s] = p->forward(x, h);
      return variable_list{o, s};
    };
    n.fwd_packed = [p](const rnn_utils::PackedSequence& x, const Tensor& h, const Tensor&) {
      auto [o, s] = p->forward_with_packed_input(x, h);
      return variable_list{o.data(), s};
    };
  }
  n.module->to(dt);
  NoGradGuard g;
  unsigned seed = 500;
  for (auto& p : n.module->parameters()) p.copy_(random_tensor(p.sizes().vec(), seed++, -0.6, 0.6));
  return n;
}

// loss = sum_k sum(out_k * w_k) with fixed w_k, so every output and state gets its own gradient.
Tensor loss_of(const variable_list& outs) {
  Tensor loss;
  for (size_t k = 0; k < outs.size(); ++k) {
    Tensor w = random_tensor(outs[k].sizes().vec(), 900 + static_cast<unsigned>(k), -1, 1).to(outs[k].dtype());
    Tensor l = (outs[k] * w).sum();
    loss = loss.defined() ? loss + l : l;
  }
  return loss;
}

// Outputs then gradients wrt `leaves` and every parameter, as float64 values.
std::vector<std::vector<double>> values_and_grads(Net& net, const variable_list& outs, const variable_list& leaves) {
  std::vector<std::vector<double>> r;
  for (const Tensor& o : outs) r.push_back(vals(o));
  variable_list wrt = leaves;
  for (auto& p : net.module->parameters()) wrt.push_back(p);
  for (const Tensor& g : autograd::grad({loss_of(outs)}, wrt)) r.push_back(vals(g));
  return r;
}

void expect_all_near(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want,
                     double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k)
    tensor::testing::expect_near(got[k], want[k], tol, what + " item " + std::to_string(k));
}

Tensor leaf(const Tensor& t) { return t.detach().clone().requires_grad_(true); }

// Runs the net on (x, h0, c0) with the fused layer on or off, the dropout mask drawn from the
// same seed; returns outputs and gradients wrt x, h0 (and c0).
std::vector<std::vector<double>> run(Net& net, const Cfg& c, const Tensor& x, const Tensor& h0, const Tensor& c0,
                                     bool fused) {
  FusedRNNGuard guard(!fused);
  manual_seed(77);
  const int64_t before = nn::detail::fused_rnn_layer_count();
  variable_list outs = net.fwd(x, h0, c0);
  const int64_t ran = nn::detail::fused_rnn_layer_count() - before;
  EXPECT_EQ(ran, fused ? c.layers * (c.bidir ? 2 : 1) : 0) << c.str() << ": fused layers run";
  variable_list leaves = {x, h0};
  if (c.kind == Kind::LSTM) leaves.push_back(c0);
  return values_and_grads(net, outs, leaves);
}

const std::vector<Cfg>& configs() {
  static const std::vector<Cfg> cs = [] {
    std::vector<Cfg> v;
    for (Kind k : {Kind::LSTM, Kind::GRU, Kind::Tanh, Kind::Relu}) {
      v.push_back(Cfg{k});
      v.push_back(Cfg{k, 2, true, false, true, 0});
      v.push_back(Cfg{k, 1, false, true, false, 0});
      v.push_back(Cfg{k, 3, true, true, true, 0.4});
    }
    return v;
  }();
  return cs;
}

}  // namespace

// Every config, float64 and float32, against the composite of the same dtype; float32 also
// against the float64 composite. H 19 is one full AVX-512 vector of float32 (two of float64)
// plus a tail.
TEST(NNRnnFused, MatchesCompositeOutputsStatesAndGradients) {
  const int64_t T = 5, B = 3, I = 4, H = 19;
  for (const Cfg& c : configs()) {
    const int64_t L = c.layers * (c.bidir ? 2 : 1);
    std::vector<std::vector<double>> ref64;
    for (ScalarType dt : {kFloat64, kFloat32}) {
      Net net = make_net(c, I, H, dt);
      nn::Module& m = *net.module;
      m.train();
      Tensor x =
          leaf(random_tensor(c.batch_first ? std::vector<int64_t>{B, T, I} : std::vector<int64_t>{T, B, I}, 1).to(dt));
      Tensor h0 = leaf(random_tensor({L, B, H}, 2, -1, 1).to(dt));
      Tensor c0 = leaf(random_tensor({L, B, H}, 3, -1, 1).to(dt));
      auto want = run(net, c, x, h0, c0, false);
      auto got = run(net, c, x, h0, c0, true);
      const std::string what = c.str() + (dt == kFloat64 ? " float64" : " float32");
      expect_all_near(got, want, dt == kFloat64 ? 1e-11 : 2e-5, what + " vs composite");
      if (dt == kFloat64)
        ref64 = want;
      else
        expect_all_near(got, ref64, 2e-4, what + " vs float64 composite");
    }
  }
}

// No initial state given (zeros), eval mode, unbatched input, and forward under NoGradGuard
// (the fused layer saves nothing then) give the composite's values.
TEST(NNRnnFused, DefaultStateUnbatchedAndInference) {
  for (Kind k : {Kind::LSTM, Kind::GRU, Kind::Tanh}) {
    Cfg c{k, 2, true};
    Net net = make_net(c, 3, 5, kFloat64);
    net.module->eval();
    Tensor x = random_tensor({6, 2, 3}, 4);
    for (const Tensor& xi : {x, x.select(1, 0)}) {
      variable_list want, got, inference;
      {
        FusedRNNGuard off(true);
        want = net.fwd(xi, Tensor(), Tensor());
      }
      got = net.fwd(xi, Tensor(), Tensor());
      {
        NoGradGuard ng;
        inference = net.fwd(xi, Tensor(), Tensor());
      }
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].sizes(), want[i].sizes()) << c.str();
        tensor::testing::expect_near(vals(got[i]), vals(want[i]), 1e-12, c.str() + " output " + std::to_string(i));
        tensor::testing::expect_near(vals(inference[i]), vals(want[i]), 1e-12, c.str() + " inference");
      }
    }
  }
}

// Non-contiguous input and initial states (every other element of a wider tensor, and a
// transposed h0) give the values and gradients of their contiguous copies.
TEST(NNRnnFused, NonContiguousInputs) {
  const int64_t T = 4, B = 3, I = 5, H = 7;
  for (Kind k : {Kind::LSTM, Kind::GRU, Kind::Relu}) {
    Cfg c{k, 2, true};
    Net net = make_net(c, I, H, kFloat32);
    Tensor x = random_tensor({T, B, I}, 5).to(kFloat32);
    Tensor h0 = random_tensor({4, B, H}, 6, -1, 1).to(kFloat32), c0 = random_tensor({4, B, H}, 7, -1, 1).to(kFloat32);
    auto want = run(net, c, leaf(x), leaf(h0), leaf(c0), true);
    Tensor xs = strided(x).requires_grad_(true);
    Tensor ht = leaf(h0.transpose(0, 1).contiguous()).transpose(0, 1);  // non-contiguous, not a leaf
    ASSERT_FALSE(ht.is_contiguous());
    Tensor cs = strided(c0).requires_grad_(true);
    FusedRNNGuard on(false);
    variable_list outs = net.fwd(xs, ht, cs);
    variable_list leaves = {xs, ht};
    if (k == Kind::LSTM) leaves.push_back(cs);
    expect_all_near(values_and_grads(net, outs, leaves), want, 1e-6, c.str() + " non-contiguous");
  }
}

// Packed sequences (unsorted lengths, so the states are permuted; bidirectional, two layers):
// the packed output, final states and gradients wrt the padded input and every parameter.
TEST(NNRnnFused, PackedMatchesComposite) {
  const int64_t T = 5, I = 3, H = 6;
  const std::vector<int64_t> lengths = {2, 5, 3, 5};
  const int64_t B = static_cast<int64_t>(lengths.size());
  for (Kind k : {Kind::LSTM, Kind::GRU, Kind::Tanh, Kind::Relu}) {
    for (ScalarType dt : {kFloat64, kFloat32}) {
      Cfg c{k, 2, true};
      Net net = make_net(c, I, H, dt);
      Tensor x = leaf(random_tensor({T, B, I}, 8).to(dt));
      Tensor h0 = leaf(random_tensor({4, B, H}, 9, -1, 1).to(dt)),
             c0 = leaf(random_tensor({4, B, H}, 10, -1, 1).to(dt));
      auto go = [&](bool fused) {
        FusedRNNGuard guard(!fused);
        const int64_t before = nn::detail::fused_rnn_layer_count();
        auto packed = rnn_utils::pack_padded_sequence(x, tensor::tensor(lengths), false, false);
        variable_list outs = net.fwd_packed(packed, h0, c0);
        EXPECT_EQ(nn::detail::fused_rnn_layer_count() - before, fused ? 4 : 0);
        variable_list leaves = {x, h0};
        if (k == Kind::LSTM) leaves.push_back(c0);
        return values_and_grads(net, outs, leaves);
      };
      expect_all_near(go(true), go(false), dt == kFloat64 ? 1e-11 : 2e-5,
                      c.str() + (dt == kFloat64 ? " packed float64" : " packed float32"));
    }
  }
}

// The layer node itself, in float64 finite differences wrt the input, both initial states and
// all four weights: each cell kind, forward and reverse, whole batches and packed steps.
TEST(NNRnnFused, Gradcheck) {
  const int64_t I = 2, H = 3, B = 3;
  for (Kind k : {Kind::LSTM, Kind::GRU, Kind::Tanh, Kind::Relu}) {
    const nn::RNNMode mode = k == Kind::LSTM   ? nn::RNNMode(kLSTM)
                             : k == Kind::GRU  ? nn::RNNMode(kGRU)
                             : k == Kind::Tanh ? nn::RNNMode(kRNN_TANH)
                                               : nn::RNNMode(kRNN_RELU);
    const int64_t G = (k == Kind::LSTM ? 4 : k == Kind::GRU ? 3 : 1) * H;
    for (bool packed : {false, true}) {
      for (bool reverse : {false, true}) {
        const std::vector<int64_t> bs = packed ? std::vector<int64_t>{3, 2, 2, 1} : std::vector<int64_t>{};
        Tensor x = packed ? random_tensor({8, I}, 11) : random_tensor({3, B, I}, 11);
        const bool lstm = k == Kind::LSTM;
        // x, h0, w_ih, w_hh, b_ih, b_hh (, c0 for an LSTM)
        variable_list in = {x,
                            random_tensor({B, H}, 12, -1, 1),
                            random_tensor({G, I}, 14, -0.7, 0.7),
                            random_tensor({G, H}, 15, -0.7, 0.7),
                            random_tensor({G}, 16, -0.5, 0.5),
                            random_tensor({G}, 17, -0.5, 0.5)};
        if (lstm) in.push_back(random_tensor({B, H}, 13, -1, 1));
        for (auto& t : in) t.requires_grad_(true);
        auto f = [&](const variable_list& v) {
          auto r = nn::detail::fused_rnn_layer(mode, v[0], bs, reverse, v[1], lstm ? v[6] : Tensor(), v[2], v[3], v[4],
                                               v[5]);
          std::vector<Tensor> flat;
          for (const Tensor& t : r) flat.push_back(t.reshape({-1}));
          return tensor::cat(flat, 0);
        };
        const std::string what = std::string(name_of(k)) + (packed ? " packed" : "") + (reverse ? " reverse" : "");
        check(what + " gradcheck", [&] { return autograd::gradcheck(f, in); });
        // Second order (the composite recomputation) once per kind, packed for an LSTM; relu's
        // kink makes second differences unreliable.
        if (k != Kind::Relu && packed == lstm && reverse == lstm)
          check(what + " gradgradcheck", [&] { return autograd::gradgradcheck(f, in); });
      }
    }
  }
}

// Under create_graph the first gradients equal the fused backward's, and a second backward
// through them equals the composite's.
TEST(NNRnnFused, DoubleBackwardMatchesComposite) {
  for (Kind k : {Kind::LSTM, Kind::GRU}) {
    Cfg c{k, 2, true};
    Net net = make_net(c, 3, 4, kFloat64);
    Tensor x0 = random_tensor({4, 2, 3}, 18);
    auto go = [&](bool fused, bool create) {
      FusedRNNGuard guard(!fused);
      Tensor x = leaf(x0);
      variable_list outs = net.fwd(x, Tensor(), Tensor());
      Tensor w = net.module->parameters()[1];  // weight_hh_l0
      auto g = autograd::grad({loss_of(outs)}, {x, w}, {}, std::nullopt, create);
      std::vector<std::vector<double>> r = {vals(g[0]), vals(g[1])};
      if (create) {
        auto gg = autograd::grad({(g[0] * g[0]).sum() + (g[1] * g[1]).sum()}, {x, w});
        r.push_back(vals(gg[0]));
        r.push_back(vals(gg[1]));
      }
      return r;
    };
    auto fused_first = go(true, false);
    auto fused_create = go(true, true);
    auto composite = go(false, true);
    expect_all_near({fused_create[0], fused_create[1]}, fused_first, 1e-11, c.str() + " create_graph first grads");
    expect_all_near(fused_create, composite, 1e-10, c.str() + " double backward");
  }
}

// A float32 LSTM that records nothing runs on oneDNN's LSTM primitive (Note [LSTM inference on
// oneDNN]): outputs and final states within float32 rounding of the float64 composite, over
// layers, directions, batch_first, no bias, given non-contiguous states, an unbatched input and a
// packed sequence of equal lengths (all of which take the path), and one of unequal lengths (which
// keeps the fused loop).
TEST(NNRnnFused, LstmInferenceOnOneDNNMatchesFloat64) {
  const int64_t T = 7, B = 3, I = 5, H = 6;
  for (const Cfg& c : {Cfg{Kind::LSTM, 2, true}, Cfg{Kind::LSTM, 1, false, true}, Cfg{Kind::LSTM, 1, false, false, false}}) {
    Net n32 = make_net(c, I, H, kFloat32), n64 = make_net(c, I, H, kFloat64);
    const int64_t D = c.bidir ? 2 : 1;
    Tensor x64 = random_tensor(c.batch_first ? std::vector<int64_t>{B, T, I} : std::vector<int64_t>{T, B, I}, 31, -2, 2);
    // Non-contiguous states: every other column of wider tensors.
    Tensor h64 = random_tensor({c.layers * D, B, 2 * H}, 32).narrow(2, 0, H);
    Tensor c64 = random_tensor({c.layers * D, B, 2 * H}, 33).narrow(2, 0, H);
    variable_list want;
    {
      FusedRNNGuard off(true);
      want = n64.fwd(x64, h64, c64);
    }
    NoGradGuard ng;
    const int64_t before = cpu::lstm_inference_onednn_count();
    variable_list got = n32.fwd(x64.to(kFloat32), h64.to(kFloat32), c64.to(kFloat32));
    EXPECT_EQ(cpu::lstm_inference_onednn_count() - before, c.layers * D) << c.str();
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(got[i].sizes(), want[i].sizes()) << c.str();
      EXPECT_EQ(got[i].dtype(), kFloat32);
      tensor::testing::expect_near(vals(got[i]), vals(want[i]), 2e-5, c.str() + " output " + std::to_string(i));
    }
    // Unbatched input, no initial state.
    {
      FusedRNNGuard off(true);
      NoGradGuard ng2;
      Tensor xu = x64.select(c.batch_first ? 0 : 1, 1);
      variable_list w = [&] { return n64.fwd(xu, Tensor(), Tensor()); }();
      FusedRNNGuard on(false);
      const int64_t b2 = cpu::lstm_inference_onednn_count();
      variable_list g = n32.fwd(xu.to(kFloat32), Tensor(), Tensor());
      EXPECT_EQ(cpu::lstm_inference_onednn_count() - b2, c.layers * D) << c.str();
      for (size_t i = 0; i < 3; ++i)
        tensor::testing::expect_near(vals(g[i]), vals(w[i]), 2e-5, c.str() + " unbatched " + std::to_string(i));
    }
  }
  // Packed sequences: equal lengths run on oneDNN, unequal ones on the fused loop; both match.
  Cfg c{Kind::LSTM, 1, true};
  Net n32 = make_net(c, I, H, kFloat32), n64 = make_net(c, I, H, kFloat64);
  for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{T, T, T}, std::vector<int64_t>{T, 5, 2}}) {
    Tensor x64 = random_tensor({T, B, I}, 34, -2, 2);
    auto p64 = rnn_utils::pack_padded_sequence(x64, tensor::tensor(lengths), false, true);
    auto p32 = rnn_utils::pack_padded_sequence(x64.to(kFloat32), tensor::tensor(lengths), false, true);
    variable_list want;
    {
      FusedRNNGuard off(true);
      NoGradGuard ng;
      want = n64.fwd_packed(p64, Tensor(), Tensor());
    }
    NoGradGuard ng;
    const int64_t before = cpu::lstm_inference_onednn_count();
    variable_list got = n32.fwd_packed(p32, Tensor(), Tensor());
    const bool equal = lengths[2] == T;
    EXPECT_EQ(cpu::lstm_inference_onednn_count() - before, equal ? 2 : 0);
    for (size_t i = 0; i < 3; ++i)
      tensor::testing::expect_near(vals(got[i]), vals(want[i]), 2e-5, "packed output " + std::to_string(i));
  }
}
