// Ported-program tests of nn::utils::rnn (PackedSequence, pack_padded_sequence,
// pad_packed_sequence, pad_sequence, pack_sequence) and of nn::RNN / LSTM / GRU on packed input
// (forward_with_packed_input), written as a libtorch program would be; reference values from
// real PyTorch (tests/reference/torch_packed.py -> torch_packed_ref.h).
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/reference/torch_packed_ref.h"
#include "tests/port_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::det;
using tensor::testing::strided;
namespace nn = tensor::nn;
namespace F = tensor::nn::functional;
namespace rnn_utils = tensor::nn::utils::rnn;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;
using tensor::testing::expect_near;
using tensor::testing::vals;
using namespace torch_packed_ref;

namespace {

Tensor wsum(const Tensor& t, int seed) { return (t * det(t.sizes().vec(), seed)).sum(); }

std::vector<double> ivals(const Tensor& t) { return vals(t.to(kFloat64)); }

void fill_params(nn::Module& m) {
  NoGradGuard no_grad;
  int k = 0;
  for (auto& p : m.named_parameters()) {
    Tensor v = p.value();
    v.copy_(det(v.sizes().vec(), 100 + k++, -0.5, 0.5));
  }
}

const std::vector<int64_t> kLengths = {5, 3, 2, 4};

}  // namespace

// ---- packing ----

TEST(PortNNPacked, PackPaddedSequenceSorted) {
  for (bool non_contiguous : {false, true}) {
    Tensor x = det({4, 3, 2}, 1);
    if (non_contiguous) x = strided(x);
    x.requires_grad_(true);
    rnn_utils::PackedSequence p = rnn_utils::pack_padded_sequence(x, tensor::tensor({4, 2, 1}));
    EXPECT_EQ(p.batch_sizes().dtype(), kInt64);
    EXPECT_EQ(p.batch_sizes().device().type(), kCPU);
    EXPECT_FALSE(p.sorted_indices().defined());
    EXPECT_FALSE(p.unsorted_indices().defined());
    EXPECT_FALSE(p.is_cuda());
    expect_near(vals(p.data()), pack_sorted_data, 0, "packed data");
    expect_near(ivals(p.batch_sizes()), pack_sorted_batch_sizes, 0, "batch_sizes");
    auto g = autograd::grad({wsum(p.data(), 7)}, {x});
    expect_near(vals(g[0]), pack_sorted_grad, 1e-15, "grad through packing");
  }
}

TEST(PortNNPacked, PackUnsortedAndPadBack) {
  for (bool non_contiguous : {false, true}) {
    Tensor x = det({3, 4, 2}, 2);
    if (non_contiguous) x = strided(x);
    x.requires_grad_(true);
    auto p = rnn_utils::pack_padded_sequence(x, tensor::tensor({2, 4, 1}, kInt32), /*batch_first=*/true,
                                             /*enforce_sorted=*/false);
    expect_near(vals(p.data()), pack_unsorted_data, 0, "packed data");
    expect_near(ivals(p.batch_sizes()), pack_unsorted_batch_sizes, 0, "batch_sizes");
    expect_near(ivals(p.sorted_indices()), pack_unsorted_sorted_indices, 0, "sorted_indices");
    expect_near(ivals(p.unsorted_indices()), pack_unsorted_unsorted_indices, 0, "unsorted_indices");
    auto [padded, lengths] = rnn_utils::pad_packed_sequence(p, /*batch_first=*/true, /*padding_value=*/-1.0,
                                                            /*total_length=*/5);
    EXPECT_EQ(padded.sizes(), IntArrayRef({3, 5, 2}));
    EXPECT_EQ(lengths.dtype(), kInt64);
    expect_near(vals(padded), pad_unsorted_out, 0, "padded");
    expect_near(ivals(lengths), pad_unsorted_lengths, 0, "lengths");
    auto g = autograd::grad({wsum(padded, 7)}, {x});
    expect_near(vals(g[0]), pad_unsorted_grad, 1e-15, "grad through pack and pad");
  }
}

TEST(PortNNPacked, PadSequenceAndPackSequence) {
  std::vector<Tensor> seqs = {det({3, 2}, 3).requires_grad_(true), det({1, 2}, 4).requires_grad_(true),
                              det({2, 2}, 5).requires_grad_(true)};
  Tensor out = rnn_utils::pad_sequence(seqs, false, 0.5);
  EXPECT_EQ(out.sizes(), IntArrayRef({3, 3, 2}));
  expect_near(vals(out), pad_sequence_out, 0, "pad_sequence");
  auto g = autograd::grad({wsum(out, 7)}, seqs);
  expect_near(vals(g[0]), pad_sequence_grad0, 1e-15, "pad_sequence grad 0");
  expect_near(vals(g[1]), pad_sequence_grad1, 1e-15, "pad_sequence grad 1");
  expect_near(vals(g[2]), pad_sequence_grad2, 1e-15, "pad_sequence grad 2");
  expect_near(vals(rnn_utils::pad_sequence(seqs, true)), pad_sequence_bf_out, 0, "pad_sequence batch_first");
  expect_near(vals(rnn_utils::pad_sequence(seqs, true, -2.0, "left")), pad_sequence_left_out, 0,
              "pad_sequence left");
  auto p = rnn_utils::pack_sequence(seqs, /*enforce_sorted=*/false);
  expect_near(vals(p.data()), pack_sequence_data, 0, "pack_sequence");
  expect_near(ivals(p.batch_sizes()), pack_sequence_batch_sizes, 0, "pack_sequence batch_sizes");
  // Round trip in the original order.
  auto [back, lengths] = rnn_utils::pad_packed_sequence(p);
  expect_near(vals(back), vals(rnn_utils::pad_sequence(seqs)), 0, "pack_sequence round trip");
  expect_near(ivals(lengths), {3, 1, 2}, 0, "pack_sequence lengths");
}

TEST(PortNNPacked, PackedSequenceTo) {
  auto p = rnn_utils::pack_sequence({det({3, 2}, 3), det({1, 2}, 4)});
  auto same = p.to(kFloat64);
  EXPECT_TRUE(same.data().is_same(p.data()));
  auto f = p.to(kFloat32);
  EXPECT_EQ(f.data().dtype(), kFloat32);
  EXPECT_TRUE(f.batch_sizes().is_same(p.batch_sizes()));
  EXPECT_TRUE(p.cpu().data().is_same(p.data()));
  expect_near(vals(rnn_utils::invert_permutation(tensor::tensor({2, 0, 1}))), {1, 2, 0}, 0, "invert_permutation");
  EXPECT_FALSE(rnn_utils::invert_permutation(Tensor()).defined());
}

TEST(PortNNPacked, BadInputRaises) {
  Tensor x = det({4, 3, 2}, 1);
  expect_error([&] { rnn_utils::pack_padded_sequence(x, tensor::tensor({2, 4, 1})); },
               {"pack_padded_sequence", "sorted in decreasing order", "enforce_sorted"});
  expect_error([&] { rnn_utils::pack_padded_sequence(x, tensor::tensor({4, 2, 0})); },
               {"pack_padded_sequence", "greater than 0"});
  expect_error([&] { rnn_utils::pack_padded_sequence(x, tensor::tensor({4, 2})); },
               {"pack_padded_sequence", "len(lengths)", "batch_size=3"});
  expect_error([&] { rnn_utils::pack_padded_sequence(x, tensor::tensor({5, 2, 1})); },
               {"pack_padded_sequence", "5", "[4, 3, 2]"});
  expect_error([&] { rnn_utils::pack_padded_sequence(x, tensor::tensor({4.0, 2.0, 1.0})); },
               {"pack_padded_sequence", "lengths", "float32"});
  auto p = rnn_utils::pack_padded_sequence(x, tensor::tensor({4, 2, 1}));
  expect_error([&] { rnn_utils::pad_packed_sequence(p, false, 0.0, 3); },
               {"pad_packed_sequence", "total_length=3", "4"});
  expect_error([&] { rnn_utils::pad_sequence(std::vector<Tensor>{}); }, {"pad_sequence", "empty"});
  expect_error([&] { rnn_utils::pad_sequence({det({3, 2}, 1), det({3, 3}, 1)}); },
               {"pad_sequence", "[3, 3]", "[3, 2]"});
  expect_error([&] { rnn_utils::pad_sequence({det({3, 2}, 1)}, false, 0, "middle"); }, {"pad_sequence", "middle"});
  expect_error([&] { rnn_utils::PackedSequence(p.data(), p.batch_sizes().to(kFloat64)); },
               {"PackedSequence", "batch_sizes"});
  nn::LSTM lstm(nn::LSTMOptions(3, 4));
  expect_error([&] { lstm->forward_with_packed_input(p); }, {"LSTM", "input_size", "3", "2"});
  auto p3 = rnn_utils::pack_padded_sequence(det({4, 3, 3}, 1).to(kFloat32), tensor::tensor({4, 2, 1}));
  expect_error([&] { lstm->forward_with_packed_input(p3.to(kFloat64)); }, {"LSTM", "dtype"});
  auto p64 = p3.to(kFloat64);
  lstm->to(kFloat64);
  expect_error([&] { lstm->forward_with_packed_input(p64, std::make_tuple(zeros({1, 2, 4}, kFloat64), zeros({1, 2, 4}, kFloat64))); },
               {"LSTM", "hidden", "[1, 3, 4]", "[1, 2, 4]"});
}

// ---- recurrent layers on packed input ----

namespace {

struct RnnRef {
  const std::vector<double>& out;
  const std::vector<double>& h_n;
  const std::vector<double>* c_n;
  const std::vector<double>& grad_x;
  const std::vector<double>& grad_h0;
  const std::vector<double>* grad_c0;
  const std::vector<double>& grad_w;
};

// Runs forward_with_packed_input on the packed batch of torch_packed.py's rnn_case and compares
// output data, final states and gradients with PyTorch's; then checks that every sequence's
// output rows and final state equal running that sequence alone through forward.
template <class M>
void expect_packed_rnn(const std::string& what, M& module, bool lstm, int64_t layers, int64_t width,
                       int64_t hidden, const RnnRef& ref) {
  module->to(kFloat64);
  fill_params(*module);
  Tensor x = det({4, 5, 3}, 20).requires_grad_(true);
  Tensor h0 = det({layers, 4, width}, 21, -0.5, 0.5).requires_grad_(true);
  Tensor c0 = det({layers, 4, hidden}, 22, -0.5, 0.5).requires_grad_(true);
  auto packed = rnn_utils::pack_padded_sequence(x, tensor::tensor(kLengths), /*batch_first=*/true,
                                                /*enforce_sorted=*/false);
  rnn_utils::PackedSequence out = packed;
  Tensor h_n, c_n;
  if constexpr (std::is_same_v<M, nn::LSTM>) {
    auto [o, hc] = module->forward_with_packed_input(packed, std::make_tuple(h0, c0));
    out = o;
    std::tie(h_n, c_n) = hc;
  } else {
    std::tie(out, h_n) = module->forward_with_packed_input(packed, h0);
  }
  EXPECT_TRUE(out.batch_sizes().is_same(packed.batch_sizes()));
  EXPECT_TRUE(out.sorted_indices().is_same(packed.sorted_indices()));
  expect_near(vals(out.data()), ref.out, 1e-12, what + " output");
  expect_near(vals(h_n), ref.h_n, 1e-12, what + " h_n");
  Tensor loss = wsum(out.data(), 7) + wsum(h_n, 8);
  std::vector<Tensor> wrt = {x, h0};
  if (lstm) {
    expect_near(vals(c_n), *ref.c_n, 1e-12, what + " c_n");
    loss = loss + wsum(c_n, 9);
    wrt.push_back(c0);
  }
  wrt.push_back(module->named_parameters()["weight_hh_l0"]);
  auto g = autograd::grad({loss}, wrt);
  expect_near(vals(g[0]), ref.grad_x, 1e-11, what + " grad x");
  expect_near(vals(g[1]), ref.grad_h0, 1e-11, what + " grad h0");
  if (lstm) expect_near(vals(g[2]), *ref.grad_c0, 1e-11, what + " grad c0");
  expect_near(vals(g.back()), ref.grad_w, 1e-11, what + " grad weight_hh_l0");

  // Each sequence alone, through the padded forward.
  NoGradGuard no_grad;
  auto [padded, lengths] = rnn_utils::pad_packed_sequence(out, /*batch_first=*/true);
  for (int64_t b = 0; b < 4; ++b) {
    const int64_t len = kLengths[static_cast<size_t>(b)];
    Tensor xb = x.select(0, b).narrow(0, 0, len).unsqueeze(1);
    Tensor hb = h0.narrow(1, b, 1), cb = c0.narrow(1, b, 1);
    Tensor ob, hnb, cnb;
    if constexpr (std::is_same_v<M, nn::LSTM>) {
      auto [o, hc] = module->forward(xb, std::make_tuple(hb, cb));
      ob = o;
      std::tie(hnb, cnb) = hc;
      expect_near(vals(c_n.narrow(1, b, 1)), vals(cnb), 1e-13, what + " c_n alone " + std::to_string(b));
    } else {
      std::tie(ob, hnb) = module->forward(xb, hb);
    }
    expect_near(vals(padded.select(0, b).narrow(0, 0, len)), vals(ob.squeeze(1)), 1e-13,
                what + " output alone " + std::to_string(b));
    expect_near(vals(h_n.narrow(1, b, 1)), vals(hnb), 1e-13, what + " h_n alone " + std::to_string(b));
    EXPECT_EQ(lengths[b].item<int64_t>(), len);
  }
}

}  // namespace

TEST(PortNNPacked, LSTMPackedMatchesPyTorchAndEachSequenceAlone) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  expect_packed_rnn("LSTM", lstm, true, 4, 4, 4,
                    {lstm_out, lstm_h_n, &lstm_c_n, lstm_grad_x, lstm_grad_h0, &lstm_grad_c0, lstm_grad_weight_hh_l0});
  nn::LSTM proj(nn::LSTMOptions(3, 4).bidirectional(true).proj_size(2));
  expect_packed_rnn("LSTM proj", proj, true, 2, 2, 4,
                    {lstm_proj_out, lstm_proj_h_n, &lstm_proj_c_n, lstm_proj_grad_x, lstm_proj_grad_h0,
                     &lstm_proj_grad_c0, lstm_proj_grad_weight_hh_l0});
}

TEST(PortNNPacked, GRUPackedMatchesPyTorchAndEachSequenceAlone) {
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
  expect_packed_rnn("GRU", gru, false, 4, 4, 4,
                    {gru_out, gru_h_n, nullptr, gru_grad_x, gru_grad_h0, nullptr, gru_grad_weight_hh_l0});
}

TEST(PortNNPacked, RNNPackedMatchesPyTorchAndEachSequenceAlone) {
  nn::RNN tanh_rnn(nn::RNNOptions(3, 4).num_layers(2));
  expect_packed_rnn("RNN tanh", tanh_rnn, false, 2, 4, 4,
                    {rnn_tanh_out, rnn_tanh_h_n, nullptr, rnn_tanh_grad_x, rnn_tanh_grad_h0, nullptr,
                     rnn_tanh_grad_weight_hh_l0});
  nn::RNN relu_rnn(nn::RNNOptions(3, 4).nonlinearity(tensor::kReLU).bidirectional(true));
  expect_packed_rnn("RNN relu", relu_rnn, false, 2, 4, 4,
                    {rnn_relu_out, rnn_relu_h_n, nullptr, rnn_relu_grad_x, rnn_relu_grad_h0, nullptr,
                     rnn_relu_grad_weight_hh_l0});
}

TEST(PortNNPacked, PackedInputIgnoresBatchFirst) {
  // A packed batch has no batch dim to place: batch_first changes nothing, as in libtorch.
  nn::GRU a(nn::GRUOptions(3, 4)), b(nn::GRUOptions(3, 4).batch_first(true));
  a->to(kFloat64);
  b->to(kFloat64);
  fill_params(*a);
  fill_params(*b);
  auto packed = rnn_utils::pack_sequence({det({4, 3}, 50), det({2, 3}, 51), det({3, 3}, 52)}, false);
  auto [oa, ha] = a->forward_with_packed_input(packed);
  auto [ob, hb] = b->forward_with_packed_input(packed);
  expect_near(vals(oa.data()), vals(ob.data()), 0, "batch_first output");
  expect_near(vals(ha), vals(hb), 0, "batch_first h_n");
  EXPECT_EQ(ha.sizes(), IntArrayRef({1, 3, 4}));
}

TEST(PortNNPacked, PackedLSTMGradcheck) {
  nn::LSTM lstm(nn::LSTMOptions(2, 3).bidirectional(true));
  lstm->to(kFloat64);
  fill_params(*lstm);
  Tensor x = det({3, 3, 2}, 30).requires_grad_(true);  // [T, B, I], lengths 3, 1, 2
  auto f = [&](const variable_list& in) {
    auto packed = rnn_utils::pack_padded_sequence(in[0], tensor::tensor({3, 1, 2}), false, false);
    auto [out, hc] = lstm->forward_with_packed_input(packed);
    auto [padded, lengths] = rnn_utils::pad_packed_sequence(out, false, 0.25);
    return tensor::cat({padded.reshape({-1}), std::get<0>(hc).reshape({-1}), std::get<1>(hc).reshape({-1})});
  };
  check("packed LSTM gradcheck", [&] { return autograd::gradcheck(f, {x}); });
}

// ---- bicubic interpolation ----

namespace {

// Float64 reference of PyTorch's bicubic resize, written from the definition: each output
// pixel's source position, the Keys kernel W (A = -0.75) of the distance to each of the 4
// nearest input positions per dim, positions outside the input clamped to the border.
std::vector<double> bicubic_reference(const Tensor& x, int64_t oh, int64_t ow, bool align_corners,
                                      std::optional<double> sh = std::nullopt,
                                      std::optional<double> sw = std::nullopt) {
  const double A = -0.75;
  auto W = [A](double d) {
    d = std::abs(d);
    if (d <= 1) return (A + 2) * d * d * d - (A + 3) * d * d + 1;
    if (d < 2) return A * d * d * d - 5 * A * d * d + 8 * A * d - 4 * A;
    return 0.0;
  };
  auto source = [&](int64_t o, int64_t in, int64_t out, std::optional<double> s) {
    if (align_corners) return out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    const double step = s.has_value() ? 1.0 / *s : static_cast<double>(in) / static_cast<double>(out);
    return (static_cast<double>(o) + 0.5) * step - 0.5;
  };
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  Tensor xc = x.contiguous();
  const std::vector<double> v = vals(xc);
  std::vector<double> out;
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo) {
        const double sy = source(y, h, oh, sh), sx = source(xo, w, ow, sw);
        const int64_t by = static_cast<int64_t>(std::floor(sy)), bx = static_cast<int64_t>(std::floor(sx));
        double acc = 0;
        for (int64_t ky = -1; ky <= 2; ++ky)
          for (int64_t kx = -1; kx <= 2; ++kx) {
            const int64_t iy = std::clamp<int64_t>(by + ky, 0, h - 1), ix = std::clamp<int64_t>(bx + kx, 0, w - 1);
            acc += W(sy - static_cast<double>(by + ky)) * W(sx - static_cast<double>(bx + kx)) *
                   v[static_cast<size_t>(p * h * w + iy * w + ix)];
          }
        out.push_back(acc);
      }
  return out;
}

using IOpt = F::InterpolateFuncOptions;

void expect_bicubic(const std::string& what, const IOpt& opt, const std::vector<double>& out_ref,
                    const std::vector<double>& grad_ref, const std::vector<double>& loop) {
  for (bool non_contiguous : {false, true}) {
    Tensor img = det({2, 3, 4, 5}, 40, -2, 2);
    if (non_contiguous) img = strided(img);
    img.requires_grad_(true);
    Tensor out = F::interpolate(img, opt);
    const std::string w = what + (non_contiguous ? " (strided)" : "");
    expect_near(vals(out), out_ref, 1e-12, w + " output");
    expect_near(vals(out), loop, 1e-12, w + " against the float64 loop");
    auto g = autograd::grad({wsum(out, 7)}, {img});
    expect_near(vals(g[0]), grad_ref, 1e-12, w + " grad");
  }
}

}  // namespace

TEST(PortNNPacked, BicubicInterpolateMatchesPyTorch) {
  Tensor img = det({2, 3, 4, 5}, 40, -2, 2);
  expect_bicubic("bicubic size", IOpt().size(std::vector<int64_t>{7, 9}).mode(kBicubic).align_corners(false),
                 bicubic_size_out, bicubic_size_grad, bicubic_reference(img, 7, 9, false));
  expect_bicubic("bicubic align_corners", IOpt().size(std::vector<int64_t>{3, 8}).mode(kBicubic).align_corners(true),
                 bicubic_align_out, bicubic_align_grad, bicubic_reference(img, 3, 8, true));
  expect_bicubic("bicubic scale_factor", IOpt().scale_factor(std::vector<double>{1.5, 0.6}).mode(kBicubic),
                 bicubic_scale_out, bicubic_scale_grad, bicubic_reference(img, 6, 3, false, 1.5, 0.6));
  expect_bicubic("bicubic recompute_scale_factor",
                 IOpt().scale_factor(std::vector<double>{2.3}).mode(kBicubic).recompute_scale_factor(true),
                 bicubic_recompute_out, bicubic_recompute_grad, bicubic_reference(img, 9, 11, false));
  // float32 computes in float, as PyTorch's kernel (whose float32 result is itself up to 1.8e-6
  // off its float64 one here), so it matches to float32 rounding, not bit for bit.
  Tensor out32 = F::interpolate(img.to(kFloat32), IOpt().size(std::vector<int64_t>{7, 9}).mode(kBicubic));
  EXPECT_EQ(out32.dtype(), kFloat32);
  expect_near(vals(out32), bicubic_size_f32_out, 5e-6, "bicubic float32");
  expect_near(vals(out32), bicubic_size_out, 5e-6, "bicubic float32 against float64");
  // The half types compute in float and round once per output.
  for (ScalarType dt : {kBFloat16, kFloat16}) {
    Tensor outh = F::interpolate(img.to(dt), IOpt().size(std::vector<int64_t>{7, 9}).mode(kBicubic));
    EXPECT_EQ(outh.dtype(), dt);
    expect_near(vals(outh.to(kFloat64)), bicubic_size_out, dt == kBFloat16 ? 2e-2 : 3e-3, "bicubic half types");
  }
  // nn::Upsample.
  nn::Upsample up(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0}).mode(kBicubic).align_corners(true));
  Tensor small = det({1, 2, 3, 3}, 41);
  expect_near(vals(up->forward(small)), upsample_bicubic_out, 1e-12, "Upsample bicubic");
  expect_near(vals(up->forward(small)), bicubic_reference(small, 6, 6, true), 1e-12, "Upsample bicubic loop");
  // Same size without align_corners is the identity; one output pixel with align_corners reads (0, 0).
  expect_near(vals(tensor::upsample_bicubic2d(img, {4, 5}, false)), vals(img), 1e-15, "identity");
  expect_near(vals(tensor::upsample_bicubic2d(img, {1, 1}, true)), vals(img.narrow(2, 0, 1).narrow(3, 0, 1)), 0,
              "1x1 align_corners");
}

TEST(PortNNPacked, BicubicOpBackwardMetaAndErrors) {
  // The backward op is the adjoint: <up(x), g> == <x, up_backward(g)>.
  Tensor x = det({1, 2, 4, 3}, 42), g = det({1, 2, 6, 7}, 43);
  for (bool ac : {false, true}) {
    Tensor gx = tensor::upsample_bicubic2d_backward(g, {6, 7}, {1, 2, 4, 3}, ac);
    const double lhs = (tensor::upsample_bicubic2d(x, {6, 7}, ac) * g).sum().item<double>();
    const double rhs = (x * gx).sum().item<double>();
    EXPECT_NEAR(lhs, rhs, 1e-12) << "adjoint, align_corners " << ac;
  }
  // Gradcheck and gradgradcheck (the backward op's own derivative).
  Tensor xr = det({1, 1, 3, 4}, 44).requires_grad_(true);
  auto f = [](const variable_list& v) { return tensor::upsample_bicubic2d(v[0], {5, 3}, false, 1.7, 0.8); };
  check("bicubic gradcheck", [&] { return autograd::gradcheck(f, {xr}); });
  check("bicubic gradgradcheck", [&] { return autograd::gradgradcheck(f, {xr}); });
  // Meta tensors: shapes and dtypes only.
  Tensor meta = tensor::empty({8, 3, 64, 64}, TensorOptions(kFloat32).device(Device(kMeta)));
  Tensor mo = tensor::upsample_bicubic2d(meta, {128, 96}, false);
  EXPECT_EQ(mo.sizes(), IntArrayRef({8, 3, 128, 96}));
  EXPECT_EQ(mo.dtype(), kFloat32);
  EXPECT_EQ(mo.device().type(), kMeta);
  Tensor mg = tensor::upsample_bicubic2d_backward(mo, {128, 96}, {8, 3, 64, 64}, false);
  EXPECT_EQ(mg.sizes(), IntArrayRef({8, 3, 64, 64}));
  // Bad input names the op, the shapes and the dtypes.
  expect_error([&] { tensor::upsample_bicubic2d(det({2, 3, 4}, 1), {4, 4}, false); },
               {"upsample_bicubic2d", "4D", "[2, 3, 4]"});
  expect_error([&] { tensor::upsample_bicubic2d(x, {4}, false); }, {"upsample_bicubic2d", "output_size", "[4]"});
  expect_error([&] { tensor::upsample_bicubic2d(x, {0, 4}, false); }, {"upsample_bicubic2d", "greater than 0"});
  expect_error([&] { tensor::upsample_bicubic2d(x.to(kInt64), {4, 4}, false); },
               {"upsample_bicubic2d", "floating point", "int64"});
  expect_error([&] { tensor::upsample_bicubic2d_backward(g, {6, 7}, {1, 3, 4, 3}, false); },
               {"upsample_bicubic2d_backward", "[1, 3, 6, 7]", "[1, 2, 6, 7]"});
  expect_error([&] { tensor::upsample_bicubic2d_backward(det({1, 2, 5, 7}, 1), {6, 7}, {1, 2, 4, 3}, false); },
               {"upsample_bicubic2d_backward", "[1, 2, 6, 7]", "[1, 2, 5, 7]"});
  expect_error([&] { F::interpolate(det({1, 2, 3, 4, 5}, 1), IOpt().size(std::vector<int64_t>{2, 2, 2}).mode(kBicubic)); },
               {"interpolate", "bicubic", "4-d"});
}
