// Ported-program test for the recurrent layers (issue 14), in libtorch's spelling: nn::RNN,
// nn::LSTM, nn::GRU (multi-layer, bidirectional, batch_first, unbatched, LSTM proj_size) and
// the cells, against PyTorch's outputs, final states and gradients
// (tests/reference/torch_nn_port.py), a float64 LSTM step written out gate by gate, gradchecks,
// parameter names and shapes, and error messages.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/reference/torch_nn_port_ref.h"
#include "tests/port_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::det;
namespace nn = tensor::nn;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;
using tensor::testing::expect_near;
using tensor::testing::vals;

namespace {

// Converts the module to float64 and fills parameter k (named_parameters order) with
// det(shape, 100 + k, -0.5, 0.5), as the reference script; returns the names joined by ','.
std::string fill_params(nn::Module& m) {
  m.to(kFloat64);
  NoGradGuard g;
  std::string names;
  int k = 0;
  for (auto& item : m.named_parameters()) {
    item.value().copy_(det(item.value().sizes().vec(), 100 + k++, -0.5, 0.5));
    names += (names.empty() ? "" : ",") + item.key();
  }
  return names;
}

// loss = sum(out * det(7)) + sum(state_k * det(8 + k)).
Tensor loss_of(const Tensor& out, const std::vector<Tensor>& states) {
  Tensor loss = (out * det(out.sizes().vec(), 7)).sum();
  for (size_t k = 0; k < states.size(); ++k) loss = loss + (states[k] * det(states[k].sizes().vec(), 8 + static_cast<int>(k))).sum();
  return loss;
}

void expect_grads(const Tensor& loss, const std::vector<Tensor>& wrt, const std::vector<const std::vector<double>*>& want,
                  const std::string& what) {
  auto g = autograd::grad({loss}, wrt);
  ASSERT_EQ(g.size(), want.size());
  for (size_t k = 0; k < g.size(); ++k) expect_near(vals(g[k]), *want[k], 1e-9, what + " grad " + std::to_string(k));
}

Tensor req(const Tensor& t) { return t.detach().clone().requires_grad_(true); }

}  // namespace

TEST(PortNNRnn, RNNMatchesPyTorch) {
  using namespace torch_ref;
  const int64_t T = 4, N = 2, I = 3, H = 5;
  {
    nn::RNN rnn(nn::RNNOptions(I, H).num_layers(2).bidirectional(true));
    EXPECT_EQ(fill_params(*rnn), rnn_tanh_bi2_names);
    Tensor x = req(det({T, N, I}, 60)), h0 = req(det({4, N, H}, 61));
    auto [out, h_n] = rnn->forward(x, h0);
    EXPECT_EQ(out.sizes(), IntArrayRef({T, N, 2 * H}));
    EXPECT_EQ(h_n.sizes(), IntArrayRef({4, N, H}));
    expect_near(vals(out), rnn_tanh_bi2_out, 1e-9, "RNN out");
    expect_near(vals(h_n), rnn_tanh_bi2_state0, 1e-9, "RNN h_n");
    auto p = rnn->named_parameters();
    expect_grads(loss_of(out, {h_n}), {x, h0, p["weight_ih_l0"], p["weight_hh_l1_reverse"], p["bias_hh_l1"]},
                 {&rnn_tanh_bi2_grad0, &rnn_tanh_bi2_grad1, &rnn_tanh_bi2_grad2, &rnn_tanh_bi2_grad3,
                  &rnn_tanh_bi2_grad4},
                 "RNN");
  }
  {
    nn::RNN rnn(nn::RNNOptions(I, H).nonlinearity(kReLU).batch_first(true));
    EXPECT_EQ(fill_params(*rnn), rnn_relu_bf_names);
    Tensor x = req(det({N, T, I}, 62));
    auto [out, h_n] = rnn(x);  // holder call, hx defaults to zeros
    EXPECT_EQ(out.sizes(), IntArrayRef({N, T, H}));
    expect_near(vals(out), rnn_relu_bf_out, 1e-9, "RNN relu batch_first out");
    expect_near(vals(h_n), rnn_relu_bf_state0, 1e-9, "RNN relu h_n");
    expect_grads(loss_of(out, {h_n}), {x, rnn->named_parameters()["weight_hh_l0"]},
                 {&rnn_relu_bf_grad0, &rnn_relu_bf_grad1}, "RNN relu");
  }
  {
    nn::RNN rnn(nn::RNNOptions(I, H).num_layers(2));
    EXPECT_EQ(fill_params(*rnn), rnn_unbatched_names);
    Tensor x = req(det({T, I}, 63)), h0 = req(det({2, H}, 64));
    auto [out, h_n] = rnn->forward(x, h0);
    EXPECT_EQ(out.sizes(), IntArrayRef({T, H}));
    EXPECT_EQ(h_n.sizes(), IntArrayRef({2, H}));
    expect_near(vals(out), rnn_unbatched_out, 1e-9, "RNN unbatched out");
    expect_grads(loss_of(out, {h_n}), {x, h0, rnn->named_parameters()["weight_ih_l1"]},
                 {&rnn_unbatched_grad0, &rnn_unbatched_grad1, &rnn_unbatched_grad2}, "RNN unbatched");
  }
}

TEST(PortNNRnn, LSTMMatchesPyTorch) {
  using namespace torch_ref;
  const int64_t T = 4, N = 2, I = 3, H = 5;
  {
    nn::LSTM lstm(nn::LSTMOptions(I, H).num_layers(2).bidirectional(true));
    EXPECT_EQ(fill_params(*lstm), lstm_bi2_names);
    Tensor x = req(det({T, N, I}, 65)), h0 = req(det({4, N, H}, 66)), c0 = req(det({4, N, H}, 67));
    auto [out, state] = lstm->forward(x, std::make_tuple(h0, c0));
    auto [h_n, c_n] = state;
    EXPECT_EQ(out.sizes(), IntArrayRef({T, N, 2 * H}));
    EXPECT_EQ(c_n.sizes(), IntArrayRef({4, N, H}));
    expect_near(vals(out), lstm_bi2_out, 1e-9, "LSTM out");
    expect_near(vals(h_n), lstm_bi2_state0, 1e-9, "LSTM h_n");
    expect_near(vals(c_n), lstm_bi2_state1, 1e-9, "LSTM c_n");
    auto p = lstm->named_parameters();
    expect_grads(loss_of(out, {h_n, c_n}),
                 {x, h0, c0, p["weight_ih_l0"], p["weight_hh_l0_reverse"], p["bias_ih_l1_reverse"]},
                 {&lstm_bi2_grad0, &lstm_bi2_grad1, &lstm_bi2_grad2, &lstm_bi2_grad3, &lstm_bi2_grad4,
                  &lstm_bi2_grad5},
                 "LSTM");
  }
  {
    nn::LSTM lstm(nn::LSTMOptions(I, H).proj_size(2).batch_first(true).num_layers(2));
    EXPECT_EQ(fill_params(*lstm), lstm_proj_bf_names);
    EXPECT_EQ(lstm->named_parameters()["weight_hh_l0"].sizes(), IntArrayRef({4 * H, 2}));
    EXPECT_EQ(lstm->named_parameters()["weight_ih_l1"].sizes(), IntArrayRef({4 * H, 2}));
    Tensor x = req(det({N, T, I}, 68));
    auto [out, state] = lstm(x);
    auto [h_n, c_n] = state;
    EXPECT_EQ(out.sizes(), IntArrayRef({N, T, 2}));
    EXPECT_EQ(h_n.sizes(), IntArrayRef({2, N, 2}));
    EXPECT_EQ(c_n.sizes(), IntArrayRef({2, N, H}));
    expect_near(vals(out), lstm_proj_bf_out, 1e-9, "LSTM proj out");
    expect_near(vals(h_n), lstm_proj_bf_state0, 1e-9, "LSTM proj h_n");
    expect_near(vals(c_n), lstm_proj_bf_state1, 1e-9, "LSTM proj c_n");
    auto p = lstm->named_parameters();
    expect_grads(loss_of(out, {h_n, c_n}), {x, p["weight_hr_l0"], p["weight_ih_l1"]},
                 {&lstm_proj_bf_grad0, &lstm_proj_bf_grad1, &lstm_proj_bf_grad2}, "LSTM proj");
  }
}

TEST(PortNNRnn, GRUMatchesPyTorch) {
  using namespace torch_ref;
  const int64_t T = 4, N = 2, I = 3, H = 5;
  {
    nn::GRU gru(nn::GRUOptions(I, H).num_layers(2).bidirectional(true));
    EXPECT_EQ(fill_params(*gru), gru_bi2_names);
    Tensor x = req(det({T, N, I}, 69)), h0 = req(det({4, N, H}, 70));
    auto [out, h_n] = gru->forward(x, h0);
    expect_near(vals(out), gru_bi2_out, 1e-9, "GRU out");
    expect_near(vals(h_n), gru_bi2_state0, 1e-9, "GRU h_n");
    auto p = gru->named_parameters();
    expect_grads(loss_of(out, {h_n}), {x, h0, p["weight_ih_l0"], p["weight_hh_l1_reverse"], p["bias_hh_l0"]},
                 {&gru_bi2_grad0, &gru_bi2_grad1, &gru_bi2_grad2, &gru_bi2_grad3, &gru_bi2_grad4}, "GRU");
  }
  {
    nn::GRU gru(nn::GRUOptions(I, H).bias(false));
    EXPECT_EQ(fill_params(*gru), gru_nobias_names);
    Tensor x = req(det({T, N, I}, 71));
    auto [out, h_n] = gru(x);
    expect_near(vals(out), gru_nobias_out, 1e-9, "GRU no bias out");
    expect_grads(loss_of(out, {h_n}), {x, gru->named_parameters()["weight_hh_l0"]},
                 {&gru_nobias_grad0, &gru_nobias_grad1}, "GRU no bias");
  }
}

TEST(PortNNRnn, CellsMatchPyTorch) {
  using namespace torch_ref;
  const int64_t N = 2, I = 3, H = 5;
  {
    nn::RNNCell cell(I, H);
    EXPECT_EQ(fill_params(*cell), rnn_cell_names);
    Tensor x = req(det({N, I}, 72)), h = req(det({N, H}, 73));
    Tensor h1 = cell(x, h);
    expect_near(vals(h1), rnn_cell_out, 1e-9, "RNNCell");
    expect_grads(loss_of(h1, {}), {x, h, cell->weight_ih, cell->bias_hh},
                 {&rnn_cell_grad0, &rnn_cell_grad1, &rnn_cell_grad2, &rnn_cell_grad3}, "RNNCell");
  }
  {
    nn::LSTMCell cell(I, H);
    EXPECT_EQ(fill_params(*cell), lstm_cell_names);
    Tensor x = req(det({N, I}, 74)), h = req(det({N, H}, 75)), c = req(det({N, H}, 76));
    auto [h1, c1] = cell(x, std::make_tuple(h, c));
    expect_near(vals(h1), lstm_cell_out, 1e-9, "LSTMCell h");
    expect_near(vals(c1), lstm_cell_state0, 1e-9, "LSTMCell c");
    expect_grads(loss_of(h1, {c1}), {x, h, c, cell->weight_hh, cell->bias_ih},
                 {&lstm_cell_grad0, &lstm_cell_grad1, &lstm_cell_grad2, &lstm_cell_grad3, &lstm_cell_grad4},
                 "LSTMCell");
  }
  {
    nn::GRUCell cell(I, H);
    EXPECT_EQ(fill_params(*cell), gru_cell_names);
    Tensor x = req(det({N, I}, 77)), h = req(det({N, H}, 78));
    Tensor h1 = cell(x, h);
    expect_near(vals(h1), gru_cell_out, 1e-9, "GRUCell");
    expect_grads(loss_of(h1, {}), {x, h, cell->weight_ih, cell->bias_hh},
                 {&gru_cell_grad0, &gru_cell_grad1, &gru_cell_grad2, &gru_cell_grad3}, "GRUCell");
  }
}

// One LSTMCell step against the gate equations written out in float64 loops.
TEST(PortNNRnn, LSTMCellMatchesHandWrittenGates) {
  const int64_t N = 2, I = 3, H = 2;
  nn::LSTMCell cell(I, H);
  fill_params(*cell);
  Tensor x = det({N, I}, 5), h = det({N, H}, 6), c = det({N, H}, 7);
  auto [h1, c1] = cell(x, std::make_tuple(h, c));
  auto W = vals(cell->weight_ih), U = vals(cell->weight_hh), b1 = vals(cell->bias_ih), b2 = vals(cell->bias_hh);
  auto xv = vals(x), hv = vals(h), cv = vals(c);
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> want_h, want_c;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t j = 0; j < H; ++j) {
      double gate[4];
      for (int64_t g = 0; g < 4; ++g) {
        const int64_t row = g * H + j;
        double s = b1[row] + b2[row];
        for (int64_t k = 0; k < I; ++k) s += W[row * I + k] * xv[n * I + k];
        for (int64_t k = 0; k < H; ++k) s += U[row * H + k] * hv[n * H + k];
        gate[g] = s;
      }
      const double in = sig(gate[0]), f = sig(gate[1]), gg = std::tanh(gate[2]), o = sig(gate[3]);
      const double cn = f * cv[n * H + j] + in * gg;
      want_c.push_back(cn);
      want_h.push_back(o * std::tanh(cn));
    }
  }
  expect_near(vals(h1), want_h, 1e-12, "LSTMCell h");
  expect_near(vals(c1), want_c, 1e-12, "LSTMCell c");
}

TEST(PortNNRnn, Gradchecks) {
  nn::LSTM lstm(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(true));
  fill_params(*lstm);
  Tensor x = det({3, 2, 2}, 9).requires_grad_(true);
  check("LSTM gradcheck wrt input", [&] {
    return autograd::gradcheck([&](const variable_list& in) { return std::get<0>(lstm->forward(in[0])); }, {x});
  });
  nn::GRU gru(nn::GRUOptions(2, 3).batch_first(true));
  fill_params(*gru);
  check("GRU gradcheck wrt input", [&] {
    return autograd::gradcheck([&](const variable_list& in) { return std::get<0>(gru->forward(in[0])); }, {x});
  });
}

TEST(PortNNRnn, OptionsInitAndPrinting) {
  nn::LSTM lstm(nn::LSTMOptions(10, 20).num_layers(2));
  EXPECT_EQ(lstm->named_parameters().size(), 8u);
  EXPECT_EQ(lstm->all_weights().size(), 8u);
  const double bound = 1 / std::sqrt(20.0);
  for (const Tensor& p : lstm->parameters()) {
    EXPECT_EQ(p.dtype(), kFloat32);
    EXPECT_LE(p.abs().max().item<double>(), bound);
  }
  EXPECT_EQ(lstm->named_parameters()["weight_ih_l1"].sizes(), IntArrayRef({80, 20}));
  std::ostringstream s;
  s << *lstm;
  EXPECT_EQ(s.str(),
            "tensor::nn::LSTM(input_size=10, hidden_size=20, num_layers=2, bias=true, batch_first=false, dropout=0, "
            "bidirectional=false)");
  std::ostringstream c;
  c << *nn::GRUCell(3, 4);
  EXPECT_EQ(c.str(), "tensor::nn::GRUCell(3, 4)");
  nn::RNN rnn(nn::RNNOptions(3, 4).bias(false));
  EXPECT_EQ(rnn->named_parameters().size(), 2u);

  // Float32 training step: the layer trains with an optimizer like any module.
  nn::GRU gru(nn::GRUOptions(3, 4).batch_first(true));
  tensor::optim::SGD opt(gru->parameters(), tensor::optim::SGDOptions(0.1));
  Tensor x = randn({2, 5, 3});
  auto loss = [&] { return std::get<0>(gru->forward(x)).pow(2).mean(); };
  Tensor l0 = loss();
  opt.zero_grad();
  l0.backward();
  opt.step();
  EXPECT_LT(loss().item<double>(), l0.item<double>());

  // Inter-layer dropout applies in training only.
  manual_seed(0);
  nn::LSTM drop(nn::LSTMOptions(3, 4).num_layers(2).dropout(0.5));
  drop->eval();
  Tensor a = std::get<0>(drop->forward(x.transpose(0, 1)));
  Tensor b = std::get<0>(drop->forward(x.transpose(0, 1)));
  EXPECT_TRUE(a.equal(b));
}

TEST(PortNNRnn, BadInputRaisesNamedErrors) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4));
  expect_error([&] { lstm->forward(randn({5, 2, 7})); }, {"LSTM", "input_size", "3", "7"});
  expect_error([&] { lstm->forward(randn({5})); }, {"LSTM", "2-d", "3-d", "[5]"});
  expect_error([&] { lstm->forward(randn({5, 2, 3}), std::make_tuple(zeros({1, 3, 4}), zeros({1, 3, 4}))); },
               {"LSTM", "hidden", "[1, 2, 4]", "[1, 3, 4]"});
  expect_error([&] { lstm->forward(randn({5, 2, 3}, kFloat64)); }, {"LSTM", "dtype"});
  nn::GRU gru(3, 4);
  expect_error([&] { gru->forward(randn({5, 2, 3}), zeros({2, 2, 4})); }, {"GRU", "[1, 2, 4]", "[2, 2, 4]"});
  expect_error([&] { nn::GRU(nn::GRUOptions(3, 4).dropout(2)); }, {"GRU", "dropout", "2"});
  expect_error([&] { nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4)); }, {"LSTM", "proj_size", "smaller"});
  nn::GRUCell cell(3, 4);
  expect_error([&] { cell(randn({2, 5})); }, {"GRUCell", "input_size", "5", "3"});
  expect_error([&] { cell(randn({2, 3}), randn({3, 4})); }, {"GRUCell", "hidden", "[2, 4]", "[3, 4]"});
}
