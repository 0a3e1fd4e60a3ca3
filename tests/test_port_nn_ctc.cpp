// Ported-program test for nn (issue 14): nn::CTCLoss / F::ctc_loss / tensor::ctc_loss (a new op,
// _ctc_loss, with a CPU kernel), nn::LocalResponseNorm / F::local_response_norm, nn::CrossMapLRN2d
// and nn::AdaptiveLogSoftmaxWithLoss, in libtorch's spelling. Values and gradients are compared
// with PyTorch's (tests/reference/torch_ctc.py generated tests/reference/torch_ctc_ref.h), and
// the CTC loss with a float64 brute force over every alignment.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/reference/libtorch_cross_map_lrn_ref.h"
#include "tests/reference/torch_ctc_ref.h"
#include "tests/port_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::det;
using tensor::testing::strided;
namespace nn = tensor::nn;
namespace F = tensor::nn::functional;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;
using tensor::testing::expect_near;
using tensor::testing::vals;

namespace {

using Fn = std::function<Tensor(const Tensor&)>;

// f(x) and the gradient of sum(f(x) * det(out.shape, 7)) (0.75 * out for a 0-dim out) against
// PyTorch's, on x and on a strided copy of x.
void expect_case(const std::string& what, const Fn& f, const Tensor& x0, const std::vector<double>& out_ref,
                 const std::vector<double>* grad_ref, double tol = 1e-9) {
  for (bool s : {false, true}) {
    Tensor x = (s ? strided(x0) : x0.clone()).detach().requires_grad_(grad_ref != nullptr);
    const std::string w = what + (s ? " (strided)" : "");
    Tensor out = f(x);
    expect_near(vals(out), out_ref, tol, w + " output");
    if (grad_ref == nullptr) continue;
    Tensor loss = out.dim() > 0 ? (out * det(out.sizes().vec(), 7)).sum() : out * 0.75;
    auto g = autograd::grad({loss}, {x});
    expect_near(vals(g[0]), *grad_ref, tol, w + " grad");
  }
}

}  // namespace

// ---- LocalResponseNorm and CrossMapLRN2d ----

TEST(PortNNCtc, LocalResponseNormMatchesPyTorch) {
  using namespace torch_ctc_ref;
  Tensor x3 = det({2, 6, 5}, 1, -2, 2), x4 = det({2, 7, 3, 2}, 2, -2, 2), x5 = det({1, 5, 2, 3, 2}, 3, -2, 2);
  expect_case("F::local_response_norm 3-d",
              [](const Tensor& x) { return F::local_response_norm(x, F::LocalResponseNormFuncOptions(3).alpha(0.3).beta(0.6).k(1.5)); },
              x3, lrn3_out, &lrn3_grad0);
  nn::LocalResponseNorm m4(nn::LocalResponseNormOptions(4).alpha(0.5).beta(0.75).k(2.0));
  expect_case("nn::LocalResponseNorm 4-d", [&](const Tensor& x) { return m4(x); }, x4, lrn4_out, &lrn4_grad0);
  nn::LocalResponseNorm m5(2);  // libtorch's defaults: alpha 1e-4, beta 0.75, k 1
  EXPECT_EQ(m5->options.alpha(), 1e-4);
  EXPECT_EQ(m5->options.beta(), 0.75);
  EXPECT_EQ(m5->options.k(), 1.0);
  expect_case("nn::LocalResponseNorm 5-d", [&](const Tensor& x) { return m5->forward(x); }, x5, lrn5_out, &lrn5_grad0);
  // float32 follows float64 to float precision.
  expect_near(vals(m4(x4.to(kFloat32))), lrn4_out, 1e-5, "LocalResponseNorm float32");
  check("local_response_norm gradgradcheck", [&] {
    return autograd::gradgradcheck(
        [](const variable_list& in) { return F::local_response_norm(in[0], F::LocalResponseNormFuncOptions(3).alpha(0.5)); },
        {det({1, 4, 3}, 8, -2, 2).requires_grad_(true)});
  });
  std::ostringstream os;
  os << *m4;
  EXPECT_EQ(os.str(), "tensor::nn::LocalResponseNorm(4, alpha=0.5, beta=0.75, k=2)");
}

// Note [CrossMapLRN2d's backward] (src/nn/LRN.cpp): libtorch's hand-written backward, which
// PyTorch's Python shares for odd sizes; for even sizes Python's window differs by one channel,
// so size 4's gradient is checked against libtorch C++'s
// (tests/reference/libtorch_cross_map_lrn.cpp generated libtorch_cross_map_lrn_ref.h).
TEST(PortNNCtc, CrossMapLRN2dMatchesLibtorch) {
  using namespace torch_ctc_ref;
  using namespace libtorch_ref;
  Tensor x4 = det({2, 7, 3, 2}, 2, -2, 2);
  nn::CrossMapLRN2d m3(nn::CrossMapLRN2dOptions(3).alpha(0.4).beta(0.7).k(2));
  expect_case("nn::CrossMapLRN2d size 3", [&](const Tensor& x) { return m3(x); }, x4, cmlrn3_out, &cmlrn3_grad0);
  expect_case("nn::CrossMapLRN2d size 3 (libtorch)", [&](const Tensor& x) { return m3(x); }, x4, libtorch_cmlrn3_out,
              &libtorch_cmlrn3_grad0);
  nn::CrossMapLRN2d m4(nn::CrossMapLRN2dOptions(4).alpha(0.4).beta(0.7).k(2));
  expect_case("nn::CrossMapLRN2d size 4 (libtorch)", [&](const Tensor& x) { return m4(x); }, x4, libtorch_cmlrn4_out,
              &libtorch_cmlrn4_grad0);
  expect_near(vals(m4(x4)), cmlrn4_out, 1e-12, "CrossMapLRN2d size 4 output (PyTorch)");
  nn::CrossMapLRN2d d(5);
  EXPECT_EQ(d->options.k(), 1);
  EXPECT_EQ(d->options.alpha(), 1e-4);
  EXPECT_EQ(d->options.beta(), 0.75);
  // float32 follows float64 to float precision.
  expect_near(vals(m3(x4.to(kFloat32))), cmlrn3_out, 1e-5, "CrossMapLRN2d float32");
  // libtorch's backward is not the derivative (its window is shifted), so no gradcheck: the
  // finite differences disagree even on 2 channels.
  Tensor x = det({1, 2, 2, 2}, 9, -2, 2).requires_grad_(true);
  expect_error([&] { autograd::gradcheck([&](const variable_list& in) { return m3(in[0]); }, {x}); },
               {"Jacobian mismatch"});
}

TEST(PortNNCtc, LocalResponseNormBadInput) {
  expect_error([] { F::local_response_norm(zeros({2, 3}), F::LocalResponseNormFuncOptions(2)); },
               {"local_response_norm", "3-d", "[2, 3]", "float32"});
  expect_error([] { F::local_response_norm(zeros({2, 3, 4}, kInt64), F::LocalResponseNormFuncOptions(2)); },
               {"local_response_norm", "int64", "[2, 3, 4]"});
  expect_error([] { F::local_response_norm(zeros({2, 3, 4}), F::LocalResponseNormFuncOptions(0)); },
               {"local_response_norm", "size", "0"});
  nn::CrossMapLRN2d m(3);
  expect_error([&] { m(zeros({2, 3, 4})); }, {"CrossMapLRN2d", "4-d", "[2, 3, 4]", "float32"});
}

// ---- CTCLoss ----

namespace {

// float64 brute force: -log of the summed probability of every path over the T steps whose
// collapse (merge repeats, then drop blanks) is the target.
double ctc_brute(const Tensor& lp /* (T, C) float64 */, const std::vector<int64_t>& target, int64_t blank) {
  const int64_t T = lp.size(0), C = lp.size(1);
  std::vector<double> p = vals(lp);
  int64_t paths = 1;
  for (int64_t t = 0; t < T; ++t) paths *= C;
  double total = 0;
  for (int64_t code = 0; code < paths; ++code) {
    std::vector<int64_t> path(static_cast<size_t>(T));
    int64_t r = code;
    double logp = 0;
    for (int64_t t = 0; t < T; ++t) {
      path[static_cast<size_t>(t)] = r % C;
      r /= C;
      logp += p[static_cast<size_t>(t * C + path[static_cast<size_t>(t)])];
    }
    std::vector<int64_t> collapsed;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t c = path[static_cast<size_t>(t)];
      if (c != blank && (t == 0 || c != path[static_cast<size_t>(t - 1)])) collapsed.push_back(c);
    }
    if (collapsed == target) total += std::exp(logp);
  }
  return -std::log(total);
}

const std::vector<int64_t> kIl = {6, 5, 4}, kTl = {3, 2, 0};
Tensor padded_targets() { return tensor::tensor({{1, 1, 2}, {3, 4, 0}, {2, 0, 0}}); }

}  // namespace

TEST(PortNNCtc, CTCLossMatchesBruteForce) {
  // T = 5, C = 3 (243 paths per sample), targets with a repeat, a skip and the empty target,
  // blank 0 and blank 2, inputs shorter than T.
  Tensor x = det({5, 4, 3}, 11, -2, 2);
  Tensor lp = log_softmax(x, 2);
  Tensor targets = tensor::tensor({{1, 1}, {2, 1}, {1, 0}, {0, 0}});
  const std::vector<int64_t> il = {5, 4, 5, 3}, tl = {2, 2, 1, 0};
  for (int64_t blank : {0, 2}) {
    Tensor tg = blank == 0 ? targets : tensor::tensor({{1, 1}, {0, 1}, {1, 0}, {0, 0}});
    Tensor nll = tensor::ctc_loss(lp, tg, il, tl, blank, Reduction::None);
    std::vector<double> got = vals(nll);
    for (int64_t b = 0; b < 4; ++b) {
      std::vector<int64_t> t;
      for (int64_t i = 0; i < tl[static_cast<size_t>(b)]; ++i) t.push_back(tg[b][i].item<int64_t>());
      const double want = ctc_brute(lp.select(1, b).narrow(0, 0, il[static_cast<size_t>(b)]), t, blank);
      EXPECT_NEAR(got[static_cast<size_t>(b)], want, 1e-12 * (1 + std::fabs(want))) << "blank " << blank << " sample " << b;
    }
  }
  // Unnormalized log_probs too (the recursion does not assume a distribution).
  Tensor raw = det({4, 1, 3}, 12, -2, 2);
  const double want = ctc_brute(raw.select(1, 0), {2}, 0);
  EXPECT_NEAR(tensor::ctc_loss(raw, tensor::tensor({{2}}), {4}, {1}, 0, Reduction::Sum).item<double>(), want, 1e-12);
}

TEST(PortNNCtc, CTCLossMatchesPyTorch) {
  using namespace torch_ctc_ref;
  Tensor x = det({6, 3, 5}, 4, -2, 2);
  Tensor tg = padded_targets();
  Tensor il = tensor::tensor(std::vector<int64_t>(kIl)), tl = tensor::tensor(std::vector<int64_t>(kTl));
  // Through log_softmax, the documented use.
  nn::CTCLoss mean_loss;  // blank 0, kMean, zero_infinity false
  expect_case("nn::CTCLoss kMean", [&](const Tensor& v) { return mean_loss(log_softmax(v, 2), tg, il, tl); }, x,
              ctc_mean_out, &ctc_mean_grad0);
  expect_case("F::ctc_loss kSum",
              [&](const Tensor& v) { return F::ctc_loss(log_softmax(v, 2), tg, il, tl, F::CTCLossFuncOptions().reduction(tensor::kSum)); },
              x, ctc_sum_out, &ctc_sum_grad0);
  expect_case("tensor::ctc_loss None (IntArrayRef lengths)",
              [&](const Tensor& v) { return tensor::ctc_loss(log_softmax(v, 2), tg, kIl, kTl, 0, Reduction::None); }, x,
              ctc_none_out, &ctc_none_grad0);
  // Concatenated 1-d targets (int32), blank 2.
  Tensor cat_tg = tensor::tensor({1, 1, 0, 3, 4}).to(kInt32);
  expect_case("tensor::ctc_loss concatenated, blank 2",
              [&](const Tensor& v) { return tensor::ctc_loss(log_softmax(v, 2), cat_tg, il, tl, 2, Reduction::None); },
              x, ctc_cat_blank2_out, &ctc_cat_blank2_grad0);
  // float32
  expect_near(vals(tensor::ctc_loss(log_softmax(x, 2).to(kFloat32), tg, kIl, kTl, 0, Reduction::None)),
              ctc_f32_none_out, 1e-6, "ctc_loss float32");
  // Unbatched (T, C), 1-d target, 0-d lengths.
  Tensor xu = det({5, 4}, 5, -2, 2);
  Tensor utg = tensor::tensor({1, 3, 3});
  nn::CTCLoss none_loss(nn::CTCLossOptions().reduction(tensor::kNone));
  expect_case("nn::CTCLoss unbatched",
              [&](const Tensor& v) { return none_loss(log_softmax(v, 1), utg, tensor::tensor(5), tensor::tensor(3)); },
              xu, ctc_unbatched_out, &ctc_unbatched_grad0);
  EXPECT_EQ(none_loss(log_softmax(xu, 1), utg, tensor::tensor(5), tensor::tensor(3)).dim(), 0);
  expect_case("F::ctc_loss unbatched kMean",
              [&](const Tensor& v) { return F::ctc_loss(log_softmax(v, 1), utg, tensor::tensor(5), tensor::tensor(3)); },
              xu, ctc_unbatched_mean_out, &ctc_unbatched_mean_grad0);
}

// Note [CTC gradient] (kernels/cpu/LossKernels.cpp): on log_probs themselves, libtorch's
// gradient is the exact one plus exp(log_probs) (times the incoming gradient, at t < L).
TEST(PortNNCtc, CTCLossLeafGradientIsLibtorchsLessTheSoftmaxTerm) {
  using namespace torch_ctc_ref;
  Tensor lp = log_softmax(det({6, 3, 5}, 4, -2, 2), 2).detach().requires_grad_(true);
  Tensor out = tensor::ctc_loss(lp, padded_targets(), kIl, kTl, 0, Reduction::Sum);
  expect_near(vals(out), ctc_leaf_sum_out, 1e-12, "leaf sum");
  Tensor g = autograd::grad({out * 0.75}, {lp})[0];
  Tensor steps = arange(6, TensorOptions(kInt64)).view({6, 1, 1}) < tensor::tensor(std::vector<int64_t>(kIl)).view({1, 3, 1});
  Tensor libtorch_grad = g + 0.75 * lp.detach().exp() * steps.to(kFloat64);
  expect_near(vals(libtorch_grad), ctc_leaf_sum_torch_grad, 1e-9, "leaf grad");
}

TEST(PortNNCtc, CTCLossZeroInfinity) {
  using namespace torch_ctc_ref;
  Tensor x = det({6, 3, 5}, 4, -2, 2);
  Tensor tg = tensor::tensor({{1, 2, 3}, {2, 2, 1}, {4, 0, 0}});
  const std::vector<int64_t> il = {6, 3, 5}, tl = {3, 3, 1};
  // Sample 1 cannot fit "2 2 1" (4 steps with the blank between the repeat) in 3.
  std::vector<double> inf = vals(tensor::ctc_loss(log_softmax(x, 2), tg, il, tl, 0, Reduction::None));
  EXPECT_TRUE(std::isinf(inf[1]) && inf[1] > 0);
  EXPECT_NEAR(inf[0], ctc_inf_zi0_out[0], 1e-9);
  EXPECT_NEAR(inf[2], ctc_inf_zi0_out[2], 1e-9);
  expect_case("ctc_loss zero_infinity None",
              [&](const Tensor& v) { return tensor::ctc_loss(log_softmax(v, 2), tg, il, tl, 0, Reduction::None, true); },
              x, ctc_inf_zi1_out, &ctc_inf_zi1_grad0);
  expect_case("nn::CTCLoss zero_infinity kMean",
              [&](const Tensor& v) {
                return nn::CTCLoss(nn::CTCLossOptions().zero_infinity(true))(log_softmax(v, 2), tg,
                                                                             tensor::tensor(std::vector<int64_t>(il)),
                                                                             tensor::tensor(std::vector<int64_t>(tl)));
              },
              x, ctc_inf_mean_zi1_out, &ctc_inf_mean_zi1_grad0);
  // The infinite sample's gradient is exactly zero.
  Tensor lp = log_softmax(x, 2).detach().requires_grad_(true);
  Tensor g = autograd::grad({tensor::ctc_loss(lp, tg, il, tl, 0, Reduction::Sum, true)}, {lp})[0];
  EXPECT_EQ(g.select(1, 1).abs().sum().item<double>(), 0.0);
  EXPECT_GT(g.select(1, 0).abs().sum().item<double>(), 0.0);
}

TEST(PortNNCtc, CTCLossGradcheck) {
  // The exact derivative, also on unnormalized log_probs, contiguous and transposed (N, T, C
  // storage); padded steps and an empty target included.
  Tensor tg = tensor::tensor({{1, 1, 2}, {2, 0, 0}});
  for (bool transposed : {false, true}) {
    Tensor x = transposed ? det({2, 5, 3}, 13, -1, 1).transpose(0, 1) : det({5, 2, 3}, 13, -1, 1);
    x.requires_grad_(true);
    check(std::string("_ctc_loss gradcheck") + (transposed ? " (transposed)" : ""), [&] {
      return autograd::gradcheck(
          [&](const variable_list& in) { return std::get<0>(tensor::_ctc_loss(in[0], tg, {5, 4}, {3, 1})); }, {x});
    });
    check("ctc_loss kMean gradcheck", [&] {
      return autograd::gradcheck(
          [&](const variable_list& in) { return tensor::ctc_loss(in[0], tg, {5, 3}, {3, 0}, 0, Reduction::Mean); }, {x});
    });
  }
}

TEST(PortNNCtc, CTCLossOutputsAndMeta) {
  Tensor lp = log_softmax(det({6, 3, 5}, 4, -2, 2), 2);
  auto [nll, log_alpha] = tensor::_ctc_loss(lp, padded_targets(), kIl, kTl);
  EXPECT_EQ(nll.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(log_alpha.sizes().vec(), (std::vector<int64_t>{3, 6, 7}));
  // log_alpha[b, 0, 0] is the blank's log-probability at t = 0; beyond a sample's length -inf.
  EXPECT_DOUBLE_EQ(log_alpha[0][0][0].item<double>(), lp[0][0][0].item<double>());
  EXPECT_TRUE(std::isinf(log_alpha[2][5][0].item<double>()));
  const TensorOptions meta = TensorOptions(kFloat32).device(kMeta);
  auto [mn, ma] = tensor::_ctc_loss(empty({50, 4, 20}, meta), empty({4, 10}, TensorOptions(kInt64).device(kMeta)),
                                    {50, 50, 40, 30}, {10, 9, 8, 7});
  EXPECT_EQ(mn.device().type(), kMeta);
  EXPECT_EQ(mn.sizes().vec(), (std::vector<int64_t>{4}));
  EXPECT_EQ(ma.sizes().vec(), (std::vector<int64_t>{4, 50, 21}));
  Tensor mg = tensor::_ctc_loss_backward(empty({4}, meta), empty({50, 4, 20}, meta),
                                         empty({4, 10}, TensorOptions(kInt64).device(kMeta)), {50, 50, 40, 30},
                                         {10, 9, 8, 7}, mn, ma, 0);
  EXPECT_EQ(mg.sizes().vec(), (std::vector<int64_t>{50, 4, 20}));
  // The meta front end checks too.
  expect_error([&] { tensor::_ctc_loss(empty({50, 4, 20}, meta), empty({4, 10}, TensorOptions(kInt64).device(kMeta)), {51, 1, 1, 1}, {1, 1, 1, 1}); },
               {"_ctc_loss", "input_lengths[0] = 51", "[50, 4, 20]"});
}

TEST(PortNNCtc, CTCLossBadInput) {
  Tensor lp = log_softmax(det({6, 3, 5}, 4, -2, 2), 2);
  Tensor tg = padded_targets();
  expect_error([&] { tensor::ctc_loss(lp, tg, {7, 5, 4}, kTl); }, {"_ctc_loss", "input_lengths[0] = 7", "T = 6", "[6, 3, 5]"});
  expect_error([&] { tensor::ctc_loss(lp, tg, kIl, {4, 2, 0}); }, {"_ctc_loss", "target length of 4", "S = 3", "[3, 3]"});
  expect_error([&] { tensor::ctc_loss(lp, tg, kIl, kTl, 5); }, {"_ctc_loss", "blank 5", "[0, 5)", "[6, 3, 5]"});
  expect_error([&] { tensor::ctc_loss(lp, tg, kIl, kTl, -1); }, {"_ctc_loss", "blank -1"});
  expect_error([&] { tensor::ctc_loss(lp, tg.to(kFloat32), kIl, kTl); }, {"_ctc_loss", "targets", "float32", "[3, 3]"});
  expect_error([&] { tensor::ctc_loss(lp.to(kInt64), tg, kIl, kTl); }, {"_ctc_loss", "log_probs", "int64", "[6, 3, 5]"});
  expect_error([&] { tensor::ctc_loss(lp, tg, {6, 5}, {3, 2}); }, {"_ctc_loss", "expected 3 input_lengths", "[6, 3, 5]"});
  expect_error([&] { tensor::ctc_loss(lp, tensor::tensor({1, 2, 3}), kIl, kTl); }, {"_ctc_loss", "sum(target_lengths) = 5", "[3]"});
  expect_error([&] { tensor::ctc_loss(lp, tensor::tensor({{1, 9, 2}, {3, 4, 0}, {2, 0, 0}}), kIl, kTl); },
               {"_ctc_loss", "target value 9", "sample 0"});
  expect_error([&] { tensor::ctc_loss(lp.select(0, 0).select(0, 0), tg, kIl, kTl); }, {"ctc_loss", "(T, N, C)", "[5]"});
  expect_error([&] { F::ctc_loss(lp, tg, tensor::tensor({6.0, 5.0, 4.0}), tensor::tensor(std::vector<int64_t>(kTl))); },
               {"ctc_loss", "input_lengths", "integer", "float"});
  expect_error([&] { tensor::ctc_loss(lp, tg, {-1, 5, 4}, kTl); }, {"_ctc_loss", "input_lengths[0] = -1"});
}

// ---- AdaptiveLogSoftmaxWithLoss ----

TEST(PortNNCtc, AdaptiveLogSoftmaxWithLossMatchesPyTorch) {
  using namespace torch_ctc_ref;
  const std::vector<const std::vector<double>*> outputs = {&asm0_output, &asm1_output};
  const std::vector<double> losses = {asm0_loss[0], asm1_loss[0]};
  const std::vector<std::vector<const std::vector<double>*>> grads = {
      {&asm0_grad0, &asm0_grad1, &asm0_grad2, &asm0_grad3, &asm0_grad4, &asm0_grad5},
      {&asm1_grad0, &asm1_grad1, &asm1_grad2, &asm1_grad3, &asm1_grad4, &asm1_grad5, &asm1_grad6}};
  const std::vector<const std::vector<double>*> log_probs = {&asm0_log_prob, &asm1_log_prob};
  const std::vector<const std::vector<double>*> predicts = {&asm0_predict, &asm1_predict};
  const std::vector<const std::vector<double>*> unbatched = {&asm0_unbatched_output, &asm1_unbatched_output};
  for (int hb = 0; hb < 2; ++hb) {
    const std::string what = hb ? "head_bias" : "no head_bias";
    nn::AdaptiveLogSoftmaxWithLoss asm_(
        nn::AdaptiveLogSoftmaxWithLossOptions(8, 10, {3, 6}).div_value(2.).head_bias(hb == 1));
    asm_->to(kFloat64);
    std::vector<std::string> names;
    std::vector<Tensor> params;
    {
      NoGradGuard ng;
      int k = 0;
      for (auto& item : asm_->named_parameters()) {
        names.push_back(item.key());
        item.value().copy_(det(item.value().sizes().vec(), 100 + k++, -0.5, 0.5));
        params.push_back(item.value());
      }
    }
    const std::vector<std::string> want_names =
        hb ? std::vector<std::string>{"head.weight", "head.bias", "tail.0.0.weight", "tail.0.1.weight",
                                      "tail.1.0.weight", "tail.1.1.weight"}
           : std::vector<std::string>{"head.weight", "tail.0.0.weight", "tail.0.1.weight", "tail.1.0.weight",
                                      "tail.1.1.weight"};
    EXPECT_EQ(names, want_names) << what;
    EXPECT_EQ(asm_->head_size, 5);
    EXPECT_EQ(asm_->shortlist_size, 3);
    EXPECT_EQ(asm_->n_clusters, 2);
    EXPECT_EQ(asm_->cutoffs, (std::vector<int64_t>{3, 6, 10}));
    Tensor x = det({6, 8}, 6, -1, 1);
    Tensor target = tensor::tensor({0, 4, 9, 2, 7, 3});
    for (bool s : {false, true}) {
      Tensor xi = (s ? strided(x) : x.clone()).requires_grad_(true);
      nn::ASMoutput r = asm_(xi, target);
      expect_near(vals(r.output), *outputs[static_cast<size_t>(hb)], 1e-12, what + " output");
      EXPECT_NEAR(r.loss, losses[static_cast<size_t>(hb)], 1e-12) << what;
      std::vector<Tensor> wrt = {xi};
      for (const Tensor& p : params) wrt.push_back(p);
      auto g = autograd::grad({(r.output * det({6}, 7)).sum()}, wrt);
      for (size_t k = 0; k < g.size(); ++k)
        expect_near(vals(g[k]), *grads[static_cast<size_t>(hb)][k], 1e-12, what + " grad " + std::to_string(k));
    }
    expect_near(vals(asm_->log_prob(x)), *log_probs[static_cast<size_t>(hb)], 1e-12, what + " log_prob");
    expect_near(vals(asm_->predict(x)), *predicts[static_cast<size_t>(hb)], 0, what + " predict");
    EXPECT_EQ(asm_->predict(x).dtype(), kInt64);
    // The log-probabilities of every class sum to 1.
    expect_near(vals(asm_->log_prob(x).exp().sum(1)), std::vector<double>(6, 1.0), 1e-12, what + " normalized");
    nn::ASMoutput u = asm_(x[4], target[4]);
    EXPECT_EQ(u.output.dim(), 0);
    expect_near(vals(u.output), *unbatched[static_cast<size_t>(hb)], 1e-12, what + " unbatched");
  }
}

TEST(PortNNCtc, AdaptiveLogSoftmaxWithLossBadInput) {
  expect_error([] { nn::AdaptiveLogSoftmaxWithLoss(8, 10, std::vector<int64_t>{6, 3}); }, {"AdaptiveLogSoftmaxWithLoss", "cutoffs", "[6, 3]"});
  expect_error([] { nn::AdaptiveLogSoftmaxWithLoss(8, 10, std::vector<int64_t>{3, 10}); }, {"AdaptiveLogSoftmaxWithLoss", "n_classes-1"});
  expect_error([] { nn::AdaptiveLogSoftmaxWithLoss(8, 10, std::vector<int64_t>{}); }, {"AdaptiveLogSoftmaxWithLoss", "cutoffs"});
  nn::AdaptiveLogSoftmaxWithLoss m(8, 10, std::vector<int64_t>{3, 6});
  expect_error([&] { m(zeros({4, 8}), tensor::tensor({0, 1, 10, 2})); }, {"AdaptiveLogSoftmaxWithLoss", "[0, 9]", "[0, 10]"});
  expect_error([&] { m(zeros({4, 8}), tensor::tensor({0, 1, 2})); }, {"AdaptiveLogSoftmaxWithLoss", "[4, 8]", "[3]"});
  expect_error([&] { m(zeros({8}), tensor::tensor({0, 1})); }, {"AdaptiveLogSoftmaxWithLoss", "[8]"});
  expect_error([&] { m(zeros({2, 8}), zeros({2, 1}, kInt64)); }, {"AdaptiveLogSoftmaxWithLoss", "0D or 1D", "[2, 1]"});
  expect_error([&] { m->log_prob(zeros({2, 7})); }, {"log_prob", "(N, 8)", "[2, 7]"});
}

TEST(PortNNCtc, CTCLossEdgeLengthsAndNoDoubleBackward) {
  // An input of length 0 aligns only the empty target; a zero-length input gets no gradient.
  Tensor lp = log_softmax(det({3, 2, 4}, 14, -2, 2), 2).detach().requires_grad_(true);
  Tensor nll = tensor::ctc_loss(lp, tensor::tensor({{1}, {2}}), {0, 0}, {0, 1}, 0, Reduction::None);
  EXPECT_EQ(vals(nll)[0], 0.0);
  EXPECT_TRUE(std::isinf(vals(nll)[1]));
  Tensor g = autograd::grad({tensor::ctc_loss(lp, tensor::tensor({{1}, {2}}), {0, 3}, {0, 1}, 0, Reduction::Sum)},
                            {lp})[0];
  EXPECT_EQ(g.select(1, 0).abs().sum().item<double>(), 0.0);
  // _ctc_loss_backward is not differentiable (as libtorch's): a double backward raises.
  Tensor loss = tensor::ctc_loss(lp, tensor::tensor({{1}, {2}}), {3, 3}, {1, 1}, 0, Reduction::Sum);
  Tensor g1 = autograd::grad({loss}, {lp}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  EXPECT_TRUE(g1.requires_grad());
  expect_error([&] { autograd::grad({g1.sum()}, {lp}); }, {"_ctc_loss_backward", "not implemented"});
}

TEST(PortNNCtc, CTCLossBatchSplitAcrossThreadsMatchesPerSample) {
  // Large enough for the kernel to split the batch across threads (when more than one runs):
  // each sample's loss and gradient equal those of the sample alone.
  const int64_t T = 50, N = 16, C = 6, S = 10;
  Tensor lp = log_softmax(det({T, N, C}, 15, -2, 2), 2).detach().requires_grad_(true);
  std::vector<int64_t> il, tl;
  std::vector<int64_t> flat;
  for (int64_t b = 0; b < N; ++b) {
    il.push_back(T - b);
    tl.push_back(S - b % 4);
    for (int64_t i = 0; i < S; ++i) flat.push_back(1 + (b * 7 + i * 3) % (C - 1));
  }
  Tensor tg = tensor::tensor(flat).view({N, S});
  Tensor nll = tensor::ctc_loss(lp, tg, il, tl, 0, Reduction::None);
  Tensor g = autograd::grad({(nll * det({N}, 7)).sum()}, {lp})[0];
  for (int64_t b = 0; b < N; ++b) {
    Tensor lpb = lp.detach().narrow(1, b, 1).clone().requires_grad_(true);
    Tensor one = tensor::ctc_loss(lpb, tg.narrow(0, b, 1), {il[static_cast<size_t>(b)]}, {tl[static_cast<size_t>(b)]}, 0,
                                  Reduction::None);
    EXPECT_NEAR(one.item<double>(), vals(nll)[static_cast<size_t>(b)], 1e-12) << "sample " << b;
    Tensor gb = autograd::grad({one.sum() * det({N}, 7)[b]}, {lpb})[0];
    expect_near(vals(gb), vals(g.narrow(1, b, 1)), 1e-12, "grad of sample " + std::to_string(b));
  }
}
