// Custom ops: schema parsing, registration through TENSOR_LIBRARY and the explicit Library
// API, boxed calls, dispatch by key, and the errors users see.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/test_util.h"

using namespace tensor;
namespace dispatch = tensor::dispatch;
using tensor::testing::expect_error;

namespace {

// ---- kernels, written over raw float data as a user would ----

Tensor axpby_cpu(const Tensor& x, const Tensor& y, double a, double b) {
  Tensor xc = x.contiguous(), yc = y.contiguous();
  Tensor out = empty(x.sizes());
  const float* px = xc.data_ptr<float>();
  const float* py = yc.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = static_cast<float>(a * px[i] + b * py[i]);
  return out;
}

// Returns (min, max) of a float tensor as 0-dim tensors.
std::tuple<Tensor, Tensor> minmax_cpu(Tensor x) {
  Tensor xc = x.contiguous();
  const float* p = xc.data_ptr<float>();
  float lo = p[0], hi = p[0];
  for (int64_t i = 1; i < x.numel(); ++i) {
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  return {tensor::tensor({lo}).reshape({}), tensor::tensor({hi}).reshape({})};
}

// Exercises every parameter kind: out[i] = (flip ? -1 : 1) * x[i] * scale + bias[i] + k + sum(extras)[i],
// reshaped to `sizes`.
Tensor mixed_cpu(const Tensor& x, std::optional<Tensor> bias, int64_t k, bool flip, IntArrayRef sizes,
                 TensorList extras, const std::optional<double>& scale) {
  Tensor xc = x.contiguous();
  Tensor out = empty(x.sizes());
  const float* px = xc.data_ptr<float>();
  float* po = out.data_ptr<float>();
  double s = scale.value_or(1.0) * (flip ? -1.0 : 1.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = px[i] * s + static_cast<double>(k);
    if (bias) v += bias->contiguous().data_ptr<float>()[i];
    for (const Tensor& e : extras) v += e.contiguous().data_ptr<float>()[i];
    po[i] = static_cast<float>(v);
  }
  return out.reshape(sizes);
}

// Takes float and int (not double / int64_t) to check the narrowing unboxers.
Tensor scale_cpu(const Tensor& x, float s, int times) {
  Tensor xc = x.contiguous();
  Tensor out = empty(x.sizes());
  const float* px = xc.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * s * static_cast<float>(times);
  return out;
}

std::atomic<int> g_autograd_calls{0};

// An Autograd kernel that only counts and forwards to the backend kernel.
Tensor twice_autograd(const Tensor& x) {
  ++g_autograd_calls;
  return dispatch::redispatch("testops::twice", DispatchKey::Autograd, x);
}
Tensor twice_cpu(const Tensor& x) { return axpby_cpu(x, x, 1.0, 1.0); }

int g_void_calls = 0;
void touch_cpu(const Tensor& x, int64_t n) { g_void_calls += static_cast<int>(n); }

// A factory-like op without tensor arguments (dispatches to the CPU).
Tensor iota_cpu(int64_t n) {
  Tensor out = empty({n});
  for (int64_t i = 0; i < n; ++i) out.data_ptr<float>()[i] = static_cast<float>(i);
  return out;
}

}  // namespace

TENSOR_LIBRARY(testops, m) {
  m.def("testops::axpby(Tensor x, Tensor y, float a, float b) -> Tensor");
  m.impl("axpby", DispatchKey::CPU, &axpby_cpu);
  m.def("minmax(Tensor x) -> (Tensor min, Tensor max)");  // namespace taken from the library
  m.impl("testops::minmax", DispatchKey::CPU, &minmax_cpu);
  m.def("testops::mixed(Tensor x, Tensor? bias, int k, bool flip, int[] sizes, Tensor[] extras, float? scale) -> Tensor")
      .impl("mixed", DispatchKey::CPU, &mixed_cpu);
  m.def("testops::twice(Tensor x) -> Tensor");
  m.impl("twice", DispatchKey::CPU, twice_cpu);
  m.impl("twice", DispatchKey::Autograd, &twice_autograd);
  m.def("testops::touch(Tensor x, int n) -> ()");
  m.impl("touch", DispatchKey::CPU, &touch_cpu);
  m.def("testops::iota(int n) -> Tensor");
  m.impl("iota", DispatchKey::CPU, &iota_cpu);
  m.def("testops::cpu_only(Tensor x) -> Tensor");
  m.impl("cpu_only", DispatchKey::CPU, +[](const Tensor& x) { return x.clone(); });
}

// The explicit API, registered on first use so the test also works with --gtest_repeat.
static void register_explicit_ops() {
  static bool done = [] {
    dispatch::Library lib("explicitops");
    lib.def("explicitops::scale(Tensor x, float s, int times) -> Tensor").impl("scale", DispatchKey::CPU, &scale_cpu);
    return true;
  }();
  (void)done;
}

// The values of a float tensor, read through data_ptr (keeps the test independent of reductions).
static std::vector<float> values(const Tensor& t) {
  Tensor c = t.contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

// ---- calls ----

TEST(CustomOp, MacroRegisteredAxpby) {
  Tensor x = tensor::tensor({1.0f, 2.0f, 3.0f});
  Tensor y = tensor::tensor({10.0f, 20.0f, 30.0f});
  Tensor out = dispatch::call("testops::axpby", x, y, 2.0f, 3.0f);
  ASSERT_EQ(out.numel(), 3);
  EXPECT_FLOAT_EQ(out[0].item<float>(), 32.0f);  // 2*1 + 3*10
  EXPECT_FLOAT_EQ(out[1].item<float>(), 64.0f);
  EXPECT_FLOAT_EQ(out[2].item<float>(), 96.0f);
  // Doubles and ints are accepted for float arguments.
  Tensor out2 = dispatch::call("testops::axpby", x, y, 0.5, 1);
  EXPECT_FLOAT_EQ(out2[2].item<float>(), 31.5f);  // 0.5*3 + 30
  // Scalars box by kind.
  Tensor out3 = dispatch::call("testops::axpby", x, y, Scalar(1.0), Scalar(int64_t(0)));
  EXPECT_EQ(values(out3), values(x));
}

TEST(CustomOp, ExplicitLibraryApi) {
  register_explicit_ops();
  ASSERT_TRUE(dispatch::has_op("explicitops::scale"));
  Tensor x = tensor::tensor({1.0f, -2.0f});
  Tensor out = dispatch::call("explicitops::scale", x, 1.5f, 2);
  EXPECT_FLOAT_EQ(out[0].item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(out[1].item<float>(), -6.0f);
}

TEST(CustomOp, TupleReturn) {
  Tensor x = tensor::tensor({3.0f, -1.0f, 7.0f, 2.0f});
  std::tuple<Tensor, Tensor> r = dispatch::call("testops::minmax", x);
  EXPECT_FLOAT_EQ(std::get<0>(r).item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(std::get<1>(r).item<float>(), 7.0f);

  dispatch::OpResult res = dispatch::call("testops::minmax", x);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_FLOAT_EQ(res[1].item<float>(), 7.0f);
  // Reading two returns as one tensor names the op.
  expect_error([&] { Tensor t = dispatch::call("testops::minmax", x); (void)t; },
               {"testops::minmax", "returns 2 tensors"});
}

TEST(CustomOp, AllArgumentKinds) {
  Tensor x = tensor::tensor({1.0f, 2.0f, 3.0f, 4.0f});
  Tensor bias = tensor::tensor({0.5f, 0.5f, 0.5f, 0.5f});
  Tensor e1 = tensor::tensor({1.0f, 0.0f, 0.0f, 0.0f});
  Tensor e2 = tensor::tensor({0.0f, 0.0f, 0.0f, 2.0f});
  // (-1) * x * 2 + 0.5 + 10 + extras, reshaped to 2x2.
  Tensor out = dispatch::call("testops::mixed", x, bias, 10, true, std::vector<int64_t>{2, 2},
                              std::vector<Tensor>{e1, e2}, 2.0);
  ASSERT_EQ(out.dim(), 2);
  EXPECT_EQ(out.size(0), 2);
  Tensor flat = out.reshape({4});
  EXPECT_FLOAT_EQ(flat[0].item<float>(), 9.5f);  // -2 + 10.5 + 1
  EXPECT_FLOAT_EQ(flat[1].item<float>(), 6.5f);
  EXPECT_FLOAT_EQ(flat[2].item<float>(), 4.5f);
  EXPECT_FLOAT_EQ(flat[3].item<float>(), 4.5f);  // -8 + 10.5 + 2

  // None for the optionals, an empty tensor list, std::optional arguments.
  std::optional<double> no_scale;
  Tensor out2 = dispatch::call("testops::mixed", x, std::nullopt, 0, false, std::vector<int64_t>{4},
                               std::vector<Tensor>{}, no_scale);
  EXPECT_EQ(values(out2), values(x));
  // An undefined Tensor passed for Tensor? counts as None.
  Tensor out3 = dispatch::call("testops::mixed", x, Tensor(), 0, false, IntArrayRef({4}), TensorList(), 1.0);
  EXPECT_EQ(values(out3), values(x));
}

TEST(CustomOp, VoidReturnAndNoTensorArgs) {
  g_void_calls = 0;
  dispatch::OpResult r = dispatch::call("testops::touch", tensor::tensor({1.0f}), 5);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(g_void_calls, 5);

  Tensor t = dispatch::call("testops::iota", 3);
  ASSERT_EQ(t.numel(), 3);
  EXPECT_FLOAT_EQ(t[2].item<float>(), 2.0f);
}

TEST(CustomOp, OpHandle) {
  dispatch::OpHandle op = dispatch::find_op("testops::axpby");
  EXPECT_EQ(op.name(), "testops::axpby");
  EXPECT_EQ(op.schema().to_string(), "testops::axpby(Tensor x, Tensor y, float a, float b) -> Tensor");
  EXPECT_TRUE(op.has_kernel(DispatchKey::CPU));
  EXPECT_FALSE(op.has_kernel(DispatchKey::CUDA));
  Tensor x = tensor::tensor({1.0f});
  Tensor out = op.call(x, x, 1.0f, 1.0f);
  EXPECT_FLOAT_EQ(out.item<float>(), 2.0f);
}

TEST(CustomOp, RegistryQueries) {
  register_explicit_ops();
  EXPECT_TRUE(dispatch::has_op("testops::axpby"));
  EXPECT_FALSE(dispatch::has_op("testops::nope"));
  EXPECT_FALSE(dispatch::has_op("axpby"));
  std::vector<std::string> ops = dispatch::registered_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_NE(std::find(ops.begin(), ops.end(), "testops::axpby"), ops.end());
  EXPECT_NE(std::find(ops.begin(), ops.end(), "testops::minmax"), ops.end());
  EXPECT_NE(std::find(ops.begin(), ops.end(), "explicitops::scale"), ops.end());
}

// ---- dispatch keys ----

TEST(CustomOp, AutogradKernelRedispatchesToBackend) {
  g_autograd_calls = 0;
  Tensor x = tensor::tensor({1.0f, 2.0f});
  Tensor plain = dispatch::call("testops::twice", x);  // no requires_grad: CPU kernel directly
  EXPECT_EQ(g_autograd_calls.load(), 0);
  EXPECT_FLOAT_EQ(plain[1].item<float>(), 4.0f);

  Tensor xg = ones({2}, TensorOptions().requires_grad(true));
  Tensor out = dispatch::call("testops::twice", xg);
  EXPECT_EQ(g_autograd_calls.load(), 1);
  EXPECT_FLOAT_EQ(out[0].item<float>(), 2.0f);
}

TEST(CustomOp, WrappingKeysWithoutKernelFallThrough) {
  // axpby has no Autograd kernel: a tensor requiring grad still reaches the CPU kernel.
  Tensor xg = ones({2}, TensorOptions().requires_grad(true));
  Tensor out = dispatch::call("testops::axpby", xg, xg, 1.0f, 2.0f);
  EXPECT_FLOAT_EQ(out[1].item<float>(), 3.0f);

  // Explicit key sets including every wrapping key fall through to the backend.
  dispatch::OpHandle op = dispatch::find_op("testops::axpby");
  DispatchKeySet ks = DispatchKeySet(DispatchKey::Profiler) | DispatchKeySet(DispatchKey::Autocast) |
                      DispatchKeySet(DispatchKey::Autograd) | DispatchKeySet(DispatchKey::CPU);
  dispatch::IValue args[] = {xg, xg, 1.0, 1.0};
  Tensor out2 = op.call_with_keys(ks, args, 4);
  EXPECT_FLOAT_EQ(out2[0].item<float>(), 2.0f);
}

namespace {
std::atomic<int> g_profiled{0};
std::string g_last_profiled;
dispatch::OpResult profiler_fallback(const dispatch::OpHandle& op, DispatchKey self, const dispatch::IValue* args,
                                     size_t n) {
  ++g_profiled;
  g_last_profiled = op.name();
  return op.redispatch_boxed(self, args, n);
}
}  // namespace

TEST(CustomOp, BoxedFallbackForWrappingKey) {
  dispatch::set_fallback(DispatchKey::Profiler, &profiler_fallback);
  g_profiled = 0;
  dispatch::OpHandle op = dispatch::find_op("testops::axpby");
  Tensor x = tensor::tensor({1.0f, 2.0f});
  dispatch::IValue args[] = {x, x, 2.0f, 0.0f};
  Tensor out = op.call_with_keys(DispatchKeySet(DispatchKey::Profiler) | DispatchKeySet(DispatchKey::CPU), args, 4);
  EXPECT_EQ(g_profiled.load(), 1);
  EXPECT_EQ(g_last_profiled, "testops::axpby");
  EXPECT_FLOAT_EQ(out[1].item<float>(), 4.0f);
  dispatch::set_fallback(DispatchKey::Profiler, nullptr);
  // Without the fallback the Profiler key falls through again.
  Tensor out2 = op.call_with_keys(DispatchKeySet(DispatchKey::Profiler) | DispatchKeySet(DispatchKey::CPU), args, 4);
  EXPECT_EQ(g_profiled.load(), 1);
  EXPECT_FLOAT_EQ(out2[1].item<float>(), 4.0f);
  // Backends take kernels, not fallbacks.
  EXPECT_THROW(dispatch::set_fallback(DispatchKey::CPU, &profiler_fallback), Error);
}

// ---- call errors ----

TEST(CustomOpErrors, WrongArgumentCount) {
  Tensor x = tensor::tensor({1.0f});
  expect_error([&] { Tensor t = dispatch::call("testops::axpby", x, x, 2.0f); },
               {"testops::axpby", "expected 4 arguments", "Tensor x, Tensor y, float a, float b", "got 3"});
  expect_error([&] { Tensor t = dispatch::call("testops::axpby", x, x, 2.0f, 3.0f, 4.0f); },
               {"testops::axpby", "got 5"});
}

TEST(CustomOpErrors, WrongArgumentType) {
  register_explicit_ops();  // ctest runs each test in its own process
  Tensor x = tensor::tensor({1.0f});
  expect_error([&] { Tensor t = dispatch::call("testops::axpby", x, 1.0f, 2.0f, 3.0f); },
               {"testops::axpby", "argument 2 'y'", "must be Tensor", "got float"});
  expect_error([&] { Tensor t = dispatch::call("testops::axpby", x, x, x, 3.0f); },
               {"testops::axpby", "argument 3 'a'", "must be float", "got Tensor"});
  // A float is not accepted for an int argument, nor an int for a bool.
  expect_error([&] { Tensor t = dispatch::call("explicitops::scale", x, 1.0f, 2.5); },
               {"explicitops::scale", "argument 3 'times'", "must be int", "got float"});
  expect_error([&] { Tensor t = dispatch::call("testops::mixed", x, std::nullopt, 1, 1,
                                               std::vector<int64_t>{1}, std::vector<Tensor>{}, 1.0); },
               {"argument 4 'flip'", "must be bool", "got int"});
  // None only for optional arguments.
  expect_error([&] { Tensor t = dispatch::call("testops::axpby", x, std::nullopt, 2.0f, 3.0f); },
               {"argument 2 'y'", "must be Tensor", "got None"});
  // Undefined tensors for required Tensor arguments.
  expect_error([&] { Tensor t = dispatch::call("testops::axpby", Tensor(), x, 2.0f, 3.0f); },
               {"argument 1 'x'", "undefined Tensor"});
}

TEST(CustomOpErrors, UnknownOp) {
  Tensor x = tensor::tensor({1.0f});
  expect_error([&] { Tensor t = dispatch::call("testops::axpbyy", x, x, 1.0f, 1.0f); },
               {"unknown op 'testops::axpbyy'", "testops::axpby"});
  expect_error([&] { Tensor t = dispatch::call("nosuchns::f", x); },
               {"unknown op 'nosuchns::f'", "no ops are registered in namespace 'nosuchns'"});
  expect_error([&] { Tensor t = dispatch::call("axpby", x); }, {"unknown op 'axpby'", "qualified"});
  EXPECT_THROW(dispatch::find_op("testops::missing"), Error);
}

TEST(CustomOpErrors, NoKernelForBackend) {
  // Meta tensors exist on every machine, and cpu_only has no Meta kernel.
  Tensor m = empty({2}, TensorOptions().device(kMeta));
  expect_error([&] { Tensor t = dispatch::call("testops::cpu_only", m); },
               {"testops::cpu_only: no kernel registered for Meta; registered: CPU"});
  if (!cuda::is_available()) GTEST_SKIP() << "CUDA not available: the CUDA part of this test is skipped";
  Tensor x = tensor::tensor({1.0f, 2.0f}).cuda();
  expect_error([&] { Tensor t = dispatch::call("testops::axpby", x, x, 1.0f, 1.0f); },
               {"testops::axpby: no kernel registered for CUDA; registered: CPU"});
}

// ---- registration errors ----

TEST(CustomOpErrors, MalformedSchemas) {
  struct Case {
    const char* schema;
    const char* problem;
  };
  const Case cases[] = {
      {"bad::f(Tensor x", "missing ')'"},
      {"bad::f(Tensor x) ->", "expected a return type"},
      {"bad::f(Tensor x)", "expected '-> ReturnType'"},
      {"bad::f(double a) -> Tensor", "unknown type 'double' (schemas spell it 'float')"},
      {"bad::f(Tensor) -> Tensor", "expected an argument name"},
      {"bad::f(Tensor x, Tensor x) -> Tensor", "duplicate argument name 'x'"},
      {"bad::f(Tensor x y) -> Tensor", "expected ',' or ')' after argument 'x'"},
      {"bad::f(float a=1.0) -> Tensor", "default values are not supported"},
      {"bad::f(float[] a) -> Tensor", "only Tensor[] and int[]"},
      {"bad::f(Tensor x) -> float", "returns must be Tensor"},
      {"bad::f(Tensor x) -> Tensor extra", "unexpected text"},
      {"(Tensor x) -> Tensor", "expected the op name"},
      {"bad::(Tensor x) -> Tensor", "expected an op name after '::'"},
      {"bad::f(Tensor x) -> (Tensor, Tensor, Tensor, Tensor, Tensor)", "at most 4"},
      {"bad::f(Tensor(a!) x) -> Tensor", "alias annotations"},
  };
  dispatch::Library lib("bad");
  for (const Case& c : cases)
    expect_error([&] { lib.def(c.schema); }, {"malformed op schema", c.schema, c.problem});
  for (const Case& c : cases) EXPECT_FALSE(dispatch::has_op("bad::f")) << c.schema;

  // parse_schema is usable on its own; unqualified names need a default namespace.
  EXPECT_THROW(dispatch::parse_schema("f(Tensor x) -> Tensor"), Error);
  dispatch::Schema s = dispatch::parse_schema("  ns::g.out( Tensor? a ,int[]? b,Tensor[] c )->( Tensor , Tensor ) ");
  EXPECT_EQ(s.ns, "ns");
  EXPECT_EQ(s.name, "g.out");
  ASSERT_EQ(s.args.size(), 3u);
  EXPECT_EQ(s.args[0].type, (dispatch::ArgType{dispatch::ArgKind::Tensor, true}));
  EXPECT_EQ(s.args[1].type, (dispatch::ArgType{dispatch::ArgKind::IntList, true}));
  EXPECT_EQ(s.args[2].type, (dispatch::ArgType{dispatch::ArgKind::TensorList, false}));
  EXPECT_EQ(s.num_returns, 2u);
  EXPECT_EQ(s.to_string(), "ns::g.out(Tensor? a, int[]? b, Tensor[] c) -> (Tensor, Tensor)");
  EXPECT_EQ(dispatch::parse_schema("ns::h() -> ()").to_string(), "ns::h() -> ()");
}

// Found by tests/fuzz/fuzz_schema (corpus: regression_default_ns_not_identifier): parse_schema
// took any default namespace as is, so "f() -> ()" with namespace "a b" gave a schema whose
// to_string(), "a b::f() -> ()", does not parse.
TEST(CustomOpErrors, DefaultNamespaceMustBeAnIdentifier) {
  for (const char* ns : {"a b", "x::y", "t%s", "1ns", "ns\n"})
    expect_error([&] { dispatch::parse_schema("f(Tensor x) -> Tensor", ns); },
                 {"default namespace '" + std::string(ns) + "' is not an identifier"});
  dispatch::Schema s = dispatch::parse_schema("f(Tensor x) -> Tensor", "_ns1");
  EXPECT_EQ(s.to_string(), "_ns1::f(Tensor x) -> Tensor");
  EXPECT_EQ(dispatch::parse_schema(s.to_string()).to_string(), s.to_string());
}

TEST(CustomOpErrors, DuplicateDef) {
  dispatch::Library lib("testops");
  expect_error([&] { lib.def("testops::axpby(Tensor x, Tensor y, float a, float b) -> Tensor"); },
               {"testops::axpby", "already defined"});
  // Same name, different signature: still a duplicate.
  expect_error([&] { lib.def("axpby(Tensor x) -> Tensor"); }, {"testops::axpby", "already defined"});
}

TEST(CustomOpErrors, WrongNamespace) {
  dispatch::Library lib("testops");
  expect_error([&] { lib.def("otherns::f(Tensor x) -> Tensor"); }, {"'otherns'", "'testops'"});
  expect_error([&] { lib.impl("otherns::axpby", DispatchKey::CPU, &axpby_cpu); }, {"outside"});
  EXPECT_THROW(dispatch::Library("not an identifier"), Error);
}

TEST(CustomOpErrors, ImplErrors) {
  dispatch::Library lib("implerrs");
  // impl before def.
  expect_error([&] { lib.impl("never_defined", DispatchKey::CPU, &twice_cpu); },
               {"implerrs::never_defined", "is not defined"});
  static bool defined = (lib.def("implerrs::f(Tensor x, float a) -> Tensor"), true);
  (void)defined;
  // Wrong arity.
  expect_error([&] { lib.impl("f", DispatchKey::CPU, &twice_cpu); },
               {"implerrs::f", "takes 1 parameter", "has 2 arguments"});
  // Wrong parameter type: int where the schema says float.
  expect_error([&] { lib.impl("f", DispatchKey::CPU, +[](const Tensor& x, int64_t a) { return x; }); },
               {"parameter 2", "is int", "'a' is float"});
  // Wrong return count.
  expect_error(
      [&] { lib.impl("f", DispatchKey::CPU, +[](const Tensor& x, double a) { return std::make_tuple(x, x); }); },
      {"returns 2 tensors", "returns 1"});
  // A matching kernel registers once per key.
  if (!dispatch::find_op("implerrs::f").has_kernel(DispatchKey::CPU))
    lib.impl("f", DispatchKey::CPU, +[](const Tensor& x, double a) { return x.mul(a); });
  expect_error([&] { lib.impl("f", DispatchKey::CPU, +[](const Tensor& x, double a) { return x; }); },
               {"already has a CPU kernel"});
  Tensor out = dispatch::call("implerrs::f", tensor::tensor({2.0f}), 3.0f);
  EXPECT_FLOAT_EQ(out.item<float>(), 6.0f);
}

// ---- thread safety ----

TEST(CustomOp, ConcurrentRegistrationAndCalls) {
  static std::atomic<int> round{0};
  int r = round++;  // distinct names per --gtest_repeat round
  constexpr int kThreads = 4, kOpsPerThread = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        dispatch::Library lib("concurrent");
        Tensor x = tensor::tensor({1.0f, 2.0f});
        for (int i = 0; i < kOpsPerThread; ++i) {
          std::string name = "op_" + std::to_string(r) + "_" + std::to_string(t) + "_" + std::to_string(i);
          lib.def(name + "(Tensor x) -> Tensor").impl(name, DispatchKey::CPU, &twice_cpu);
          Tensor out = dispatch::call("concurrent::" + name, x);
          if (out[1].item<float>() != 4.0f) ++failures;
          Tensor out2 = dispatch::call("testops::axpby", x, x, 1.0f, 0.0f);
          if (values(out2) != values(x)) ++failures;
        }
      } catch (const std::exception& e) {
        ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t)
    EXPECT_TRUE(dispatch::has_op("concurrent::op_" + std::to_string(r) + "_" + std::to_string(t) + "_" +
                                 std::to_string(kOpsPerThread - 1)));
}
