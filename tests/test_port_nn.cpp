// Ported-program test for nn (issue 14): code written in libtorch's spelling (torch:: renamed
// to tensor::) for the free functions (tensor::nll_loss, tensor::dropout(x, p, train), ...,
// tensor::Reduction::Sum), the activation, loss, distance and small-layer modules and their
// nn::functional forms. Values and gradients are compared with PyTorch's
// (tests/reference/torch_nn_port.py generated tests/reference/torch_nn_port_ref.h), on
// contiguous and strided inputs; a few cases are also gradchecked by finite differences.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/reference/torch_nn_port_ref.h"
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

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs f on the inputs (those listed in grad_of require grad) and compares the output and the
// gradients of sum(out * det(out.shape, 7)) (0.75 * out for a 0-dim out) with PyTorch's.
void expect_case(const std::string& what, const Fn& f, const std::vector<Tensor>& inputs,
                 const std::vector<double>& out_ref, const std::vector<std::pair<size_t, std::vector<double>>>& grads,
                 double tol = 1e-9) {
  std::vector<Tensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool g = false;
    for (auto& p : grads) g = g || p.first == i;
    ins.push_back(g ? inputs[i].detach().requires_grad_(true) : inputs[i]);
  }
  Tensor out = f(ins);
  expect_near(vals(out), out_ref, tol, what + " output");
  if (grads.empty()) return;
  Tensor loss = out.dim() > 0 ? (out * det(out.sizes().vec(), 7)).sum() : out * 0.75;
  std::vector<Tensor> wrt;
  for (auto& p : grads) wrt.push_back(ins[p.first]);
  auto g = autograd::grad({loss}, wrt, {}, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
  for (size_t k = 0; k < grads.size(); ++k) {
    std::vector<double> got = g[k].defined() ? vals(g[k]) : std::vector<double>(grads[k].second.size(), 0.0);
    expect_near(got, grads[k].second, tol, what + " grad of input " + std::to_string(grads[k].first));
  }
}

// expect_case on the inputs as given and on strided (non-contiguous) copies of them.
void expect_case_layouts(const std::string& what, const Fn& f, const std::vector<Tensor>& inputs,
                         const std::vector<double>& out_ref,
                         const std::vector<std::pair<size_t, std::vector<double>>>& grads, double tol = 1e-9) {
  expect_case(what, f, inputs, out_ref, grads, tol);
  std::vector<Tensor> s;
  for (const Tensor& t : inputs) s.push_back(t.is_floating_point() && t.dim() > 0 ? strided(t) : t);
  expect_case(what + " (strided)", f, s, out_ref, grads, tol);
}

}  // namespace

// ---- free functions and F:: activations against PyTorch ----

TEST(PortNN, ActivationsMatchPyTorch) {
  using namespace torch_ref;
  Tensor x = det({3, 5}, 1, -4, 4);
  struct Case {
    const char* name;
    Fn f;
    const std::vector<double>& out;
    const std::vector<double>& grad;
  };
  std::vector<Case> cases = {
      {"leaky_relu", [](auto& in) { return tensor::leaky_relu(in[0], 0.2); }, leaky_relu_out, leaky_relu_grad0},
      {"F::leaky_relu", [](auto& in) { return F::leaky_relu(in[0], F::LeakyReLUFuncOptions().negative_slope(0.2)); },
       leaky_relu_out, leaky_relu_grad0},
      {"elu", [](auto& in) { return tensor::elu(in[0], 1.3); }, elu_out, elu_grad0},
      {"F::elu", [](auto& in) { return F::elu(in[0], F::ELUFuncOptions().alpha(1.3)); }, elu_out, elu_grad0},
      {"selu", [](auto& in) { return tensor::selu(in[0]); }, selu_out, selu_grad0},
      {"F::selu", [](auto& in) { return F::selu(in[0]); }, selu_out, selu_grad0},
      {"celu", [](auto& in) { return tensor::celu(in[0], 0.7); }, celu_out, celu_grad0},
      {"F::celu", [](auto& in) { return F::celu(in[0], F::CELUFuncOptions().alpha(0.7)); }, celu_out, celu_grad0},
      {"softplus", [](auto& in) { return tensor::softplus(in[0], 2.0, 3.0); }, softplus_out, softplus_grad0},
      {"F::softplus", [](auto& in) { return F::softplus(in[0], F::SoftplusFuncOptions().beta(2.0).threshold(3.0)); },
       softplus_out, softplus_grad0},
      {"hardtanh", [](auto& in) { return tensor::hardtanh(in[0], -0.5, 1.5); }, hardtanh_out, hardtanh_grad0},
      {"F::hardtanh", [](auto& in) { return F::hardtanh(in[0], F::HardtanhFuncOptions().min_val(-0.5).max_val(1.5)); },
       hardtanh_out, hardtanh_grad0},
      {"relu6", [](auto& in) { return tensor::relu6(in[0] * 2.5); }, relu6_out, relu6_grad0},
      {"F::relu6", [](auto& in) { return F::relu6(in[0] * 2.5); }, relu6_out, relu6_grad0},
      {"log_sigmoid", [](auto& in) { return tensor::log_sigmoid(in[0]); }, logsigmoid_out, logsigmoid_grad0},
      {"F::logsigmoid", [](auto& in) { return F::logsigmoid(in[0]); }, logsigmoid_out, logsigmoid_grad0},
      {"hardsigmoid", [](auto& in) { return tensor::hardsigmoid(in[0]); }, hardsigmoid_out, hardsigmoid_grad0},
      {"hardswish", [](auto& in) { return tensor::hardswish(in[0]); }, hardswish_out, hardswish_grad0},
      {"mish", [](auto& in) { return tensor::mish(in[0]); }, mish_out, mish_grad0},
      {"F::mish", [](auto& in) { return F::mish(in[0]); }, mish_out, mish_grad0},
      {"threshold", [](auto& in) { return tensor::threshold(in[0], 0.3, -2.0); }, threshold_out, threshold_grad0},
      {"F::threshold", [](auto& in) { return F::threshold(in[0], F::ThresholdFuncOptions(0.3, -2.0)); }, threshold_out,
       threshold_grad0},
      {"softshrink", [](auto& in) { return tensor::softshrink(in[0], 0.6); }, softshrink_out, softshrink_grad0},
      {"F::softshrink", [](auto& in) { return F::softshrink(in[0], 0.6); }, softshrink_out, softshrink_grad0},
      {"hardshrink", [](auto& in) { return tensor::hardshrink(in[0], 0.6); }, hardshrink_out, hardshrink_grad0},
      {"F::hardshrink", [](auto& in) { return F::hardshrink(in[0], F::HardshrinkFuncOptions(0.6)); }, hardshrink_out,
       hardshrink_grad0},
      {"F::softsign", [](auto& in) { return F::softsign(in[0]); }, softsign_out, softsign_grad0},
      {"F::tanhshrink", [](auto& in) { return F::tanhshrink(in[0]); }, tanhshrink_out, tanhshrink_grad0},
      {"F::softmin", [](auto& in) { return F::softmin(in[0], F::SoftminFuncOptions(1)); }, softmin_out,
       softmin_grad0},
      {"rrelu eval", [](auto& in) { return tensor::rrelu(in[0], 0.1, 0.3, false); }, rrelu_eval_out,
       rrelu_eval_grad0},
      {"F::rrelu eval", [](auto& in) { return F::rrelu(in[0], F::RReLUFuncOptions().lower(0.1).upper(0.3)); },
       rrelu_eval_out, rrelu_eval_grad0},
  };
  for (const Case& c : cases) {
    // PyTorch's celu and hardsigmoid backward kernels round a coefficient (1 / alpha, 1 / 6)
    // through float32: their gradients agree with the exact ones to ~1e-8 only.
    const std::string n = c.name;
    const double tol = n.find("celu") != std::string::npos || n.find("hardsigmoid") != std::string::npos ? 1e-7 : 1e-9;
    expect_case_layouts(c.name, c.f, {x}, c.out, {{0, c.grad}}, tol);
  }

  Tensor g = det({4, 3}, 2, -2, 2);
  expect_case_layouts("glu", [](auto& in) { return tensor::glu(in[0], 0); }, {g}, glu_out, {{0, glu_grad0}});
  expect_case("F::glu", [](auto& in) { return F::glu(in[0], F::GLUFuncOptions(0)); }, {g}, glu_out, {{0, glu_grad0}});
  Tensor pa = det({2, 3, 4}, 3, -2, 2), pw = det({3}, 4, 0.1, 0.5);
  expect_case_layouts("prelu", [](auto& in) { return tensor::prelu(in[0], in[1]); }, {pa, pw}, prelu_out,
                      {{0, prelu_grad0}, {1, prelu_grad1}});
}

TEST(PortNN, ActivationModulesMatchPyTorch) {
  using namespace torch_ref;
  Tensor x = det({3, 5}, 1, -4, 4);
  auto run = [&](const std::string& what, auto module, const std::vector<double>& out, const std::vector<double>& grad) {
    expect_case(what, [&](auto& in) { return module(in[0]); }, {x}, out, {{0, grad}}, what == "CELU" ? 1e-7 : 1e-9);
    std::ostringstream s;
    s << *module;
    EXPECT_NE(s.str().find("tensor::nn::"), std::string::npos) << s.str();
  };
  run("LeakyReLU", nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)), leaky_relu_out, leaky_relu_grad0);
  run("ELU", nn::ELU(nn::ELUOptions().alpha(1.3)), elu_out, elu_grad0);
  run("SELU", nn::SELU(), selu_out, selu_grad0);
  run("CELU", nn::CELU(nn::CELUOptions().alpha(0.7)), celu_out, celu_grad0);
  run("Softplus", nn::Softplus(nn::SoftplusOptions().beta(2.0).threshold(3.0)), softplus_out, softplus_grad0);
  run("Hardtanh", nn::Hardtanh(nn::HardtanhOptions().min_val(-0.5).max_val(1.5)), hardtanh_out, hardtanh_grad0);
  run("LogSigmoid", nn::LogSigmoid(), logsigmoid_out, logsigmoid_grad0);
  run("Mish", nn::Mish(), mish_out, mish_grad0);
  run("Threshold", nn::Threshold(0.3, -2.0), threshold_out, threshold_grad0);
  run("Softshrink", nn::Softshrink(0.6), softshrink_out, softshrink_grad0);
  run("Hardshrink", nn::Hardshrink(0.6), hardshrink_out, hardshrink_grad0);
  run("Softsign", nn::Softsign(), softsign_out, softsign_grad0);
  run("Tanhshrink", nn::Tanhshrink(), tanhshrink_out, tanhshrink_grad0);
  run("Softmin", nn::Softmin(1), softmin_out, softmin_grad0);
  nn::RReLU rrelu(nn::RReLUOptions().lower(0.1).upper(0.3));
  rrelu->eval();
  run("RReLU eval", rrelu, rrelu_eval_out, rrelu_eval_grad0);
  nn::ReLU6 relu6;
  expect_case("ReLU6", [&](auto& in) { return relu6(in[0] * 2.5); }, {x}, relu6_out, {{0, relu6_grad0}});
  nn::GLU glu(0);
  expect_case("GLU", [&](auto& in) { return glu(in[0]); }, {det({4, 3}, 2, -2, 2)}, glu_out, {{0, glu_grad0}});

  // PReLU: a learned weight of num_parameters entries filled with init.
  nn::PReLU prelu(nn::PReLUOptions().num_parameters(3).init(0.25));
  ASSERT_EQ(prelu->named_parameters().size(), 1u);
  EXPECT_EQ(vals(prelu->weight), std::vector<double>({0.25, 0.25, 0.25}));
  prelu->to(kFloat64);
  {
    NoGradGuard g;
    prelu->weight.copy_(det({3}, 4, 0.1, 0.5));
  }
  expect_case("PReLU", [&](auto& in) { return prelu(in[0]); }, {det({2, 3, 4}, 3, -2, 2)}, prelu_out,
              {{0, prelu_grad0}});

  // In-place options write into the input and return it.
  Tensor y = x.clone();
  Tensor r = F::leaky_relu(y, F::LeakyReLUFuncOptions().negative_slope(0.2).inplace(true));
  EXPECT_TRUE(r.is_same(y));
  expect_near(vals(y), leaky_relu_out, 1e-12, "leaky_relu inplace");
  Tensor z = x.clone();
  tensor::elu_(z, 1.3);
  expect_near(vals(z), elu_out, 1e-12, "elu_");
}

TEST(PortNN, ActivationsFloat32AndLargeValues) {
  // float32 follows float64 to float precision; large inputs stay finite (no 0 * inf in the
  // masked branches), with finite gradients.
  Tensor x = det({3, 5}, 1, -4, 4);
  expect_near(vals(tensor::elu(x.to(kFloat32), 1.3)), vals(tensor::elu(x, 1.3)), 1e-6, "elu float32");
  expect_near(vals(tensor::mish(x.to(kFloat32))), vals(tensor::mish(x)), 1e-6, "mish float32");
  Tensor big = tensor::tensor({-1000.0, -50.0, 0.0, 50.0, 1000.0}, dtype(kFloat64).requires_grad(true));
  Tensor y = tensor::elu(big) + tensor::softplus(big) + tensor::log_sigmoid(big) + tensor::mish(big) +
             tensor::selu(big) + tensor::celu(big, 0.5);
  y.sum().backward();
  for (double v : vals(y)) EXPECT_TRUE(std::isfinite(v));
  for (double v : vals(big.grad())) EXPECT_TRUE(std::isfinite(v));
}

TEST(PortNN, ActivationGradchecks) {
  Tensor x = det({2, 4}, 5, -2, 2).requires_grad_(true);
  auto fns = std::vector<std::pair<const char*, std::function<Tensor(const variable_list&)>>>{
      {"elu", [](const variable_list& in) { return tensor::elu(in[0], 0.8); }},
      {"softplus", [](const variable_list& in) { return tensor::softplus(in[0], 1.5, 2.0); }},
      {"mish", [](const variable_list& in) { return tensor::mish(in[0]); }},
      {"log_sigmoid", [](const variable_list& in) { return tensor::log_sigmoid(in[0]); }},
      {"glu", [](const variable_list& in) { return tensor::glu(in[0], 1); }},
      {"softsign", [](const variable_list& in) { return F::softsign(in[0]); }},
  };
  for (auto& [name, fn] : fns) {
    check(std::string(name) + " gradcheck", [&] { return autograd::gradcheck(fn, {x}); });
    check(std::string(name) + " gradgradcheck", [&] { return autograd::gradgradcheck(fn, {x}); });
  }
}

// ---- losses ----

TEST(PortNN, RegressionLossesMatchPyTorch) {
  using namespace torch_ref;
  Tensor inp = det({4, 5}, 11, -2, 2), tgt = det({4, 5}, 12, -2, 2);
  const int64_t reds[] = {Reduction::None, Reduction::Mean, Reduction::Sum};
  const nn::LossReduction nreds[] = {kNone, kMean, kSum};
  const std::vector<double>* mse[3][2] = {{&mse_none_out, &mse_none_grad0}, {&mse_mean_out, &mse_mean_grad0},
                                          {&mse_sum_out, &mse_sum_grad0}};
  const std::vector<double>* sl1[3][2] = {{&smooth_l1_none_out, &smooth_l1_none_grad0},
                                          {&smooth_l1_mean_out, &smooth_l1_mean_grad0},
                                          {&smooth_l1_sum_out, &smooth_l1_sum_grad0}};
  const std::vector<double>* hub[3][2] = {{&huber_none_out, &huber_none_grad0}, {&huber_mean_out, &huber_mean_grad0},
                                          {&huber_sum_out, &huber_sum_grad0}};
  for (int k = 0; k < 3; ++k) {
    const int64_t r = reds[k];
    const nn::LossReduction nr = nreds[k];
    const std::string rn = nr.name();
    expect_case_layouts("mse_loss " + rn, [r](auto& in) { return tensor::mse_loss(in[0], in[1], r); }, {inp, tgt},
                        *mse[k][0], {{0, *mse[k][1]}});
    expect_case_layouts("smooth_l1_loss " + rn,
                        [r](auto& in) { return tensor::smooth_l1_loss(in[0], in[1], r, 0.5); }, {inp, tgt},
                        *sl1[k][0], {{0, *sl1[k][1]}});
    expect_case("F::smooth_l1_loss " + rn,
                [nr](auto& in) { return F::smooth_l1_loss(in[0], in[1], F::SmoothL1LossFuncOptions(nr).beta(0.5)); },
                {inp, tgt}, *sl1[k][0], {{0, *sl1[k][1]}});
    expect_case_layouts("huber_loss " + rn, [r](auto& in) { return tensor::huber_loss(in[0], in[1], r, 0.7); },
                        {inp, tgt}, *hub[k][0], {{0, *hub[k][1]}});
    nn::HuberLoss huber(nn::HuberLossOptions(nr).delta(0.7));
    expect_case("HuberLoss " + rn, [&](auto& in) { return huber(in[0], in[1]); }, {inp, tgt}, *hub[k][0],
                {{0, *hub[k][1]}});
  }
  nn::SmoothL1Loss sl1_module(nn::SmoothL1LossOptions().beta(0.5));
  expect_case("SmoothL1Loss", [&](auto& in) { return sl1_module(in[0], in[1]); }, {inp, tgt}, smooth_l1_mean_out,
              {{0, smooth_l1_mean_grad0}});
  expect_case("l1_loss", [](auto& in) { return tensor::l1_loss(in[0], in[1]); }, {inp, tgt}, l1_mean_out,
              {{0, l1_mean_grad0}});
  expect_case("smooth_l1_loss beta 0", [](auto& in) { return tensor::smooth_l1_loss(in[0], in[1], Reduction::Mean, 0.0); },
              {inp, tgt}, smooth_l1_beta0_out, {{0, smooth_l1_beta0_grad0}});

  // A broadcast target gives the loss of the expanded one.
  Tensor row = det({1, 5}, 3);
  EXPECT_NEAR(tensor::mse_loss(inp, row).item<double>(), tensor::mse_loss(inp, row.expand({4, 5}).contiguous()).item<double>(),
              1e-12);
  EXPECT_NEAR(tensor::huber_loss(inp, row, Reduction::Sum).item<double>(),
              tensor::huber_loss(inp, row.expand({4, 5}).contiguous(), Reduction::Sum).item<double>(), 1e-12);
}

TEST(PortNN, ClassificationLossesMatchPyTorch) {
  using namespace torch_ref;
  Tensor prob = det({4, 5}, 13, 0.02, 0.98), ptgt = det({4, 5}, 14, 0.0, 1.0), bw = det({4, 5}, 15, 0.5, 1.5);
  expect_case_layouts("binary_cross_entropy", [](auto& in) { return tensor::binary_cross_entropy(in[0], in[1]); },
                      {prob, ptgt}, bce_mean_out, {{0, bce_mean_grad0}});
  expect_case("binary_cross_entropy weight sum",
              [&](auto& in) { return tensor::binary_cross_entropy(in[0], in[1], bw, Reduction::Sum); }, {prob, ptgt},
              bce_weight_sum_out, {{0, bce_weight_sum_grad0}});
  expect_case("F::binary_cross_entropy",
              [&](auto& in) {
                return F::binary_cross_entropy(in[0], in[1], F::BinaryCrossEntropyFuncOptions().weight(bw).reduction(kSum));
              },
              {prob, ptgt}, bce_weight_sum_out, {{0, bce_weight_sum_grad0}});
  nn::BCELoss bce;
  expect_case("BCELoss", [&](auto& in) { return bce(in[0], in[1]); }, {prob, ptgt}, bce_mean_out, {{0, bce_mean_grad0}});
  // Probabilities 0 and 1 give the clamped -100 logs, as libtorch.
  expect_case("binary_cross_entropy at 0 and 1",
              [](auto& in) { return tensor::binary_cross_entropy(in[0], in[1], {}, Reduction::None); },
              {tensor::tensor({0.0, 1.0, 0.5, 1.0}, kFloat64), tensor::tensor({1.0, 0.0, 0.3, 1.0}, kFloat64)},
              bce_edges_out, {});

  Tensor logp = tensor::log_softmax(det({4, 5}, 16, -2, 2), 1);
  Tensor q = tensor::softmax(det({4, 5}, 17, -2, 2), 1);
  expect_case("F::kl_div batchmean", [&](auto& in) { return F::kl_div(in[0], in[1], F::KLDivFuncOptions(kBatchMean)); },
              {logp, q}, kl_div_batchmean_out, {{0, kl_div_batchmean_grad0}, {1, kl_div_batchmean_grad1}});
  expect_case("kl_div mean log_target",
              [&](auto& in) { return tensor::kl_div(in[0], in[1], Reduction::Mean, /*log_target=*/true); },
              {logp, q.log()}, kl_div_mean_logtarget_out,
              {{0, kl_div_mean_logtarget_grad0}, {1, kl_div_mean_logtarget_grad1}});
  nn::KLDivLoss kl(nn::KLDivLossOptions(tensor::kNone));
  expect_case("KLDivLoss none", [&](auto& in) { return kl(in[0], in[1]); }, {logp, q}, kl_div_none_out,
              {{0, kl_div_none_grad0}, {1, kl_div_none_grad1}});

  Tensor nt = tensor::tensor({int64_t{1}, int64_t{4}, int64_t{-100}, int64_t{0}});
  Tensor nw = det({5}, 35, 0.5, 1.5);
  expect_case_layouts("nll_loss weight ignore_index",
                      [&](auto& in) { return tensor::nll_loss(in[0], nt, nw, Reduction::Mean, -100); }, {logp},
                      nll_weight_ignore_out, {{0, nll_weight_ignore_grad0}});
  Tensor t4 = tensor::tensor({int64_t{1}, int64_t{4}, int64_t{2}, int64_t{0}});
  expect_case("nll_loss sum", [&](auto& in) { return tensor::nll_loss(in[0], t4, {}, Reduction::Sum); }, {logp},
              nll_sum_out, {{0, nll_sum_grad0}});
  expect_case("cross_entropy_loss label smoothing",
              [&](auto& in) { return tensor::cross_entropy_loss(in[0], t4, {}, Reduction::Mean, -100, 0.1); },
              {det({4, 5}, 16, -2, 2)}, cross_entropy_ls_out, {{0, cross_entropy_ls_grad0}});

  Tensor mt = tensor::tensor({int64_t{2}, int64_t{0}, int64_t{4}, int64_t{1}});
  Tensor mx = det({4, 5}, 29, -1, 1);
  expect_case_layouts("multi_margin_loss", [&](auto& in) { return tensor::multi_margin_loss(in[0], mt); }, {mx},
                      multi_margin_p1_out, {{0, multi_margin_p1_grad0}});
  nn::MultiMarginLoss mm(nn::MultiMarginLossOptions().p(2).margin(0.7).weight(det({5}, 30, 0.5, 1.5)).reduction(kNone));
  expect_case("MultiMarginLoss p2 weight", [&](auto& in) { return mm(in[0], mt); }, {mx}, multi_margin_p2_w_out,
              {{0, multi_margin_p2_w_grad0}});
  Tensor mlt = tensor::tensor({int64_t{3}, 0, -1, 1, 2, 1, 2, 4, -1, 0, 0, 1, 2, 3, 4, -1, 1, 1, 1, 1}).reshape({4, 5});
  nn::MultiLabelMarginLoss mlm(kNone);
  expect_case("MultiLabelMarginLoss", [&](auto& in) { return mlm(in[0], mlt); }, {det({4, 5}, 31, -1, 1)},
              multilabel_margin_out, {{0, multilabel_margin_grad0}});
  nn::MultiLabelSoftMarginLoss mlsm(nn::MultiLabelSoftMarginLossOptions().weight(det({5}, 32, 0.5, 1.5)));
  Tensor mls_t = (det({4, 5}, 34) > 0).to(kFloat64);
  expect_case("MultiLabelSoftMarginLoss", [&](auto& in) { return mlsm(in[0], mls_t); }, {det({4, 5}, 33, -2, 2)},
              multilabel_soft_margin_out, {{0, multilabel_soft_margin_grad0}});
}

TEST(PortNN, MarginAndEmbeddingLossesMatchPyTorch) {
  using namespace torch_ref;
  Tensor pm = tensor::tensor({1.0, -1.0, -1.0, 1.0, 1.0}, kFloat64);
  expect_case_layouts("soft_margin_loss", [&](auto& in) { return tensor::soft_margin_loss(in[0], pm); },
                      {det({5}, 18, -3, 3)}, soft_margin_out, {{0, soft_margin_grad0}});
  nn::SoftMarginLoss sm;
  expect_case("SoftMarginLoss", [&](auto& in) { return sm(in[0], pm); }, {det({5}, 18, -3, 3)}, soft_margin_out,
              {{0, soft_margin_grad0}});
  nn::MarginRankingLoss mr(nn::MarginRankingLossOptions().margin(0.3));
  expect_case("MarginRankingLoss", [&](auto& in) { return mr(in[0], in[1], pm); }, {det({5}, 19), det({5}, 20)},
              margin_ranking_out, {{0, margin_ranking_grad0}, {1, margin_ranking_grad1}});
  nn::HingeEmbeddingLoss he(nn::HingeEmbeddingLossOptions().margin(1.5));
  expect_case("HingeEmbeddingLoss", [&](auto& in) { return he(in[0], pm); }, {det({5}, 21, -1, 3)},
              hinge_embedding_out, {{0, hinge_embedding_grad0}});
  Tensor ce_t = tensor::tensor({1.0, -1.0, 1.0, -1.0}, kFloat64);
  nn::CosineEmbeddingLoss cel(nn::CosineEmbeddingLossOptions().margin(0.1));
  expect_case("CosineEmbeddingLoss", [&](auto& in) { return cel(in[0], in[1], ce_t); },
              {det({4, 3}, 22), det({4, 3}, 23)}, cosine_embedding_out,
              {{0, cosine_embedding_grad0}, {1, cosine_embedding_grad1}});
  nn::PoissonNLLLoss pn;
  expect_case("PoissonNLLLoss", [&](auto& in) { return pn(in[0], in[1]); }, {det({6}, 24), det({6}, 25, 0, 4)},
              poisson_log_out, {{0, poisson_log_grad0}});
  expect_case("poisson_nll_loss full",
              [&](auto& in) { return tensor::poisson_nll_loss(in[0], in[1], false, true, 1e-8, Reduction::Sum); },
              {det({6}, 24, 0.1, 3), det({6}, 25, 0, 4)}, poisson_full_out, {{0, poisson_full_grad0}});
  nn::TripletMarginLoss tm(nn::TripletMarginLossOptions().margin(0.5));
  expect_case("TripletMarginLoss", [&](auto& in) { return tm(in[0], in[1], in[2]); },
              {det({4, 3}, 26), det({4, 3}, 27), det({4, 3}, 28)}, triplet_out,
              {{0, triplet_grad0}, {1, triplet_grad1}, {2, triplet_grad2}});
  expect_case("triplet_margin_loss swap p1",
              [&](auto& in) { return tensor::triplet_margin_loss(in[0], in[1], in[2], 1.0, 1.0, 1e-6, true, Reduction::Sum); },
              {det({4, 3}, 26), det({4, 3}, 27), det({4, 3}, 28)}, triplet_swap_p1_out,
              {{0, triplet_swap_p1_grad0}, {1, triplet_swap_p1_grad1}, {2, triplet_swap_p1_grad2}});
}

TEST(PortNN, LossGradchecks) {
  Tensor a = det({3, 4}, 50, -1.5, 1.5).requires_grad_(true), b = det({3, 4}, 51, -1.5, 1.5);
  check("smooth_l1 gradcheck", [&] {
    return autograd::gradcheck([&](const variable_list& in) { return tensor::smooth_l1_loss(in[0], b, Reduction::Sum, 0.5); }, {a});
  });
  check("huber gradcheck", [&] {
    return autograd::gradcheck([&](const variable_list& in) { return tensor::huber_loss(in[0], b); }, {a});
  });
  Tensor p = det({3, 4}, 52, 0.1, 0.9).requires_grad_(true), t = det({3, 4}, 53, 0, 1);
  check("binary_cross_entropy gradgradcheck", [&] {
    return autograd::gradgradcheck([&](const variable_list& in) { return tensor::binary_cross_entropy(in[0], t); }, {p});
  });
  Tensor x1 = det({3, 4}, 54).requires_grad_(true), x2 = det({3, 4}, 55).requires_grad_(true);
  check("cosine_similarity gradcheck", [&] {
    return autograd::gradcheck([](const variable_list& in) { return tensor::cosine_similarity(in[0], in[1]); }, {x1, x2});
  });
}

// ---- the Reduction enum and the torch:: loss spellings ----

TEST(PortNN, ReductionEnumIsLibtorchs) {
  static_assert(Reduction::None == 0 && Reduction::Mean == 1 && Reduction::Sum == 2, "at::Reduction values");
  Tensor a = det({2, 3}, 60), b = det({2, 3}, 61);
  Tensor d = (a - b) * (a - b);
  EXPECT_NEAR(tensor::mse_loss(a, b, Reduction::Sum).item<double>(), d.sum().item<double>(), 1e-12);
  EXPECT_NEAR(tensor::mse_loss(a, b, tensor::Reduction::Mean).item<double>(), d.mean().item<double>(), 1e-12);
  EXPECT_EQ(tensor::mse_loss(a, b, Reduction::None).sizes(), IntArrayRef({2, 3}));
  EXPECT_NEAR(tensor::l1_loss(a, b, Reduction::Sum).item<double>(), (a - b).abs().sum().item<double>(), 1e-12);
  expect_error([&] { tensor::mse_loss(a, b, 7); }, {"mse_loss", "reduction", "7"});
}

// ---- dropout ----

TEST(PortNN, DropoutFreeFunctions) {
  manual_seed(0);
  Tensor x = ones({200, 50}, kFloat64);
  // Eval (train = false) and p = 0 are the identity.
  EXPECT_TRUE(tensor::dropout(x, 0.5, false).equal(x));
  EXPECT_TRUE(tensor::dropout(x, 0.0, true).equal(x));
  Tensor y = tensor::dropout(x, 0.3, true);
  // Kept values are scaled by 1 / (1 - p); the dropped fraction is near p.
  double zeros_frac = (y == 0).to(kFloat64).mean().item<double>();
  EXPECT_NEAR(zeros_frac, 0.3, 0.02);
  EXPECT_NEAR(y.masked_select(y != 0).mean().item<double>(), 1 / 0.7, 1e-12);
  EXPECT_TRUE(tensor::dropout(x, 1.0, true).equal(zeros_like(x)));
  expect_error([&] { tensor::dropout(x, 1.5, true); }, {"dropout", "between 0 and 1", "1.5"});

  // Channel dropout: each (n, c) plane is all kept or all dropped.
  Tensor img = ones({8, 16, 3, 3}, kFloat64);
  Tensor fd = tensor::feature_dropout(img, 0.5, true);
  Tensor per_plane = fd.flatten(2);
  Tensor mn = std::get<0>(per_plane.min(2)), mx = std::get<0>(per_plane.max(2));
  EXPECT_TRUE(mn.equal(mx));
  EXPECT_GT((mn == 0).sum().item<int64_t>(), 0);
  EXPECT_GT((mn == 2).sum().item<int64_t>(), 0);

  // Alpha dropout keeps the mean and variance of a standard normal input.
  Tensor n = randn({200000}, kFloat64);
  Tensor ad = tensor::alpha_dropout(n, 0.2, true);
  EXPECT_NEAR(ad.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(ad.std().item<double>(), 1.0, 0.02);
  EXPECT_TRUE(tensor::alpha_dropout(n, 0.2, false).equal(n));

  // The gradient is the mask over (1 - p).
  Tensor g = ones({1000}, dtype(kFloat64).requires_grad(true));
  Tensor out = tensor::dropout(g, 0.25, true);
  out.sum().backward();
  EXPECT_TRUE(g.grad().equal(out.detach()));
}

TEST(PortNN, DropoutModules) {
  manual_seed(1);
  nn::Dropout2d d2(0.5);
  Tensor img = ones({4, 6, 5, 5});
  Tensor y = d2(img);
  Tensor planes = y.flatten(2);
  EXPECT_TRUE(std::get<0>(planes.min(2)).equal(std::get<0>(planes.max(2))));
  d2->eval();
  EXPECT_TRUE(d2(img).equal(img));
  // Unbatched (C, H, W) input.
  d2->train();
  EXPECT_EQ(d2(ones({6, 5, 5})).sizes(), IntArrayRef({6, 5, 5}));
  nn::Dropout3d d3(nn::Dropout3dOptions(0.25));
  EXPECT_EQ(d3(ones({2, 3, 2, 2, 2})).sizes(), IntArrayRef({2, 3, 2, 2, 2}));
  expect_error([&] { d3(ones({2, 3})); }, {"dropout3d", "[2, 3]"});
  nn::AlphaDropout ad(0.1);
  ad->eval();
  Tensor r = randn({10});
  EXPECT_TRUE(ad(r).equal(r));
  nn::FeatureAlphaDropout fad(0.1);
  EXPECT_EQ(fad(ones({2, 3, 4})).sizes(), IntArrayRef({2, 3, 4}));
  // F:: forms, libtorch's options.
  EXPECT_TRUE(F::dropout2d(img, F::Dropout2dFuncOptions().p(0.5).training(false)).equal(img));
  EXPECT_TRUE(F::alpha_dropout(r, F::AlphaDropoutFuncOptions().p(0.5)).equal(r));  // training defaults to false
  std::ostringstream s;
  s << *d2;
  EXPECT_EQ(s.str(), "tensor::nn::Dropout2d(p=0.5, inplace=false)");
}

// ---- distances and small layers ----

TEST(PortNN, DistancesMatchPyTorch) {
  using namespace torch_ref;
  nn::CosineSimilarity cs(nn::CosineSimilarityOptions().dim(1));
  expect_case("CosineSimilarity broadcast", [&](auto& in) { return cs(in[0], in[1]); }, {det({4, 3}, 36), det({1, 3}, 37)},
              cosine_similarity_out, {{0, cosine_similarity_grad0}, {1, cosine_similarity_grad1}});
  nn::PairwiseDistance pd(nn::PairwiseDistanceOptions().p(3.0));
  expect_case_layouts("PairwiseDistance", [&](auto& in) { return pd(in[0], in[1]); }, {det({4, 3}, 36), det({4, 3}, 37)},
                      pairwise_distance_out, {{0, pairwise_distance_grad0}, {1, pairwise_distance_grad1}});
  expect_case_layouts("F::normalize", [](auto& in) { return F::normalize(in[0], F::NormalizeFuncOptions().p(2.0).dim(0)); },
                      {det({4, 3}, 38)}, normalize_out, {{0, normalize_grad0}});
}

TEST(PortNN, PixelShuffleAndBilinearMatchPyTorch) {
  using namespace torch_ref;
  nn::PixelShuffle ps(2);
  expect_case_layouts("PixelShuffle", [&](auto& in) { return ps(in[0]); }, {det({2, 8, 2, 3}, 39)}, pixel_shuffle_out,
                      {{0, pixel_shuffle_grad0}});
  EXPECT_EQ(ps(det({2, 8, 2, 3}, 39)).sizes(), IntArrayRef({2, 2, 4, 6}));
  nn::PixelUnshuffle pu(2);
  expect_case("PixelUnshuffle", [&](auto& in) { return pu(in[0]); }, {det({1, 2, 4, 6}, 40)}, pixel_unshuffle_out,
              {{0, pixel_unshuffle_grad0}});
  // Round trip.
  Tensor img = det({3, 4, 6, 8}, 41);
  EXPECT_TRUE(tensor::pixel_shuffle(tensor::pixel_unshuffle(img, 2), 2).equal(img));
  expect_error([&] { tensor::pixel_shuffle(det({1, 6, 2, 2}, 1), 2); }, {"pixel_shuffle", "[1, 6, 2, 2]", "divisible"});

  expect_case("bilinear", [](auto& in) { return tensor::bilinear(in[0], in[1], in[2], in[3]); },
              {det({3, 4}, 41), det({3, 2}, 42), det({5, 4, 2}, 43), det({5}, 44)}, bilinear_out,
              {{0, bilinear_grad0}, {1, bilinear_grad1}, {2, bilinear_grad2}, {3, bilinear_grad3}});
  nn::Bilinear bl(4, 2, 5);
  ASSERT_EQ(bl->named_parameters().size(), 2u);
  EXPECT_EQ(bl->weight.sizes(), IntArrayRef({5, 4, 2}));
  // libtorch's init: U(-1/sqrt(in1), 1/sqrt(in1)).
  EXPECT_LE(bl->weight.abs().max().item<double>(), 0.5);
  bl->to(kFloat64);
  {
    NoGradGuard g;
    bl->weight.copy_(det({5, 4, 2}, 43));
    bl->bias.copy_(det({5}, 44));
  }
  expect_case("Bilinear", [&](auto& in) { return bl(in[0], in[1]); }, {det({3, 4}, 41), det({3, 2}, 42)}, bilinear_out,
              {{0, bilinear_grad0}, {1, bilinear_grad1}});
  expect_error([&] { bl(det({3, 3}, 1), det({3, 2}, 1)); }, {"bilinear", "[3, 3]", "[5, 4, 2]"});
  nn::Bilinear nobias(nn::BilinearOptions(4, 2, 5).bias(false));
  EXPECT_FALSE(nobias->bias.defined());
}

TEST(PortNN, IdentityUnflattenFromPretrained) {
  nn::Identity id;
  Tensor x = det({2, 6}, 1);
  EXPECT_TRUE(id(x).is_same(x));
  nn::Unflatten uf(1, std::vector<int64_t>{2, 3});
  EXPECT_EQ(uf(x).sizes(), IntArrayRef({2, 2, 3}));
  nn::Sequential seq(nn::Linear(6, 6), nn::Identity(), nn::LeakyReLU(), nn::Unflatten(nn::UnflattenOptions(1, {3, 2})));
  EXPECT_EQ(seq->forward(x.to(kFloat32)).sizes(), IntArrayRef({2, 3, 2}));

  Tensor table = det({4, 3}, 9).to(kFloat32);
  auto emb = nn::Embedding::from_pretrained(table);
  EXPECT_FALSE(emb->weight.requires_grad());
  EXPECT_EQ(emb->options.num_embeddings(), 4);
  Tensor idx = tensor::tensor({int64_t{3}, int64_t{0}});
  EXPECT_TRUE(emb(idx).equal(table.index_select(0, idx)));
  auto trainable = nn::Embedding::from_pretrained(table, nn::EmbeddingFromPretrainedOptions().freeze(false).padding_idx(1));
  EXPECT_TRUE(trainable->weight.requires_grad());
  EXPECT_EQ(*trainable->options.padding_idx(), 1);
  expect_error([&] { nn::Embedding::from_pretrained(det({4}, 1)); }, {"from_pretrained", "2-dimensional", "[4]"});

  // ExpandingArray at the top level, as torch::ExpandingArray.
  tensor::ExpandingArray<2> ks(3);
  EXPECT_EQ(ks[0], 3);
  EXPECT_EQ(ks[1], 3);
}

// ---- bad input names the op, shapes and dtypes ----

TEST(PortNN, BadInputRaisesNamedErrors) {
  Tensor x = det({3, 5}, 1);
  expect_error([&] { tensor::glu(x, 1); }, {"glu", "even", "[3, 5]"});
  expect_error([&] { tensor::prelu(det({2, 3, 4}, 1), det({2}, 1)); }, {"prelu", "[2]", "[2, 3, 4]"});
  expect_error([&] { tensor::binary_cross_entropy(x, det({3, 5}, 2, 0, 1)); }, {"binary_cross_entropy", "between 0 and 1"});
  expect_error([&] { tensor::binary_cross_entropy(det({3, 5}, 2, 0, 1), det({5}, 2, 0, 1)); },
               {"binary_cross_entropy", "[5]", "[3, 5]"});
  expect_error([&] { tensor::mse_loss(x, det({4}, 1)); }, {"mse_loss", "[3, 5]", "[4]", "broadcast"});
  expect_error([&] { tensor::smooth_l1_loss(tensor::tensor({int64_t{1}}), tensor::tensor({int64_t{1}})); },
               {"smooth_l1_loss", "floating point", "int64"});
  expect_error([&] { tensor::nll_loss(x, tensor::tensor({int64_t{1}, int64_t{7}, int64_t{0}})); },
               {"nll_loss", "out of bounds", "7"});
  expect_error([&] { tensor::multi_margin_loss(x, tensor::tensor({int64_t{1}, int64_t{2}, int64_t{0}}), 3); },
               {"multi_margin_loss", "p == 1"});
  expect_error([&] { tensor::cosine_embedding_loss(x, det({3, 4}, 1), det({3}, 1)); },
               {"cosine_embedding_loss", "[3, 5]", "[3, 4]"});
  expect_error([&] { tensor::hardtanh(x, 1.0, -1.0); }, {"hardtanh", "min_val"});
  expect_error([&] { nn::Hardtanh(nn::HardtanhOptions().min_val(2).max_val(1)); }, {"Hardtanh", "max_val"});
  expect_error([&] { tensor::lstm_cell(det({2, 3}, 1), {det({2, 4}, 1), det({2, 4}, 1)}, det({16, 5}, 1), det({16, 4}, 1)); },
               {"lstm_cell", "[2, 3]", "[16, 5]"});
}

// ---- interpolate and Upsample ----

TEST(PortNN, InterpolateMatchesPyTorch) {
  using namespace torch_ref;
  using Opt = F::InterpolateFuncOptions;
  Tensor img = det({1, 2, 3, 4}, 90);
  auto run = [&](const std::string& what, Opt o, const Tensor& x, const std::vector<double>& out,
                 const std::vector<double>& grad) {
    expect_case_layouts(what, [o](auto& in) { return F::interpolate(in[0], o); }, {x}, out, {{0, grad}});
  };
  run("nearest x2", Opt().scale_factor(std::vector<double>{2.0}).mode(kNearest), img, interp_nearest_x2_out,
      interp_nearest_x2_grad0);
  run("nearest size", Opt().size(std::vector<int64_t>{5, 7}), img, interp_nearest_size_out, interp_nearest_size_grad0);
  run("nearest-exact", Opt().size(std::vector<int64_t>{5, 7}).mode(kNearestExact), img, interp_nearest_exact_out,
      interp_nearest_exact_grad0);
  run("bilinear", Opt().size(std::vector<int64_t>{5, 7}).mode(kBilinear).align_corners(false), img,
      interp_bilinear_out, interp_bilinear_grad0);
  run("bilinear align_corners", Opt().size(std::vector<int64_t>{5, 7}).mode(kBilinear).align_corners(true), img,
      interp_bilinear_ac_out, interp_bilinear_ac_grad0);
  run("bilinear scale_factor", Opt().scale_factor(std::vector<double>{1.7, 1.7}).mode(kBilinear), img,
      interp_bilinear_sf_out, interp_bilinear_sf_grad0);
  run("bilinear down", Opt().size(std::vector<int64_t>{2, 3}).mode(kBilinear), det({2, 1, 4, 7}, 91),
      interp_bilinear_down_out, interp_bilinear_down_grad0);
  run("linear", Opt().scale_factor(std::vector<double>{2.5}).mode(kLinear), det({2, 3, 4}, 92), interp_linear_out,
      interp_linear_grad0);
  run("trilinear align_corners", Opt().size(std::vector<int64_t>{3, 4, 5}).mode(kTrilinear).align_corners(true),
      det({1, 2, 2, 3, 2}, 93), interp_trilinear_ac_out, interp_trilinear_ac_grad0);
  run("area", Opt().size(std::vector<int64_t>{3, 5}).mode(kArea), det({1, 2, 4, 7}, 94), interp_area_out,
      interp_area_grad0);
  run("nearest 3-d", Opt().scale_factor(std::vector<double>{3.0}), det({2, 2, 3}, 95), interp_nearest_3d_out,
      interp_nearest_3d_grad0);

  // nn::Upsample forwards to interpolate.
  nn::Upsample up(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(kNearest));
  expect_near(vals(up(img)), interp_nearest_x2_out, 1e-12, "Upsample nearest");
  nn::Upsample upb(nn::UpsampleOptions().size(std::vector<int64_t>{5, 7}).mode(kBilinear).align_corners(true));
  expect_near(vals(upb(img)), interp_bilinear_ac_out, 1e-12, "Upsample bilinear");
  std::ostringstream s;
  s << *up;
  EXPECT_EQ(s.str(), "tensor::nn::Upsample(scale_factor=[2, 2], mode=nearest)");
  // float32 input.
  expect_near(vals(F::interpolate(img.to(kFloat32), Opt().size(std::vector<int64_t>{5, 7}).mode(kBilinear))),
              interp_bilinear_out, 1e-6, "bilinear float32");

  expect_error([&] { F::interpolate(img, Opt()); }, {"interpolate", "either size or scale_factor"});
  expect_error([&] { F::interpolate(img, Opt().size(std::vector<int64_t>{4, 4}).align_corners(true)); },
               {"interpolate", "align_corners", "nearest"});
  expect_error([&] { F::interpolate(img, Opt().size(std::vector<int64_t>{4}).mode(kLinear)); },
               {"interpolate", "linear", "3-d", "[1, 2, 3, 4]"});
  expect_error([&] { F::interpolate(img.squeeze(0), Opt().size(std::vector<int64_t>{4}).mode(kBicubic)); },
               {"interpolate", "bicubic", "4-d", "[2, 3, 4]"});
}

// ---- padding modules, instance norm, Softmax2d, 1-d pooling ----

TEST(PortNN, PaddingModulesMatchPyTorch) {
  using namespace torch_ref;
  nn::ReflectionPad2d rp(nn::ReflectionPad2dOptions({1, 2, 2, 0}));
  expect_case_layouts("ReflectionPad2d", [&](auto& in) { return rp(in[0]); }, {det({1, 2, 3, 4}, 96)},
                      reflection_pad2d_out, {{0, reflection_pad2d_grad0}});
  nn::ReplicationPad1d rep(2);
  expect_case_layouts("ReplicationPad1d", [&](auto& in) { return rep(in[0]); }, {det({2, 3}, 97)},
                      replication_pad1d_out, {{0, replication_pad1d_grad0}});
  nn::ZeroPad2d zp(nn::ZeroPad2dOptions({1, 0, 0, 2}));
  expect_case("ZeroPad2d", [&](auto& in) { return zp(in[0]); }, {det({1, 1, 2, 3}, 98)}, zero_pad2d_out,
              {{0, zero_pad2d_grad0}});
  nn::ConstantPad3d cp(1, 3.5);
  expect_case("ConstantPad3d", [&](auto& in) { return cp(in[0]); }, {det({1, 1, 2, 2, 2}, 99)}, constant_pad3d_out,
              {{0, constant_pad3d_grad0}});
  std::ostringstream s;
  s << *cp;
  EXPECT_EQ(s.str(), "tensor::nn::ConstantPad3d(padding=[1, 1, 1, 1, 1, 1], value=3.5)");
  expect_error([&] { rp(det({3, 4}, 1)); }, {"ReflectionPad2d", "3-d", "4-d", "[3, 4]"});
}

TEST(PortNN, InstanceNormMatchesPyTorch) {
  using namespace torch_ref;
  nn::InstanceNorm2d inorm(nn::InstanceNorm2dOptions(3).affine(true).track_running_stats(true));
  inorm->to(kFloat64);
  {
    NoGradGuard g;
    inorm->weight.copy_(det({3}, 101, 0.5, 1.5));
    inorm->bias.copy_(det({3}, 102));
  }
  expect_case("InstanceNorm2d train", [&](auto& in) { return inorm(in[0]); }, {det({2, 3, 4, 5}, 103, -2, 2)},
              instance_norm2d_out, {{0, instance_norm2d_grad0}});
  expect_near(vals(inorm->running_mean), instance_norm2d_running_mean, 1e-12, "InstanceNorm2d running_mean");
  expect_near(vals(inorm->running_var), instance_norm2d_running_var, 1e-12, "InstanceNorm2d running_var");
  EXPECT_EQ(inorm->num_batches_tracked.item<int64_t>(), 1);
  inorm->eval();
  expect_case("InstanceNorm2d eval", [&](auto& in) { return inorm(in[0]); }, {det({2, 3, 4, 5}, 104, -2, 2)},
              instance_norm2d_eval_out, {{0, instance_norm2d_eval_grad0}});
  nn::InstanceNorm1d in1(3);
  EXPECT_TRUE(in1->parameters().empty());
  expect_case_layouts("InstanceNorm1d", [&](auto& in) { return in1(in[0]); }, {det({2, 3, 6}, 105, -2, 2)},
                      instance_norm1d_out, {{0, instance_norm1d_grad0}});
  // Unbatched (C, L) input.
  expect_near(vals(in1(det({2, 3, 6}, 105, -2, 2)[1])),
              std::vector<double>(instance_norm1d_out.begin() + 18, instance_norm1d_out.end()), 1e-9,
              "InstanceNorm1d unbatched");
  expect_error([&] { in1(det({2, 3, 4, 5}, 1)); }, {"InstanceNorm1d", "[2, 3, 4, 5]"});
}

TEST(PortNN, Softmax2dAndPool1dMatchPyTorch) {
  using namespace torch_ref;
  nn::Softmax2d sm;
  expect_case_layouts("Softmax2d", [&](auto& in) { return sm(in[0]); }, {det({2, 3, 2, 2}, 106, -2, 2)},
                      softmax2d_out, {{0, softmax2d_grad0}});
  nn::MaxPool1d mp(nn::MaxPool1dOptions(3).stride(2).padding(1));
  expect_case_layouts("MaxPool1d", [&](auto& in) { return mp(in[0]); }, {det({2, 3, 7}, 107)}, max_pool1d_out,
                      {{0, max_pool1d_grad0}});
  nn::AvgPool1d ap(nn::AvgPool1dOptions(3).stride(2).padding(1).count_include_pad(false));
  expect_case_layouts("AvgPool1d", [&](auto& in) { return ap(in[0]); }, {det({2, 3, 7}, 108)}, avg_pool1d_out,
                      {{0, avg_pool1d_grad0}});
  nn::AdaptiveAvgPool1d aap(4);
  expect_case_layouts("AdaptiveAvgPool1d", [&](auto& in) { return aap(in[0]); }, {det({2, 3, 7}, 109)},
                      adaptive_avg_pool1d_out, {{0, adaptive_avg_pool1d_grad0}});
  expect_error([&] { mp(det({2, 3, 4, 5}, 1)); }, {"max_pool1d", "[2, 3, 4, 5]"});
}

// ---- ModuleDict, ParameterList, ParameterDict ----

TEST(PortNN, ModuleDictParameterListParameterDict) {
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> entries = {{"fc", nn::Linear(3, 4).ptr()},
                                                                              {"act", nn::LeakyReLU().ptr()}};
  nn::ModuleDict dict(entries);
  EXPECT_EQ(dict->size(), 2u);
  EXPECT_TRUE(dict->contains("fc"));
  EXPECT_EQ(dict->keys(), std::vector<std::string>({"fc", "act"}));
  EXPECT_EQ(dict->at<nn::LinearImpl>("fc").weight.sizes(), IntArrayRef({4, 3}));
  EXPECT_EQ(dict->named_parameters().keys(), std::vector<std::string>({"fc.weight", "fc.bias"}));
  dict->insert("out", nn::Linear(4, 2));
  EXPECT_EQ(dict->parameters().size(), 4u);
  auto popped = dict->pop("act");
  EXPECT_NE(std::dynamic_pointer_cast<nn::LeakyReLUImpl>(popped), nullptr);
  EXPECT_EQ(dict->named_children().size(), 2u);
  Tensor x = randn({2, 3});
  Tensor y = dict->at<nn::LinearImpl>("out").forward(dict->at<nn::LinearImpl>("fc").forward(x));
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 2}));
  expect_error([&] { (*dict)["missing"]; }, {"ModuleDict", "missing"});

  nn::ParameterList plist(randn({2}, dtype(kFloat32).requires_grad(true)), randn({3}, dtype(kFloat32).requires_grad(true)));
  plist->append(randn({4}));
  EXPECT_EQ(plist->size(), 3u);
  EXPECT_EQ(plist->named_parameters().keys(), std::vector<std::string>({"0", "1", "2"}));
  EXPECT_TRUE(plist[0].requires_grad());
  EXPECT_FALSE(plist->at(2).requires_grad());
  EXPECT_EQ(plist->parameters().size(), 3u);

  nn::ParameterDict pdict;
  pdict->insert("scale", ones({3}, dtype(kFloat32).requires_grad(true)));
  pdict->insert("shift", zeros({3}, dtype(kFloat32).requires_grad(true)));
  EXPECT_EQ(pdict->keys(), std::vector<std::string>({"scale", "shift"}));
  EXPECT_TRUE(pdict->get("scale").equal(ones({3})));
  pdict->to(kFloat64);
  EXPECT_EQ((*pdict)["shift"].dtype(), kFloat64);
  Tensor popped_p = pdict->pop("scale");
  EXPECT_EQ(pdict->size(), 1u);
  expect_error([&] { pdict->get("scale"); }, {"ParameterDict", "scale"});
}

TEST(PortNN, TripletWithDistanceAndGumbelSoftmax) {
  using namespace torch_ref;
  nn::TripletMarginWithDistanceLoss loss(
      nn::TripletMarginWithDistanceLossOptions()
          .distance_function([](const Tensor& x, const Tensor& y) { return 1.0 - tensor::cosine_similarity(x, y); })
          .margin(0.4)
          .swap(true));
  expect_case("TripletMarginWithDistanceLoss", [&](auto& in) { return loss(in[0], in[1], in[2]); },
              {det({4, 3}, 26), det({4, 3}, 27), det({4, 3}, 28)}, triplet_dist_cos_out,
              {{0, triplet_dist_cos_grad0}, {1, triplet_dist_cos_grad1}, {2, triplet_dist_cos_grad2}});
  // The default distance is pairwise_distance: the same as triplet_margin_loss.
  Tensor a = det({4, 3}, 26), p = det({4, 3}, 27), n = det({4, 3}, 28);
  EXPECT_NEAR(F::triplet_margin_with_distance_loss(a, p, n).item<double>(),
              tensor::triplet_margin_loss(a, p, n).item<double>(), 1e-12);

  manual_seed(5);
  Tensor logits = det({64, 5}, 3, -2, 2).requires_grad_(true);
  Tensor soft = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().tau(0.5));
  expect_near(vals(soft.sum(1)), std::vector<double>(64, 1.0), 1e-12, "gumbel_softmax rows sum to 1");
  Tensor hard = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().hard(true));
  expect_near(vals(hard.sum(1)), std::vector<double>(64, 1.0), 1e-12, "hard rows sum to 1");
  EXPECT_TRUE(hard.detach().eq(0).logical_or(hard.detach().eq(1)).all().item<bool>());
  (hard * det({64, 5}, 4)).sum().backward();
  EXPECT_GT(logits.grad().abs().sum().item<double>(), 0);
}
