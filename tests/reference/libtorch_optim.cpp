// Reference trajectories from Debian's libtorch 1.13 C++ for optim::RMSprop, Adagrad and LBFGS
// (tests/test_optim_more.cpp compares with them):
//
//   g++ -std=c++17 -O1 -D_GLIBCXX_USE_CXX11_ABI=1 tests/reference/libtorch_optim.cpp \
//       -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 -o /tmp/lt_optim && \
//       /tmp/lt_optim > tests/reference/libtorch_optim_ref.h
//
// Two problems with fixed starting points, both float64 unless a case says float32:
//   rosenbrock: x = [-1.5, 2], f = (1 - x0)^2 + 100 (x1 - x0^2)^2;
//   linreg:     W [2, 3], b [2], f = mean((X W^T + b - Y)^2) over the 5 rows of X and Y below.
// A row of a trajectory is every parameter's values, flattened and concatenated, after one step.
#include <torch/torch.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using torch::Tensor;

const std::vector<double> kRosen0 = {-1.5, 2.0};
const std::vector<double> kX = {0.5, -1.0, 2.0, 1.5, 0.25, -0.5, -0.75, 1.25, 0.0, 2.0, -0.5, 1.0, 0.1, 0.9, -1.2};
const std::vector<double> kY = {1.0, -0.5, 0.25, 2.0, -1.5, 0.75, 3.0, 0.0, -0.2, 1.1};
const std::vector<double> kW0 = {0.1, -0.2, 0.3, -0.4, 0.5, 0.05};
const std::vector<double> kB0 = {0.2, -0.1};

Tensor leaf(const std::vector<double>& v, std::vector<int64_t> shape, torch::Dtype dt) {
  return torch::tensor(v, torch::kFloat64).reshape(shape).to(dt).requires_grad_(true);
}

Tensor rosen_loss(const Tensor& x) {
  Tensor a = 1 - x[0];
  Tensor b = x[1] - x[0] * x[0];
  return a * a + 100 * b * b;
}

Tensor linreg_loss(const Tensor& W, const Tensor& b) {
  Tensor X = torch::tensor(kX, torch::kFloat64).reshape({5, 3}).to(W.dtype());
  Tensor Y = torch::tensor(kY, torch::kFloat64).reshape({5, 2}).to(W.dtype());
  Tensor r = X.matmul(W.t()) + b - Y;
  return (r * r).mean();
}

std::vector<double> flat(const std::vector<Tensor>& ps) {
  std::vector<double> out;
  for (const auto& p : ps) {
    Tensor c = p.detach().to(torch::kFloat64).contiguous();
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(c.data_ptr<double>()[i]);
  }
  return out;
}

void print_rows(const std::string& name, const std::vector<std::vector<double>>& rows) {
  printf("const std::vector<std::vector<double>> %s = {\n", name.c_str());
  for (const auto& r : rows) {
    printf("    {");
    for (size_t i = 0; i < r.size(); ++i) printf("%s%.17g", i ? ", " : "", r[i]);
    printf("},\n");
  }
  printf("};\n");
}

// `steps` plain steps (zero_grad, backward, step) of `opt` on the problem.
template <typename Opt>
std::vector<std::vector<double>> run(Opt& opt, const std::vector<Tensor>& ps, bool rosen, int steps) {
  std::vector<std::vector<double>> rows;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = rosen ? rosen_loss(ps[0]) : linreg_loss(ps[0], ps[1]);
    loss.backward();
    opt.step();
    rows.push_back(flat(ps));
  }
  return rows;
}

void rmsprop_case(const std::string& name, bool rosen, torch::optim::RMSpropOptions o,
                  torch::Dtype dt = torch::kFloat64) {
  std::vector<Tensor> ps = rosen ? std::vector<Tensor>{leaf(kRosen0, {2}, dt)}
                                 : std::vector<Tensor>{leaf(kW0, {2, 3}, dt), leaf(kB0, {2}, dt)};
  torch::optim::RMSprop opt(ps, o);
  print_rows(name, run(opt, ps, rosen, 20));
}

void adagrad_case(const std::string& name, bool rosen, torch::optim::AdagradOptions o,
                  torch::Dtype dt = torch::kFloat64) {
  std::vector<Tensor> ps = rosen ? std::vector<Tensor>{leaf(kRosen0, {2}, dt)}
                                 : std::vector<Tensor>{leaf(kW0, {2, 3}, dt), leaf(kB0, {2}, dt)};
  torch::optim::Adagrad opt(ps, o);
  print_rows(name, run(opt, ps, rosen, 20));
}

// `steps` calls of LBFGS::step(closure); per step also the returned loss, the closure's call
// count, and the state's func_evals and n_iter.
void lbfgs_case(const std::string& name, bool rosen, torch::optim::LBFGSOptions o, int steps) {
  std::vector<Tensor> ps =
      rosen ? std::vector<Tensor>{leaf(kRosen0, {2}, torch::kFloat64)}
            : std::vector<Tensor>{leaf(kW0, {2, 3}, torch::kFloat64), leaf(kB0, {2}, torch::kFloat64)};
  torch::optim::LBFGS opt(ps, o);
  int64_t calls = 0;
  auto closure = [&] {
    ++calls;
    opt.zero_grad();
    Tensor loss = rosen ? rosen_loss(ps[0]) : linreg_loss(ps[0], ps[1]);
    loss.backward();
    return loss;
  };
  std::vector<std::vector<double>> rows, info;
  for (int s = 0; s < steps; ++s) {
    calls = 0;
    double loss = opt.step(closure).item<double>();
    rows.push_back(flat(ps));
    auto& st =
        static_cast<torch::optim::LBFGSParamState&>(*opt.state().at(c10::guts::to_string(ps[0].unsafeGetTensorImpl())));
    info.push_back({loss, double(calls), double(st.func_evals()), double(st.n_iter())});
  }
  print_rows(name, rows);
  print_rows(name + "_info", info);
}

}  // namespace

int main() {
  using torch::optim::AdagradOptions;
  using torch::optim::LBFGSOptions;
  using torch::optim::RMSpropOptions;
  printf("// Generated by tests/reference/libtorch_optim.cpp with libtorch %s: do not edit.\n", TORCH_VERSION);
  printf("// Rows: every parameter's values after each step; _info rows: loss returned by step(),\n");
  printf("// closure calls in that step, state func_evals and n_iter after it.\n");
  printf("#pragma once\n#include <vector>\nnamespace libtorch_ref {\n");

  rmsprop_case("rmsprop_plain", true, RMSpropOptions(0.01));
  rmsprop_case("rmsprop_momentum", true, RMSpropOptions(0.01).momentum(0.9));
  rmsprop_case("rmsprop_centered", true, RMSpropOptions(0.01).centered(true));
  rmsprop_case("rmsprop_all", true,
               RMSpropOptions(0.005).alpha(0.9).eps(1e-6).momentum(0.5).centered(true).weight_decay(0.1));
  rmsprop_case("rmsprop_linreg", false, RMSpropOptions(0.02).momentum(0.3).weight_decay(0.05));
  rmsprop_case("rmsprop_float32", false, RMSpropOptions(0.02).centered(true).momentum(0.9), torch::kFloat32);
  {  // Two groups: W with its own options, b with the defaults.
    Tensor W = leaf(kW0, {2, 3}, torch::kFloat64), b = leaf(kB0, {2}, torch::kFloat64);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{W},
                        std::make_unique<RMSpropOptions>(RMSpropOptions(0.03).momentum(0.9).centered(true)));
    groups.emplace_back(std::vector<Tensor>{b});
    torch::optim::RMSprop opt(groups, RMSpropOptions(0.01).weight_decay(0.2));
    print_rows("rmsprop_groups", run(opt, {W, b}, false, 20));
  }

  adagrad_case("adagrad_plain", true, AdagradOptions(0.1));
  adagrad_case("adagrad_decay_init", true, AdagradOptions(0.1).lr_decay(0.1).initial_accumulator_value(0.5));
  adagrad_case("adagrad_wd_eps", true, AdagradOptions(0.05).weight_decay(0.1).eps(1e-3));
  adagrad_case("adagrad_linreg", false, AdagradOptions(0.2).lr_decay(0.05).initial_accumulator_value(0.1));
  adagrad_case("adagrad_float32", false, AdagradOptions(0.2).weight_decay(0.01), torch::kFloat32);
  {  // Two groups. libtorch fills every sum from the defaults' initial_accumulator_value, so the
     // group's own options keep that value here (tests/test_optim_more.cpp says why).
    Tensor W = leaf(kW0, {2, 3}, torch::kFloat64), b = leaf(kB0, {2}, torch::kFloat64);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{W}, std::make_unique<AdagradOptions>(
                                                    AdagradOptions(0.3).lr_decay(0.2).initial_accumulator_value(0.25)));
    groups.emplace_back(std::vector<Tensor>{b});
    torch::optim::Adagrad opt(groups, AdagradOptions(0.1).weight_decay(0.1).initial_accumulator_value(0.25));
    print_rows("adagrad_groups", run(opt, {W, b}, false, 20));
  }

  lbfgs_case("lbfgs_rosen_fixed", true, LBFGSOptions(0.05).max_iter(4), 6);
  lbfgs_case("lbfgs_rosen_wolfe", true, LBFGSOptions(1).max_iter(5).history_size(3).line_search_fn("strong_wolfe"), 8);
  lbfgs_case("lbfgs_rosen_wolfe_default", true, LBFGSOptions(1).line_search_fn("strong_wolfe"), 3);
  lbfgs_case("lbfgs_linreg_fixed", false, LBFGSOptions(0.5).max_iter(3).max_eval(2), 5);
  lbfgs_case("lbfgs_linreg_wolfe", false, LBFGSOptions(1).max_iter(10).line_search_fn("strong_wolfe"), 3);
  printf("}  // namespace libtorch_ref\n");
}
