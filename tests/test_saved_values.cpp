// Audit of the derivatives table: no row saves a value its formula does not read
// (Note [Save only what a needed formula reads] in src/autograd/Derivatives.cpp).
//
// A saved value is checked for in-place changes at backward, so a row that saves what its
// formula never reads makes a program fail for nothing (x.div(2).exp_() failed this way). For
// every differentiable case of the op table (tests/op_table.h), for the sets of inputs that
// require grad, and for each candidate value (every input and the output) this test asks two
// questions of the recorded graph, through public API only:
//   saved?  bump the candidate's version with a no-op in-place write (mul_(1) under
//           NoGradGuard); backward then fails with "modified by an inplace operation" exactly
//           when some node saved it;
//   read?   overwrite the candidate's values through data_ptr (which bumps no version, so the
//           saved value is used as it is now) and run backward again; the gradients change
//           when a formula reads it.
// A value that is saved but not read is a row to fix: it should not be saved.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <functional>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/op_table.h"

using namespace tensor;
using namespace tensor::optable;

namespace {

int g_saved_found = 0;  // candidates found saved (so the read probe ran), across the tests

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Inputs {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::pair<double, double>> domains;
};

// Fresh float64 leaves with the same values each call (seeded), the chosen ones requiring grad.
std::vector<Tensor> make_inputs(const Inputs& in, const std::vector<bool>& grad, uint64_t seed) {
  manual_seed(seed);
  std::vector<Tensor> v;
  for (size_t i = 0; i < in.shapes.size(); ++i) {
    auto [lo, hi] = in.domains[i];
    Tensor t = rand(in.shapes[i], kFloat64) * (hi - lo) + lo;
    v.push_back(t.detach().requires_grad_(grad[i]));
  }
  return v;
}

// Applies f to every element of a float64 tensor of any strides, writing through the pointer
// (no version bump).
void overwrite(const Tensor& t, const std::function<double(double, int64_t)>& f) {
  double* base = t.data_ptr<double>();
  const int64_t n = t.numel(), d = t.dim();
  std::vector<int64_t> idx(static_cast<size_t>(d), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int64_t j = 0; j < d; ++j) off += idx[static_cast<size_t>(j)] * t.stride(j);
    base[off] = f(base[off], k);
    for (int64_t j = d - 1; j >= 0; --j) {
      if (++idx[static_cast<size_t>(j)] < t.size(j)) break;
      idx[static_cast<size_t>(j)] = 0;
    }
  }
}

// The gradients of the inputs that require grad (zeros where a path is missing), for a fixed
// upstream gradient.
std::vector<Tensor> grads(const Tensor& out, const std::vector<Tensor>& in, const Tensor& gout) {
  for (const Tensor& t : in)
    if (t.requires_grad()) t.mutable_grad() = Tensor();
  out.backward(gout, /*retain_graph=*/true);
  std::vector<Tensor> g;
  for (const Tensor& t : in)
    if (t.requires_grad()) g.push_back(t.grad().defined() ? t.grad().clone() : zeros_like(t));
  return g;
}

// A fixed upstream gradient that is not constant: with ones, the gradient of a normalization
// does not depend on its weight (the centred sum of a constant vanishes).
Tensor upstream(const Tensor& out) {
  return (tensor::arange(out.numel(), TensorOptions(kFloat64)).remainder(7) * 0.3 - 0.8).reshape(out.sizes()).to(out.dtype());
}

// Values a formula reads only on inputs outside the op table's domain, so that no change
// within it changes the gradient; each entry says where it is read.
const std::map<std::string, std::string>& read_outside_the_domain() {
  static const std::map<std::string, std::string> m = {
      {"xlogy (requires grad: 10) input 0",
       "self is read only where other <= 0 (the gradient is 0 where self == 0 there, libtorch's rule); the "
       "table's other is positive"},
  };
  return m;
}

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].allclose(b[i], 1e-12, 1e-12, /*equal_nan=*/true)) return false;
  return true;
}

// Returns "" when fine, else what is wrong. `cand` = index of an input, or -1 for the output.
std::string probe(const std::string& name, const Fn& fn, const Inputs& in, const std::vector<bool>& grad, int cand,
                  uint64_t seed) {
  const std::string what = cand < 0 ? std::string("the output") : "input " + std::to_string(cand);
  auto pick = [&](const std::vector<Tensor>& v, const Tensor& out) { return cand < 0 ? out : v[static_cast<size_t>(cand)]; };
  // saved?
  bool saved = false;
  {
    std::vector<Tensor> v = make_inputs(in, grad, seed);
    Tensor out = fn(v);
    if (!out.requires_grad() || !out.is_floating_point()) return "";
    Tensor gout = upstream(out);
    {
      NoGradGuard ng;
      pick(v, out).mul_(1);
    }
    try {
      grads(out, v, gout);
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (msg.find("modified by an inplace operation") == std::string::npos)
        return name + ": backward after a no-op write to " + what + " failed otherwise: " + msg;
      saved = true;
    }
  }
  if (!saved) return "";
  ++g_saved_found;
  // read? Two overwrites: a sign flip with scaling, and a shift varying by element, so that
  // formulas that read only signs (relu) or only comparisons (maximum) see a change too.
  const std::vector<std::function<double(double, int64_t)>> changes = {
      [](double x, int64_t) { return -1.7 * x - 0.3; },
      [](double x, int64_t k) { return x + 0.37 * static_cast<double>((k % 5) - 2) + 0.11; }};
  for (const auto& change : changes) {
    std::vector<Tensor> v = make_inputs(in, grad, seed);
    Tensor out = fn(v);
    Tensor gout = upstream(out);
    std::vector<Tensor> g0 = grads(out, v, gout);
    Tensor c = pick(v, out);
    overwrite(c, change);
    std::vector<Tensor> g1;
    try {
      g1 = grads(out, v, gout);
    } catch (const Error&) {
      return "";  // the formula read the changed values and rejected them: it reads them
    }
    if (!same(g0, g1)) return "";
  }
  if (read_outside_the_domain().count(name + " " + what)) return "";
  return name + ": a node saves " + what + " but no formula reads it (backward gives the same gradients when it "
         "changes); a later in-place write to it would fail backward for nothing";
}

std::vector<std::vector<bool>> grad_sets(size_t n, bool each) {
  std::vector<std::vector<bool>> sets{std::vector<bool>(n, true)};
  if (each && n > 1)
    for (size_t i = 0; i < n; ++i) {
      std::vector<bool> s(n, false);
      s[i] = true;
      sets.push_back(s);
    }
  return sets;
}

void audit(const std::string& name, const Fn& fn, const Inputs& in, bool each_input, std::vector<std::string>& bad,
           int& probes) {
  const uint64_t seed = std::hash<std::string>{}(name) % 100000;
  for (const auto& g : grad_sets(in.shapes.size(), each_input)) {
    std::string set;
    for (bool b : g) set += b ? '1' : '0';
    for (int cand = -1; cand < static_cast<int>(in.shapes.size()); ++cand) {
      std::string r = probe(name + " (requires grad: " + set + ")", fn, in, g, cand, seed);
      ++probes;
      if (!r.empty()) bad.push_back(r);
    }
  }
}

bool has_float64(const std::vector<ScalarType>& d) {
  for (ScalarType t : d)
    if (t == kFloat64) return true;
  return false;
}

}  // namespace

TEST(SavedValues, ElementwiseRowsSaveOnlyWhatTheirFormulasRead) {
  std::vector<std::string> bad;
  int probes = 0;
  for (const auto& c : unary_cases()) {
    if (c.bool_out || !has_float64(c.dtypes)) continue;
    const double lo = c.lo + 0.05 * (c.hi - c.lo), hi = c.hi - 0.05 * (c.hi - c.lo);
    audit(c.name, [&c](const std::vector<Tensor>& v) { return c.fn(v[0]); }, {{{2, 3}}, {{lo, hi}}}, false, bad, probes);
  }
  for (const auto& c : binary_cases()) {
    if (c.bool_out || !has_float64(c.dtypes)) continue;
    audit(c.name, [&c](const std::vector<Tensor>& v) { return c.fn(v[0], v[1]); },
          {{{2, 3}, {2, 3}}, {{c.lo, c.hi}, {c.blo, c.bhi}}}, true, bad, probes);
  }
  for (const std::string& b : bad) ADD_FAILURE() << b;
  EXPECT_GT(probes, 100);
  // Most rows save something: the saved probe must find it (else the audit checks nothing).
  EXPECT_GT(g_saved_found, 40);
  std::printf("elementwise: %d probes, %d saved values checked as read\n", probes, g_saved_found);
}

TEST(SavedValues, StructuredRowsSaveOnlyWhatTheirFormulasRead) {
  std::vector<std::string> bad;
  int probes = 0;
  const int before = g_saved_found;
  for (const auto& c : structured_cases()) {
    Inputs in;
    for (const auto& s : c.shapes) {
      in.shapes.push_back(s);
      in.domains.emplace_back(-1.0, 1.0);
    }
    audit(c.name, c.fn, in, false, bad, probes);
  }
  EXPECT_GT(g_saved_found - before, 40);
  for (const std::string& b : bad) ADD_FAILURE() << b;
  EXPECT_GT(probes, 100);
  std::printf("structured: %d probes, %d saved values checked as read\n", probes, g_saved_found - before);
}

// The detector itself: a custom Function that saves a value it never reads is caught, and
// one that reads what it saves is not.
namespace {
struct SavesUnread : autograd::Function<SavesUnread> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& a) {
    ctx->save_for_backward({a});
    return a * 3;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    (void)ctx->get_saved_variables();  // unpacked (so version-checked) but unused
    return {g[0] * 3};
  }
};
struct SavesRead : autograd::Function<SavesRead> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& a) {
    ctx->save_for_backward({a});
    return a * a;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    return {g[0] * 2 * ctx->get_saved_variables()[0]};
  }
};
}  // namespace

TEST(SavedValues, TheAuditCatchesAnUnreadSavedValue) {
  std::vector<std::string> bad;
  int probes = 0;
  audit("SavesUnread", [](const std::vector<Tensor>& v) { return SavesUnread::apply(v[0]); }, {{{3}}, {{-1, 1}}}, false,
        bad, probes);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("saves input 0"), std::string::npos) << bad[0];
  bad.clear();
  audit("SavesRead", [](const std::vector<Tensor>& v) { return SavesRead::apply(v[0]); }, {{{3}}, {{-1, 1}}}, false, bad,
        probes);
  EXPECT_TRUE(bad.empty()) << bad[0];
}

// The program of issue 24: dividing by a number saves nothing the result's in-place exp_ breaks.
TEST(SavedValues, DivByScalarThenInPlaceExpBackwardRuns) {
  manual_seed(3);
  Tensor lv = randn({3, 2}, kFloat64).requires_grad_(true);
  auto s = lv.div(2).exp_();
  (randn({3, 2}, kFloat64).mul(s).add_(lv)).sum().backward();
  ASSERT_TRUE(lv.grad().defined());
  // Tensor divisor: a / b then an in-place write to the result works too (libtorch saves a and b).
  Tensor a = randn({4}, kFloat64).requires_grad_(true), b = (rand({4}, kFloat64) + 1).requires_grad_(true);
  Tensor q = a.div(b);
  q.exp_();
  q.sum().backward();
  // d/da exp(a/b) = exp(a/b)/b; d/db = -exp(a/b) a / b^2.
  Tensor e = (a.detach() / b.detach()).exp();
  EXPECT_TRUE(a.grad().allclose(e / b.detach(), 1e-12, 1e-12));
  EXPECT_TRUE(b.grad().allclose(-e * a.detach() / (b.detach() * b.detach()), 1e-12, 1e-12));
}
