// Ported-program test (issue 14): libtorch autograd programs written in libtorch's spelling with
// `torch::` renamed to `tensor::`. Deep graphs (a 100,000-node chain built, differentiated and
// destroyed; a reentrant backward 10,000 levels deep), and custom Functions that change their
// inputs in place (mark_dirty, libtorch's documented contract), and libtorch's autograd spellings
// (Variable, tensor_list, Edge::function, top-level AutoGradMode). Expected values are closed forms
// computed in the test, never taken from the code under test.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <type_traits>
#include <vector>

#include "tests/test_util.h"

using tensor::testing::expect_error;

namespace {

// ---- Deep graphs ----

// Peak stack growth seen by DeepReentrant's backwards: on each thread, the distance between the
// highest and the lowest address of a local variable of one of its backward frames. It shows that
// nesting does not pile every level onto one stack.
std::atomic<std::uintptr_t> g_peak_stack{0};
thread_local std::uintptr_t t_stack_hi = 0;
void note_stack() {
  volatile char here = 0;
  const auto sp = reinterpret_cast<std::uintptr_t>(&here);
  if (t_stack_hi == 0 || sp > t_stack_hi) t_stack_hi = sp;
  std::uintptr_t used = t_stack_hi - sp, seen = g_peak_stack.load();
  while (used > seen && !g_peak_stack.compare_exchange_weak(seen, used)) {
  }
}

// y = 2 * x, whose backward at depth d > 0 first runs a whole backward of its own on a fresh
// graph DeepReentrant(leaf, d - 1), from inside the engine, and adds that graph's gradient to
// its own: backward(d) = 2 + backward(d - 1), backward(0) = 2, so x.grad() = 2 * (depth + 1).
struct DeepReentrant : tensor::autograd::Function<DeepReentrant> {
  static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x, int64_t depth) {
    ctx->saved_data["depth"] = depth;
    return x * 2;
  }
  static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                  tensor::autograd::variable_list grad_output) {
    note_stack();
    const int64_t depth = ctx->saved_data["depth"].toInt();
    tensor::Tensor inner = tensor::zeros_like(grad_output[0]);
    if (depth > 0) {
      tensor::Tensor leaf = tensor::ones({1}, tensor::kFloat64).requires_grad_();
      {
        tensor::AutoGradMode enable_grad(true);
        DeepReentrant::apply(leaf, depth - 1).sum().backward();
      }
      inner = leaf.grad();
    }
    return {grad_output[0] * 2 + inner, tensor::Tensor()};
  }
};

}  // namespace

TEST(PortAutograd, HundredThousandNodeChainBuildsBackpropagatesAndIsDestroyed) {
  // y_n = x * w^n: dy/dx = w^n and dy/dw = n * x * w^(n - 1). Every MulBackward0 saves both
  // operands, so tearing the graph down (without a backward that frees them, then after one)
  // walks 100,000 nodes and 200,000 saved tensors.
  constexpr int n = 100000;
  const double x0 = 0.5, w0 = 1.00001;
  auto x = tensor::tensor({x0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto w = tensor::tensor({w0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  const auto start = std::chrono::steady_clock::now();
  {
    auto y = x;
    for (int i = 0; i < n; ++i) y = y * w;
    EXPECT_EQ(y.grad_fn()->name(), "MulBackward0");
  }  // destroyed unused: every saved tensor is still alive
  auto y = x;
  for (int i = 0; i < n; ++i) y = y * w;
  y.sum().backward();
  EXPECT_NEAR(x.grad().item<double>(), std::pow(w0, n), 1e-9 * std::pow(w0, n));
  EXPECT_NEAR(w.grad().item<double>(), n * x0 * std::pow(w0, n - 1), 1e-9 * n * std::pow(w0, n));
  y = tensor::Tensor();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ measured ] 2 x 100,000-node chains built, one differentiated, both destroyed: %.2f s\n", secs);
}

TEST(PortAutograd, CustomFunctionChainIsDestroyedIteratively) {
  // A chain of custom Functions that save their input: each node holds the previous one both
  // through its edge and through the saved tensor's grad_fn.
  struct Halve : tensor::autograd::Function<Halve> {
    static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x) {
      ctx->save_for_backward({x});
      return x * 0.5;
    }
    static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                    tensor::autograd::variable_list g) {
      (void)ctx->get_saved_variables();
      return {g[0] * 0.5};
    }
  };
  auto x = tensor::ones({1}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto y = x;
  for (int i = 0; i < 100000; ++i) y = Halve::apply(y);
  EXPECT_EQ(y.grad_fn()->name(), "CppNode");
  y = tensor::Tensor();  // must not overflow the stack
  auto z = x;
  for (int i = 0; i < 1000; ++i) z = Halve::apply(z);
  z.sum().backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), std::ldexp(1.0, -1000));
}

TEST(PortAutograd, ReentrantBackwardTenThousandLevelsDeep) {
  for (int64_t depth : {int64_t{1}, int64_t{100}, int64_t{10000}}) {
    g_peak_stack = 0;
    auto x = tensor::ones({1}, tensor::dtype(tensor::kFloat64).requires_grad(true));
    const auto start = std::chrono::steady_clock::now();
    DeepReentrant::apply(x, depth).sum().backward();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_DOUBLE_EQ(x.grad().item<double>(), 2.0 * static_cast<double>(depth + 1)) << "depth " << depth;
    std::printf("[ measured ] reentrant depth %lld: %.3f s, peak stack growth on one thread %.1f KiB\n",
                static_cast<long long>(depth), secs, static_cast<double>(g_peak_stack.load()) / 1024.0);
    // Every level's frames on one stack would take depth times a level's share; bounded nesting
    // per thread keeps it under a megabyte however deep the recursion goes.
    EXPECT_LT(g_peak_stack.load(), std::uintptr_t{1} << 20) << "depth " << depth;
  }
}

TEST(PortAutograd, ReentrantBackwardKeepsGradModeAndPropagatesErrors) {
  // The nested backward may run on another thread (Note [Reentrant backward depth]): it must see
  // the caller's grad mode, and an error thrown deep inside must reach the outermost caller.
  struct Throws : tensor::autograd::Function<Throws> {
    static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x, int64_t depth) {
      ctx->saved_data["depth"] = depth;
      return x.clone();
    }
    static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                    tensor::autograd::variable_list g) {
      const int64_t depth = ctx->saved_data["depth"].toInt();
      if (depth == 0) throw tensor::Error("Throws: reached the bottom");
      auto leaf = tensor::ones({1}, tensor::kFloat64).requires_grad_();
      {
        tensor::AutoGradMode enable_grad(true);
        auto y = Throws::apply(leaf, depth - 1);
        EXPECT_TRUE(y.requires_grad()) << "grad mode was lost at depth " << depth;
        y.sum().backward();
      }
      return {g[0], tensor::Tensor()};
    }
  };
  auto x = tensor::ones({1}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  expect_error([&] { Throws::apply(x, 3000).sum().backward(); }, {"Throws: reached the bottom"});
}

// ---- Custom Function in-place semantics ----

namespace {

// libtorch's in-place custom Function idiom: change the input, mark it dirty, return it.
struct MulTwoInplace : tensor::autograd::Function<MulTwoInplace> {
  static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x;
  }
  static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext*,
                                                  tensor::autograd::variable_list grad_output) {
    return {grad_output[0] * 2};
  }
};

// The same, writing through data_ptr(), which no version counter sees.
struct AddOneRaw : tensor::autograd::Function<AddOneRaw> {
  static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x) {
    double* p = x.data_ptr<double>();
    for (int64_t i = 0; i < x.numel(); ++i) p[i] += 1;
    ctx->mark_dirty({x});
    return x;
  }
  static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext*,
                                                  tensor::autograd::variable_list grad_output) {
    return {grad_output[0]};
  }
};

}  // namespace

TEST(PortAutograd, MarkDirtyRebasesHistoryAndBumpsTheVersionOnce) {
  auto leaf = tensor::tensor({1.0, 2.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto a = leaf * 1;
  const auto v0 = a._version();
  auto out = MulTwoInplace::apply(a);
  EXPECT_TRUE(out.is_same(a)) << "the dirty input is returned as itself";
  EXPECT_EQ(a._version(), v0 + 1) << "the in-place op's bump, not a second one";
  ASSERT_TRUE(a.grad_fn());
  EXPECT_EQ(a.grad_fn()->name(), "CppNode");
  tensor::testing::expect_near(tensor::testing::vals(a), {2.0, 4.0}, 0, "a after MulTwoInplace");
  // d(sum(3 * 2 * leaf))/d(leaf) = 6: the gradient flows through the custom node, then MulBackward1.
  (out * 3).sum().backward();
  tensor::testing::expect_near(tensor::testing::vals(leaf.grad()), {6.0, 6.0}, 0, "leaf.grad()");

  // A write the version counter did not see is still counted: mark_dirty bumps it once.
  auto b = leaf * 1;
  const auto w0 = b._version();
  AddOneRaw::apply(b);
  EXPECT_EQ(b._version(), w0 + 1);
  tensor::testing::expect_near(tensor::testing::vals(b), {2.0, 3.0}, 0, "b after AddOneRaw");
}

TEST(PortAutograd, MarkDirtyMakesAnEarlierSaveStale) {
  // b.sin() saved a; the custom Function then changed a in place. libtorch refuses the backward
  // through sin, whether forward changed a with an in-place op or behind the counter's back.
  auto leaf = tensor::tensor({0.5, 1.5}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  {
    auto a = leaf * 1;
    auto s = a.sin();
    MulTwoInplace::apply(a);
    expect_error([&] { s.sum().backward(); },
                 {"SinBackward0", "one of the variables needed for gradient computation has been modified by an "
                                  "inplace operation"});
  }
  {
    auto a = leaf * 1;
    auto s = a.sin();
    AddOneRaw::apply(a);
    expect_error([&] { s.sum().backward(); }, {"modified by an inplace operation", "expected version 0"});
  }
  {
    // A custom Function's own saved tensor, changed after the call.
    struct SaveX : tensor::autograd::Function<SaveX> {
      static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x) {
        ctx->save_for_backward({x});
        return x * x;
      }
      static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                      tensor::autograd::variable_list g) {
        return {2 * ctx->get_saved_variables()[0] * g[0]};
      }
    };
    auto a = leaf * 1;
    auto y = SaveX::apply(a);
    MulTwoInplace::apply(a);
    expect_error([&] { y.sum().backward(); }, {"modified by an inplace operation", "saved tensor 0"});
  }
  {
    // Saving x and then changing it in the same forward is fine (libtorch saves after forward):
    // backward sees the changed x. y = 2x, saved 2x; backward returns 2 * saved = 4x0 per unit.
    struct SaveThenDouble : tensor::autograd::Function<SaveThenDouble> {
      static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x) {
        ctx->save_for_backward({x});
        x.mul_(2);
        ctx->mark_dirty({x});
        return x;
      }
      static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                      tensor::autograd::variable_list g) {
        return {ctx->get_saved_variables()[0] * g[0]};
      }
    };
    leaf.mutable_grad() = tensor::Tensor();
    auto a = leaf * 1;
    SaveThenDouble::apply(a).sum().backward();
    tensor::testing::expect_near(tensor::testing::vals(leaf.grad()), {1.0, 3.0}, 0, "leaf.grad() through the saved, changed x");
  }
}

TEST(PortAutograd, InPlaceOnALeafThatRequiresGradInsideForwardIsRejected) {
  auto leaf = tensor::tensor({1.0, 2.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  expect_error([&] { MulTwoInplace::apply(leaf); },
               {"a leaf Variable that requires grad is being used in an in-place operation", "input 0",
                "float64"});
  EXPECT_TRUE(leaf.is_leaf());
  EXPECT_FALSE(leaf.grad_fn());
  // Under NoGradGuard nothing is recorded, so the leaf may change (as an optimizer step does).
  {
    tensor::NoGradGuard no_grad;
    auto out = MulTwoInplace::apply(leaf);
    EXPECT_TRUE(out.is_same(leaf));
  }
  EXPECT_TRUE(leaf.is_leaf());
  // A leaf that does not require grad is an ordinary input: it takes the node as its history
  // when another input makes the call recorded.
  struct AddInplace : tensor::autograd::Function<AddInplace> {
    static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x, tensor::Tensor y) {
      x.add_(y);
      ctx->mark_dirty({x});
      return x;
    }
    static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext*,
                                                    tensor::autograd::variable_list g) {
      return {g[0], g[0]};
    }
  };
  auto buf = tensor::zeros({2}, tensor::kFloat64);
  auto w = tensor::tensor({3.0, 4.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto out = AddInplace::apply(buf, w);
  EXPECT_TRUE(out.is_same(buf));
  EXPECT_FALSE(buf.is_leaf());
  out.sum().backward();
  tensor::testing::expect_near(tensor::testing::vals(w.grad()), {1.0, 1.0}, 0, "w.grad()");
  // A dirty tensor must be returned.
  struct ForgetsToReturn : tensor::autograd::Function<ForgetsToReturn> {
    static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x) {
      x.mul_(2);
      ctx->mark_dirty({x});
      return x * 1;
    }
    static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext*,
                                                    tensor::autograd::variable_list g) {
      return {g[0]};
    }
  };
  auto nonleaf = leaf * 1;
  expect_error([&] { ForgetsToReturn::apply(nonleaf); }, {"marked as dirty", "not returned"});
}

// ---- libtorch's autograd spellings ----

TEST(PortAutograd, AutogradSpellings) {
  static_assert(std::is_same_v<tensor::autograd::Variable, tensor::Tensor>);
  static_assert(std::is_same_v<tensor::autograd::tensor_list, std::vector<tensor::Tensor>>);
  static_assert(std::is_same_v<tensor::autograd::variable_list, tensor::autograd::tensor_list>);

  // y = x * w + x: the AddBackward0 node's edges lead to MulBackward0 (input 0) and to x's
  // AccumulateGrad, each through Edge::function and Edge::input_nr.
  tensor::autograd::Variable x = tensor::tensor({2.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  tensor::autograd::Variable w = tensor::tensor({3.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  tensor::autograd::Variable y = x * w + x;
  const auto& edges = y.grad_fn()->next_edges();
  ASSERT_EQ(edges.size(), 2u);
  ASSERT_TRUE(edges[0].is_valid() && edges[1].is_valid());
  EXPECT_EQ(edges[0].function->name(), "MulBackward0");
  EXPECT_EQ(edges[0].input_nr, 0u);
  EXPECT_EQ(edges[1].function->name(), "AccumulateGrad");
  const tensor::autograd::Edge none;
  EXPECT_FALSE(none.is_valid());

  // dy/dx = w + 1 = 4, dy/dw = x = 2, through autograd::grad with a tensor_list.
  tensor::autograd::tensor_list grads = tensor::autograd::grad({y}, {x, w});
  EXPECT_DOUBLE_EQ(grads[0].item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(grads[1].item<double>(), 2.0);

  // tensor::AutoGradMode, tensor::GradMode and tensor::NoGradGuard at the top level, as torch::.
  EXPECT_TRUE(tensor::GradMode::is_enabled());
  {
    tensor::NoGradGuard no_grad;
    EXPECT_FALSE(tensor::GradMode::is_enabled());
    EXPECT_FALSE((x * 2).requires_grad());
    {
      tensor::AutoGradMode enable_grad(true);
      EXPECT_TRUE(tensor::GradMode::is_enabled());
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE(tensor::GradMode::is_enabled());
  }
  {
    tensor::AutoGradMode disable_grad(false);
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_TRUE((x * 2).requires_grad());
}

namespace {
// Level d: a fresh graph y = 3 * h, h = 2 * leaf, whose hook on the non-leaf h runs level d - 1
// (a whole backward) before passing the gradient on. Returns leaf.grad() = 6 and counts levels.
int g_hook_levels = 0;
double hook_level(int64_t d) {
  ++g_hook_levels;
  auto leaf = tensor::ones({1}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto h = leaf * 2;
  h.register_hook([d](tensor::Tensor g) {
    if (d > 0) {
      tensor::AutoGradMode enable_grad(true);
      EXPECT_DOUBLE_EQ(hook_level(d - 1), 6.0);
    }
    return g;
  });
  (h * 3).sum().backward();
  return leaf.grad().item<double>();
}
}  // namespace

TEST(PortAutograd, ReentrantBackwardFromTensorHooksTenThousandLevelsDeep) {
  g_hook_levels = 0;
  EXPECT_DOUBLE_EQ(hook_level(10000), 6.0);
  EXPECT_EQ(g_hook_levels, 10001);
}

// A Function that saves its own output: backward without retain_graph frees the saved tensors
// (so the output no longer holds its node through ctx: no reference cycle, which AddressSanitizer's
// leak check would report), and a second backward says so, as libtorch.
namespace {
struct ExpSavesOutput : tensor::autograd::Function<ExpSavesOutput> {
  static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, const tensor::Tensor& x) {
    auto y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                  tensor::autograd::variable_list grad_output) {
    return {grad_output[0] * ctx->get_saved_variables()[0]};
  }
};
}  // namespace

TEST(PortAutograd, SavedOutputIsFreedByBackward) {
  auto x = tensor::tensor({0.0, 1.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto l = ExpSavesOutput::apply(x).sum();
  l.backward(tensor::Tensor(), /*retain_graph=*/true);
  l.backward();  // retained once: d/dx sum(exp(x)) = exp(x), accumulated twice
  tensor::testing::expect_near(tensor::testing::vals(x.grad()), {2.0, 2.0 * std::exp(1.0)}, 1e-12, "x.grad()");
  try {
    l.backward();
    FAIL() << "a third backward through freed saved tensors must raise";
  } catch (const tensor::Error& e) {
    EXPECT_NE(std::string(e.what()).find("backward through the graph a second time"), std::string::npos) << e.what();
  }
}

// A saved output keeps only a weak link to its node (libtorch's SavedVariable for outputs): a
// Function that saves its output and is never differentiated is freed with its output, and the
// saved output handed to backward still carries the node as its history, so double backward
// through it works.
TEST(PortAutograd, SavedOutputNeverDifferentiatedIsFreed) {
  std::weak_ptr<tensor::autograd::Node> node;
  {
    auto x = tensor::tensor({0.5, -1.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
    auto y = ExpSavesOutput::apply(x);
    node = y.grad_fn();
    ASSERT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired()) << "the node outlived its output: a reference cycle through the saved output";

  // d/dx sum(exp(x)) = exp(x) uses the saved output; differentiating that again through the
  // saved output's restored history gives exp(x) once more.
  auto x = tensor::tensor({0.5, -1.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto g = tensor::autograd::grad({ExpSavesOutput::apply(x).sum()}, {x}, {}, /*retain_graph=*/true,
                                  /*create_graph=*/true)[0];
  tensor::testing::expect_near(tensor::testing::vals(g), {std::exp(0.5), std::exp(-1.0)}, 1e-12, "first derivative");
  auto gg = tensor::autograd::grad({g.sum()}, {x})[0];
  tensor::testing::expect_near(tensor::testing::vals(gg), {std::exp(0.5), std::exp(-1.0)}, 1e-12, "second derivative");
}

// ---- Custom Functions that change a view of their input in place ----
namespace {
// Changes x in place and also returns a second tensor: libtorch refuses this when x is a view.
struct MulTwoInplaceAndTriple : tensor::autograd::Function<MulTwoInplaceAndTriple> {
  static tensor::autograd::variable_list forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return {x, x * 3};
  }
  static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext*,
                                                  tensor::autograd::variable_list g) {
    return {g[0] * 2 + g[1] * 6};
  }
};
// The dirty input is the second argument: its gradient is the second entry of backward's result.
struct AddScaledInplace : tensor::autograd::Function<AddScaledInplace> {
  static tensor::Tensor forward(tensor::autograd::AutogradContext* ctx, tensor::Tensor w, tensor::Tensor x) {
    ctx->save_for_backward({w});
    x.mul_(w);
    ctx->mark_dirty({x});
    return x;
  }
  static tensor::autograd::variable_list backward(tensor::autograd::AutogradContext* ctx,
                                                  tensor::autograd::variable_list g) {
    auto w = ctx->get_saved_variables()[0];
    // d(x * w)/dw needs x's old value; the test passes x = ones, so it is g.
    return {g[0], g[0] * w};
  }
};
}  // namespace

// As libtorch's rebase_history: the base of a dirty view takes the change into its history
// (CopySlices), so gradients through the base see the custom op.
TEST(PortAutograd, MarkDirtyOnAViewRebasesTheBase) {
  auto a = tensor::tensor({1.0, 2.0, 3.0, 4.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto b = a * 1;
  auto v = b.narrow(0, 1, 2);
  auto out = MulTwoInplace::apply(v);
  EXPECT_TRUE(out.is_same(v));
  tensor::testing::expect_near(tensor::testing::vals(b), {1.0, 4.0, 6.0, 4.0}, 0, "b after the view was doubled");
  ASSERT_TRUE(b.grad_fn());
  EXPECT_EQ(b.grad_fn()->name(), "CopySlices");
  (b * tensor::tensor({1.0, 10.0, 100.0, 1000.0}, tensor::dtype(tensor::kFloat64))).sum().backward();
  tensor::testing::expect_near(tensor::testing::vals(a.grad()), {1.0, 20.0, 200.0, 1000.0}, 0, "a.grad()");

  // The view is the second argument, and the other argument needs its gradient too.
  auto w = tensor::tensor({3.0, 5.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto c = tensor::ones({2, 2}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  auto d = c * 1;
  AddScaledInplace::apply(w, d.select(1, 0));  // a strided view: column 0
  tensor::testing::expect_near(tensor::testing::vals(d), {3.0, 1.0, 5.0, 1.0}, 0, "d");
  (d * tensor::tensor({{1.0, 2.0}, {4.0, 8.0}}, tensor::dtype(tensor::kFloat64))).sum().backward();
  tensor::testing::expect_near(tensor::testing::vals(c.grad()), {3.0, 2.0, 20.0, 8.0}, 0, "c.grad()");
  tensor::testing::expect_near(tensor::testing::vals(w.grad()), {1.0, 4.0}, 0, "w.grad()");
}

TEST(PortAutograd, MarkDirtyOnAViewIsRefusedWhereLibtorchRefusesIt) {
  auto a = tensor::tensor({1.0, 2.0, 3.0, 4.0}, tensor::dtype(tensor::kFloat64).requires_grad(true));
  // Several outputs.
  expect_error([&] { MulTwoInplaceAndTriple::apply((a * 1).narrow(0, 0, 2)); },
               {"Functions which modify views in-place must return a single Variable"});
  // A view of a leaf that requires grad.
  expect_error([&] { MulTwoInplace::apply(a.narrow(0, 0, 2)); },
               {"a view of a leaf Variable that requires grad is being used in an in-place operation"});
  // An output of a function that returns several views.
  expect_error([&] { MulTwoInplace::apply((a * 1).unbind(0)[1]); }, {"returns multiple views"});
  // Without recording (no input requires grad) the same calls just run.
  auto p = tensor::tensor({1.0, 2.0, 3.0}, tensor::dtype(tensor::kFloat64));
  MulTwoInplaceAndTriple::apply(p.narrow(0, 1, 2));
  tensor::testing::expect_near(tensor::testing::vals(p), {1.0, 4.0, 6.0}, 0, "p");
}
