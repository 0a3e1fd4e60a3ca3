// Gradients of the matrix products by finite differences (float64 and complex128), second
// derivatives by gradgradcheck, and the matmul-based RNN of the autograd issue.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"

using namespace tensor;
using tensor::testing::check;

namespace {

Tensor leaf(IntArrayRef sizes) { return randn(sizes, kFloat64).requires_grad_(true); }
Tensor cleaf(IntArrayRef sizes) {
  Tensor re = randn(sizes, kFloat64), im = randn(sizes, kFloat64);
  Tensor j = scalar_tensor(std::complex<double>(0, 1), kComplex128);
  return (re.to(kComplex128) + im.to(kComplex128) * j).detach().requires_grad_(true);
}

void both(const std::string& what, const std::function<Tensor(const autograd::variable_list&)>& f,
          const autograd::variable_list& in) {
  check(what, [&] { return autograd::gradcheck(f, in); });
  check(what + " (second order)", [&] { return autograd::gradgradcheck(f, in); });
}

}  // namespace

TEST(LinalgGrad, MmBmmAddmm) {
  manual_seed(11);
  both("mm", [](const auto& v) { return mm(v[0], v[1]); }, {leaf({3, 4}), leaf({4, 2})});
  both("mm transposed", [](const auto& v) { return mm(v[0].t(), v[1]); }, {leaf({4, 3}), leaf({4, 2})});
  both("bmm", [](const auto& v) { return bmm(v[0], v[1]); }, {leaf({2, 3, 4}), leaf({2, 4, 2})});
  both("bmm broadcast batch", [](const auto& v) { return bmm(v[0], v[1].expand({3, 4, 2})); },
       {leaf({3, 2, 4}), leaf({1, 4, 2})});
  both("addmm row", [](const auto& v) { return addmm(v[0], v[1], v[2]); }, {leaf({2}), leaf({3, 4}), leaf({4, 2})});
  both("addmm beta alpha", [](const auto& v) { return addmm(v[0], v[1], v[2], 0.5, -2.0); },
       {leaf({3, 1}), leaf({3, 4}), leaf({4, 2})});
  // Only one input requiring grad: the other is not saved, and its gradient is not computed.
  Tensor fixed = randn({4, 2}, kFloat64);
  both("mm one input", [fixed](const auto& v) { return mm(v[0], fixed); }, {leaf({3, 4})});
}

TEST(LinalgGrad, LinearMatmulDotOuterEinsum) {
  manual_seed(12);
  both("linear 3-D with bias", [](const auto& v) { return linear(v[0], v[1], v[2]); },
       {leaf({2, 3, 4}), leaf({5, 4}), leaf({5})});
  both("linear without bias", [](const auto& v) { return linear(v[0], v[1]); }, {leaf({3, 4}), leaf({2, 4})});
  both("linear 1-D", [](const auto& v) { return linear(v[0], v[1], v[2]); }, {leaf({4}), leaf({3, 4}), leaf({3})});
  both("matmul vv", [](const auto& v) { return matmul(v[0], v[1]); }, {leaf({4}), leaf({4})});
  both("matmul mv", [](const auto& v) { return matmul(v[0], v[1]); }, {leaf({3, 4}), leaf({4})});
  both("matmul vm", [](const auto& v) { return matmul(v[0], v[1]); }, {leaf({3}), leaf({3, 4})});
  both("matmul 3-D x 2-D", [](const auto& v) { return matmul(v[0], v[1]); }, {leaf({2, 3, 4}), leaf({4, 2})});
  both("matmul broadcast", [](const auto& v) { return matmul(v[0], v[1]); }, {leaf({2, 1, 3, 4}), leaf({3, 4, 2})});
  both("matmul 1-D x 3-D", [](const auto& v) { return matmul(v[0], v[1]); }, {leaf({4}), leaf({2, 4, 3})});
  both("dot", [](const auto& v) { return dot(v[0], v[1]); }, {leaf({5}), leaf({5})});
  both("outer", [](const auto& v) { return outer(v[0], v[1]); }, {leaf({3}), leaf({2})});
  both("einsum attention", [](const auto& v) { return einsum("bqd,bkd->bqk", {v[0], v[1]}); },
       {leaf({2, 3, 4}), leaf({2, 5, 4})});
  both("einsum trace and chain", [](const auto& v) { return einsum("ii,ij,jk->k", {v[0], v[1], v[2]}); },
       {leaf({3, 3}), leaf({3, 4}), leaf({4, 2})});
}

TEST(LinalgGrad, Complex) {
  manual_seed(13);
  check("complex mm", [] { return autograd::gradcheck([](const auto& v) { return mm(v[0], v[1]); }, {cleaf({3, 2}), cleaf({2, 4})}); });
  check("complex bmm", [] { return autograd::gradcheck([](const auto& v) { return bmm(v[0], v[1]); }, {cleaf({2, 3, 2}), cleaf({2, 2, 3})}); });
  check("complex addmm", [] {
    return autograd::gradcheck([](const auto& v) { return addmm(v[0], v[1], v[2], std::complex<double>(0.5, 1), std::complex<double>(2, -1)); },
                               {cleaf({3, 4}), cleaf({3, 2}), cleaf({2, 4})});
  });
  check("complex linear", [] { return autograd::gradcheck([](const auto& v) { return linear(v[0], v[1], v[2]); }, {cleaf({2, 3}), cleaf({4, 3}), cleaf({4})}); });
  check("complex matmul", [] { return autograd::gradcheck([](const auto& v) { return matmul(v[0], v[1]); }, {cleaf({2, 2, 3}), cleaf({3, 2})}); });
}

TEST(LinalgGrad, Float32GradientsMatchFloat64) {
  // The oneDNN path's gradients (float32) agree with the float64 reference path's.
  manual_seed(14);
  Tensor x64 = randn({16, 32}, kFloat64), w64 = randn({8, 32}, kFloat64), b64 = randn({8}, kFloat64);
  auto grads = [](Tensor x, Tensor w, Tensor b) {
    x.requires_grad_(true); w.requires_grad_(true); b.requires_grad_(true);
    (linear(x, w, b).tanh() * linear(x, w, b)).sum().backward();
    return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
  };
  auto g64 = grads(x64.clone(), w64.clone(), b64.clone());
  auto g32 = grads(x64.to(kFloat32), w64.to(kFloat32), b64.to(kFloat32));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(g32[i].to(kFloat64).allclose(g64[i], 1e-4, 1e-4)) << "input " << i;
}

TEST(LinalgGrad, TanhRnnOverTwentySteps) {
  // h_{t+1} = tanh(W_h h_t + W_x x_t + b) with shared weights, loss = sum of the last state.
  manual_seed(15);
  Tensor xs = randn({20, 3, 4}, kFloat64) * 0.5;
  Tensor h0 = randn({3, 5}, kFloat64) * 0.5;
  auto rnn = [xs, h0](const autograd::variable_list& v) {
    Tensor h = h0;
    for (int64_t t = 0; t < 20; ++t) h = tanh(linear(h, v[0]) + linear(xs[t], v[1], v[2]));
    return h;
  };
  Tensor wh = (randn({5, 5}, kFloat64) * 0.3).requires_grad_(true);
  Tensor wx = (randn({5, 4}, kFloat64) * 0.3).requires_grad_(true);
  Tensor b = (randn({5}, kFloat64) * 0.1).requires_grad_(true);
  check("tanh RNN, 20 steps", [&] { return autograd::gradcheck(rnn, {wh, wx, b}); });
}
