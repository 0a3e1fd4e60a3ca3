// Every op of the op table (tests/op_table.h) gradient-checked in float64 by finite
// differences, first and second order, on contiguous, transposed and broadcast inputs.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"

#include "kernels/OpList.h"
#include "tests/op_table.h"

using namespace tensor;
using namespace tensor::optable;

namespace {
bool is_float_op(const std::vector<ScalarType>& dtypes) {
  for (ScalarType t : dtypes)
    if (t == kFloat64) return true;
  return false;
}
Tensor input(IntArrayRef shape, double lo, double hi, bool transposed) {
  Tensor u = (tensor::rand(shape, kFloat64) * (hi - lo) + lo);
  if (transposed) u = u.t().contiguous().t();
  return u.detach().requires_grad_(true);
}
using tensor::testing::check;
// Kinked or flat ops: finite differences are exact away from the kinks; second derivatives are 0.
bool has_second_derivative(const std::string& n) {
  return n != "floor" && n != "ceil" && n != "round" && n != "trunc" && n != "sign";
}
}  // namespace

TEST(GradCheck, UnaryOpsFirstAndSecondOrder) {
  manual_seed(11);
  for (const auto& c : unary_cases()) {
    if (!is_float_op(c.dtypes)) continue;
    for (bool transposed : {false, true}) {
      SCOPED_TRACE(c.name + (transposed ? " transposed" : " contiguous"));
      // Keep away from domain edges where finite differences straddle a pole or a kink.
      double lo = c.lo + 0.05 * (c.hi - c.lo), hi = c.hi - 0.05 * (c.hi - c.lo);
      Tensor x = transposed ? input({3, 2}, lo, hi, false).t().detach().requires_grad_(true)
                            : input({2, 3}, lo, hi, false);
      auto f = [&](const autograd::variable_list& in) { return c.fn(in[0]); };
      Tensor y = f({x});
      if (c.bool_out) {
        EXPECT_FALSE(y.requires_grad()) << c.name << " (bool output) must not require grad";
        break;
      }
      EXPECT_TRUE(y.requires_grad()) << c.name << " has no derivative entry and is not marked non-differentiable";
      check(c.name + " gradcheck", [&] { return autograd::gradcheck(f, {x}); });
      if (has_second_derivative(c.name)) check(c.name + " gradgradcheck", [&] { return autograd::gradgradcheck(f, {x}); });
    }
  }
}

TEST(GradCheck, BinaryOpsFirstAndSecondOrderWithBroadcast) {
  manual_seed(12);
  for (const auto& c : binary_cases()) {
    if (c.bool_out) {
      Tensor a = input({2, 3}, c.lo, c.hi, false), b = input({3}, c.blo, c.bhi, false);
      EXPECT_FALSE(c.fn(a, b).requires_grad()) << c.name << " (bool output) must not require grad";
      continue;
    }
    if (!is_float_op(c.dtypes)) continue;
    for (bool transposed : {false, true}) {
      SCOPED_TRACE(c.name + (transposed ? " transposed" : " contiguous"));
      Tensor a = input({2, 3}, c.lo, c.hi, transposed);
      Tensor b = input({3}, c.blo, c.bhi, false);  // broadcast across a's rows
      auto f = [&](const autograd::variable_list& in) { return c.fn(in[0], in[1]); };
      EXPECT_TRUE(f({a, b}).requires_grad()) << c.name << " has no derivative entry";
      check(c.name + " gradcheck", [&] { return autograd::gradcheck(f, {a, b}); });
      if (c.name != "remainder" && c.name != "fmod")
        check(c.name + " gradgradcheck", [&] { return autograd::gradgradcheck(f, {a, b}); });
    }
  }
}

TEST(GradCheck, ReductionsAndViews) {
  manual_seed(13);
  Tensor x = input({3, 4}, -1, 1, true);
  using F = std::function<Tensor(const autograd::variable_list&)>;
  const std::pair<const char*, F> cases[] = {
      {"sum", [](const autograd::variable_list& v) { return v[0].sum(); }},
      {"sum dim keepdim", [](const autograd::variable_list& v) { return v[0].sum({1}, true); }},
      {"sum dims", [](const autograd::variable_list& v) { return v[0].sum({0, -1}); }},
      {"mean dim", [](const autograd::variable_list& v) { return v[0].mean({0}); }},
      {"select", [](const autograd::variable_list& v) { return v[0].select(1, 2) * 3; }},
      {"slice step", [](const autograd::variable_list& v) { return v[0].slice(1, 1, 4, 2).exp(); }},
      {"transpose view", [](const autograd::variable_list& v) { return v[0].t().reshape({-1}).sin(); }},
      {"permute", [](const autograd::variable_list& v) { return v[0].unsqueeze(0).permute({2, 0, 1}) * 2; }},
      {"expand", [](const autograd::variable_list& v) { return v[0].unsqueeze(0).expand({2, 3, 4}).square(); }},
      {"squeeze", [](const autograd::variable_list& v) { return v[0].unsqueeze(1).squeeze(1).tanh(); }},
      {"index_select", [](const autograd::variable_list& v) { return v[0].index_select(1, tensor::tensor({3, 0, 3})); }},
      {"where", [](const autograd::variable_list& v) { return tensor::where(v[0] > 0, v[0].exp(), v[0] * 3); }},
      {"clamp", [](const autograd::variable_list& v) { return v[0].clamp(-0.5, 0.5) * v[0]; }},
      {"advanced index", [](const autograd::variable_list& v) {
         return v[0].index({Slice(), tensor::tensor({3, 0, 3})}).exp().sum() + v[0].index({v[0] > 0}).square().sum();
       }},
      {"index_put_", [](const autograd::variable_list& v) {
         Tensor t = v[0] * 2;
         t.index_put_({Slice(), tensor::tensor({0, 2})}, v[0].select(1, 3).unsqueeze(1).exp());
         t.index_put_({t.detach() < 0}, 0.5);
         return t.square();
       }},
      {"masked_select", [](const autograd::variable_list& v) { return v[0].masked_select(v[0].lt(0.2)).exp(); }},
      {"diagonal", [](const autograd::variable_list& v) { return v[0].diagonal(1).exp() + v[0].diagonal(-1, 1, 0).sum(); }},
      {"unfold", [](const autograd::variable_list& v) { return v[0].unfold(1, 2, 1).square(); }},
      {"clone", [](const autograd::variable_list& v) { return v[0].clone() * v[0].contiguous(); }},
  };
  for (const auto& [name, f] : cases) {
    SCOPED_TRACE(name);
    check(std::string(name) + " gradcheck", [&] { return autograd::gradcheck(f, {x}, 1e-6, 1e-4, 1e-3); });
    check(std::string(name) + " gradgradcheck", [&] { return autograd::gradgradcheck(f, {x}, 1e-6, 1e-4, 1e-3); });
  }
}

namespace {
// The op list's entry for a table row (nullptr for extra rows such as add_alpha).
const oplist::OpInfo* op_info(const std::string& name, bool binary) {
  const oplist::OpInfo* list = binary ? oplist::kBinary : oplist::kUnary;
  const int n = binary ? oplist::kNumBinary : oplist::kNumUnary;
  for (int i = 0; i < n; ++i)
    if (name == list[i].name && list[i].api != oplist::Api::Internal) return &list[i];
  return nullptr;
}
// A complex128 input with real parts in [lo, hi] and imaginary parts in [-0.5, 0.5].
Tensor complex_input(IntArrayRef shape, double lo, double hi) {
  Tensor re = tensor::rand(shape, kFloat64) * (hi - lo) + lo, im = tensor::rand(shape, kFloat64) - 0.5;
  return (re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).detach().requires_grad_(true);
}
}  // namespace

// Every differentiable row of the op table whose op accepts complex (the op list's dtype column)
// is gradient-checked in complex128: no hand-kept list to forget an op in.
TEST(GradCheck, ComplexElementwiseOpsFromTheOpList) {
  manual_seed(15);
  int checked = 0;
  for (const auto& c : unary_cases()) {
    const oplist::OpInfo* o = op_info(c.name, false);
    if (!o || !(o->dtypes & oplist::C) || c.bool_out) continue;
    SCOPED_TRACE(c.name);
    double lo = c.lo + 0.05 * (c.hi - c.lo), hi = c.hi - 0.05 * (c.hi - c.lo);
    Tensor z = complex_input({2, 3}, lo, hi);
    auto f = [&](const autograd::variable_list& in) { return c.fn(in[0]); };
    if (!f({z}).requires_grad()) continue;  // not differentiable (checked by the real-valued test)
    check("complex " + c.name + " gradcheck", [&] { return autograd::gradcheck(f, {z}); });
    check("complex " + c.name + " gradgradcheck", [&] { return autograd::gradgradcheck(f, {z}); });
    ++checked;
  }
  for (const auto& c : binary_cases()) {
    const oplist::OpInfo* o = op_info(c.name, true);
    if (!o || !(o->dtypes & oplist::C) || c.bool_out) continue;
    SCOPED_TRACE(c.name);
    Tensor a = complex_input({2, 3}, c.lo, c.hi), b = complex_input({3}, c.blo, c.bhi);  // b broadcasts
    auto f = [&](const autograd::variable_list& in) { return c.fn(in[0], in[1]); };
    check("complex " + c.name + " gradcheck", [&] { return autograd::gradcheck(f, {a, b}); });
    check("complex " + c.name + " gradgradcheck", [&] { return autograd::gradgradcheck(f, {a, b}); });
    ++checked;
  }
  EXPECT_EQ(checked, 28);  // 23 unary and 5 binary ops accept complex and are differentiable
  // add and sub with a complex alpha: the gradient of b is grad * conj(alpha).
  Tensor a = complex_input({2, 3}, -1, 1), b = complex_input({3}, -1, 1);
  for (bool sub : {false, true}) {
    auto f = [sub](const autograd::variable_list& in) {
      return sub ? tensor::sub(in[0], in[1], complex128(0.5, 0.25)) : tensor::add(in[0], in[1], complex128(0.5, 0.25));
    };
    check(std::string(sub ? "sub" : "add") + " complex alpha", [&] { return autograd::gradcheck(f, {a, b}); });
  }
}

TEST(GradCheck, ComplexFollowsConjugateWirtinger) {
  manual_seed(14);
  auto cinput = [](IntArrayRef shape) {
    Tensor re = tensor::rand(shape, kFloat64) + 0.5, im = tensor::rand(shape, kFloat64) - 0.5;
    return (re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).detach().requires_grad_(true);
  };
  using F = std::function<Tensor(const autograd::variable_list&)>;
  // Views and reductions (the elementwise ops are checked from the op list above).
  const std::pair<const char*, F> unary[] = {
      {"sum", [](const auto& v) { return v[0].sum(); }},   {"select", [](const auto& v) { return v[0].select(1, 0) * 2; }},
      {"transpose", [](const auto& v) { return v[0].t().exp(); }},
      // The reductions' complex formulas (conj of the saved values where the formula has them).
      {"sum dim", [](const auto& v) { return v[0].sum({1}); }},
      {"mean", [](const auto& v) { return v[0].mean({0}); }},
      {"prod", [](const auto& v) { return v[0].prod(1); }},
      {"prod all", [](const auto& v) { return v[0].prod(); }},
      {"cumsum", [](const auto& v) { return v[0].cumsum(1); }},
      {"cumprod", [](const auto& v) { return v[0].cumprod(1); }},
      {"var", [](const auto& v) { return v[0].var({1}); }},
      {"std", [](const auto& v) { return v[0].std({1}); }},
      {"norm", [](const auto& v) { return v[0].norm(2, {1}); }},
  };
  for (const auto& [name, f] : unary) {
    Tensor z = cinput({2, 3});
    check(std::string("complex ") + name, [&] { return autograd::gradcheck(f, {z}); });
  }
  // The rows written as for real numbers (Note [Recording template]): the template conjugates.
  const std::pair<const char*, F> products[] = {
      {"mm", [](const auto& v) { return v[0].mm(v[1]); }},
      {"bmm", [](const auto& v) { return v[0].unsqueeze(0).bmm(v[1].unsqueeze(0)); }},
      {"addmm complex alpha beta", [](const auto& v) {
         return tensor::addmm(v[0].narrow(1, 0, 2), v[0], v[1], complex128(0.5, -1), complex128(2, 0.5)); }},
      {"linear", [](const auto& v) { return tensor::linear(v[0], v[1].t(), v[1].select(0, 0)); }},
      {"where", [](const auto& v) { return tensor::where(v[0].real().narrow(1, 0, 2) > 0.8, v[0].narrow(1, 0, 2), v[1].narrow(0, 0, 2)); }},
      {"index_select mean", [](const auto& v) { return v[0].index_select(1, tensor::tensor({2, 0, 2})).mean({1}) * v[1].sum(); }},
  };
  for (const auto& [name, f] : products) {
    Tensor a = cinput({2, 3}), b = cinput({3, 2});
    check(std::string("complex ") + name, [&] { return autograd::gradcheck(f, {a, b}); });
    check(std::string("complex ") + name + " second order", [&] { return autograd::gradgradcheck(f, {a, b}); });
  }
  // A real input feeding a complex computation, and the seed's log convention: grad / conj(z).
  Tensor r = (tensor::rand({3}, kFloat64) + 0.5).requires_grad_();
  check("real into complex", [&] {
    return autograd::gradcheck([](const auto& v) { return (v[0].to(kComplex128) * complex128(1, 2)).exp(); }, {r});
  });
  const std::pair<const char*, F> to_real[] = {
      {"abs", [](const auto& v) { return v[0].abs(); }},
      {"real * imag", [](const auto& v) { return v[0].real() * v[0].imag().exp(); }},
      {"abs of product", [](const auto& v) { return (v[0] * v[0].select(0, 1)).abs().sum(); }},
  };
  for (const auto& [name, f] : to_real) {
    Tensor zz = cinput({2, 3});
    check(std::string("complex ") + name, [&] { return autograd::gradcheck(f, {zz}); });
  }
  Tensor z = tensor::tensor({1.0}, kFloat64).to(kComplex128) * complex128(1, 1);
  z.requires_grad_();
  tensor::log(z).sum().backward();  // grad_output 1: grad = 1 / conj(1 + i) = (1 + i) / 2
  EXPECT_NEAR(z.grad()[0].item<complex128>().real(), 0.5, 1e-12);
  EXPECT_NEAR(z.grad()[0].item<complex128>().imag(), 0.5, 1e-12);
}

TEST(GradCheck, AsStrided) {
  manual_seed(21);
  Tensor x = randn({12}, kFloat64).requires_grad_(true);
  // Overlapping windows (elements read twice get summed gradients), an offset, a transposed
  // input (storage order differs from logical order) and a slice of a bigger storage.
  check("as_strided windows", [&] {
    return autograd::gradcheck([](const auto& v) { return v[0].as_strided({4, 3}, {2, 1}, 1) * 1.5; }, {x});
  });
  check("as_strided second order", [&] {
    return autograd::gradgradcheck([](const auto& v) { return v[0].as_strided({3, 3}, {3, 1}, 2).pow(2); }, {x});
  });
  Tensor m = randn({3, 4}, kFloat64).requires_grad_(true);
  check("as_strided of a transpose", [&] {
    return autograd::gradcheck([](const auto& v) { Tensor t = v[0].t(); return t.as_strided({2, 2}, {1, 4}, 1); }, {m});
  });
  check("as_strided of a slice", [&] {
    return autograd::gradcheck([](const auto& v) { Tensor s = v[0].narrow(0, 1, 2); return s.as_strided({4}, {2}, 4); }, {m});
  });
  // Hand-checked: y = x.as_strided({2, 2}, {1, 1}) reads x[0], x[1], x[1], x[2].
  Tensor a = tensor::arange(4, kFloat64).requires_grad_(true);
  a.as_strided({2, 2}, {1, 1}).sum().backward();
  EXPECT_TRUE(a.grad().equal(tensor::tensor({1.0, 2.0, 1.0, 0.0}, kFloat64)));
  // Reading outside the input, or through an expanded input, has no gradient: a clear error.
  Tensor big = randn({10}, kFloat64).requires_grad_(true);
  Tensor part = big.narrow(0, 2, 3);
  EXPECT_THROW(part.as_strided({4}, {1}, 0), Error);
  Tensor e = randn({1}, kFloat64).requires_grad_(true).expand({3});
  EXPECT_THROW(e.as_strided({2}, {1}, 0), Error);
}

// Every structured op of the op table, gradient-checked on contiguous inputs and on
// non-contiguous views of the same shapes (Note [Op table]).
TEST(GradCheck, StructuredOpTable) {
  manual_seed(31);
  for (const auto& c : structured_cases()) {
    for (bool strided : {false, true}) {
      std::vector<Tensor> in;
      for (const auto& s : c.shapes) {
        Tensor t;
        if (!strided) {
          t = randn(s, kFloat64);
        } else if (s.size() >= 2) {
          std::vector<int64_t> swapped(s);
          std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
          t = randn(swapped, kFloat64).transpose(-1, -2);  // same shape, transposed strides
        } else {
          t = randn({2 * s[0]}, kFloat64).slice(0, 0, 2 * s[0], 2);  // stride 2
        }
        in.push_back(t.requires_grad_(true));
      }
      const std::string what = c.name + (strided ? " (non-contiguous)" : "");
      auto f = [&c](const autograd::variable_list& v) { return c.fn(v); };
      Tensor probe = f(in);
      EXPECT_TRUE(probe.requires_grad()) << what << ": the op recorded nothing (no derivative entry)";
      check(what + " gradcheck", [&] { return autograd::gradcheck(f, in, 1e-6, 1e-5, 1e-3); });
      if (c.second_order) check(what + " gradgradcheck", [&] { return autograd::gradgradcheck(f, in, 1e-6, 1e-5, 1e-3); });
    }
  }
}

// The same table in complex128: a case whose op accepts complex inputs is gradient-checked
// there too (an op that rejects complex raises tensor::Error and is skipped), so no op that
// accepts complex can miss its complex check.
TEST(GradCheck, StructuredOpTableComplex) {
  manual_seed(32);
  int checked = 0;
  for (const auto& c : structured_cases()) {
    std::vector<Tensor> in;
    for (const auto& s : c.shapes) {
      Tensor re = randn(s, kFloat64), im = randn(s, kFloat64);
      in.push_back((re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).detach().requires_grad_(true));
    }
    auto f = [&c](const autograd::variable_list& v) { return c.fn(v); };
    Tensor probe;
    try {
      probe = f(in);
    } catch (const Error&) {
      continue;  // the op does not accept complex inputs
    }
    SCOPED_TRACE(c.name);
    ++checked;
    check(c.name + " complex gradcheck", [&] { return autograd::gradcheck(f, in, 1e-6, 1e-5, 1e-3); });
    if (c.second_order)
      check(c.name + " complex gradgradcheck", [&] { return autograd::gradgradcheck(f, in, 1e-6, 1e-5, 1e-3); });
  }
  EXPECT_GE(checked, 5);  // at least the matrix products, sum, mean and index_select
}
