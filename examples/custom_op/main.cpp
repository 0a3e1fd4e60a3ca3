// A user-defined op, written against the public headers only: a fused "softplus with a learned
// sharpness" y = log(1 + exp(beta * x)) / beta, with a CPU kernel registered in the dispatcher
// and a backward through autograd::Function, then checked by gradcheck and used in training.
#include <tensor/tensor.h>

#include <cmath>
#include <cstdio>

using namespace tensor;

namespace {

// The kernel: float32 and float64, any strides (made contiguous), numerically stable form.
Tensor softplus_cpu(const Tensor& x, double beta) {
  Tensor xc = x.contiguous();
  Tensor out = empty(x.sizes(), x.options());
  auto run = [&](auto* px, auto* po) {
    for (int64_t i = 0; i < out.numel(); ++i) {
      const double z = beta * static_cast<double>(px[i]);
      const double y = z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
      po[i] = static_cast<std::remove_pointer_t<decltype(po)>>(y / beta);
    }
  };
  if (x.dtype() == kFloat64) run(xc.data_ptr<double>(), out.data_ptr<double>());
  else if (x.dtype() == kFloat32) run(xc.data_ptr<float>(), out.data_ptr<float>());
  else throw Error("demo::softplus: expected float32 or float64, got another dtype");
  return out;
}

TENSOR_LIBRARY(demo, m) {
  m.def("demo::softplus(Tensor x, float beta) -> Tensor");
  m.impl("softplus", DispatchKey::CPU, &softplus_cpu);
}

// The backward: dy/dx = sigmoid(beta * x), written with public ops so it is differentiable too.
struct Softplus : autograd::Function<Softplus> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, double beta) {
    ctx->save_for_backward({x});
    ctx->saved_data["beta"] = beta;
    return dispatch::call("demo::softplus", x, beta);
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    Tensor x = ctx->get_saved_variables()[0];
    const double beta = ctx->saved_data["beta"].to_double();
    return {g[0] * sigmoid(x * beta), Tensor()};
  }
};

}  // namespace

int main() {
  manual_seed(0);
  // 1. Values against the formula.
  Tensor x = tensor::tensor({-30.0, -1.0, 0.0, 2.0, 40.0}, kFloat64);
  Tensor y = Softplus::apply(x, 2.0);
  Tensor want = (x * 2.0).exp().log1p() / 2.0;
  want.index_put_({4}, 40.0);  // log1p(exp(80)) / 2 = 40 to double precision
  const double err = (y - want).abs().max().item<double>();
  std::printf("demo::softplus max error vs formula: %.3g\n", err);

  // 2. Gradients by finite differences, on a non-contiguous input.
  Tensor a = randn({4, 6}, kFloat64).t().requires_grad_(true);
  const bool ok = autograd::gradcheck([](const autograd::variable_list& v) { return Softplus::apply(v[0], 1.5); }, {a});
  std::printf("gradcheck: %s\n", ok ? "passed" : "FAILED");

  // 3. Used in a model: fit y = 3x + 1 through a softplus layer.
  Tensor w = zeros({1}, kFloat32).requires_grad_(true), b = zeros({1}, kFloat32).requires_grad_(true);
  optim::SGD opt({w, b}, optim::SGDOptions(0.05));
  Tensor xs = rand({64, 1}) * 2, ys = xs * 3 + 1;
  double loss_v = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    Tensor loss = (Softplus::apply(xs * w + b, 4.0) - ys).square().mean();
    loss.backward();
    opt.step();
    loss_v = loss.item<double>();
  }
  std::printf("fit after 300 steps: loss %.2e, w %.3f, b %.3f\n", loss_v, w.item<double>(), b.item<double>());
  return err < 1e-12 && ok && loss_v < 1e-3 ? 0 : 1;
}
