// The view ops as dispatcher ops (Note [Views through the dispatcher] in src/ops/ViewOps.cpp):
// every public view goes through its slot of ops::view_ops() for the key its arguments carry
// (CPU, Meta, Autograd; not Autograd under NoGradGuard), meta tensors get meta views with the
// right sizes, strides and offsets, and the recorded and unrecorded paths give the same views
// and the right gradients.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "grad_test_util.h"
#include "src/ops/ViewOps.h"
#include "tests/test_util.h"

using namespace tensor;
using autograd::variable_list;
using ops::view_ops;
using tensor::testing::expect_error;

namespace {
TensorOptions f64() { return TensorOptions(kFloat64); }

// Swaps one slot of an op table for a counting wrapper around the kernel it held, for the
// guard's lifetime. Id makes each use a distinct wrapper (its own counter and saved kernel).
template <class Sig, int Id>
struct Spy;
template <class R, class... A, int Id>
struct Spy<R(A...), Id> {
  static inline R (*kernel)(A...) = nullptr;
  static inline int calls = 0;
  static R wrapper(A... a) {
    ++calls;
    return kernel(a...);
  }
};
template <class Sig, int Id>
class SpyGuard {
 public:
  using S = Spy<Sig, Id>;
  SpyGuard(dispatch::OpDef<Sig>& def, DispatchKey key) : def_(def), key_(key) {
    S::kernel = def.kernels[static_cast<int>(key)];
    S::calls = 0;
    def.kernels[static_cast<int>(key)] = &S::wrapper;
  }
  ~SpyGuard() { def_.kernels[static_cast<int>(key_)] = S::kernel; }
  SpyGuard(const SpyGuard&) = delete;
  SpyGuard& operator=(const SpyGuard&) = delete;
  int calls() const { return S::calls; }

 private:
  dispatch::OpDef<Sig>& def_;
  DispatchKey key_;
};

// Runs `call` with def's slot for `key` spied on, and expects exactly one call through it.
#define EXPECT_THROUGH(def, key, call)                                                                  \
  do {                                                                                                  \
    SpyGuard<typename std::remove_reference_t<decltype(def)>::Signature, __LINE__> spy_((def), (key)); \
    Tensor r_ = (call);                                                                                 \
    EXPECT_TRUE(r_.defined()) << #call;                                                                 \
    EXPECT_EQ(spy_.calls(), 1) << #call << " did not go through " << (def).name << "'s " << to_string(key) \
                               << " slot once";                                                         \
  } while (0)

// Every public view spelling, each through its own table entry, for tensors carrying `key`.
// x is [2, 3, 4] (float), z is [2, 3] complex (conj bit clear); both carry `key`.
void expect_every_view_through(DispatchKey key, const Tensor& x, const Tensor& z) {
  auto& v = view_ops();
  const Tensor flat = empty({24}, x.options());
  EXPECT_THROUGH(v.view, key, x.view({6, 4}));
  EXPECT_THROUGH(v.view, key, x.view_as(flat));
  EXPECT_THROUGH(v.reshape, key, x.reshape({4, 6}));
  EXPECT_THROUGH(v.reshape, key, tensor::reshape(x, {24}));
  EXPECT_THROUGH(v.reshape, key, x.reshape_as(flat));
  EXPECT_THROUGH(v.transpose, key, x.transpose(0, 2));
  EXPECT_THROUGH(v.transpose, key, tensor::transpose(x, 1, -1));
  EXPECT_THROUGH(v.t, key, x.select(0, 0).t());
  EXPECT_THROUGH(v.permute, key, x.permute({2, 0, 1}));
  EXPECT_THROUGH(v.permute, key, tensor::permute(x, {1, 0, 2}));
  EXPECT_THROUGH(v.slice, key, x.slice(1, 0, 3, 2));
  EXPECT_THROUGH(v.narrow, key, x.narrow(2, 1, 2));
  EXPECT_THROUGH(v.select, key, x.select(2, -1));
  EXPECT_THROUGH(v.select, key, x[1]);
  EXPECT_THROUGH(v.expand, key, x.select(2, 0).unsqueeze(2).expand({2, 3, 5}));
  EXPECT_THROUGH(v.expand, key, x.select(0, 0).expand_as(x));
  EXPECT_THROUGH(v.squeeze, key, x.narrow(1, 0, 1).squeeze());
  EXPECT_THROUGH(v.squeeze, key, tensor::squeeze(x));
  EXPECT_THROUGH(v.squeeze_dim, key, x.narrow(1, 0, 1).squeeze(1));
  EXPECT_THROUGH(v.squeeze_dim, key, tensor::squeeze(x, 0));
  EXPECT_THROUGH(v.unsqueeze, key, x.unsqueeze(-1));
  EXPECT_THROUGH(v.unsqueeze, key, tensor::unsqueeze(x, 0));
  EXPECT_THROUGH(v.flatten, key, x.flatten(1));
  EXPECT_THROUGH(v.flatten, key, tensor::flatten(x));
  EXPECT_THROUGH(v.unflatten, key, x.unflatten(2, {2, 2}));
  EXPECT_THROUGH(v.unfold, key, x.unfold(2, 2, 1));
  EXPECT_THROUGH(v.diagonal, key, x.diagonal(1, 1, 2));
  EXPECT_THROUGH(v.as_strided, key, x.as_strided({2, 2}, {4, 1}, 1));
  EXPECT_THROUGH(v.detach, key, x.detach());
  EXPECT_THROUGH(v.conj, key, z.conj());
  EXPECT_THROUGH(v.real, key, z.real());
  EXPECT_THROUGH(v.imag, key, z.imag());
}

// The view's geometry and kind, for comparing the same view of two tensors.
void expect_same_geometry(const Tensor& a, const Tensor& b, const std::string& what) {
  EXPECT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_EQ(a.strides(), b.strides()) << what;
  EXPECT_EQ(a.storage_offset(), b.storage_offset()) << what;
  EXPECT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(a.is_conj(), b.is_conj()) << what;
}

// Each view op (and composite) once, named, for the geometry tests.
std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> real_views() {
  return {
      {"view", [](const Tensor& x) { return x.view({6, -1}); }},
      {"reshape (view)", [](const Tensor& x) { return x.reshape({4, 6}); }},
      {"reshape (copy)", [](const Tensor& x) { return x.transpose(0, 2).reshape({24}); }},
      {"transpose", [](const Tensor& x) { return x.transpose(0, 2); }},
      {"t", [](const Tensor& x) { return x.select(1, 1).t(); }},
      {"t (1-d)", [](const Tensor& x) { return x.select(1, 1).select(0, 1).t(); }},
      {"permute", [](const Tensor& x) { return x.permute({2, 0, 1}); }},
      {"slice", [](const Tensor& x) { return x.slice(2, -3, std::nullopt, 2); }},
      {"narrow", [](const Tensor& x) { return x.narrow(1, 1, 2); }},
      {"select", [](const Tensor& x) { return x.select(1, -1); }},
      {"expand", [](const Tensor& x) { return x.narrow(1, 0, 1).expand({-1, 3, 4}); }},
      {"squeeze", [](const Tensor& x) { return x.narrow(0, 1, 1).squeeze(); }},
      {"squeeze(dim)", [](const Tensor& x) { return x.narrow(0, 1, 1).squeeze(0); }},
      {"squeeze(dim) alias", [](const Tensor& x) { return x.squeeze(1); }},
      {"unsqueeze", [](const Tensor& x) { return x.unsqueeze(1); }},
      {"flatten", [](const Tensor& x) { return x.flatten(0, 1); }},
      {"unflatten", [](const Tensor& x) { return x.unflatten(2, {2, -1}); }},
      {"unfold", [](const Tensor& x) { return x.unfold(2, 3, 1); }},
      {"diagonal", [](const Tensor& x) { return x.diagonal(-1, 2, 1); }},
      {"as_strided", [](const Tensor& x) { return x.as_strided({3, 2}, {4, 1}, 2); }},
      {"detach", [](const Tensor& x) { return x.detach(); }},
  };
}
}  // namespace

TEST(ViewDispatch, TableNamesEveryView) {
  auto& v = view_ops();
  const std::vector<std::string> names = {v.view.name,     v.reshape.name,   v.transpose.name, v.t.name,
                                          v.permute.name,  v.slice.name,     v.narrow.name,    v.select.name,
                                          v.expand.name,   v.squeeze.name,   v.squeeze_dim.name, v.unsqueeze.name,
                                          v.flatten.name,  v.unflatten.name, v.unfold.name,    v.diagonal.name,
                                          v.as_strided.name, v.detach.name,  v.conj.name,      v.real.name,
                                          v.imag.name};
  const std::vector<std::string> want = {"view",    "reshape", "transpose", "t",         "permute",  "slice",
                                         "narrow",  "select",  "expand",    "squeeze",   "squeeze",  "unsqueeze",
                                         "flatten", "unflatten", "unfold",  "diagonal",  "as_strided", "detach",
                                         "conj",    "real",    "imag"};
  EXPECT_EQ(names, want);
}

TEST(ViewDispatch, CpuTensorsGoThroughTheCpuSlots) {
  expect_every_view_through(DispatchKey::CPU, arange(24, TensorOptions(kFloat32)).view({2, 3, 4}),
                            zeros({2, 3}, TensorOptions(kComplex64)));
}

TEST(ViewDispatch, MetaTensorsGoThroughTheMetaSlots) {
  expect_every_view_through(DispatchKey::Meta, empty({2, 3, 4}, TensorOptions().device(kMeta)),
                            empty({2, 3}, TensorOptions(kComplex64).device(kMeta)));
}

TEST(ViewDispatch, RecordingGoesThroughTheAutogradSlots) {
  Tensor x = arange(24, f64()).view({2, 3, 4}).requires_grad_();  // fills the Autograd slots
  Tensor z = zeros({2, 3}, TensorOptions(kComplex128)).requires_grad_();
  auto& v = view_ops();
  // The views with a node of their own; the composites and detach fall through to their
  // backend slot, whose pieces dispatch (and record) on their own.
  EXPECT_THROUGH(v.view, DispatchKey::Autograd, x.view({6, 4}));
  EXPECT_THROUGH(v.transpose, DispatchKey::Autograd, x.transpose(0, 2));
  EXPECT_THROUGH(v.t, DispatchKey::Autograd, x.select(0, 0).t());
  EXPECT_THROUGH(v.permute, DispatchKey::Autograd, x.permute({2, 0, 1}));
  EXPECT_THROUGH(v.slice, DispatchKey::Autograd, x.slice(1, 0, 3, 2));
  EXPECT_THROUGH(v.slice, DispatchKey::Autograd, x.narrow(2, 1, 2));
  EXPECT_THROUGH(v.select, DispatchKey::Autograd, x[1]);
  EXPECT_THROUGH(v.expand, DispatchKey::Autograd, x.select(0, 0).expand_as(x));
  EXPECT_THROUGH(v.squeeze, DispatchKey::Autograd, x.squeeze());
  EXPECT_THROUGH(v.squeeze_dim, DispatchKey::Autograd, x.squeeze(0));
  EXPECT_THROUGH(v.unsqueeze, DispatchKey::Autograd, x.unsqueeze(-1));
  EXPECT_THROUGH(v.view, DispatchKey::Autograd, x.reshape({4, 6}));
  EXPECT_THROUGH(v.view, DispatchKey::Autograd, x.flatten());
  EXPECT_THROUGH(v.view, DispatchKey::Autograd, x.unflatten(2, {2, 2}));
  EXPECT_THROUGH(v.unfold, DispatchKey::Autograd, x.unfold(2, 2, 1));
  EXPECT_THROUGH(v.diagonal, DispatchKey::Autograd, x.diagonal(1, 1, 2));
  EXPECT_THROUGH(v.as_strided, DispatchKey::Autograd, x.as_strided({2, 2}, {4, 1}, 1));
  EXPECT_THROUGH(v.conj, DispatchKey::Autograd, z.conj());
  EXPECT_THROUGH(v.real, DispatchKey::Autograd, z.real());
  EXPECT_THROUGH(v.imag, DispatchKey::Autograd, z.imag());
  // detach: no Autograd kernel; the CPU slot serves the call.
  EXPECT_THROUGH(v.detach, DispatchKey::CPU, x.detach());
  EXPECT_FALSE(x.detach().requires_grad());
}

TEST(ViewDispatch, NoGradGuardSkipsTheAutogradSlots) {
  Tensor x = arange(24, f64()).view({2, 3, 4}).requires_grad_();
  NoGradGuard g;
  auto& v = view_ops();
  {
    SpyGuard<ops::ViewFn, 0> ag(v.view, DispatchKey::Autograd);
    EXPECT_THROUGH(v.view, DispatchKey::CPU, x.view({24}));
    EXPECT_EQ(ag.calls(), 0);
  }
  {
    SpyGuard<ops::DimPairFn, 0> ag(v.select, DispatchKey::Autograd);
    EXPECT_THROUGH(v.select, DispatchKey::CPU, x.select(1, 2));
    EXPECT_EQ(ag.calls(), 0);
  }
  Tensor y = x.diagonal(0, 1, 2);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

TEST(ViewDispatch, MetaViewsMatchCpuGeometry) {
  const Tensor cpu = arange(24, TensorOptions(kFloat32)).view({2, 3, 4});
  const Tensor meta = empty({2, 3, 4}, TensorOptions().device(kMeta));
  for (const auto& [name, f] : real_views()) {
    Tensor m = f(meta), c = f(cpu);
    EXPECT_TRUE(m.is_meta()) << name;
    expect_same_geometry(m, c, name);
  }
  // Complex components and the lazy conj bit.
  const Tensor zc = zeros({2, 3}, TensorOptions(kComplex64)).t();
  const Tensor zm = empty({2, 3}, TensorOptions(kComplex64).device(kMeta)).t();
  expect_same_geometry(zm.conj(), zc.conj(), "conj");
  EXPECT_TRUE(zm.conj().is_conj());
  expect_same_geometry(zm.real(), zc.real(), "real");
  expect_same_geometry(zm.imag(), zc.imag(), "imag");
  EXPECT_EQ(zm.imag().dtype(), kFloat32);
  expect_same_geometry(zm.conj().real(), zc.conj().real(), "real of conj");
}

TEST(ViewDispatch, MetaViewsRecordWhenTheyRequireGrad) {
  Tensor x = empty({3, 4}, TensorOptions(kFloat64).device(kMeta)).requires_grad_();
  EXPECT_EQ(x.view({12}).grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(x.t().grad_fn()->name(), "TransposeBackward0");
  EXPECT_EQ(x.select(0, 1).grad_fn()->name(), "SelectBackward0");
  EXPECT_EQ(x.diagonal().grad_fn()->name(), "ViewByPositionsBackward");
  EXPECT_EQ(x.as_strided({2}, {1}).grad_fn()->name(), "AsStridedBackward0");
  EXPECT_TRUE(x.as_strided({2}, {1}).is_meta());
}

TEST(ViewDispatch, RecordedAndUnrecordedViewsAgree) {
  const Tensor base = arange(24, f64()).view({2, 3, 4});
  Tensor x = base.clone().requires_grad_();
  for (const auto& [name, f] : real_views()) {
    Tensor recorded = f(x);
    Tensor unrecorded;
    {
      NoGradGuard g;
      unrecorded = f(x);
    }
    Tensor plain = f(base);
    expect_same_geometry(recorded, unrecorded, name);
    expect_same_geometry(recorded, plain, name);
    EXPECT_TRUE(recorded.detach().equal(plain)) << name;
    EXPECT_FALSE(unrecorded.requires_grad()) << name;
    EXPECT_EQ(recorded.requires_grad(), name != "detach") << name;
  }
}

TEST(ViewDispatch, GradientsMatchHandValues) {
  Tensor x = arange(12, f64()).view({3, 4}).requires_grad_();
  const Tensor w = arange(1, 13, f64()).view({4, 3});
  (x.t() * w).sum().backward();
  EXPECT_TRUE(x.grad().equal(w.t()));

  x.mutable_grad() = Tensor();
  x.select(1, -1).sum().backward();
  EXPECT_TRUE(x.grad().equal(tensor::tensor({0.0, 0.0, 0.0, 1.0}, f64()).expand({3, 4})));

  x.mutable_grad() = Tensor();
  x.slice(1, 0, std::nullopt, 2).sum().backward();  // columns 0 and 2
  EXPECT_TRUE(x.grad().equal(tensor::tensor({1.0, 0.0, 1.0, 0.0}, f64()).expand({3, 4})));

  x.mutable_grad() = Tensor();
  x.unfold(1, 2, 1).sum().backward();  // windows [0,1] [1,2] [2,3]: inner columns read twice
  EXPECT_TRUE(x.grad().equal(tensor::tensor({1.0, 2.0, 2.0, 1.0}, f64()).expand({3, 4})));

  x.mutable_grad() = Tensor();
  x.diagonal(1).sum().backward();  // (0,1) (1,2) (2,3)
  Tensor want = zeros({3, 4}, f64());
  for (int64_t i = 0; i < 3; ++i) want[i][i + 1].fill_(1.0);
  EXPECT_TRUE(x.grad().equal(want));

  x.mutable_grad() = Tensor();
  x.narrow(0, 0, 1).expand({5, 4}).sum().backward();  // row 0 read 5 times
  Tensor rows = tensor::tensor({5.0, 0.0, 0.0}, f64());
  EXPECT_TRUE(x.grad().equal(rows.unsqueeze(1).expand({3, 4})));

  x.mutable_grad() = Tensor();
  x.as_strided({2, 2}, {1, 1}, 5).sum().backward();  // elements 5, 6, 6, 7
  EXPECT_TRUE(x.grad().flatten().equal(
      tensor::tensor({0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0}, f64())));
}

TEST(ViewDispatch, GradientsPassGradcheck) {
  using tensor::testing::check;
  const Tensor x = arange(24, f64()).view({2, 3, 4}).mul(0.1).sin().requires_grad_();
  for (const auto& [name, f] : real_views()) {
    if (name == "detach") continue;
    auto fn = [f = f](const variable_list& in) { return f(in[0]) * f(in[0]); };
    check(name + " gradcheck", [&] { return autograd::gradcheck(fn, {x}, 1e-6, 1e-5, 1e-3); });
    check(name + " gradgradcheck", [&] { return autograd::gradgradcheck(fn, {x}, 1e-6, 1e-5, 1e-3); });
  }
}

TEST(ViewDispatch, ComplexComponentsOfConjugatedTensors) {
  Tensor z = zeros({2}, TensorOptions(kComplex128));
  z.real().copy_(tensor::tensor({1.0, -3.0}, f64()));
  z.imag().copy_(tensor::tensor({2.0, 0.5}, f64()));
  z.requires_grad_();
  // real(conj z) = real z and imag(conj z) = -imag z, recorded through their dispatched pieces.
  Tensor a = z.conj().real();
  Tensor b = z.conj().imag();
  EXPECT_TRUE(a.detach().equal(z.detach().real()));
  EXPECT_TRUE(b.detach().equal(-z.detach().imag()));
  auto ga = autograd::grad({(a * a).sum()}, {z})[0];
  auto gb = autograd::grad({(b * b).sum()}, {z})[0];
  auto ra = autograd::grad({(z.real() * z.real()).sum()}, {z})[0];
  auto rb = autograd::grad({(z.imag() * z.imag()).sum()}, {z})[0];
  EXPECT_TRUE(ga.allclose(ra));
  EXPECT_TRUE(gb.allclose(rb));
}

TEST(ViewDispatch, ErrorsNameTheOp) {
  const Tensor x = zeros({2, 3});
  expect_error([&] { x.view({4}); }, {"view", "[4]", "invalid for input of size 6"});
  expect_error([&] { x.transpose(0, 2).sum(); }, {"transpose", "dim 2"});
  expect_error([&] { x.select(1, 3); }, {"select", "index 3", "[2, 3]"});
  expect_error([&] { x.expand({4, 3}); }, {"expand", "[2, 3]", "[4, 3]"});
  expect_error([&] { x.as_strided({4}, {2}, 0); }, {"as_strided", "storage holds 6"});
  expect_error([&] { x.imag(); }, {"imag", "float32"});
  expect_error([&] { x.narrow(1, 2, 2); }, {"narrow", "[2, 3]"});
  expect_error([&] { Tensor().view({1}); }, {"view", "undefined"});
}
